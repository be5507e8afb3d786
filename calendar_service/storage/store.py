"""The git-backed store: reads files at a commit and writes changes as exactly one commit.

``GitStore`` is the one entry point; it holds small collaborators, each in its own module:

- ``gitcmd``    running git with a clean environment
- ``objects``   trees and commit objects written in process, one small pack per commit
- ``readers``   git's machine output, one reader per format
- ``history``   reading any commit: files, differences, blobs, the log
- ``writing``   a commit, then one step that advances the branch (journal, compare-and-swap
                of the ref, working tree); git's index updated after the lock (``settle``)
- ``refs``      moving the branch in process with git's lock protocol, flushed to disk
- ``grouping``  group commit: concurrent writers' commits put on the branch by one move
- ``recovery``  the journal, stale git locks, git's index after a killed write
- ``remote``    the git remote: fetch, push, pull, replay
- ``bulk``      an import of many new files as one commit

Writers are serialized across threads and processes by ``write_lock``. With a git remote
configured, a write is pushed before the local branch moves; see docs/operations.md, "The git remote".
Without pushing, the writers of one process form groups (``grouping``).
"""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from calendar_service.storage.bulk import BulkWriter
from calendar_service.storage.errors import (BranchMoved, PullRefused, PushRejected, RemoteError, RemoteRefused,
                                             RemoteUnavailable, StoreError)
from calendar_service.storage.gitcmd import CONTENT_FOLDERS, EMPTY_TREE, SHA, SHA_LENGTH, ZERO, Git
from calendar_service.storage.history import CommitLog
from calendar_service.storage.grouping import GROUP_LIMIT, GroupCommit
from calendar_service.storage.objects import ObjectStore, blob_sha, write_atomically
from calendar_service.storage.recovery import STALE_LOCK_SECONDS, Journal, Recovery, SharedFlock
from calendar_service.storage.remote import REMOTE_TIMEOUT, Follower, PullResult, Remote
from calendar_service.storage.writing import CommitWriter

# what callers import from here (the store's one public module)
__all__ = ["GitStore", "PullResult", "StoreError", "BranchMoved", "PullRefused", "RemoteError", "RemoteUnavailable",
           "RemoteRefused", "PushRejected", "CONTENT_FOLDERS", "EMPTY_TREE", "ZERO", "blob_sha", "write_atomically"]

DEFAULT_COMMITTER = ("Calendar Service", "calendar-service@localhost")


class GitStore:
    """A content repository on disk: one branch, five folders of record files."""

    def __init__(self, root: Path, branch: str = "main", committer: tuple[str, str] = DEFAULT_COMMITTER,
                 remote: str = "", remote_branch: str | None = None, remote_timeout: float = REMOTE_TIMEOUT):
        self.root = Path(root)
        self.branch = branch
        self._ref_file = str(self.root / ".git" / "refs" / "heads" / branch)
        self.committer = committer
        self.remote = remote                        # URL, path or remote name; "" = none
        self.remote_branch = remote_branch or branch
        self._thread_lock = threading.RLock()
        self._process_lock = SharedFlock(self.git_dir / "calendar-write.lock")
        self._local = threading.local()   # per thread: in a grouped write_lock, the commit it queued
        self._gitcmd = Git(self.root)
        self._objects = ObjectStore(self.root)
        # collaborators run git through self._git and write files through self._sync_worktree,
        # bound here so that a subclass (a test simulating a killed process) can intercept them
        self._history = CommitLog(self._git, self._gitcmd, self._objects)
        self._journal = Journal(self.git_dir)
        self._recovery = Recovery(self.root, self.git_dir, branch, self._git, self._history, self._journal,
                                  self.head, self._sync_worktree)
        self._writer = CommitWriter(self.root, branch, committer, self._git, self._objects, self._history,
                              self._recovery, self.head, self._sync_worktree, self._thread_lock)
        self._remote = Remote(self._gitcmd, remote, self.remote_branch, self._git, remote_timeout)
        self._follower = Follower(self._remote, self._writer, self._history, self._objects, self._git,
                                  self.head, self._thread_lock)
        self._group = GroupCommit(self.head, self._writer.build, self._writer.advance, self._sync_worktree)
        self._bulk = BulkWriter(self.root, committer, self._gitcmd, self._git, self._history, self._writer,
                                self.head, self._sync_worktree)

    # ----------------------------------------------------------------------------- setup

    @property
    def git_dir(self) -> Path:
        """The repository's git directory."""
        return self.root / ".git"

    def exists(self) -> bool:
        """Whether the repository exists."""
        return (self.git_dir / "HEAD").exists()

    def init(self) -> None:
        """Create the repository (empty, on ``branch``) if there is none."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.exists():
            self._git("init", "-q", "-b", self.branch)

    def close(self) -> None:
        """Release the git helper processes GitPython keeps per Repo (after a running merge of packs)."""
        self._writer.wait_for_merge()
        with self._thread_lock:
            self._objects.close()

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """The standard output of ``git args``; raises StoreError when it fails (with ``check``)."""
        return self._gitcmd.run(*args, input=input, check=check)

    # ----------------------------------------------------------------------------- reading

    def head(self) -> str | None:
        """The commit the branch points at, or None for a repository without commits.

        Reads the ref file directly (microseconds), falling back to packed refs.
        """
        ref = f"refs/heads/{self.branch}"
        try:
            # every request asks: plain os calls cost far less than pathlib's read_text
            fd = os.open(self._ref_file, os.O_RDONLY)
            try:
                value = os.read(fd, 128).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
            if SHA.match(value):
                return value
        except (FileNotFoundError, NotADirectoryError):
            pass
        try:
            for line in (self.git_dir / "packed-refs").read_text().splitlines():
                if line.endswith(" " + ref) and SHA.match(line[:SHA_LENGTH]):
                    return line[:SHA_LENGTH]
        except FileNotFoundError:
            pass
        return None

    def list_files(self, commit: str) -> dict[str, str]:
        """Every file under the content folders at ``commit``: path -> blob id."""
        return self._history.list_files(commit)

    def added_by(self, head: str, paths) -> dict[str, tuple[str, str, int]]:
        """path -> (commit, committer e-mail, committer time) of the commit that added each of
        ``paths`` as it is at ``head`` (the newest add, should a file have been deleted and added
        again), found through merges to the branch the file came from. Paths git cannot place
        are left out."""
        paths = sorted(paths)
        if not paths or head is None:
            return {}
        out = self._git("-c", "core.quotepath=off", "log", "--diff-filter=A", "--no-renames",
                        "--format=%x00%H %ct %ce", "--name-only", head, "--", *paths).decode("utf-8", "replace")
        wanted, found = set(paths), {}
        for chunk in out.split("\0")[1:]:
            lines = chunk.strip("\n").split("\n")
            commit, when, email = (lines[0].split(" ", 2) + ["", ""])[:3]
            for path in lines[1:]:
                if path in wanted and path not in found:
                    found[path] = (commit, email, int(when or 0))
        return found

    def deleted_blobs(self, head: str) -> dict[str, str]:
        """blob id -> path of the content files the history up to ``head`` deleted (see ``CommitLog``)."""
        return self._history.deleted_blobs(head)

    def change_dates(self, head: str, since: str | None = None, paths=None) -> dict:
        """path -> FileDates (last change, adding commit's time and author e-mail) of the content
        files the commits up to ``head`` (after ``since``) touched; one ``git log``."""
        return self._history.change_dates(head, since, paths)

    def path_versions(self, head: str, paths, max_commits: int) -> dict:
        """path -> its versions on the first-parent history of ``head``, newest first (see
        ``CommitLog.path_versions``): at most ``max_commits`` commits looked at, one ``git log``."""
        return self._history.path_versions(head, paths, max_commits)

    def commit_facts(self, commit: str) -> tuple[list[str], int, str] | None:
        """(parents, committer time, author e-mail) of ``commit``, read in process."""
        return self._history.commit_facts(commit)

    def changed_files(self, old: str, new: str) -> dict[str, str | None]:
        """Paths under the content folders that differ between two commits: path -> new blob or None."""
        return {path: c.new_sha for path, c in self._history.diff_tree(old, new).items()}

    def diff(self, old: str | None, new: str) -> dict[str, tuple[str | None, str | None]]:
        """Paths under the content folders that differ between two commits (``old`` None: the
        empty tree): path -> (old blob or None, new blob or None)."""
        return {path: (c.old_sha, c.new_sha) for path, c in self._history.diff_tree(old, new).items()}

    def read_blobs(self, shas) -> dict[str, bytes]:
        """Contents of many blobs in one ``git cat-file --batch`` run: sha -> bytes."""
        return self._history.read_blobs(shas)

    def read_files(self, shas, max_bytes: int):
        """Blobs in bounded batches, none over ``max_bytes`` read (``CommitLog.read_files``)."""
        return self._history.read_files(shas, max_bytes)

    def read_object(self, sha: str) -> bytes | None:
        """The content of one blob, read in process; None when it does not exist."""
        return self._history.read_object(sha)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is ``newer`` or one of its ancestors."""
        return self._history.is_ancestor(older, newer)

    def resolve_commit(self, value: str) -> str | None:
        """The full id of the commit ``value`` (4 to 40 hex digits) names; None for none or several."""
        return self._history.resolve_commit(value)

    def first_parent_steps(self, since: str | None, until: str, limit: int) -> list[tuple[str, str | None]]:
        """The commits that moved the branch from ``since`` (None: from its start) to ``until``,
        oldest first, at most ``limit``: (commit, its first parent or None). A merge is one step
        (its first parent is the branch before it); the commits it brought in are not listed."""
        span = until if since is None else f"{since}..{until}"
        out = self._git("rev-list", "--first-parent", "--reverse", "--parents", span).decode("ascii", "replace")
        steps = []
        for line in out.splitlines()[:limit]:
            ids = line.split()
            if ids and all(SHA.match(i) for i in ids):
                steps.append((ids[0], ids[1] if len(ids) > 1 else None))
        return steps

    def has_commit(self, commit: str) -> bool:
        """Whether the repository holds ``commit`` (a full id)."""
        return bool(SHA.match(commit or "")) and self._gitcmd.succeeds("cat-file", "-e", f"{commit}^{{commit}}")

    def log(self, folder: str, head: str | None = None, since: str | None = None) -> list[dict]:
        """Every commit of the branch (newest first; after ``since`` if given) that changed a file
        under ``folder``: dicts with ``commit``, ``author`` (name, email), ``date`` (ISO 8601),
        ``message`` and ``changes`` (status, path, old blob or None, new blob or None)."""
        return self._history.log(folder, head or self.head(), since)

    def clashes(self, base: str | None, head: str | None, changes: dict[str, bytes | None]) -> list[str]:
        """Paths of ``changes`` (computed against ``base``) that ``head`` changed differently."""
        return self._history.clashes(base, head, changes)

    # ----------------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def write_lock(self, grouped: bool = False):
        """Hold the repository's write lock: one writer at a time across threads and processes.

        ``grouped``: the holder may join a group commit (see ``grouping``): ``commit`` builds on
        ``write_base()``, and leaving the lock (the next writer of this process goes in) waits
        until that commit is on the branch, raising BranchMoved (nothing of it is) or the
        StoreError that stopped it. Otherwise the commits of a group still pending are
        published first: the holder sees the branch as it is.

        On leaving, once the lock is released, git's index entries of the files written are
        updated (``CommitWriter.settle``, once for the writes of several threads)."""
        self.git_dir.mkdir(parents=True, exist_ok=True)
        self._process_lock.acquire()
        try:
            with self._thread_lock:
                if not grouped or self._group.count() >= GROUP_LIMIT:
                    self._group.publish_all()
                outer = getattr(self._local, "grouped", None)   # None: not nested in another write_lock
                self._local.grouped = grouped if outer is None else outer and grouped
                queued = None
                try:
                    yield
                finally:
                    self._local.grouped = outer
                    if outer is None:
                        queued, self._local.queued = getattr(self._local, "queued", None), None
            if queued is not None:
                self._group.wait(queued)
        finally:
            self._process_lock.release()
            self._writer.settle()

    def write_base(self) -> str | None:
        """The commit a write builds on: the newest commit of a group pending (in a grouped
        ``write_lock``), else the branch head."""
        return self._group.base() if getattr(self._local, "grouped", False) else self.head()

    def commit(self, changes: dict[str, bytes | None], message: str, author: tuple[str, str],
               expected_head: str | None, push: bool = False) -> str:
        """Write ``changes`` (path -> new content, None to delete) as one commit on the branch;
        returns the new commit id. Must be called inside ``write_lock``; in a grouped one the
        commit is on the branch once the lock is left (see ``write_lock``).

        Raises BranchMoved (nothing written) when the branch (or the group) is not at
        ``expected_head``, StoreError before anything is committed when a working-tree file
        differs from ``expected_head`` (an editor's uncommitted change). With ``push``, the
        commit is pushed before the branch moves: PushRejected or RemoteError leave the
        branch untouched.
        """
        first_line = message.replace("\0", "").splitlines()[0]
        if getattr(self._local, "grouped", False) and not push:
            self._local.queued = self._group.commit(changes, message, author, expected_head, first_line)
            return self._local.queued
        if self.head() != expected_head:
            raise BranchMoved("the branch moved")
        new_commit, old_blobs = self._writer.build(changes, message, author, expected_head)
        if push:
            self.push(new_commit)
        try:
            self._writer.advance(expected_head, new_commit, first_line, {p: old_blobs.get(p) for p in changes},
                                 lambda: self._sync_worktree(changes), touches_index=False)
        except BranchMoved:
            if not push:
                raise
            # the commit is on the remote already: put the branch's newcomer on top of it
            self._follower.follow_pushed(new_commit)
        return new_commit

    def commit_new_files(self, files: dict[str, bytes], message: str, author: tuple[str, str],
                         expected_head: str | None, progress=None, replacing: dict[str, str] | None = None) -> str:
        """Add many NEW files (and replace those of ``replacing``: path -> current blob) as one
        commit (``git fast-import``); returns the commit id. Must be called inside ``write_lock``.
        Raises BranchMoved or StoreError (see ``BulkWriter``)."""
        return self._bulk.commit_new_files(files, message, author, expected_head, progress, replacing)

    def _sync_worktree(self, changes: dict[str, bytes | None]) -> None:
        """Write the working-tree files of ``changes`` (None deletes) and update git's index."""
        self._writer.sync_worktree(changes)

    # ----------------------------------------------------------------------------- remote

    @property
    def remote_display(self) -> str:
        """The remote as messages may show it: without credentials."""
        return self._remote.display

    def remote_head(self) -> str | None:
        """The commit the remote branch points at (None: no such branch). Raises RemoteUnavailable."""
        return self._remote.head()

    def fetch(self) -> str | None:
        """Fetch the remote branch; returns its commit or None. Call inside ``write_lock``."""
        return self._remote.fetch()

    def remote_last_seen(self) -> str | None:
        """The remote head this repository last fetched or pushed (None: never)."""
        return self._remote.last_seen()

    def push(self, commit: str) -> None:
        """Make the remote branch point at ``commit`` (fast-forward only). Raises PushRejected,
        RemoteRefused or RemoteUnavailable; nothing local changes either way."""
        self._remote.push(commit)

    def pull(self) -> PullResult:
        """Fetch the remote and bring the branch in line with it, under the write lock.
        Raises RemoteUnavailable (nothing changed) or BranchMoved (pull again)."""
        with self.write_lock():
            return self.pull_locked()

    def pull_locked(self) -> PullResult:
        """``pull`` for a caller that holds the write lock already (a group pending is published first)."""
        self._group.publish_all()
        return self._follower.pull()

    @property
    def refused(self) -> PullRefused | None:
        """The remote's commit the last pull refused (None: the remote is followed)."""
        return self._follower.refused

    @property
    def last_pull(self) -> dict | None:
        """The last attempt to reach the remote (a pull or the periodic look at its head) and how
        it ended: {"time": epoch seconds, "result": "ok" | "refused" | "failed", "error": a short
        reason or None}; None before the first."""
        return self._follower.last_pull

    @property
    def pull_health(self) -> dict:
        """{"last_success": {"time", "head"} or None, "failing_since": epoch seconds or None,
        "failures": attempts failed in a row}."""
        f = self._follower
        return {"last_success": f.last_success, "failing_since": f.failing_since, "failures": f.failures}

    def remote_checked(self, head: str | None = None, error: StoreError | None = None) -> None:
        """Note a look at the remote's head that needed no pull: it answered ``head`` (the
        branch is there already) or failed with ``error``."""
        if error is None:
            self._follower.attempted("ok", head=head)
        else:
            self._follower.attempted("refused" if isinstance(error, PullRefused) else "failed", str(error))

    @property
    def synced(self) -> bool:
        """Whether a pull from the remote has succeeded since this store was opened."""
        return self._follower.synced

    def keep_aside(self, commit: str) -> str:
        """Keep ``commit`` reachable under ``refs/calendar/conflicts/<sha>``; returns the ref name."""
        return self._follower.keep_aside(commit)

    # ----------------------------------------------------------------------------- recovery

    def lock_files(self) -> list[Path]:
        """The git lock files a killed write can leave."""
        return self._recovery.lock_files()

    def remove_stale_locks(self, older_than: float = STALE_LOCK_SECONDS) -> list[str]:
        """Delete git lock files older than ``older_than`` seconds; returns their names. Inside ``write_lock``."""
        return self._recovery.remove_stale_locks(older_than)

    def recover(self) -> None:
        """Clean up after a killed process and finish a write it left between the ref update
        and the working tree (see ``Recovery.recover``)."""
        with self.write_lock():
            self._recovery.recover()

"""Writing: a commit object built in process, then one step that advances the branch.

Blobs, trees and the commit object are written in process as one small pack (no git
process), then the branch moves by a compare-and-swap in process (``refs``: git's lock
protocol, refused if the branch moved meanwhile, flushed to disk), then the working tree is
brought in line. A journal spans the last two steps so that a process killed in between is
finished by the next start. git's index is updated after the write lock is released, once
for all the writes waiting (``settle``).
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Callable

from calendar_service.domain.paths import path_problem
from calendar_service.storage.errors import BranchMoved, StoreError
from calendar_service.storage.gitcmd import ZERO
from calendar_service.storage import gitindex, refs
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import (BLOB_MODE, FILE_MODES, ObjectStore, blob_sha, flush_file_system,
                                              group, ident, write_atomically)
from calendar_service.storage.readers import RawChange
from calendar_service.storage.recovery import WORKTREE_TEMP_PREFIX, Recovery

log = logging.getLogger(__name__)

RECORD_FILE_MODE = 0o644
REFLOG_MESSAGE_LENGTH = 200   # characters of a commit's first line kept as the reflog message
# past this many packs (each write adds a small one), ``settle`` merges the small ones: a
# lookup in git tries pack after pack. git's own ``gc --auto`` starts at 50 (gc.autoPackLimit).
PACK_LIMIT = 40
# past this many files written by one commit, they are written without an fsync each and the
# file system is flushed once (a bulk move such as file-by-month would otherwise spend most of its
# time waiting for one fsync per file)
BULK_FILES = 64
REPACK_LOCK_MODE = 0o600


def reflog_message(reason: str) -> str:
    """A commit's first line as a reflog message: one line, at most REFLOG_MESSAGE_LENGTH characters."""
    return re.sub(r"\s+", " ", reason).strip()[:REFLOG_MESSAGE_LENGTH]


class CommitWriter:
    """Builds commits and advances the branch. Every method except ``build`` must run inside
    the store's write lock (``advance`` also in a group's publisher, which holds the process's
    share of it: see ``grouping``); ``build`` needs the store's thread lock."""

    def __init__(self, root: Path, branch: str, committer: tuple[str, str], run: Callable[..., bytes],
                 objects: ObjectStore, history: CommitLog, recovery: Recovery, head: Callable[[], str | None],
                 sync_worktree: Callable[[dict], None], lock: threading.RLock):
        self.root = root
        self.branch = branch
        self.committer = committer
        self._run = run
        self._objects = objects
        self._history = history
        self._recovery = recovery
        self._head = head
        self._sync_worktree = sync_worktree
        self._lock = lock
        self._unindexed: dict[str, None] = {}      # paths written whose git index entry is not updated yet
        self._unindexed_lock = threading.Lock()
        self._settling = threading.Lock()
        self._merging: threading.Thread | None = None

    def build(self, changes: dict[str, bytes | None], message: str, author: tuple[str, str],
              expected_head: str | None, packs: list[Path] | None = None,
              unpublished=frozenset()) -> tuple[str, dict[str, str]]:
        """Write the commit of ``changes`` (path -> content, None to delete) on ``expected_head``
        without moving the branch; returns (commit id, blob ids before of the changed paths).
        With ``packs`` (a list), its pack is not flushed to disk (see ``ObjectStore.write_commit``).

        ``expected_head`` is the branch head, or the newest commit of a group not yet published
        (``unpublished``: the paths that group changes; their working-tree files are not
        written yet, and were checked when the group's commits were built).
        Raises StoreError if a working-tree file differs from ``expected_head`` (an editor's
        uncommitted change).
        """
        for path in changes:
            problem = path_problem(path, anywhere=True)
            if problem:
                raise StoreError(f"refusing to write {path!r}: {problem}")
        with self._lock:
            old_entries = self._objects.entries_at(expected_head, changes)
        old_blobs = {path: entry[1] for path, entry in old_entries.items()}
        for path in changes:
            if path not in unpublished:
                self._check_worktree_clean(path, old_blobs.get(path))
        now = int(time.time())
        idents = [f"author {ident(*author, now)}".encode("utf-8"),
                  f"committer {ident(*self.committer, now)}".encode("utf-8")]
        body = (message.replace("\0", "").strip() + "\n").encode("utf-8")  # git refuses a NUL in a commit
        with self._lock:
            root = self._objects.tree_of(expected_head) if expected_head else None
            tree = self._objects.write_tree(root, group(changes))
            commit = self._objects.write_commit(tree, expected_head, idents, body, packs)
        self._remember(commit, expected_head, changes, old_entries)
        return commit, old_blobs

    def _remember(self, commit: str, parent: str | None, changes: dict[str, bytes | None],
                  old_entries: dict[str, tuple[int, str]]) -> None:
        """Tell the history what ``commit`` changed, so that reading it back needs no git process."""
        raw, contents = [], {}
        for path, content in changes.items():
            old_mode, old_sha = old_entries.get(path, (0, None))
            new_sha = blob_sha(content) if content is not None else None
            if new_sha == old_sha and (new_sha is None or old_mode == BLOB_MODE):
                continue
            if new_sha is not None:
                contents[new_sha] = content
            status = "D" if new_sha is None else ("A" if old_sha is None else "M")
            raw.append(RawChange(path, old_mode, BLOB_MODE if new_sha else 0, old_sha, new_sha, status))
        self._history.remember(commit, parent, raw, contents)

    def _check_worktree_clean(self, path: str, old_blob: str | None) -> None:
        """Raises StoreError when the working-tree file ``path`` is not ``old_blob`` (None: absent)."""
        try:
            current = blob_sha((self.root / path).read_bytes())
        except FileNotFoundError:
            current = None
        if current != old_blob:
            raise StoreError(f"{path} has uncommitted changes in the content repository's working tree; "
                             "commit or discard them first")

    def advance(self, old: str | None, new: str, reason: str, before: dict[str, str | None],
                update_worktree: Callable[[], None], touches_index: bool = True,
                steps: list[tuple[str, str]] | None = None) -> None:
        """Move the branch from ``old`` to ``new`` and bring the working tree in line: journal
        (``before``: path -> blob before or None), compare-and-swap ``update-ref`` (once more
        after removing stale git locks), ``update_worktree()`` (holding the index lock when it
        ``touches_index``: a git command that writes git's index), journal removed. ``steps``
        (commit, reason), oldest first: the commits of a group this one move publishes.

        Raises BranchMoved when the branch is no longer at ``old`` (nothing changed), StoreError
        when git fails otherwise.
        """
        self._recovery.journal.write({"commit": new, "old": old, "paths": before})
        try:
            try:
                self._update_ref(old, new, reason, steps)
            except StoreError:
                if not self._recovery.remove_stale_locks():
                    raise
                self._update_ref(old, new, reason, steps)  # a killed process had left the ref locked
        except StoreError:
            self._recovery.journal.clear()
            if self._head() != old:
                raise BranchMoved("the branch moved") from None
            raise
        if touches_index:  # a git command that writes git's index (read-tree) waits for a running settle
            with self._recovery.index_lock.held():
                update_worktree()
        else:  # working-tree files only: the next writer does not wait for an index update
            update_worktree()
        self._recovery.journal.clear()

    def _update_ref(self, old: str | None, new: str, reason: str, steps: list[tuple[str, str]] | None = None) -> None:
        """Compare-and-swap the branch from ``old`` to ``new``, flushed to disk (in process, see
        ``refs``; ``git update-ref`` for a ref git treats specially). Raises StoreError."""
        ref = f"refs/heads/{self.branch}"
        who = ident(*self.committer, int(time.time()))
        try:
            refs.update_ref(self.root / ".git", ref, new, old,
                            [(commit, f"{who}\t{reflog_message(text)}") for commit, text in steps or [(new, reason)]])
        except refs.RefLocked:
            raise StoreError(f"{ref} is locked (a {ref}.lock file exists)") from None
        except refs.RefMoved:
            raise StoreError(f"{ref} is not at the expected commit") from None
        except refs.Unusual:
            self._run("update-ref", "-m", reflog_message(reason), ref, new, old or ZERO)

    def follow(self, old: str | None, new: str | None) -> None:
        """Move the branch from ``old`` to ``new`` (commits made elsewhere) and bring the working
        tree in line for the files that changed, leaving alone any file an editor changed
        without committing (logged). Raises BranchMoved."""
        if new is None or new == old:
            return
        changes = self._history.changes(old, new)
        before = self._history.entries_at(old, changes)

        def update_worktree() -> None:
            contents = self._history.read_blobs(v[1] for v in changes.values() if v and v[0] in FILE_MODES)
            sync, kept = {}, []
            for path, entry in changes.items():
                file = self.root / path
                try:
                    on_disk = blob_sha(file.read_bytes()) if not file.is_symlink() else "symlink"
                except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                    on_disk = None
                old_entry = before.get(path)
                if on_disk != (old_entry[1] if old_entry else None):
                    kept.append(path)
                elif entry is None:
                    sync[path] = None
                elif entry[0] in FILE_MODES and entry[1] in contents:
                    sync[path] = contents[entry[1]]
            if sync:
                self._sync_worktree(sync)
            if kept:
                log.warning("left %d working-tree file(s) alone (uncommitted changes): %s", len(kept),
                            ", ".join(kept[:5]))

        self.advance(old, new, "calendar: follow the remote",
                     {p: before[p][1] if p in before else None for p in changes}, update_worktree)

    def sync_worktree(self, changes: dict[str, bytes | None]) -> None:
        """Write (or delete, for None) the working-tree files of ``changes``, flushed to disk
        (each with its fsync; past BULK_FILES files, one flush of the file system at the end);
        their entries in git's index are updated by the next ``settle``."""
        bulk = sum(content is not None for content in changes.values()) > BULK_FILES
        for path, content in changes.items():
            target = self.root / path
            if content is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                with contextlib.suppress(OSError):   # a month folder left empty goes too (not empty: kept)
                    while target.parent.parent != self.root:
                        target = target.parent
                        target.rmdir()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, content, RECORD_FILE_MODE, WORKTREE_TEMP_PREFIX, flush=not bulk)
        if bulk:
            flush_file_system(self.root)
        with self._unindexed_lock:
            self._unindexed.update(dict.fromkeys(changes))

    def settle(self) -> None:
        """Record in git's index every working-tree file this process's writes changed so far,
        once for a group of writes: in process when git's index is split and the files exist
        (``gitindex``, no git process), else by ``git update-index``. Runs after the write lock is released
        (the next writer goes on meanwhile); a thread whose files another thread's run took
        waits for that run. A process killed before it ran leaves index entries behind the
        branch, which ``Recovery.recover`` brings in line at the next start."""
        with self._settling:
            with self._unindexed_lock:
                paths, self._unindexed = list(self._unindexed), {}
            if not paths:
                return
            try:
                with self._recovery.index_lock.held():
                    done = gitindex.record_files(self.root / ".git", self.root, paths)
                    if done != gitindex.RECORDED:
                        # paths go through standard input: a write may touch more than a command line holds
                        self._run(*(("-c", "splitIndex.maxPercentChange=0") if done == gitindex.RESHARE else ()),
                                  "update-index", "-q", "--add", "--remove", "-z", "--stdin",
                                  input=b"".join(p.encode() + b"\0" for p in paths))
            except StoreError as exc:
                # The commits stand; only `git status` in the server's checkout is affected.
                log.warning("could not refresh the git index after a write: %s", exc)
            if self._objects.pack_count() > PACK_LIMIT and (self._merging is None or not self._merging.is_alive()):
                # in the background: a merge of a big repository's packs is slow, and no answer waits for it
                self._merging = threading.Thread(target=self.merge_packs, name="calendar-merge-packs", daemon=True)
                self._merging.start()

    def wait_for_merge(self) -> None:
        """Wait for a running merge of packs (when the store is closed)."""
        merging = self._merging
        if merging is not None:
            merging.join()

    def merge_packs(self) -> None:
        """Merge the small packs writes leave into one (``git repack -d --geometric=2``: packs
        are combined until each is at least twice the size of the next smaller one, so the big
        pack of an import is left alone). One process at a time; another one busy doing it
        is not waited for. Runs in a thread of its own (see ``settle``); safe beside writers
        and readers (git deletes the merged packs only once the new one is in place)."""
        fd = os.open(self.root / ".git" / "calendar-repack.lock", os.O_RDWR | os.O_CREAT, REPACK_LOCK_MODE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            try:
                # one thread: the other core keeps serving
                self._run("-c", "repack.writeBitmaps=false", "-c", "pack.threads=1", "repack", "-d", "-q",
                          "--geometric=2")
            except StoreError as exc:
                log.warning("could not merge the small packs: %s", exc)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

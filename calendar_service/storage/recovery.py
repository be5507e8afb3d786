"""Finishing what a killed process left: the write journal, stale git locks, git's index and
temporary files.

A write records a journal in the git directory before it moves the branch and removes it
once the working tree is in line; a journal found at start means a write was killed in
between, and ``Recovery.recover`` finishes it.
"""
from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from calendar_service.storage.gitcmd import CONTENT_FOLDERS
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import blob_sha

log = logging.getLogger(__name__)

# A git lock file older than this, found while we hold the write lock, was left by a killed
# process (git holds its locks for milliseconds). Younger ones may belong to an editor's git
# command running in the checkout.
STALE_LOCK_SECONDS = 30
# git's own features for big working trees, set on the service's content repository at start
# unless set already (docs/architecture.md, "A write"): a split index (a write rewrites a small file
# naming its changes, not the whole index, which grows with the calendar) in version 4 (paths
# prefix-compressed: smaller to read). Setting -> the ``update-index`` option that
# converts an existing index file (one call each, version first: git 2.39 given both at once
# changes the version without splitting).
INDEX_SETTINGS = {"index.version": ("4", ("--index-version", "4")), "core.splitIndex": ("true", ("--split-index",))}
# a thread of a process that let a waiting process in takes the flock again once that process
# holds it (it stops saying it waits), or after this long at most (that process may be slow to run)
HANDOVER_SECONDS = 0.05
HANDOVER_POLL_SECONDS = 0.001
WORKTREE_TEMP_PREFIX = ".tmp-"   # the temporary files of a working-tree write, next to the record files


class FileLock:
    """One holder at a time across threads (``thread_lock``) and processes (``flock`` on ``path``,
    a file of the git directory, mode 0600)."""

    def __init__(self, path: Path, thread_lock=None):
        self.path = path
        self._thread_lock = thread_lock or threading.Lock()

    @contextlib.contextmanager
    def held(self):
        with self._thread_lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


class SharedFlock:
    """A ``flock`` on ``path`` (a file of the git directory, mode 0600) that this process holds
    while any of its threads holds a share (a write, or a commit of a group not yet published):
    another process waits until the last share is released. Threads of this process serialize
    among themselves by other means.

    Turns between processes: a process waiting for the flock says so (a shared ``flock`` on
    ``path.wanted``). The threads of the holding process that were already waiting when it took
    the flock join its shares (one batch: a group commit); a thread that comes later joins only
    while no other process waits. Otherwise it waits until this process let go, and until the
    waiting process holds the flock (it stops saying it waits, at most HANDOVER_SECONDS), then
    waits for the flock in its turn. So a write of one process waits for at most the batch the
    other process is writing, never for a stream of them."""

    def __init__(self, path: Path):
        self.path = path
        self.wanted = path.with_name(path.name + ".wanted")
        self._shares = 0
        self._fd: int | None = None
        self._tickets = itertools.count(1)   # each acquire's place in the order of arrival
        self._admitted = 0                   # the tickets taken before this process took the flock
        self._yielding = False               # new shares wait until the flock was let go
        self._changed = threading.Condition(threading.Lock())
        self._mine = threading.local()       # shares this thread holds (a nested share never waits)

    def acquire(self) -> None:
        ticket = next(self._tickets)
        with self._changed:
            mine = getattr(self._mine, "shares", 0)
            late = not mine and ticket > self._admitted
            if late and self._shares and not self._yielding:
                self._yielding = self._someone_waits()
            if late and self._yielding:
                self._changed.wait_for(lambda: not self._yielding)
                self._hand_over()
            if self._shares == 0:   # waiting here for another process, while no thread of ours holds it
                self._fd = self._lock_waiting()
                self._admitted = next(self._tickets)
            self._shares += 1
            self._mine.shares = mine + 1

    def release(self) -> None:
        with self._changed:
            self._shares -= 1
            self._mine.shares = getattr(self._mine, "shares", 1) - 1
            if self._shares == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                self._yielding = False
                self._changed.notify_all()

    def _hand_over(self) -> None:
        """After letting go for a waiting process: until it holds the flock (no process says it
        waits any more), at most HANDOVER_SECONDS. Without this pause the flock, free for the
        moment the waiter takes to be woken, could be taken again here at once."""
        deadline = time.monotonic() + HANDOVER_SECONDS
        while self._shares == 0 and self._someone_waits() and time.monotonic() < deadline:
            self._changed.wait(HANDOVER_POLL_SECONDS)

    def _lock_waiting(self) -> int:
        """The flock taken, saying so in ``wanted`` while it has to wait for another process."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                wanted = os.open(self.wanted, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(wanted, fcntl.LOCK_SH)
                    fcntl.flock(fd, fcntl.LOCK_EX)
                finally:
                    os.close(wanted)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _someone_waits(self) -> bool:
        """Whether another process waits for the flock (holds ``wanted`` shared)."""
        fd = os.open(self.wanted, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)


class Journal:
    """The record of a write between its branch update and its working-tree update:
    ``{"commit": new, "old": old or None, "paths": {path: blob before or None}}``."""

    def __init__(self, git_dir: Path):
        self.path = git_dir / "calendar-journal.json"
        self.temporary = self.path.with_suffix(".tmp")

    def write(self, journal: dict) -> None:
        """Record ``journal`` (replacing any)."""
        self.temporary.write_text(json.dumps(journal))
        os.replace(self.temporary, self.path)

    def clear(self) -> None:
        """Remove the journal, if any."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def read(self) -> dict | None:
        """The journal; None when there is none. A garbled one is removed (None)."""
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except ValueError:
            self.clear()
            return None


def held_open(path: Path) -> bool | None:
    """Whether a running process has ``path`` open (git holds its lock files open while it
    holds the lock); None when that cannot be seen (no ``/proc``, or other users' processes)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    target = str(path)
    unsure = False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) == target:
                        return True
        except PermissionError:
            unsure = True  # another user's process: it could hold the lock
        except OSError:
            continue  # the process ended meanwhile
    return None if unsure else False


class Recovery:
    """Cleans up after killed processes. Every method must run inside the store's write lock."""

    def __init__(self, root: Path, git_dir: Path, branch: str, run: Callable[..., bytes], history: CommitLog,
                 journal: Journal, head: Callable[[], str | None],
                 sync_worktree: Callable[[dict], None]):
        self.root = root
        self.git_dir = git_dir
        self.branch = branch
        self._run = run
        self._history = history
        self.journal = journal
        self._head = head
        self._sync_worktree = sync_worktree
        # what this service does to git's index file, serialized: git fails at once, rather than
        # waiting, when another git process holds ``index.lock``
        self.index_lock = FileLock(git_dir / "calendar-index.lock")

    def lock_files(self) -> list[Path]:
        """The git lock files a killed write can leave: the branch ref, HEAD, packed refs, the index."""
        names = [f"refs/heads/{self.branch}.lock", "HEAD.lock", "packed-refs.lock", "index.lock"]
        return [self.git_dir / name for name in names]

    def remove_stale_locks(self, older_than: float = STALE_LOCK_SECONDS) -> list[str]:
        """Delete the git lock files no live process holds (each removal logged); returns their names.

        Inside the write lock no write of this service is running. git keeps a lock file open
        for as long as it holds the lock, so one that no process has open was left by a killed
        process and goes at once. Where open files cannot be seen (no ``/proc``), a lock file
        goes when it is older than ``older_than`` seconds; a younger one may belong to an
        editor's git command and is left alone.
        """
        removed = []
        now = time.time()
        for path in self.lock_files():
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            held = held_open(path)
            if held or (held is None and age < older_than):
                log.warning("%s exists (%.0f s old, %s); leaving it to its owner", path.name, age,
                            "held by a running process" if held else "its owner is unknown")
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(str(path.relative_to(self.git_dir)))
                log.warning("removed the stale git lock file .git/%s (%.0f s old, left by a killed process)",
                            removed[-1], age)
        return removed

    def refresh_index(self) -> None:
        """Record in git's index the files whose working copy matches the branch head but whose
        index entry does not (a killed ``update-index`` after a write); others are left alone."""
        head = self._head()
        out = self._run("diff-index", "--cached", "-z", "--name-only", head, "--", *CONTENT_FOLDERS, check=False)
        paths = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
        if not paths:
            return
        at_head = self._history.blobs_at(head, paths)
        fix = []
        for path in paths:
            file = self.root / path
            on_disk = blob_sha(file.read_bytes()) if file.is_file() else None
            if on_disk == at_head.get(path):
                fix.append(path)
        if fix:
            with self.index_lock.held():
                self._run("update-index", "-q", "--add", "--remove", "-z", "--stdin",
                          input=b"".join(p.encode() + b"\0" for p in fix), check=False)
            log.info("refreshed git's index for %d files after a killed write", len(fix))

    def remove_temporary_files(self) -> None:
        """Delete the temporary files a killed write leaves (next to record files, and the journal's).

        A write makes its working-tree files only between writing its journal and removing it,
        so the working tree (large in a big calendar) is walked only when a journal is left; a file
        an editor named like one is otherwise left alone."""
        if self.journal.path.exists() or self.journal.temporary.exists():
            self._remove_worktree_temporaries()
        with contextlib.suppress(FileNotFoundError):
            self.journal.temporary.unlink()

    def _remove_worktree_temporaries(self) -> None:
        for folder in CONTENT_FOLDERS:
            # one listing of names per folder, month folders included (a glob matched every name in Python)
            for where, _, names in os.walk(self.root / folder):
                for name in names:
                    if name.startswith(WORKTREE_TEMP_PREFIX):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(os.path.join(where, name))
                            log.warning("removed %s, left by a killed write",
                                        os.path.relpath(os.path.join(where, name), self.root))

    def use_index_settings(self) -> None:
        """Set ``INDEX_SETTINGS`` that no git configuration sets yet (an administrator's or the
        editor's value, such as ``core.splitIndex=false``, is kept) and convert git's index
        file once to match. Editors' own clones are not touched."""
        unset = [name for name in INDEX_SETTINGS if not self._run("config", "--get", name, check=False).strip()]
        if not unset:
            return
        for name in unset:
            self._run("config", name, INDEX_SETTINGS[name][0])
        if (self.git_dir / "index").exists():
            with self.index_lock.held():
                for name in unset:
                    self._run("update-index", *INDEX_SETTINGS[name][1], check=False)

    def recover(self) -> None:
        """Remove stale locks and temporary files, bring git's index entries that lag behind the
        branch head in line (``refresh_index``), then finish a write left between the ref update and the working tree. Only files
        still holding their pre-write content are touched; anything else in the working tree
        is somebody's work and is left alone."""
        self.remove_temporary_files()
        self.remove_stale_locks()
        self.use_index_settings()
        if self._head():
            # a write's index update runs after its commit is answered (see CommitWriter.settle):
            # a process killed in between leaves index entries behind the branch
            self.refresh_index()
        journal = self.journal.read()
        if journal is None:
            return
        head = self._head()
        commit = journal.get("commit")
        if head and commit and (head == commit or self._history.is_ancestor(commit, head)):
            current = self._history.blobs_at(head, journal["paths"])
            contents = self._history.read_blobs(current.values())
            for path, old_blob in journal["paths"].items():
                file = self.root / path
                on_disk = blob_sha(file.read_bytes()) if file.exists() else None
                if on_disk != old_blob:
                    continue
                new_blob = current.get(path)
                self._sync_worktree({path: contents[new_blob] if new_blob else None})
            # killed after writing a file but before `update-index` ran: the file is new,
            # its index entry old (git status would show it deleted and untracked)
            self.refresh_index()
            log.info("finished an interrupted write of commit %s", commit[:12])
        self.journal.clear()

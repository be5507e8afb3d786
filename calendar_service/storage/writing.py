"""Writing: a commit object built in process, then one step that advances the branch.

Blobs, trees and the commit object are written in process (no git process), then the
branch moves with ``git update-ref NEW OLD`` (a compare-and-swap: it refuses if the branch
moved meanwhile), then the working tree and git's index are brought in line. A journal
spans the last two steps so that a process killed in between is finished by the next start.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Callable

from calendar_service.domain.paths import path_problem
from calendar_service.storage.errors import BranchMoved, StoreError
from calendar_service.storage.gitcmd import ZERO
from calendar_service.storage.history import History
from calendar_service.storage.objects import FILE_MODES, ObjectStore, blob_sha, group, ident, write_atomically
from calendar_service.storage.recovery import WORKTREE_TEMP_PREFIX, Recovery

log = logging.getLogger(__name__)

RECORD_FILE_MODE = 0o644
REFLOG_MESSAGE_LENGTH = 200   # characters of a commit's first line kept as the reflog message


class Writer:
    """Builds commits and advances the branch. Every method except ``build`` must run inside
    the store's write lock; ``build`` needs the store's thread lock."""

    def __init__(self, root: Path, branch: str, committer: tuple[str, str], run: Callable[..., bytes],
                 objects: ObjectStore, history: History, recovery: Recovery, head: Callable[[], str | None],
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

    def build(self, changes: dict[str, bytes | None], message: str, author: tuple[str, str],
              expected_head: str | None) -> tuple[str, dict[str, str]]:
        """Write the commit of ``changes`` (path -> content, None to delete) on ``expected_head``
        without moving the branch; returns (commit id, blob ids before of the changed paths).

        Raises BranchMoved if the branch is not at ``expected_head``, StoreError if a
        working-tree file differs from ``expected_head`` (an editor's uncommitted change).
        """
        if self._head() != expected_head:
            raise BranchMoved("the branch moved")
        for path in changes:
            problem = path_problem(path, anywhere=True)
            if problem:
                raise StoreError(f"refusing to write {path!r}: {problem}")
        old_blobs = self._history.blobs_at(expected_head, changes)
        for path in changes:
            self._check_worktree_clean(path, old_blobs.get(path))
        now = int(time.time())
        idents = [f"author {ident(*author, now)}".encode("utf-8"),
                  f"committer {ident(*self.committer, now)}".encode("utf-8")]
        body = (message.replace("\0", "").strip() + "\n").encode("utf-8")  # git refuses a NUL in a commit
        with self._lock:
            root = self._objects.tree_of(expected_head) if expected_head else None
            tree = self._objects.write_tree(root, group(changes))
            return self._objects.write_commit(tree, expected_head, idents, body), old_blobs

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
                update_worktree: Callable[[], None]) -> None:
        """Move the branch from ``old`` to ``new`` and bring the working tree in line: journal
        (``before``: path -> blob before or None), compare-and-swap ``update-ref`` (once more
        after removing stale git locks), ``update_worktree()``, journal removed.

        Raises BranchMoved when the branch is no longer at ``old`` (nothing changed), StoreError
        when git fails otherwise.
        """
        self._recovery.journal.write({"commit": new, "old": old, "paths": before})
        update = ("update-ref", "-m", reason[:REFLOG_MESSAGE_LENGTH], f"refs/heads/{self.branch}", new, old or ZERO)
        try:
            try:
                self._run(*update)
            except StoreError:
                if not self._recovery.remove_stale_locks():
                    raise
                self._run(*update)  # a killed process had left the ref locked
        except StoreError:
            self._recovery.journal.clear()
            if self._head() != old:
                raise BranchMoved("the branch moved") from None
            raise
        update_worktree()
        self._recovery.journal.clear()

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
        """Write (or delete, for None) the working-tree files of ``changes`` and record them in git's index."""
        for path, content in changes.items():
            target = self.root / path
            if content is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, content, RECORD_FILE_MODE, WORKTREE_TEMP_PREFIX)
        try:
            # paths go through standard input: a write may touch more than a command line holds
            self._run("update-index", "-q", "--add", "--remove", "-z", "--stdin",
                      input=b"".join(p.encode() + b"\0" for p in changes))
        except StoreError as exc:
            # The commit stands; only `git status` in the server's checkout is affected.
            log.warning("could not refresh the git index after a write: %s", exc)

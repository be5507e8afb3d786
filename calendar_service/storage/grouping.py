"""Group commit: the concurrent writes of one process share the cost of putting their commits
on the branch.

A write in a group (``GitStore.write_lock(grouped=True)``) builds its commit on the newest
commit not yet published (or on the branch head), its pack written but not yet flushed to
disk, and lets the next writer of the process in, who builds on it: history stays a line of
one commit per write, each authored by its writer. Leaving the lock, each writer waits until
its commit is published; the first one to get there publishes every commit pending:

1. their packs flushed to disk (each folder once),
2. one journal, one compare-and-swap of the branch to the newest commit (one reflog line
   per commit, as if each had moved it), flushed to disk,
3. the working-tree files (the group's last content of each path), then the journal removed.

So a power cut never leaves the branch at a commit whose objects are not on disk, and a
write is answered only once its commit is on the branch. The fsyncs, the branch update and
the working-tree folder flushes of a group are paid once, by one thread, while the next
writer builds its commit.

While any commit is pending the process keeps the repository's write lock (``SharedFlock``),
so no other process builds on a branch that is about to move. A publish that fails before
the branch moved (an editor committed in the service's checkout meanwhile) fails every write
pending with BranchMoved (none was answered; each is computed again on the new head).
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable, NamedTuple

from calendar_service.storage.errors import BranchMoved, StoreError
from calendar_service.storage.objects import ObjectStore

log = logging.getLogger(__name__)

# past this many commits pending, a writer publishes them before it builds its own: the
# catalog keeps the snapshot of each commit pending (``Catalog.after_write``)
GROUP_LIMIT = 8


class Pending(NamedTuple):
    """A commit built in a group and not yet on the branch."""

    commit: str
    parent: str | None
    reason: str                          # its message's first line, for the reflog
    before: dict[str, str | None]        # path -> blob at ``parent`` (None: absent)
    changes: dict[str, bytes | None]     # path -> content (None: deleted)
    packs: list[Path]                    # its pack's files, not yet flushed to disk


class GroupCommit:
    """The commits built in groups and not yet published, and their publishing.

    ``commit`` needs the store's thread lock (builders are serialized by it); ``wait`` and
    ``publish_all`` do not: a publisher runs while the next writer builds."""

    def __init__(self, head: Callable[[], str | None], build: Callable[..., tuple[str, dict]],
                 advance: Callable[..., None], sync_worktree: Callable[[dict], None]):
        self._head = head
        self._build = build
        self._advance = advance
        self._sync_worktree = sync_worktree
        self._pending: list[Pending] = []
        self._outcomes: dict[str, BaseException | None] = {}   # published commits -> None or the error
        self._lock = threading.Lock()          # guards the two above
        self._publishing = threading.Lock()    # one publisher at a time

    def base(self) -> str | None:
        """The commit a grouped write builds on: the newest pending one, else the branch head."""
        with self._lock:
            if self._pending:
                return self._pending[-1].commit
        return self._head()

    def count(self) -> int:
        with self._lock:
            return len(self._pending)

    def unpublished_paths(self) -> set[str]:
        """The paths the pending commits change (their working-tree files are not written yet)."""
        with self._lock:
            return {path for pending in self._pending for path in pending.changes}

    def commit(self, changes: dict[str, bytes | None], message: str, author: tuple[str, str],
               expected_head: str | None, reason: str) -> str:
        """Build the commit of ``changes`` on ``expected_head`` (which must be ``base()``) and
        queue it; returns its id. Raises BranchMoved (nothing queued) or StoreError (see
        ``CommitWriter.build``)."""
        if self.base() != expected_head:
            raise BranchMoved("the branch moved")
        packs: list[Path] = []
        commit, old_blobs = self._build(changes, message, author, expected_head, packs, self.unpublished_paths())
        self.add(Pending(commit, expected_head, reason, {p: old_blobs.get(p) for p in changes}, changes, packs))
        return commit

    def add(self, pending: Pending) -> None:
        """Queue ``pending``, built on ``base()``. Raises BranchMoved when the group it was built
        on failed meanwhile (nothing queued)."""
        with self._lock:
            tip = self._pending[-1].commit if self._pending else self._head()
            if pending.parent != tip:
                raise BranchMoved("the branch moved")
            self._pending.append(pending)

    def wait(self, commit: str) -> None:
        """Return once ``commit`` is on the branch, publishing what is pending if nobody is.
        Raises BranchMoved (the commit was dropped: its group could not be published) or the
        StoreError that stopped its publishing."""
        with self._publishing:
            with self._lock:
                done = commit in self._outcomes
                group = list(self._pending)
            if not done and group:
                self._publish(group)
            with self._lock:
                outcome = self._outcomes.pop(commit, None)
        if outcome is not None:
            raise outcome

    def publish_all(self) -> None:
        """Publish whatever is pending (its writers learn how it went from ``wait``); called by a
        holder of the store's thread lock, so nothing is added meanwhile."""
        with self._publishing:
            with self._lock:
                group = list(self._pending)
            if group:
                self._publish(group)

    def _publish(self, group: list[Pending]) -> None:
        """Put ``group`` (the pending commits, oldest first) on the branch; record each one's outcome."""
        before: dict[str, str | None] = {}
        final: dict[str, bytes | None] = {}
        for pending in group:
            for path, blob in pending.before.items():
                before.setdefault(path, blob)   # the content before the group's first change
            final.update(pending.changes)
        try:
            ObjectStore.make_durable([file for pending in group for file in pending.packs])
            self._advance(group[0].parent, group[-1].commit, group[-1].reason, before,
                          lambda: self._sync_worktree(final), touches_index=False,
                          steps=[(pending.commit, pending.reason) for pending in group])
        except Exception as exc:
            # every writer gets an error of its own; a file system error becomes one the API can
            # answer with (its reason, not the server's paths)
            reason = str(exc) if isinstance(exc, StoreError) else getattr(exc, "strerror", None) or type(exc).__name__
            log.warning("could not publish %d commit(s): %s", len(group), reason)
            with self._lock:
                if self._head() == group[-1].commit:
                    # the branch moved, the working tree failed: the commits stand (the journal
                    # lets the next start finish the files), the ones built on them too
                    del self._pending[:len(group)]
                    for pending in group:
                        self._outcomes[pending.commit] = StoreError(
                            f"the commit was made but the working tree could not be updated: {reason}")
                else:
                    # nothing is on the branch: the group, and every commit built on it, is dropped
                    dropped, self._pending = self._pending, []
                    published = {pending.commit for pending in group}
                    moved = isinstance(exc, BranchMoved)
                    for pending in dropped:
                        self._outcomes[pending.commit] = (
                            StoreError(f"the write was not applied: {reason}")
                            if pending.commit in published and not moved else BranchMoved("the branch moved"))
            return
        with self._lock:
            del self._pending[:len(group)]
            self._outcomes.update(dict.fromkeys((p.commit for p in group), None))

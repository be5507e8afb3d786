"""The git remote: catching up when a push is refused, pulling on demand and periodically.

With a remote configured every write is pushed as part of its commit (see the store); this
module handles what happens around that: a push refused because someone pushed first, a
pull asked for by the webhook, and the pull thread of each process.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Callable

from calendar_service.config import Settings
from calendar_service.domain.snapshot import Snapshot
from calendar_service.service import errors
from calendar_service.service.errors import ServiceError
from calendar_service.storage.store import (BranchMoved, GitStore, PullRefused, PullResult, RemoteError, RemoteRefused,
                                           StoreError)

log = logging.getLogger(__name__)

PULL_ATTEMPTS = 3       # pulls tried while editors keep committing in the checkout
SHORT_COMMIT = 12       # hex digits of a commit id shown in the log
JOIN_SECONDS = 5.0      # how long close() waits for the pull thread to finish a pull under way
REUSE_SECONDS = 5.0     # how long the answer of a look at the remote serves the same token again
REUSE_SIZE = 1024       # tokens whose answer is kept for REUSE_SECONDS (the oldest is dropped)
FIRST_RETRY = 1.0       # seconds before a process that has not pulled since its start tries again (doubling)


class RemoteSync:
    """Keeps one store's branch in line with the git remote of ``settings`` (when there is one)."""

    def __init__(self, settings: Settings, store: GitStore):
        self.settings = settings
        self.store = store
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def has_remote(self) -> bool:
        return bool(self.settings.git_remote)

    def catch_up(self, base: str | None, changes: dict) -> list[str]:
        """After the remote refused a write (someone pushed first): bring the branch to the
        remote head; returns the paths the remote changed differently from this write (see
        ``conflict``). Call under the write lock.
        """
        try:
            self.store.pull_locked()
        except BranchMoved:
            return []  # an editor committed in the checkout meanwhile: the caller recomputes anyway
        except PullRefused:
            return []  # the remote is refused: the caller commits locally (see ``push_writes``)
        except RemoteError as exc:
            raise self.failure(exc, "The write was not applied.") from None
        return self.store.clashes(base, self.store.head(), changes)

    def conflict(self, clash: list[str], rejected: str) -> ServiceError:
        """The conflict a write gets when the remote changed a file it modifies; the refused
        commit ``rejected`` is kept under ``refs/calendar/conflicts/``."""
        ref = self.store.keep_aside(rejected)
        log.warning("write conflicts with the remote (%s); refused as a conflict, kept as %s", ", ".join(clash), ref)
        return errors.conflict("The record was changed on the git remote meanwhile (" + ", ".join(clash)
                               + "); the write was not applied. Reload it and try again.")

    def where_now(self, base: Snapshot, head: Snapshot, paths: list[str]) -> list[str]:
        """How a conflict names ``paths`` (files of ``base`` a write changed): by the path the
        record has at ``head`` (the path to reload and edit), with the old path and the commit
        that removed it when an editor renamed the file meanwhile."""
        named = []
        for path in paths:
            entry = base.files.get(path)
            record = entry[1] if entry else None
            now = head.get(record.resource, record.id) if record is not None and record.id is not None else None
            if now is None or now.path == path:
                named.append(path)
                continue
            moved = next((c["commit"] for c in self.store.log(path.split("/", 1)[0], head.commit, base.commit)
                          if any(p == path and new is None for _, p, _, new in c["changes"])), None)
            named.append(f"{now.path}, renamed from {path}" + (f" in {moved[:SHORT_COMMIT]}" if moved else ""))
        return named

    @property
    def push_writes(self) -> bool:
        """Whether writes are pushed before they are acknowledged: with a remote, unless its head
        is a refused commit. Then writes are committed locally and pushed (replayed onto the
        repaired remote) by the first pull that is not refused."""
        return self.has_remote and self.store.refused is None

    @staticmethod
    def failure(exc: RemoteError, outcome: str) -> ServiceError:
        """The error a client gets; the details (remote address, git's reason) go to the log only."""
        log.warning("git remote: %s", exc)
        what = "refused the push" if isinstance(exc, RemoteRefused) else "could not be reached"
        return errors.remote_unavailable(f"The git remote {what}. {outcome} Try again later.")

    def pull(self) -> PullResult:
        """Fetch the git remote and bring the branch in line with it (see ``GitStore.pull``).

        Raises ``unavailable`` when the remote cannot be reached, a conflict when the branch
        kept moving.
        """
        if not self.has_remote:
            raise errors.remote_unavailable("No git remote is configured.")
        for _ in range(PULL_ATTEMPTS):
            try:
                return self.store.pull()
            except BranchMoved:
                continue  # an editor committed in the checkout meanwhile
            except PullRefused as exc:
                raise errors.pull_refused(exc.commit, exc.path, exc.reason) from None
            except RemoteError as exc:
                raise self.failure(exc, "Nothing was pulled.") from None
        raise errors.conflict("the content repository kept changing; pull again")

    def start(self) -> threading.Thread | None:
        """Start the daemon thread that pulls every ``pull_interval`` seconds (none when there is no
        remote). Each gunicorn worker runs one; the write lock keeps them apart. With an interval of
        0 the thread only runs until the first pull succeeds (see ``_wait``)."""
        if not self.has_remote or self._stop.is_set():
            return None
        if self.settings.pull_interval <= 0 and self.store.synced:
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="calendar-pull", daemon=True)
            self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop the pull thread, letting a pull under way finish (for at most JOIN_SECONDS)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS)

    def _wait(self, unsynced_tries: int) -> float:
        """Seconds until the next pull. A process that has not pulled successfully since its start
        is not ready (``CalendarService.ready``): it tries again after 1, 2, 4... seconds, up to
        the pull interval, so a replica started while the remote was away, or a worker whose first
        pull failed while its siblings' succeeded, comes back by itself within seconds of the
        remote's return rather than a whole interval later (or never, with an interval of 0)."""
        interval = self.settings.pull_interval
        if self.store.synced:
            return interval
        backoff = FIRST_RETRY * 2 ** min(unsynced_tries, 16)
        return min(backoff, interval) if interval > 0 else backoff

    def _loop(self) -> None:
        failing = None  # the last failure, logged once rather than every interval
        unsynced_tries = 0
        while not self._stop.wait(self._wait(unsynced_tries)):
            if self.settings.pull_interval <= 0 and self.store.synced:
                return  # pulls come from the webhook and from refused pushes from now on
            unsynced_tries = 0 if self.store.synced else unsynced_tries + 1
            try:
                # a cheap look first: lock and fetch only when the remote and the branch differ (a
                # process not synced yet pulls at once: only a pull makes it ready, even when the
                # branch already is where the remote is)
                synced, remote = self.store.synced, None
                if synced:
                    try:
                        remote = self.store.remote_head()
                    except StoreError as exc:
                        self.store.remote_checked(error=exc)  # for /status (a pull notes its own outcome)
                        raise
                if synced and remote == self.store.head():
                    self.store.remote_checked(head=remote)
                else:
                    result = self.store.pull()
                    if result.moved or result.pushed:
                        log.info("pulled %s: branch at %s", self.store.remote_display,
                                 (result.head or "")[:SHORT_COMMIT])
                if failing:
                    log.info("periodic pull works again")
                failing = None
            except PullRefused as exc:
                failing = str(exc)  # logged (once per commit) by the store
            except StoreError as exc:
                if str(exc) != failing:
                    log.warning("periodic pull failed (retrying every %g s): %s", self.settings.pull_interval, exc)
                failing = str(exc)
            except Exception:
                log.exception("periodic pull failed")


class HeadFollower:
    """The follower thread of a process (``calendar-follow``): whenever the branch head moves (a
    write, a pull, a webhook, an editor's commit in the checkout, another worker's write), it runs
    ``step``, which brings what the service derives from the head up to it (the catalog, the ids of
    files that lack them, the search index) and returns (the head it reached, whether all of it is
    there). The head is read every ``interval`` seconds (a ref file read); ``nudge`` wakes the
    thread at once. A step that could not finish (the index is rebuilt in the background, say) is
    tried again after ``interval``, however often it is nudged meanwhile. Reads never do this work:
    they answer from what is there (see ``CalendarService.snapshot``). ``idle`` (optional) runs
    at each look that finds the head followed already: work that waits for a quiet branch."""

    def __init__(self, head, step, interval: float, idle=None):
        self._head = head
        self._step = step
        self._idle = idle
        self.interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.followed: str | None = None   # the last head everything was brought to
        self.failing: str | None = None    # why the last step failed (None: it did not)
        self._unfinished: str | None = None   # the head of the last step that could not finish
        self._retry_at = 0.0

    def start(self) -> threading.Thread | None:
        if self._stop.is_set():
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="calendar-follow", daemon=True)
            self._thread.start()
        return self._thread

    def nudge(self) -> None:
        """Look at the head now rather than at the next interval."""
        self._wake.set()

    def again(self) -> None:
        """Run a step for the current head even if it was followed already (the search index has no
        generation for it: a new day, a repaired index)."""
        self.followed = None
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread, letting a step under way finish (for at most JOIN_SECONDS)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS)

    def behind(self) -> bool:
        """Whether the head moved since the last step (the thread is nudged then)."""
        try:
            behind = self._head() != self.followed
        except Exception:
            return True
        if behind:
            self.nudge()
        return behind

    def _loop(self) -> None:
        first = True
        while not self._stop.is_set():
            if not first:
                self._wake.wait(self.interval)
            first = False
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                head = self._head()
                if head == self.followed:
                    if self._idle is not None:
                        self._idle()
                    continue
                if head == self._unfinished and time.monotonic() < self._retry_at:
                    continue
                reached, finished = self._step()
                if finished:
                    self.followed, self._unfinished = reached, None
                else:
                    self._unfinished, self._retry_at = reached, time.monotonic() + self.interval
                if self.failing:
                    log.info("following the branch works again")
                self.failing = None
            except Exception as exc:
                # tried again at the next interval; logged once per distinct failure
                if repr(exc) != self.failing:
                    log.exception("following the branch head failed (retrying every %g s)", self.interval)
                self.failing = repr(exc)


class SharedLook:
    """Looks at the remote on behalf of many callers (a change token this replica does not know):
    at most one look runs at a time, every caller arriving while it runs takes its outcome
    (a result or the same error) instead of starting another, and a token asked about again
    within REUSE_SECONDS gets the outcome of the look it caused, while the branch has not
    moved (at most REUSE_SIZE tokens are remembered). ``look(token)`` does the work: it
    returns whether the branch may have moved."""

    def __init__(self, look: Callable[[str], bool], head: Callable[[], str | None], clock=time.monotonic):
        self._look = look
        self._head = head
        self._clock = clock
        self._cond = threading.Condition()
        self._running = False
        self._finished = 0                 # looks finished so far
        self._outcome: tuple = (False, None)   # the last look's (result, error)
        self._recent: OrderedDict = OrderedDict()   # token -> (time, head after its look, result)
        self.looks = 0                     # looks started (a figure for tests and benchmarks)

    def __call__(self, token: str) -> bool:
        now = self._clock()
        with self._cond:
            known = self._recent.get(token)
            if known is not None and now - known[0] < REUSE_SECONDS and known[1] == self._head():
                return known[2]
            if self._running:  # one is under way: wait for it and take its outcome
                ticket = self._finished
                while self._finished == ticket:
                    self._cond.wait()
                result, error = self._outcome
                if error is not None:
                    raise error
                return result
            self._running = True
            self.looks += 1
        result, error = False, None
        try:
            result = self._look(token)
        except Exception as exc:  # handed to every waiter, then raised here too
            error = exc
        with self._cond:
            self._running = False
            self._finished += 1
            self._outcome = (result, error)
            if error is None:
                self._recent[token] = (self._clock(), self._head(), result)
                self._recent.move_to_end(token)
                while len(self._recent) > REUSE_SIZE:
                    self._recent.popitem(last=False)
            self._cond.notify_all()
        if error is not None:
            raise error
        return result

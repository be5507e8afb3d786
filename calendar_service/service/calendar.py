"""The calendar service: reads and writes of the five resources, with their rules.

Handlers call this module and nothing below it. Every successful write is exactly one git
commit authored by the signed-in user; a write that fails validation or cannot be
committed leaves no file and no commit behind. Writes are computed against the branch
head while holding the store's write lock, so concurrent writers never lose each other's
changes and never reuse an id.

``CalendarService`` is a facade: it runs the write transaction and holds one helper per
concern (``writes.WritePlanner`` plans the files, ``history.RecordHistory`` reads revisions and
changes, ``sync.RemoteSync`` talks to the git remote, ``trash`` lists and empties the
trash). Failures are ``errors.ServiceError``; ``build.build_service`` makes the service.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import random
import threading
import time

from calendar_service.auth.accounts import Accounts, User
from calendar_service.config import Settings
from calendar_service.domain import occurrences, permissions, queries, text
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS, ORGANIZERS, VENUES, Resource
from calendar_service.index import search
from calendar_service.index.search import SearchIndex
from calendar_service.service import errors, ids, trash
from calendar_service.service.status import view as status_view
from calendar_service.service.history import RecordHistory
from calendar_service.service.sync import HeadFollower, RemoteSync, SharedLook
from calendar_service.service.series_writes import SeriesPlanner
from calendar_service.service.writes import LinkedValueError, WritePlan, WritePlanner, parse_linked, parse_term_list
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog, collector_paused
from calendar_service.storage.store import BranchMoved, GitStore, PullResult, PushRejected, RemoteError, StoreError

__all__ = ["CalendarService", "LinkedValueError", "parse_linked", "parse_term_list"]

log = logging.getLogger(__name__)

# A write the branch or the remote keeps moving under is recomputed on the new head, at most
# WRITE_ATTEMPTS times and only while less than WRITE_PATIENCE seconds passed (well below
# gunicorn's --timeout in docs/operations.md), after a random wait up to RETRY_BACKOFF seconds, doubled
# per attempt up to RETRY_BACKOFF_MAX. A replica whose writes keep losing the race for the
# remote (the other one pushes a burst back to back) thus waits that burst out.
WRITE_ATTEMPTS = 40
WRITE_PATIENCE = 20.0
RETRY_BACKOFF = 0.05
RETRY_BACKOFF_MAX = 0.5
CREATED = 201       # the status of a create, also when an existing duplicate venue or organizer is returned
# from this many files, the objects made at start (records, maps, the index's) are moved out of the
# cyclic garbage collector's sight (``gc.freeze``): a full collection then walks what came later, not
# ~900,000 objects of 100,000 records (a pause of about a second in the middle of a write)
FREEZE_FILES = 20_000


@contextlib.contextmanager
def starting():
    """Build and warm up a service inside: Python's cyclic collector is paused for the whole
    start (it loads a few million containers, none of them garbage; the collections their
    allocations trigger would walk them all once more),
    then ``freeze_start_objects`` is called, once it is given the number of files loaded:
    ``with starting() as loaded: ...; loaded(files)``."""
    counted: list[int] = []
    with collector_paused():
        yield counted.append
        if counted:
            freeze_start_objects(counted[-1])


def freeze_start_objects(files: int) -> None:
    """``gc.freeze()`` once the records of ``files`` files are loaded, for a large content
    repository (call it with no snapshot held by a live frame). Safe: frozen objects are still
    freed when their last reference goes (a replaced record, the first snapshot: none of them is in
    a reference cycle). Where the index's writers leave a reference cycle of their caller's frames
    (``search.writers_leave_cycles``: the start's inline sync holding the first snapshot), the
    young generations are collected first so that it is not frozen with them; else no collection
    at all (at 1,000,000 files that walk of every object the start made cost ~0.3 s, to find
    ~100 small objects of library caches)."""
    if files >= FREEZE_FILES:
        if search.writers_leave_cycles():
            gc.collect(1)
        gc.freeze()


def commit_message(subject: str, notes: list[str], via: str, user: User) -> str:
    """A write's commit message: the subject, its notes, and who wrote it through what. Subjects
    and notes quote titles: one printable line each."""
    message = text.one_line(subject)
    if notes:
        message += "\n\n" + "\n".join(text.one_line(note) for note in notes)
    return message + f"\n\nVia {via} by {user.login} (user {user.id})."


class CalendarService:
    """Reads and writes records for the HTTP layer (and the command line)."""

    def __init__(self, settings: Settings, store: GitStore, catalog: Catalog, accounts: Accounts,
                 index: SearchIndex | None = None):
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.accounts = accounts
        self.index = index
        self.planner = WritePlanner(settings)
        self.series_planner = SeriesPlanner(self.planner)
        self.history = RecordHistory(store, catalog, self.check_readable, self._catch_up_for)
        self._shared_look = SharedLook(self._catch_up_for, store.head)
        self.sync = RemoteSync(settings, store)
        self._closed = threading.Event()
        self.ids = ids.IdGiver(store, catalog, self.sync, self._write_lock, WRITE_ATTEMPTS)
        self.follower = HeadFollower(store.head, self.follow, settings.follow_interval,
                                     idle=catalog.refresh_cache_when_quiet)
        self.webhooks = None  # service.webhooks.Webhooks: build_service always sets it
        self.recovery = None  # service.build.Recovering when build_service finishes a killed write in a thread

    @property
    def site_tz(self):
        return self.settings.tz

    def snapshot(self) -> Snapshot:
        """The records at the branch head, as they are: a read never commits and never builds the
        search index. Files there that need an id are not served until the follower thread's id
        commit (``follow``) lands; the follower is nudged when the head moved since it last looked."""
        snapshot = self.catalog.current()
        self.follower.behind()
        return snapshot

    def follow(self) -> tuple[str | None, bool]:
        """One step of the follower thread (``sync.HeadFollower``): the catalog brought to the branch
        head, ids given to files there that need them (a commit of the service's own, under the write
        lock), the search index brought to the head (a generation derived from the previous one, or
        the index on disk synced and read). Returns the head reached and whether the index has a
        generation for it (not yet while it is rebuilt in the background: tried again later)."""
        snapshot = self.catalog.current()
        if snapshot.needs_ids and snapshot.commit != self.ids.tried:
            self.assign_ids()
            snapshot = self.catalog.current()
        if self.index is None or snapshot.commit is None:
            return snapshot.commit, True
        return snapshot.commit, self.index.view(snapshot, self.store) is not None

    def assign_ids(self) -> str | None:
        """Commit ids (and slugs) for the files at the branch head that need them (see ``ids``);
        returns the commit, or None when there was nothing to do or it could not be made."""
        return self.ids.assign()

    def _write_lock(self, grouped: bool = False):
        """The store's write lock (see ``GitStore.write_lock`` for ``grouped``)."""
        return self.store.write_lock(grouped)

    def warm_up(self) -> None:
        """Load the records now rather than on the first request and bring the search index up
        to date (inline when few files changed since it was last written, in the background
        otherwise) and read it, so that the first list is answered from it. Ids are given by the
        follower thread once it runs (``start_following``)."""
        snapshot = self.catalog.current()
        if self.index is not None:
            self.index.ensure(snapshot, self.store)
            if snapshot.commit is not None:
                self.index.view(snapshot, self.store)

    def close(self) -> None:
        """Stop the pull thread and release the store's git processes. Safe to call twice."""
        if self._closed.is_set():
            return
        self._closed.set()
        self.follower.stop()
        self.sync.stop()
        self.webhooks.close()
        self.store.close()

    # ------------------------------------------------------------------------- reads

    def check_readable(self, record: Record, user: User | None) -> None:
        """Raise the original's error when ``user`` may not read ``record`` on its own."""
        resource = record.resource
        if resource.kind == "term":
            return
        if resource is EVENTS and record.status == "trash":
            raise errors.plugin_error("event-no-longer-available")
        if not permissions.can_read(user, record):
            raise errors.plugin_error(f"{resource.singular}-not-accessible")

    def list_events(self, query: queries.EventQuery, user: User | None, snapshot: Snapshot | None = None) -> queries.Page:
        """Events for a list request: from the search index when it reflects the branch head,
        otherwise (while it catches up) by scanning, with the same results."""
        snapshot = snapshot or self.snapshot()
        if query.horizon is None:   # series are listed up to today's horizon, by either path
            query.horizon = occurrences.horizon(self.settings.recurrence_horizon)
        if self.index is not None:
            view = page = None
            try:
                view = self.index.view(snapshot, self.store, build=False)
                page = search.events(view, snapshot, query, user) if view is not None else None
            except Exception as exc:
                # derived data must never break a read: answer by scanning, rebuild the index
                log.exception("the search index failed; answering by scanning and rebuilding it")
                self.index.invalidate(snapshot, self.store, exc)
                view = None
            if page is not None:
                return page
            if view is None:   # no generation for this head (or for today): the follower reads one
                self.follower.again()
        return queries.events(snapshot, query, user, self.site_tz)

    def occurrence(self, rid: int, user: User | None, snapshot: Snapshot | None = None) -> Record | None:
        """The occurrence of a recurring series an occurrence id names (None: no such occurrence,
        or one of a series ``user`` may not read, which answers exactly as an unknown id does)."""
        return occurrences.occurrence_by_id(snapshot or self.snapshot(), rid, self.site_tz,
                                            lambda series: permissions.can_read(user, series))

    def list_linked(self, resource: Resource, query: queries.LinkedQuery, user: User | None,
                    snapshot: Snapshot | None = None) -> queries.Page:
        return queries.linked(snapshot or self.snapshot(), resource, query, user, self.site_tz)

    def list_terms(self, resource: Resource, query: queries.TermQuery, count,
                   snapshot: Snapshot | None = None) -> queries.Page:
        return queries.terms(snapshot or self.snapshot(), resource, query, count)

    # ------------------------------------------------------------------------- writes

    def create(self, resource: Resource, args: dict, user: User) -> tuple[Record, int]:
        """Create a record from validated arguments. Returns (record, HTTP status).

        Venues and organizers whose name (and description, when given) match an existing
        one return that one instead (the original's duplicate rule); terms whose name or
        slug exist already are refused with ``term_exists``.
        """
        if resource in (VENUES, ORGANIZERS):
            existing = self.planner.find_duplicate(self.snapshot(), resource, args, user)
            if existing is not None:
                return existing, CREATED
        return self._write(self.planner.create(resource, args, user), user), CREATED

    def update(self, record: Record, args: dict, user: User, precondition=None) -> Record:
        """Apply validated arguments to ``record`` (fields not given are kept).

        ``precondition`` is checked against the head the write commits on (see ``_write``)."""
        return self._write(self.planner.update(record, args, user), user, precondition)

    def delete(self, record: Record, user: User, precondition=None) -> Record:
        """Trash a post (status ``trash``; no other record changes) or delete a term for good
        (removing it from the events that carry it).

        Returns the record after trashing, or the term as it was before deletion.
        """
        resource = record.resource
        if resource.kind == "post" and record.status == "trash":
            raise errors.plugin_error(f"{resource.singular}-is-in-trash", id=record.id)
        result = self._write(self.planner.delete(record, user), user, precondition)
        return record if result is None else result

    def delete_for_good(self, record: Record, user: User, precondition=None) -> None:
        """Delete a post's file for good in one commit by ``user``, whether it is in the trash or not
        (what emptying the trash does to it; see ``trash.removing``)."""
        self._write(trash.removing(record), user, precondition)

    def write_occurrences(self, record: Record, original, scope: str, args: dict | None, user: User,
                          precondition=None) -> Record:
        """Update (``args``) or delete (None) the occurrence of ``record``'s series at ``original`` with
        ``scope`` (see ``series_writes``) in one commit; returns the series (the new one for following)."""
        return self._write(self.series_planner.plan(record, original, scope, args, user), user, precondition)

    def trashed(self, resources=None, older_than_days: float | None = None) -> list[Record]:
        """The trashed events, venues and organizers (of ``resources``, default all three),
        optionally only those last modified more than ``older_than_days`` days ago."""
        return trash.trashed(self.snapshot(), resources, older_than_days)

    def empty_trash(self, records: list[Record], user: User) -> int:
        """Delete the files of trashed ``records`` for good in one commit by ``user`` (see
        ``trash.emptying``); returns how many were removed (git history keeps them)."""
        removed: list[Record] = []
        self.command_write(trash.emptying(records, removed), user, permissions.can_empty_trash)
        return len(removed)

    def command_write(self, build, user: User, allowed) -> None:
        """A write of the command line: ``build`` (see ``writes.WritePlanner``) committed by ``user``
        when ``allowed(user)``, else a forbidden error and nothing written."""
        if not allowed(user):
            raise errors.forbidden(True)
        self._write(build, user, via="the command line")

    def _write(self, build, user: User, precondition=None, via: str = "the calendar API") -> Record | None:
        """Run ``build`` against the branch head under the write lock and commit what it planned.

        ``precondition(snapshot)``, when given, runs first against that same head under the
        lock and may raise (an If-Match that no longer matches: nothing is committed). With a
        git remote, a precondition that fails is checked once more after a pull (the tag may
        come from a replica that is ahead). A plan that changes no file makes no commit.
        When the branch or the remote moved meanwhile the write is recomputed on the new head
        (fetched again after the wait) after a random wait that doubles with each attempt
        (exponential backoff with jitter), within WRITE_ATTEMPTS and WRITE_PATIENCE.
        """
        author = (user.name, user.email)
        pulled_for_precondition = not self.sync.has_remote
        refresh = False  # the remote refused the last attempt: fetch again after the wait
        deadline = time.monotonic() + WRITE_PATIENCE
        for attempt in range(WRITE_ATTEMPTS):
            if attempt:  # outside the lock: the writers that won meanwhile go on, and the other replica too
                if time.monotonic() >= deadline:
                    break
                time.sleep(random.uniform(0, min(RETRY_BACKOFF_MAX, RETRY_BACKOFF * 2 ** (attempt - 1))))
            push = self.sync.push_writes
            try:
                # not pushing: a group commit (``storage.grouping``), on the branch once the lock is left
                with self._write_lock(grouped=not push):
                    if refresh:  # the remote head fetched before the wait is likely stale by now
                        self._pull_locked("The write was not applied.")
                        refresh = False
                    snapshot = self.catalog.at(self.store.write_base())
                    if precondition is not None:
                        try:
                            precondition(snapshot)
                        except errors.ServiceError as exc:
                            if exc.kind != errors.PRECONDITION_FAILED or pulled_for_precondition:
                                raise
                            pulled_for_precondition = True
                            self._pull_locked("The write was not applied.")
                            snapshot = self.catalog.at(self.store.write_base())
                            precondition(snapshot)
                    plan = WritePlan(snapshot, read=self.store.read_object)
                    outcome = build(plan)
                    if outcome is None:
                        return None
                    message, target = outcome
                    if not plan.changes:  # nothing to change: no (empty) commit
                        return None if target is None else snapshot.get(*target)
                    broken = sorted(path for path in plan.changes if path in snapshot.stale)
                    if broken:   # never written over: an editor's broken file is fixed in git
                        raise errors.file_broken(snapshot.stale[broken[0]])
                    message = commit_message(message, plan.notes, via, user)
                    if self.sync.has_remote and not push and snapshot.commit is None:
                        # never start a history of our own beside a remote we could not follow yet
                        raise errors.remote_unavailable("The git remote holds a refused commit and this service "
                                                        "has no content yet. The write was not applied. Try again "
                                                        "later.")
                    try:
                        commit = self.store.commit(plan.changes, message, author, snapshot.commit, push=push)
                    except PushRejected as exc:
                        clash = self.sync.catch_up(snapshot.commit, plan.changes)
                        if clash and precondition is not None:
                            precondition(self.catalog.current())  # a stale If-Match is a 412, as on any replica
                        if clash:   # named as the files are now (an editor may have renamed one)
                            raise self.sync.conflict(self.sync.where_now(snapshot, self.catalog.current(), clash),
                                                     exc.commit)
                        log.info("the remote moved during a write; recomputing it on the remote head (%d)",
                                 attempt + 1)
                        refresh = True
                        continue
                    except RemoteError as exc:
                        raise self.sync.failure(exc, "The write was not applied.") from None
                    written = self.catalog.after_write(snapshot, commit)
            except BranchMoved:  # before the commit, or before its group was on the branch: nothing is there
                log.info("branch moved during a write; retrying (%d)", attempt + 1)
                continue
            except StoreError as exc:
                raise errors.conflict(str(exc)) from None
            self.webhooks.nudge()
            self.follower.nudge()
            return None if target is None else written.get(*target)
        raise errors.conflict("the content repository kept changing; the write was not applied, try again")

    def _pull_locked(self, outcome: str) -> None:
        """Pull from the remote inside the write lock; an unreachable remote is ``unavailable``."""
        try:
            self.store.pull_locked()
        except BranchMoved:
            pass  # an editor committed in the checkout meanwhile: the current head is read anyway
        except RemoteError as exc:
            raise self.sync.failure(exc, outcome) from None

    def _catch_up_for(self, commit: str) -> bool:
        """Pull when the remote may know ``commit`` (a token or tag from a replica that is ahead);
        returns whether the branch may have moved. Without a remote, or when the remote's head is
        the local one already, nothing is fetched."""
        if not self.sync.has_remote:
            return False
        try:
            if self.store.remote_head() == self.store.head():
                return False
        except RemoteError as exc:
            raise self.sync.failure(exc, "The token could not be checked.") from None
        with self.store.write_lock():
            self._pull_locked("The token could not be checked.")
        return True

    # ------------------------------------------------------------------------- history and the remote

    def revisions(self, record: Record, snapshot: Snapshot | None = None) -> list[dict]:
        """``record``'s revisions, newest first (see ``RecordHistory.revisions``)."""
        return self.history.revisions(record, snapshot)

    def revision_at(self, record: Record, commit: str) -> tuple[Snapshot, Record]:
        """The snapshot of ``commit`` and ``record`` as it was there (see ``RecordHistory.revision_at``)."""
        return self.history.revision_at(record, commit)

    def changes(self, since: str | None, user: User | None, client: str | None = None) -> tuple[list[dict] | None, str]:
        """The net changes since the token ``since`` and the token of now (see ``RecordHistory.changes``).
        A token this replica does not know makes it look at the git remote: one look at a time,
        shared by the callers asking meanwhile (``SharedLook``), and counted per address for
        anonymous callers (``client``), who get 429 past ``CALENDAR_CHANGES_REMOTE_LOOKUPS``."""
        def catch_up(commit: str) -> bool:
            if not self.sync.has_remote:
                return False
            if user is None:
                self.accounts.limits.remote_lookup(client or "")
            return self._shared_look(commit)
        return self.history.changes(since, user, catch_up)

    @property
    def has_remote(self) -> bool:
        return self.sync.has_remote

    def pull_remote(self) -> PullResult:
        """Bring the branch in line with the git remote (see ``RemoteSync.pull``)."""
        result = self.sync.pull()
        self.webhooks.nudge()   # the branch may have moved: deliveries to make
        self.follower.nudge()
        return result

    def branch_head(self) -> str | None:
        """The commit the service's branch points at."""
        return self.store.head()

    def status(self) -> dict:
        """What operators need to know about this service (see ``status.view``)."""
        found = status_view(self.settings, self.store, self.snapshot(), self.index, self.has_remote, self.follower)
        found["state"] = self.webhooks.db.status()   # kind, reachable, where (never the URL's password)
        return found

    def waiting_for_content(self) -> bool:
        """True while a replica with a remote has neither pulled successfully since the start nor
        any commit of its own: it has nothing to serve yet (an empty calendar would be wrong)."""
        return self.has_remote and not self.store.synced and self.store.head() is None

    def ready(self) -> tuple[bool, str]:
        """Whether a load balancer may send requests here, and why not. Only what prevents correct
        answers counts: with a remote, no pull has succeeded since the start (the replica may serve
        a stale or empty calendar). A search index that is catching up does not (lists are answered
        by scanning meanwhile, with the same results); nor does a remote whose head is refused once
        a pull succeeded (the last good head is served, writes are committed here and pushed by the
        first pull that is not refused: a hostile push must not take every replica out)."""
        if self.has_remote and not self.store.synced:
            return False, "no successful pull from the git remote since the start"
        return True, ""

    def start_following(self) -> threading.Thread | None:
        """Start the follower thread (see ``sync.HeadFollower``)."""
        return self.follower.start()

    def start_pulling(self) -> threading.Thread | None:
        """Start the periodic pull (see ``RemoteSync.start``)."""
        return self.sync.start()

    def start_webhooks(self) -> threading.Thread | None:
        """Start the webhook delivery thread (see ``Webhooks.start``)."""
        return self.webhooks.start()

    def stop_pulling(self) -> None:
        self.sync.stop()

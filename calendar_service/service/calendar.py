"""The calendar service: reads and writes of the five resources, with their rules.

Handlers call this module and nothing below it. Every successful write is exactly one git
commit authored by the signed-in user; a write that fails validation or cannot be
committed leaves no file and no commit behind. Writes are computed against the branch
head while holding the store's write lock, so concurrent writers never lose each other's
changes and never reuse an id.

``CalendarService`` is a facade: it runs the write transaction and holds one helper per
concern (``writes.Writer`` plans the files, ``history.History`` reads revisions and
changes, ``sync.RemoteSync`` talks to the git remote, ``trash`` lists and empties the
trash). Failures are ``errors.ServiceError``; ``build.build_service`` makes the service.
"""
from __future__ import annotations

import contextlib
import logging
import threading

from calendar_service.auth.accounts import Accounts, User
from calendar_service.config import Settings
from calendar_service.domain import permissions, queries
from calendar_service.domain.records import Record
from calendar_service.domain.resources import EVENTS, ORGANIZERS, VENUES, Resource
from calendar_service.index import search
from calendar_service.index.search import SearchIndex
from calendar_service.service import errors, ids, trash
from calendar_service.service.history import History
from calendar_service.service.sync import RemoteSync
from calendar_service.service.writes import LinkedValueError, WritePlan, Writer, parse_linked, parse_term_list
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.store import BranchMoved, GitStore, PullResult, PushRejected, RemoteError, StoreError

__all__ = ["CalendarService", "LinkedValueError", "parse_linked", "parse_term_list"]

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 5  # commits tried while the branch or the remote keeps moving under a write
CREATED = 201       # the status of a create, also when an existing duplicate venue or organizer is returned


class CalendarService:
    """Reads and writes records for the HTTP layer (and the command line)."""

    def __init__(self, settings: Settings, store: GitStore, catalog: Catalog, accounts: Accounts,
                 index: SearchIndex | None = None):
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.accounts = accounts
        self.index = index
        self.writer = Writer(settings)
        self.history = History(store, catalog, self.check_readable)
        self.sync = RemoteSync(settings, store)
        self._closed = threading.Event()
        self._ids_tried: str | None = None     # the last head ids were given (or tried) for
        self._writing = threading.local()      # set while this thread holds the write lock here

    @property
    def site_tz(self):
        return self.settings.tz

    def snapshot(self) -> Snapshot:
        """The records at the branch head; files there that need an id are given one first (once
        per head, see ``assign_ids``)."""
        snapshot = self.catalog.current()
        if snapshot.needs_ids and snapshot.commit != self._ids_tried and not getattr(self._writing, "on", False):
            self.assign_ids()
            snapshot = self.catalog.current()
        return snapshot

    def assign_ids(self) -> str | None:
        """Commit ids (and slugs) for the files at the branch head that have none or one an older
        file holds (see ``ids``), as the service's committer, pushed like any write. Returns the commit, or
        None when there was nothing to do or it could not be made (logged: reads go on, the
        files keep being reported and it is tried again at the next head)."""
        author = self.store.committer
        for attempt in range(WRITE_ATTEMPTS):
            with self._write_lock():
                snapshot = self.catalog.current()
                self._ids_tried = snapshot.commit
                if not snapshot.needs_ids:
                    return None
                paths = ids.targets(snapshot)
                blobs = {path: snapshot.files[path][0] for path in paths}
                contents = self.store.read_blobs(set(blobs.values()))
                changes, lines = ids.plan(snapshot, {path: contents[blob] for path, blob in blobs.items()})
                for record, holder in snapshot.displaced:
                    log.warning("%s: id %s is also in %s, which entered the history first; giving this file "
                                "a new id", record.path, record.id, holder.path)
                for record, holder in snapshot.reslugged:
                    log.warning("%s: slug %r is also the slug of %s, which entered the history first; giving this "
                                "file another slug", record.path, record.slug, holder.path)
                if not changes:
                    return None
                try:
                    commit = self.store.commit(changes, ids.SUBJECT + "\n\n" + "\n".join(lines), author,
                                               snapshot.commit, push=self.sync.has_remote)
                except BranchMoved:
                    continue
                except PushRejected as exc:
                    try:
                        self.sync.catch_up(snapshot.commit, changes, exc.commit)
                    except errors.ServiceError as error:
                        log.warning("could not give ids (%s); not served until then: %s; trying again at the next "
                                    "head", error, ", ".join(paths))
                        return None
                    continue
                except StoreError as exc:
                    log.warning("could not give ids (%s); not served until then: %s; trying again at the next "
                                "head", exc, ", ".join(paths))
                    return None
                for line in lines:
                    log.info("%s", line)
                self._ids_tried = commit
                return commit
        log.warning("could not give ids: the branch kept moving; trying again at the next head")
        return None

    @contextlib.contextmanager
    def _write_lock(self):
        """The store's write lock, marking this thread as writing (``snapshot`` then never writes)."""
        with self.store.write_lock():
            self._writing.on = True
            try:
                yield
            finally:
                self._writing.on = False

    def warm_up(self) -> None:
        """Load the records now rather than on the first request and bring the search index up
        to date (inline when few files changed since it was last written, in the background
        otherwise)."""
        snapshot = self.snapshot()
        if self.index is not None:
            self.index.ensure(snapshot, self.store)

    def close(self) -> None:
        """Stop the pull thread and release the store's git processes. Safe to call twice."""
        if self._closed.is_set():
            return
        self._closed.set()
        self.sync.stop()
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
        if self.index is not None:
            try:
                view = self.index.view(snapshot, self.store)
                page = search.events(view, snapshot, query, user) if view is not None else None
            except Exception:
                # derived data must never break a read: answer by scanning, rebuild the index
                log.exception("the search index failed; answering by scanning and rebuilding it")
                self.index.invalidate(snapshot, self.store)
                page = None
            if page is not None:
                return page
        return queries.events(snapshot, query, user, self.site_tz)

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
            existing = self.writer.find_duplicate(self.snapshot(), resource, args)
            if existing is not None:
                return existing, CREATED
        return self._write(self.writer.create(resource, args, user), user), CREATED

    def update(self, record: Record, args: dict, user: User, precondition=None) -> Record:
        """Apply validated arguments to ``record`` (fields not given are kept).

        ``precondition`` is checked against the head the write commits on (see ``_write``)."""
        return self._write(self.writer.update(record, args, user), user, precondition)

    def delete(self, record: Record, user: User, precondition=None) -> Record:
        """Trash a post (status ``trash``, unlinking a venue or organizer from its events) or
        delete a term for good (removing it from the events that carry it).

        Returns the record after trashing, or the term as it was before deletion.
        """
        resource = record.resource
        if resource.kind == "post" and record.status == "trash":
            raise errors.plugin_error(f"{resource.singular}-is-in-trash", id=record.id)
        result = self._write(self.writer.delete(record), user, precondition)
        return record if result is None else result

    def trashed(self, resources=None, older_than_days: float | None = None) -> list[Record]:
        """The trashed events, venues and organizers (of ``resources``, default all three),
        optionally only those last modified more than ``older_than_days`` days ago."""
        return trash.trashed(self.snapshot(), resources, older_than_days)

    def empty_trash(self, records: list[Record], user: User) -> int:
        """Delete the files of trashed ``records`` for good, in one commit authored by ``user``.

        Only records still in the trash at the branch head are removed (one restored
        meanwhile is kept). Events whose ``post_parent`` names a removed event lose that
        link. Returns how many records were removed; git history keeps every one of them.
        """
        if not permissions.can_empty_trash(user):
            raise errors.forbidden(True)
        removed: list[Record] = []
        self._write(trash.emptying(records, removed), user, via="the command line")
        return len(removed)

    def _write(self, build, user: User, precondition=None, via: str = "the calendar API") -> Record | None:
        """Run ``build`` against the branch head under the write lock and commit what it planned.

        ``precondition(snapshot)``, when given, runs first against that same head under the
        lock and may raise (an If-Match that no longer matches: nothing is committed).
        """
        author = (user.name, user.email)
        for attempt in range(WRITE_ATTEMPTS):
            with self._write_lock():
                snapshot = self.catalog.current()
                if precondition is not None:
                    precondition(snapshot)
                plan = WritePlan(snapshot)
                outcome = build(plan)
                if outcome is None:
                    return None
                message, target = outcome
                if plan.notes:
                    message += "\n\n" + "\n".join(plan.notes)
                message += f"\n\nVia {via} by {user.login} (user {user.id})."
                try:
                    self.store.commit(plan.changes, message, author, snapshot.commit, push=self.sync.has_remote)
                except BranchMoved:
                    log.info("branch moved during a write; retrying (%d)", attempt + 1)
                    continue
                except PushRejected as exc:
                    self.sync.catch_up(snapshot.commit, plan.changes, exc.commit)
                    log.info("the remote moved during a write; recomputing it on the remote head (%d)", attempt + 1)
                    continue
                except RemoteError as exc:
                    raise self.sync.failure(exc, "The write was not applied.") from None
                except StoreError as exc:
                    raise errors.conflict(str(exc)) from None
                if target is None:
                    return None
                resource, record_id = target
                return self.catalog.current().get(resource, record_id)
        raise errors.conflict("the content repository kept changing; the write was not applied, try again")

    # ------------------------------------------------------------------------- history and the remote

    def revisions(self, record: Record, snapshot: Snapshot | None = None) -> list[dict]:
        """``record``'s revisions, newest first (see ``History.revisions``)."""
        return self.history.revisions(record, snapshot)

    def revision_at(self, record: Record, commit: str) -> tuple[Snapshot, Record]:
        """The snapshot of ``commit`` and ``record`` as it was there (see ``History.revision_at``)."""
        return self.history.revision_at(record, commit)

    def changes(self, since: str | None, user: User | None) -> tuple[list[dict] | None, str]:
        """The net changes since the token ``since`` and the token of now (see ``History.changes``)."""
        return self.history.changes(since, user)

    @property
    def has_remote(self) -> bool:
        return self.sync.has_remote

    def pull_remote(self) -> PullResult:
        """Bring the branch in line with the git remote (see ``RemoteSync.pull``)."""
        return self.sync.pull()

    def branch_head(self) -> str | None:
        """The commit the service's branch points at."""
        return self.store.head()

    def start_pulling(self) -> threading.Thread | None:
        """Start the periodic pull (see ``RemoteSync.start``)."""
        return self.sync.start()

    def stop_pulling(self) -> None:
        self.sync.stop()

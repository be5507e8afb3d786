"""The calendar service: reads and writes of the five resources, with their rules.

Handlers call this module and nothing below it. Every successful write is exactly one git
commit authored by the signed-in user; a write that fails validation or cannot be
committed leaves no file and no commit behind. Writes are computed against the branch
head while holding the store's write lock, so concurrent writers never lose each other's
changes and never reuse an id.
"""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from datetime import timedelta, timezone

from calendar_service.domain import dates
from calendar_service.domain.booleans import LENIENT, parse_bool
from calendar_service import errors
from calendar_service.domain import permissions
from calendar_service.domain import queries
from calendar_service.domain import records
from calendar_service.index import search
from calendar_service.domain import text
from calendar_service.auth.accounts import Accounts, User
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog
from calendar_service.config import Settings
from calendar_service.errors import ApiError
from calendar_service.domain.records import Record
from calendar_service.index.search import SearchIndex
from calendar_service.domain.resources import CATEGORIES, EVENTS, EVENT_REFERENCES, ORGANIZERS, RESOURCES, VENUES, Resource
from calendar_service.storage.store import ZERO, BranchMoved, GitStore, PullResult, PushRejected, RemoteError, RemoteRefused, StoreError

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 5


class LinkedValueError(ValueError):
    """A venue or organizer value in an event payload that is neither an id nor a usable object."""


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def parse_linked(value, resource: Resource, snapshot: Snapshot) -> list:
    """Read the ``venue`` or ``organizer`` value of an event payload (BEHAVIOR.md 9.3).

    Returns a list whose items are existing record ids or dicts describing new records.
    Empty values (``""``, ``0``, ``[]``) give an empty list. Raises LinkedValueError.
    """
    if value in (None, "", 0, "0", [], {}):
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, dict):
        # a single object, or a PHP-style list {"0": {...}, "1": {...}}
        items = list(value.values()) if value and all(str(k).isdigit() for k in value) else [value]
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    found: list = []
    for item in items:
        if item in (None, "", 0, "0"):
            continue
        if isinstance(item, bool):
            raise LinkedValueError("not an id")
        if isinstance(item, (int, str)):
            text_value = str(item).strip()
            if not text_value.isdigit() or snapshot.get(resource, int(text_value)) is None:
                raise LinkedValueError(f"{text_value!r} is not the id of {_article(resource.singular)}")
            found.append(int(text_value))
        elif isinstance(item, dict):
            if item.get("id") not in (None, ""):
                ident = str(item["id"]).strip()
                if not ident.isdigit() or snapshot.get(resource, int(ident)) is None:
                    raise LinkedValueError(f"{ident!r} is not the id of {_article(resource.singular)}")
                found.append(int(ident))
            elif isinstance(item.get(resource.title_key), str) and item[resource.title_key].strip():
                found.append(item)
            else:
                raise LinkedValueError(f"a new {resource.singular} needs a non-empty '{resource.title_key}'")
        else:
            raise LinkedValueError("not an id or an object")
    return found


def parse_term_list(value) -> list:
    """Categories or tags of an event payload: ids and names, from a CSV string or a list."""
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        value = [value]
    out = []
    for item in value:
        if isinstance(item, bool) or isinstance(item, (dict, list)) or item is None:
            raise ValueError("not a term id or name")
        if str(item).strip():
            out.append(item if isinstance(item, int) else str(item).strip())
    return out


@dataclass
class WritePlan:
    """The files one write changes, the ids it hands out, and what its commit message says."""

    snapshot: Snapshot
    changes: dict = field(default_factory=dict)      # path -> bytes or None
    taken: dict = field(default_factory=dict)        # id space -> ids handed out in this write
    slugs: dict = field(default_factory=dict)        # resource name -> slugs used in this write
    notes: list = field(default_factory=list)        # further lines for the commit message
    records: dict = field(default_factory=dict)      # (resource name, id) -> data written

    def new_id(self, resource: Resource) -> int:
        taken = self.taken.setdefault(resource.id_space, set())
        candidate = max([self.snapshot.next_id(resource) - 1, *taken]) + 1
        taken.add(candidate)
        return candidate

    def unique_slug(self, resource: Resource, wanted: str, record_id: int) -> str:
        used = self.slugs.setdefault(resource.name, set())
        slug, n = wanted, 2
        while True:
            other = self.snapshot.get_slug(resource, slug)
            if slug not in used and (other is None or other.id == record_id):
                used.add(slug)
                return slug
            slug = f"{wanted[:180]}-{n}"
            n += 1

    def put(self, resource: Resource, data: dict, old_path: str | None = None) -> None:
        path = records.path_for(resource, data["slug"])
        if old_path and old_path != path:
            self.changes[old_path] = None
        self.changes[path] = records.dump(resource, data)
        self.records[(resource.name, data["id"])] = data

    def remove(self, record: Record) -> None:
        self.changes[record.path] = None


class CalendarService:
    """Reads and writes records for the HTTP layer (and the command line)."""

    def __init__(self, settings: Settings, store: GitStore, catalog: Catalog, accounts: Accounts,
                 index: SearchIndex | None = None):
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.accounts = accounts
        self.index = index
        self._logs: dict = {}  # folder -> (commit, its history): see _folder_log
        self._stop_pulls = threading.Event()

    @property
    def site_tz(self):
        return self.settings.tz

    def snapshot(self) -> Snapshot:
        return self.catalog.current()

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
        slug exist already are a 400 ``term_exists``.
        """
        def build(plan: WritePlan):
            record_id = plan.new_id(resource)
            data = self._apply(plan, resource, {"id": record_id}, args, user, creating=True)
            plan.put(resource, data)
            return f'Create {resource.singular} {record_id} "{data[resource.title_key]}"', (resource, record_id)

        if resource in (VENUES, ORGANIZERS):
            existing = self._find_duplicate(self.snapshot(), resource, args)
            if existing is not None:
                return existing, 201
        return self._write(build, user), 201

    def update(self, record: Record, args: dict, user: User, precondition=None) -> Record:
        """Apply validated arguments to ``record`` (fields not given are kept).

        ``precondition`` is checked against the head the write commits on (see ``_write``)."""
        resource = record.resource

        def build(plan: WritePlan):
            current = plan.snapshot.get(resource, record.id)
            if current is None:
                raise errors.conflict(f"{resource.singular} {record.id} was removed meanwhile")
            data = self._apply(plan, resource, dict(current.data), args, user, creating=False)
            plan.put(resource, data, old_path=current.path)
            return f'Update {resource.singular} {record.id} "{data[resource.title_key]}"', (resource, record.id)

        return self._write(build, user, precondition)

    def delete(self, record: Record, user: User, precondition=None) -> Record:
        """Trash a post (status ``trash``, unlinking a venue or organizer from its events) or
        delete a term for good (removing it from the events that carry it).

        Returns the record after trashing, or the term as it was before deletion.
        """
        resource = record.resource
        if resource.kind == "post" and record.status == "trash":
            raise errors.plugin_error(f"{resource.singular}-is-in-trash", id=record.id)

        def build(plan: WritePlan):
            current = plan.snapshot.get(resource, record.id)
            if current is None:
                raise errors.conflict(f"{resource.singular} {record.id} was removed meanwhile")
            ref_key = {"venues": "venue", "organizers": "organizer", "categories": "categories", "tags": "tags"}.get(
                resource.name)
            if ref_key:
                self._unlink(plan, ref_key, current)
            if resource.kind == "term":
                plan.remove(current)
                self._reparent_children(plan, current)
                return f'Delete {resource.singular} {record.id} "{current.title}"', None
            data = dict(current.data)
            data["status"] = "trash"
            data["modified_utc"] = dates.fmt(dates.utc_now())
            plan.put(resource, data, old_path=current.path)
            return f'Trash {resource.singular} {record.id} "{current.title}"', (resource, record.id)

        result = self._write(build, user, precondition)
        return record if result is None else result

    def trashed(self, resources=None, older_than_days: float | None = None) -> list[Record]:
        """The trashed events, venues and organizers (of ``resources``, default all three),
        optionally only those last modified more than ``older_than_days`` days ago."""
        snapshot = self.snapshot()
        cutoff = None
        if older_than_days is not None:
            cutoff = dates.fmt(dates.utc_now() - timedelta(days=older_than_days))
        found = []
        for resource in resources or (EVENTS, VENUES, ORGANIZERS):
            for record in snapshot.all(resource):
                if record.status != "trash":
                    continue
                if cutoff is not None and (record.data.get("modified_utc") or "") > cutoff:
                    continue
                found.append(record)
        return sorted(found, key=lambda r: (r.resource.name, r.id))

    def empty_trash(self, records: list[Record], user: User) -> int:
        """Delete the files of trashed ``records`` for good, in one commit authored by ``user``.

        Only records still in the trash at the branch head are removed (one restored
        meanwhile is kept). Events whose ``post_parent`` names a removed event lose that
        link. Returns how many records were removed; git history keeps every one of them.
        """
        if not permissions.can_empty_trash(user):
            raise errors.forbidden(True)
        wanted = {(r.resource.name, r.id) for r in records}
        removed: list[Record] = []

        def build(plan: WritePlan):
            removed.clear()
            for resource_name, record_id in sorted(wanted):
                current = plan.snapshot.by_id[resource_name].get(record_id)
                if current is None or current.status != "trash":
                    continue
                plan.remove(current)
                removed.append(current)
                plan.notes.append(f'Delete {current.resource.singular} {current.id} "{current.title}" for good')
            if not removed:
                return None
            gone = {r.id for r in removed if r.resource is EVENTS}
            for event in plan.snapshot.all(EVENTS):
                if event.data.get("post_parent") in gone and (EVENTS.name, event.id) not in wanted:
                    data = dict(event.data)
                    data["post_parent"] = None
                    plan.put(EVENTS, data, old_path=event.path)
                    plan.notes.append(f"Unlink event {event.id} from its removed parent")
            return f"Empty the trash: {len(removed)} record(s)", None

        self._write(build, user, via="the command line")
        return len(removed)

    def _reparent_children(self, plan: WritePlan, term: Record) -> None:
        """Children of a deleted category move up to its parent, as WordPress does."""
        if term.resource is not CATEGORIES:
            return
        for child in plan.snapshot.all(CATEGORIES):
            if child.data.get("parent") == term.id:
                data = dict(child.data)
                data["parent"] = term.data.get("parent") or None
                plan.put(CATEGORIES, data, old_path=child.path)
                plan.notes.append(f"Move category {child.id} up to parent {data['parent'] or 0}")

    def _unlink(self, plan: WritePlan, key: str, target: Record) -> None:
        for event in plan.snapshot.events_referencing(key, target):
            data = dict(plan.records.get((EVENTS.name, event.id)) or event.data)
            kept = [ref for ref in data.get(key) or [] if plan.snapshot.resolve(target.resource, ref) is not target]
            data[key] = kept
            plan.put(EVENTS, data, old_path=event.path)
            plan.notes.append(f"Unlink {target.resource.singular} {target.id} from event {event.id}")

    def _write(self, build, user: User, precondition=None, via: str = "the calendar API") -> Record | None:
        """Run ``build`` against the branch head under the write lock and commit what it planned.

        ``precondition(snapshot)``, when given, runs first against that same head under the
        lock and may raise (an If-Match that no longer matches: nothing is committed).
        """
        author = (user.name, user.email)
        for attempt in range(WRITE_ATTEMPTS):
            with self.store.write_lock():
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
                    self.store.commit(plan.changes, message, author, snapshot.commit, push=self.has_remote)
                except BranchMoved:
                    log.info("branch moved during a write; retrying (%d)", attempt + 1)
                    continue
                except PushRejected as exc:
                    self._catch_up(snapshot.commit, plan.changes, exc.commit)
                    log.info("the remote moved during a write; recomputing it on the remote head (%d)", attempt + 1)
                    continue
                except RemoteError as exc:
                    raise self._remote_failure(exc, "The write was not applied.") from None
                except StoreError as exc:
                    raise errors.conflict(str(exc)) from None
                if target is None:
                    return None
                resource, record_id = target
                return self.catalog.current().get(resource, record_id)
        raise errors.conflict("the content repository kept changing; the write was not applied, try again")

    # ------------------------------------------------------------------------- history and sync

    def _history(self, record: Record, snapshot: Snapshot) -> list[dict]:
        """The commits of the branch that changed ``record``'s file, newest first.

        One ``git log`` of the resource's folder (kept per commit), walked backwards while
        tracking the path the record lives at: where a commit adds that path and deletes
        another file of the folder holding the same id, the record was renamed (its slug
        changed) and is followed to the old path. Only those deleted blobs are read, in
        process. The walk stops at the commit that created the record.
        """
        key = ("history", record.resource.name, record.id)
        found = snapshot.memo.get(key)
        if found is not None:
            return found
        commits = self._folder_log(record.resource.folder, snapshot)
        path = record.path
        found = []
        for entry in commits:
            hit = next((c for c in entry["changes"] if c[1] == path), None)
            if hit is None:
                continue
            found.append(entry)
            if hit[0] != "A":
                continue
            path = None  # added here: renamed from a file this commit deleted, or created
            for status, old_path, old_blob, _ in entry["changes"]:
                if status == "D" and old_blob and self._holds(old_path, old_blob, record):
                    path = old_path
                    break
            if path is None:
                break
        snapshot.memo[key] = found
        return found

    def _folder_log(self, folder: str, snapshot: Snapshot) -> list[dict]:
        """The folder's history at the snapshot's commit. The last one read is kept: when the
        branch moved forward only the new commits are asked of git."""
        commits = snapshot.memo.get(("log", folder))
        if commits is not None:
            return commits
        logs = self._logs
        known = logs.get(folder)
        if known and known[0] == snapshot.commit:
            commits = known[1]
        elif known and snapshot.commit and self.store.is_ancestor(known[0], snapshot.commit):
            commits = self.store.log(folder, snapshot.commit, since=known[0]) + known[1]
        else:
            commits = self.store.log(folder, snapshot.commit)
        if snapshot.commit:
            logs[folder] = (snapshot.commit, commits)
        snapshot.memo[("log", folder)] = commits
        return commits

    def _holds(self, path: str, blob: str, record: Record) -> bool:
        raw = self.store.read_object(blob)
        old, _ = records.parse(path, raw) if raw is not None else (None, [])
        return old is not None and old.resource is record.resource and old.id == record.id

    def revisions(self, record: Record, snapshot: Snapshot | None = None) -> list[dict]:
        """``record``'s revisions, newest first: commit, author (name, email), date (ISO 8601),
        message; made through the API or in git, followed across slug renames."""
        return [{k: entry[k] for k in ("commit", "author", "date", "message")}
                for entry in self._history(record, snapshot or self.snapshot())]

    def revision_at(self, record: Record, commit: str) -> tuple[Snapshot, Record]:
        """The snapshot of ``commit`` (hex, 4 to 40 digits, on the branch) and ``record`` as it
        was there. Raises 404 ``rest_revision_not_found`` when the commit is unknown, not on
        the branch, or did not contain the record."""
        missing = ApiError("rest_revision_not_found",
                           f"No revision {commit} of {record.resource.singular} {record.id}.", 404)
        head = self.snapshot().commit
        sha = self.store.resolve_commit(commit)
        if sha is None or head is None or not self.store.is_ancestor(sha, head):
            raise missing
        past = self.catalog.at(sha)
        old = past.get(record.resource, record.id)
        if old is None:
            raise missing
        return past, old

    def changes(self, since: str | None, user: User | None) -> tuple[list[dict] | None, str]:
        """The net changes since ``since`` (a ``next_token``) and the token of now.

        Returns (None, token) without ``since``. Each record appears once, compared as it was
        at the token's commit and as it is now, from the caller's point of view: ``created``
        when it was not readable by the caller then and is now, ``deleted`` the other way
        round (also trash, a draft, a broken file), ``updated`` when readable both times and
        its file changed (a slug rename moves the file: same id, an update). Records readable
        at neither end (a draft, something created and deleted within the span) are left out.
        Raises 410 ``rest_changes_token_expired`` for a token that is malformed or not a commit
        of the branch (history rewritten): the client must resync.
        """
        snapshot = self.snapshot()
        head = snapshot.commit
        token = head or ZERO
        if since is None:
            return None, token
        if not isinstance(since, str) or not re.fullmatch(r"[0-9a-f]{40}", since) or (
                since != ZERO and (head is None or not self.store.is_ancestor(since, head))):
            raise ApiError("rest_changes_token_expired",
                           "The token is unknown or expired; read everything again and start from a new token.", 410)
        if since == head or head is None:
            return [], token
        diff = self.store.diff(None if since == ZERO else since, head)
        old_contents = self.store.read_blobs(old for old, _ in diff.values() if old)
        before: dict = {}
        after: dict = {}
        for path, (old_blob, new_blob) in diff.items():
            resource = records.resource_of_path(path)
            if resource is None:
                continue
            if old_blob and old_blob in old_contents:
                old, _ = records.parse(path, old_contents[old_blob])
                if old is not None:
                    before[(resource.name, old.id)] = old
            entry = snapshot.files.get(path) if new_blob else None
            new = entry[1] if entry else None
            if new is not None and snapshot.get(resource, new.id) is new:
                after[(resource.name, new.id)] = new
        for key in before:  # another file may still serve that id (a duplicate written by hand)
            if key not in after:
                current = snapshot.get(RESOURCES[key[0]], key[1])
                if current is not None:
                    after[key] = current
        order = {name: i for i, name in enumerate(RESOURCES)}
        found = []
        for key in sorted(set(before) | set(after), key=lambda k: (order[k[0]], k[1])):
            was = key in before and self._readable(before[key], user)
            now = key in after and self._readable(after[key], user)
            if was or now:
                action = "updated" if was and now else "created" if now else "deleted"
                found.append({"type": key[0], "id": key[1], "action": action})
        return found, token

    def _readable(self, record: Record, user: User | None) -> bool:
        try:
            self.check_readable(record, user)
        except ApiError:
            return False
        return True

    # ------------------------------------------------------------------------- the git remote

    @property
    def has_remote(self) -> bool:
        return bool(self.settings.git_remote)

    def _catch_up(self, base: str | None, changes: dict, rejected: str) -> None:
        """After the remote refused ``rejected`` (someone pushed first): bring the branch to the
        remote head, then raise 409 if the remote changed a file this write modifies differently
        (the rejected commit is kept under ``refs/calendar/conflicts/``). Call under the write lock.
        """
        try:
            self.store.pull_locked()
        except BranchMoved:
            return  # an editor committed in the checkout meanwhile: the caller recomputes anyway
        except RemoteError as exc:
            raise self._remote_failure(exc, "The write was not applied.") from None
        clash = self.store.clashes(base, self.store.head(), changes)
        if clash:
            ref = self.store.keep_aside(rejected)
            log.warning("write conflicts with the remote (%s); refused with 409, kept as %s", ", ".join(clash), ref)
            raise errors.conflict("The record was changed on the git remote meanwhile (" + ", ".join(clash)
                                  + "); the write was not applied. Reload it and try again.")

    @staticmethod
    def _remote_failure(exc: RemoteError, outcome: str):
        """The 503 a client gets; the details (remote address, git's reason) go to the log only."""
        log.warning("git remote: %s", exc)
        what = "refused the push" if isinstance(exc, RemoteRefused) else "could not be reached"
        return errors.remote_unavailable(f"The git remote {what}. {outcome} Try again later.")

    def pull_remote(self) -> PullResult:
        """Fetch the git remote and bring the branch in line with it (see ``GitStore.pull``).

        Raises 503 when the remote cannot be reached, 409 when the branch kept moving.
        """
        if not self.has_remote:
            raise errors.remote_unavailable("No git remote is configured.")
        for _ in range(3):
            try:
                return self.store.pull()
            except BranchMoved:
                continue  # an editor committed in the checkout meanwhile
            except RemoteError as exc:
                raise self._remote_failure(exc, "Nothing was pulled.") from None
        raise errors.conflict("the content repository kept changing; pull again")

    def branch_head(self) -> str | None:
        """The commit the service's branch points at."""
        return self.store.head()

    def start_pulling(self) -> threading.Thread | None:
        """Start the daemon thread that pulls every ``pull_interval`` seconds (none when there is no
        remote or the interval is 0). Each gunicorn worker runs one; the write lock keeps them apart."""
        if not self.has_remote or self.settings.pull_interval <= 0:
            return None
        thread = threading.Thread(target=self._pull_loop, name="calendar-pull", daemon=True)
        thread.start()
        return thread

    def stop_pulling(self) -> None:
        self._stop_pulls.set()

    def _pull_loop(self) -> None:
        failing = None  # the last failure, logged once rather than every interval
        while not self._stop_pulls.wait(self.settings.pull_interval):
            try:
                # a cheap look first: lock and fetch only when the remote and the branch differ
                if self.store.remote_head() != self.store.head():
                    result = self.store.pull()
                    if result.moved or result.pushed:
                        log.info("pulled %s: branch at %s", self.store.remote_display, (result.head or "")[:12])
                if failing:
                    log.info("periodic pull works again")
                failing = None
            except StoreError as exc:
                if str(exc) != failing:
                    log.warning("periodic pull failed (retrying every %g s): %s", self.settings.pull_interval, exc)
                failing = str(exc)
            except Exception:
                log.exception("periodic pull failed")

    # ------------------------------------------------------------------------- turning arguments into files

    def _find_duplicate(self, snapshot: Snapshot, resource: Resource, args: dict) -> Record | None:
        name = str(args.get(resource.title_key) or "").strip().lower()
        description = args.get("description")
        for record in snapshot.all(resource):
            if record.status == "trash" or record.title.strip().lower() != name:
                continue
            if description not in (None, "") and (record.data.get("description") or "").strip() != str(description).strip():
                continue
            return record
        return None

    @staticmethod
    def _planned_duplicate(plan: WritePlan, resource: Resource, item: dict) -> int | None:
        """The id of a record this same write creates with the same name (and description)."""
        name = str(item.get(resource.title_key) or "").strip().lower()
        description = item.get("description")
        for (kind, record_id), data in plan.records.items():
            if kind != resource.name or str(data.get(resource.title_key) or "").strip().lower() != name:
                continue
            if description not in (None, "") and (data.get("description") or "").strip() != str(description).strip():
                continue
            return record_id
        return None

    def _apply(self, plan: WritePlan, resource: Resource, data: dict, args: dict, user: User, creating: bool) -> dict:
        now = dates.fmt(dates.utc_now())
        if resource.kind == "term":
            return self._apply_term(plan, resource, data, args, creating)
        title = args.get(resource.title_key)
        if title is not None:
            data[resource.title_key] = str(title).strip()
        for key in ("description", "excerpt"):
            if key in args and args[key] is not None:
                data[key] = args[key] if args[key] != "" else None
        if creating or "slug" in args and args["slug"] is not None:
            wanted = text.slugify(args.get("slug") or data[resource.title_key]) or f"{resource.singular}-{data['id']}"
            data["slug"] = plan.unique_slug(resource, wanted, data["id"])
        data["status"] = permissions.scale_status(args.get("status"), user, None if creating else data.get("status"))
        if args.get("author") is not None:
            data["author"] = int(args["author"])
        elif creating:
            data["author"] = user.id
        tz = self.site_tz
        if resource is EVENTS:
            if "timezone" in args and args["timezone"] is not None:
                data["timezone"] = args["timezone"] or self.settings.site_timezone
            elif creating:
                data["timezone"] = self.settings.site_timezone
            tz = dates.zone(data.get("timezone"), self.site_tz)
        if args.get("date_utc") not in (None, ""):
            data["date_utc"] = dates.fmt(dates.parse(args["date_utc"], timezone.utc).astimezone(timezone.utc))
        elif args.get("date") not in (None, ""):
            data["date_utc"] = dates.fmt(dates.parse(args["date"], tz).astimezone(timezone.utc))
        elif creating:
            data["date_utc"] = now
        data["modified_utc"] = now
        if "image" in args and args["image"] is not None:
            data["image"] = args["image"] or None
        if resource is EVENTS:
            self._apply_event(plan, data, args, tz, user)
        elif resource is VENUES:
            self._apply_venue(data, args, creating)
        else:
            for key in ("phone", "website", "email"):
                if args.get(key) is not None:
                    data[key] = str(args[key]).strip() or None
        return data

    def _apply_event(self, plan: WritePlan, data: dict, args: dict, tz, user: User) -> None:
        for key in ("start_date", "end_date"):
            if args.get(key) is not None:
                data[key] = dates.fmt(dates.parse(args[key], tz))
        if args.get("all_day") is not None:
            data["all_day"] = bool(args["all_day"])
        if data.get("all_day"):
            data["start_date"] = data["start_date"][:10] + " 00:00:00"
            data["end_date"] = data["end_date"][:10] + " 23:59:59"
        if data["end_date"] < data["start_date"]:
            data["end_date"] = data["start_date"]  # the original clamps rather than refusing
        if "cost" in args and args["cost"] is not None:
            cost = args["cost"]
            data["cost"] = cost if cost not in ("", []) else None
        if args.get("website") is not None:
            data["website"] = str(args["website"]).strip()
        for key in ("show_map", "show_map_link", "hide_from_listings", "sticky", "featured"):
            if args.get(key) is not None:
                data[key] = bool(args[key])
            elif key not in data and key in ("show_map", "show_map_link"):
                data[key] = False  # the original stores false when an API create omits them
        for key in ("categories", "tags"):
            if key in args and args[key] is not None:
                data[key] = self._term_ids(plan, EVENT_REFERENCES[key], parse_term_list(args[key]))
        for key in ("venue", "organizer"):
            if key in args and args[key] is not None:
                target = EVENT_REFERENCES[key]
                try:
                    items = parse_linked(args[key], target, plan.snapshot)
                except LinkedValueError:
                    raise errors.plugin_error(f"could-not-create-{target.singular}") from None
                data[key] = self._linked_ids(plan, target, items, user)
        if "password" in args and args["password"] is not None:
            data["password"] = args["password"] or None

    def _apply_venue(self, data: dict, args: dict, creating: bool) -> None:
        for key in ("address", "city", "country", "province", "state", "zip", "phone", "website", "stateprovince"):
            if args.get(key) is not None:
                data[key] = str(args[key]).strip() or None
        for key in ("show_map", "show_map_link"):
            if args.get(key) is not None:
                data[key] = parse_bool(args[key], LENIENT) is True
            elif creating:
                data[key] = True
        located = any(args.get(k) is not None for k in ("state", "province", "country"))
        if args.get("stateprovince") in (None, "") and (located or not data.get("stateprovince")):
            state, province, country = data.get("state"), data.get("province"), (data.get("country") or "").strip()
            derived = state if state and country.lower() in ("", "us", "usa", "united states") else province
            data["stateprovince"] = derived or None

    def _apply_term(self, plan: WritePlan, resource: Resource, data: dict, args: dict, creating: bool) -> dict:
        snapshot = plan.snapshot
        if args.get("name") is not None:
            data["name"] = str(args["name"]).strip()
        if args.get("description") is not None:
            data["description"] = str(args["description"])
        if args.get("parent") is not None and resource is CATEGORIES:
            parent = int(args["parent"])
            if parent == data["id"]:
                raise errors.invalid_param("parent", "A category cannot be its own parent.")
            data["parent"] = parent or None
        if creating or args.get("slug") is not None:
            wanted = text.slugify(args.get("slug") or data["name"])
            if not wanted and args.get("slug"):
                raise errors.invalid_param("slug", "A slug needs at least one letter or digit.")
            wanted = wanted or f"{resource.singular}-{data['id']}"  # names without ASCII letters
            clash = snapshot.get_slug(resource, wanted)
            if clash is not None and clash.id != data["id"] or wanted in plan.slugs.get(resource.name, set()):
                raise ApiError("term_exists", "A term with the name provided already exists with this parent.",
                               400, term_id=clash.id if clash else None)
            data["slug"] = wanted
            plan.slugs.setdefault(resource.name, set()).add(wanted)
        for other in snapshot.all(resource):
            if (other.id != data["id"] and other.title.strip().lower() == data["name"].lower()
                    and (other.data.get("parent") or 0) == (data.get("parent") or 0)):
                raise ApiError("term_exists", "A term with the name provided already exists with this parent.",
                               400, term_id=other.id)
        return data

    def _term_ids(self, plan: WritePlan, resource: Resource, items: list) -> list[int]:
        """Ids for a list of term ids and names; unknown names become new terms, unknown ids are skipped."""
        ids: list[int] = []
        for item in items:
            text_value = str(item).strip()
            if isinstance(item, int) or text_value.isdigit():
                if plan.snapshot.get(resource, int(text_value)) is not None:
                    ids.append(int(text_value))
                continue
            existing = next((t for t in plan.snapshot.all(resource)
                             if t.title.lower() == text_value.lower() or t.slug == text_value), None)
            if existing is None:
                existing_new = next((d for (name, _), d in plan.records.items()
                                     if name == resource.name and d["name"].lower() == text_value.lower()), None)
                if existing_new is not None:
                    ids.append(existing_new["id"])
                    continue
                slug = text.slugify(text_value) or f"{resource.singular}"
                term_id = plan.new_id(resource)
                slug = plan.unique_slug(resource, slug, term_id)
                plan.put(resource, {"id": term_id, "name": text_value, "slug": slug})
                plan.notes.append(f'Create {resource.singular} {term_id} "{text_value}"')
                ids.append(term_id)
            else:
                ids.append(existing.id)
        return list(dict.fromkeys(ids))

    def _linked_ids(self, plan: WritePlan, resource: Resource, items: list, user: User) -> list[int]:
        ids = []
        for item in items:
            if isinstance(item, int):
                ids.append(item)
                continue
            duplicate = self._find_duplicate(plan.snapshot, resource, item)
            if duplicate is not None:
                ids.append(duplicate.id)
                continue
            created = self._planned_duplicate(plan, resource, item)
            if created is not None:
                ids.append(created)
                continue
            record_id = plan.new_id(resource)
            allowed = set(resource.input_keys)
            nested_args = {k: v for k, v in item.items() if k in allowed}
            data = self._apply(plan, resource, {"id": record_id}, nested_args, user, creating=True)
            plan.put(resource, data)
            plan.notes.append(f'Create {resource.singular} {record_id} "{data[resource.title_key]}"')
            ids.append(record_id)
        return list(dict.fromkeys(ids))

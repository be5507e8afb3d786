"""The history of records: their revisions (the commits that changed their file) and the
feed of changes since a token (a commit of the branch).

Both read git through the store: one ``git log`` per resource folder, kept and extended
as the branch moves forward, and the diff between two commits.
"""
from __future__ import annotations

import functools
import re

from calendar_service.auth.accounts import User
from calendar_service.domain import file_limits, record_files
from calendar_service.domain.faults import FAULTS
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS, ORGANIZERS, RESOURCES, VENUES
from calendar_service.service import errors
from calendar_service.service.errors import ServiceError
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.store import ZERO, GitStore

COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # a full commit id, as change tokens are
# records an event embeds in its served object: resource name -> the event file's key naming them
EMBEDDED = {VENUES.name: "venue", ORGANIZERS.name: "organizer"}


class RecordHistory:
    """Revisions and changes of the records of one store. ``check_readable(record, user)``
    (the service's) raises when ``user`` may not read ``record``; ``catch_up(commit)`` pulls
    from the git remote when there is one (returns whether the branch may have moved)."""

    def __init__(self, store: GitStore, catalog: Catalog, check_readable, catch_up=None):
        self.store = store
        self.catalog = catalog
        self.check_readable = check_readable
        self.catch_up = catch_up or (lambda commit: False)
        self._logs: dict = {}  # folder -> (commit, its history): see _folder_log

    def history(self, record: Record, snapshot: Snapshot) -> list[dict]:
        """The commits of the branch that changed ``record``'s file, children before parents.

        One ``git log`` of the resource's folder (every parent's line, merges with the files they
        changed themselves; kept per commit), walked while tracking every path the record lived
        at: where a commit adds one of them and deletes another file holding the same id, the
        record was renamed there and the old path joins the paths followed (so an edit of the old
        path on another branch is found too). A change counts when its blob holds the record (the
        same path may have held another record before), so only the blobs of those paths are read,
        once each, in process.
        """
        key = ("history", record.resource.name, record.id)
        found = snapshot.memo.get(key)
        if found is not None:
            return found
        commits = self._folder_log(record.resource.folder, snapshot)
        paths = {record.path}
        holds = functools.lru_cache(maxsize=None)(lambda path, blob: self._holds(path, blob, record))
        found = []
        for entry in commits:
            hits = [c for c in entry["changes"] if c[1] in paths and holds(c[1], c[3] or c[2])]
            if not hits:
                continue
            found.append(entry)
            if any(status == "A" for status, *_ in hits):   # renamed here from a file this commit deleted?
                for status, old_path, old_blob, _ in entry["changes"]:
                    if status == "D" and old_blob and old_path not in paths and holds(old_path, old_blob):
                        paths.add(old_path)
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
        """Whether the version ``blob`` of ``path`` (a path the record had) is the record's: it
        holds its id, or no id yet (an editor's new file before the service's id commit)."""
        raw = self.store.read_object(blob)
        old, _ = record_files.parse(path, raw) if raw is not None else (None, [])
        return old is not None and old.resource is record.resource and old.id in (record.id, None)

    def revisions(self, record: Record, snapshot: Snapshot | None = None) -> list[dict]:
        """``record``'s revisions, children before parents: commit, parents, author (name, email),
        date (ISO 8601), message; made through the API or in git (merges that changed the file
        themselves too), followed across renames."""
        return [{k: entry[k] for k in ("commit", "author", "date", "message", "parents")}
                for entry in self.history(record, snapshot or self.catalog.current())]

    def revision_at(self, record: Record, commit: str) -> tuple[Snapshot, Record]:
        """The snapshot of ``commit`` (hex, 4 to 40 digits, on the branch) and ``record`` as it
        was there. Raises ``rest_revision_not_found`` (not found) when the commit is unknown, not on
        the branch, or did not contain the record."""
        missing = errors.revision_not_found(commit, record.resource.singular, record.id)
        head = self.catalog.current().commit
        sha = self.store.resolve_commit(commit)
        if sha is None or head is None or not self.store.is_ancestor(sha, head):
            raise missing
        past = self.catalog.at(sha)
        old = past.get(record.resource, record.id)
        if old is None:
            raise missing
        return past, old

    def changes(self, since: str | None, user: User | None, catch_up=None) -> tuple[list[dict] | None, str]:
        """The net changes since ``since`` (a ``next_token``) and the token of now.

        Returns (None, token) without ``since``. Each record appears once, compared as it was
        at the token's commit and as it is now, from the caller's point of view: ``created``
        when it was not readable by the caller then and is now, ``deleted`` the other way
        round (also trash, a draft, a file that never parsed), ``updated`` when readable both times
        and the version served changed (a file that broke is served as its last good version: no
        entry) (a slug rename moves the file: same id, an update). Records readable
        at neither end (a draft, something created and deleted within the span) are left out.
        Raises ``rest_changes_token_expired`` (gone) for a token that is malformed or not a commit
        of the branch (history rewritten): the client must resync. A well-formed token this
        replica does not know (it may come from a replica that is ahead) makes it pull from the
        git remote first (``catch_up``, else the one given at construction); 410 only when the
        token is not in the remote's history either.
        """
        catch_up = catch_up or self.catch_up
        snapshot = self.catalog.current()
        if since is None:
            return None, snapshot.commit or ZERO
        if not isinstance(since, str) or not COMMIT_ID.fullmatch(since):
            raise errors.changes_token_expired()
        if since != ZERO and not self._on_branch(since, snapshot.commit) and catch_up(since):
            snapshot = self.catalog.current()
        head = snapshot.commit
        token = head or ZERO
        if since != ZERO and not self._on_branch(since, head):
            raise errors.changes_token_expired()
        if since == head or head is None:
            return [], token
        before, after = self.records_changed(since, snapshot)
        return self.entries(before, after, user), token

    def records_changed(self, since: str | None, snapshot: Snapshot) -> tuple[dict, dict]:
        """The records whose files differ between the commit ``since`` (None or ZERO: the empty
        tree) and ``snapshot``: ``before`` and ``after`` map (resource name, id) to the record as
        it was at ``since`` and as ``snapshot`` serves it (absent: not there, or not served)."""
        diff = self.store.diff(None if since in (None, ZERO) else since, snapshot.commit)
        old_contents: dict = {}   # a file over the size limit was never served: not read
        for _, contents in self.store.read_files((old for old, _ in diff.values() if old),
                                                 file_limits.LIMITS.file_bytes):
            old_contents.update(contents)
        before: dict = {}
        after: dict = {}
        past = None   # the snapshot of ``since``, read only for a file that did not parse there
        for path, (old_blob, new_blob) in diff.items():
            resource = record_files.resource_of_path(path)
            if resource is None:
                continue
            if old_blob and old_blob in old_contents:
                old, _ = record_files.parse(path, old_contents[old_blob])
                if old is not None:
                    old.blob = old_blob
                else:   # broken there: served as its last good version then, or not at all
                    past = past or self.catalog.at(since)
                    entry = past.files.get(path)
                    old = entry[1] if entry else None
                    if old is not None and past.get(resource, old.id) is not old:
                        old = None
                if old is not None and old.id is not None:  # a file without id was never served
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
        for key in [key for key, old in before.items() if key in after and after[key].blob == old.blob
                    and after[key].path == old.path]:
            # the same version served at both ends (a file broken since, served as its last good one)
            del before[key], after[key]
        self._embedding_events(before, after, snapshot)
        return before, after

    @staticmethod
    def _embedding_events(before: dict, after: dict, snapshot: Snapshot) -> None:
        """Add the events that embed a venue or organizer that changed (or went) to ``before`` and
        ``after`` as updated: their served object (and ETag) changed with it, though their files
        did not. Costs one set lookup per changed venue or organizer and one entry per event."""
        for key in [key for key in {**before, **after} if key[0] in EMBEDDED]:
            name = key[0]
            for target in {id(r): r for r in (before.get(key), after.get(key)) if r is not None}.values():
                for event in snapshot.events_referencing(EMBEDDED[name], target):
                    event_key = (EVENTS.name, event.id)
                    if event_key not in before and event_key not in after:
                        before[event_key] = after[event_key] = event

    def entries(self, before: dict, after: dict, user: User | None) -> list[dict]:
        """The changes-feed entries of ``records_changed`` from ``user``'s point of view, ordered
        by type then id: a record ``user`` cannot read at one end counts as absent there."""
        order = {name: i for i, name in enumerate(RESOURCES)}
        found = []
        for key in sorted(set(before) | set(after), key=lambda k: (order[k[0]], k[1])):
            was = key in before and self._readable(before[key], user)
            now = key in after and self._readable(after[key], user)
            if was or now:
                action = "updated" if was and now else "created" if now else "deleted"
                found.append({"type": key[0], "id": key[1], "action": action})
        return found

    def _on_branch(self, commit: str, head: str | None) -> bool:
        return head is not None and self.store.is_ancestor(commit, head)

    def _readable(self, record: Record, user: User | None) -> bool:
        try:
            self.check_readable(record, user)
        except ServiceError:
            return False
        except Exception as exc:   # one record's failure stays its own: the feed goes on without it
            FAULTS.report(record, "its changes-feed entry", exc)
            return False
        return True

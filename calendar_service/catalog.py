"""The records of one commit, parsed and held in memory, following the branch as it moves.

A ``Snapshot`` is immutable: every record of a commit by resource, id and slug, plus the
problems found in files that could not be served. ``Catalog.current()`` checks the branch
head (a file read) and, when it moved, builds the next snapshot from the previous one by
reading only the files that changed. Files are read from git objects, never from the
working tree, so a reader sees committed content only and never a half-written file.
"""
from __future__ import annotations

import logging
import threading
from functools import cached_property

from . import records
from .records import Problem, Record
from .resources import EVENTS, RESOURCES, Resource
from .store import GitStore

log = logging.getLogger(__name__)


class Snapshot:
    """Every record at one commit."""

    def __init__(self, commit: str | None, files: dict[str, tuple[str, Record | None, tuple]]):
        self.commit = commit
        self.files = files  # path -> (blob, record or None, problems)
        self.by_id: dict[str, dict[int, Record]] = {name: {} for name in RESOURCES}
        self.by_slug: dict[str, dict[str, Record]] = {name: {} for name in RESOURCES}
        self.ids: dict[str, dict[int, Record]] = {"posts": {}, "terms": {}}
        self.problems: list[Problem] = []
        for path in sorted(files):
            blob, record, problems = files[path]
            self.problems.extend(problems)
            if record is None:
                continue
            resource = record.resource
            space = self.ids[resource.id_space]
            if record.id in space:
                other = space[record.id]
                self.problems.append(Problem(path, 1, f"id {record.id} is already used by {other.path}"))
                continue
            if record.slug in self.by_slug[resource.name]:
                other = self.by_slug[resource.name][record.slug]
                self.problems.append(Problem(path, 1, f"slug {record.slug!r} is already used by {other.path}"))
                continue
            space[record.id] = record
            self.by_id[resource.name][record.id] = record
            self.by_slug[resource.name][record.slug] = record

    def get(self, resource: Resource, record_id: int) -> Record | None:
        return self.by_id[resource.name].get(record_id)

    def get_slug(self, resource: Resource, slug: str) -> Record | None:
        return self.by_slug[resource.name].get(slug)

    def all(self, resource: Resource) -> list[Record]:
        return list(self.by_id[resource.name].values())

    def resolve(self, resource: Resource, ref) -> Record | None:
        """A reference written in an event file (an id, or a slug written by an editor)."""
        if isinstance(ref, int):
            return self.by_id[resource.name].get(ref)
        if isinstance(ref, str):
            if ref.isdigit():
                return self.by_id[resource.name].get(int(ref))
            return self.by_slug[resource.name].get(ref)
        return None

    def refs(self, event: Record, key: str) -> list[Record]:
        """The records an event's ``key`` (categories, tags, venue, organizer) points at, in order."""
        from .resources import EVENT_REFERENCES
        target = EVENT_REFERENCES[key]
        found, seen = [], set()
        for ref in event.data.get(key) or []:
            record = self.resolve(target, ref)
            if record is not None and record.id not in seen:
                seen.add(record.id)
                found.append(record)
        return found

    @cached_property
    def events_by_ref(self) -> dict[tuple[str, int], list[Record]]:
        """(key, target id) -> the events pointing at it, for counts and linked filters."""
        index: dict[tuple[str, int], list[Record]] = {}
        for event in self.by_id[EVENTS.name].values():
            for key in ("categories", "tags", "venue", "organizer"):
                for target in self.refs(event, key):
                    index.setdefault((key, target.id), []).append(event)
        return index

    def next_id(self, resource: Resource) -> int:
        return max(self.ids[resource.id_space], default=0) + 1


class Catalog:
    """Keeps the snapshot of the branch head, refreshing it incrementally when the head moves."""

    def __init__(self, store: GitStore):
        self.store = store
        self._lock = threading.Lock()
        self._snapshot = Snapshot(None, {})

    def current(self) -> Snapshot:
        """The snapshot of the branch head as it is now."""
        head = self.store.head()
        snapshot = self._snapshot
        if head == snapshot.commit:
            return snapshot
        with self._lock:
            if self._snapshot.commit != head:
                self._snapshot = self._advance(self._snapshot, head)
            return self._snapshot

    def _advance(self, previous: Snapshot, head: str | None) -> Snapshot:
        if head is None:
            return Snapshot(None, {})
        if previous.commit is None:
            wanted = self.store.list_files(head)
            files: dict = {}
            changed = wanted
        else:
            changed = self.store.changed_files(previous.commit, head)
            files = dict(previous.files)
        contents = self.store.read_blobs(sha for sha in changed.values() if sha)
        for path, blob in changed.items():
            if blob is None:
                files.pop(path, None)
                continue
            if records.resource_of_path(path) is None:
                continue
            raw = contents.get(blob)
            record, problems = records.parse(path, raw) if raw is not None else (None, [Problem(path, 1, "unreadable")])
            if record is not None:
                record.blob = blob
            for problem in problems:
                if problem.severity == "error":
                    log.warning("skipping %s", problem)
            files[path] = (blob, record, tuple(problems))
        return Snapshot(head, files)

"""The records of one commit, held in memory: pure data, no git.

A ``Snapshot`` is immutable: every record of a commit by resource, id and slug, which
events point at which venues, organizers and terms, and the problems found in files that
could not be served. A snapshot can be derived from the previous one by replaying only the
paths that changed.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from functools import cached_property
from operator import attrgetter
from typing import NamedTuple

from pyroaring import BitMap

from calendar_service.domain.layered import Layered
from calendar_service.domain.record import Record
from calendar_service.domain.record_files import FileProblem, resource_of_path
from calendar_service.domain.resources import EVENT_REFERENCES, EVENTS, ORGANIZERS, RESOURCES, VENUES, Resource

log = logging.getLogger(__name__)

REF_KEYS = tuple(EVENT_REFERENCES)
# the ids of the password-protected events, kept in ``refs_index`` beside the references (a search
# matches only their titles for most callers: found without reading every event's data)
PROTECTED = ("password", "")
NO_EVENTS = BitMap()   # the events of a term no event names (shared: never changed)
# steps of derivation a snapshot remembers the changes of (``Snapshot.changed_after``): more than
# a group of writes (storage.grouping.GROUP_LIMIT) publishes at once
CHANGES_KEPT = 32


class Stale(NamedTuple):
    """A file that no longer parses, whose record is served as its last good version: the first
    error of the file as it is (``path:line: message``), the commit that brought the broken
    version and the commit whose version is served."""

    path: str
    line: int
    message: str
    broken: str   # the commit that broke the file (the oldest of the broken versions since the served one)
    served: str   # the commit that wrote the version served

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def ref_term(ref) -> str:
    """How an event file's reference is keyed: ``#12`` for an id, ``s:slug`` for a slug.

    An integer in a file is an id, a string a slug (``'2024'``, quoted, is the slug 2024).
    """
    return f"#{ref}" if isinstance(ref, int) else f"s:{ref}"


def _event_refs(event: Record):
    """(key, reference term) of every reference an event file makes."""
    for key in REF_KEYS:
        for ref in event.data.get(key) or []:
            if isinstance(ref, (int, str)) and str(ref):
                yield key, ref_term(ref)


# Derived values a snapshot remembers at most (least recently used dropped first): with
# presented objects kept independent of the request's host, a few per record; and at most this
# many bytes of them (presented objects are JSON text: one byte per ASCII character).
MEMO_SIZE = 20_000
MEMO_BYTES = 24_000_000
ENTRY_BYTES = 200   # what an entry counts for when its caller does not weigh it
_PROTECTED_LINKS = ("any protected venue or organizer",)   # the memo key of ``any_protected_link``


class Memo:
    """A bounded, thread-safe mapping that forgets its least recently used entries: at most
    ``size`` entries and ``budget`` bytes (as the callers weigh them; unless given, the module's
    ``MEMO_SIZE`` and ``MEMO_BYTES`` as they are when an entry is put, which the service sets
    from its settings after the snapshots that the serving master made before it)."""

    def __init__(self, size: int | None = None, budget: int | None = None):
        self._size, self._budget = size, budget
        self.weight = 0
        self._items: OrderedDict = OrderedDict()   # key -> (value, weight)
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return MEMO_SIZE if self._size is None else self._size

    @property
    def budget(self) -> int:
        return MEMO_BYTES if self._budget is None else self._budget

    def get(self, key, default=None):
        with self._lock:
            try:
                self._items.move_to_end(key)
            except KeyError:
                return default
            return self._items[key][0]

    def put(self, key, value, weight: int) -> None:
        """Remember ``value``, counted as ``weight`` bytes."""
        weight += ENTRY_BYTES
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._items[key] = (value, weight)
            self.weight += weight
            size, budget = self.size, self.budget
            while self._items and (len(self._items) > size or self.weight > budget):
                self.weight -= self._items.popitem(last=False)[1][1]

    def __setitem__(self, key, value) -> None:
        self.put(key, value, 0)

    def __len__(self) -> int:
        return len(self._items)


def _all_distinct(records: list[Record]) -> bool:
    """True when no two of ``records`` share an id in their id space or a slug in their resource
    (the common case, checked with a few set sizes rather than a map of every claim)."""
    ids: dict[str, list] = {}
    slugs: dict[str, list] = {}
    for record in records:
        resource = record.resource
        ids.setdefault(resource.id_space, []).append(record.id)
        slugs.setdefault(resource.name, []).append(record.slug)
    return all(len(set(values)) == len(values) for values in (*ids.values(), *slugs.values()))


def index_refs(events: list[Record], refs: dict, published_refs: dict) -> None:
    """Enter the references of ``events`` in ``refs`` and ``published_refs``, each (key, term) ->
    the ids of the events naming it as a compressed bitmap (a snapshot's full build: the same as
    ``Snapshot._add`` per event, in one loop without copies)."""
    lists: dict = {}
    published_lists: dict = {}
    for record in events:
        data, rid = record.data, record.id
        published = (data.get("status") or "publish") == "publish"
        if data.get("password"):
            lists.setdefault(PROTECTED, []).append(rid)
        for key in REF_KEYS:
            values = data.get(key)
            if not values:
                continue
            for ref in values:
                if isinstance(ref, int):
                    term = f"#{ref}"
                elif isinstance(ref, str) and ref:
                    term = f"s:{ref}"
                else:
                    continue
                pair = (key, term)
                found = lists.get(pair)
                if found is None:
                    found = lists[pair] = []
                found.append(rid)
                if published:
                    found = published_lists.get(pair)
                    if found is None:
                        found = published_lists[pair] = []
                    found.append(rid)
    for source, target in ((lists, refs), (published_lists, published_refs)):
        for pair, ids in source.items():
            target[pair] = BitMap(ids)


def _bitmaps(stored) -> dict | None:
    """(key, term) -> bitmap from what ``Snapshot.derived`` kept (None when it is not that)."""
    if not isinstance(stored, dict):
        return None
    try:
        return {pair: BitMap.deserialize(data) for pair, data in stored.items()}
    except (TypeError, ValueError):
        return None


def _by_resource(parsed: list[Record]) -> tuple[dict, dict]:
    """(resource -> its records in order, resource -> {id: record})."""
    groups: dict[Resource, list[Record]] = {}
    for record in parsed:
        group = groups.get(record.resource)
        if group is None:
            group = groups[record.resource] = []
        group.append(record)
    return groups, {resource: _keyed(group, _ID) for resource, group in groups.items()}


_ID, _SLUG = attrgetter("id"), attrgetter("slug")


def _keyed(records: list[Record], key) -> dict:
    """key(record) -> record (one pass in C: a start maps every record)."""
    return dict(zip(map(key, records), records))


def _advanced(snapshot: "Snapshot", previous: "Snapshot", changed: set[str]) -> bool:
    """``snapshot._advance``, False (a full build) when it fails: a record the previous snapshot
    let in and no longer should can never keep every later snapshot from being made."""
    try:
        return snapshot._advance(previous, changed)
    except Exception:   # the previous snapshot's maps are as they were (a bitmap is copied before a change)
        log.exception("deriving the snapshot of %s from %s failed: building it whole", snapshot.commit,
                      previous.commit)
        return False


class Snapshot:
    """Every record at one commit."""

    def __init__(self, commit: str | None, files: dict, previous: "Snapshot | None" = None,
                 changed: set[str] | None = None, seniority=None, claims: dict | None = None,
                 restored: dict | None = None, grouped: dict | None = None):
        self.commit = commit
        self.files = files  # path -> (blob, record or None, problems)
        self.claims = claims or {}
        self.file_dates: dict = {}  # path -> git dates of the file (set by the catalog)
        # path -> Stale: files that no longer parse, whose ``files`` entry holds the record of
        # their last good version (set by the catalog)
        self.stale: dict[str, Stale] = {}
        # id space -> the highest id a record of it ever had on the branch up to this commit and
        # no longer has (deleted files, changed ids; set by the catalog): never handed out again
        self.retired: dict = {}
        self.memo = Memo()  # derived values (presented objects...) valid for this commit only
        # derived values kept across the commits derived from one another, each stored with what it
        # was derived from (the records themselves) and used only while that is unchanged
        self.lasting = previous.lasting if previous is not None else Memo()
        # (reference key, term id, slug) -> (the bitmaps counted, count), shared by derived snapshots: used
        # while both bitmaps are the same objects (a bitmap is copied before it changes)
        self._counts: dict = previous._counts if previous is not None else {}
        # the last CHANGES_KEPT steps this snapshot was derived through, oldest first, each (previous
        # commit, paths changed since): the search index derives its next generation from the same
        # changes (a group of writes is a snapshot per commit, and the index catches up with all
        # of them at once)
        self.derivation: tuple = ()
        if previous is not None and changed is not None:
            self.derivation = previous.derivation[1 - CHANGES_KEPT:] + ((previous.commit, frozenset(changed)),)
        # seniority(paths) -> {path: rank}: which file entered history first (lowest rank) keeps an
        # id two files claim; without it (a working tree, no git) the path order decides
        self._seniority = seniority
        # the derived maps of this same commit as ``derived()`` gave them (the catalog's cache):
        # a full build takes them instead of computing them again
        self._restored = restored
        # resource -> (its records in path order, their ids, their slugs), every parsed record of
        # ``files`` (the cache's restore groups them as it makes them): a full build of distinct
        # records takes them
        self._grouped = grouped
        self.distinct = False   # no two records share an id or a slug (the maps were built without a claims map)
        self.unassigned: list[Record] = []   # parsed files without an id: the service gives them one
        self.displaced: list[tuple[Record, Record]] = []  # (file, the older file holding its id)
        self.reslugged: list[tuple[Record, Record]] = []  # (file, the older file holding its slug)
        if (previous is None or changed is None or previous._conflicts or previous.unassigned
                or previous.displaced or previous.reslugged or not _advanced(self, previous, changed)):
            self._build()

    @property
    def changed_since(self) -> tuple | None:
        """(previous commit, paths changed since) when derived from a previous snapshot, else None."""
        return self.derivation[-1] if self.derivation else None

    def changed_after(self, commit: str) -> frozenset | None:
        """The paths that may differ between ``commit`` and this snapshot's, when this snapshot
        was derived from it in the last CHANGES_KEPT steps (None otherwise): the union of each
        step's changes since."""
        paths: set = set()
        for since, changed in reversed(self.derivation):
            paths |= changed
            if since == commit:
                return frozenset(paths)
        return None

    @property
    def needs_ids(self) -> bool:
        """True when some file that parses has no id, or an id or slug an older file holds."""
        return bool(self.unassigned or self.displaced or self.reslugged)

    # ------------------------------------------------------------------------- building

    def _build(self) -> None:
        """Build the maps from every file; a record whose id or slug is taken becomes a problem."""
        self.by_id: dict[str, dict[int, Record]] = {name: {} for name in RESOURCES}
        self.by_slug: dict[str, dict[str, Record]] = {name: {} for name in RESOURCES}
        self.ids: dict[str, dict[int, Record]] = {"posts": {}, "terms": {}}
        self.refs_index: dict[tuple[str, str], BitMap] = {}
        self.published_refs: dict[tuple[str, str], BitMap] = {}
        self._conflicts: list[FileProblem] = []
        self._copied = None   # a full build owns every set it makes: nothing to copy first
        self.unassigned, self.displaced, self.reslugged = [], [], []
        ids, by_id, by_slug = self.ids, self.by_id, self.by_slug
        grouped, self._grouped = self._grouped, None
        if grouped is not None and (self._restored or {}).get("distinct") is True \
                and self._build_distinct(None, grouped):
            self.distinct = True
            return
        if grouped is not None and self._restored:   # the cache said distinct and is wrong: never trusted again
            self._restored = {**self._restored, "distinct": False}
        ordered = self._in_order()
        if self.distinct and self._build_distinct(ordered):
            return
        added: list[Record] = []
        for record in ordered:
            if record.id is None:
                self.unassigned.append(record)
                continue
            other = self.ids[record.resource.id_space].get(record.id)
            if other is not None:
                self.displaced.append((record, other))
                slug_holder = self.by_slug[record.resource.name].get(record.slug)
                if slug_holder is not None:  # a plain copy: its slug is given in the same commit
                    self.reslugged.append((record, slug_holder))
                self._conflicts.append(FileProblem(record.path, 1, f"id {record.id} is also in {other.path}, which "
                                               "is older: the service gives this file a new id", "warning"))
                continue
            other = self.by_slug[record.resource.name].get(record.slug)
            if other is not None:
                self.reslugged.append((record, other))
                self._conflicts.append(FileProblem(record.path, 1, f"slug {record.slug!r} is also the slug of {other.path}, "
                                               "which is older: the service gives this file another slug", "warning"))
                continue
            # ``_add`` without the references (collected below in one pass over the events)
            resource = record.resource
            ids[resource.id_space][record.id] = by_id[resource.name][record.id] = record
            by_slug[resource.name][record.slug] = record
            if resource is EVENTS:
                added.append(record)
        index_refs(added, self.refs_index, self.published_refs)
        self.unassigned.sort(key=lambda r: r.path)
        self.displaced.sort(key=lambda pair: pair[0].path)
        self.reslugged.sort(key=lambda pair: pair[0].path)

    def _build_distinct(self, parsed: list[Record] | None, groups: dict | None = None) -> bool:
        """The maps of records known to have distinct ids and slugs, by resource in one go (the
        references restored when the catalog kept them for this commit); False when some record
        has no id, or (``groups`` given: the records by resource, not yet known distinct) two
        share an id or a slug (the general build decides)."""
        if groups is None:
            groups, maps = _by_resource(parsed)
            slugs = {resource: _keyed(group, _SLUG) for resource, group in groups.items()}
        else:   # resource -> (records, their ids, their slugs)
            maps = {resource: dict(zip(ids, group)) for resource, (group, ids, _) in groups.items()}
            slugs = {resource: dict(zip(keys, group)) for resource, (group, _, keys) in groups.items()}
            groups = {resource: group for resource, (group, _, _) in groups.items()}
        if any(None in by_id for by_id in maps.values()):
            return False
        spaces: dict = {}
        for resource, by_id in maps.items():
            spaces.setdefault(resource.id_space, {}).update(by_id)
        if parsed is None and not (
                all(len(maps[resource]) == len(group) == len(slugs[resource]) for resource, group in groups.items())
                and all(len(merged) == sum(len(by_id) for r, by_id in maps.items() if r.id_space == space)
                        for space, merged in spaces.items())):
            return False
        for resource, by_id in maps.items():
            self.by_id[resource.name] = by_id
            self.by_slug[resource.name] = slugs[resource]
        for space, merged in spaces.items():
            self.ids[space] = merged
        restored = self._restored
        self._restored = None
        refs = _bitmaps(restored.get("refs")) if restored is not None else None
        published = _bitmaps(restored.get("published")) if refs is not None else None
        if published is not None:
            self.refs_index, self.published_refs = refs, published
        else:
            index_refs(groups.get(EVENTS, []), self.refs_index, self.published_refs)
        protected = restored.get("protected_links") if restored is not None else None
        if type(protected) is bool:   # else read from the venues and organizers when first asked
            self.memo.put(_PROTECTED_LINKS, protected, 0)
        return True

    def derived(self) -> dict:
        """The maps a full build of this commit computes from its records that are worth keeping
        with them (plain data: the events by term, each bitmap as its portable bytes), for ``restored``."""
        return {"refs": {pair: ids.serialize() for pair, ids in self.refs_index.items()},
                "published": {pair: ids.serialize() for pair, ids in self.published_refs.items()},
                "distinct": self.distinct,
                # (a start would otherwise make the dict of every venue and organizer to find out)
                "protected_links": self.any_protected_link()}

    def _in_order(self) -> list[Record]:
        """Every parsed record, by path; files that claim one id or slug are put in order of seniority
        (the one that entered history first, first), so the older one keeps the id."""
        files = self.files
        parsed = [record for record in (files[path][1] for path in sorted(files)) if record is not None]
        if (self._restored or {}).get("distinct") is True or _all_distinct(parsed):
            self.distinct = True
            return parsed
        claims: dict = {}
        for record in parsed:
            if record.id is not None:
                claims.setdefault((record.resource.id_space, record.id), []).append(record.path)
            claims.setdefault((record.resource.name, record.slug), []).append(record.path)
        contested = sorted({path for paths in claims.values() if len(paths) > 1 for path in paths})
        if not contested:
            return parsed
        ranks = self._seniority(contested) if self._seniority is not None else {}
        order = {path: (ranks.get(path, len(contested)), path) for path in contested}
        return sorted(parsed, key=lambda r: order.get(r.path, (-1, r.path)))

    def _advance(self, previous: "Snapshot", changed: set[str]) -> bool:
        """Derive the maps from ``previous`` by replaying ``changed`` paths; False if a full build is needed.
        The maps are ``Layered``: the previous ones shared, not copied (a commit costs what it changed)."""
        self.by_id = {name: Layered.of(m) for name, m in previous.by_id.items()}
        self.by_slug = {name: Layered.of(m) for name, m in previous.by_slug.items()}
        self.ids = {name: Layered.of(m) for name, m in previous.ids.items()}
        self.refs_index = Layered.of(previous.refs_index)
        self.published_refs = Layered.of(previous.published_refs)
        self._conflicts = []
        self._copied = set()
        for path in changed:
            old = previous.files.get(path)
            old_record = old[1] if old else None
            if old_record is not None:
                self._remove(old_record)
        for path in sorted(changed):
            entry = self.files.get(path)
            record = entry[1] if entry else None
            if record is None:
                continue
            if record.id is None or self._conflict(record):
                return False  # no id, or two files claim one id or slug: let the full build decide
            self._add(record)
        self._copied = None
        self.distinct = True   # derived only from a snapshot without conflicts, and none added
        protected = previous.memo.get(_PROTECTED_LINKS)   # read again when a venue or organizer changed
        if protected is not None and not any(resource_of_path(p) in (VENUES, ORGANIZERS) for p in changed):
            self.memo.put(_PROTECTED_LINKS, protected, 0)
        return True

    def _conflict(self, record: Record) -> str | None:
        """Why ``record`` cannot be added (its id or slug is taken), or None."""
        other = self.ids[record.resource.id_space].get(record.id)
        if other is not None:
            return f"id {record.id} is already used by {other.path}"
        other = self.by_slug[record.resource.name].get(record.slug)
        if other is not None:
            return f"slug {record.slug!r} is already used by {other.path}"
        return None

    def _add(self, record: Record) -> None:
        """Enter ``record`` in the maps (and its references, for an event)."""
        resource = record.resource
        self.ids[resource.id_space][record.id] = record
        self.by_id[resource.name][record.id] = record
        self.by_slug[resource.name][record.slug] = record
        if resource is EVENTS:
            published = record.status == "publish"
            if record.data.get("password"):
                self._set(self.refs_index, PROTECTED).add(record.id)
            for key, term in _event_refs(record):
                self._set(self.refs_index, (key, term)).add(record.id)
                if published:
                    self._set(self.published_refs, (key, term)).add(record.id)

    def _remove(self, record: Record) -> None:
        """Take ``record`` out of the maps (when it is the one there)."""
        resource = record.resource
        if self.by_id[resource.name].get(record.id) is not record:
            return
        del self.by_id[resource.name][record.id]
        del self.ids[resource.id_space][record.id]
        if self.by_slug[resource.name].get(record.slug) is record:
            del self.by_slug[resource.name][record.slug]
        if resource is EVENTS:
            if record.id in self.refs_index.get(PROTECTED, NO_EVENTS):
                self._set(self.refs_index, PROTECTED).discard(record.id)
            for key, term in _event_refs(record):
                for index in (self.refs_index, self.published_refs):
                    if (key, term) in index:
                        self._set(index, (key, term)).discard(record.id)

    def _set(self, index, key) -> BitMap:
        """The bitmap for ``key``, copied first if it is still shared with the previous snapshot."""
        marker = (id(index), key)
        if self._copied is not None and marker not in self._copied:
            self._copied.add(marker)
            old = index.get(key)
            index[key] = BitMap(old) if old is not None else BitMap()
        return index.setdefault(key, BitMap())

    # ------------------------------------------------------------------------- reading

    @cached_property
    def problems(self) -> list[FileProblem]:
        """The problems of every file (by path), then the id and slug conflicts."""
        found = [p for path in sorted(self.files) for p in self.files[path][2]]
        return found + self._conflicts

    def stale_of(self, record: Record) -> Stale | None:
        """Why ``record`` (or an occurrence of it) is served as an older version of its file (its
        file no longer parses), or None."""
        return self.stale.get(record.path) if self.stale else None

    def get(self, resource: Resource, record_id: int) -> Record | None:
        """The record of ``resource`` with this id, or None."""
        return self.by_id[resource.name].get(record_id)

    def get_slug(self, resource: Resource, slug: str) -> Record | None:
        """The record of ``resource`` with this slug, or None."""
        return self.by_slug[resource.name].get(slug)

    def all(self, resource: Resource) -> list[Record]:
        """Every record of ``resource``."""
        return list(self.by_id[resource.name].values())

    def count(self, resource: Resource) -> int:
        """How many records of ``resource`` there are (without listing them)."""
        return len(self.by_id[resource.name])

    def resolve(self, resource: Resource, ref) -> Record | None:
        """The record a reference written in an event file (an id, or a slug written by an editor)
        points at, or None."""
        if isinstance(ref, int):
            return self.by_id[resource.name].get(ref)
        if isinstance(ref, str):
            return self.by_slug[resource.name].get(ref)
        return None

    def parent_id(self, category: Record) -> int:
        """The id of a category's ``parent`` (written as a slug, or an id), 0 for none; a slug no
        category has is 0, an id is given as written."""
        parent = category.data.get("parent")
        if isinstance(parent, str):
            record = self.by_slug[category.resource.name].get(parent)
            return record.id if record is not None else 0
        return parent or 0

    def refs(self, event: Record, key: str) -> list[Record]:
        """The records an event's ``key`` (categories, tags, venue, organizer) points at, in order."""
        return self.refs_written(key, event.data.get(key))

    def refs_written(self, key: str, written) -> list[Record]:
        """The records the value ``written`` of an event's ``key`` points at, in order, once each."""
        target = EVENT_REFERENCES[key]
        found, seen = [], set()
        for ref in written or []:
            record = self.resolve(target, ref)
            if record is not None and record.id not in seen:
                seen.add(record.id)
                found.append(record)
        return found

    def _referencing_ids(self, index, key: str, target: Record) -> BitMap:
        """Ids of the events of ``index`` whose ``key`` names ``target`` by id or by slug (sorted)."""
        by_id = index.get((key, f"#{target.id}"), NO_EVENTS)
        by_slug = index.get((key, f"s:{target.slug}"))
        return by_id | by_slug if by_slug else by_id

    def any_protected_link(self) -> bool:
        """Whether a venue or organizer has a password (mostly none: readers then skip an event's links)."""
        found = self.memo.get(_PROTECTED_LINKS)
        if found is None:
            found = any(r.data.get("password") for name in (VENUES.name, ORGANIZERS.name)
                        for r in self.by_id[name].values())
            self.memo.put(_PROTECTED_LINKS, found, 0)
        return found

    def protected_events(self) -> list[Record]:
        """The password-protected events."""
        events = self.by_id[EVENTS.name]
        return [events[i] for i in self.refs_index.get(PROTECTED, NO_EVENTS) if i in events]

    def events_referencing(self, key: str, target: Record) -> list[Record]:
        """The events whose ``key`` points at ``target`` (by id or by slug), any status."""
        events = self.by_id[EVENTS.name]
        return [events[i] for i in self._referencing_ids(self.refs_index, key, target) if i in events]

    def published_count(self, key: str, target: Record) -> int:
        """How many published events point at ``target`` (a term's ``count``; remembered for this
        commit: every listed event embedding the term asks, and the sets can be large)."""
        memo_key = (key, target.id, target.slug)
        by_id = self.published_refs.get((key, f"#{target.id}"), NO_EVENTS)
        by_slug = self.published_refs.get((key, f"s:{target.slug}"))
        found = self._counts.get(memo_key)
        if found is not None and found[0] is by_id and found[1] is by_slug:
            return found[2]
        count = by_id.union_cardinality(by_slug) if by_slug else len(by_id)
        # one entry per term (no bound needed), holding its bitmaps: their identity cannot be reused
        self._counts[memo_key] = (by_id, by_slug, count)
        return count

    def next_id(self, resource: Resource) -> int:
        """The id a new record of ``resource`` gets: one above the highest of its id space (files
        whose id an older file holds count too, as they hold it until they are given a new one, and
        so do the ids written in files that cannot be read: repaired, they keep theirs), and above
        every id a file of that space had in the branch's history (``retired``): an id deleted,
        reverted or changed is never handed out again."""
        displaced = [r.id for r, _ in self.displaced + self.reslugged if r.resource.id_space == resource.id_space]
        claimed = [i for path, i in self.claims.items()
                   if (owner := resource_of_path(path)) is not None and owner.id_space == resource.id_space]
        return max([*self.ids[resource.id_space], *displaced, *claimed, self.retired.get(resource.id_space, 0)],
                   default=0) + 1


def reference_problems(snapshot: Snapshot, line_of=None) -> list[FileProblem]:
    """References that point nowhere: an event's venue, organizer, category or tag that no
    record has (by id or slug), a category whose parent is missing or itsnapshot. The service
    serves such records and skips the dangling references; ``validate`` reports them.
    ``line_of(path, key)`` locates a key in its file (default: line 1)."""
    line_of = line_of or (lambda path, key: 1)
    found = []
    for event in snapshot.all(EVENTS):
        for key in REF_KEYS:
            target = EVENT_REFERENCES[key]
            for ref in event.data.get(key) or []:
                if snapshot.resolve(target, ref) is None:
                    found.append(FileProblem(event.path, line_of(event.path, key),
                                         f"{key}: no {target.singular} has the {'id' if isinstance(ref, int) else 'slug'} {ref!r}"))
    for category in snapshot.all(RESOURCES["categories"]):
        parent = category.data.get("parent")
        if parent in (None, 0, ""):
            continue
        found_parent = snapshot.resolve(category.resource, parent)
        if found_parent is category:
            found.append(FileProblem(category.path, line_of(category.path, "parent"), "a category cannot be its own parent"))
        elif found_parent is None:
            kind = "id" if isinstance(parent, int) else "slug"
            found.append(FileProblem(category.path, line_of(category.path, "parent"), f"parent: no category has the {kind} {parent!r}"))
    return found

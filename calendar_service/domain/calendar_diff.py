"""What a content change does to the calendar: two snapshots compared record by record, for a
reviewer (the ``diff`` command). Pure: the snapshots are read elsewhere.

Records are matched by kind and id, so a renamed file is one record that moved; a new file
without an id yet (the service gives it one after the merge) is matched by its path.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo

from calendar_service.domain import dates
from calendar_service.domain.occurrences import horizon, series_or_none
from calendar_service.domain.record import Record
from calendar_service.domain.record_files import FileProblem
from calendar_service.domain.resources import RESOURCES, Resource
from calendar_service.domain.snapshot import EVENT_REFERENCES, REF_KEYS, Snapshot, reference_problems

EVENTS = RESOURCES["events"]
TIME_KEYS = ("start_date", "end_date", "timezone", "all_day")   # shown as a move, not as fields
QUIET_KEYS = ("id", "modified_utc")                            # change with every write: not shown
SHORT_VALUE = 60            # characters of a value shown as it is; longer ones as a length
OCCURRENCES_SHOWN = 10      # occurrences of a series that appear or disappear, listed one by one
OCCURRENCES_COMPARED = 2000  # occurrences of one series compared (within the horizon)
OVERLAPS_SHOWN = 20         # overlapping pairs listed


@dataclass
class RecordChange:
    """One record added, removed or changed between the two sides."""

    kind: str                      # "added" | "removed" | "changed"
    resource: Resource
    record_id: int | None
    title: str
    path: str                      # its path on the new side (the old one when removed)
    old_path: str | None = None    # set when the file moved
    when: str | None = None        # events: when it is (new side; old side when removed)
    old_when: str | None = None    # events: when it was, set when it moved in time
    venue: str | None = None
    fields: list[tuple[str, str, str]] = field(default_factory=list)   # (key, old, new) as shown
    occurrences_added: list[str] = field(default_factory=list)
    occurrences_removed: list[str] = field(default_factory=list)
    occurrences_added_total: int = 0
    occurrences_removed_total: int = 0


@dataclass
class Overlap:
    """Two published events at one venue at overlapping times, new on the new side."""

    venue: str
    first: str
    second: str
    when: str


@dataclass
class CalendarDiff:
    changes: list[RecordChange]
    broken_files: list[FileProblem]      # errors in files the change touched
    broken_references: list[FileProblem]  # references that point nowhere now and did not before
    overlaps: list[Overlap]
    overlaps_total: int = 0

    @property
    def breaks(self) -> bool:
        """Whether the change breaks something: a file that no longer reads, a dangling reference."""
        return bool(self.broken_files or self.broken_references)

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)


def _keyed(snapshot: Snapshot) -> dict:
    """(kind, id) -> record for the records of ``snapshot`` (a file without an id: (kind, path))."""
    out: dict = {}
    for path, (_blob, record, _problems) in snapshot.files.items():
        if record is None:
            continue
        key = (record.resource.name, record.id) if record.id is not None else (record.resource.name, path)
        out[key if key not in out else (record.resource.name, path)] = record
    return out


def _shown(value) -> str:
    if value is None or value == "" or value == []:
        return "(none)"
    text = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= SHORT_VALUE else f"({len(text)} characters)"


def _zone_of(record: Record, site_tz: tzinfo) -> tzinfo:
    try:
        return dates.zone(record.data.get("timezone"), site_tz)
    except ValueError:
        return site_tz


def span(start: datetime, end: datetime, all_day: bool = False) -> str:
    """``Sat 12 Jun 2027 19:00–21:00`` (the end's date only when another day)."""
    day = "%a %d %b %Y"
    if all_day:
        first, last = start.strftime(day), end.strftime(day)
        return f"{first} (all day)" if first == last else f"{first} – {last} (all day)"
    if start.date() == end.date():
        return f"{start.strftime(day + ' %H:%M')}–{end.strftime('%H:%M')}"
    return f"{start.strftime(day + ' %H:%M')} – {end.strftime(day + ' %H:%M')}"


def _times(record: Record, site_tz: tzinfo) -> tuple[datetime, datetime] | None:
    data = record.data
    try:
        tz = _zone_of(record, site_tz)
        return dates.read_local(data["start_date"], tz), dates.read_local(data["end_date"], tz)
    except (KeyError, TypeError, ValueError):
        return None


def _when(record: Record, site_tz: tzinfo) -> str | None:
    times = _times(record, site_tz)
    if times is None:
        return None
    zone = record.data.get("timezone") or "site time"
    rule = " (recurring)" if record.data.get("recurrence") else ""
    return f"{span(*times, bool(record.data.get('all_day')))} {zone}{rule}"


def _names(snapshot: Snapshot, record: Record, key: str) -> str:
    target = EVENT_REFERENCES[key]
    names = []
    for ref in record.data.get(key) or []:
        found = snapshot.resolve(target, ref)
        names.append(found.data.get(target.title_key) or found.slug if found is not None else f"{ref} (missing)")
    return ", ".join(str(n) for n in names)


def _field_changes(old: Record, new: Record, base: Snapshot, head: Snapshot) -> list[tuple[str, str, str]]:
    out = []
    keys = list(dict.fromkeys([*old.data, *new.data]))
    for key in keys:
        if key in QUIET_KEYS or (old.resource is EVENTS and key in TIME_KEYS):
            continue
        before, after = old.data.get(key), new.data.get(key)
        if before == after:
            continue
        if old.resource is EVENTS and key in REF_KEYS:
            out.append((key, _names(base, old, key) or "(none)", _names(head, new, key) or "(none)"))
        elif key == old.resource.body_key or (isinstance(before, str) and isinstance(after, str)
                                              and max(len(before), len(after)) > SHORT_VALUE):
            out.append((key, f"{len(before or '')} characters", f"{len(after or '')} characters"))
        else:
            out.append((key, _shown(before), _shown(after)))
    return out


def _occurrences(record: Record, site_tz: tzinfo, until: datetime) -> list:
    """The first ``OCCURRENCES_COMPARED`` occurrences of a series within the horizon ([] for an
    invalid series), remembered with the record: the spans and the overlaps both ask."""
    key = f"diff occurrences until {until.isoformat()}"
    found = record.remembered(key)
    if found is None:
        series = series_or_none(record, site_tz)
        from calendar_service.domain.recurrence import occurrences
        found = list(itertools.islice(occurrences(series, horizon_end=until), OCCURRENCES_COMPARED)) \
            if series is not None else []
        record.remember(key, found)
    return found


def _occurrence_spans(record: Record, site_tz: tzinfo, until: datetime) -> list[str] | None:
    """The occurrences of a series within the horizon as shown spans; None for a single event."""
    if not record.data.get("recurrence"):
        return None
    return [span(o.start, o.end) for o in _occurrences(record, site_tz, until)]


def _series_change(change: RecordChange, old: Record | None, new: Record | None, site_tz, until) -> None:
    before = _occurrence_spans(old, site_tz, until) if old is not None else None
    after = _occurrence_spans(new, site_tz, until) if new is not None else None
    if before is None and after is None:
        return
    before_set, after_set = set(before or ()), set(after or ())
    added = [s for s in after or () if s not in before_set]
    removed = [s for s in before or () if s not in after_set]
    if change.kind != "changed" and (before is None or after is None):
        # a whole series added or removed: its occurrences are the record itself
        change.occurrences_added_total, change.occurrences_removed_total = len(added), len(removed)
        return
    change.occurrences_added, change.occurrences_removed = added[:OCCURRENCES_SHOWN], removed[:OCCURRENCES_SHOWN]
    change.occurrences_added_total, change.occurrences_removed_total = len(added), len(removed)


def _venue(snapshot: Snapshot, record: Record) -> str | None:
    return _names(snapshot, record, "venue") or None if record.resource is EVENTS else None


def dangling(snapshot: Snapshot, line_of=None) -> list[FileProblem]:
    """``reference_problems`` of ``snapshot``, new files without an id yet included."""
    found = reference_problems(snapshot, line_of)
    line_of = line_of or (lambda path, key: 1)
    for event in snapshot.unassigned:
        if event.resource is not EVENTS:
            continue
        for key in REF_KEYS:
            target = EVENT_REFERENCES[key]
            for ref in event.data.get(key) or []:
                if snapshot.resolve(target, ref) is None:
                    kind = "id" if isinstance(ref, int) else "slug"
                    found.append(FileProblem(event.path, line_of(event.path, key),
                                             f"{key}: no {target.singular} has the {kind} {ref!r}"))
    return found


def compare(base: Snapshot, head: Snapshot, site_tz: tzinfo, until: datetime | None = None,
            line_of=None) -> CalendarDiff:
    """What changes from ``base`` to ``head``. ``until``: where open-ended series stop being
    expanded (the service's horizon by default); ``line_of(path, key)``: a key's line in a file
    of ``head`` (line 1 without it)."""
    until = until or horizon()
    old_records, new_records = _keyed(base), _keyed(head)
    changes: list[RecordChange] = []
    broken_paths = {p.path for p in head.problems if p.severity == "error"}
    for key in sorted(set(old_records) | set(new_records), key=lambda k: (k[0], str(k[1]))):
        old, new = old_records.get(key), new_records.get(key)
        if old is not None and new is not None and old.blob == new.blob and old.path == new.path:
            continue
        if new is None and old is not None and old.path in broken_paths:
            continue   # not removed: its file no longer reads (listed with the broken files)
        record = new if new is not None else old
        snapshot = head if new is not None else base
        kind = "added" if old is None else "removed" if new is None else "changed"
        change = RecordChange(kind, record.resource, record.id, str(record.data.get(record.resource.title_key) or
                                                                        record.slug or record.path),
                              record.path, venue=_venue(snapshot, record))
        if record.resource is EVENTS:
            change.when = _when(record, site_tz)
        if kind == "changed":
            if old.path != new.path:
                change.old_path = old.path
            if new.resource is EVENTS:
                old_when = _when(old, site_tz)
                if old_when != change.when:
                    change.old_when = old_when
            change.fields = _field_changes(old, new, base, head)
        if record.resource is EVENTS:
            _series_change(change, old, new, site_tz, until)
        if kind == "changed" and not (change.fields or change.old_path or change.old_when
                                      or change.occurrences_added or change.occurrences_removed):
            continue   # only quiet keys or layout changed
        changes.append(change)
    touched = {path for path, entry in head.files.items()
               if base.files.get(path, (None,))[0] != entry[0]}
    broken_files = sorted((p for p in head.problems if p.severity == "error" and p.path in touched),
                          key=lambda p: (p.path, p.line))
    before = {(p.path, p.message) for p in dangling(base)}
    broken_refs = [p for p in dangling(head, line_of) if (p.path, p.message) not in before]
    overlaps = _new_overlaps(base, head, changes, site_tz, until)
    return CalendarDiff(changes, broken_files, broken_refs, overlaps[:OVERLAPS_SHOWN], len(overlaps))


def _intervals(snapshot: Snapshot, record: Record, site_tz, until) -> list[tuple[datetime, datetime]]:
    """The UTC times a published event takes (each occurrence of a series within the horizon)."""
    if record.data.get("status", "publish") != "publish" or record.data.get("all_day"):
        return []
    if record.data.get("recurrence"):
        return [(o.start.astimezone(timezone.utc), o.end.astimezone(timezone.utc))
                for o in _occurrences(record, site_tz, until)]
    times = _times(record, site_tz)
    if times is None or times[1] <= times[0]:
        return []
    return [(times[0].astimezone(timezone.utc), times[1].astimezone(timezone.utc))]


def _venue_ids(snapshot: Snapshot, record: Record) -> set[int]:
    out = set()
    for ref in record.data.get("venue") or []:
        found = snapshot.resolve(RESOURCES["venues"], ref)
        if found is not None:
            out.add(found.id)
    return out


def _ident(record: Record):
    """An event's id, or its path while it has none (a new file)."""
    return record.id if record.id is not None else record.path


def _label(record: Record) -> str:
    what = f"event {record.id}" if record.id is not None else record.path
    return f"{record.data.get('title')} ({what})"


def _overlaps_at(snapshot: Snapshot, changed_ids: set, site_tz, until) -> dict:
    """(venue id, event id, event id, start) -> (venue, first, second, when) for overlapping
    published events at the venues of the ``changed_ids`` events, each pair holding one of them."""
    events = {_ident(r): r for _path, (_blob, r, _problems) in snapshot.files.items()
              if r is not None and r.resource is EVENTS}
    venues: set[int] = set()
    for rid in changed_ids:
        if rid in events:
            venues |= _venue_ids(snapshot, events[rid])
    if not venues:
        return {}
    at_venue: dict[int, list] = {v: [] for v in venues}
    for record in events.values():
        for venue in _venue_ids(snapshot, record) & venues:
            at_venue[venue].extend((s, e, record) for s, e in _intervals(snapshot, record, site_tz, until))
    found = {}
    for venue, spans in at_venue.items():
        spans.sort(key=lambda item: item[0])
        active: list = []
        for start, end, record in spans:
            active = [a for a in active if a[1] > start]
            for other_start, other_end, other in active:
                if other is record or (_ident(record) not in changed_ids and _ident(other) not in changed_ids):
                    continue
                first, second = sorted((other, record), key=lambda r: str(_ident(r)))
                venue_record = snapshot.by_id["venues"].get(venue)
                tz = _zone_of(first, site_tz)
                overlap_start, overlap_end = max(start, other_start), min(end, other_end)
                found[(venue, _ident(first), _ident(second), overlap_start)] = (
                    str(venue_record.data.get("venue") if venue_record else venue), _label(first), _label(second),
                    span(overlap_start.astimezone(tz), overlap_end.astimezone(tz)))
            active.append((start, end, record))
    return found


def _new_overlaps(base: Snapshot, head: Snapshot, changes: list[RecordChange], site_tz, until) -> list[Overlap]:
    changed_ids = {c.record_id if c.record_id is not None else c.path
                   for c in changes if c.resource is EVENTS and c.kind != "removed"}
    if not changed_ids:
        return []
    before = _overlaps_at(base, changed_ids, site_tz, until)
    now = _overlaps_at(head, changed_ids, site_tz, until)
    return [Overlap(*value) for key, value in sorted(now.items(), key=lambda kv: kv[0][3]) if key not in before]


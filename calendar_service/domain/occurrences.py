"""The read side of recurring events: a series' occurrences as the event records the lists show.

Every list (the index's and the scanning fallback's), the single-event route and the
``/occurrences`` route see an occurrence as an ordinary event record (``OccurrenceRecord``):
the series' fields with the occurrence's exception applied, its own ``start_date``/``end_date``,
the id it is served under (``recurrence.served_id``: the series id for the first occurrence,
else its occurrence id) and ``post_parent`` = the series id (except the first, which keeps the
series' own, as The Events Calendar Pro's parent post does). Series come from
``recurrence.record.series_of`` only.

Open-ended rules stop at the horizon (``horizon``): ``months`` after today, rounded up to the
next midnight UTC, so the occurrences listed change once a day and never need a file rewritten.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from calendar_service.domain import dates
from calendar_service.domain.faults import FAULTS
from calendar_service.domain.record import Record
from calendar_service.domain.recurrence import (
    DEFAULT_HORIZON_MONTHS, EPOCH, Occurrence, Series, horizon_end, occurrence_at, occurrence_id, served_id,
    split_occurrence_id)
from calendar_service.domain.recurrence.record import series_of
from calendar_service.domain.resources import EVENTS

UTC = timezone.utc
# the keys of a series file that are not fields of any one occurrence
SERIES_KEYS = ("recurrence", "exceptions")
# overrides that change only an occurrence's times (the index handles those without a document)
TIME_KEYS = frozenset({"start_date", "end_date"})
MINUTE = timedelta(minutes=1)


def clock() -> datetime:
    """Now (UTC). The horizon moves with it, once a day."""
    return datetime.now(UTC)


def horizon(months: int | None = None) -> datetime:
    """The instant open-ended rules are expanded to today (see ``recurrence.horizon_end``)."""
    return horizon_end(clock(), DEFAULT_HORIZON_MONTHS if months is None else months)


class OccurrenceRecord(Record):
    """One occurrence of a series as an event record (``series_id``, ``original_start`` added)."""

    series_id: int = 0
    original_start: datetime | None = None
    special: bool = False      # its exception changes more than its times
    # its start and end as aware UTC instants: the local end_date alone cannot say which of a
    # repeated hour's two 01:30s an end kept in elapsed time falls on
    instants: tuple | None = None


def occurrence_record(record: Record, series: Series, occ: Occurrence, served: int | None = None) -> OccurrenceRecord:
    """The event record of occurrence ``occ`` of the series file ``record`` (``served``: its
    served id when the caller has it already)."""
    sid = record.id
    data = {k: v for k, v in record.data.items() if k not in SERIES_KEYS}
    for key, value in occ.overrides.items():
        if key not in TIME_KEYS:
            data[key] = value
    data["start_date"] = dates.fmt(occ.start)
    data["end_date"] = dates.fmt(occ.end)
    if served is None:
        served = served_id(series, sid, occ.original_start)
    data["id"] = served
    if served != sid:
        data["post_parent"] = sid
    out = OccurrenceRecord(record.resource, data, record.path, record.blob, record.filled)
    out.series_id = sid
    out.original_start = occ.original_start
    out.special = needs_document(occ)
    out.instants = (occ.start_utc, occ.end_utc)
    return out


def needs_document(occ: Occurrence) -> bool:
    """Whether an occurrence's exception changes more than its times (its own index document)."""
    return any(k not in TIME_KEYS for k in occ.overrides)


def series_record(snapshot, rid: int) -> Record | None:
    """The event record of id ``rid`` if it declares a series."""
    record = snapshot.get(EVENTS, rid)
    return record if record is not None and record.data.get("recurrence") else None


def listed_record(snapshot, rid: int, site_tz) -> Record | None:
    """The record a list shows under the served id ``rid``: an event, or an occurrence (the
    first occurrence of a series under the series id). None when nothing is served under it (or
    its series fails: reported in ``FAULTS``, the list goes on without it)."""
    try:
        return _listed_record(snapshot, rid, site_tz)
    except Exception as exc:
        found = split_occurrence_id(rid)
        record = snapshot.get(EVENTS, found[0] if found is not None else rid)
        FAULTS.report(record if record is not None else Record(EVENTS, {}, f"id {rid}"), "its occurrences", exc)
        return None


def _listed_record(snapshot, rid: int, site_tz) -> Record | None:
    found = split_occurrence_id(rid)
    if found is None:
        record = snapshot.get(EVENTS, rid)
        if record is None or not record.data.get("recurrence"):
            return record
        series = _series(record, site_tz)
        occ = occurrence_at(series, series.start) if series is not None else None
        return occurrence_record(record, series, occ) if occ is not None else None
    return occurrence_by_id(snapshot, rid, site_tz)


def occurrence_by_id(snapshot, rid: int, site_tz, visible=None) -> OccurrenceRecord | None:
    """The occurrence an occurrence id names, or None: not an occurrence id, no such series, or
    no occurrence starting there (EXDATE'd, never one, or the first, which is served under the
    series id). The horizon is not applied: a far occurrence is still addressable.

    ``visible(record)`` (when given) says whether the caller may see the series: when it may
    not, the answer is None before the series is expanded, as for an id naming nothing, so
    that neither the answer nor its time tells which ids a hidden series holds."""
    found = split_occurrence_id(rid)
    if found is None:
        return None
    sid, original = found
    record = snapshot.get(EVENTS, sid)
    if record is None or not record.data.get("recurrence"):
        return None
    if visible is not None and not visible(record):
        return None
    series = _series(record, site_tz)
    if series is None:
        return None
    occ = occurrence_at(series, original)
    if occ is None or served_id(series, sid, original) != rid:
        return None
    return occurrence_record(record, series, occ, rid)


def occurrences_of(record: Record, site_tz, until: datetime, **bounds) -> list[OccurrenceRecord]:
    """The occurrences of the series ``record`` a list with ``bounds`` (``recurrence.occurrences``'
    keyword bounds, aware datetimes) shows, in order of start, rules cut at ``until``."""
    series = _series(record, site_tz)
    if series is None:
        return []
    from calendar_service.domain.recurrence import occurrences
    return [occurrence_record(record, series, o) for o in occurrences(series, horizon_end=until, **bounds)]


def series_or_none(record: Record, site_tz) -> Series | None:
    """The series of ``record`` (None for a single event, or an invalid series: it lists nothing)."""
    return _series(record, site_tz)


def served_ids(series: Series, sid: int):
    """``served_id`` for many occurrences of one series, without its per-call checks."""
    first, base = series.start, occurrence_id(sid, series.start) - (series.start - EPOCH) // MINUTE
    return lambda original: sid if original == first else base + (original - EPOCH) // MINUTE


def _series(record: Record, site_tz) -> Series | None:
    try:
        return series_of(record, site_tz)
    except Exception:   # an invalid series is reported by the loader; it lists nothing
        return None

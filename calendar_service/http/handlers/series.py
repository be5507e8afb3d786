"""Updates and deletes of recurring events: an occurrence id (or a series id) with
``recurrence_scope`` (``this``, ``following``, ``all``; default ``this`` for an occurrence id,
``all`` for the series id). Every such write is one commit of the series' file (and, for
``following``, the new series' file), checked against the series' ETag (If-Match)."""
from __future__ import annotations

from datetime import datetime

from calendar_service.domain import occurrences, permissions
from calendar_service.domain.record import Record
from calendar_service.domain.recurrence import RecurrenceError, occurrence_at
from calendar_service.domain.recurrence.record import series_of
from calendar_service.domain.resources import EVENTS
from calendar_service.http.call import Call
from calendar_service.http.etags import if_match, record_etag
from calendar_service.service.series_writes import find_occurrence


def scoped_target(call: Call) -> tuple[Record, datetime, str] | None:
    """(series record, original local start, scope) when the request addresses a recurring
    event or one of its occurrences, else None (a single event, or an id naming nothing)."""
    if call.resource is not EVENTS:
        return None
    record = call.record
    if record is None:
        ident = call.args.get("id")
        found = (find_occurrence(call.snapshot, ident, call.service.site_tz,
                                 lambda series: permissions.can_read(call.user, series))
                 if isinstance(ident, int) else None)
        if found is None:
            return None
        return found[0], found[1], call.args.get("recurrence_scope") or "this"
    if record.resource is not EVENTS:
        return None
    try:
        series = series_of(record, call.service.site_tz)
    except RecurrenceError:
        return None
    if series is None:
        return None
    return record, series.start, call.args.get("recurrence_scope") or "all"


def _present_occurrence(call: Call, series_record: Record, original: datetime, after_write: bool) -> dict:
    """The occurrence at ``original`` as a single read of its id shows it: the series (with its
    ``recurrence`` block) for the first occurrence, which is served under the series id, or
    when the series has none there; else the occurrence with its ``post_parent``."""
    presenter = call.presenter(after_write=after_write)
    current = presenter.snapshot.get(EVENTS, series_record.id) or series_record
    series = series_of(current, call.service.site_tz)
    found = occurrence_at(series, original) if series is not None and original != series.start else None
    if found is None:
        return presenter.present_written(current)
    return presenter.present_written(occurrences.occurrence_record(current, series, found))


def handle_update(call: Call, record: Record, original: datetime, scope: str):
    service = call.service
    args = {k: v for k, v in call.args.items() if k not in ("id", "recurrence_scope")}
    if "recurrence" not in args and "recurrence" in call.raw and call.raw["recurrence"] is None:
        args["recurrence"] = []  # JSON null removes it, as an empty list does
    before = series_of(record, service.site_tz)
    result = service.write_occurrences(record, original, scope, args, call.user, precondition=if_match(call, record))
    presenter = call.presenter(after_write=True)
    call.headers["ETag"] = record_etag(call, presenter.snapshot, result if scope == "following" else
                                       presenter.snapshot.get(EVENTS, record.id) or result)
    if result.id != record.id or (scope == "all" and original == before.start):
        return presenter.present_written(result), 200
    after = series_of(result, service.site_tz)
    if scope == "all" and after is not None:  # the occurrence moved with the whole series
        original = original + (after.start - before.start)
    return _present_occurrence(call, result, original, after_write=True), 200


def handle_delete(call: Call, record: Record, original: datetime, scope: str):
    service = call.service
    series = series_of(record, service.site_tz)
    if scope == "all" or (scope == "following" and original == series.start):
        return None  # the series itself: the ordinary delete
    before = _present_occurrence(call, record, original, after_write=False)
    service.write_occurrences(record, original, scope, None, call.user, precondition=if_match(call, record))
    presenter = call.presenter(after_write=True)
    current = presenter.snapshot.get(EVENTS, record.id)
    if current is not None:
        call.headers["ETag"] = record_etag(call, presenter.snapshot, current)
    return before, 200

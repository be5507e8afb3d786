"""Recurring events in the importer's input: ``recurrence`` and ``exceptions`` of an event."""
from __future__ import annotations

from calendar_service.domain import dates
from calendar_service.domain.recurrence import recurrence_problems, split_occurrence_id


def series_fields(data: dict, item: dict, site_tz) -> tuple[str, str] | None:
    """Put the series of ``item`` into the event ``data`` being imported; returns (key, message)
    when it is wrong, None when it is fine (or there is none).

    ``recurrence`` is a list of RFC 5545 lines (or one string of lines), or the ``recurrence``
    block of our single read (``rules`` and ``exceptions``); ``exceptions`` may stand beside it.
    They are checked as the loader checks a file. An occurrence id is never kept as the record's
    id (it names an occurrence, not a file): The Events Calendar Pro's exports, whose occurrences
    are separate events sharing a ``post_parent``, import as separate single events."""
    if data.get("id") is not None and split_occurrence_id(data["id"]) is not None:
        data["id"] = None
    given, exceptions = item.get("recurrence"), item.get("exceptions")
    if given in (None, "", [], {}):
        if exceptions not in (None, {}, []):
            return "exceptions", "only a recurring event (with recurrence) has exceptions"
        return None
    if isinstance(given, dict):
        given, exceptions = given.get("rules"), given.get("exceptions") or exceptions
    if isinstance(given, str):
        given = given.splitlines()
    if not isinstance(given, list) or not all(isinstance(line, str) for line in given):
        return "recurrence", "must be a list of RFC 5545 lines (RRULE, EXDATE, RDATE)"
    if exceptions is not None and not isinstance(exceptions, dict):
        return "exceptions", "must be an object"
    data["recurrence"] = [line.strip() for line in given if line.strip()]
    data["exceptions"] = exceptions or None
    tz = dates.zone(data.get("timezone"), site_tz)
    found = recurrence_problems(data["recurrence"], data["exceptions"], data["start_date"], data["end_date"],
                                tz, bool(data.get("all_day")))
    if found:
        return found[0].field, "; ".join(str(p) for p in found)
    return None

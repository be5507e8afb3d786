"""The series an event record describes: the one bridge from a loaded file to this package.

Every layer that needs a record's occurrences (the write path, the index, the lists' scanning
fallback, the single-event routes, the iCalendar feed) asks ``series_of`` instead of reading
``recurrence``/``exceptions`` itself, so they all agree on what a file means.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from calendar_service.domain import dates
from calendar_service.domain.recurrence import limits
from calendar_service.domain.recurrence.lines import RecurrenceError
from calendar_service.domain.recurrence.series import Series, parse_recurrence

# Parsed series kept by (blob, site zone); a file's blob names its exact content, so an entry is
# never stale. Bounded: the oldest entry goes first.
MAX_REMEMBERED = 4096
_remembered: OrderedDict = OrderedDict()
_lock = threading.Lock()


def is_recurring(record) -> bool:
    """Whether the record's file declares a series (whether or not the declaration is valid)."""
    return bool(record.data.get("recurrence"))


def series_of(record, site_tz) -> Series | None:
    """The series of an event record, or None for a single event.

    Raises RecurrenceError when the file's ``recurrence``/``exceptions`` are invalid; the
    records loader reports those as problems of the file, so a served record never raises.
    """
    data = record.data
    if not data.get("recurrence"):
        return None
    key = (record.blob, getattr(site_tz, "key", str(site_tz)), limits.max_occurrences(),
           limits.horizon_months()) if record.blob else None
    if key is not None:
        with _lock:
            found = _remembered.get(key)
            if found is not None:
                _remembered.move_to_end(key)
                if isinstance(found, RecurrenceError):
                    raise RecurrenceError(found.problems)
                return found
    tz = dates.zone(data.get("timezone"), site_tz)
    try:
        series = parse_recurrence(data.get("recurrence"), data.get("exceptions") or {}, data.get("start_date"),
                                  data.get("end_date"), tz, bool(data.get("all_day")))
    except RecurrenceError as exc:
        series = exc     # remembered too: an invalid series is not checked again on every request
    if key is not None:
        with _lock:
            _remembered[key] = series
            while len(_remembered) > MAX_REMEMBERED:
                _remembered.popitem(last=False)
    if isinstance(series, RecurrenceError):
        raise RecurrenceError(series.problems)
    return series


__all__ = ["is_recurring", "series_of", "RecurrenceError"]

"""The ``recurrence`` block of a recurring event's single read (its series as the file holds it)."""
from __future__ import annotations

from calendar_service.domain.record import Record
from calendar_service.domain.recurrence import RecurrenceError
from calendar_service.domain.recurrence.lines import show
from calendar_service.domain.recurrence.record import series_of


def recurrence_block(record: Record, site_tz, rest_url: str) -> dict | None:
    """``{"rules": [RFC 5545 lines], "exceptions": {original local start: {field: value}},
    "occurrences": URL of the series' occurrences}`` for a series, None for a single event.

    Exceptions are keyed by the occurrence's original local start (``YYYY-MM-DD HH:MM:SS``, or
    ``YYYY-MM-DD`` for an all-day series) and hold the fields that occurrence overrides, as the
    file writes them."""
    try:
        series = series_of(record, site_tz)
    except RecurrenceError:
        return None
    if series is None:
        return None
    return {
        "rules": list(series.lines),
        "exceptions": {show(k, series.all_day): {name: _plain(value) for name, value in v.items()}
                       for k, v in sorted(series.exceptions.items())},
        "occurrences": rest_url + "/occurrences",
    }


def _plain(value):
    """A value as JSON can hold it (YAML may give dates for unquoted text)."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)

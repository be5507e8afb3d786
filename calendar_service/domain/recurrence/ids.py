"""Occurrence ids: integers that name one occurrence of a series, stable and exact in JavaScript.

An id is 2**52 + (series id << 26) + minutes from 1970-01-01 00:00 to the occurrence's original
local start: always at least 2**52, so never one of the small sequential ids of records, and
below 2**53, so exact in a JavaScript number.
"""
from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from calendar_service.domain.recurrence.lines import EPOCH, naive

if TYPE_CHECKING:
    from calendar_service.domain.recurrence.series import Series

# Occurrence ids: 2**52 + (series id << 26) + minutes since 1970-01-01 00:00 of the original
# local start. Below 2**53, so exact in JavaScript; never a small sequential record id.
ID_BASE = 1 << 52
SERIES_BITS = MINUTE_BITS = 26
MAX_SERIES_ID = (1 << SERIES_BITS) - 1
LAST_ORIGINAL_START = EPOCH + timedelta(minutes=(1 << MINUTE_BITS) - 1)   # 2097-08-05 09:03


def occurrence_id(series_id: int, original_start: datetime | date) -> int:
    """The stable id of the occurrence of series ``series_id`` originally starting at
    ``original_start`` (naive local wall-clock time; a date for all-day series).

    Raises ValueError outside the id's range: series ids 1..2**26-1, starts from 1970-01-01 00:00 to
    2097-08-05 09:03 (minutes since 1970 in 26 bits); seconds are ignored.
    """
    original = naive(original_start)
    if not 0 < series_id <= MAX_SERIES_ID:
        raise ValueError(f"series id {series_id} is outside 1..{MAX_SERIES_ID}")
    if not EPOCH <= original <= LAST_ORIGINAL_START + timedelta(seconds=59):
        raise ValueError(f"{original} is outside 1970-01-01..{LAST_ORIGINAL_START:%Y-%m-%d}")
    minutes = (original - EPOCH) // timedelta(minutes=1)
    return ID_BASE + (series_id << MINUTE_BITS) + minutes


def split_occurrence_id(value: int) -> tuple[int, datetime] | None:
    """(series id, original local start) of an occurrence id, or None for any other integer
    (an ordinary record id)."""
    if not isinstance(value, int) or isinstance(value, bool) or not ID_BASE <= value < (ID_BASE << 1):
        return None
    rest = value - ID_BASE
    series_id, minutes = rest >> MINUTE_BITS, rest & ((1 << MINUTE_BITS) - 1)
    if series_id == 0:
        return None
    return series_id, EPOCH + timedelta(minutes=minutes)


def served_id(series: Series, series_id: int, original_start: datetime) -> int:
    """The id an occurrence is served under: the series' own id for its first occurrence (as The
    Events Calendar Pro serves the first occurrence under the parent post), else its occurrence id."""
    original = naive(original_start)
    return series_id if original == series.start else occurrence_id(series_id, original)

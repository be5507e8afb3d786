"""Expanding a series into the occurrences an event list shows."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from datetime import datetime, time, timedelta, timezone

from dateutil.relativedelta import relativedelta

from calendar_service.domain import dates
from calendar_service.domain.recurrence.limits import RuleTooCostly
from calendar_service.domain.recurrence.lines import naive
from calendar_service.domain.recurrence.series import Occurrence, Series

UTC = timezone.utc

DEFAULT_HORIZON_MONTHS = 24


def horizon_end(now: datetime, months: int = DEFAULT_HORIZON_MONTHS) -> datetime:
    """The last instant rule occurrences are expanded to: ``months`` after ``now``, rounded up to
    the next midnight UTC, so the set of occurrences changes once a day, not with every request."""
    moment = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC) + relativedelta(months=months)
    return datetime.combine(moment.date() + timedelta(days=1), time(), UTC)


def occurrences(series: Series, window_start: datetime | None = None, window_end: datetime | None = None,
                horizon_end: datetime | None = None, *, starts_after: datetime | None = None,
                starts_before: datetime | None = None, ends_after: datetime | None = None,
                ends_before: datetime | None = None) -> Iterator[Occurrence]:
    """The occurrences of ``series`` a list with these bounds shows, in order of start.

    Bounds are aware datetimes (any zone) with the event list's meaning: start >= ``window_start``,
    end <= ``window_end``, start > ``starts_after``, start < ``starts_before``, end > ``ends_after``,
    end < ``ends_before`` (None: no bound). Occurrences of the RRULE whose original start is after
    ``horizon_end`` are not produced (RDATEs always are); without any upper bound, ``horizon_end``
    is required. An occurrence moved by an exception is in or out by its new times.
    """
    lows = [b for b in (window_start, starts_after) if b is not None]
    highs = [b for b in (window_end, starts_before, ends_before) if b is not None]
    if not highs and horizon_end is None and (series.rule is not None and not series.rule.bounded):
        raise ValueError("an open-ended series needs an upper bound or a horizon")
    tz, duration, exceptions, exdates, rdates = (series.tz, series.duration, series.exceptions, series.exdates,
                                                 series.rdates)
    offset = tz.utcoffset
    bounds = [None if b is None else utc_naive(b) for b in
              (window_start, window_end, starts_after, starts_before, ends_after, ends_before)]
    ws, we, sa, sb, ea, eb = bounds
    lo = max(utc_naive(b) for b in lows) if lows else None
    if ea is not None:
        lo = ea - duration if lo is None else max(lo, ea - duration)
    hi = min(utc_naive(b) for b in highs) if highs else None
    horizon = None if horizon_end is None else utc_naive(horizon_end)
    rule_hi = hi if horizon is None else (horizon if hi is None else min(hi, horizon))
    slack = timedelta(days=1)   # local times differ from UTC by less than a day
    gen_lo = None if lo is None else lo - slack
    try:
        originals = series.engine.rule_instances(gen_lo, None if rule_hi is None else rule_hi + slack)
    except RuleTooCostly:   # a series checked when read never is; one read before the limits lists its dates
        originals = []
    if horizon is not None and originals and originals[-1] - offset(originals[-1]) > horizon:
        originals = [o for o in originals if o - offset(o) <= horizon]
    if rdates:
        extra = [d for d in rdates if (gen_lo is None or d >= gen_lo) and (hi is None or d <= hi + slack)]
        if extra:
            originals = sorted(set(originals).union(extra))
    if exdates or exceptions:
        originals = [o for o in originals if o not in exdates and o not in exceptions]
    empty: Mapping = {}
    new = tuple.__new__
    if series.all_day:   # whole days: the end is the same wall-clock time of its day
        found = [new(Occurrence, (o, o - offset(o), e - offset(e), tz, empty))
                 for o in originals for e in (o + duration,)]
    else:   # the length is elapsed time (RFC 5545 3.8.5.3), also across a DST change
        found = [new(Occurrence, (o, s, s + duration, tz, empty)) for o in originals for s in (o - offset(o),)]
    if any(b is not None for b in bounds) and found:
        # occurrences well inside the range generated are inside the bounds: check the edges only
        margin = timedelta(days=2)
        i = bisect_left(originals, lo + margin) if lo is not None else 0
        j = bisect_right(originals, hi - margin - duration) if hi is not None else len(found)
        i, j = min(i, len(found)), max(min(j, len(found)), min(i, len(found)))
        found = ([o for o in found[:i] if not _outside(o.utc_start, o.utc_end, *bounds)] + found[i:j]
                 + [o for o in found[j:] if not _outside(o.utc_start, o.utc_end, *bounds)])
    for original, overrides in exceptions.items():
        if horizon is not None and original not in rdates and original - offset(original) > horizon:
            continue
        start, end = moved(series, original, overrides)
        if not _outside(start, end, *bounds):
            found.append(Occurrence(original, start, end, tz, overrides))
    if exceptions or rdates:
        found.sort(key=lambda o: (o.utc_start, o.original_start))
    return iter(found)


def _outside(start, end, ws, we, sa, sb, ea, eb) -> bool:
    """Whether an occurrence (naive UTC times) is outside the list's bounds (naive UTC or None)."""
    return ((ws is not None and start < ws) or (we is not None and end > we)
            or (sa is not None and not start > sa) or (sb is not None and not start < sb)
            or (ea is not None and not end > ea) or (eb is not None and not end < eb))


def utc_naive(moment: datetime) -> datetime:
    """An aware datetime as naive UTC (a naive one is taken as UTC already)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def occurrence_at(series: Series, original_start: datetime) -> Occurrence | None:
    """The occurrence whose original start is ``original_start`` (naive local), or None when the
    series has none there (the horizon is not applied)."""
    original = naive(original_start)
    if not series.is_occurrence(original):
        return None
    overrides = series.exceptions.get(original, {})
    start, end = moved(series, original, overrides)
    return Occurrence(original, start, end, series.tz, overrides)


def moved(series: Series, original: datetime, overrides: Mapping) -> tuple[datetime, datetime]:
    """An occurrence's start and end (naive UTC) after its exception: a new start alone keeps the
    series' duration, a new end alone keeps the original start. The start follows the local wall
    clock (a time a DST gap skips is read with the offset before the gap, as zoneinfo's fold=0 and
    RFC 5545 do: 02:30 becomes 03:30); the series' duration is elapsed time (RFC 5545 3.8.5.3),
    so an occurrence keeps its length across a DST change. Whole days keep wall-clock days."""
    offset = series.tz.utcoffset
    start = original
    if "start_date" in overrides:
        start = dates.read_local(overrides["start_date"], UTC).replace(tzinfo=None)
    start_utc = start - offset(start)
    if "end_date" in overrides:
        end = dates.read_local(overrides["end_date"], UTC).replace(tzinfo=None)
        return start_utc, end - offset(end)
    if series.all_day:
        end = start + series.duration
        return start_utc, end - offset(end)
    return start_utc, start_utc + series.duration

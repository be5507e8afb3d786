"""A series: the ``recurrence`` lines and ``exceptions`` of an event file read together with its
first occurrence's times (``parse_recurrence``)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import cached_property
from typing import NamedTuple

from dateutil.relativedelta import relativedelta

from calendar_service.domain import dates
from calendar_service.domain.recurrence import limits
from calendar_service.domain.recurrence.engine import Engine
from calendar_service.domain.recurrence.ids import LAST_ORIGINAL_START
from calendar_service.domain.recurrence.limits import EARLIEST_TIME, LATEST_TIME, RuleTooCostly
from calendar_service.domain.recurrence.lines import (
    EPOCH, LINE, SeriesProblem, RecurrenceError, Rule, naive, read_dates, read_rule, show, split_parts)
from calendar_service.domain.resources import EVENTS

UTC = timezone.utc

# fields an exception may not override: they belong to the series (or to the file)
SERIES_ONLY = frozenset({"id", "slug", "status", "author", "date_utc", "modified_utc", "timezone", "all_day",
                         "post_parent", "password", "recurrence", "exceptions"})
OVERRIDABLE = frozenset(k for k in (*EVENTS.file_keys, EVENTS.body_key) if k and k not in SERIES_ONLY)
KEY_DAY = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
# said of an exception whose occurrence the series does not have: the series is served without it
IGNORED = " (any more): the exception is ignored; change its key or remove it"


class Occurrence(NamedTuple):
    """One occurrence: ``original_start`` (naive local wall-clock time, the exception key and the
    id's source), its times after any exception moved it as naive UTC (``utc_start``,
    ``utc_end``: cheap to compare and sort), the series' zone, and the fields its exception
    overrides (empty when none). ``start``/``end`` are the aware local times."""

    original_start: datetime
    utc_start: datetime
    utc_end: datetime
    tz: tzinfo
    overrides: Mapping

    @property
    def start_utc(self) -> datetime:
        return self.utc_start.replace(tzinfo=UTC)

    @property
    def end_utc(self) -> datetime:
        return self.utc_end.replace(tzinfo=UTC)

    @property
    def start(self) -> datetime:
        return self.start_utc.astimezone(self.tz)

    @property
    def end(self) -> datetime:
        return self.end_utc.astimezone(self.tz)


@dataclass(frozen=True, eq=False)
class Series:
    """A parsed series. Times are naive local wall-clock times in ``tz``; ``duration`` is the
    span from start to end as the file writes them (local times), applied to every occurrence as
    elapsed time (whole days for an all-day series): see ``expand.moved``."""

    start: datetime
    duration: timedelta
    tz: tzinfo
    all_day: bool
    rule: Rule | None
    exdates: frozenset[datetime]
    rdates: tuple[datetime, ...]
    exceptions: dict[datetime, dict]
    lines: tuple[str, ...]
    # what is wrong but served anyway (SeriesProblem with severity "warning"): exceptions of
    # occurrences the series does not have (any more), which are ignored
    warnings: tuple = ()

    @property
    def end(self) -> datetime:
        return self.start + self.duration

    @cached_property
    def engine(self) -> Engine:
        """The generator of this series' RRULE instances (made once)."""
        return Engine(self)

    def is_occurrence(self, original_start: datetime) -> bool:
        """Whether ``original_start`` (naive local) starts an occurrence (EXDATEs excluded, the
        horizon ignored)."""
        original_start = naive(original_start)
        if original_start in self.exdates:
            return False
        try:
            return original_start in self.rdates or self.engine.is_rule_instance(original_start)
        except RuleTooCostly:   # too far from the start to be walked to: addressed as no occurrence
            return False


def parse_recurrence(lines, exceptions, start, end, tz: tzinfo, all_day: bool) -> Series:
    """The series described by the ``recurrence`` lines and ``exceptions`` map of an event whose
    first occurrence runs from ``start`` to ``end`` (stored local strings ``YYYY-MM-DD HH:MM:SS``
    or naive datetimes) in ``tz`` (a tzinfo, see ``dates.zone``).

    Raises RecurrenceError naming every problem: its ``problems`` carry the index in ``lines`` or
    the exception key, so a caller can point at the file line. An exception naming no occurrence
    of the series is no error: it is ignored and listed in the series' ``warnings`` (an editor who
    moved a series to other days keeps it served; ``validate`` names the exception).
    A series whose rule produces more than ``limits.max_occurrences()`` occurrences within the
    horizon's months from its start, or that cannot be evaluated within ``limits.STEP_BUDGET``
    periods, is refused (a problem on the RRULE line).
    """
    problems: list[SeriesProblem] = []
    first, last = _read_bound(start, "start_date", problems), _read_bound(end, "end_date", problems)
    if all_day and first is not None:
        first = datetime.combine(first.date(), time())
    if first is not None and last is not None and last < first:
        problems.append(SeriesProblem("end_date", None, "the end is before the start"))
    if first is not None:
        if first.second:
            problems.append(SeriesProblem("start_date", None, "a recurring event starts on a whole minute "
                                                        "(occurrence ids count minutes)"))
        if not EPOCH <= first <= LAST_ORIGINAL_START:
            problems.append(SeriesProblem("start_date", None, "a recurring event starts between 1970 and 2097 "
                                                        "(occurrence ids count minutes since 1970)"))
    if last is not None and not EARLIEST_TIME <= last <= LATEST_TIME:
        problems.append(SeriesProblem("end_date", None, f"the first occurrence of a recurring event ends by "
                                                  f"{LATEST_TIME:%Y-%m-%d}"))
    if not isinstance(lines, (list, tuple)) or not lines:
        problems.append(SeriesProblem("recurrence", None, "must be a non-empty list of RFC 5545 lines "
                                                    "(RRULE, EXDATE, RDATE)"))
        lines = []
    rule, exdates, rdates, rule_index = None, set(), set(), None
    for i, line in enumerate(lines):
        if not isinstance(line, str):
            problems.append(SeriesProblem("recurrence", i, "must be a text line such as RRULE:FREQ=WEEKLY"))
            continue
        match = LINE.match(line.strip())
        if not match:
            problems.append(SeriesProblem("recurrence", i, "not an RFC 5545 line (NAME;PARAMS:VALUE)"))
            continue
        name, params, value = match.group(1).upper(), match.group(2), match.group(3).strip()
        if name == "RRULE":
            if params:
                problems.append(SeriesProblem("recurrence", i, "RRULE takes no parameters"))
            elif rule is not None:
                problems.append(SeriesProblem("recurrence", i, "a series has one RRULE (RFC 5545 advises against "
                                                         "several); repeat with RDATE or a second event"))
            else:
                rule, rule_index = read_rule(split_parts(value, i, problems), i, problems, all_day), i
        elif name in ("EXDATE", "RDATE"):
            values = read_dates(name, params, value, i, problems, tz, all_day)
            (exdates if name == "EXDATE" else rdates).update(values)
        elif name == "EXRULE":
            problems.append(SeriesProblem("recurrence", i, "EXRULE is deprecated by RFC 5545 (and unsupported by "
                                                     "most clients): list the dates with EXDATE"))
        else:
            problems.append(SeriesProblem("recurrence", i, f"unknown property {name} (expected RRULE, EXDATE or RDATE)"))
    if lines and rule is None and not rdates and not any(p.field == "recurrence" for p in problems):
        problems.append(SeriesProblem("recurrence", None, "needs an RRULE or an RDATE"))
    if first is None or last is None or problems:
        _read_exceptions(exceptions, all_day, problems, None)
        raise RecurrenceError(problems or [SeriesProblem("recurrence", None, "unreadable")])
    series = Series(start=first, duration=last - first, tz=tz, all_day=bool(all_day), rule=rule,
                    exdates=frozenset(exdates), rdates=tuple(sorted(rdates)), exceptions={},
                    lines=tuple(line.strip() for line in lines))
    read: dict = {}
    try:
        _check_rule(series, rule_index, problems)
        _check_dates(series, rdates, problems)
        read = _read_exceptions(exceptions, all_day, problems, series)
    except RuleTooCostly as exc:
        problems.append(SeriesProblem("recurrence", rule_index, str(exc)))
    if any(p.severity == "error" for p in problems):
        raise RecurrenceError(problems)
    object.__setattr__(series, "exceptions", read)
    object.__setattr__(series, "warnings", tuple(problems))
    return series


def _check_rule(series: Series, rule_index: int | None, problems: list[SeriesProblem]) -> None:
    """The rule produces the first occurrence, and not more occurrences than allowed within the
    horizon's months from the start (counted as produced: EXDATEs do not lower it, RDATEs add)."""
    first, engine = series.start, series.engine
    if series.rule is not None and not engine.is_rule_instance(first):
        problems.append(SeriesProblem("start_date", None, "the first occurrence must match the RRULE "
                                                    "(RFC 5545: DTSTART should be synchronized with the rule)"))
        return
    most, months = limits.max_occurrences(), limits.horizon_months()
    window = first + relativedelta(months=months)
    produced = engine.count_upto(window, most + 1) + sum(1 for d in series.rdates if d <= window)
    if produced > most:
        problems.append(SeriesProblem("recurrence", rule_index, f"the series has more than {most:,} occurrences "
                                      f"in the {months} months from its start (at most {most:,} are allowed; "
                                      "a rule's BYHOUR and BYMINUTE values multiply its occurrences)"))


def _check_dates(series: Series, rdates, problems: list[SeriesProblem]) -> None:
    """Each EXDATE names an occurrence; each RDATE is within the occurrence ids' years."""
    tz, all_day, engine = series.tz, series.all_day, series.engine
    for i, line in enumerate(series.lines):
        if line.upper().startswith("EXDATE"):
            for moment in read_dates("EXDATE", LINE.match(line).group(2), LINE.match(line).group(3).strip(),
                                      i, [], tz, all_day):
                if moment not in rdates and not engine.is_rule_instance(moment):
                    problems.append(SeriesProblem("recurrence", i, f"EXDATE {show(moment, all_day)} is not an "
                                                             "occurrence of the series"))
        elif line.upper().startswith("RDATE"):
            for moment in read_dates("RDATE", LINE.match(line).group(2), LINE.match(line).group(3).strip(),
                                      i, [], tz, all_day):
                if not EPOCH <= moment <= LAST_ORIGINAL_START:
                    problems.append(SeriesProblem("recurrence", i, f"RDATE {show(moment, all_day)} is outside "
                                                             "1970-2097 (occurrence ids count minutes since 1970)"))


def recurrence_problems(lines, exceptions, start, end, tz: tzinfo, all_day: bool) -> list[SeriesProblem]:
    """The problems ``parse_recurrence`` would raise, as a list, and its warnings (empty when the
    series is fine; ``severity`` tells them apart)."""
    try:
        return list(parse_recurrence(lines, exceptions, start, end, tz, all_day).warnings)
    except RecurrenceError as exc:
        return exc.problems


def _read_bound(value, name: str, problems: list[SeriesProblem]) -> datetime | None:
    try:
        return naive(value) if isinstance(value, datetime) else dates.read_local(str(value), UTC).replace(tzinfo=None)
    except (TypeError, ValueError):
        problems.append(SeriesProblem(name, None, "must be a local time YYYY-MM-DD HH:MM:SS"))
        return None


def _read_exceptions(exceptions, all_day: bool, problems: list[SeriesProblem], series: Series | None) -> dict:
    if exceptions is None or exceptions == {}:
        return {}
    if not isinstance(exceptions, Mapping):
        problems.append(SeriesProblem("exceptions", None, "must be a map from an occurrence's original start to its changes"))
        return {}
    read: dict[datetime, dict] = {}
    for raw_key, changes in exceptions.items():
        label = str(raw_key)
        key = _read_key(raw_key, all_day)
        if key is None:
            form = "YYYY-MM-DD" if all_day else "YYYY-MM-DD HH:MM:SS, or YYYY-MM-DD for the one occurrence of a day"
            problems.append(SeriesProblem("exceptions", label, f"the key must be an occurrence's original start ({form})"))
            continue
        if not isinstance(changes, Mapping) or not changes:
            problems.append(SeriesProblem("exceptions", label, "must map field names to the occurrence's values"))
            continue
        overrides = {}
        for name, value in changes.items():
            if name == "cancelled":
                problems.append(SeriesProblem("exceptions", label, "to remove an occurrence add an EXDATE line "
                                                             "to recurrence instead of cancelled"))
            elif name in SERIES_ONLY:
                problems.append(SeriesProblem("exceptions", label, f"{name} belongs to the whole series"))
            elif name not in OVERRIDABLE:
                problems.append(SeriesProblem("exceptions", label, f"unknown event field {name}"))
            elif name in ("start_date", "end_date"):
                text = override_time(value, name, all_day)
                if text is None:
                    form = "YYYY-MM-DD" if all_day else "YYYY-MM-DD HH:MM:SS"
                    problems.append(SeriesProblem("exceptions", label, f"{name} must be a local time {form} "
                                                  f"from {EARLIEST_TIME.year} to {LATEST_TIME.year}"))
                else:
                    overrides[name] = text
            else:
                overrides[name] = value
        if "start_date" in overrides and "end_date" in overrides and overrides["end_date"] < overrides["start_date"]:
            problems.append(SeriesProblem("exceptions", label, "end_date is before start_date"))
        if isinstance(key, date) and not isinstance(key, datetime):   # a bare date of a timed series
            if series is None:
                continue   # the series is unreadable: its problems are reported already
            key = _occurrence_of_day(series, key, label, problems)
            if key is None:
                continue
        if series is not None:
            if key in series.exdates:
                problems.append(SeriesProblem("exceptions", label, "this occurrence is removed by an EXDATE"
                                              + IGNORED, "warning"))
                continue
            if not series.is_occurrence(key):
                problems.append(SeriesProblem("exceptions", label, "not an occurrence of the series" + IGNORED,
                                              "warning"))
                continue
        if key in read:
            problems.append(SeriesProblem("exceptions", label, "the same occurrence is listed twice"))
        read[key] = overrides
    return read


def _read_key(raw, all_day: bool) -> datetime | date | None:
    """An exception key: the original start (naive local), or for a timed series given as a bare
    date, that date (the one occurrence starting on it: ``_occurrence_of_day``). None: unreadable."""
    if isinstance(raw, datetime):
        raw = dates.normalize_stored(raw)
    elif isinstance(raw, date):
        raw = raw.isoformat()
    text = str(raw).strip()
    try:
        if KEY_DAY.match(text):
            return datetime.fromisoformat(text) if all_day else date.fromisoformat(text)
        moment = dates.read_local(text, UTC).replace(tzinfo=None)
    except ValueError:
        return None
    if all_day and moment.time() != time():
        return None
    return moment


def _occurrence_of_day(series: Series, day: date, label: str, problems: list[SeriesProblem]) -> datetime | None:
    """The original start of the one occurrence of a timed ``series`` that starts on the local
    date ``day`` (EXDATEs excluded); a problem, and None, when none or several do."""
    first = datetime.combine(day, time())
    found = set()
    if EPOCH <= first <= LAST_ORIGINAL_START:
        found = set(series.engine.rule_instances(first, first + timedelta(days=1) - timedelta(seconds=1)))
    found.update(d for d in series.rdates if d.date() == day)
    kept = sorted(d for d in found if d not in series.exdates)
    if len(kept) == 1:
        return kept[0]
    if found and not kept:
        problems.append(SeriesProblem("exceptions", label, "this occurrence is removed by an EXDATE" + IGNORED,
                                      "warning"))
    elif not kept:
        problems.append(SeriesProblem("exceptions", label, f"no occurrence of the series starts on {day} (a date "
                                      "names the one occurrence starting that day); the exception is ignored",
                                      "warning"))
    else:
        starts = ", ".join(d.strftime("%H:%M") for d in kept)
        problems.append(SeriesProblem("exceptions", label, f"{len(kept)} occurrences start on {day} ({starts}): "
                                                     f"name one by its start, such as '{dates.fmt(kept[0])}'"))
    return None


def override_time(value, name: str, all_day: bool) -> str | None:
    if all_day and isinstance(value, date) and not isinstance(value, datetime):
        value = value.isoformat()   # an unquoted YAML date: the whole day (an end at 23:59:59)
    value = dates.normalize_stored(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if all_day and KEY_DAY.match(text):
        text += " 00:00:00" if name == "start_date" else " 23:59:59"
    try:
        moment = dates.read_local(text, UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None
    if not EARLIEST_TIME <= moment <= LATEST_TIME:
        return None   # far outside any occurrence's times: nothing computed from it could be shown
    return text

"""Recurring events: one event file holds a whole series (docs/recurrence.md has the design).

A series is an event whose front matter carries ``recurrence:``, a list of RFC 5545 lines in
the shape Google Calendar's API uses (``RRULE:FREQ=WEEKLY;BYDAY=TU``, ``EXDATE;TZID=...:...``,
``RDATE...``), with the event's own ``start_date``/``end_date``/``timezone``/``all_day`` as the
first occurrence (DTSTART/DTEND), and ``exceptions:``, a map from an occurrence's original local
start to the fields that occurrence overrides. This module reads and checks those values
(``parse_recurrence``), expands a series into occurrences (``occurrences``), names occurrences
with integer ids (``occurrence_id``), rewrites a series for an edit of one occurrence, the
following ones or all of them (``apply_this``, ``apply_following``, ``apply_all``), and maps a
series to iCalendar (``to_ical_lines``) and from a phrase (``parse_repeat_phrase``).

Recurrence is wall-clock time in the series' zone: a weekly 19:00 Europe/Berlin event stays at
19:00 local across daylight-saving changes. A local time that does not exist (in a spring-forward
gap) is moved forward by the gap, an ambiguous one (in a fall-back hour) is the first of the two
(RFC 5545 section 3.3.5). Pure functions: no I/O.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import cached_property
from itertools import accumulate, repeat
from typing import NamedTuple
from zoneinfo import ZoneInfo

from dateutil import rrule as du
from dateutil.relativedelta import relativedelta

from calendar_service.domain import dates
from calendar_service.domain.resources import EVENTS

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1)

# Occurrence ids: 2**52 + (series id << 26) + minutes since 1970-01-01 00:00 of the original
# local start. Below 2**53, so exact in JavaScript; never a small sequential record id.
ID_BASE = 1 << 52
SERIES_BITS = MINUTE_BITS = 26
MAX_SERIES_ID = (1 << SERIES_BITS) - 1
LAST_ORIGINAL_START = EPOCH + timedelta(minutes=(1 << MINUTE_BITS) - 1)   # 2097-08-06 ...

DEFAULT_HORIZON_MONTHS = 24

WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
FREQS = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY")
_DU_FREQ = {"YEARLY": du.YEARLY, "MONTHLY": du.MONTHLY, "WEEKLY": du.WEEKLY, "DAILY": du.DAILY,
            "HOURLY": du.HOURLY}
_FREQ_ORDER = {name: i for i, name in enumerate(FREQS)}

# fields an exception may not override: they belong to the series (or to the file)
SERIES_ONLY = frozenset({"id", "slug", "status", "author", "date_utc", "modified_utc", "timezone", "all_day",
                         "post_parent", "password", "recurrence", "exceptions"})
OVERRIDABLE = frozenset(k for k in (*EVENTS.file_keys, EVENTS.body_key) if k and k not in SERIES_ONLY)

_LINE = re.compile(r"([A-Za-z-]+)((?:;[^:;]*)*):(.*)\Z", re.S)
_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})\Z")
_DATETIME = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)\Z")
_BYDAY = re.compile(r"([+-]?)(\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)\Z")
_INT = re.compile(r"[+-]?\d{1,3}\Z")
_KEY_DAY = re.compile(r"\d{4}-\d{2}-\d{2}\Z")


# ---------------------------------------------------------------------------------------------
# values


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a series: ``field`` is the front-matter key (``recurrence``,
    ``exceptions``, ``start_date``...), ``index`` the position in the ``recurrence`` list or the
    exception's key as written (None for the field as a whole), ``message`` what is wrong."""

    field: str
    index: int | str | None
    message: str

    def __str__(self) -> str:
        where = self.field if self.index is None else f"{self.field}[{self.index}]"
        return f"{where}: {self.message}"


class RecurrenceError(ValueError):
    """A series that cannot be read; ``problems`` lists every problem found (at least one)."""

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class Rule:
    """One RRULE: ``parts`` as written (name, value) in order, and the values read from them.
    ``until`` is a date for all-day series, an aware UTC datetime otherwise."""

    parts: tuple[tuple[str, str], ...]
    freq: str
    interval: int = 1
    count: int | None = None
    until: date | datetime | None = None
    byday: tuple[tuple[int, int], ...] = ()       # (ordinal or 0, weekday 0=MO)
    bymonthday: tuple[int, ...] = ()
    bymonth: tuple[int, ...] = ()
    byyearday: tuple[int, ...] = ()
    byweekno: tuple[int, ...] = ()
    bysetpos: tuple[int, ...] = ()
    byhour: tuple[int, ...] = ()
    byminute: tuple[int, ...] = ()
    wkst: int = 0

    @property
    def bounded(self) -> bool:
        return self.count is not None or self.until is not None

    def text(self) -> str:
        """The rule as an ``RRULE:...`` line, its parts in the order written."""
        return "RRULE:" + ";".join(f"{k}={v}" for k, v in self.parts)

    def with_parts(self, **changes: str | None) -> "Rule":
        """A copy with parts replaced (value None removes the part; new parts go last)."""
        parts = [(k, changes[k] if k in changes else v) for k, v in self.parts]
        parts += [(k, v) for k, v in changes.items() if k not in dict(self.parts)]
        return _read_rule([(k, v) for k, v in parts if v is not None], None, [])


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
    wall-clock span from start to end applied to every occurrence (as the files store local times)."""

    start: datetime
    duration: timedelta
    tz: tzinfo
    all_day: bool
    rule: Rule | None
    exdates: frozenset[datetime]
    rdates: tuple[datetime, ...]
    exceptions: dict[datetime, dict]
    lines: tuple[str, ...]

    @property
    def end(self) -> datetime:
        return self.start + self.duration

    @cached_property
    def _engine(self) -> "_Engine":
        return _Engine(self)

    def is_occurrence(self, original_start: datetime) -> bool:
        """Whether ``original_start`` (naive local) starts an occurrence (EXDATEs excluded, the
        horizon ignored)."""
        original_start = _naive(original_start)
        if original_start in self.exdates:
            return False
        return original_start in self.rdates or self._engine.is_rule_instance(original_start)


# ---------------------------------------------------------------------------------------------
# reading


def parse_recurrence(lines, exceptions, start, end, tz: tzinfo, all_day: bool) -> Series:
    """The series described by the ``recurrence`` lines and ``exceptions`` map of an event whose
    first occurrence runs from ``start`` to ``end`` (stored local strings ``YYYY-MM-DD HH:MM:SS``
    or naive datetimes) in ``tz`` (a tzinfo, see ``dates.zone``).

    Raises RecurrenceError naming every problem: its ``problems`` carry the index in ``lines`` or
    the exception key, so a caller can point at the file line.
    """
    problems: list[Problem] = []
    first, last = _read_bound(start, "start_date", problems), _read_bound(end, "end_date", problems)
    if all_day and first is not None:
        first = datetime.combine(first.date(), time())
    if first is not None and last is not None and last < first:
        problems.append(Problem("end_date", None, "the end is before the start"))
    if first is not None:
        if first.second:
            problems.append(Problem("start_date", None, "a recurring event starts on a whole minute "
                                                        "(occurrence ids count minutes)"))
        if not EPOCH <= first <= LAST_ORIGINAL_START:
            problems.append(Problem("start_date", None, "a recurring event starts between 1970 and 2097 "
                                                        "(occurrence ids count minutes since 1970)"))
    if not isinstance(lines, (list, tuple)) or not lines:
        problems.append(Problem("recurrence", None, "must be a non-empty list of RFC 5545 lines "
                                                    "(RRULE, EXDATE, RDATE)"))
        lines = []
    rule, exdates, rdates = None, set(), set()
    for i, line in enumerate(lines):
        if not isinstance(line, str):
            problems.append(Problem("recurrence", i, "must be a text line such as RRULE:FREQ=WEEKLY"))
            continue
        match = _LINE.match(line.strip())
        if not match:
            problems.append(Problem("recurrence", i, "not an RFC 5545 line (NAME;PARAMS:VALUE)"))
            continue
        name, params, value = match.group(1).upper(), match.group(2), match.group(3).strip()
        if name == "RRULE":
            if params:
                problems.append(Problem("recurrence", i, "RRULE takes no parameters"))
            elif rule is not None:
                problems.append(Problem("recurrence", i, "a series has one RRULE (RFC 5545 advises against "
                                                         "several); repeat with RDATE or a second event"))
            else:
                rule = _read_rule(_split_parts(value, i, problems), i, problems, all_day)
        elif name in ("EXDATE", "RDATE"):
            values = _read_dates(name, params, value, i, problems, tz, all_day)
            (exdates if name == "EXDATE" else rdates).update(values)
        elif name == "EXRULE":
            problems.append(Problem("recurrence", i, "EXRULE is deprecated by RFC 5545 (and unsupported by "
                                                     "most clients): list the dates with EXDATE"))
        else:
            problems.append(Problem("recurrence", i, f"unknown property {name} (expected RRULE, EXDATE or RDATE)"))
    if lines and rule is None and not rdates and not any(p.field == "recurrence" for p in problems):
        problems.append(Problem("recurrence", None, "needs an RRULE or an RDATE"))
    if first is None or last is None or problems:
        _read_exceptions(exceptions, all_day, problems, None)
        raise RecurrenceError(problems or [Problem("recurrence", None, "unreadable")])
    series = Series(start=first, duration=last - first, tz=tz, all_day=bool(all_day), rule=rule,
                    exdates=frozenset(exdates), rdates=tuple(sorted(rdates)), exceptions={},
                    lines=tuple(line.strip() for line in lines))
    engine = series._engine
    if rule is not None and not engine.is_rule_instance(first):
        problems.append(Problem("start_date", None, "the first occurrence must match the RRULE "
                                                    "(RFC 5545: DTSTART should be synchronized with the rule)"))
    for i, line in enumerate(series.lines):
        if line.upper().startswith("EXDATE"):
            for moment in _read_dates("EXDATE", _LINE.match(line).group(2), _LINE.match(line).group(3).strip(),
                                      i, [], tz, all_day):
                if moment not in rdates and not engine.is_rule_instance(moment):
                    problems.append(Problem("recurrence", i, f"EXDATE {_show(moment, all_day)} is not an "
                                                             "occurrence of the series"))
        elif line.upper().startswith("RDATE"):
            for moment in _read_dates("RDATE", _LINE.match(line).group(2), _LINE.match(line).group(3).strip(),
                                      i, [], tz, all_day):
                if not EPOCH <= moment <= LAST_ORIGINAL_START:
                    problems.append(Problem("recurrence", i, f"RDATE {_show(moment, all_day)} is outside "
                                                             "1970-2097 (occurrence ids count minutes since 1970)"))
    read = _read_exceptions(exceptions, all_day, problems, series)
    if problems:
        raise RecurrenceError(problems)
    object.__setattr__(series, "exceptions", read)
    return series


def recurrence_problems(lines, exceptions, start, end, tz: tzinfo, all_day: bool) -> list[Problem]:
    """The problems ``parse_recurrence`` would raise, as a list (empty when the series is fine)."""
    try:
        parse_recurrence(lines, exceptions, start, end, tz, all_day)
    except RecurrenceError as exc:
        return exc.problems
    return []


def _read_bound(value, name: str, problems: list[Problem]) -> datetime | None:
    try:
        return _naive(value) if isinstance(value, datetime) else dates.read_local(str(value), UTC).replace(tzinfo=None)
    except (TypeError, ValueError):
        problems.append(Problem(name, None, "must be a local time YYYY-MM-DD HH:MM:SS"))
        return None


def _split_parts(value: str, index: int, problems: list[Problem]) -> list[tuple[str, str]]:
    parts = []
    for chunk in value.split(";"):
        name, eq, part = chunk.partition("=")
        if not eq or not name.strip():
            problems.append(Problem("recurrence", index, f"bad RRULE part {chunk!r} (expected NAME=VALUE)"))
            continue
        parts.append((name.strip().upper(), part.strip().upper()))
    return parts


_NUMBER_PARTS = {  # part -> (attribute, lowest absolute value, highest, may be negative)
    "BYMONTHDAY": ("bymonthday", 1, 31, True), "BYMONTH": ("bymonth", 1, 12, False),
    "BYYEARDAY": ("byyearday", 1, 366, True), "BYWEEKNO": ("byweekno", 1, 53, True),
    "BYSETPOS": ("bysetpos", 1, 366, True), "BYHOUR": ("byhour", 0, 23, False),
    "BYMINUTE": ("byminute", 0, 59, False),
}


def _read_rule(parts, index, problems: list[Problem], all_day: bool | None = None) -> Rule | None:
    """A Rule from (name, value) parts, or None with problems added (``all_day`` None: the
    value type of UNTIL is not checked, for rules this module rewrites itself)."""
    def bad(message: str) -> None:
        problems.append(Problem("recurrence", index, message))

    found: dict[str, object] = {}
    seen = set()
    for name, value in parts:
        if name in seen:
            bad(f"RRULE part {name} appears twice")
            continue
        seen.add(name)
        if name == "FREQ":
            if value in ("SECONDLY", "MINUTELY"):
                bad(f"FREQ={value} is refused: occurrence ids have minute resolution and a sub-hourly "
                    "series would flood every list; use HOURLY or slower")
            elif value not in FREQS:
                bad(f"FREQ={value} is not a frequency (YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY)")
            else:
                found["freq"] = value
        elif name in ("INTERVAL", "COUNT"):
            if not value.isdigit() or not 1 <= int(value) <= 100_000:
                bad(f"{name}={value} must be a whole number from 1 to 100000")
            else:
                found[name.lower()] = int(value)
        elif name == "UNTIL":
            until = _read_until(value, all_day, bad)
            if until is not None:
                found["until"] = until
        elif name == "BYDAY":
            days = []
            for item in value.split(","):
                match = _BYDAY.match(item)
                if not match or (match.group(2) and not 1 <= int(match.group(2)) <= 53) \
                        or (match.group(1) and not match.group(2)):
                    bad(f"BYDAY value {item!r} is not a weekday (MO..SU, with an optional ordinal such as 2TU or -1FR)")
                    continue
                n = int(match.group(2) or 0) * (-1 if match.group(1) == "-" else 1)
                days.append((n, WEEKDAYS.index(match.group(3))))
            found["byday"] = tuple(days)
        elif name == "WKST":
            if value not in WEEKDAYS:
                bad(f"WKST={value} is not a weekday (MO..SU)")
            else:
                found["wkst"] = WEEKDAYS.index(value)
        elif name in _NUMBER_PARTS:
            attr, low, high, signed = _NUMBER_PARTS[name]
            numbers = []
            for item in value.split(","):
                ok = _INT.match(item) and low <= abs(int(item)) <= high and (signed or not item.startswith("-"))
                if not ok or (signed and int(item) == 0):
                    sign = "±" if signed else ""
                    bad(f"{name} value {item!r} must be {sign}{low}..{high}")
                    continue
                numbers.append(int(item))
            found[attr] = tuple(numbers)
        elif name == "BYSECOND":
            bad("BYSECOND is refused: occurrences start on whole minutes (occurrence ids count minutes)")
        else:
            bad(f"unknown RRULE part {name}")
    freq = found.get("freq")
    if "FREQ" not in seen:
        bad("RRULE needs FREQ")
    if "count" in found and "until" in found:
        bad("COUNT and UNTIL may not both be given (RFC 5545 section 3.3.10)")
    if freq:
        ordinals = any(n for n, _ in found.get("byday", ()))
        if ordinals and freq not in ("MONTHLY", "YEARLY"):
            bad(f"BYDAY ordinals such as 2TU need FREQ=MONTHLY or YEARLY, not {freq}")
        if ordinals and freq == "YEARLY" and found.get("byweekno"):
            bad("BYDAY ordinals may not be combined with BYWEEKNO")
        if ordinals and freq == "MONTHLY" and any(abs(n) > 5 for n, _ in found["byday"]):
            bad("in a MONTHLY rule a BYDAY ordinal is at most 5")
        if found.get("bymonthday") and freq == "WEEKLY":
            bad("BYMONTHDAY may not be used with FREQ=WEEKLY")
        if found.get("byyearday") and freq in ("DAILY", "WEEKLY", "MONTHLY"):
            bad(f"BYYEARDAY may not be used with FREQ={freq}")
        if found.get("byweekno") and freq != "YEARLY":
            bad("BYWEEKNO needs FREQ=YEARLY")
    if found.get("bysetpos") and not any(k in found for k in ("byday", "bymonthday", "bymonth", "byyearday",
                                                             "byweekno", "byhour", "byminute")):
        bad("BYSETPOS needs another BYxxx part")
    if not freq or any(p.index == index and p.field == "recurrence" for p in problems):
        return None
    return Rule(parts=tuple(parts), **found)


def _read_until(value: str, all_day: bool | None, bad) -> date | datetime | None:
    day, moment = _DATE.match(value), _DATETIME.match(value)
    try:
        if day:
            if all_day is False:
                bad(f"UNTIL={value} must be a UTC date-time such as 20270630T170000Z, as DTSTART has a time "
                    "(RFC 5545 section 3.3.10)")
                return None
            return date(*map(int, day.groups()))
        if moment:
            if all_day:
                bad(f"UNTIL={value} must be a date such as 20270630, as the event is all-day (RFC 5545 section 3.3.10)")
                return None
            if not moment.group(7):
                bad(f"UNTIL={value} must be in UTC, ending in Z (RFC 5545 section 3.3.10)")
                return None
            return datetime(*map(int, moment.groups()[:6]), tzinfo=UTC)
    except ValueError:
        pass
    bad(f"UNTIL={value} is not a date (YYYYMMDD) or UTC date-time (YYYYMMDDTHHMMSSZ)")
    return None


def _read_dates(name, params, value, index, problems, tz: tzinfo, all_day: bool) -> list[datetime]:
    """The naive local times of an EXDATE/RDATE line's values (comma-separated)."""
    def bad(message):
        problems.append(Problem("recurrence", index, message))
        return []

    zone, kind = None, "DATE-TIME"
    for param in filter(None, params.split(";")):
        key, eq, val = param.partition("=")
        key = key.strip().upper()
        if key == "TZID":
            try:
                zone = dates.zone(val.strip().strip('"'), UTC)
            except ValueError:
                return bad(f"unknown TZID {val!r}")
        elif key == "VALUE":
            kind = val.strip().upper()
            if kind == "PERIOD":
                return bad(f"{name};VALUE=PERIOD is not supported: give start times (the event's duration applies)")
            if kind not in ("DATE", "DATE-TIME"):
                return bad(f"{name};VALUE={kind} is not DATE or DATE-TIME")
        else:
            return bad(f"unknown {name} parameter {key}")
    if all_day and kind != "DATE":
        return bad(f"an all-day series lists dates: {name};VALUE=DATE:20261229")
    if not all_day and kind == "DATE":
        return bad(f"the series has times: {name};TZID=Zone/Name:20261229T190000 or {name}:20261229T180000Z")
    found = []
    for item in value.split(","):
        item = item.strip()
        try:
            if kind == "DATE":
                match = _DATE.match(item)
                if not match:
                    raise ValueError
                found.append(datetime(*map(int, match.groups())))
                continue
            match = _DATETIME.match(item)
            if not match:
                raise ValueError
            local = datetime(*map(int, match.groups()[:6]))
        except ValueError:
            bad(f"{name} value {item!r} is not a " + ("date YYYYMMDD" if kind == "DATE" else
                                                       "date-time YYYYMMDDTHHMMSS (Z for UTC)"))
            continue
        if match.group(7):
            if zone is not None:
                bad(f"{name} value {item!r} ends in Z but the line names a TZID")
                continue
            local = local.replace(tzinfo=UTC).astimezone(tz).replace(tzinfo=None)
        elif zone is not None and zone is not tz:
            local = local.replace(tzinfo=zone).astimezone(tz).replace(tzinfo=None)
        found.append(local)   # without TZID or Z: the series' own zone
    return found


def _read_exceptions(exceptions, all_day: bool, problems: list[Problem], series: Series | None) -> dict:
    if exceptions is None or exceptions == {}:
        return {}
    if not isinstance(exceptions, Mapping):
        problems.append(Problem("exceptions", None, "must be a map from an occurrence's original start to its changes"))
        return {}
    read: dict[datetime, dict] = {}
    for raw_key, changes in exceptions.items():
        label = str(raw_key)
        key = _read_key(raw_key, all_day)
        if key is None:
            form = "YYYY-MM-DD" if all_day else "YYYY-MM-DD HH:MM:SS"
            problems.append(Problem("exceptions", label, f"the key must be an occurrence's original start ({form})"))
            continue
        if not isinstance(changes, Mapping) or not changes:
            problems.append(Problem("exceptions", label, "must map field names to the occurrence's values"))
            continue
        overrides = {}
        for name, value in changes.items():
            if name == "cancelled":
                problems.append(Problem("exceptions", label, "to remove an occurrence add an EXDATE line "
                                                             "to recurrence instead of cancelled"))
            elif name in SERIES_ONLY:
                problems.append(Problem("exceptions", label, f"{name} belongs to the whole series"))
            elif name not in OVERRIDABLE:
                problems.append(Problem("exceptions", label, f"unknown event field {name}"))
            elif name in ("start_date", "end_date"):
                text = _override_time(value, name, all_day)
                if text is None:
                    form = "YYYY-MM-DD" if all_day else "YYYY-MM-DD HH:MM:SS"
                    problems.append(Problem("exceptions", label, f"{name} must be a local time {form}"))
                else:
                    overrides[name] = text
            else:
                overrides[name] = value
        if "start_date" in overrides and "end_date" in overrides and overrides["end_date"] < overrides["start_date"]:
            problems.append(Problem("exceptions", label, "end_date is before start_date"))
        if series is not None:
            if key in series.exdates:
                problems.append(Problem("exceptions", label, "this occurrence is removed by an EXDATE"))
            elif not series.is_occurrence(key):
                problems.append(Problem("exceptions", label, "not an occurrence of the series"))
        if key in read:
            problems.append(Problem("exceptions", label, "the same occurrence is listed twice"))
        read[key] = overrides
    return read


def _read_key(raw, all_day: bool) -> datetime | None:
    if isinstance(raw, datetime):
        raw = dates.normalize_stored(raw)
    elif isinstance(raw, date):
        raw = raw.isoformat()
    text = str(raw).strip()
    try:
        if _KEY_DAY.match(text):
            return datetime.fromisoformat(text) if all_day else None
        moment = dates.read_local(text, UTC).replace(tzinfo=None)
    except ValueError:
        return None
    if all_day and moment.time() != time():
        return None
    return moment


def _override_time(value, name: str, all_day: bool) -> str | None:
    value = dates.normalize_stored(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if all_day and _KEY_DAY.match(text):
        text += " 00:00:00" if name == "start_date" else " 23:59:59"
    try:
        dates.read_local(text, UTC)
    except ValueError:
        return None
    return text


# ---------------------------------------------------------------------------------------------
# expansion


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
    bounds = [None if b is None else _utc_naive(b) for b in
              (window_start, window_end, starts_after, starts_before, ends_after, ends_before)]
    ws, we, sa, sb, ea, eb = bounds
    lo = max(_utc_naive(b) for b in lows) if lows else None
    if ea is not None:
        lo = ea - duration if lo is None else max(lo, ea - duration)
    hi = min(_utc_naive(b) for b in highs) if highs else None
    horizon = None if horizon_end is None else _utc_naive(horizon_end)
    rule_hi = hi if horizon is None else (horizon if hi is None else min(hi, horizon))
    slack = timedelta(days=1)   # local times differ from UTC by less than a day
    gen_lo = None if lo is None else lo - slack
    originals = series._engine.rule_instances(gen_lo, None if rule_hi is None else rule_hi + slack)
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
    found = [new(Occurrence, (o, o - offset(o), e - offset(e), tz, empty))
             for o in originals for e in (o + duration,)]
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
        start, end = _moved(series, original, overrides)
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


def _utc_naive(moment: datetime) -> datetime:
    """An aware datetime as naive UTC (a naive one is taken as UTC already)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def occurrence_at(series: Series, original_start: datetime) -> Occurrence | None:
    """The occurrence whose original start is ``original_start`` (naive local), or None when the
    series has none there (the horizon is not applied)."""
    original = _naive(original_start)
    if not series.is_occurrence(original):
        return None
    overrides = series.exceptions.get(original, {})
    start, end = _moved(series, original, overrides)
    return Occurrence(original, start, end, series.tz, overrides)


def _moved(series: Series, original: datetime, overrides: Mapping) -> tuple[datetime, datetime]:
    """An occurrence's start and end (naive UTC) after its exception: a new start alone keeps the
    series' duration, a new end alone keeps the original start."""
    offset = series.tz.utcoffset
    start = original
    if "start_date" in overrides:
        start = dates.read_local(overrides["start_date"], UTC).replace(tzinfo=None)
    end = start + series.duration
    if "end_date" in overrides:
        end = dates.read_local(overrides["end_date"], UTC).replace(tzinfo=None)
    return start - offset(start), end - offset(end)


def _local(moment: datetime, tz: tzinfo) -> datetime:
    return moment.astimezone(tz).replace(tzinfo=None)


def _naive(moment) -> datetime:
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=None)
    if isinstance(moment, date):
        return datetime.combine(moment, time())
    raise TypeError("an original start is a datetime or a date")


class _Engine:
    """Generates a series' RRULE instances as naive local times, ascending.

    Daily and weekly rules with plain weekdays (most series) are arithmetic progressions,
    computed in bulk from any window on; the rest go through dateutil's rrule, which walks
    from the first occurrence. UNTIL is compared as an instant (a date for all-day series).
    """

    def __init__(self, series: Series):
        self.series = series
        rule = self.rule = series.rule
        if rule is None:
            return
        self.start = series.start
        self.until_local = None
        if isinstance(rule.until, datetime):
            self.until_utc = rule.until.replace(tzinfo=None)
            self.until_local = _local(rule.until, series.tz) + timedelta(days=1)
        elif isinstance(rule.until, date):
            self.until_local = datetime.combine(rule.until, time(23, 59, 59))
        simple_parts = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "WKST"}
        self.simple = (rule.freq in ("DAILY", "WEEKLY") and all(k in simple_parts for k, _ in rule.parts)
                       and not any(n for n, _ in rule.byday))
        if self.simple:
            days = sorted({d for _, d in rule.byday}) if rule.byday else [series.start.weekday()]
            self.days = frozenset(days)
            if rule.freq == "WEEKLY":
                week0 = series.start - timedelta(days=(series.start.weekday() - rule.wkst) % 7)
                self.bases = [week0 + timedelta(days=(d - rule.wkst) % 7) for d in days]
                self.step = 7 * rule.interval
            else:
                self.bases = [series.start]
                self.step = rule.interval

    @cached_property
    def _rrule(self) -> du.rrule:
        rule = self.rule
        return du.rrule(
            _DU_FREQ[rule.freq], dtstart=self.start, interval=rule.interval, wkst=rule.wkst, count=rule.count,
            until=self.until_local, bysetpos=rule.bysetpos or None, bymonth=rule.bymonth or None,
            bymonthday=rule.bymonthday or None, byyearday=rule.byyearday or None,
            byweekno=rule.byweekno or None,
            byweekday=[du.weekday(d, n or None) for n, d in rule.byday] or None,
            byhour=rule.byhour or None, byminute=rule.byminute or None, cache=True)

    def _within_until(self, local: datetime) -> bool:
        until = self.rule.until
        if until is None:
            return True
        if isinstance(until, datetime):
            return local - self.series.tz.utcoffset(local) <= self.until_utc
        return local.date() <= until

    def rule_instances(self, lo: datetime | None, hi: datetime | None) -> list[datetime]:
        """Instances with lo <= local time <= hi (None: unbounded), ascending; ``hi`` or a bound
        of the rule must end the rule."""
        if self.rule is None:
            return []
        limit = hi
        if self.until_local is not None and (limit is None or self.until_local < limit):
            limit = self.until_local
        if limit is None and self.rule.count is None:
            raise ValueError("an open-ended rule needs an upper bound")
        found = self._simple(lo, limit) if self.simple else self._general(lo, limit)
        if self.rule.until is not None and found and not self._within_until(found[-1]):
            found = [d for d in found if self._within_until(d)]    # only near UNTIL
        return found

    def _general(self, lo, limit) -> list[datetime]:
        source = self._rrule if (self.rule.count is not None or lo is None) else self._rrule.xafter(lo, inc=True)
        found = []
        for local in source:
            if limit is not None and local > limit:
                break
            if lo is None or local >= lo:
                found.append(local)
        return found

    def _simple(self, lo: datetime | None, limit: datetime | None) -> list[datetime]:
        rule, start, step = self.rule, self.start, self.step
        count = rule.count
        days = self.days if rule.freq == "DAILY" and rule.byday else None
        if count is not None:   # count from the start: enough periods for COUNT instances
            per_period = len(self.bases) if days is None else max(1, sum(1 for i in range(step) if
                                                                        (start + timedelta(days=i)).weekday() in days))
            first_k, last_k = 0, (count + 2 * per_period) // per_period + 1
            if days is not None:
                last_k = count * 7 + 1
        else:
            first_k = max(0, ((lo - start).days - 7) // step) if lo is not None else 0
            last_k = (limit - start).days // step + 2
        found = []
        for base in self.bases:
            found += accumulate(repeat(timedelta(days=step), last_k - first_k),
                                initial=base + timedelta(days=first_k * step))
        if len(self.bases) > 1:
            found.sort()
        if found and found[0] < start:
            found = [d for d in found if d >= start]
        if days is not None:
            found = [d for d in found if d.weekday() in days]
        if count is not None:
            found = found[:count]
        if lo is not None and found and found[0] < lo:
            found = found[bisect_left(found, lo):]
        if limit is not None and found and found[-1] > limit:
            found = found[:bisect_right(found, limit)]
        return found

    def is_rule_instance(self, local: datetime) -> bool:
        if self.rule is None:
            return False
        return bool(self.rule_instances(local, local))

    def last_instance_before(self, local: datetime) -> datetime | None:
        """The last RRULE instance strictly before ``local`` (for splitting a series)."""
        found = [d for d in self.rule_instances(None, local) if d < local]
        return found[-1] if found else None

    def count_before(self, local: datetime) -> int:
        """How many RRULE instances (EXDATEs included, as COUNT counts them) start before ``local``."""
        return sum(1 for d in self.rule_instances(None, local) if d < local)


# ---------------------------------------------------------------------------------------------
# ids


def occurrence_id(series_id: int, original_start: datetime | date) -> int:
    """The stable id of the occurrence of series ``series_id`` originally starting at
    ``original_start`` (naive local wall-clock time; a date for all-day series).

    Raises ValueError outside the id's range: series ids 1..2**26-1, starts from 1970-01-01 00:00 to
    2097-08-06 (minutes since 1970 in 26 bits); seconds are ignored.
    """
    original = _naive(original_start)
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
    original = _naive(original_start)
    return series_id if original == series.start else occurrence_id(series_id, original)


# ---------------------------------------------------------------------------------------------
# writing: this occurrence, this and the following ones, all of them


def apply_this(series: Series, original_start: datetime, changes: Mapping | None = None,
               delete: bool = False) -> dict:
    """Front-matter values (``recurrence``, ``exceptions``; None = remove the key) that change or,
    with ``delete``, remove the one occurrence originally starting at ``original_start``.

    ``changes`` are event fields for that occurrence (a value of None drops an override). A
    removed occurrence becomes an EXDATE (an RDATE is struck instead) and loses its exception.
    Raises ValueError when the series has no such occurrence or a change may not be made to one.
    """
    original = _require_occurrence(series, original_start)
    exceptions = dict(series.exceptions)
    lines = list(series.lines)
    if delete:
        exceptions.pop(original, None)
        if original in series.rdates and not series._engine.is_rule_instance(original):
            lines = _date_lines(series, [l for l in lines if _kind(l) != "RDATE"],
                                exdates=None, rdates=[d for d in series.rdates if d != original])
        else:
            lines = _add_exdate(series, lines, original)
    else:
        overrides = dict(exceptions.get(original, {}))
        for name, value in _check_changes(series, changes or {}).items():
            if value is None:
                overrides.pop(name, None)
            else:
                overrides[name] = value
        if overrides:
            exceptions[original] = overrides
        else:
            exceptions.pop(original, None)
    return {"recurrence": lines, "exceptions": _write_exceptions(series, exceptions)}


def apply_following(series: Series, original_start: datetime, changes: Mapping | None = None,
                    delete: bool = False) -> tuple[dict, dict | None]:
    """Splits the series at the occurrence originally starting at ``original_start``.

    Returns (values for the series' own file, values for a new series file or None with
    ``delete``). The old rule ends just before the split (UNTIL in the value type of its DTSTART;
    COUNT becomes UNTIL); the new series starts at the split occurrence (moved by the wall-clock
    shift ``changes`` give its start) with the rest of the count or the old UNTIL (shifted too).
    EXDATEs, RDATEs and exceptions go to the side of the split they belong to. The new values hold
    ``start_date``, ``end_date``, ``recurrence``, ``exceptions`` and the other changed fields; a
    new ``recurrence`` in ``changes`` replaces the new series' rule lines (exceptions and EXDATEs
    that are no occurrences of it are dropped).
    Raises ValueError for the first occurrence (that is the whole series: use ``apply_all``).
    """
    original = _require_occurrence(series, original_start)
    if original <= series.start:
        raise ValueError("the first occurrence starts the series: change all occurrences instead")
    engine = series._engine
    if series.rule is not None and not engine.is_rule_instance(original):
        raise ValueError("a series splits at an occurrence of its rule, not at an added date (RDATE)")
    rule = series.rule
    old_rule = new_rule = None
    if rule is not None:
        last = engine.last_instance_before(original)
        if series.all_day:
            until_value = (original.date() - timedelta(days=1)).strftime("%Y%m%d")
        else:
            until_value = (original.replace(tzinfo=series.tz).astimezone(UTC) - timedelta(seconds=1)
                           ).strftime("%Y%m%dT%H%M%SZ")
        old_rule = rule.with_parts(COUNT=None, UNTIL=until_value) if last is not None else None
        new_rule = rule
        if rule.count is not None:
            remaining = rule.count - engine.count_before(original)
            new_rule = rule.with_parts(COUNT=str(max(remaining, 1)))
    before = {"exdates": [d for d in series.exdates if d < original],
              "rdates": [d for d in series.rdates if d < original],
              "exceptions": {k: v for k, v in series.exceptions.items() if k < original}}
    old_lines = _rebuild(series, old_rule, before["exdates"], before["rdates"])
    old_values = {"recurrence": old_lines or None, "exceptions": _write_exceptions(series, before["exceptions"])}
    if not old_lines:   # nothing repeats before the split: the old event is its first occurrence alone
        old_values["exceptions"] = None
    if delete:
        return old_values, None
    changes = dict(changes or {})
    new_start, new_end, shift = _shifted_bounds(series, original, changes)
    after_ex = [d + shift for d in series.exdates if d >= original]
    after_rd = [d + shift for d in series.rdates if d >= original]
    after_exc = {k + shift: v for k, v in series.exceptions.items() if k >= original}
    if new_rule is not None and new_rule.until is not None and shift:
        new_rule = new_rule.with_parts(UNTIL=_shift_until(series, new_rule.until, shift))
    values = {k: v for k, v in _check_changes(series, changes, whole=True).items()
              if k not in ("start_date", "end_date", "recurrence")}
    lines = _rebuild(series, new_rule, after_ex, after_rd)
    if "recurrence" in changes:
        lines = [str(l) for l in changes["recurrence"] if _kind(str(l)) == "RRULE"] + \
            [l for l in lines if _kind(l) != "RRULE"]
    new_values = {**values, "start_date": dates.fmt(new_start), "end_date": dates.fmt(new_end)}
    new_values.update(_consistent(series, lines, after_exc, new_start, new_end))
    return old_values, new_values


def apply_all(series: Series, original_start: datetime | None = None, changes: Mapping | None = None) -> dict:
    """Front-matter values changing every occurrence: the other changed fields as given, and, when
    ``changes`` move the start or end of the occurrence originally at ``original_start`` (the first
    one when None), the series' ``start_date``/``end_date`` shifted by the same wall-clock amount,
    with its EXDATEs, RDATEs, exception keys and UNTIL shifted alike. A new ``recurrence`` replaces
    the rule lines (EXDATEs and exceptions that are no occurrences of it are dropped).
    """
    original = series.start if original_start is None else _require_occurrence(series, original_start)
    changes = dict(changes or {})
    new_start, new_end, shift = _shifted_bounds(series, original, changes)
    new_start, new_end = series.start + shift, series.start + shift + (new_end - new_start)
    rule = series.rule
    if rule is not None and rule.until is not None and shift:
        rule = rule.with_parts(UNTIL=_shift_until(series, rule.until, shift))
    lines = _rebuild(series, rule, [d + shift for d in series.exdates], [d + shift for d in series.rdates])
    if "recurrence" in changes:
        lines = [str(l) for l in changes["recurrence"] if _kind(str(l)) == "RRULE"] + \
            [l for l in lines if _kind(l) != "RRULE"]
    elif not shift:
        lines = list(series.lines)    # untouched: keep the lines as written
    exceptions = {k + shift: v for k, v in series.exceptions.items()}
    values = {k: v for k, v in _check_changes(series, changes, whole=True).items()
              if k not in ("start_date", "end_date", "recurrence")}
    values.update({"start_date": dates.fmt(new_start), "end_date": dates.fmt(new_end)})
    values.update(_consistent(series, lines, exceptions, new_start, new_end))
    return values


def _require_occurrence(series: Series, original_start) -> datetime:
    original = _naive(original_start)
    if not series.is_occurrence(original):
        raise ValueError(f"{_show(original, series.all_day)} is not an occurrence of the series")
    return original


def _check_changes(series: Series, changes: Mapping, whole: bool = False) -> dict:
    """``changes`` checked: fields of one occurrence (``OVERRIDABLE``), or with ``whole`` any
    field but those that would need the series rewritten (its zone, all-day flag, id, exceptions).
    Times are normalized. Raises ValueError naming the field."""
    out = {}
    refused = {"id", "timezone", "all_day", "exceptions"} if whole else SERIES_ONLY - {"recurrence"}
    for name, value in changes.items():
        if name in refused:
            raise ValueError(f"{name} belongs to the whole series" if not whole else
                             f"{name} cannot be changed together with the occurrences' times")
        if name not in OVERRIDABLE and name != "recurrence" and not whole:
            raise ValueError(f"unknown event field {name}")
        if name in ("start_date", "end_date") and value is not None:
            text = _override_time(value, name, series.all_day)
            if text is None:
                raise ValueError(f"{name} must be a local time YYYY-MM-DD HH:MM:SS")
            value = text
        out[name] = value
    return out


def _shifted_bounds(series: Series, original: datetime, changes: Mapping) -> tuple[datetime, datetime, timedelta]:
    """The new start and end of the occurrence at ``original`` and the wall-clock shift of its start."""
    start = original
    if changes.get("start_date") is not None:
        start = dates.read_local(_override_time(changes["start_date"], "start_date", series.all_day),
                                 UTC).replace(tzinfo=None)
    end = start + series.duration
    if changes.get("end_date") is not None:
        end = dates.read_local(_override_time(changes["end_date"], "end_date", series.all_day),
                               UTC).replace(tzinfo=None)
    if end < start:
        raise ValueError("the end is before the start")
    shift = start - original
    if series.all_day and shift % timedelta(days=1):
        raise ValueError("an all-day series moves by whole days")
    return start, end, shift


def _shift_until(series: Series, until, shift: timedelta) -> str:
    if isinstance(until, datetime):
        local = _local(until, series.tz) + shift
        return local.replace(tzinfo=series.tz).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return (until + shift).strftime("%Y%m%d")


def _consistent(series: Series, lines: list[str], exceptions: dict, start: datetime, end: datetime) -> dict:
    """``recurrence``/``exceptions`` values for a series at ``start``, keeping only the EXDATEs
    and exceptions that are occurrences of its rule. Raises RecurrenceError for bad lines."""
    problems: list[Problem] = []
    try:
        probe = parse_recurrence(lines, None, dates.fmt(start), dates.fmt(end), series.tz, series.all_day)
    except RecurrenceError as exc:
        stray = [p for p in exc.problems if p.field == "recurrence" and "EXDATE" in p.message
                 and "not an occurrence" in p.message]
        if len(stray) != len(exc.problems):
            raise
        probe = None
        problems = stray
    if problems:   # drop EXDATE values that no longer match
        keep_rule = [l for l in lines if _kind(l) != "EXDATE"]
        base = parse_recurrence(keep_rule, None, dates.fmt(start), dates.fmt(end), series.tz, series.all_day) \
            if any(_kind(l) == "RRULE" or _kind(l) == "RDATE" for l in keep_rule) else None
        exdates = set()
        for line in lines:
            if _kind(line) == "EXDATE":
                m = _LINE.match(line)
                exdates.update(_read_dates("EXDATE", m.group(2), m.group(3).strip(), 0, [], series.tz, series.all_day))
        kept = [d for d in exdates if base is not None and base.is_occurrence(d)]
        lines = _rebuild(series, base.rule if base else None, kept, list(base.rdates) if base else [])
        probe = parse_recurrence(lines, None, dates.fmt(start), dates.fmt(end), series.tz, series.all_day)
    kept_exc = {k: v for k, v in exceptions.items() if probe.is_occurrence(k)}
    return {"recurrence": lines, "exceptions": _write_exceptions(series, kept_exc)}


def _kind(line: str) -> str:
    match = _LINE.match(line.strip())
    return match.group(1).upper() if match else ""


def _rebuild(series: Series, rule: Rule | None, exdates, rdates) -> list[str]:
    lines = [rule.text()] if rule is not None else []
    return _date_lines(series, lines, exdates, rdates)


def _date_lines(series: Series, lines: list[str], exdates, rdates) -> list[str]:
    """``lines`` plus EXDATE/RDATE lines for the values given (None: keep the existing lines of that kind)."""
    out = list(lines)
    for name, values in (("RDATE", rdates), ("EXDATE", exdates)):
        if values is None:
            out += [l for l in series.lines if _kind(l) == name and l not in out]
        elif values:
            out.append(_date_line(series, name, sorted(set(values))))
    return out


def _date_line(series: Series, name: str, values: list[datetime]) -> str:
    prefix, fmt = _date_form(series, name)
    return prefix + ",".join(fmt(v) for v in values)


def _date_form(series: Series, name: str):
    if series.all_day:
        return f"{name};VALUE=DATE:", lambda v: v.strftime("%Y%m%d")
    key = tzid(series.tz)
    if key is None:
        return f"{name}:", lambda v: v.replace(tzinfo=series.tz).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{name};TZID={key}:", lambda v: v.strftime("%Y%m%dT%H%M%S")


def _add_exdate(series: Series, lines: list[str], original: datetime) -> list[str]:
    prefix, fmt = _date_form(series, "EXDATE")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].upper().startswith(prefix.upper()):
            lines[i] = lines[i] + "," + fmt(original)
            return lines
    return lines + [prefix + fmt(original)]


def _write_exceptions(series: Series, exceptions: Mapping[datetime, dict]) -> dict | None:
    if not exceptions:
        return None
    return {_show(k, series.all_day): dict(v) for k, v in sorted(exceptions.items())}


def _show(moment: datetime, all_day: bool) -> str:
    return moment.strftime("%Y-%m-%d") if all_day else dates.fmt(moment)


# ---------------------------------------------------------------------------------------------
# iCalendar


def tzid(tz: tzinfo) -> str | None:
    """The TZID naming ``tz`` in iCalendar, or None when times are written in UTC (UTC itself).
    A fixed ``UTC+5`` offset keeps its name: the feed must carry a VTIMEZONE for it."""
    if isinstance(tz, ZoneInfo):
        return None if tz.key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu") else tz.key
    if tz.utcoffset(None) == timedelta(0):
        return None
    return tz.tzname(None)


@dataclass(frozen=True)
class IcalLines:
    """A series' properties for its VEVENT (content lines, ``NAME;PARAMS:VALUE``): ``dtstart``,
    ``dtend``, ``rrule`` (or None), ``exdate`` and ``rdate`` lines, and for each exception the
    ``RECURRENCE-ID`` line of its own VEVENT, by original start."""

    dtstart: str
    dtend: str
    rrule: str | None
    exdate: list[str] = field(default_factory=list)
    rdate: list[str] = field(default_factory=list)
    recurrence_ids: dict[datetime, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [self.dtstart, self.dtend] + ([self.rrule] if self.rrule else []) + self.rdate + self.exdate


def to_ical_lines(series: Series) -> IcalLines:
    """The RFC 5545 properties of ``series``: DTSTART/DTEND of the first occurrence (all-day: dates,
    DTEND the day after the last day), the RRULE as written, EXDATE/RDATE in the series' zone, and
    the RECURRENCE-ID of each exception."""
    def stamp(name: str, moment: datetime, end: bool = False) -> str:
        if series.all_day:
            day = moment.date() + (timedelta(days=1) if end else timedelta(0))
            return f"{name};VALUE=DATE:{day:%Y%m%d}"
        key = tzid(series.tz)
        if key is None:
            return f"{name}:{moment.replace(tzinfo=series.tz).astimezone(UTC):%Y%m%dT%H%M%SZ}"
        return f"{name};TZID={key}:{moment:%Y%m%dT%H%M%S}"

    end = series.end
    if series.all_day:
        end = datetime.combine(max(series.end.date(), series.start.date()), time())
    rrule = series.rule.text() if series.rule else None
    exdate = [_date_line(series, "EXDATE", sorted(series.exdates))] if series.exdates else []
    rdate = [_date_line(series, "RDATE", list(series.rdates))] if series.rdates else []
    return IcalLines(stamp("DTSTART", series.start), stamp("DTEND", end, end=True), rrule, exdate, rdate,
                     {k: stamp("RECURRENCE-ID", k) for k in sorted(series.exceptions)})


_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
             "fifth": 5, "5th": 5, "last": -1, "second-last": -2}
_DAY_WORDS = {name: i for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday",
                                                 "saturday", "sunday"))}
_UNIT_FREQ = {"day": "DAILY", "week": "WEEKLY", "month": "MONTHLY", "year": "YEARLY"}
_ADVERBS = {"daily": "DAILY", "weekly": "WEEKLY", "monthly": "MONTHLY", "yearly": "YEARLY", "annually": "YEARLY"}


def parse_repeat_phrase(text: str, start: datetime | None = None, tz: tzinfo = UTC, all_day: bool = False) -> list[str]:
    """The ``recurrence`` lines for a phrase of the command line (``new event --repeat``):

        every [N] day(s)|week(s)|month(s)|year(s)    daily, weekly, monthly, yearly
        every <weekday>[, <weekday>...]              every weekday (Monday to Friday)
        [every [N] month(s)] on the <ordinal> <weekday> [of the month]
                                                     ordinal: first..fifth, 1st..5th, last, second-last
        ... until YYYY-MM-DD                         (inclusive: the whole local day)
        ... N times

    or a raw rule (``RRULE:FREQ=...`` or ``FREQ=...``). ``start`` (naive local), ``tz`` and
    ``all_day`` describe the event, for UNTIL's value. Raises ValueError naming what was not understood.
    """
    phrase = " ".join(str(text).strip().split())
    if re.match(r"(RRULE:)?FREQ=", phrase, re.I):
        rule = phrase if phrase.upper().startswith("RRULE:") else "RRULE:" + phrase
        problems: list[Problem] = []
        _read_rule(_split_parts(rule[6:], 0, problems), 0, problems, all_day)
        if problems:
            raise ValueError("; ".join(p.message for p in problems))
        return ["RRULE:" + rule[6:].upper()]
    words = phrase.lower().replace(",", " , ").split()
    parts: list[tuple[str, str]] = []
    tail: list[tuple[str, str]] = []
    i = 0

    def fail(message: str):
        raise ValueError(f"cannot read the repeat phrase {text!r}: {message}")

    # trailing "until DATE" / "N times"
    while len(words) >= 2:
        if words[-2] == "until":
            try:
                day = date.fromisoformat(words[-1])
            except ValueError:
                fail(f"{words[-1]!r} is not a date YYYY-MM-DD")
            if all_day:
                tail.append(("UNTIL", day.strftime("%Y%m%d")))
            else:
                last = datetime.combine(day, time(23, 59, 59)).replace(tzinfo=tz).astimezone(UTC)
                tail.append(("UNTIL", last.strftime("%Y%m%dT%H%M%SZ")))
            words = words[:-2]
        elif words[-1] in ("times", "time") and words[-2].isdigit():
            tail.append(("COUNT", str(int(words[-2]))))
            words = words[:-2]
        else:
            break
    if any(k == "UNTIL" for k, _ in tail) and any(k == "COUNT" for k, _ in tail):
        fail("give an end date or a number of times, not both")
    if not words:
        fail("say how often, e.g. 'every tuesday'")
    if words[0] in _ADVERBS and len(words) == 1:
        parts.append(("FREQ", _ADVERBS[words[0]]))
        words = []
    elif words[0] == "every":
        i = 1
        interval = 1
        if i < len(words) and words[i].isdigit():
            interval = int(words[i])
            i += 1
        elif i < len(words) and words[i] == "other":
            interval = 2
            i += 1
        unit = words[i].rstrip("s") if i < len(words) else ""
        if unit in _UNIT_FREQ:
            parts.append(("FREQ", _UNIT_FREQ[unit]))
            i += 1
        elif i < len(words) and (words[i] in ("weekday", "weekdays")):
            parts += [("FREQ", "WEEKLY"), ("BYDAY", "MO,TU,WE,TH,FR")]
            i += 1
        elif i < len(words) and words[i].rstrip("s") in _DAY_WORDS:
            days = []
            while i < len(words) and (words[i].rstrip("s") in _DAY_WORDS or words[i] in (",", "and")):
                if words[i] not in (",", "and"):
                    days.append(WEEKDAYS[_DAY_WORDS[words[i].rstrip("s")]])
                i += 1
            parts += [("FREQ", "WEEKLY"), ("BYDAY", ",".join(days))]
        else:
            fail("expected day(s), week(s), month(s), year(s) or a weekday after 'every'")
        if interval != 1:
            parts.insert(1, ("INTERVAL", str(interval)))
        words = words[i:]
    if words and words[0] == "on":
        if not (len(words) >= 4 and words[1] == "the" and words[2] in _ORDINALS and words[3] in _DAY_WORDS):
            fail("expected 'on the <first..fifth|last> <weekday>'")
        ordinal, day = _ORDINALS[words[2]], WEEKDAYS[_DAY_WORDS[words[3]]]
        if parts and parts[0][1] != "MONTHLY":
            fail("'on the <ordinal> <weekday>' repeats monthly")
        if not parts:
            parts.append(("FREQ", "MONTHLY"))
        parts.append(("BYDAY", f"{ordinal}{day}"))
        words = words[4:]
        if words[:3] == ["of", "the", "month"]:
            words = words[3:]
    if words:
        fail(f"did not understand {' '.join(words)!r}")
    if not parts:
        fail("say how often, e.g. 'every tuesday'")
    return ["RRULE:" + ";".join(f"{k}={v}" for k, v in parts + tail)]

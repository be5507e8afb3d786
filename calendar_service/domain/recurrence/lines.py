"""The ``recurrence`` lines of an event file: RFC 5545 RRULE, EXDATE and RDATE lines read into
values (with a SeriesProblem naming the line index for anything wrong) and written back."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from calendar_service.domain import dates

if TYPE_CHECKING:
    from calendar_service.domain.recurrence.series import Series


UTC = timezone.utc
EPOCH = datetime(1970, 1, 1)
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
FREQS = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY")
# NAME;PARAM=VALUE...:VALUE; a parameter value holding ':' or ';' is quoted (TZID="UTC-3:30")
LINE = re.compile(r'([A-Za-z-]+)((?:;(?:"[^"]*"|[^:;"])*)*):(.*)\Z', re.S)
DATE_VALUE = re.compile(r"(\d{4})(\d{2})(\d{2})\Z")
DATETIME_VALUE = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)\Z")
_BYDAY = re.compile(r"([+-]?)(\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)\Z")
_INT = re.compile(r"[+-]?\d{1,3}\Z")


@dataclass(frozen=True)
class SeriesProblem:
    """One thing wrong with a series: ``field`` is the front-matter key (``recurrence``,
    ``exceptions``, ``start_date``...), ``index`` the position in the ``recurrence`` list or the
    exception's key as written (None for the field as a whole), ``message`` what is wrong."""

    field: str
    index: int | str | None
    message: str
    severity: str = "error"     # "warning": the series is served anyway (see Series.warnings)

    def __str__(self) -> str:
        where = self.field if self.index is None else f"{self.field}[{self.index}]"
        return f"{where}: {self.message}"


class RecurrenceError(ValueError):
    """A series that cannot be read; ``problems`` lists every problem found (at least one)."""

    def __init__(self, problems: list[SeriesProblem]):
        super().__init__("; ".join(str(p) for p in problems if p.severity == "error"))
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
        return read_rule([(k, v) for k, v in parts if v is not None], None, [])


def split_parts(value: str, index: int, problems: list[SeriesProblem]) -> list[tuple[str, str]]:
    parts = []
    for chunk in value.split(";"):
        name, eq, part = chunk.partition("=")
        if not eq or not name.strip():
            problems.append(SeriesProblem("recurrence", index, f"bad RRULE part {chunk!r} (expected NAME=VALUE)"))
            continue
        parts.append((name.strip().upper(), part.strip().upper()))
    return parts
_NUMBER_PARTS = {  # part -> (attribute, lowest absolute value, highest, may be negative)
    "BYMONTHDAY": ("bymonthday", 1, 31, True), "BYMONTH": ("bymonth", 1, 12, False),
    "BYYEARDAY": ("byyearday", 1, 366, True), "BYWEEKNO": ("byweekno", 1, 53, True),
    "BYSETPOS": ("bysetpos", 1, 366, True), "BYHOUR": ("byhour", 0, 23, False),
    "BYMINUTE": ("byminute", 0, 59, False),
}


def read_rule(parts, index, problems: list[SeriesProblem], all_day: bool | None = None) -> Rule | None:
    """A Rule from (name, value) parts, or None with problems added (``all_day`` None: the
    value type of UNTIL is not checked, for rules this module rewrites itself)."""
    def bad(message: str) -> None:
        problems.append(SeriesProblem("recurrence", index, message))

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
                    bad(f"BYDAY value {item!r} is not a weekday{_weekday_hint(item)} (two letters: MO TU WE TH FR "
                        "SA SU, with an optional ordinal such as 2TU or -1FR)")
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


def _weekday_hint(item: str) -> str:
    """``: write SU`` for a weekday written out (``SUNDAY``, ``-1FRIDAY``), else nothing."""
    letters = item.lstrip("+-0123456789")
    if len(letters) > 2 and letters[:2] in WEEKDAYS:
        return f": write {item[:len(item) - len(letters)]}{letters[:2]}"
    return ""


def _read_until(value: str, all_day: bool | None, bad) -> date | datetime | None:
    day, moment = DATE_VALUE.match(value), DATETIME_VALUE.match(value)
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


def read_dates(name, params, value, index, problems, tz: tzinfo, all_day: bool) -> list[datetime]:
    """The naive local times of an EXDATE/RDATE line's values (comma-separated)."""
    def bad(message):
        problems.append(SeriesProblem("recurrence", index, message))
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
                match = DATE_VALUE.match(item)
                if not match:
                    raise ValueError
                found.append(datetime(*map(int, match.groups())))
                continue
            match = DATETIME_VALUE.match(item)
            if not match:
                raise ValueError
            local = datetime(*map(int, match.groups()[:6]))
        except ValueError:
            bad(f"{name} value {item!r} is not a " + ("date YYYYMMDD" if kind == "DATE" else
                                                       "date-time YYYYMMDDTHHMMSS (Z for UTC)"))
            continue
        try:
            if match.group(7):
                if zone is not None:
                    bad(f"{name} value {item!r} ends in Z but the line names a TZID")
                    continue
                local = local.replace(tzinfo=UTC).astimezone(tz).replace(tzinfo=None)
            elif zone is not None and zone is not tz:
                local = local.replace(tzinfo=zone).astimezone(tz).replace(tzinfo=None)
        except (OverflowError, ValueError):
            bad(f"{name} value {item!r} is out of range in the series' time zone")
            continue
        found.append(local)   # without TZID or Z: the series' own zone
    return found


def line_kind(line: str) -> str:
    match = LINE.match(line.strip())
    return match.group(1).upper() if match else ""


def tzid(tz: tzinfo) -> str | None:
    """The TZID naming ``tz`` in iCalendar, or None when times are written in UTC (UTC itself).
    A fixed ``UTC+5`` offset keeps its name: the feed must carry a VTIMEZONE for it."""
    if isinstance(tz, ZoneInfo):
        return None if tz.key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu") else tz.key
    if tz.utcoffset(None) == timedelta(0):
        return None
    return tz.tzname(None)


def date_line(series: Series, name: str, values: list[datetime]) -> str:
    prefix, fmt = date_form(series, name)
    return prefix + ",".join(fmt(v) for v in values)


def date_form(series: Series, name: str):
    if series.all_day:
        return f"{name};VALUE=DATE:", lambda v: v.strftime("%Y%m%d")
    key = tzid(series.tz)
    if key is None:
        return f"{name}:", lambda v: v.replace(tzinfo=series.tz).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    if ":" in key or ";" in key:
        key = f'"{key}"'   # RFC 5545 section 3.2: such a parameter value is quoted
    return f"{name};TZID={key}:", lambda v: v.strftime("%Y%m%dT%H%M%S")


def show(moment: datetime, all_day: bool) -> str:
    return moment.strftime("%Y-%m-%d") if all_day else dates.fmt(moment)


def local_naive(moment: datetime, tz: tzinfo) -> datetime:
    return moment.astimezone(tz).replace(tzinfo=None)


def naive(moment) -> datetime:
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=None)
    if isinstance(moment, date):
        return datetime.combine(moment, time())
    raise TypeError("an original start is a datetime or a date")

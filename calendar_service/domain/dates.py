"""Dates and time zones as the original API reads and writes them.

The original accepts anything PHP's ``strtotime`` understands. We accept the forms its
clients and tests use: numeric Unix timestamps, absolute dates in the usual formats (with
or without an offset), and relative phrases such as ``tomorrow 9am``, ``next wednesday 4pm``,
``+5 days 11am`` or ``yesterday 23:59``. Stored and returned values are local wall-clock
strings ``YYYY-MM-DD HH:MM:SS`` plus a time zone; instants are computed from those.
"""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil import parser as dateutil_parser
from dateutil.relativedelta import relativedelta

FORMAT = "%Y-%m-%d %H:%M:%S"
_STORED = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\Z", re.ASCII)

_OFFSET_TZ = re.compile(r"^UTC([+-])(\d{1,2})(?:[.:](\d{1,2}))?$", re.I)
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY_ABBR = {name[:3]: i for i, name in enumerate(_WEEKDAYS)}
_UNITS = {
    "sec": "seconds", "second": "seconds", "min": "minutes", "minute": "minutes",
    "hour": "hours", "day": "days", "week": "weeks", "fortnight": "fortnight",
    "month": "months", "year": "years",
}
_TIME_TOKEN = re.compile(r"^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$", re.I)


MIN_YEAR, MAX_YEAR = 1000, 9998  # four-digit years, with room for any time zone offset


class DateParseError(ValueError):
    """The text is not a date this service understands."""


def zone(name: str | None, default: tzinfo) -> tzinfo:
    """The tzinfo for an IANA name or a ``UTC+5`` / ``UTC-5.5`` offset; ``default`` when empty.

    Raises ValueError for an unknown name.
    """
    if not name:
        return default
    match = _OFFSET_TZ.match(name.strip())
    if match:
        sign, hours, frac = match.groups()
        minutes = 0
        if frac:
            # "UTC+5.5" means five and a half hours, "UTC+5:30" the same
            minutes = int(float("0." + frac) * 60) if "." in name else int(frac)
        delta = timedelta(hours=int(hours), minutes=minutes)
        if delta > timedelta(hours=14):
            raise ValueError(f"offset out of range: {name}")
        return timezone(-delta if sign == "-" else delta, name.upper())
    if name.upper() == "UTC":
        return ZoneInfo("UTC")
    if len(name) > 64:  # the longest IANA name has 32 characters; longer ones are not names
        raise ValueError("unknown time zone")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: the name is no file name
        raise ValueError(f"unknown time zone: {name}") from None


def is_valid_timezone(name: str) -> bool:
    try:
        zone(name, timezone.utc)
        return True
    except ValueError:
        return False


def tz_abbr(at: datetime) -> str:
    """Abbreviation of the zone of the aware ``at`` at that moment (``EST``, ``CEST``, ``UTC+5``)."""
    return at.tzname() or ""


def parse(text, tz: tzinfo, now: datetime | None = None) -> datetime:
    """Read ``text`` as a moment; naive forms are wall-clock time in ``tz``.

    Returns an aware datetime in ``tz``. Numeric values are Unix timestamps (an instant,
    shown in ``tz``; the original misreads them as UTC wall-clock time, we don't).
    Raises DateParseError when the text is not understood.
    """
    if isinstance(text, bool) or text is None:
        raise DateParseError("not a date")
    if isinstance(text, (int, float)):
        return _from_timestamp(text, tz)
    if not isinstance(text, str):
        raise DateParseError("not a date")
    value = text.strip()
    if not value or len(value) > 100:
        raise DateParseError("not a date")
    if re.fullmatch(r"[+-]?\d{9,11}(\.\d+)?", value) or re.fullmatch(r"@-?\d+", value):
        return _from_timestamp(float(value.lstrip("@")), tz)
    now = (now or datetime.now(timezone.utc)).astimezone(tz)
    try:
        moment = _parse_absolute(value, tz, now)
        if moment is None:
            moment = _parse_relative(value, tz, now)
    except (OverflowError, ValueError) as exc:  # "+99999999999 years" and the like
        if isinstance(exc, DateParseError):
            raise
        raise DateParseError(f"cannot read {value!r} as a date") from None
    return _in_range(moment)


def _in_range(moment: datetime) -> datetime:
    """``moment`` when its year has four digits (stored dates are ``YYYY-...``), else DateParseError."""
    if not MIN_YEAR <= moment.year <= MAX_YEAR:
        raise DateParseError("the year must be between 1000 and 9998")
    return moment


def _from_timestamp(value: float, tz: tzinfo) -> datetime:
    try:
        return _in_range(datetime.fromtimestamp(float(value), timezone.utc).astimezone(tz))
    except (OverflowError, OSError, ValueError):
        raise DateParseError("timestamp out of range") from None


# The forms clients send most (``2026-11-23``, ``2026-11-23 20:00[:00]``, ``T`` between): read
# without dateutil, which takes half a millisecond; the result is the one dateutil gives.
_ISO_FORM = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?")


def _parse_absolute(value: str, tz: tzinfo, now: datetime) -> datetime | None:
    iso = _ISO_FORM.fullmatch(value)
    if iso:
        try:
            return datetime(*(int(part or 0) for part in iso.groups()), tzinfo=tz)
        except ValueError:
            pass   # "2026-02-30": dateutil says what it says
    # dateutil accepts far too much (it reads "before my birthday" as nothing at all with
    # fuzzy parsing); without fuzzy it is strict enough, but it must see a digit.
    if not re.search(r"\d", value) or re.search(r"(^|\s)[+-]\d|\b(next|last|ago|tomorrow|yesterday|today|now|noon|midnight)\b", value, re.I):
        return None
    default = datetime.combine(now.date(), time(0, 0))
    try:
        parsed = dateutil_parser.parse(value, default=default)
    except (ValueError, OverflowError, TypeError):
        return None
    if parsed.tzinfo is not None:
        return parsed.astimezone(tz)
    return parsed.replace(tzinfo=tz)


def _parse_relative(value: str, tz: tzinfo, now: datetime) -> datetime:
    text = re.sub(r"([+-])\s+(\d)", r"\1\2", value.lower())
    tokens = [t.replace(" ", "") for t in re.findall(r"[+-]?\d+(?::\d{2}){0,2}\s*(?:am|pm)?|[a-z.]+", text)]
    if not tokens or "".join(tokens).replace(" ", "") != re.sub(r"[\s,]", "", text):
        raise DateParseError(f"cannot read {value!r} as a date")
    current = now.replace(tzinfo=None, microsecond=0)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok == "now":
            pass
        elif tok in ("today", "midnight"):
            current = datetime.combine(current.date(), time(0, 0))
        elif tok == "noon":
            current = datetime.combine(current.date(), time(12, 0))
        elif tok == "tomorrow":
            current = datetime.combine(current.date() + timedelta(days=1), time(0, 0))
        elif tok == "yesterday":
            current = datetime.combine(current.date() - timedelta(days=1), time(0, 0))
        elif tok in ("next", "last", "this") and nxt is not None:
            weekday = _weekday(nxt)
            if weekday is not None:
                current = _move_to_weekday(current, weekday, tok)
            elif _unit(nxt):
                current = _add(current, 1 if tok == "next" else (-1 if tok == "last" else 0), _unit(nxt))
            else:
                raise DateParseError(f"cannot read {value!r} as a date")
            i += 1
        elif _weekday(tok) is not None:
            current = _move_to_weekday(current, _weekday(tok), "this")
        elif re.fullmatch(r"[+-]\d+", tok) or (tok.isdigit() and nxt is not None and _unit(nxt)):
            if nxt is None or not _unit(nxt):
                raise DateParseError(f"cannot read {value!r} as a date")
            amount = int(tok)
            if i + 2 < len(tokens) and tokens[i + 2] == "ago":
                amount = -amount
                i += 1
            current = _add(current, amount, _unit(nxt))
            i += 1
        elif _TIME_TOKEN.match(tok) and (":" in tok or tok.endswith(("am", "pm")) or (nxt in ("am", "pm"))):
            if nxt in ("am", "pm"):
                tok += nxt
                i += 1
            current = datetime.combine(current.date(), _read_time(tok, value))
        else:
            raise DateParseError(f"cannot read {value!r} as a date")
        i += 1
    return current.replace(tzinfo=tz)


def _weekday(token: str) -> int | None:
    if token in _WEEKDAYS:
        return _WEEKDAYS.index(token)
    return _WEEKDAY_ABBR.get(token) if len(token) == 3 else None


def _unit(token: str | None) -> str | None:
    if not token:
        return None
    token = token.rstrip(".")
    if token.endswith("s") and token[:-1] in _UNITS:
        token = token[:-1]
    return _UNITS.get(token)


def _add(current: datetime, amount: int, unit: str) -> datetime:
    if unit == "fortnight":
        return current + timedelta(weeks=2 * amount)
    if unit in ("months", "years"):
        return current + relativedelta(**{unit: amount})
    return current + timedelta(**{unit: amount})


def _move_to_weekday(current: datetime, weekday: int, how: str) -> datetime:
    day = current.date()
    if how == "last":
        delta = (day.weekday() - weekday) % 7 or 7
        target = day - timedelta(days=delta)
    else:
        delta = (weekday - day.weekday()) % 7
        if how == "next" and delta == 0:
            delta = 7
        target = day + timedelta(days=delta)
    return datetime.combine(target, time(0, 0))


def _read_time(token: str, whole: str) -> time:
    match = _TIME_TOKEN.match(token.replace(" ", ""))
    if not match:
        raise DateParseError(f"cannot read {whole!r} as a date")
    hour, minute, second, meridiem = match.groups()
    hour, minute, second = int(hour), int(minute or 0), int(second or 0)
    if meridiem:
        if not 1 <= hour <= 12:
            raise DateParseError(f"cannot read {whole!r} as a date")
        hour = hour % 12 + (12 if meridiem.startswith("p") else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise DateParseError(f"cannot read {whole!r} as a date")
    return time(hour, minute, second)


def fmt(moment: datetime) -> str:
    if moment.year >= 1000:   # the same text as strftime, which is slower (an event formats six)
        return moment.isoformat(" ")[:19]
    return moment.strftime(FORMAT)


def read_local(text: str, tz: tzinfo) -> datetime:
    """A stored ``YYYY-MM-DD HH:MM:SS`` string as an aware datetime in ``tz``.

    Raises ValueError when the string is not in that form.
    """
    text = str(text).strip()
    if _STORED.match(text):
        # the common case without strptime, which re-reads the locale on every call
        return datetime.fromisoformat(text).replace(tzinfo=tz)
    return datetime.strptime(text, FORMAT).replace(tzinfo=tz)


def event_span(start_text: str, end_text: str, tz: tzinfo) -> tuple[datetime, datetime]:
    """An event's stored local start and end as aware datetimes in ``tz``. A start that a DST
    gap skips (02:30 on the night clocks jump from 02:00 to 03:00) is read with the offset before
    the gap, as RFC 5545 and zoneinfo's fold=0 do, so it moves past the gap (03:30); the event
    then keeps the length its two stored times give (an hour, not zero). Otherwise each time is
    read as it is."""
    start, end = read_local(start_text, tz), read_local(end_text, tz)
    moved = start.astimezone(timezone.utc)
    if moved.astimezone(tz).replace(tzinfo=None) == start.replace(tzinfo=None):
        return start, end
    length = end.replace(tzinfo=None) - start.replace(tzinfo=None)
    return moved.astimezone(tz), (moved + length).astimezone(tz)


def details(text: str) -> dict:
    """The ``*_details`` object: a mechanical split into zero-padded strings."""
    return {
        "year": text[0:4], "month": text[5:7], "day": text[8:10],
        "hour": text[11:13], "minutes": text[14:16], "seconds": text[17:19],
    }


def start_of_day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def end_of_day(moment: datetime) -> datetime:
    return moment.replace(hour=23, minute=59, second=59, microsecond=0)


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def normalize_stored(value) -> str | None:
    """Editors may write dates unquoted (YAML then hands us a datetime): bring them back to text."""
    if isinstance(value, datetime):
        return fmt(value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(timezone.utc))
    if isinstance(value, date):
        return value.strftime("%Y-%m-%d 00:00:00")
    return value

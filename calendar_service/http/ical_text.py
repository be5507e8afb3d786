"""iCalendar content lines written as text, as ``icalendar`` writes them.

A feed's VEVENTs are written line by line (``ical.IcalPresenter``) instead of being assembled as
``icalendar`` components and serialised: those components cost most of a feed's time (several
objects per property, parameters, type lookups, per line). The few value types a VEVENT uses
are written here, each exactly as ``icalendar`` (the version ``ical_fold.WRITTEN_FOR``) writes
it, so the feeds keep their bytes (``tests/test_ical_bytes.py`` pins a varied calendar's feeds;
``tests/test_ical_text.py`` compares each writer with ``icalendar`` on drawn values):

- TEXT values (``text``): RFC 5545's escaping of ``\\ ; ,`` and line breaks, in icalendar's order
  of replacements (a ``\\N`` in the text becomes a line break first, as icalendar does);
- the CN parameter (``cn``): RFC 6868's ``^`` escapes, double quotes around a value holding a
  space, ``'``, ``,``, ``;``, ``:`` or ``’``;
- DATE and DATE-TIME values (``day``, ``moment``): a UTC time with ``Z``; a zone's time with the
  TZID parameter icalendar gives that zone, which is ``Z`` for a zone icalendar holds equivalent
  to UTC (``Africa/Abidjan``); asked of icalendar once per zone (``_zone_form``);
- folding (``content``): ``ical_fold.fold`` when it is installed, else icalendar's own
  ``Contentline.to_ical``.

The order of a VEVENT's properties is icalendar's: ``ORDER`` (its canonical order for VEVENT)
first, then the others by name; ``ical.IcalPresenter`` writes them in that order.
"""
from __future__ import annotations

from datetime import date, datetime, timezone
from functools import lru_cache

from icalendar import Event
from icalendar.parser import Contentline

from calendar_service.http import ical_fold

# icalendar's canonical order of VEVENT properties (``icalendar.Event.canonical_order``): these
# first, in this order, then the rest sorted by name
ORDER = ("SUMMARY", "DTSTART", "DTEND", "DURATION", "DTSTAMP", "UID", "RECURRENCE-ID", "SEQUENCE", "RRULE",
         "RDATE", "EXDATE")
_CN_QUOTED = frozenset(" ',;:\u2019")   # a CN value with one of these is quoted (icalendar's rules)
_UTC = timezone.utc


def text(value: str) -> str:
    """A TEXT value escaped as ``icalendar.vText`` escapes it."""
    if "\\" in value or ";" in value or "," in value or "\n" in value or "\r" in value:
        value = (value.replace("\\N", "\n").replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
                 .replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n"))
    return value


def cn(value: str) -> str:
    """A CN parameter's value as icalendar writes it (``Parameters.to_ical``): RFC 6868's escapes
    (``^`` ``^^``, a line break ``^n``, ``"`` ``^'``), quoted when it holds a space, ``'`` or one of
    ``,;:’``."""
    quoted = any(c in _CN_QUOTED for c in value)
    if "^" in value or "\n" in value or "\r" in value or '"' in value:
        value = (value.replace("^", "^^").replace("\r\n", "^n").replace("\r", "^n").replace("\n", "^n")
                 .replace('"', "^'"))
    return f'"{value}"' if quoted else value


def utc(moment: datetime) -> str:
    """A UTC DATE-TIME value (``moment`` in UTC)."""
    return f"{moment.year:04}{moment.month:02}{moment.day:02}T{moment.hour:02}{moment.minute:02}{moment.second:02}Z"


def day(value: date) -> str:
    return f"{value.year:04}{value.month:02}{value.day:02}"


def moment(name: str, value: datetime) -> str:
    """The content line of property ``name`` with an aware DATE-TIME ``value`` (its zone's TZID, or
    UTC), as ``icalendar`` writes it."""
    stamp = f"{value.year:04}{value.month:02}{value.day:02}T{value.hour:02}{value.minute:02}{value.second:02}"
    tz = value.tzinfo
    if tz is _UTC:
        return f"{name}:{stamp}Z"
    params, suffix = _zone_form(tz)
    return f"{name}{params}:{stamp}{suffix}"


@lru_cache(maxsize=1024)
def _zone_form(tz) -> tuple[str, str]:
    """How icalendar writes a time of zone ``tz``: (the parameters after the name, the suffix):
    (``;TZID=Europe/Paris``, "") or, for a zone it holds equivalent to UTC, ("", "Z")."""
    probe = Event()
    probe.add("dtstart", datetime(2000, 1, 1, tzinfo=tz))
    line = probe.to_ical().split(b"\r\n")[1].decode("utf-8")
    head, _, value = line.partition(":")
    return head[len("DTSTART"):], ("Z" if value.endswith("Z") else "")


def content(lines: list[str]) -> str:
    """Content lines folded as icalendar folds them, each ended by CRLF."""
    if ical_fold.installed():
        fold = ical_fold.fold   # (a short ASCII line is its own folding)
        return "\r\n".join([line if len(line) < 75 and line.isascii() else fold(line) for line in lines]) + "\r\n"
    return "".join([Contentline(line).to_ical().decode("utf-8") + "\r\n" for line in lines])

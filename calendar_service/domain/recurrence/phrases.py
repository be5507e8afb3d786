"""Repeat phrases of the command line (``new event --repeat "every tuesday until 2027-06-30"``)."""
from __future__ import annotations

import re
from datetime import date, datetime, time, timezone, tzinfo

from calendar_service.domain.recurrence.lines import WEEKDAYS, SeriesProblem, read_rule, split_parts
from calendar_service.domain.recurrence.series import recurrence_problems

UTC = timezone.utc


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

    or a raw rule (``RRULE:FREQ=...`` or ``FREQ=...``). ``tz`` and ``all_day`` describe the event,
    for UNTIL's value; with ``start`` (the event's local start), the event must be an occurrence
    of the rule ("every tuesday" starting on a Wednesday is refused). Raises ValueError naming what was not understood.
    """
    phrase = " ".join(str(text).strip().split())
    if re.match(r"(RRULE:)?FREQ=", phrase, re.I):
        rule = phrase if phrase.upper().startswith("RRULE:") else "RRULE:" + phrase
        problems: list[SeriesProblem] = []
        read_rule(split_parts(rule[6:], 0, problems), 0, problems, all_day)
        if problems:
            raise ValueError("; ".join(p.message for p in problems))
        return _starting(["RRULE:" + rule[6:].upper()], start, tz, all_day)
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
                try:
                    last = datetime.combine(day, time(23, 59, 59)).replace(tzinfo=tz).astimezone(UTC)
                except OverflowError:
                    fail(f"{words[-1]!r} is out of range")
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
    return _starting(["RRULE:" + ";".join(f"{k}={v}" for k, v in parts + tail)], start, tz, all_day)


def _starting(lines: list[str], start: datetime | None, tz: tzinfo, all_day: bool) -> list[str]:
    """``lines`` when an event starting at ``start`` can carry them (or no start is given), else
    ValueError saying why."""
    if start is None:
        return lines
    found = [p for p in recurrence_problems(lines, None, start, start, tz, all_day) if p.severity == "error"]
    if found:
        raise ValueError("; ".join(p.message for p in found))
    return lines

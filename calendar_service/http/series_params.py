"""The checks of the recurring-event arguments (``recurrence``, ``recurrence_scope``); ``checks``
runs them and turns their ValueError into a 400 naming the argument."""
from __future__ import annotations

MAX_RECURRENCE_LINES = 100
MAX_LINE_CHARS = 10_000
SCOPES = ("this", "following", "all")


def recurrence_lines(value, ctx, arg) -> list[str]:
    """A series' ``recurrence``: a list of RFC 5545 lines, or one string of lines separated by
    newlines (form posts); empty (``""``, ``[]``) removes it. The lines themselves are checked
    against the event's times when the write is planned."""
    if isinstance(value, str):
        value = value.splitlines()
    elif isinstance(value, dict) and all(str(k).isdigit() for k in value):  # a PHP-style list
        value = list(value.values())
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise ValueError("recurrence must be a list of RFC 5545 lines such as RRULE:FREQ=WEEKLY;BYDAY=TU.")
    lines = [line.strip() for line in value if line.strip()]
    if len(lines) > MAX_RECURRENCE_LINES or any(len(line) > MAX_LINE_CHARS for line in lines):
        raise ValueError(f"recurrence holds at most {MAX_RECURRENCE_LINES} lines.")
    return lines


def recurrence_scope(value, ctx, arg) -> str:
    text = str(value).strip().lower()
    if isinstance(value, bool) or text not in SCOPES:
        raise ValueError("recurrence_scope must be one of this, following, all.")
    return text

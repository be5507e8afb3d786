"""Checking one value of an imported event (the importer's input, The Events Calendar's JSON):
each helper returns the value in our format or raises ``Bad`` naming the key."""
from __future__ import annotations

import re

from calendar_service.domain import dates
from calendar_service.domain import text
from calendar_service.domain.booleans import YES_NO, parse_bool

_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


class Bad(Exception):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def record_label(index: int, item) -> str:
    if not isinstance(item, dict):
        return f"event #{index}"
    ident = item.get("id")
    title = item.get("title")
    bits = []
    if ident not in (None, ""):
        bits.append(f"id {ident}")
    if isinstance(title, str) and title.strip():
        bits.append(repr(title.strip()[:60]))
    return f"event #{index}" + (f" ({', '.join(bits)})" if bits else "")


def as_id(value, key: str) -> int | None:
    if value in (None, "", 0, "0"):
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.strip().isdigit()):
        raise Bad(key, f"must be a positive integer id, got {value!r}")
    return int(value)


def as_str(value, key: str, required: bool = False) -> str | None:
    if value is None or value is False:
        if required:
            raise Bad(key, "is required")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise Bad(key, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise Bad(key, "is required and must not be empty")
    return value if value.strip() else None


def as_stamp(value, key: str, required: bool = False) -> str | None:
    if value in (None, ""):
        if required:
            raise Bad(key, "is required")
        return None
    if not isinstance(value, str) or not _STAMP.match(value.strip()):
        raise Bad(key, f"must be a date 'YYYY-MM-DD HH:MM:SS', got {value!r}")
    try:
        dates.read_local(value, None)
    except ValueError:
        raise Bad(key, f"is not a real date: {value!r}") from None
    return value.strip()


def as_bool(value, key: str) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    parsed = parse_bool(value, YES_NO) if isinstance(value, (int, str)) else None
    if parsed is not None:
        return parsed
    raise Bad(key, f"must be true or false, got {value!r}")


def as_image(value, key: str) -> str | None:
    if value in (None, False, "", 0):
        return None
    if isinstance(value, dict):
        value = value.get("url")
    if not isinstance(value, str) or not value.strip():
        raise Bad(key, "must be false, an image URL or an object with 'url'")
    return value.strip()


def as_float(value, key: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise Bad(key, f"must be a number, got {value!r}") from None


def plain_text(html_text: str | None) -> str | None:
    """The editor-friendly text whose display (``text.autop``) is ``html_text``; the HTML itself
    when no plain form displays identically."""
    if not html_text or not html_text.strip():
        return None
    chunks = re.findall(r"<p>(.*?)</p>", html_text, re.S)
    if chunks and "\n".join(f"<p>{c}</p>" for c in chunks) == html_text.strip():
        plain = "\n\n".join(c.replace("<br />\n", "\n") for c in chunks)
        if text.autop(plain) == html_text.strip():
            return plain
    return html_text


def as_list(value, key: str) -> list:
    if value in (None, "", False, 0, "0"):
        return []
    if isinstance(value, dict):
        # one embedded object, or a PHP-style list {"0": {...}}
        return list(value.values()) if value and all(str(k).isdigit() for k in value) else [value]
    if isinstance(value, list):
        return value
    if isinstance(value, (int, str)):
        return [value]
    raise Bad(key, f"must be a list of objects or ids, got {type(value).__name__}")

"""Request parameters: what every check shares.

Parameters come from the JSON body, the form body, the query string and the path (the path
wins: a body cannot redirect a write to another record; ``form.py`` builds nested values
from bracketed names as PHP does). Each argument's check (a ``checks.Check``, see
``arguments.Arg``) validates and sanitizes it; a failing check raises ``Invalid``, which
makes a 400 ``rest_invalid_param`` naming every bad parameter, before any permission check.
This module holds what the checks share: ``Invalid``, the ``CheckContext`` they read, list
splitting and WordPress' type coercion.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from calendar_service.domain.booleans import WORDPRESS_REST, parse_bool
from calendar_service.auth.accounts import User
from calendar_service.domain.snapshot import Snapshot

MAX_DEPTH = 8
MAX_LIST = 1000


class Invalid(Exception):
    """A parameter value that its check refused; ``reason`` is shown to the client."""

    def __init__(self, reason: str = "Invalid parameter.", detail: dict | None = None):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass
class CheckContext:
    snapshot: Snapshot
    user: User | None
    accounts: object
    site_tz: object


# ----------------------------------------------------------------------------- gathering


def check_text(value, limit: int = MAX_DEPTH * 4) -> None:
    """Raise Invalid when a string anywhere in ``value`` holds a NUL byte or a lone surrogate.

    Neither can be stored: a NUL makes the record file unreadable (and git refuses it in a
    commit message); a lone surrogate (``"\\ud800"`` in JSON) cannot be written as UTF-8.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise Invalid("NUL bytes are not allowed.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Invalid("The text is not valid Unicode.") from None
    elif limit > 0 and isinstance(value, dict):
        for key, item in value.items():
            check_text(key, limit - 1)
            check_text(item, limit - 1)
    elif limit > 0 and isinstance(value, list):
        for item in value:
            check_text(item, limit - 1)


def depth(value, limit: int = 32) -> int:
    """Nesting depth of a JSON value, stopping at ``limit``."""
    if limit <= 0:
        return 0
    if isinstance(value, dict):
        return 1 + max((depth(v, limit - 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v, limit - 1) for v in value), default=0)
    return 0


def as_list(value) -> list:
    """A CSV string or an array as a list of stripped items."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, str) and "," in item:
                items.extend(as_list(item))
            else:
                items.append(item.strip() if isinstance(item, str) else item)
        if len(items) > MAX_LIST:
            raise Invalid("Too many values.")
        return [i for i in items if i != ""]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [value]
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
        if len(items) > MAX_LIST:
            raise Invalid("Too many values.")
        return [v for v in items if v]
    raise Invalid()


# ----------------------------------------------------------------------------- type coercion

def to_bool(value, name: str) -> bool:
    """WordPress' boolean type: true/false, "true"/"false", "1"/"0", 1/0."""
    parsed = parse_bool(value, WORDPRESS_REST) if isinstance(value, (int, str)) else None
    if parsed is not None:
        return parsed
    message = f"{name} is not of type boolean."
    raise Invalid(message, {"code": "rest_invalid_type", "message": message, "data": {"param": name}})


def to_int(value, name: str) -> int:
    if isinstance(value, bool):
        raise Invalid(f"{name} is not of type integer.")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
        return int(value)
    raise Invalid(f"{name} is not of type integer.", {"code": "rest_invalid_type", "message": f"{name} is not of type integer.", "data": {"param": name}})


def to_str(value, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise Invalid(f"{name} is not of type string.", {"code": "rest_invalid_type", "message": f"{name} is not of type string.", "data": {"param": name}})


def coerce(value, declared: str | None, name: str):
    """Type-check the value of an argument ``name`` that has a ``declared`` type but no check of its own."""
    if declared == "boolean":
        return to_bool(value, name)
    if declared == "integer":
        return to_int(value, name)
    if declared == "string":
        return to_str(value, name)
    return value

"""Request parameters: checking each one.

Parameters come from the JSON body, the form body, the query string and the path (the path
wins: a body cannot redirect a write to another record; ``form.py`` builds nested values
from bracketed names as PHP does). Each argument's ``check`` (see ``arguments.Arg``) validates and
sanitizes it; a failing check makes a 400 ``rest_invalid_param`` naming every bad
parameter, before any permission check.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from calendar_service.domain import dates, permissions
from calendar_service.domain.booleans import LENIENT, WORDPRESS_REST, parse_bool
from calendar_service.auth.accounts import User
from calendar_service.domain.snapshot import Snapshot
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, OTHER_REGISTERED_STATUSES, POST_STATUSES, TAGS, VENUES
from calendar_service.http import series_params
from calendar_service.http.arguments import Arg, create_args
from calendar_service.service.calendar import LinkedValueError, parse_linked, parse_term_list

MAX_DEPTH = 8
RESOURCE_TYPES = ("events", "venues", "organizers", "categories", "tags")
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


def coerce(arg: Arg, value):
    """Type-check an argument that has a declared type but no check of its own."""
    if arg.type == "boolean":
        return to_bool(value, arg.name)
    if arg.type == "integer":
        return to_int(value, arg.name)
    if arg.type == "string":
        return to_str(value, arg.name)
    return value


# ----------------------------------------------------------------------------- checks


def _positive_int(value, ctx, arg):
    if isinstance(value, bool):
        raise Invalid()
    text = str(value).strip()
    if not re.fullmatch(r"\d{1,9}", text) or int(text) < 1:
        raise Invalid()
    return int(text)


def _date(value, ctx, arg):
    if isinstance(value, (dict, list, bool)):
        raise Invalid()
    try:
        dates.parse(value, ctx.site_tz)
    except dates.DateParseError:
        raise Invalid() from None
    return value


def _strict_dates(value, ctx, arg):
    text = str(value).strip() if not isinstance(value, bool) else ("1" if value else "0")
    if text in ("", "0"):
        raise Invalid()
    return parse_bool(text, LENIENT) is True


def _nonempty(value, ctx, arg):
    # the original's is_string(): a string (so a JSON number, boolean, array or object is refused:
    # `{"organizer": 12345}` is a 400, not an organizer named "12345"; form and query values are
    # always strings), and PHP's empty(): "" and "0" count as missing
    if not isinstance(value, str):
        raise Invalid()
    text = str(value)
    if text.strip() in ("", "0"):
        raise Invalid()
    if "\x00" in text:
        raise Invalid("NUL bytes are not allowed.")
    return text


def _string_or_empty(value, ctx, arg):
    if value is None:
        return None
    text = to_str(value, arg.name)
    if "\x00" in text:
        raise Invalid("NUL bytes are not allowed.")
    return text


def _email_or_empty(value, ctx, arg):
    """An e-mail address: one line with no spaces or control characters (it becomes an iCal
    ``mailto:``, where a line break would break the whole event); blank is empty."""
    text = _string_or_empty(value, ctx, arg)
    if text is None:
        return None
    text = text.strip()
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in text):
        raise Invalid("An e-mail address is one line without spaces or control characters.")
    return text


def _terms(resource, collect=list):
    """Existing terms given by id or slug (CSV or array); ``collect`` builds the result (list or set)."""
    def check(value, ctx, arg):
        ids = []
        for item in as_list(value):
            if isinstance(item, (float, dict, list, bool)):
                raise Invalid()
            record = ctx.snapshot.resolve(resource, int(item) if isinstance(item, str) and item.isdigit() else item)
            if record is None:
                raise Invalid()
            ids.append(record.id)
        return collect(ids)
    return check


def _post_filter(resource):
    def check(value, ctx, arg):
        ids = set()
        for item in as_list(value):
            text = str(item).strip()
            record = ctx.snapshot.get(resource, int(text)) if not isinstance(item, (bool, dict, list)) and text.isdigit() else None
            if record is None or not permissions.can_see(ctx.user, record):
                raise Invalid()  # a record the caller may not see is treated as missing
            ids.add(int(text))
        return ids
    return check


def _status_filter(value, ctx, arg):
    statuses = tuple(str(s).strip() for s in as_list(value))
    if not statuses:
        raise Invalid()
    if not permissions.sees_all_statuses(ctx.user):
        if statuses != ("publish",):
            raise Invalid()
        return statuses
    known = POST_STATUSES + OTHER_REGISTERED_STATUSES
    if any(s not in known for s in statuses):
        raise Invalid()
    return statuses


def _latitude(value, ctx, arg):
    return _float_in(value, 90)


def _longitude(value, ctx, arg):
    return _float_in(value, 180)


def _float_in(value, bound):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Invalid() from None
    if isinstance(value, bool) or not math.isfinite(number) or abs(number) > bound:
        raise Invalid()
    return number


def _positive_int_list(value, ctx, arg):
    items = as_list(value)
    out = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not re.fullmatch(r"\d{1,12}", text) or int(text) < 1:
            raise Invalid()
        out.append(int(text))
    if not out:
        raise Invalid()
    return out


def _event_id(value, ctx, arg):
    """An event whose terms or venues a list may name: one the caller can see, and, when it is
    password-protected, may edit (its venues and terms are among the protected fields). Any
    other id is refused exactly like one that does not exist."""
    text = str(value).strip()
    event = ctx.snapshot.get(EVENTS, int(text)) if not isinstance(value, bool) and text.isdigit() else None
    if event is None or not permissions.can_see(ctx.user, event):
        raise Invalid()
    if event.data.get("password") and not permissions.can_edit(ctx.user, event):
        raise Invalid()
    return int(text)


def _boolean_like(value, ctx, arg):
    parsed = parse_bool(value, LENIENT)
    if parsed is None:
        raise Invalid()
    return parsed


def _user_id(value, ctx, arg):
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or ctx.accounts.by_id(int(text)) is None:
        raise Invalid()
    return int(text)


def _post_status(value, ctx, arg):
    text = str(value).strip()
    if text not in POST_STATUSES or text == "trash":
        raise Invalid()
    return text


def _timezone(value, ctx, arg):
    text = to_str(value, arg.name).strip()
    if text and not dates.is_valid_timezone(text):
        raise Invalid()
    return text


def _url(value) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not re.search(r"\s", value)


def _url_or_empty(value, ctx, arg):
    text = to_str(value, arg.name).strip()
    if text and not _url(text):
        raise Invalid()
    return text


def _image(value, ctx, arg):
    # There is no media library behind this service: an image is an absolute URL.
    text = to_str(value, arg.name).strip()
    if text and not _url(text):
        raise Invalid()
    return text


def _cost(value, ctx, arg):
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise Invalid()


def _term_list(value, ctx, arg):
    try:
        return parse_term_list(value)
    except ValueError:
        raise Invalid() from None


def _reasoned(check):
    """``check`` with its ValueError as Invalid (its message is the reason)."""
    def run(value, ctx, arg):
        try:
            return check(value, ctx, arg)
        except ValueError as exc:
            raise Invalid(str(exc)) from None
    return run


def _linked(resource):
    """A venue or organizer value of an event payload: ids, or objects that would pass its own create checks."""
    def check(value, ctx, arg):
        try:
            items = parse_linked(value, resource, ctx.snapshot, ctx.user)
        except LinkedValueError as exc:
            raise Invalid(str(exc)) from None
        clean = []
        for item in items:
            if not isinstance(item, dict):
                clean.append(item)
                continue
            # each value checked and normalized exactly as the resource's own create route does
            cleaned = {key: value for key, value in item.items()}
            for nested in create_args(resource):
                if item.get(nested.name) is None:
                    continue
                try:
                    cleaned[nested.name] = check_value(nested, item[nested.name], ctx)
                except Invalid as exc:
                    raise Invalid(f"{arg.name}[{nested.name}]: {exc.reason}") from None
            clean.append(cleaned)
        return clean
    return check


def _order(value, ctx, arg):
    text = str(value).strip().lower()
    if text not in ("asc", "desc"):
        raise Invalid()
    return text


ORDERBY = ("id", "name", "slug", "count", "description", "term_group", "include", "include_slugs")


def _orderby(value, ctx, arg):
    text = str(value).strip().lower()
    if text not in ORDERBY:
        raise Invalid()
    return text


def _category_parent(value, ctx, arg):
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise Invalid()
    if int(text) != 0 and ctx.snapshot.get(CATEGORIES, int(text)) is None:
        raise Invalid()
    return int(text)


def _existing_id(resource):
    def check(value, ctx, arg):
        text = str(value).strip()
        if not text.isdigit() or ctx.snapshot.get(resource, int(text)) is None:
            raise Invalid()
        return ctx.snapshot.get(resource, int(text))
    return check


def _digits(value, ctx, arg):
    text = str(value).strip()
    if not re.fullmatch(r"\d{1,18}", text):
        raise Invalid()
    return int(text)


def _existing_slug(resource):
    def check(value, ctx, arg):
        slug = str(value).strip().lower()
        from calendar_service.domain.records import is_safe_slug
        record = ctx.snapshot.get_slug(resource, slug) if is_safe_slug(slug) else None
        if record is None:
            raise Invalid()
        return record
    return check


def _webhook_url(value, ctx, arg):
    """A webhook target: a non-empty string (the service resolves and checks it)."""
    text = to_str(value, arg.name).strip()
    if not text:
        raise Invalid("The URL may not be empty.")
    return text


def _resource_types(value, ctx, arg):
    """Resource types (events, venues, organizers, categories, tags), CSV or array, at least one."""
    found = []
    for item in as_list(value):
        if item not in RESOURCE_TYPES:
            raise Invalid(f"{arg.name} must be among " + ", ".join(RESOURCE_TYPES) + ".")
        if item not in found:
            found.append(item)
    if not found:
        raise Invalid(f"{arg.name} must name at least one of " + ", ".join(RESOURCE_TYPES) + ".")
    return found


def _commit_id(value, ctx, arg):
    # only hex ever reaches git: a request value can never become a git option
    text = str(value).strip().lower()
    if isinstance(value, bool) or not re.fullmatch(r"[0-9a-f]{4,40}", text):
        raise Invalid("A commit id is 4 to 40 hexadecimal digits.")
    return text


CHECKS = {
    "positive_int": _positive_int,
    "webhook_url": _webhook_url,
    "resource_types": _resource_types,
    "date": _date,
    "strict_dates": _strict_dates,
    "search": _nonempty,
    "nonempty": _nonempty,
    "string_or_empty": _string_or_empty,
    "email_or_empty": _email_or_empty,
    "category_filter": _terms(CATEGORIES, set),
    "tag_filter": _terms(TAGS, set),
    "venue_filter": _post_filter(VENUES),
    "organizer_filter": _post_filter(ORGANIZERS),
    "status_filter": _status_filter,
    "latitude": _latitude,
    "longitude": _longitude,
    "positive_int_list": _positive_int_list,
    "event_id": _event_id,
    "boolean_like": _boolean_like,
    "user_id": _user_id,
    "post_status": _post_status,
    "timezone": _timezone,
    "url_or_empty": _url_or_empty,
    "image": _image,
    "cost": _cost,
    "term_list": _term_list,
    "recurrence_lines": _reasoned(series_params.recurrence_lines),
    "recurrence_scope": _reasoned(series_params.recurrence_scope),
    "linked_venue": _linked(VENUES),
    "linked_organizer": _linked(ORGANIZERS),
    "order": _order,
    "orderby": _orderby,
    "category_id": _category_parent,
    "category_list": _terms(CATEGORIES),
    "tag_list": _terms(TAGS),
    # path parameters
    "event_id_format": _digits,
    "venue_record": _existing_id(VENUES),
    "organizer_record": _existing_id(ORGANIZERS),
    "category_record": _existing_id(CATEGORIES),
    "tag_record": _existing_id(TAGS),
    "event_slug": _existing_slug(EVENTS),
    "venue_slug": _existing_slug(VENUES),
    "organizer_slug": _existing_slug(ORGANIZERS),
    "commit_id": _commit_id,
}


def check_value(arg: Arg, value, ctx: "CheckContext"):
    """``value`` of ``arg`` checked and normalized: its validator when it names one, else the
    plain type coercion; raises Invalid."""
    check_text(value)
    if arg.check:
        return CHECKS[arg.check](value, ctx, arg)
    return coerce(arg, value)

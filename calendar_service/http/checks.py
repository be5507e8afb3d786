"""The checks of argument values: each validates and normalizes a value, and says as an
OpenAPI schema what it accepts.

An argument (``arguments.Arg``) holds its ``Check``; the dispatcher runs it on the value
(a failing check raises ``Invalid``) and /doc shows its schema, so the document says what
the API really accepts. The checks of a family that differ by resource (terms, visible
posts, existing records and slugs, linked venues and organizers) are built from the
resource.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from calendar_service.domain import dates, permissions
from calendar_service.domain.booleans import LENIENT, parse_bool
from calendar_service.domain.record_files import is_safe_slug
from calendar_service.domain.resources import CATEGORIES, EVENTS, OTHER_REGISTERED_STATUSES, POST_STATUSES, Resource
from calendar_service.http import series_params
from calendar_service.http.params import CheckContext, Invalid, as_list, to_str
from calendar_service.service.calendar import LinkedValueError, parse_linked, parse_term_list


@dataclass(frozen=True, eq=False)
class Check:
    """How the values of an argument are checked, and how /doc describes them.

    ``validate(value, ctx, arg)`` answers the clean value or raises Invalid (``arg`` is the
    ``Arg`` whose value it is). ``schema`` is the OpenAPI 3.0 schema of what it accepts;
    ``body_schema`` replaces it for a body field when a JSON body may send more.
    """

    validate: Callable[[Any, CheckContext, Any], Any]
    schema: dict
    body_schema: dict | None = None


@dataclass(frozen=True, eq=False, kw_only=True)
class LinkedCheck(Check):
    """A venue or organizer of an event payload: ids, or objects describing new records.

    An object's fields are checked by ``args`` (the resource's create arguments); /doc
    describes such an object as the components schema named ``component``.
    """

    component: str
    args: tuple


# ----------------------------------------------------------------------------- schemas

STRING_SCHEMA = {"type": "string"}
ID_SCHEMA = {"type": "integer", "minimum": 0}
_NONEMPTY = {"type": "string", "minLength": 1}
_ID_OR_SLUG = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]}
_BOOLEAN_WORDS = {"type": "string", "enum": LENIENT.all()}
_SCALAR = {"anyOf": [{"type": "string"}, {"type": "number"}]}
_STRINGS = {"type": "array", "items": {"type": "string"}}


# ----------------------------------------------------------------------------- values


def _positive_int(value, ctx, arg):
    if isinstance(value, bool):
        raise Invalid()
    text = str(value).strip()
    if not re.fullmatch(r"\d{1,9}", text) or int(text) < 1:
        raise Invalid()
    return int(text)


POSITIVE_INT = Check(_positive_int, {"type": "integer", "minimum": 1, "maximum": 999999999})


def _date(value, ctx, arg):
    if isinstance(value, (dict, list, bool)):
        raise Invalid()
    try:
        dates.parse(value, ctx.site_tz)
    except dates.DateParseError:
        raise Invalid() from None
    return value


DATE = Check(_date, _NONEMPTY)


def _strict_dates(value, ctx, arg):
    text = str(value).strip() if not isinstance(value, bool) else ("1" if value else "0")
    if text in ("", "0"):
        raise Invalid()
    return parse_bool(text, LENIENT) is True


STRICT_DATES = Check(_strict_dates, _NONEMPTY)


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


NONEMPTY = Check(_nonempty, _NONEMPTY)


def _string_or_empty(value, ctx, arg):
    if value is None:
        return None
    text = to_str(value, arg.name)
    if "\x00" in text:
        raise Invalid("NUL bytes are not allowed.")
    return text


STRING_OR_EMPTY = Check(_string_or_empty, STRING_SCHEMA)


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


EMAIL_OR_EMPTY = Check(_email_or_empty, STRING_SCHEMA)


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


STATUS_FILTER = Check(_status_filter, {"type": "array", "minItems": 1, "items": {
    "type": "string", "enum": list(POST_STATUSES + OTHER_REGISTERED_STATUSES)}})


def _float_in(value, bound):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Invalid() from None
    if isinstance(value, bool) or not math.isfinite(number) or abs(number) > bound:
        raise Invalid()
    return number


def _latitude(value, ctx, arg):
    return _float_in(value, 90)


def _longitude(value, ctx, arg):
    return _float_in(value, 180)


LATITUDE = Check(_latitude, {"type": "number", "format": "double", "minimum": -90, "maximum": 90})
LONGITUDE = Check(_longitude, {"type": "number", "format": "double", "minimum": -180, "maximum": 180})


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


POSITIVE_INT_LIST = Check(_positive_int_list, {"type": "array", "minItems": 1,
                                               "items": {"type": "integer", "minimum": 1}})


def _boolean_like(value, ctx, arg):
    parsed = parse_bool(value, LENIENT)
    if parsed is None:
        raise Invalid()
    return parsed


# a JSON body may send a boolean where the words are accepted
BOOLEAN_LIKE = Check(_boolean_like, _BOOLEAN_WORDS, body_schema={"anyOf": [{"type": "boolean"}, _BOOLEAN_WORDS]})


def _post_status(value, ctx, arg):
    text = str(value).strip()
    if text not in POST_STATUSES or text == "trash":
        raise Invalid()
    return text


POST_STATUS = Check(_post_status, {"type": "string", "enum": [s for s in POST_STATUSES if s != "trash"]})


def _timezone(value, ctx, arg):
    text = to_str(value, arg.name).strip()
    if text and not dates.is_valid_timezone(text):
        raise Invalid()
    return text


TIMEZONE = Check(_timezone, STRING_SCHEMA)


def _url(value) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not re.search(r"\s", value)


def _url_or_empty(value, ctx, arg):
    text = to_str(value, arg.name).strip()
    if text and not _url(text):
        raise Invalid()
    return text


URL_OR_EMPTY = Check(_url_or_empty, STRING_SCHEMA)
IMAGE = URL_OR_EMPTY  # there is no media library behind this service: an image is an absolute URL


def _cost(value, ctx, arg):
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise Invalid()


COST = Check(_cost, {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": _SCALAR}]})


def _term_list(value, ctx, arg):
    try:
        return parse_term_list(value)
    except ValueError:
        raise Invalid() from None


TERM_LIST = Check(_term_list, {"anyOf": [{"type": "string"}, {"type": "integer"}, {
    "type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}]})


def _reasoned(check):
    """``check`` with its ValueError as Invalid (its message is the reason)."""
    def run(value, ctx, arg):
        try:
            return check(value, ctx, arg)
        except ValueError as exc:
            raise Invalid(str(exc)) from None
    return run


RECURRENCE_LINES = Check(_reasoned(series_params.recurrence_lines), _STRINGS)
RECURRENCE_SCOPE = Check(_reasoned(series_params.recurrence_scope), STRING_SCHEMA)


def _order(value, ctx, arg):
    text = str(value).strip().lower()
    if text not in ("asc", "desc"):
        raise Invalid()
    return text


ORDER = Check(_order, {"type": "string", "enum": ["asc", "desc"]})
ORDERBY_VALUES = ("id", "name", "slug", "count", "description", "term_group", "include", "include_slugs")


def _orderby(value, ctx, arg):
    text = str(value).strip().lower()
    if text not in ORDERBY_VALUES:
        raise Invalid()
    return text


ORDERBY = Check(_orderby, {"type": "string", "enum": list(ORDERBY_VALUES)})


def _webhook_url(value, ctx, arg):
    """A webhook target: a non-empty string (the service resolves and checks it)."""
    text = to_str(value, arg.name).strip()
    if not text:
        raise Invalid("The URL may not be empty.")
    return text


WEBHOOK_URL = Check(_webhook_url, STRING_SCHEMA)
RESOURCE_TYPES = ("events", "venues", "organizers", "categories", "tags")


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


RESOURCE_TYPE_LIST = Check(_resource_types, _STRINGS)


def _commit_id(value, ctx, arg):
    # only hex ever reaches git: a request value can never become a git option
    text = str(value).strip().lower()
    if isinstance(value, bool) or not re.fullmatch(r"[0-9a-f]{4,40}", text):
        raise Invalid("A commit id is 4 to 40 hexadecimal digits.")
    return text


COMMIT_ID = Check(_commit_id, STRING_SCHEMA)


# ----------------------------------------------------------------------------- records named by id or slug


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


EVENT_ID = Check(_event_id, ID_SCHEMA)


def _user_id(value, ctx, arg):
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or ctx.accounts.by_id(int(text)) is None:
        raise Invalid()
    return int(text)


USER_ID = Check(_user_id, ID_SCHEMA)


def _category_parent(value, ctx, arg):
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise Invalid()
    if int(text) != 0 and ctx.snapshot.get(CATEGORIES, int(text)) is None:
        raise Invalid()
    return int(text)


CATEGORY_PARENT = Check(_category_parent, ID_SCHEMA)


def _digits(value, ctx, arg):
    text = str(value).strip()
    if not re.fullmatch(r"\d{1,18}", text):
        raise Invalid()
    return int(text)


# an event id in a path: the handler looks it up (it may name an occurrence of a series)
ID_FORMAT = Check(_digits, ID_SCHEMA)


def terms(resource: Resource, collect=list) -> Check:
    """Existing terms of ``resource`` given by id or slug (CSV or array); ``collect`` builds the
    result (list or set)."""
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
    return Check(check, {"type": "array", "items": _ID_OR_SLUG})


def visible_posts(resource: Resource) -> Check:
    """Ids of posts of ``resource`` that the caller can see (a set)."""
    def check(value, ctx, arg):
        ids = set()
        for item in as_list(value):
            text = str(item).strip()
            record = ctx.snapshot.get(resource, int(text)) if not isinstance(item, (bool, dict, list)) and text.isdigit() else None
            if record is None or not permissions.can_see(ctx.user, record):
                raise Invalid()  # a record the caller may not see is treated as missing
            ids.add(int(text))
        return ids
    return Check(check, {"type": "array", "items": ID_SCHEMA})


def existing_record(resource: Resource) -> Check:
    """The id of an existing record of ``resource`` (a path's): the record itself."""
    def check(value, ctx, arg):
        text = str(value).strip()
        if not text.isdigit() or ctx.snapshot.get(resource, int(text)) is None:
            raise Invalid()
        return ctx.snapshot.get(resource, int(text))
    return Check(check, ID_SCHEMA)


def existing_slug(resource: Resource) -> Check:
    """The slug of an existing record of ``resource`` (a path's): the record itself."""
    def check(value, ctx, arg):
        slug = str(value).strip().lower()
        record = ctx.snapshot.get_slug(resource, slug) if is_safe_slug(slug) else None
        if record is None:
            raise Invalid()
        return record
    return Check(check, {"type": "string", "minLength": 1, "pattern": "^[^/]+$"})


def linked(resource: Resource, args: tuple, component: str) -> LinkedCheck:
    """A venue or organizer value of an event payload: ids, or objects that would pass
    ``args``, the checks of ``resource``'s own create route."""
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
            for nested in args:
                if item.get(nested.name) is None:
                    continue
                try:
                    cleaned[nested.name] = nested.clean(item[nested.name], ctx)
                except Invalid as exc:
                    raise Invalid(f"{arg.name}[{nested.name}]: {exc.reason}") from None
            clean.append(cleaned)
        return clean
    new = {"$ref": f"#/components/schemas/{component}"}
    schema = {"anyOf": [ID_SCHEMA, {"type": "string"}, new, {"type": "array", "items": {"anyOf": [ID_SCHEMA, new]}}]}
    return LinkedCheck(check, schema, component=component, args=args)

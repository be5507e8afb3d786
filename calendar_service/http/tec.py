"""The original's newer REST API, ``tec/v1``: events, venues and organizers as WordPress posts.

Served always at ``/calendar/tec/v1`` and, with ``CALENDAR_WP_COMPAT``, at ``/wp-json/tec/v1``
(see ``prefix.WpCompat``). It is the v1 API under other names: each route below is a v1 route
with its handler, arguments and permission (one pipeline, one set of rules, ETags and commits);
``TecApi`` renames the request's fields to v1's before they are checked (``FIELDS``), and turns
the v1 answer into the WordPress-post shape the newer API gives (bare JSON arrays with
WordPress' paging headers, ``title.rendered``, id arrays). ``DELETE`` trashes, as v1 does, and
``?force=true`` deletes for good.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from flask import Response

from calendar_service.domain import dates
from calendar_service.domain.resources import EVENTS, ORGANIZERS, VENUES
from calendar_service.http import errors
from calendar_service.http.arguments import Arg
from calendar_service.http.call import Call, json_response
from calendar_service.http.dispatch import Api
from calendar_service.http.handlers.records import handle_delete, target
from calendar_service.http.i18n import N_
from calendar_service.http.routes import ROUTES
from calendar_service.http.routing import Endpoint, Route
from calendar_service.http import checks
from calendar_service.http.etags import if_match

RESOURCES = (EVENTS, VENUES, ORGANIZERS)
POST_TYPES = {"events": "tribe_events", "venues": "tribe_venue", "organizers": "tribe_organizer"}

# tec/v1 field name -> v1 field name, per resource (inputs of writes and filters of lists); a
# name not listed is the same in both
FIELDS = {
    "events": {"content": "description", "venues": "venue", "organizers": "organizer",
               "tribe_events_cat": "categories", "featured_media": "image"},
    "venues": {"title": "venue", "content": "description", "state_province": "stateprovince"},
    "organizers": {"title": "organizer", "content": "description"},
}
# list filters: the newer API's names for v1's
LIST_FIELDS = {"events": {"tribe_events_cat": "categories", "venues": "venue", "organizers": "organizer"},
               "venues": {}, "organizers": {}}

FORCE = Arg("force", N_("Whether to delete the record for good instead of moving it to the trash"),
            type="boolean", default=False, check=checks.BOOLEAN_LIKE)


def handle_tec_delete(call: Call):
    """``DELETE``: to the trash as v1 does; with ``force=true`` the record is deleted for good
    (one commit, trashed or not) and the answer is WordPress' ``{"deleted": true, "previous": ...}``."""
    if not call.args.pop("force", False):
        return handle_delete(call)
    call.args.pop("recurrence_scope", None)
    record = target(call)
    before = call.presenter().present_json(record, single=True)
    call.service.delete_for_good(record, call.user, precondition=if_match(call, record))
    return {"deleted": True, "previous": json.loads(before)}, 200


def _tec_endpoint(endpoint: Endpoint) -> Endpoint:
    if "DELETE" in endpoint.methods:
        return Endpoint(endpoint.methods, handle_tec_delete, endpoint.args + (FORCE,), endpoint.permission,
                        N_("Move a record to the trash, or delete it for good with force=true"), endpoint.response)
    return endpoint


def build_routes() -> tuple[Route, ...]:
    """The tec/v1 table: the index, then for events, venues and organizers the v1 list and id
    routes (their endpoints, with the delete that takes ``force``). No ``/tickets``: a site without
    the original's tickets plugin has no such route either (404 ``rest_no_route``)."""
    v1 = {route.pattern: route for route in ROUTES}
    routes = [v1[""]]
    for resource in RESOURCES:
        for pattern in (f"/{resource.name}", rf"/{resource.name}/(?P<id>\d+)"):
            route = v1[pattern]
            routes.append(Route(pattern, tuple(_tec_endpoint(e) for e in route.endpoints), route.resource))
    return tuple(routes)


TEC_ROUTES = build_routes()


def match(path: str):
    for route in TEC_ROUTES:
        found = route.regex.match(path)
        if found:
            return route, found.groupdict()
    return None


class TecApi(Api):
    """The request and answer of tec/v1 in and out of v1's forms."""

    def adapt_request(self, route: Route, method: str, raw: dict, svc) -> dict:
        resource = route.resource
        if resource is None:
            return raw
        if method == "GET" and route.pattern == f"/{resource.name}":
            raw = _renamed(raw, LIST_FIELDS[resource.name])
            if resource is EVENTS:
                _event_window(raw, svc.site_tz)
            # the original lists published records unless a status is asked for, whoever asks
            raw.setdefault("status", "publish")
            return raw
        if method in ("POST", "PUT", "PATCH"):
            raw = _renamed(raw, FIELDS[resource.name])
            if resource is EVENTS:
                _event_dates(raw, svc.site_tz)
        return raw

    def adapt_response(self, call: Call, response: Response) -> Response:
        resource = call.resource
        if resource is None or response.status_code >= 300 or response.mimetype != "application/json":
            return response
        body = json.loads(response.get_data())
        if isinstance(body, dict) and resource.name in body and "total" in body:   # a list
            out = [post(resource, item) for item in body[resource.name]]
            response.headers["X-WP-Total"] = str(body["total"])
            response.headers["X-WP-TotalPages"] = str(body["total_pages"])
        elif isinstance(body, dict) and body.get("deleted") is True:
            out = {"deleted": True, "previous": post(resource, body["previous"])}
        else:
            out = post(resource, body)
        answer = json_response(out, response.status_code)
        for key, value in response.headers.items():
            if key.lower() not in ("content-length", "content-type"):
                answer.headers[key] = value
        return answer


TEC = TecApi(TEC_ROUTES, match)


def _renamed(raw: dict, names: dict) -> dict:
    out = {}
    for key, value in raw.items():
        new = names.get(key, key)
        if new != key and new in raw:   # the v1 name given as well wins
            continue
        out[new] = value
    return out


def _event_window(raw: dict, site_tz) -> None:
    """The original's date filters: ``start_date`` keeps the events that start from the beginning
    of that day, ``end_date`` those that end by its end, and without them every event is listed
    (v1's take the events that overlap them, in a window around today by default): given to v1
    as its exact ``starts_after`` (the earliest moment when not given) and ``ends_before``."""
    raw["strict_dates"] = True
    for name, key, edge in (("start_date", "starts_after", dates.start_of_day),
                            ("end_date", "ends_before", dates.end_of_day)):
        value = raw.pop(name, None)
        if value is None or key in raw:
            continue
        try:
            raw[key] = dates.fmt(edge(dates.parse(value, site_tz)))
        except dates.DateParseError:
            raise errors.invalid_params({name: f"Invalid date: {value}"}, {}) from None
    raw.setdefault("starts_after", EARLIEST)


EARLIEST = "1970-01-01 00:00:00"


def _event_dates(raw: dict, site_tz) -> None:
    """``start_date_utc``/``end_date_utc`` (UTC wall-clock times) stand for the local dates when
    those are not given; ``duration`` (seconds) sets the end from the start when no end is given."""
    for key in ("start_date", "end_date"):
        utc = raw.pop(f"{key}_utc", None)
        if utc is not None and raw.get(key) is None:
            try:
                moment = dates.parse(utc, timezone.utc)
            except dates.DateParseError:
                raise errors.invalid_params({f"{key}_utc": f"Invalid date: {utc}"}, {}) from None
            raw[key] = moment.isoformat()
    duration = raw.pop("duration", None)
    if duration is not None and raw.get("end_date") is None and raw.get("start_date") is not None:
        try:
            seconds = int(duration)
            start = dates.parse(raw["start_date"], dates.zone(raw.get("timezone"), site_tz))
        except (TypeError, ValueError, dates.DateParseError):
            raise errors.invalid_params({"duration": "duration is not a number of seconds"}, {}) from None
        raw["end_date"] = dates.fmt(start + timedelta(seconds=seconds))


# ----------------------------------------------------------------------------- the answer's shape


def _wp_date(value) -> str | None:
    return value.replace(" ", "T") if isinstance(value, str) and value else value


def _ids(value) -> list[int]:
    if isinstance(value, dict):
        value = [value]
    return [item["id"] for item in value or [] if isinstance(item, dict) and "id" in item]


def _embedded(resource, value) -> list[dict]:
    if isinstance(value, dict):
        value = [value]
    return [post(resource, item) for item in value or [] if isinstance(item, dict)]


def post(resource, item: dict) -> dict:
    """A v1 record in the WordPress-post shape of tec/v1 (the v1 fields of its type kept beside)."""
    if not isinstance(item, dict) or "id" not in item:
        return item
    title = item.get("title") if resource is EVENTS else item.get(resource.singular)
    image = item.get("image")
    out = {
        "id": item["id"],
        "date": _wp_date(item.get("date")),
        "date_gmt": _wp_date(item.get("date_utc")),
        "modified": _wp_date(item.get("modified")),
        "modified_gmt": _wp_date(item.get("modified_utc")),
        "slug": item.get("slug", ""),
        "status": item.get("status", ""),
        "type": POST_TYPES[resource.name],
        "link": item.get("url", ""),
        "title": {"rendered": title or ""},
        "content": {"rendered": item.get("description") or "", "protected": False},
        "excerpt": {"rendered": item.get("excerpt") or "", "protected": False},
        "author": int(item.get("author") or 0),
        "featured_media": image.get("id") or 0 if isinstance(image, dict) else 0,
        "guid": {"rendered": item.get("url", "")},
        "comment_status": "closed", "ping_status": "closed", "format": "standard", "template": "",
        "sticky": bool(item.get("sticky")),
    }
    if resource is EVENTS:
        out.update(_event_fields(item))
    elif resource is VENUES:
        out.update({k: item.get(k, "") for k in ("address", "city", "country", "province", "state", "zip", "phone",
                                                  "website")})
        out["state_province"] = item.get("stateprovince", "")
        out["lat"] = item.get("geo_lat")
        out["lng"] = item.get("geo_lng")
    elif resource is ORGANIZERS:
        out.update({k: item.get(k, "") for k in ("phone", "website", "email")})
    return out


def _moment(text):
    """A stored ``YYYY-MM-DD HH:MM:SS`` time (what v1 answers), else None."""
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None


def _event_fields(item: dict) -> dict:
    start, end = item.get("utc_start_date"), item.get("utc_end_date")
    now = dates.fmt(dates.utc_now())
    organizers = _embedded(ORGANIZERS, item.get("organizer"))
    first, last = _moment(start), _moment(end)
    duration = int((last - first).total_seconds()) if first and last else 0
    return {
        "start_date": item.get("start_date"), "start_date_utc": start,
        "end_date": item.get("end_date"), "end_date_utc": end,
        "timezone": item.get("timezone"), "duration": duration, "all_day": bool(item.get("all_day")),
        "featured": bool(item.get("featured")),
        "cost": item.get("cost", ""), "website": item.get("website", ""),
        "multiday": (item.get("start_date") or "")[:10] != (item.get("end_date") or "")[:10],
        "is_past": bool(end) and end < now, "is_now": bool(start and end) and start <= now <= end,
        "ticketed": False,
        "organizer_names": [o["title"]["rendered"] for o in organizers],
        "organizers": organizers, "venues": _embedded(VENUES, item.get("venue")),
        "tribe_events_cat": _ids(item.get("categories")), "tags": _ids(item.get("tags")),
    }

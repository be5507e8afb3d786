"""The event list: its date window and filters, as JSON or as an iCalendar feed."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dateutil.relativedelta import relativedelta
from flask import Response, request

from calendar_service.http import errors
from calendar_service.domain import dates, queries
from calendar_service.domain.resources import EVENTS
from calendar_service.http import ical, memory
from calendar_service.http.call import Call
from calendar_service.http.handlers.paging import page_size, paging_links, post_list, set_totals, statuses_of


def events_archive(call: Call):
    args, present = call.args, call.present
    tz = call.service.site_tz
    strict = args.get("strict_dates", False)
    now = datetime.now(timezone.utc).astimezone(tz)
    query = queries.EventQuery(page=args["page"], per_page=page_size(call), statuses=statuses_of(call),
                               unlocked=call.unlocked)
    echo: list[tuple[str, object]] = [("page", query.page), ("per_page", query.per_page)]
    relative_keys = ("starts_before", "starts_after", "ends_before", "ends_after")
    relative = any(k in present for k in relative_keys)
    bounds: dict[str, datetime] = {}
    if "include" not in present:
        # the default window: from yesterday (whole day) to 24 months ahead (whole day)
        raw_dates = {}
        if "start_date" in present:
            raw_dates["start_date"] = dates.parse(args["start_date"], tz)
        elif not relative:
            raw_dates["start_date"] = (now - timedelta(days=1)).replace(hour=23, minute=59, second=0, microsecond=0)
        if "end_date" in present:
            raw_dates["end_date"] = dates.parse(args["end_date"], tz)
        elif not relative:
            raw_dates["end_date"] = (now + relativedelta(months=24)).replace(microsecond=0)
        for key in relative_keys:
            if key in present:
                raw_dates[key] = dates.parse(args[key], tz)
        for key, moment in raw_dates.items():
            moment = moment.astimezone(tz)
            if not strict:
                moment = dates.start_of_day(moment) if key == "start_date" else dates.end_of_day(moment)
            bounds[key] = moment
    for key in ("start_date", "end_date"):
        if key in bounds:
            echo.append((key, dates.fmt(bounds[key])))
    query.start = bounds["start_date"].astimezone(timezone.utc) if "start_date" in bounds else None
    query.end = bounds["end_date"].astimezone(timezone.utc) if "end_date" in bounds else None
    for key in relative_keys:
        if key in bounds:
            setattr(query, key, bounds[key].astimezone(timezone.utc))
    if "search" in args:
        query.search = args["search"]
        echo.append(("search", args["search"]))
    if "geoloc" in args:
        query.geoloc = args["geoloc"]
        echo.append(("geoloc", args["geoloc"]))
    if ("geoloc_lat" in args) != ("geoloc_lng" in args):
        missing = "geoloc_lng" if "geoloc_lat" in args else "geoloc_lat"
        raise errors.invalid_param(missing, "geoloc_lat and geoloc_lng must be given together.")
    if "geoloc_lat" in args:
        query.near = (args["geoloc_lat"], args["geoloc_lng"])
        echo += [("geoloc_lat", args["geoloc_lat"]), ("geoloc_lng", args["geoloc_lng"])]
    echo.append(("status", ",".join(query.statuses)))
    if "post_parent" in args:
        query.post_parent = args["post_parent"]
        echo.append(("post_parent", args["post_parent"]))
    if "include" in args:
        query.include = args["include"]
        echo.append(("include", args["include"]))
    for key in relative_keys:
        if key in bounds:
            echo.append((key, dates.fmt(bounds[key])))
    if "ticketed" in args:
        query.ticketed = args["ticketed"]
        echo.append(("ticketed", args["ticketed"]))
    for key, attr in (("venue", "venues"), ("organizer", "organizers")):
        if key in args:
            setattr(query, attr, args[key])
            echo.append((key, args[key]))
    if "featured" in args:
        query.featured = args["featured"]
        echo.append(("featured", args["featured"]))
    # the original drops these from its links, so following next_rest_url loses them; we keep them
    for key in ("categories", "tags"):
        if key in args:
            setattr(query, key, args[key])
            echo.append((key, args[key]))
    if "strict_dates" in present:
        echo.append(("strict_dates", "true" if strict else "false"))
    if wants_ical(call):
        return _events_feed(call, query, echo)
    result = call.service.list_events(query, call.user, call.snapshot)
    return post_list(call, EVENTS, result, echo, "event")


# Accept headers that can only choose JSON (text/*, or */* with JSON ranked lower, can choose iCalendar)
_PLAIN_ACCEPT = ("", "*/*", "application/json")


def wants_ical(call: Call) -> bool:
    """Whether the caller asked for iCalendar: ``ical`` when given (either way), else an Accept
    header preferring text/calendar over application/json (a tie or */* stays JSON)."""
    call.headers["Vary"] = "Accept"  # event reads have two representations
    if "ical" in call.args:
        return call.args["ical"]
    if request.headers.get("Accept", "") in _PLAIN_ACCEPT:   # most requests: no parsing of Accept
        return False
    best = request.accept_mimetypes.best_match(["application/json", ical.MEDIA_TYPE])
    return best == ical.MEDIA_TYPE


def ical_response(chunks, filename: str, events: int = 0) -> Response:
    """A streamed text/calendar response offering ``filename`` (made of a slug; kept to safe ASCII);
    once a feed of many ``events`` is sent and closed, the heap's free space goes back to the system."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in filename)
    response = Response(chunks, status=200, headers={
        "Content-Type": ical.MEDIA_TYPE + "; charset=utf-8",
        "Content-Disposition": f'attachment; filename="{safe}"',
    })
    if events >= memory.TRIM_AFTER_EVENTS:
        response.call_on_close(memory.give_back)
    return response


UNPAGED = 2**31 - 1   # per_page of a feed without page/per_page (pages are sliced, never allocated)


def _events_feed(call: Call, query: queries.EventQuery, echo: list[tuple[str, object]]) -> Response:
    """The event list as an iCalendar feed: the same selection and order as the JSON list.

    Without an explicit ``page`` or ``per_page`` the feed holds every matching event file (one
    page of them all): the index, or the scanning fallback, answers the files directly
    (``EventQuery.files``), a series once, in the place of its first occurrence that matches the
    window and the filters, also when its first one is before the window; no occurrence is
    presented. With ``page`` or ``per_page``, exactly the JSON list's page, with the same
    headers, each occurrence on it as its series (once).
    """
    paged = bool({"page", "per_page"} & call.present)
    if not paged:
        # every matching file on one page (pages are sliced, never allocated)
        query.page, query.per_page, query.files = 1, UNPAGED, True
    result = call.service.list_events(query, call.user, call.snapshot)
    if result.page > 1 and not result.items:
        raise errors.plugin_error("event-archive-page-not-found")
    items = result.items
    if paged:
        if "ical" in call.present:
            echo = echo + [("ical", True)]  # following Link keeps the representation
        paging_links(call, echo, result.page, result.page * result.per_page < result.total,
               result.page > 1 and result.total > 0, EVENTS)
        items = _series_of_items(call.snapshot, items)
    set_totals(call, result)
    presenter = ical.IcalPresenter(call.snapshot, call.urls, call.service.site_tz, call.unlocked, call.user)
    return ical_response(presenter.feed(items), "events.ics", len(items))


def _series_of_items(snapshot, items: list) -> list:
    """A page's events with each occurrence replaced by its series (once, at its first place)."""
    out, seen = [], set()
    for item in items:
        series_id = getattr(item, "series_id", 0)   # an occurrence record (domain/occurrences.py)
        record = snapshot.get(EVENTS, series_id) if series_id else item
        if record is not None and record.id not in seen:
            seen.add(record.id)
            out.append(record)
    return out

"""Single-record routes: read (JSON with an ETag, or iCalendar), create, update, delete."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from urllib.parse import quote

from flask import Response, request

from calendar_service.domain import permissions
from calendar_service.http import errors
from calendar_service.domain import dates, queries
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS
from calendar_service.http import ical
from calendar_service.http.call import Call
from calendar_service.http.etags import if_match, matches, record_etag
from calendar_service.http.handlers import series
from calendar_service.http.handlers.events import ical_response, wants_ical
from calendar_service.http.handlers.paging import page_size, post_list


def event_record(call: Call) -> Record:
    """The event an id route names: 404 when no record has the id, 400 when it is not an event."""
    record = call.record
    if record is None:
        raise errors.plugin_error("rest-event-not-found", id=call.args.get("id"))
    if record.resource is not EVENTS:
        raise errors.plugin_error("rest-invalid-event-id", id=record.id)
    return record


# names the file of a record served as its last good version (its file no longer parses): path:line
STALE_HEADER = "X-Calendar-Stale"


def mark_stale(call: Call, record: Record, snapshot=None) -> None:
    """Say in ``STALE_HEADER`` where ``record``'s file breaks when it is served as its last good
    version (the path percent-encoded as in a URL)."""
    found = (snapshot or call.snapshot).stale_of(record)
    if found is not None:
        call.headers[STALE_HEADER] = f"{quote(found.path, safe='/')}:{found.line}"


def target(call: Call) -> Record:
    if call.resource is EVENTS:
        return event_record(call)
    return call.record


def handle_single(call: Call):
    record = target(call)
    call.service.check_readable(record, call.user)
    mark_stale(call, record)
    if record.resource is EVENTS:
        _check_event_password(call, record)
        if wants_ical(call):
            feed = ical.IcalPresenter(call.snapshot, call.urls, call.service.site_tz, call.unlocked, call.user).feed([record])
            return ical_response(feed, f"{record.slug}.ics")
    tag = record_etag(call, call.snapshot, record)
    if matches(request.headers.get("If-None-Match"), tag, weak=True):
        return Response(status=304, headers={"ETag": tag})
    text = call.presenter().present_json(record, single=True)
    return Response(text, status=200, headers={"Content-Type": "application/json; charset=UTF-8", "ETag": tag})


def _check_event_password(call: Call, record: Record) -> None:
    """A protected event's single read needs its password (compared in constant time)."""
    if "password" in call.raw:  # 429 once this address used up its guesses at this event
        call.service.accounts.limits.check_event(record.id, call.service.accounts.limits.client(request))
    if not call.unlocked(record):
        raise errors.plugin_error("event-password-protected")


def _written(call: Call, record: Record, status: int):
    """The answer of a write: the record as the branch head now holds it (as a following single
    read shows it, a series with its ``recurrence`` block), with its new ETag."""
    presenter = call.presenter(after_write=True)
    call.headers["ETag"] = record_etag(call, presenter.snapshot, record)
    return presenter.present_written(record), status


def handle_create(call: Call):
    record, status = call.service.create(call.resource, call.args, call.user)
    return _written(call, record, status)


def handle_update(call: Call):
    scoped = series.scoped_target(call)
    if scoped is not None:
        return series.handle_update(call, *scoped)
    record = target(call)
    updated = call.service.update(record, call.args, call.user, precondition=if_match(call, record))
    return _written(call, updated, 200)


def handle_delete(call: Call):
    scoped = series.scoped_target(call)
    if scoped is not None:
        answer = series.handle_delete(call, *scoped)
        if answer is not None:
            return answer
        if not permissions.can_delete(call.user, scoped[0]):  # addressed by an occurrence id
            raise errors.forbidden(call.user is not None)
        call.record = scoped[0]  # the whole series: the ordinary delete
    record = target(call)
    if record.resource.kind == "term":
        before = call.presenter().present(record)
        call.service.delete(record, call.user, precondition=if_match(call, record))
        return before, 200
    deleted = call.service.delete(record, call.user, precondition=if_match(call, record))
    return _written(call, deleted, 200)


def handle_occurrences(call: Call):
    """``GET /events/{id}/occurrences``: a series' occurrences as an event list (an event that does
    not repeat is its only occurrence), read with the series' permissions, by start, from the start
    of yesterday (as event lists) unless ``start_date`` is given, up to the horizon."""
    record = event_record(call)
    if getattr(record, "series_id", 0):   # an occurrence id names no series
        raise errors.plugin_error("rest-event-not-found", id=record.id)
    call.service.check_readable(record, call.user)
    args, tz = call.args, call.service.site_tz
    query = queries.EventQuery(page=args["page"], per_page=page_size(call), statuses=(record.status,),
                               unlocked=call.unlocked, owner=record.id)
    echo: list[tuple[str, object]] = [("page", query.page), ("per_page", query.per_page)]
    if "start_date" in call.present:
        start = dates.start_of_day(dates.parse(args["start_date"], tz).astimezone(tz))
    else:
        start = dates.start_of_day(datetime.now(timezone.utc).astimezone(tz) - timedelta(days=1))
    query.start = start.astimezone(timezone.utc)
    echo.append(("start_date", dates.fmt(start)))
    if "end_date" in call.present:
        end = dates.end_of_day(dates.parse(args["end_date"], tz).astimezone(tz))
        query.end = end.astimezone(timezone.utc)
        echo.append(("end_date", dates.fmt(end)))
    result = call.service.list_events(query, call.user, call.snapshot)
    return post_list(call, EVENTS, result, echo, "event", path=("events", record.id, "occurrences"))

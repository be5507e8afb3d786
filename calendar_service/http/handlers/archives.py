"""List routes: events (see ``events``), venues and organizers, categories and tags."""
from __future__ import annotations

from calendar_service.domain import queries
from calendar_service.domain.resources import EVENTS, ORGANIZERS, VENUES
from calendar_service.http.call import Call
from calendar_service.http.presenters import listed_json
from calendar_service.http.handlers.events import events_archive
from calendar_service.http.handlers.paging import page_size, paging_links, post_list, set_totals, statuses_of


def handle_archive(call: Call):
    if call.resource is EVENTS:
        return events_archive(call)
    if call.resource in (VENUES, ORGANIZERS):
        return _linked_archive(call)
    return _terms_archive(call)


def _linked_archive(call: Call):
    args = call.args
    query = queries.LinkedQuery(page=args["page"], per_page=page_size(call), statuses=statuses_of(call))
    echo: list[tuple[str, object]] = [("page", query.page), ("per_page", query.per_page)]
    if "search" in args:
        query.search = args["search"]
        echo.append(("search", args["search"]))
    if "event" in args:
        query.event = args["event"]
        echo.append(("event", args["event"]))
    if "has_events" in args:
        query.has_events = args["has_events"]
        echo.append(("has_events", args["has_events"]))
    if args.get("only_with_upcoming"):
        query.only_with_upcoming = True
        echo.append(("only_with_upcoming", True))
    echo.append(("status", ",".join(query.statuses)))
    result = call.service.list_linked(call.resource, query, call.user, call.snapshot)
    return post_list(call, call.resource, result, echo, call.resource.singular)


def _terms_archive(call: Call):
    args = call.args
    presenter = call.presenter()
    query = queries.TermQuery(page=args["page"], per_page=page_size(call))
    echo: list[tuple[str, object]] = []
    for key in ("search", "include", "exclude", "order", "orderby", "parent", "slug"):
        if key in args:
            setattr(query, key, args[key])
    if "hide_empty" in call.present:
        query.hide_empty = args["hide_empty"]
    if "post" in args:
        query.post = args["post"]
    if "event" in args:
        query.post = args["event"]  # `event` wins over `post`, as in the original
    for key in ("per_page", "search", "include", "exclude", "order", "orderby", "hide_empty", "parent", "post",
                "event", "slug"):
        if key in call.present:
            echo.append((key, args[key]))
    result = call.service.list_terms(call.resource, query, presenter.term_count, call.snapshot)
    links = paging_links(call, echo, result.page, result.page < result.total_pages, result.page > 1, call.resource)
    body = {"rest_url": links.pop("rest_url"), "total": result.total, "total_pages": result.total_pages,
            call.resource.name: listed_json(presenter, result.items)}
    body.update(links)
    set_totals(call, result)
    return body, 200

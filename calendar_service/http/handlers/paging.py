"""What every list answer shares: page size, statuses, links to other pages, total headers."""
from __future__ import annotations

from urllib.parse import quote_plus

from calendar_service.http import errors
from calendar_service.domain import permissions, queries
from calendar_service.domain.resources import Resource
from calendar_service.http.call import Call
from calendar_service.http.presenters import listed_json


def page_size(call: Call) -> int:
    return min(call.args["per_page"], call.service.settings.per_page_max)


def paging_links(call: Call, echo: list[tuple[str, object]], page: int, has_next: bool, has_prev: bool,
           resource: Resource, path: str | None = None) -> dict:
    base = call.urls.rest(*path) if path else call.urls.rest(resource.name) + "/"

    def url(params, page_no=None):
        # as the original: the request's parameters, then `page` appended (none for page 1)
        pairs = [(k, v) for k, v in params if k != "page"]
        if page_no is not None:
            pairs.append(("page", page_no))
        query = _urlencode([(k, _echo_value(v)) for k, v in pairs])
        return base + ("?" + query if query else "")

    query = _urlencode([(k, _echo_value(v)) for k, v in echo])
    links = {"rest_url": base + ("?" + query if query else "")}
    if has_next:
        links["next_rest_url"] = url(echo, page + 1)
    if has_prev:
        links["previous_rest_url"] = url(echo, page - 1 if page - 1 > 1 else None)
    link_header = []
    if has_next:
        link_header.append(f'<{links["next_rest_url"]}>; rel="next"')
    if has_prev:
        link_header.append(f'<{links["previous_rest_url"]}>; rel="prev"')
    if link_header:
        call.headers["Link"] = ", ".join(link_header)
    return links


# quote_plus of an ASCII character: itself for letters, digits and "_.-~", "+" for a space, %XX otherwise
_QUOTED = {code: (chr(code) if chr(code).isalnum() or chr(code) in "_.-~" else "+" if code == 32 else f"%{code:02X}")
           for code in range(128)}


def _urlencode(pairs: list[tuple[str, str]]) -> str:
    """``urllib.parse.urlencode(pairs)`` of text pairs (the same text): ASCII text quoted by one
    table lookup per character rather than urlencode's functions (a list answer encodes three)."""
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs)


def _quote(text: str) -> str:
    return text.translate(_QUOTED) if text.isascii() else quote_plus(text)


def _echo_value(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple, set)):
        return ",".join(str(v) for v in (sorted(value) if isinstance(value, set) else value))
    return str(value)


def set_totals(call: Call, page: queries.Page) -> None:
    call.headers["X-TEC-Total"] = str(page.total)
    call.headers["X-TEC-TotalPages"] = str(page.total_pages)


def statuses_of(call: Call) -> tuple[str, ...]:
    if "status" in call.args:
        return call.args["status"]
    return permissions.VISIBLE_TO_EDITORS if permissions.sees_all_statuses(call.user) else ("publish",)


def post_list(call: Call, resource: Resource, result: queries.Page, echo, singular: str, path=None):
    if result.page > 1 and not result.items:
        raise errors.plugin_error(f"{singular}-archive-page-not-found")
    has_next = result.page * result.per_page < result.total
    has_prev = result.page > 1 and result.total > 0
    presenter = call.presenter()
    body = {resource.name: listed_json(presenter, result.items)}
    body.update(paging_links(call, echo, result.page, has_next, has_prev, resource, path))
    body["total"] = result.total
    body["total_pages"] = result.total_pages
    set_totals(call, result)
    return body, 200

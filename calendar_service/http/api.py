"""HTTP: the blueprint, request processing in WordPress' order, and the handlers.

For each request: match the route (404 ``rest_no_route``), gather parameters, inject
defaults, check required ones (400 ``rest_missing_callback_param``), run each present
argument's check (400 ``rest_invalid_param``), check permission (401/403
``rest_forbidden``), then call the handler. Handlers turn parameters into service calls
and records into JSON; they never touch files or git.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from dateutil.relativedelta import relativedelta
from flask import Blueprint, Response, current_app, g, request

from calendar_service.domain import dates
from calendar_service.http import docs
from calendar_service import errors
from calendar_service.http import i18n
from calendar_service.http import ical
from calendar_service.domain import permissions
from calendar_service.domain import queries
from calendar_service.auth.accounts import User
from calendar_service.errors import ApiError
from calendar_service.http.params import CheckContext, CHECKS, Invalid, check_text, coerce, depth, php_nested
from calendar_service.http.presenters import Presenter, Urls
from calendar_service.domain.records import Record
from calendar_service.domain.resources import EVENTS, NO_DEFAULT, ORGANIZERS, VENUES, Resource
from calendar_service.http.routes import NAMESPACE, Endpoint, Route, match
from calendar_service.service.calendar import CalendarService

log = logging.getLogger(__name__)

bp = Blueprint("calendar", __name__)
PREFIX = "/" + NAMESPACE
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_JSON_DEPTH = 32


@dataclass
class Call:
    """One request on its way through the pipeline."""

    route: Route
    endpoint: Endpoint
    service: CalendarService
    user: User | None
    args: dict
    present: set
    urls: Urls
    snapshot: object
    raw: dict = field(default_factory=dict)
    record: Record | None = None
    headers: dict = field(default_factory=dict)
    language: str = i18n.DEFAULT  # of descriptions (index, /doc); data is the same in every language

    @property
    def resource(self) -> Resource:
        return self.route.resource

    def unlocked(self, record: Record) -> bool:
        """Whether this caller may see a password-protected ``record`` in full."""
        secret = record.data.get("password")
        if not secret:
            return True
        given = self.raw.get("password")
        limits = self.service.accounts.limits  # constant-time compare; wrong guesses are counted
        if limits.event_password(record.id, limits.client(request), given, str(secret)):
            return True
        return permissions.can_edit(self.user, record)

    def presenter(self, after_write: bool = False) -> Presenter:
        """Objects of the request's snapshot (one commit for the whole read), or of the branch
        head after this request's write."""
        snapshot = self.service.snapshot() if after_write else self.snapshot
        return Presenter(snapshot, self.urls, self.service.site_tz, self.unlocked)


def service() -> CalendarService:
    return current_app.extensions["calendar"]


# ----------------------------------------------------------------------------- dispatch


@bp.route(PREFIX, defaults={"rest": ""}, methods=ALL_METHODS, strict_slashes=False)
@bp.route(PREFIX + "/<path:rest>", methods=ALL_METHODS)
def dispatch(rest: str):
    svc = service()
    path = "/" + rest.strip("/") if rest.strip("/") else ""
    method = "GET" if request.method == "HEAD" else request.method
    found = match(path)
    if found is None:
        raise errors.no_route()
    route, path_values = found
    g.calendar_allow = ", ".join(route.methods)  # errors of a matched route carry Allow too
    if method == "OPTIONS":
        return Response(status=204, headers={"Allow": ", ".join(route.methods)})
    endpoint = route.endpoint_for(method)
    if endpoint is None:
        raise errors.no_route()
    user = authenticate(svc)
    snapshot = svc.snapshot()
    raw = gather(path_values)
    args, present = validate(endpoint, raw, CheckContext(snapshot, user, svc.accounts, svc.site_tz), svc)
    base = request.host_url.rstrip("/")
    segment = request.environ.get(i18n.ENVIRON_KEY)  # /it/calendar/events/v1/...: links keep it
    urls = Urls(rest_base=base + (f"/{segment}" if segment else "") + PREFIX, site=svc.settings.site_url or base)
    call = Call(route, endpoint, svc, user, args, present, urls, snapshot, raw,
                language=i18n.choose(raw.get("i18n_language"), segment))
    call.record = resolve_record(call)
    g.calendar_allow = ", ".join(allowed_methods(call))
    authorize(call)
    result = HANDLERS[endpoint.handler](call)
    # handlers answer (body, status) for JSON, or a ready Response for another representation
    response = result if isinstance(result, Response) else json_response(*result)
    for key, value in call.headers.items():
        response.headers[key] = value
    return response


def encode_json(body) -> str:
    """The exact text of a JSON response body (ETags are computed from it)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def json_response(body, status: int = 200) -> Response:
    return Response(encode_json(body), status=status, headers={"Content-Type": "application/json; charset=UTF-8"})


def authenticate(svc: CalendarService) -> User | None:
    """The signed-in user, None when anonymous; wrong credentials are a 401, never silently anonymous."""
    header = request.headers.get("Authorization")
    if not header:
        return None
    user = svc.accounts.authenticate_header(header, svc.accounts.limits.client(request))
    if user is None:
        raise ApiError("incorrect_password", "The user name or application password is not correct.", 401)
    return user


def gather(path_values: dict) -> dict:
    """Every parameter of the request, body over query string, path over everything."""
    try:
        params = php_nested(request.args.items(multi=True))
    except Invalid as exc:
        raise ApiError("rest_invalid_param", exc.reason, 400) from None
    if request.method in ("POST", "PUT", "PATCH", "DELETE"):
        mimetype = request.mimetype or ""
        if mimetype == "application/json" or mimetype.endswith("+json"):
            data = request.get_data(cache=True)
            if data.strip():
                try:
                    body = json.loads(data)
                except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                    raise ApiError("rest_invalid_json", f"Invalid JSON body passed: {exc}".split(": line")[0], 400) from None
                if not isinstance(body, dict):
                    raise ApiError("rest_invalid_json", "The JSON body must be an object.", 400)
                if depth(body, MAX_JSON_DEPTH + 1) > MAX_JSON_DEPTH:
                    raise ApiError("rest_invalid_json", "The JSON body is nested too deeply.", 400)
                params.update(body)
        elif mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            request.get_data(cache=True)  # keep the raw body: a webhook's signature covers it
            try:
                params.update(php_nested(request.form.items(multi=True)))
            except Invalid as exc:
                raise ApiError("rest_invalid_param", exc.reason, 400) from None
    params.update(path_values)
    return params


def validate(endpoint: Endpoint, raw: dict, ctx: CheckContext, svc: CalendarService) -> tuple[dict, set]:
    """Defaults, required arguments, then each argument's check, as WordPress runs them."""
    present = {a.name for a in endpoint.args if raw.get(a.name) is not None}
    values = {}
    for arg in endpoint.args:
        if raw.get(arg.name) is not None:
            values[arg.name] = raw[arg.name]
        elif arg.name == "per_page" and "per_page" not in raw:
            values["per_page"] = svc.settings.per_page_default
        elif arg.default is not NO_DEFAULT and arg.default is not None:
            values[arg.name] = arg.default
    missing = [a.name for a in endpoint.args if a.required and a.name not in values]
    if missing:
        raise errors.missing_params(missing)
    reasons, details = {}, {}
    clean = {}
    for arg in endpoint.args:
        if arg.name not in values:
            continue
        try:
            check_text(values[arg.name])
            if arg.check:
                clean[arg.name] = CHECKS[arg.check](values[arg.name], ctx, arg)
            else:
                clean[arg.name] = coerce(arg, values[arg.name])
        except Invalid as exc:
            reasons[arg.name] = exc.reason
            if exc.detail:
                details[arg.name] = exc.detail
    if reasons:
        raise errors.invalid_params(reasons, details)
    return clean, present


def resolve_record(call: Call) -> Record | None:
    """The record a single-item route addresses, when it exists (checks resolved most already)."""
    args = call.args
    if call.resource is None:
        return None
    for key in ("id", "slug"):
        value = args.get(key)
        if isinstance(value, Record):
            del args[key]  # the path names the record; it is not a field to write
            return value
    if call.resource is EVENTS and isinstance(args.get("id"), int):
        return call.snapshot.ids["posts"].get(args["id"])
    return None


def permitted(call: Call, endpoint: Endpoint) -> bool:
    """Whether the caller passes ``endpoint``'s permission check for the addressed record."""
    rule = endpoint.permission
    user, record, resource = call.user, call.record, call.resource
    if rule in ("public", "signature"):  # a signature is checked by ``authorize`` against the raw body
        return True
    if rule == "create":
        return permissions.can_create(user, resource)
    if rule == "audit":
        return permissions.can_audit(user)
    if record is None or record.resource is not resource:
        # unknown ids fall back to the general capability so the handler can answer 404
        return user is not None and user.can("edit_posts" if rule == "edit" else "delete_posts")
    if rule == "edit":
        return permissions.can_edit(user, record)
    return permissions.can_delete(user, record)


def allowed_methods(call: Call) -> list[str]:
    """The route's methods this caller may use (WordPress' Allow header)."""
    methods: list[str] = []
    for endpoint in call.route.endpoints:
        if permitted(call, endpoint):
            methods.extend(m for m in endpoint.methods if m not in methods)
    return methods


def authorize(call: Call) -> None:
    if call.endpoint.permission == "signature":
        check_signature(call.service.settings)
        return
    if not permitted(call, call.endpoint):
        raise errors.forbidden(call.user is not None)


def check_signature(settings) -> None:
    """Accept the request only if its raw body carries a valid HMAC-SHA256 signature made with
    CALENDAR_WEBHOOK_SECRET (GitHub: ``X-Hub-Signature-256: sha256=HEX``; Gitea, Forgejo:
    ``X-Gitea-Signature``/``X-Forgejo-Signature: HEX``), compared in constant time.

    Raises 403 ``calendar-webhook-disabled`` without a secret or a remote, 401
    ``calendar-webhook-unsigned`` without a signature, 403 ``calendar-webhook-bad-signature``.
    """
    if not settings.webhook_secret or not settings.git_remote:
        raise ApiError("calendar-webhook-disabled", "The git webhook is not enabled on this server "
                       "(it needs CALENDAR_GIT_REMOTE and CALENDAR_WEBHOOK_SECRET).", 403)
    hub = request.headers.get("X-Hub-Signature-256")
    if hub is not None:
        scheme, _, given = hub.strip().partition("=")
        given = given if scheme.lower() == "sha256" else "-"  # present but not sha256=HEX: a wrong signature
    else:
        given = request.headers.get("X-Gitea-Signature") or request.headers.get("X-Forgejo-Signature") or ""
    if not given.strip():
        raise ApiError("calendar-webhook-unsigned", "The request carries no X-Hub-Signature-256 (or "
                       "X-Gitea-Signature) header.", 401)
    expected = hmac.new(settings.webhook_secret.encode("utf-8"), request.get_data(cache=True), hashlib.sha256)
    if not hmac.compare_digest(given.strip().lower().encode("ascii", "replace"), expected.hexdigest().encode("ascii")):
        raise ApiError("calendar-webhook-bad-signature", "The signature does not match the body.", 403)


# ----------------------------------------------------------------------------- handlers


def handle_index(call: Call):
    return docs.namespace_index(call.urls, call.language), 200


def handle_doc(call: Call):
    return docs.openapi(call.urls, call.language), 200


def _event_record(call: Call) -> Record:
    """The event an id route names: 404 when no record has the id, 400 when it is not an event."""
    record = call.record
    if record is None:
        raise errors.plugin_error("rest-event-not-found", id=call.args.get("id"))
    if record.resource is not EVENTS:
        raise errors.plugin_error("rest-invalid-event-id", id=record.id)
    return record


def _target(call: Call) -> Record:
    if call.resource is EVENTS:
        return _event_record(call)
    return call.record


def handle_single(call: Call):
    record = _target(call)
    call.service.check_readable(record, call.user)
    if record.resource is EVENTS:
        _check_event_password(call, record)
        if _wants_ical(call):
            feed = ical.IcalPresenter(call.snapshot, call.urls, call.service.site_tz, call.unlocked).feed([record])
            return _ical_response(feed, f"{record.slug}.ics")
    body = call.presenter().present(record, single=True)
    text = encode_json(body)
    tag = _etag(text)
    if _matches(request.headers.get("If-None-Match"), tag, weak=True):
        return Response(status=304, headers={"ETag": tag})
    response = Response(text, status=200, headers={"Content-Type": "application/json; charset=UTF-8", "ETag": tag})
    return response


# ----------------------------------------------------------------------------- ETags


def _etag(text: str) -> str:
    """The ETag of a single read: a hash of the exact response body.

    Hashing the body itself (rather than the record's blob or the commit) makes the tag
    change exactly when the body would: an event embeds its venue, organizers and terms
    (with their counts), a password-protected record is blanked or not depending on the
    caller and the password given, and URLs depend on the host asked. Unrelated commits
    leave it alone, so caches stay valid across other records' writes. By id and by slug
    the body, hence the tag, is the same.
    """
    return '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40] + '"'


def _matches(header: str | None, tag: str | None, weak: bool) -> bool:
    """Whether an If-Match / If-None-Match header names ``tag`` (``*``: any existing record).

    If-None-Match compares weakly (a ``W/`` prefix is ignored), If-Match strongly."""
    if header is None or tag is None:
        return False
    for item in header.split(","):
        item = item.strip()
        if item == "*":
            return True
        if weak and item.startswith("W/"):
            item = item[2:]
        if item == tag:
            return True
    return False


def _if_match(call: Call, record: Record):
    """The precondition an ``If-Match`` header puts on a write, or None without the header.

    It runs inside the service's write lock against the head the write is built on (not
    against this request's snapshot), so a write made meanwhile by anyone turns the tag
    stale and this write into a 412 with no commit.
    """
    header = request.headers.get("If-Match")
    if header is None:
        return None

    def check(snapshot) -> None:
        current = snapshot.get(record.resource, record.id)
        tag = None
        if current is not None:
            presenter = Presenter(snapshot, call.urls, call.service.site_tz, call.unlocked)
            tag = _etag(encode_json(presenter.present(current, single=True)))
        if not _matches(header, tag, weak=False):
            raise ApiError("rest_precondition_failed",
                           "The record changed since it was read (If-Match does not match its current ETag).", 412)
    return check


def _check_event_password(call: Call, record: Record) -> None:
    """A protected event's single read needs its password (compared in constant time)."""
    if "password" in call.raw:  # 429 once this address used up its guesses at this event
        call.service.accounts.limits.check_event(record.id, call.service.accounts.limits.client(request))
    if not call.unlocked(record):
        raise errors.plugin_error("event-password-protected")


def handle_create(call: Call):
    record, status = call.service.create(call.resource, call.args, call.user)
    return call.presenter(after_write=True).present(record), status


def handle_update(call: Call):
    record = _target(call)
    updated = call.service.update(record, call.args, call.user, precondition=_if_match(call, record))
    return call.presenter(after_write=True).present(updated), 200


def handle_delete(call: Call):
    record = _target(call)
    if record.resource.kind == "term":
        before = call.presenter().present(record)
        call.service.delete(record, call.user, precondition=_if_match(call, record))
        return before, 200
    deleted = call.service.delete(record, call.user, precondition=_if_match(call, record))
    return call.presenter(after_write=True).present(deleted), 200


def handle_archive(call: Call):
    if call.resource is EVENTS:
        return _events_archive(call)
    if call.resource in (VENUES, ORGANIZERS):
        return _linked_archive(call)
    return _terms_archive(call)


def _per_page(call: Call) -> int:
    return min(call.args["per_page"], call.service.settings.per_page_max)


def _links(call: Call, echo: list[tuple[str, object]], page: int, has_next: bool, has_prev: bool,
           resource: Resource) -> dict:
    base = call.urls.rest(resource.name) + "/"

    def url(params, page_no=None):
        # as the original: the request's parameters, then `page` appended (none for page 1)
        pairs = [(k, v) for k, v in params if k != "page"]
        if page_no is not None:
            pairs.append(("page", page_no))
        query = urlencode([(k, _echo_value(v)) for k, v in pairs])
        return base + ("?" + query if query else "")

    query = urlencode([(k, _echo_value(v)) for k, v in echo])
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


def _echo_value(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple, set)):
        return ",".join(str(v) for v in (sorted(value) if isinstance(value, set) else value))
    return str(value)


def _totals(call: Call, page: queries.Page) -> None:
    call.headers["X-TEC-Total"] = str(page.total)
    call.headers["X-TEC-TotalPages"] = str(page.total_pages)


def _statuses(call: Call) -> tuple[str, ...]:
    if "status" in call.args:
        return call.args["status"]
    return permissions.VISIBLE_TO_EDITORS if permissions.sees_all_statuses(call.user) else ("publish",)


def _events_archive(call: Call):
    args, present = call.args, call.present
    tz = call.service.site_tz
    strict = args.get("strict_dates", False)
    now = datetime.now(timezone.utc).astimezone(tz)
    query = queries.EventQuery(page=args["page"], per_page=_per_page(call), statuses=_statuses(call))
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
    if _wants_ical(call):
        return _events_feed(call, query, echo)
    result = call.service.list_events(query, call.user, call.snapshot)
    return _post_list(call, EVENTS, result, echo, "event")


def _wants_ical(call: Call) -> bool:
    """Whether the caller asked for iCalendar: ``ical`` when given (either way), else an Accept
    header preferring text/calendar over application/json (a tie or */* stays JSON)."""
    call.headers["Vary"] = "Accept"  # event reads have two representations
    if "ical" in call.args:
        return call.args["ical"]
    best = request.accept_mimetypes.best_match(["application/json", ical.MEDIA_TYPE])
    return best == ical.MEDIA_TYPE


def _ical_response(chunks, filename: str) -> Response:
    """A streamed text/calendar response offering ``filename`` (made of a slug; kept to safe ASCII)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in filename)
    return Response(chunks, status=200, headers={
        "Content-Type": ical.MEDIA_TYPE + "; charset=utf-8",
        "Content-Disposition": f'attachment; filename="{safe}"',
    })


def _events_feed(call: Call, query: queries.EventQuery, echo: list[tuple[str, object]]) -> Response:
    """The event list as an iCalendar feed: the same selection and order as the JSON list.

    Without an explicit ``page`` or ``per_page`` the feed holds every matching event (one
    page of them all); with either, exactly the JSON list's page, with the same headers.
    """
    paged = bool({"page", "per_page"} & call.present)
    if not paged:
        query.page, query.per_page = 1, max(1, len(call.snapshot.all(EVENTS)))
    result = call.service.list_events(query, call.user, call.snapshot)
    if result.page > 1 and not result.items:
        raise errors.plugin_error("event-archive-page-not-found")
    if paged:
        if "ical" in call.present:
            echo = echo + [("ical", True)]  # following Link keeps the representation
        _links(call, echo, result.page, result.page * result.per_page < result.total,
               result.page > 1 and result.total > 0, EVENTS)
    _totals(call, result)
    presenter = ical.IcalPresenter(call.snapshot, call.urls, call.service.site_tz, call.unlocked)
    return _ical_response(presenter.feed(result.items), "events.ics")


def _post_list(call: Call, resource: Resource, result: queries.Page, echo, singular: str):
    if result.page > 1 and not result.items:
        raise errors.plugin_error(f"{singular}-archive-page-not-found")
    has_next = result.page * result.per_page < result.total
    has_prev = result.page > 1 and result.total > 0
    presenter = call.presenter()
    body = {resource.name: [presenter.present(r) for r in result.items]}
    body.update(_links(call, echo, result.page, has_next, has_prev, resource))
    body["total"] = result.total
    body["total_pages"] = result.total_pages
    _totals(call, result)
    return body, 200


def _linked_archive(call: Call):
    args = call.args
    query = queries.LinkedQuery(page=args["page"], per_page=_per_page(call), statuses=_statuses(call))
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
    return _post_list(call, call.resource, result, echo, call.resource.singular)


def _terms_archive(call: Call):
    args = call.args
    presenter = call.presenter()
    query = queries.TermQuery(page=args["page"], per_page=_per_page(call))
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
    links = _links(call, echo, result.page, result.page < result.total_pages, result.page > 1, call.resource)
    body = {"rest_url": links.pop("rest_url"), "total": result.total, "total_pages": result.total_pages,
            call.resource.name: [presenter.present(r) for r in result.items]}
    body.update(links)
    _totals(call, result)
    return body, 200


def handle_revisions(call: Call):
    record = _target(call)
    return {"revisions": call.service.revisions(record, call.snapshot)}, 200


def handle_revision(call: Call):
    record = _target(call)
    past, old = call.service.revision_at(record, call.args["commit"])
    presenter = Presenter(past, call.urls, call.service.site_tz, call.unlocked)
    return presenter.present(old, single=True), 200


def handle_changes(call: Call):
    changes, token = call.service.changes(call.args.get("since"), call.user)
    if changes is None:
        return {"next_token": token}, 200
    return {"changes": changes, "next_token": token}, 200


def handle_git_hook(call: Call):
    """Pull the git remote after a signed push event; a push to another branch changes nothing."""
    ref = call.args.get("ref")
    if ref is None and isinstance(call.raw.get("payload"), str):
        try:
            event = json.loads(call.raw["payload"])
        except ValueError:
            raise errors.invalid_param("payload", "The payload is not JSON.") from None
        ref = event.get("ref") if isinstance(event, dict) and isinstance(event.get("ref"), str) else None
    svc = call.service
    if ref and ref != f"refs/heads/{svc.settings.git_remote_branch}":
        return {"pulled": False, "head": svc.branch_head()}, 200
    result = svc.pull_remote()
    return {"pulled": True, "head": result.head, "moved": result.moved, "pushed": result.pushed,
            "conflicts": result.conflicts}, 200


HANDLERS = {
    "git_hook": handle_git_hook,
    "index": handle_index,
    "doc": handle_doc,
    "archive": handle_archive,
    "create": handle_create,
    "single": handle_single,
    "update": handle_update,
    "delete": handle_delete,
    "revisions": handle_revisions,
    "revision": handle_revision,
    "changes": handle_changes,
}

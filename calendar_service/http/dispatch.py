"""The request pipeline, in WordPress' order.

For each request: match the route (404 ``rest_no_route``), gather parameters, inject
defaults, check required ones (400 ``rest_missing_callback_param``), run each present
argument's check (400 ``rest_invalid_param``), check permission (401/403
``rest_forbidden``), then call the handler. Handlers (``http/handlers/``) turn parameters
into service calls and records into JSON; they never touch files or git.
"""
from __future__ import annotations

import json

from flask import Response, g, request

from calendar_service.http import errors
from calendar_service.auth.accounts import User
from calendar_service.domain import permissions
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS
from calendar_service.http.errors import ApiError
from calendar_service.http import i18n, prefix
from calendar_service.http.arguments import NO_DEFAULT
from calendar_service.http.call import Call, json_response, service
from calendar_service.http.handlers.hooks import check_signature
from calendar_service.http.form import php_nested
from calendar_service.http.params import CheckContext, Invalid, depth
from calendar_service.http.routes import ROUTES, match
from calendar_service.http.routing import Endpoint
from calendar_service.service.calendar import CalendarService

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_JSON_DEPTH = 32


class Api:
    """One API served by the pipeline: its route table and how its requests and answers are
    put into and out of the v1 forms the handlers take and give (nothing to do for v1 itself;
    ``tec.TecApi`` renames the newer API's fields)."""

    def __init__(self, routes: tuple = ROUTES, matcher=match):
        self.routes = routes
        self.match = matcher

    def adapt_request(self, route, method: str, raw: dict, svc: CalendarService) -> dict:
        return raw

    def adapt_response(self, call: Call, response: Response) -> Response:
        return response


V1 = Api()


def dispatch(rest: str, api: Api = V1) -> Response:
    """Answer one request under the namespace of ``api`` (``rest``: the path after it)."""
    svc = service()
    path = "/" + rest.strip("/") if rest.strip("/") else ""
    method = "GET" if request.method == "HEAD" else request.method
    found = api.match(path)
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
    raw = api.adapt_request(route, method, gather(path_values), svc)
    args, present = validate(endpoint, raw, CheckContext(snapshot, user, svc.accounts, svc.site_tz), svc)
    urls = prefix.request_urls(svc.settings)  # every emitted URL keeps the request's prefix
    segment = request.environ.get(i18n.ENVIRON_KEY)
    call = Call(route, endpoint, svc, user, args, present, urls, snapshot, raw,
                language=i18n.choose(raw.get("i18n_language"), segment), routes=api.routes)
    call.record = resolve_record(call)
    g.calendar_allow = ", ".join(allowed_methods(call))
    authorize(call)
    result = endpoint.handler(call)
    # handlers answer (body, status) for JSON, or a ready Response for another representation
    response = result if isinstance(result, Response) else json_response(*result)
    for key, value in call.headers.items():
        response.headers[key] = value
    return api.adapt_response(call, response)


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
            clean[arg.name] = arg.clean(values[arg.name], ctx)
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
        found = call.snapshot.ids["posts"].get(args["id"])
        if found is None and request.method in ("GET", "HEAD"):
            # an occurrence of a recurring series, read as an event of its own
            found = call.service.occurrence(args["id"], call.user, call.snapshot)
        return found
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

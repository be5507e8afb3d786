"""The Flask application: middleware, error handlers and the blueprint around the service.

``create_app()`` builds the Flask application (an app factory: tests and embedding code
pass their own settings) around the service ``build_service`` makes (it opens or creates
the content repository). The service lives as long as the app: it is closed when the app
is garbage-collected, or at once with ``close_app(app)``.
"""
from __future__ import annotations

import io
import logging
import re
import weakref
from urllib.parse import unquote_plus

from flask import Flask, g, request
from werkzeug.exceptions import HTTPException

from calendar_service.config import Settings, host_allowed
from calendar_service.auth.limits import Busy, Throttled
from calendar_service.http.errors import (BAD_REQUEST, INTERNAL_ERROR, METHOD_NOT_ALLOWED, NOT_FOUND, PAYLOAD_TOO_LARGE,
                                          SERVICE_UNAVAILABLE, TOO_MANY_REQUESTS, ApiError, no_route)
from calendar_service.http import namespace
from calendar_service.http.i18n import LanguageSegment
from calendar_service.http.prefix import WpCompat
from calendar_service.service.build import build_service
from calendar_service.service.calendar import starting
from calendar_service.service.errors import ServiceError

log = logging.getLogger(__name__)


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app. ``test_config`` holds setting overrides by field name (see ``config.Settings``)."""
    settings = Settings.from_env(**(test_config or {}))
    for name in ("werkzeug", "gunicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
    app = Flask(__name__)
    app.wsgi_app = LanguageSegment(NamespaceCase(app.wsgi_app))
    if settings.wp_compat:  # /wp-json/tribe/events/v1/... is served as /calendar/events/v1/...
        app.wsgi_app = WpCompat(app.wsgi_app)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False

    with starting() as loaded:
        service = build_service(settings)
        # the service (its pull thread, its git processes) lives as long as the app, and no longer
        app.extensions["calendar_close"] = weakref.finalize(app, service.close)
        service.warm_up()
        loaded(len(service.catalog.current().files))
    app.extensions["calendar"] = service
    service.start_pulling()
    service.start_webhooks()

    from calendar_service.http.api import bp, json_response
    app.register_blueprint(bp)
    from calendar_service.http.docs_ui import ui
    app.register_blueprint(ui)

    @app.get("/healthz")
    def healthz():
        """Liveness for load balancers: the process answers (no authentication, no git)."""
        return json_response({"alive": True}, 200)

    @app.get("/readyz")
    def readyz():
        """Readiness for load balancers: 200 once the service can answer from current data
        (a successful pull since the start when a remote is configured, the search index at the
        branch head), else 503 in the error envelope saying why."""
        ready, why = service.ready()
        if ready:
            return json_response({"ready": True, "head": service.branch_head()}, 200)
        error = ApiError("calendar-not-ready", f"The service is not ready: {why}.", SERVICE_UNAVAILABLE)
        return json_response(error.body(), error.status)

    if settings.wp_compat:
        from calendar_service.http.handlers.discovery import wp_index

        @app.get("/wp-json", strict_slashes=False)
        def wp_discovery():
            """WordPress' discovery index (``/wp-json/``): the site and the ``tribe/events/v1`` routes."""
            return json_response(wp_index(service), 200)

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return json_response(exc.body(), exc.status)

    @app.errorhandler(Throttled)
    def throttled(exc: Throttled):
        error = ApiError("rest_too_many_requests", str(exc), TOO_MANY_REQUESTS)
        response = json_response(error.body(), error.status)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.errorhandler(Busy)
    def busy(exc: Busy):
        error = ApiError("rest_authentication_busy", str(exc), SERVICE_UNAVAILABLE)
        response = json_response(error.body(), error.status)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        error = ApiError.of(exc)
        return json_response(error.body(), error.status)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        if exc.code in (NOT_FOUND, METHOD_NOT_ALLOWED):
            error = no_route()
        elif exc.code == PAYLOAD_TOO_LARGE:
            error = ApiError("rest_request_too_large",
                             f"The request body is larger than {settings.max_body_bytes} bytes.", PAYLOAD_TOO_LARGE)
        else:
            error = ApiError(f"rest_http_{exc.code}", exc.description or exc.name, exc.code or BAD_REQUEST)
        return json_response(error.body(), error.status)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.path)
        error = ApiError("rest_internal_error", "The server could not complete the request.", INTERNAL_ERROR)
        return json_response(error.body(), error.status)

    host_patterns = settings.host_patterns

    @app.before_request
    def check_host():
        # a Host the service does not answer for is refused before anything is read or cached
        host = request.environ.get("HTTP_HOST") or request.environ.get("SERVER_NAME", "")
        if not host_allowed(host, host_patterns):
            raise ApiError("rest_invalid_host", "The Host header names a host this service does not answer for.",
                           BAD_REQUEST)

    @app.before_request
    def wait_for_content():
        # a replica that has never reached its remote and holds no commit would serve an empty
        # calendar as if it were the real one: reads and writes answer 503 until a pull succeeds
        # (the webhook, which pulls, and the status view stay open)
        prefix = namespace.PREFIX
        if not request.path.startswith(prefix) or request.path.rstrip("/") in (prefix + "/hooks/git", prefix + "/status"):
            return None
        if service.waiting_for_content():
            raise ApiError("calendar-not-ready", "The service is not ready: it has not been able to fetch the "
                           "calendar from its git remote yet. Try again later.", SERVICE_UNAVAILABLE)
        return None

    @app.before_request
    def limit_body():
        # Flask enforces MAX_CONTENT_LENGTH only on bodies it reads; refuse any larger body up front
        too_large = ApiError("rest_request_too_large",
                             f"The request body is larger than {settings.max_body_bytes} bytes.", PAYLOAD_TOO_LARGE)
        if request.content_length is not None and request.content_length > settings.max_body_bytes:
            raise too_large
        if request.environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            # a chunked body has no length: werkzeug would cut it at the limit (and the JSON would
            # look malformed); read it here, refuse it whole, or hand it on with its length
            raw = request.environ["wsgi.input"].read(settings.max_body_bytes + 1)
            if len(raw) > settings.max_body_bytes:
                raise too_large
            request.environ["wsgi.input"] = io.BytesIO(raw)
            request.environ["CONTENT_LENGTH"] = str(len(raw))
            request.environ.pop("HTTP_TRANSFER_ENCODING", None)
            request.environ.pop("wsgi.input_terminated", None)

    @app.after_request
    def allow_header(response):
        allow = getattr(g, "calendar_allow", None)
        if allow is not None and "Allow" not in response.headers:
            response.headers["Allow"] = allow
        return response

    @app.after_request
    def cors(response):
        origin = request.headers.get("Origin")
        allowed = settings.cors_origins
        if origin and ("*" in allowed or origin in allowed):
            response.headers["Access-Control-Allow-Origin"] = origin if "*" not in allowed else "*"
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, If-Match, If-None-Match"
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
            response.headers["Access-Control-Expose-Headers"] = "X-TEC-Total, X-TEC-TotalPages, Link, ETag"
            response.vary.add("Origin")  # keep Vary: Accept of event reads
        return response

    return app


def close_app(app: Flask) -> None:
    """Close the app's service now (stop its pull thread, release its git processes) rather
    than when the app is garbage-collected. Requests after this fail."""
    app.extensions["calendar_close"]()


class RedactSecrets(logging.Filter):
    """Blank the values of secret parameters (``password=...``, an event password tried in a query
    string) in access log lines.

    Each query string in the line is split into its parameters; a parameter whose decoded name
    (``password``, ``pass``, ``pwd``, ``token``, also with ``[...]`` after it) is secret has its
    whole value replaced, whatever characters the value holds.
    """

    SECRET_NAMES = frozenset({"password", "pass", "pwd", "token"})
    QUERY = re.compile(r"\?(\S*?)(\"?)(?=\s|$)")

    def _redact_query(self, found: re.Match) -> str:
        parts = []
        for part in found.group(1).split("&"):
            name, sep, _ = part.partition("=")
            key = unquote_plus(name).split("[", 1)[0].strip().lower()
            parts.append(f"{name}=[redacted]" if sep and key in self.SECRET_NAMES else part)
        return "?" + "&".join(parts) + found.group(2)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "?" in message:
            redacted = self.QUERY.sub(self._redact_query, message)
            if redacted != message:
                record.msg, record.args = redacted, ()
        return True


class NamespaceCase:
    """WSGI middleware: the namespace part of a path matches case-insensitively, as in WordPress."""

    PREFIX = namespace.PREFIX

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        head = path[: len(self.PREFIX)]
        if head != self.PREFIX and head.lower() == self.PREFIX:
            environ["PATH_INFO"] = self.PREFIX + path[len(self.PREFIX):]
        return self.wsgi_app(environ, start_response)

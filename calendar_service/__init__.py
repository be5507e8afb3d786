"""Calendar events REST service whose database is a git repository of plain files.

``create_app()`` builds the Flask application (an app factory: tests and embedding code
pass their own settings). It opens or creates the content repository, finishes a write a
killed process may have left half-done, and writes the sample calendar into a new
repository.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os

from flask import Flask, g, request
from werkzeug.exceptions import HTTPException

from .accounts import Accounts
from .catalog import Catalog
from .config import Settings
from .errors import ApiError, no_route
from .search import SearchIndex
from .service import CalendarService
from .store import GitStore

log = logging.getLogger(__name__)


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app. ``test_config`` holds setting overrides by field name (see ``config.Settings``)."""
    settings = Settings.from_env(**(test_config or {}))
    app = Flask(__name__)
    app.wsgi_app = NamespaceCase(app.wsgi_app)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False

    store = GitStore(settings.content_dir, settings.branch, (settings.committer_name, settings.committer_email))
    open_repository(store, settings)
    accounts = Accounts(settings.users_file)
    index = SearchIndex(settings.index_dir, settings.tz)
    # parsed records are cached next to the index (derived data) for a quick restart
    service = CalendarService(settings, store, Catalog(store, settings.index_dir / "records.cache"), accounts, index)
    # load the records now rather than on the first request; bring the index up to date
    # (inline when few files changed since it was last written, in the background otherwise)
    index.ensure(service.snapshot(), store)
    app.extensions["calendar"] = service
    atexit.register(store.close)

    from .api import bp, json_response
    app.register_blueprint(bp)

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return json_response(exc.body(), exc.status)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        if exc.code in (404, 405):
            error = no_route()
        elif exc.code == 413:
            error = ApiError("rest_request_too_large",
                             f"The request body is larger than {settings.max_body_bytes} bytes.", 413)
        else:
            error = ApiError(f"rest_http_{exc.code}", exc.description or exc.name, exc.code or 400)
        return json_response(error.body(), error.status)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.path)
        error = ApiError("rest_internal_error", "The server could not complete the request.", 500)
        return json_response(error.body(), 500)

    @app.before_request
    def limit_body():
        # Flask enforces MAX_CONTENT_LENGTH only on bodies it reads; refuse any larger body up front
        if request.content_length is not None and request.content_length > settings.max_body_bytes:
            raise ApiError("rest_request_too_large",
                           f"The request body is larger than {settings.max_body_bytes} bytes.", 413)

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
            response.headers["Vary"] = "Origin"
        return response

    return app


class NamespaceCase:
    """WSGI middleware: the namespace part of a path matches case-insensitively, as in WordPress."""

    PREFIX = "/calendar/events/v1"

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        head = path[: len(self.PREFIX)]
        if head != self.PREFIX and head.lower() == self.PREFIX:
            environ["PATH_INFO"] = self.PREFIX + path[len(self.PREFIX):]
        return self.wsgi_app(environ, start_response)


def open_repository(store: GitStore, settings: Settings) -> None:
    """Create the content repository (with the sample calendar) when it does not exist yet.

    Several gunicorn workers may start at once: a lock on the content folder lets one of
    them create the repository while the others wait.
    """
    settings.content_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(settings.content_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        created = not store.exists()
        store.init()
        has_content = any((settings.content_dir / name).exists() for name in ("events", "venues", "organizers"))
        if created and settings.seed_sample and store.head() is None and not has_content:
            from . import sample
            sample.seed(store, settings.site_timezone, settings.tz)
            log.info("created the sample calendar in %s", settings.content_dir)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    store.recover()

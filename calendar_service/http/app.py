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
import io
import logging
import os
import re

from flask import Flask, g, request
from werkzeug.exceptions import HTTPException

from calendar_service.auth.accounts import Accounts
from calendar_service.auth.limits import Limits
from calendar_service.storage.catalog import Catalog
from calendar_service.config import Settings
from calendar_service.errors import ApiError, no_route
from calendar_service.http.i18n import LanguageSegment
from calendar_service.index.search import SearchIndex
from calendar_service.service.calendar import CalendarService
from calendar_service.storage.store import GitStore

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
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False

    store = GitStore(settings.content_dir, settings.branch, (settings.committer_name, settings.committer_email),
                     remote=settings.git_remote, remote_branch=settings.git_remote_branch)
    open_repository(store, settings)
    accounts = Accounts(settings.users_file, Limits.from_settings(settings))
    index = SearchIndex(settings.index_dir, settings.tz)
    # parsed records are cached next to the index (derived data) for a quick restart
    service = CalendarService(settings, store, Catalog(store, settings.index_dir / "records.cache"), accounts, index)
    # load the records now rather than on the first request; bring the index up to date
    # (inline when few files changed since it was last written, in the background otherwise)
    index.ensure(service.snapshot(), store)
    app.extensions["calendar"] = service
    atexit.register(store.close)
    if service.start_pulling():
        atexit.register(service.stop_pulling)

    from calendar_service.http.api import bp, json_response
    app.register_blueprint(bp)
    from calendar_service.http.docs_ui import ui
    app.register_blueprint(ui)

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        response = json_response(exc.body(), exc.status)
        response.headers.update(getattr(exc, "headers", {}))  # e.g. Retry-After of a 429
        return response

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
        too_large = ApiError("rest_request_too_large",
                             f"The request body is larger than {settings.max_body_bytes} bytes.", 413)
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


class RedactSecrets(logging.Filter):
    """Blank ``password=...`` (an event password tried in a query string) in access log lines."""

    PATTERN = re.compile(r"(\b(?:password|pass|pwd|token)=)[^&\s\"']*", re.I)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.PATTERN.search(message):
            record.msg, record.args = self.PATTERN.sub(r"\1[redacted]", message), ()
        return True


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
    them create the repository while the others wait. With a git remote, the branch is
    pulled first; the sample is written (and pushed) only when the remote branch is empty,
    never while the remote cannot be reached (that would start an unrelated history).
    """
    settings.content_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(settings.content_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        created = not store.exists()
        store.init()
        remote_ok = _first_pull(store) if settings.git_remote else True
        has_content = any((settings.content_dir / name).exists() for name in ("events", "venues", "organizers"))
        if created and settings.seed_sample and store.head() is None and not has_content and remote_ok:
            from calendar_service.cli import sample
            sample.seed(store, settings.site_timezone, settings.tz)
            log.info("created the sample calendar in %s", settings.content_dir)
            if settings.git_remote:
                _first_pull(store)  # pushes the sample to the empty remote branch
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    store.recover()


def _first_pull(store: GitStore) -> bool:
    """Bring a starting service's branch in line with the remote; False when it cannot be reached."""
    from calendar_service.storage.store import StoreError
    store.recover()  # a journal left by a killed process is finished before the branch moves again
    try:
        store.pull()
        return True
    except StoreError as exc:
        log.warning("could not pull from the git remote at start: %s", exc)
        return False

"""The Flask application: the app factory and the service it serves.

``create_app()`` builds the Flask application (an app factory: tests and embedding code
pass their own settings) around the service ``build_service`` makes (it opens or creates
the content repository). The service lives as long as the app: it is closed when the app
is garbage-collected, or at once with ``close_app(app)``.

Each concern of the app registers itself (``init_app``): ``wsgi`` (middleware), ``guards``
(Host, waiting for content, body size), ``api`` and ``docs_ui`` (the blueprints), ``health``
(``/healthz``, ``/readyz``), ``prefix`` (``/wp-json/``), ``error_handlers`` (the error
envelope), ``cors``; ``logs`` keeps secrets out of the access logs.
"""
from __future__ import annotations

import weakref

from flask import Flask

from calendar_service.config import Settings
from calendar_service.http import cors, error_handlers, guards, health, logs, memory, prefix, wsgi
from calendar_service.http.own_text import OwnTexts
from calendar_service.service.build import build_service
from calendar_service.service.calendar import CalendarService, starting


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app. ``test_config`` holds setting overrides by field name (see ``config.Settings``)."""
    settings = Settings.from_env(**(test_config or {}))
    logs.redact_access_logs()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False
    wsgi.init_app(app, settings)
    service = open_service(app, settings)
    guards.init_app(app, settings, service)  # first: a foreign Host is refused before any other hook runs

    from calendar_service.http.api import bp  # the pipeline and its handlers: not needed by the commands
    from calendar_service.http.docs_ui import ui
    app.register_blueprint(bp)
    app.register_blueprint(ui)
    health.init_app(app, service)
    prefix.init_app(app, service)
    error_handlers.init_app(app, settings)
    cors.init_app(app, settings)
    return app


def open_service(app: Flask, settings: Settings) -> CalendarService:
    """Build the service of ``app`` (warmed up, pulling, delivering webhooks), closed with the app."""
    with starting() as loaded:
        # a killed write is finished in a thread meanwhile (``service.recovery``): waited for before any write
        service = build_service(settings, recover_in_thread=True, kept_texts=OwnTexts(settings.tz))
        # the service (its pull thread, its git processes) lives as long as the app, and no longer
        app.extensions["calendar_close"] = weakref.finalize(app, service.close)
        try:
            service.warm_up()
        finally:
            service.recovery.wait()
        loaded(len(service.catalog.current().files))
    memory.give_back()   # what loading the records and reading the index built and dropped
    app.extensions["calendar"] = service
    service.start_following()
    service.start_pulling()
    service.start_webhooks()
    return service


def close_app(app: Flask) -> None:
    """Close the app's service now (stop its pull thread, release its git processes) rather
    than when the app is garbage-collected. Requests after this fail."""
    app.extensions["calendar_close"]()

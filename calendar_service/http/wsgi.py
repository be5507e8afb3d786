"""The WSGI middleware around the Flask app: what is done to a request's environ before
Flask sees it.

From the outside in: ``WpCompat`` (only with ``CALENDAR_WP_COMPAT``, see ``prefix``),
``LanguageSegment`` (see ``i18n``), then ``NamespaceCase``.
"""
from __future__ import annotations

from calendar_service.http.i18n import LanguageSegment
from calendar_service.http.namespace import PREFIX
from calendar_service.http.prefix import WpCompat


def init_app(app, settings) -> None:
    """Wrap ``app.wsgi_app`` in the middleware ``settings`` ask for."""
    wsgi_app = LanguageSegment(NamespaceCase(app.wsgi_app))
    if settings.wp_compat:  # /wp-json/tribe/events/v1/... is served as /calendar/events/v1/...
        wsgi_app = WpCompat(wsgi_app)
    app.wsgi_app = wsgi_app


class NamespaceCase:
    """WSGI middleware: the namespace part of a path matches case-insensitively, as in WordPress."""

    PREFIX = PREFIX

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        head = path[: len(self.PREFIX)]
        if head != self.PREFIX and head.lower() == self.PREFIX:
            environ["PATH_INFO"] = self.PREFIX + path[len(self.PREFIX):]
        return self.wsgi_app(environ, start_response)


"""The WSGI middleware around the Flask app: what is done to a request's environ before
Flask sees it.

From the outside in: ``ForwardedFor`` (only with ``CALENDAR_TRUST_FORWARDED_FOR``), ``WpCompat``
(only with ``CALENDAR_WP_COMPAT``, see ``prefix``), ``LanguageSegment`` (see ``i18n``), then
``NamespaceCase``.
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
    if settings.trust_forwarded_for:
        wsgi_app = ForwardedFor(wsgi_app)
    app.wsgi_app = wsgi_app


class NamespaceCase:
    """WSGI middleware: the namespace part of a path matches case-insensitively, as in WordPress."""

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        head = path[: len(PREFIX)]
        if head != PREFIX and head.lower() == PREFIX:
            environ["PATH_INFO"] = PREFIX + path[len(PREFIX):]
        return self.wsgi_app(environ, start_response)


class ForwardedFor:
    """WSGI middleware for a service behind a proxy: the client address (``REMOTE_ADDR``, what
    ``request.remote_addr`` and the sign-in limits read) is the last entry of ``X-Forwarded-For``,
    the address the proxy saw. Nothing else the proxy may send (``X-Forwarded-Proto``, ``-Host``,
    ``-Port``, ``-Prefix``) is taken.

    Werkzeug's ``ProxyFix(x_for=1)`` does the same for well-formed headers, but it parses the
    value as a list of quoted strings: an entry with an unclosed double quote, which the client
    writes before the proxy appends its own entry (``"x, 203.0.113.7``), makes it ignore the whole
    header and keep the proxy's own address; every client that sends such a quote would then be
    counted under that one address instead of its own. Here entries are split at every comma, and
    the last non-empty one, the proxy's, is taken whatever came before it.
    """

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        entries = [a.strip() for a in environ.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if entries:
            environ["REMOTE_ADDR"] = entries[-1]
        return self.wsgi_app(environ, start_response)

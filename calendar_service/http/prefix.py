"""The URL prefix a request used, and the URLs the API emits under it: the one place that knows.

The API lives under ``/calendar/events/v1`` (optionally after a language segment, see
``i18n``). With ``CALENDAR_WP_COMPAT`` on it is also served under the original plugin's URL
space, ``/wp-json/tribe/events/v1``, so existing clients of The Events Calendar connect
unchanged; the newer API ``tec/v1`` (always at ``/calendar/tec/v1``) is then also served at
``/wp-json/tec/v1``, and WordPress' discovery route ``/wp-json/`` lists every namespace.

``WpCompat`` (WSGI) serves a compat path as the native one and records the prefix it came
with in the environ; ``request_urls`` builds every emitted URL (``rest_url``, paging links,
``_links``, ``/doc`` servers) from the prefix of the request, so an answer under one prefix
never names the other.
"""
from __future__ import annotations

import functools
import re

from flask import request
from werkzeug.sansio.utils import get_current_url

from calendar_service.http import i18n
from calendar_service.http.urls import Urls
from calendar_service.http.namespace import NAMESPACE, PREFIX, TEC_NAMESPACE, TEC_PREFIX, TEC_WP_NAMESPACE, WP_NAMESPACE

WP_ROOT = "/wp-json"                        # WordPress' REST root (its discovery route is WP_ROOT + "/")
WP = f"{WP_ROOT}/{WP_NAMESPACE}"            # /wp-json/tribe/events/v1
WP_TEC = f"{WP_ROOT}/{TEC_WP_NAMESPACE}"    # /wp-json/tec/v1
ENVIRON_KEY = "calendar.api_prefix"
# the namespace each prefix other than the native v1 one stands for
_NAMESPACES = {WP: WP_NAMESPACE, WP_TEC: TEC_WP_NAMESPACE, TEC_PREFIX: TEC_NAMESPACE}


class WpCompat:
    """WSGI middleware: ``/wp-json/tribe/events/v1/...`` is served as ``/calendar/events/v1/...``
    and ``/wp-json/tec/v1/...`` as ``/calendar/tec/v1/...``.

    The namespace part matches case-insensitively, as WordPress matches routes. The prefix is
    kept in the environ (``ENVIRON_KEY``) so every URL of the answer uses it. Only installed
    when ``CALENDAR_WP_COMPAT`` is on; without it ``/wp-json/...`` is a 404 like any unknown path.
    """

    PATTERN = re.compile(r"\A/wp-json/tribe/events/v1(/.*)?\Z", re.I | re.S)
    TEC_PATTERN = re.compile(r"\A/wp-json/tec/v1(/.*)?\Z", re.I | re.S)

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        for pattern, compat, native in ((self.PATTERN, WP, PREFIX), (self.TEC_PATTERN, WP_TEC, TEC_PREFIX)):
            found = pattern.match(path)
            if found:
                environ[ENVIRON_KEY] = compat
                environ["PATH_INFO"] = native + (found.group(1) or "")
                break
        return self.wsgi_app(environ, start_response)


def api_prefix() -> str:
    """The path before the API's routes as the request gave it: ``/calendar/events/v1``,
    ``/it/calendar/events/v1`` or ``/wp-json/tribe/events/v1``."""
    compat = request.environ.get(ENVIRON_KEY)
    if compat:
        return compat
    segment = request.environ.get(i18n.ENVIRON_KEY)  # /it/calendar/events/v1/...: links keep it
    return (f"/{segment}" if segment else "") + PREFIX


def namespace() -> str:
    """The namespace the request addressed (the index names its routes with it)."""
    return _NAMESPACES.get(request.environ.get(ENVIRON_KEY), NAMESPACE)


def mark_native_tec() -> None:
    """A request at the native ``tec/v1`` prefix: its URLs are built under that prefix (a request
    that came through ``/wp-json/tec/v1`` keeps its own)."""
    request.environ.setdefault(ENVIRON_KEY, TEC_PREFIX)


def host_base() -> str:
    """Scheme and host of the request, without a trailing slash."""
    return _host_base(request.scheme, request.host)


@functools.lru_cache(maxsize=64)   # the hosts a site answers are few (CALENDAR_ALLOWED_HOSTS)
def _host_base(scheme: str, host: str) -> str:
    # what werkzeug's ``request.host_url`` is, made once per host: it decodes the host as an IRI
    return get_current_url(scheme, host).rstrip("/")


def request_urls(settings) -> Urls:
    """Where things are for this request: the REST base under the request's prefix, and the site."""
    base = host_base()
    return _urls(base + api_prefix(), settings.site_url or base, namespace())


@functools.lru_cache(maxsize=64)   # one object per host and prefix: its URLs and hash are made once
def _urls(rest_base: str, site: str, namespace: str) -> Urls:
    return Urls(rest_base=rest_base, site=site, namespace=namespace)


def wp_urls(settings) -> Urls:
    """The URLs under the compat prefix, whatever the request's path (``/wp-json/`` lists them)."""
    base = host_base()
    return Urls(rest_base=base + WP, site=settings.site_url or base, namespace=WP_NAMESPACE)


def wp_tec_urls(settings) -> Urls:
    """The URLs under ``/wp-json/tec/v1``, whatever the request's path (``/wp-json/`` lists them)."""
    base = host_base()
    return Urls(rest_base=base + WP_TEC, site=settings.site_url or base, namespace=TEC_WP_NAMESPACE)


def other_bases(settings) -> tuple[str, ...]:
    """The REST bases of the same API under the other prefix (``/doc`` lists them as further
    servers): none unless ``CALENDAR_WP_COMPAT`` is on."""
    if not settings.wp_compat:
        return ()
    base = host_base()
    return (base + PREFIX,) if request.environ.get(ENVIRON_KEY) else (base + WP,)


def init_app(app, service) -> None:
    """With ``CALENDAR_WP_COMPAT``, add WordPress' discovery index ``/wp-json/`` to ``app``
    (``WpCompat``, installed by ``wsgi.init_app``, serves the namespace itself)."""
    if not service.settings.wp_compat:
        return
    from calendar_service.http.call import json_response
    from calendar_service.http.dispatch import authenticate
    from calendar_service.http.handlers import wordpress
    from calendar_service.http.handlers.discovery import wp_index  # it imports this module
    from calendar_service.http.routes import ROUTES
    from calendar_service.http.tec import TEC_ROUTES

    @app.get("/wp-json", strict_slashes=False)
    def wp_discovery():
        """WordPress' discovery index (``/wp-json/``): the site and the routes of every namespace served."""
        return json_response(wp_index(service, ROUTES, TEC_ROUTES), 200)

    @app.route("/wp-json/wp/v2/users/me", methods=["GET", "HEAD"])
    def wp_users_me():
        user = authenticate(service)
        return json_response(wordpress.user_me(user, service.settings, wordpress.context_arg()), 200)

    @app.route("/wp-json/wp/v2/settings", methods=["GET", "HEAD"])
    def wp_settings():
        return json_response(wordpress.site_settings(authenticate(service), service.settings), 200)

"""The namespace index, the OpenAPI document and (with CALENDAR_WP_COMPAT) WordPress' discovery index."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import request

from calendar_service.http import docs, i18n, prefix
from calendar_service.http.call import Call
from calendar_service.http.handlers import wordpress
from calendar_service.http.routing import Route


def handle_index(call: Call):
    return docs.namespace_index(call.routes, call.urls, call.language), 200


def handle_doc(call: Call):
    return docs.openapi(call.routes, call.urls, call.language, prefix.other_bases(call.service.settings)), 200


def wp_index(service, routes: tuple[Route, ...], tec_routes: tuple[Route, ...]) -> dict:
    """``GET /wp-json/``: what WordPress answers there, for every namespace served under it
    (``routes``: the ``tribe/events/v1`` table, ``tec_routes``: the ``tec/v1`` one; the ``wp/v2``
    routes of ``handlers.wordpress``)."""
    settings = service.settings
    urls = prefix.wp_urls(settings)
    tec_urls = prefix.wp_tec_urls(settings)
    offset = datetime.now(timezone.utc).astimezone(settings.tz).utcoffset().total_seconds() / 3600
    site = {"name": urls.host_path, "description": "", "url": urls.site, "home": urls.site,
            "gmt_offset": int(offset) if offset == int(offset) else offset,
            "timezone_string": settings.site_timezone}
    language = i18n.normalize(request.args.get("i18n_language")) or i18n.DEFAULT
    return docs.wp_index(((routes, urls), (tec_routes, tec_urls)), wordpress.ROUTES, language, site)

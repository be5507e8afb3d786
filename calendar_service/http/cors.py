"""Cross-origin reads and writes from the browsers of ``CALENDAR_CORS_ORIGINS``.

Every answer to an allowed ``Origin`` (preflight ``OPTIONS`` or not, error or not) carries the
same four headers and ``Vary: Origin`` (added to a ``Vary: Accept`` already there); any other
Origin gets none of them. A preflight is answered as any ``OPTIONS`` request is: 204 with the
route's ``Allow`` under the namespace, Flask's own answer elsewhere (``/healthz``), 404
``rest_no_route`` for an unknown path.

flask-cors is not used: it answers the same requests with other headers. It sends
Allow-Headers and Allow-Methods only on a preflight whose Access-Control-Request-Method is
allowed, and then echoes the requested headers rather than this list; it sorts the lists; it
leaves ``Vary: Origin`` out for a single allowed origin and otherwise adds it as a second
``Vary`` header; and for ``*`` it echoes the origin unless told to send ``*``.
"""
from __future__ import annotations

from flask import request

ALLOW_HEADERS = "Authorization, Content-Type, If-Match, If-None-Match"
ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
EXPOSE_HEADERS = "X-TEC-Total, X-TEC-TotalPages, X-WP-Total, X-WP-TotalPages, Link, ETag, X-Calendar-Stale"


def init_app(app, settings) -> None:
    """Add the CORS headers to the answers of ``app`` for the origins ``settings`` allow."""
    allowed = settings.cors_origins

    @app.after_request
    def cors(response):
        origin = request.headers.get("Origin")
        if origin and ("*" in allowed or origin in allowed):
            response.headers["Access-Control-Allow-Origin"] = origin if "*" not in allowed else "*"
            response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
            response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
            response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
            response.vary.add("Origin")  # keep Vary: Accept of event reads
        return response

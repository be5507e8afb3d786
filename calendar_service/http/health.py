"""Liveness and readiness for load balancers, outside the API's namespace."""
from __future__ import annotations

import logging

from calendar_service.http.call import json_response
from calendar_service.http.errors import SERVICE_UNAVAILABLE, ApiError


log = logging.getLogger(__name__)


def init_app(app, service) -> None:
    """Add ``/healthz`` and ``/readyz`` to ``app``."""

    @app.get("/healthz")
    def healthz():
        """Liveness for load balancers: the process answers (no authentication, no git)."""
        return json_response({"alive": True}, 200)

    @app.get("/readyz")
    def readyz():
        """Readiness for load balancers: 200 once the service can answer from current data
        (a successful pull since the start when a remote is configured, the search index at the
        branch head), else 503 in the error envelope saying why."""
        try:
            ready, why = service.ready()
        except Exception as exc:   # never a 500: a balancer reads any failure here as "not ready"
            log.exception("the readiness check failed")
            ready, why = False, f"the readiness check failed ({type(exc).__name__})"
        if ready:
            return json_response({"ready": True, "head": service.branch_head()}, 200)
        error = ApiError("calendar-not-ready", f"The service is not ready: {why}.", SERVICE_UNAVAILABLE)
        return json_response(error.body(), error.status)

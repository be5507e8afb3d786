"""Liveness and readiness for load balancers, outside the API's namespace."""
from __future__ import annotations

import logging

from calendar_service.http.call import json_response
from calendar_service.http.error_handlers import error_response
from calendar_service.http.errors import SERVICE_UNAVAILABLE, ApiError, retry_after

log = logging.getLogger(__name__)


def init_app(app, service) -> None:
    """Add ``/healthz`` and ``/readyz`` to ``app``."""

    @app.get("/healthz")
    def healthz():
        """Liveness for load balancers: the process answers (no authentication, no git)."""
        return json_response({"alive": True}, 200)

    @app.get("/readyz")
    def readyz():
        """Readiness for load balancers: 200 once the service can answer correctly (with a remote,
        a successful pull since the start), also while the search index catches up; else 503 in
        the error envelope saying why. Never a 500: a failure while checking is a 503 naming it
        (and logged)."""
        wait = None  # unknown when the check itself failed
        try:
            ready, why = service.ready()
            if ready:
                return json_response({"ready": True, "head": service.branch_head()}, 200)
            wait = retry_after(service.settings)  # it waits for the next pull
        except Exception as exc:
            log.exception("the readiness check failed")
            why = f"the readiness check failed ({type(exc).__name__})"
        return error_response(ApiError("calendar-not-ready", f"The service is not ready: {why}.", SERVICE_UNAVAILABLE,
                                       retry_after=wait))

"""Every failure a request can meet, answered in the API's error envelope (see ``errors``)."""
from __future__ import annotations

import logging

from flask import request
from werkzeug.exceptions import HTTPException

from calendar_service.auth.limits import Busy, Throttled
from calendar_service.http.call import json_response
from calendar_service.http.errors import (BAD_REQUEST, INTERNAL_ERROR, METHOD_NOT_ALLOWED, NOT_FOUND, PAYLOAD_TOO_LARGE,
                                          SERVICE_UNAVAILABLE, TOO_MANY_REQUESTS, ApiError, no_route, request_too_large,
                                          retry_after)
from calendar_service.service.errors import UNAVAILABLE, ServiceError, StateUnavailable

log = logging.getLogger(__name__)


def error_response(error: ApiError):
    """The error envelope of ``error``, with ``Retry-After`` when it says when to try again."""
    response = json_response(error.body(), error.status)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


def _try_again_later(code: str, exc: Throttled | Busy | StateUnavailable, status: int):
    """The error envelope of a refusal that tells the caller when to try again."""
    return error_response(ApiError(code, str(exc), status, retry_after=exc.retry_after))


def init_app(app, settings) -> None:
    """Register the error handlers on ``app``."""

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return error_response(exc)

    @app.errorhandler(Throttled)
    def throttled(exc: Throttled):
        return _try_again_later("rest_too_many_requests", exc, TOO_MANY_REQUESTS)

    @app.errorhandler(Busy)
    def busy(exc: Busy):
        return _try_again_later("rest_authentication_busy", exc, SERVICE_UNAVAILABLE)

    @app.errorhandler(StateUnavailable)
    def state_unavailable(exc: StateUnavailable):
        # sign-in, event passwords and webhook management wait for it: never an unlimited guess
        return _try_again_later("calendar-state-unavailable", exc, SERVICE_UNAVAILABLE)

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        error = ApiError.of(exc)
        if exc.kind == UNAVAILABLE:   # the remote could not be reached: the next periodic pull tries again
            error.retry_after = retry_after(settings)
        return error_response(error)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        if exc.code in (NOT_FOUND, METHOD_NOT_ALLOWED):
            error = no_route()
        elif exc.code == PAYLOAD_TOO_LARGE:
            error = request_too_large(settings.max_body_bytes)
        else:
            error = ApiError(f"rest_http_{exc.code}", exc.description or exc.name, exc.code or BAD_REQUEST)
        return json_response(error.body(), error.status)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.path)
        error = ApiError("rest_internal_error", "The server could not complete the request.", INTERNAL_ERROR)
        return json_response(error.body(), error.status)

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
from calendar_service.service.errors import UNAVAILABLE, ServiceError

log = logging.getLogger(__name__)


def _try_again_later(code: str, exc: Throttled | Busy, status: int):
    """The error envelope of a refusal that tells the caller when to try again (``Retry-After``)."""
    error = ApiError(code, str(exc), status)
    response = json_response(error.body(), error.status)
    response.headers["Retry-After"] = str(exc.retry_after)
    return response


def with_retry_after(response, seconds: int | None):
    if seconds is not None:
        response.headers["Retry-After"] = str(seconds)
    return response


def init_app(app, settings) -> None:
    """Register the error handlers on ``app``."""

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return with_retry_after(json_response(exc.body(), exc.status), exc.retry_after)

    @app.errorhandler(Throttled)
    def throttled(exc: Throttled):
        return _try_again_later("rest_too_many_requests", exc, TOO_MANY_REQUESTS)

    @app.errorhandler(Busy)
    def busy(exc: Busy):
        return _try_again_later("rest_authentication_busy", exc, SERVICE_UNAVAILABLE)

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        error = ApiError.of(exc)
        # the remote could not be reached: the next periodic pull is when it is tried again
        wait = retry_after(settings) if exc.kind == UNAVAILABLE else None
        return with_retry_after(json_response(error.body(), error.status), wait)

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

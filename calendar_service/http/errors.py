"""The errors clients see, as HTTP: the envelope, the statuses, and the vocabulary of the
request layer.

Every failure a client can see becomes the envelope ``{"code", "message", "data":
{"status", ...}}`` of the original API. The service raises ``ServiceError`` with a kind;
``STATUS_OF_KIND`` is the one place that kind becomes an HTTP status. The request layer
(parameters, authentication, routing) raises ``ApiError`` with its status directly.
"""
from __future__ import annotations

import math

from calendar_service.service import errors as service_errors
from calendar_service.service.errors import ServiceError

BAD_REQUEST = 400
UNAUTHORIZED = 401
FORBIDDEN = 403
NOT_FOUND = 404
METHOD_NOT_ALLOWED = 405
CONFLICT = 409
GONE = 410
PRECONDITION_FAILED = 412
PAYLOAD_TOO_LARGE = 413
INTERNAL_ERROR = 500
TOO_MANY_REQUESTS = 429
SERVICE_UNAVAILABLE = 503

STATUS_OF_KIND = {
    service_errors.INVALID: BAD_REQUEST,
    service_errors.UNAUTHENTICATED: UNAUTHORIZED,
    service_errors.FORBIDDEN: FORBIDDEN,
    service_errors.NOT_FOUND: NOT_FOUND,
    service_errors.GONE: GONE,
    service_errors.CONFLICT: CONFLICT,
    service_errors.PRECONDITION_FAILED: PRECONDITION_FAILED,
    service_errors.UNAVAILABLE: SERVICE_UNAVAILABLE,
}


def retry_after(settings) -> int:
    """Seconds after which a 503 that waits for the git remote (or the first pull) may be worth
    retrying: the next periodic pull (``CALENDAR_PULL_INTERVAL``), or, without periodic pulls,
    the time one git command may take (``CALENDAR_REMOTE_TIMEOUT``); at least 1."""
    wait = settings.pull_interval if settings.git_remote and settings.pull_interval > 0 else settings.remote_timeout
    return max(1, math.ceil(wait))


class ApiError(Exception):
    """A failure with a machine-readable code, a human message and an HTTP status."""

    def __init__(self, code: str, message: str, status: int, retry_after: int | None = None, **data):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after  # seconds, sent as ``Retry-After`` when known
        self.data = data

    def body(self) -> dict:
        return {"code": self.code, "message": self.message, "data": {"status": self.status, **self.data}}

    @classmethod
    def of(cls, error: ServiceError) -> "ApiError":
        """The HTTP form of a service failure."""
        return cls(error.code, error.message, STATUS_OF_KIND[error.kind], **error.data)


def invalid_params(reasons: dict[str, str], details: dict | None = None) -> ApiError:
    """400 ``rest_invalid_param`` naming each bad parameter and why."""
    return ApiError.of(service_errors.invalid_params(reasons, details))


def invalid_param(name: str, reason: str = "Invalid parameter.") -> ApiError:
    return invalid_params({name: reason})


def missing_params(names: list[str]) -> ApiError:
    return ApiError(
        "rest_missing_callback_param",
        "Missing parameter(s): " + ", ".join(names),
        BAD_REQUEST,
        params=list(names),
    )


def forbidden(authenticated: bool) -> ApiError:
    """``rest_forbidden``: 401 for anonymous callers, 403 for signed-in ones."""
    return ApiError.of(service_errors.forbidden(authenticated))


def request_too_large(limit: int) -> ApiError:
    """413 ``rest_request_too_large``: a body over ``CALENDAR_MAX_BODY_BYTES``."""
    return ApiError("rest_request_too_large", f"The request body is larger than {limit} bytes.", PAYLOAD_TOO_LARGE)


def no_route() -> ApiError:
    return ApiError("rest_no_route", "No route was found matching the URL and request method.", NOT_FOUND)


def plugin_error(code: str, **fmt) -> ApiError:
    """An error of the plugin's own catalogue (see ``service.errors.PLUGIN``), with its status."""
    return ApiError.of(service_errors.plugin_error(code, **fmt))


"""The one error type of the service and the catalogue of its codes.

Every failure a client can see is an ``ApiError``; the HTTP layer turns it into the
envelope ``{"code", "message", "data": {"status", ...}}`` of the original API.
"""
from __future__ import annotations


class ApiError(Exception):
    """A failure with a machine-readable code, a human message and an HTTP status."""

    def __init__(self, code: str, message: str, status: int, **data):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = data

    def body(self) -> dict:
        return {"code": self.code, "message": self.message, "data": {"status": self.status, **self.data}}


def invalid_params(reasons: dict[str, str], details: dict | None = None) -> ApiError:
    """400 ``rest_invalid_param`` naming each bad parameter and why."""
    return ApiError(
        "rest_invalid_param",
        "Invalid parameter(s): " + ", ".join(reasons),
        400,
        params=reasons,
        details=details or [],
    )


def invalid_param(name: str, reason: str = "Invalid parameter.") -> ApiError:
    return invalid_params({name: reason})


def missing_params(names: list[str]) -> ApiError:
    return ApiError(
        "rest_missing_callback_param",
        "Missing parameter(s): " + ", ".join(names),
        400,
        params=list(names),
    )


def forbidden(authenticated: bool) -> ApiError:
    """``rest_forbidden``: 401 for anonymous callers, 403 for signed-in ones."""
    return ApiError("rest_forbidden", "Sorry, you are not allowed to do that.", 403 if authenticated else 401)


def no_route() -> ApiError:
    return ApiError("rest_no_route", "No route was found matching the URL and request method.", 404)


# Messages of the plugin's catalogue, by code (paraphrased where the tests do not pin them).
MESSAGES = {
    "rest-event-not-found": "Event with ID {id} does not exist.",
    "rest-invalid-event-id": "The ID {id} is not the ID of an event.",
    "event-no-longer-available": "This event is no longer available",
    "event-not-accessible": "The requested event is not accessible",
    "event-password-protected": "The requested event is not accessible without a password",
    "venue-not-accessible": "The requested venue is not accessible",
    "organizer-not-accessible": "The requested organizer is not accessible",
    "event-archive-page-not-found": "The requested event archive page does not exist",
    "venue-archive-page-not-found": "The requested venue archive page does not exist",
    "organizer-archive-page-not-found": "The requested organizer archive page does not exist",
    "event-is-in-trash": "The event with ID {id} is already in the trash.",
    "venue-is-in-trash": "The venue with ID {id} is already in the trash.",
    "organizer-is-in-trash": "The organizer with ID {id} is already in the trash.",
    "could-not-create-venue": "The venue could not be created from the provided data.",
    "could-not-create-organizer": "The organizer could not be created from the provided data.",
}

STATUSES = {
    "rest-event-not-found": 404,
    "rest-invalid-event-id": 400,
    "event-no-longer-available": 403,
    "event-not-accessible": 403,
    "event-password-protected": 403,
    "venue-not-accessible": 403,
    "organizer-not-accessible": 403,
    "event-archive-page-not-found": 404,
    "venue-archive-page-not-found": 404,
    "organizer-archive-page-not-found": 404,
    "event-is-in-trash": 410,
    "venue-is-in-trash": 410,
    "organizer-is-in-trash": 410,
    "could-not-create-venue": 400,
    "could-not-create-organizer": 400,
}


def plugin_error(code: str, **fmt) -> ApiError:
    """An error of the plugin's own catalogue, with its documented status."""
    return ApiError(code, MESSAGES[code].format(**fmt), STATUSES[code])


def conflict(message: str) -> ApiError:
    """409: the write could not be applied to the repository as it now is; nothing was changed."""
    return ApiError("calendar-write-conflict", message, 409)


def remote_unavailable(message: str) -> ApiError:
    """503: the git remote could not be reached or refused the push; nothing was changed."""
    return ApiError("calendar-remote-unavailable", message, 503)

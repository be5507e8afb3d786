"""The failures of the service, without HTTP: a machine code, a message, data and a kind.

The kind says what went wrong in terms of the calendar (the arguments are invalid, the
record does not exist, the caller may not do this, ...). The HTTP layer maps each kind to
its status in one place (``calendar_service.http.errors``); the command line reads the
kind too.
"""
from __future__ import annotations

# the state database (webhooks, the limits on guessing) cannot be reached: 503 calendar-state-unavailable
from calendar_service.storage.state import StateUnavailable  # noqa: F401  (raised by the storage layer)

# the kinds of failure
INVALID = "invalid"                          # the arguments cannot be used
UNAUTHENTICATED = "unauthenticated"          # the caller must sign in first
FORBIDDEN = "forbidden"                      # the signed-in caller may not do this
NOT_FOUND = "not_found"                      # no such record, revision or page
GONE = "gone"                                # it existed and is no longer available (trash, expired token)
CONFLICT = "conflict"                        # the repository changed meanwhile; nothing was changed
PRECONDITION_FAILED = "precondition_failed"  # the caller's expectation (If-Match) no longer holds
UNAVAILABLE = "unavailable"                  # the git remote cannot be reached; nothing was changed

KINDS = (INVALID, UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, GONE, CONFLICT, PRECONDITION_FAILED, UNAVAILABLE)


class ServiceError(Exception):
    """A failure a client can see: ``code`` (machine-readable), ``message``, ``kind`` and ``data``
    (further fields of the error, in the order the client sees them)."""

    def __init__(self, code: str, message: str, kind: str, **data):
        if kind not in KINDS:
            raise ValueError(f"unknown kind of failure {kind!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.kind = kind
        self.data = data


def invalid_params(reasons: dict[str, str], details: dict | None = None) -> ServiceError:
    """``rest_invalid_param`` naming each bad parameter and why."""
    return ServiceError("rest_invalid_param", "Invalid parameter(s): " + ", ".join(reasons), INVALID,
                        params=reasons, details=details or [])


def invalid_param(name: str, reason: str = "Invalid parameter.") -> ServiceError:
    return invalid_params({name: reason})


def forbidden(authenticated: bool) -> ServiceError:
    """``rest_forbidden``: the caller may not do this (signed in or not)."""
    return ServiceError("rest_forbidden", "Sorry, you are not allowed to do that.",
                        FORBIDDEN if authenticated else UNAUTHENTICATED)


def cannot_assign_author() -> ServiceError:
    """WordPress' ``rest_cannot_edit_others``: only who may change others' posts sets another author."""
    return ServiceError("rest_cannot_edit_others", "Sorry, you are not allowed to write posts as this user.",
                        FORBIDDEN)


def term_exists(term_id: int | None) -> ServiceError:
    """A category or tag of that name (under that parent) or slug exists already."""
    return ServiceError("term_exists", "A term with the name provided already exists with this parent.", INVALID,
                        term_id=term_id)


# The plugin's own catalogue: code -> (message, kind). Messages are paraphrased where
# clients do not depend on their wording.
PLUGIN = {
    "rest-event-not-found": ("Event with ID {id} does not exist.", NOT_FOUND),
    "rest-invalid-event-id": ("The ID {id} is not the ID of an event.", INVALID),
    "event-no-longer-available": ("This event is no longer available", FORBIDDEN),
    "event-not-accessible": ("The requested event is not accessible", FORBIDDEN),
    "event-password-protected": ("The requested event is not accessible without a password", FORBIDDEN),
    "venue-not-accessible": ("The requested venue is not accessible", FORBIDDEN),
    "organizer-not-accessible": ("The requested organizer is not accessible", FORBIDDEN),
    "event-archive-page-not-found": ("The requested event archive page does not exist", NOT_FOUND),
    "venue-archive-page-not-found": ("The requested venue archive page does not exist", NOT_FOUND),
    "organizer-archive-page-not-found": ("The requested organizer archive page does not exist", NOT_FOUND),
    "event-is-in-trash": ("The event with ID {id} is already in the trash.", GONE),
    "venue-is-in-trash": ("The venue with ID {id} is already in the trash.", GONE),
    "organizer-is-in-trash": ("The organizer with ID {id} is already in the trash.", GONE),
    "could-not-create-venue": ("The venue could not be created from the provided data.", INVALID),
    "could-not-create-organizer": ("The organizer could not be created from the provided data.", INVALID),
}


def plugin_error(code: str, **fmt) -> ServiceError:
    """An error of the plugin's own catalogue, of its documented kind."""
    message, kind = PLUGIN[code]
    return ServiceError(code, message.format(**fmt), kind)


def conflict(message: str) -> ServiceError:
    """The write could not be applied to the repository as it now is; nothing was changed."""
    return ServiceError("calendar-write-conflict", message, CONFLICT)


def file_broken(stale) -> ServiceError:
    """``calendar-file-broken``: the write would change a file that no longer parses (its record is
    served as its last good version, ``stale`` says why); the service never writes over an
    editor's broken file, so it must be fixed in git first. Nothing was changed."""
    return ServiceError("calendar-file-broken",
                        f"{stale.path}:{stale.line}: {stale.message}. This file no longer reads (since commit "
                        f"{stale.broken[:12]}); the calendar serves its last good version and does not write over "
                        "it. Fix the file in git (or revert the commit that broke it), then try again. Nothing "
                        "was changed.", CONFLICT, path=stale.path, line=stale.line, broken=stale.broken,
                        served=stale.served)


def term_in_use(singular: str) -> ServiceError:
    """A term the caller may delete, used by events the caller may not edit: deleting it would
    edit those events in the caller's name. Says nothing of which events or how many."""
    return ServiceError("calendar-term-in-use", f"This {singular} is used by events you may not edit, so it was "
                        "not deleted. An editor or administrator can delete it.", CONFLICT)


def remote_unavailable(message: str) -> ServiceError:
    """The git remote could not be reached or refused the push; nothing was changed."""
    return ServiceError("calendar-remote-unavailable", message, UNAVAILABLE)


def precondition_failed() -> ServiceError:
    """An If-Match that names none of the record's current tags; nothing was changed."""
    return ServiceError("rest_precondition_failed",
                        "The record changed since it was read (If-Match does not match its current ETag).",
                        PRECONDITION_FAILED)


def revision_not_found(commit: str, singular: str, record_id: int) -> ServiceError:
    return ServiceError("rest_revision_not_found", f"No revision {commit} of {singular} {record_id}.", NOT_FOUND)


def changes_token_expired() -> ServiceError:
    return ServiceError("rest_changes_token_expired",
                        "The token is unknown or expired; read everything again and start from a new token.", GONE)


def pull_refused(commit: str | None, path: str, reason: str) -> ServiceError:
    """The git remote's branch points at a commit the service refuses to check out; nothing moved."""
    return ServiceError("calendar-pull-refused", f"The git remote's commit {commit} was refused ({path or 'a tree'}: "
                        f"{reason}); the service stays at its last good commit until the remote is repaired.",
                        CONFLICT, commit=commit, path=path, reason=reason)

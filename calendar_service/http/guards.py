"""What every request must pass before the API reads it: a Host the service answers for, a
replica that has content, a body within the size limit.

The checks run in that order, before any other ``before_request`` function (``create_app``
installs them first) and before the request's route is dispatched, whatever the path: an
unknown path or ``/healthz`` with a foreign Host is refused like an API path.
"""
from __future__ import annotations

import io

from flask import request

from calendar_service.config import host_allowed
from calendar_service.http.errors import BAD_REQUEST, SERVICE_UNAVAILABLE, ApiError, request_too_large, retry_after
from calendar_service.http.namespace import PREFIX

# the API paths a replica without content still answers: the webhook (which pulls) and the status view
OPEN_WHILE_WAITING = (PREFIX + "/hooks/git", PREFIX + "/status")


def init_app(app, settings, service) -> None:
    """Register the checks on ``app``, the Host first."""
    host_patterns = settings.host_patterns
    max_body = settings.max_body_bytes

    # Flask's TRUSTED_HOSTS (Werkzeug's host_is_trusted) is not used: it would refuse Hosts the
    # service answers and accept some it refuses. It compares names case-sensitively (LOCALHOST
    # is refused for localhost) and keeps a trailing dot (localhost. is refused); it cuts the
    # value at its first colon, so every IPv6 literal is "[" and [::2] passes for [::1]; it has
    # no "*" (without a list it trusts any Host and turns a malformed one into an empty host
    # instead of refusing it); it takes a port of any length; and it IDNA-encodes the allowed
    # names on every request, raising UnicodeError (a 500) when it reaches one IDNA refuses (a..b).
    # ``config.host_allowed`` gives the answers of Django's ALLOWED_HOSTS docs/configuration.md promises.
    @app.before_request
    def check_host():
        # a Host the service does not answer for is refused before anything is read or cached
        host = request.environ.get("HTTP_HOST") or request.environ.get("SERVER_NAME", "")
        if not host_allowed(host, host_patterns):
            raise ApiError("rest_invalid_host", "The Host header names a host this service does not answer for.",
                           BAD_REQUEST)

    @app.before_request
    def wait_for_content():
        # a replica that has never reached its remote and holds no commit would serve an empty
        # calendar as if it were the real one: reads and writes answer 503 until a pull succeeds
        if not request.path.startswith(PREFIX) or request.path.rstrip("/") in OPEN_WHILE_WAITING:
            return None
        if service.waiting_for_content():
            raise ApiError("calendar-not-ready", "The service is not ready: it has not been able to fetch the "
                           "calendar from its git remote yet. Try again later.", SERVICE_UNAVAILABLE,
                           retry_after=retry_after(settings))
        return None

    @app.before_request
    def limit_body():
        # Flask enforces MAX_CONTENT_LENGTH only on bodies it reads; refuse any larger body up front
        if request.content_length is not None and request.content_length > max_body:
            raise request_too_large(max_body)
        if request.environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            # a chunked body has no length: werkzeug would cut it at the limit (and the JSON would
            # look malformed); read it here, refuse it whole, or hand it on with its length
            raw = request.environ["wsgi.input"].read(max_body + 1)
            if len(raw) > max_body:
                raise request_too_large(max_body)
            request.environ["wsgi.input"] = io.BytesIO(raw)
            request.environ["CONTENT_LENGTH"] = str(len(raw))
            request.environ.pop("HTTP_TRANSFER_ENCODING", None)
            request.environ.pop("wsgi.input_terminated", None)

"""The git webhook: a signed push event pulls the remote."""
from __future__ import annotations

import hashlib
import hmac
import json

from flask import request

from calendar_service.http import errors
from calendar_service.http.errors import ApiError
from calendar_service.http.call import Call


def check_signature(settings) -> None:
    """Accept the request only if its raw body carries a valid HMAC-SHA256 signature made with
    CALENDAR_WEBHOOK_SECRET (GitHub: ``X-Hub-Signature-256: sha256=HEX``; Gitea, Forgejo:
    ``X-Gitea-Signature``/``X-Forgejo-Signature: HEX``), compared in constant time.

    Raises 403 ``calendar-webhook-disabled`` without a secret or a remote, 401
    ``calendar-webhook-unsigned`` without a signature, 403 ``calendar-webhook-bad-signature``.
    """
    if not settings.webhook_secret or not settings.git_remote:
        raise ApiError("calendar-webhook-disabled", "The git webhook is not enabled on this server "
                       "(it needs CALENDAR_GIT_REMOTE and CALENDAR_WEBHOOK_SECRET).", 403)
    hub = request.headers.get("X-Hub-Signature-256")
    if hub is not None:
        scheme, _, given = hub.strip().partition("=")
        given = given if scheme.lower() == "sha256" else "-"  # present but not sha256=HEX: a wrong signature
    else:
        given = request.headers.get("X-Gitea-Signature") or request.headers.get("X-Forgejo-Signature") or ""
    if not given.strip():
        raise ApiError("calendar-webhook-unsigned", "The request carries no X-Hub-Signature-256 (or "
                       "X-Gitea-Signature) header.", 401)
    expected = hmac.new(settings.webhook_secret.encode("utf-8"), request.get_data(cache=True), hashlib.sha256)
    if not hmac.compare_digest(given.strip().lower().encode("ascii", "replace"), expected.hexdigest().encode("ascii")):
        raise ApiError("calendar-webhook-bad-signature", "The signature does not match the body.", 403)


def handle_git_hook(call: Call):
    """Pull the git remote after a signed push event; a push to another branch changes nothing."""
    ref = call.args.get("ref")
    if ref is None and isinstance(call.raw.get("payload"), str):
        try:
            event = json.loads(call.raw["payload"])
        except ValueError:
            raise errors.invalid_param("payload", "The payload is not JSON.") from None
        ref = event.get("ref") if isinstance(event, dict) and isinstance(event.get("ref"), str) else None
    svc = call.service
    if ref and ref != f"refs/heads/{svc.settings.git_remote_branch}":
        return {"pulled": False, "head": svc.branch_head()}, 200
    result = svc.pull_remote()
    return {"pulled": True, "head": result.head, "moved": result.moved, "pushed": result.pushed,
            "conflicts": result.conflicts}, 200


def handle_status(call: Call):
    """The state of the content repository, the remote and the index, for operators."""
    return call.service.status(), 200

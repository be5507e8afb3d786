"""ETags of single reads and the If-Match / If-None-Match checks."""
from __future__ import annotations

import hashlib

from flask import request

from calendar_service.domain.records import Record
from calendar_service.http.errors import ApiError
from calendar_service.http.call import Call, encode_json
from calendar_service.http.presenters import Presenter


def etag(text: str) -> str:
    """The ETag of a single read: a hash of the exact response body.

    Hashing the body itself (rather than the record's blob or the commit) makes the tag
    change exactly when the body would: an event embeds its venue, organizers and terms
    (with their counts), a password-protected record is blanked or not depending on the
    caller and the password given, and URLs depend on the host asked. Unrelated commits
    leave it alone, so caches stay valid across other records' writes. By id and by slug
    the body, hence the tag, is the same.
    """
    return '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40] + '"'


def matches(header: str | None, tag: str | None, weak: bool) -> bool:
    """Whether an If-Match / If-None-Match header names ``tag`` (``*``: any existing record).

    If-None-Match compares weakly (a ``W/`` prefix is ignored), If-Match strongly."""
    if header is None or tag is None:
        return False
    for item in header.split(","):
        item = item.strip()
        if item == "*":
            return True
        if weak and item.startswith("W/"):
            item = item[2:]
        if item == tag:
            return True
    return False


def if_match(call: Call, record: Record):
    """The precondition an ``If-Match`` header puts on a write, or None without the header.

    It runs inside the service's write lock against the head the write is built on (not
    against this request's snapshot), so a write made meanwhile by anyone turns the tag
    stale and this write into a 412 with no commit.
    """
    header = request.headers.get("If-Match")
    if header is None:
        return None

    def check(snapshot) -> None:
        current = snapshot.get(record.resource, record.id)
        tag = None
        if current is not None:
            presenter = Presenter(snapshot, call.urls, call.service.site_tz, call.unlocked, call.user)
            tag = etag(encode_json(presenter.present(current, single=True)))
        if not matches(header, tag, weak=False):
            raise ApiError("rest_precondition_failed",
                           "The record changed since it was read (If-Match does not match its current ETag).", 412)
    return check

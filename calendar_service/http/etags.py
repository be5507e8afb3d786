"""ETags of single reads and write responses, and the If-Match / If-None-Match checks."""
from __future__ import annotations

import hashlib

from flask import request

from calendar_service.domain.record import Record
from calendar_service.domain.snapshot import Snapshot
from calendar_service.http.call import Call
from calendar_service.http.namespace import PREFIX
from calendar_service.http.presenters import Presenter
from calendar_service.http.urls import Urls
from calendar_service.service import errors as service_errors

# A tag hashes the body as remembered for every host (``Presenter.tag_text``); one that involves a
# password is built per caller, under this base whatever the request's host: a tag is the same
# on every replica and behind every host name.
TAG_BASE = "https://etag.invalid"
TAG_URLS = Urls(rest_base=TAG_BASE + PREFIX, site=TAG_BASE)


def etag(text: str) -> str:
    """A strong ETag: a hash of ``text``."""
    return '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40] + '"'


def record_etag(call: Call, snapshot: Snapshot, record: Record) -> str:
    """The ETag of ``record``'s single read at ``snapshot`` for this caller.

    It hashes the single-read body as built for every host (``Presenter.tag_text``), so it
    changes exactly when that body would (the record itself, the venue, organizers and
    terms it embeds with their counts, what password protection shows to this caller) but
    not with the Host header asked: a tag from one replica or host name holds on every
    other. Unrelated commits leave it alone; by id and by slug it is the same.
    """
    presenter = Presenter(snapshot, TAG_URLS, call.service.site_tz, call.unlocked, call.user)
    if presenter.involves_password(record):  # what it shows depends on the password given
        return etag(presenter.present_json(record, single=True))
    key = ("etag", record.resource.name, record.id, presenter.viewer)
    tag = snapshot.memo.get(key)
    if tag is None:  # the same for every caller who sees the same records, until the next commit
        tag = etag(presenter.tag_text(record, single=True))
        snapshot.memo[key] = tag
    return tag


def matches(header: str | None, tag: str | None, weak: bool) -> bool:
    """Whether an If-Match / If-None-Match header names ``tag`` (``*``: any existing record).

    If-None-Match compares weakly (a ``W/`` prefix is ignored), If-Match strongly.

    Werkzeug's ``request.if_match`` / ``if_none_match`` (``parse_etags``) give these answers for
    well-formed headers but not for others, so they are not used: it takes an unquoted tag
    (``abc``) for ``"abc"``, ``w/`` for ``W/`` and ``W/*`` for ``*``, and it does not strip
    blanks around the value (with a space before it, ``"abc"`` matches nothing)."""
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
        tag = record_etag(call, snapshot, current) if current is not None else None
        if not matches(header, tag, weak=False):
            raise service_errors.precondition_failed()
    return check

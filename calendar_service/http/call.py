"""One request on its way through the pipeline, and the JSON answer."""
from __future__ import annotations

from dataclasses import dataclass, field

from flask import Response, current_app, request

from calendar_service.auth.accounts import User
from calendar_service.domain import permissions
from calendar_service.domain.record import Record
from calendar_service.domain.resources import Resource
from calendar_service.http import i18n
from calendar_service.http.json_text import to_json
from calendar_service.http.presenters import Presenter
from calendar_service.http.urls import Urls
from calendar_service.http.routing import Endpoint, Route
from calendar_service.service.calendar import CalendarService


@dataclass
class Call:
    """One request on its way through the pipeline."""

    route: Route
    endpoint: Endpoint
    service: CalendarService
    user: User | None
    args: dict
    present: set
    urls: Urls
    snapshot: object
    raw: dict = field(default_factory=dict)
    record: Record | None = None
    headers: dict = field(default_factory=dict)
    language: str = i18n.DEFAULT  # of descriptions (index, /doc); data is the same in every language
    client: str = ""  # the caller's address, read while the request is there (feeds stream after it)
    routes: tuple[Route, ...] = ()  # the table the route was matched in (the index and /doc describe it)

    def __post_init__(self):
        self.client = self.service.accounts.limits.client(request)

    @property
    def resource(self) -> Resource:
        return self.route.resource

    def unlocked(self, record: Record) -> bool:
        """Whether this caller may see a password-protected ``record`` in full."""
        secret = record.data.get("password")
        if not secret:
            return True
        given = self.raw.get("password")
        limits = self.service.accounts.limits  # constant-time compare; wrong guesses are counted
        if limits.event_password(record.id, self.client, given, str(secret)):
            return True
        return permissions.can_edit(self.user, record)

    def presenter(self, after_write: bool = False) -> Presenter:
        """Objects of the request's snapshot (one commit for the whole read), or of the branch
        head after this request's write."""
        snapshot = self.service.snapshot() if after_write else self.snapshot
        return Presenter(snapshot, self.urls, self.service.site_tz, self.unlocked, self.user)


def service() -> CalendarService:
    return current_app.extensions["calendar"]


def encode_json(body) -> str:
    """The exact text of a JSON response body (ETags are computed from it); RawJSON values
    (presented records, already JSON) are spliced in as they are."""
    return to_json(body)


def json_response(body, status: int = 200) -> Response:
    return Response(encode_json(body), status=status, headers={"Content-Type": "application/json; charset=UTF-8"})

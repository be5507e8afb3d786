"""What a route is: a path pattern under the namespace, and its endpoints (methods, handler,
arguments, permission).

The route table itself (``routes.py``) names the handler functions, so it sits above them;
these shapes sit below, where the handlers' ``Call``, /doc and the URL prefixes can use them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from calendar_service.domain.resources import Resource
from calendar_service.http.arguments import Arg


@dataclass(frozen=True)
class Endpoint:
    methods: tuple[str, ...]
    handler: Callable[..., Any]  # takes the request's Call; answers (body, status) or a ready Response
    args: tuple[Arg, ...]
    permission: str = "public"   # public | create | edit | delete | audit | signature (HMAC of the body, webhooks)
    summary: str = ""            # /doc summary (marked with N_); else docs.SUMMARIES by name
    response: str | None = None  # /doc: name of the components schema of the success body

    @property
    def name(self) -> str:
        """The operation's name, its handler's without ``handle_``: /doc describes an operation by
        it (summaries, success schemas, request body names such as ``events_create_body``)."""
        return self.handler.__name__.removeprefix("handle_")


@dataclass(frozen=True, eq=False)  # a route is only equal to itself: /doc's cache keys on the table, cheaply
class Route:
    pattern: str              # e.g. r"/events/(?P<id>\d+)"
    endpoints: tuple[Endpoint, ...]
    resource: Resource | None = None

    @property
    def regex(self) -> re.Pattern:
        return _compiled(self.pattern)

    @property
    def methods(self) -> list[str]:
        seen: list[str] = []
        for endpoint in self.endpoints:
            seen.extend(m for m in endpoint.methods if m not in seen)
        return seen

    @property
    def doc_path(self) -> str:
        """The OpenAPI form of the pattern: ``/events/{id}``."""
        return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", self.pattern) or "/"

    def endpoint_for(self, method: str) -> Endpoint | None:
        return next((e for e in self.endpoints if method in e.methods), None)


_CACHE: dict[str, re.Pattern] = {}


def _compiled(pattern: str) -> re.Pattern:
    if pattern not in _CACHE:
        _CACHE[pattern] = re.compile(pattern + r"\Z", re.I | re.ASCII)  # \d is 0-9 only, as in PCRE
    return _CACHE[pattern]

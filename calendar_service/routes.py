"""The route table: every path and method of the API, its arguments and its permission.

One table serves the dispatcher, the namespace index and /doc, so the three never
disagree. Paths are WordPress-style patterns relative to the namespace, in the order the
original registers them (BEHAVIOR.md section 2).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .resources import EVENTS, POST_TYPES, TERM_TYPES, Arg, Resource

NAMESPACE = "calendar/events/v1"
EDIT = ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class Endpoint:
    methods: tuple[str, ...]
    handler: str              # name in api.HANDLERS
    args: tuple[Arg, ...]
    permission: str = "public"   # public | create | edit | delete | audit


@dataclass(frozen=True)
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


def _id_arg(resource: Resource) -> Arg:
    kind = "post" if resource.kind == "post" else "term"
    check = "event_id_format" if resource is EVENTS else f"{resource.singular}_record"
    return Arg("id", f"the {('event ' + resource.singular) if resource.kind == 'term' else resource.singular} {kind} ID",
               type="integer", required=True, check=check, location="path")


def _slug_arg(resource: Resource) -> Arg:
    return Arg("slug", f"the {resource.singular} post name", type="string", required=True,
               check=f"{resource.singular}_slug", location="path")


PASSWORD = Arg("password", "The event password", type="string")


def build_routes() -> tuple[Route, ...]:
    routes = [
        Route("", (Endpoint(("GET",), "index", (
            Arg("namespace", "", default=NAMESPACE),
            Arg("context", "", default="view"),
        )),)),
        Route("/doc", (Endpoint(("GET",), "doc", ()),)),
    ]
    for resource in POST_TYPES:
        extra = (PASSWORD,) if resource is EVENTS else ()
        ident = (_id_arg(resource),) + extra
        slug = (_slug_arg(resource),)
        update_args = tuple(a for a in resource.update_args() if a.name != "slug")
        # the original registers no `password` on by-slug routes; a `password` sent there still unlocks
        routes += [
            Route(f"/{resource.name}", (
                Endpoint(("GET",), "archive", resource.archive_args),
                Endpoint(("POST",), "create", resource.create_args, "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), "single", ident),
                Endpoint(("DELETE",), "delete", ident, "delete"),
                Endpoint(EDIT, "update", ident + resource.update_args(), "edit"),
            ), resource),
            Route(rf"/{resource.name}/by-slug/(?P<slug>[^/]+)", (
                Endpoint(("GET",), "single", slug),
                Endpoint(("DELETE",), "delete", slug, "delete"),
                # the path's slug names the record; renaming goes through the id route
                Endpoint(EDIT, "update", slug + update_args, "edit"),
            ), resource),
        ]
    for resource in TERM_TYPES:
        ident = (_id_arg(resource),)
        routes += [
            Route(f"/{resource.name}", (
                Endpoint(("GET",), "archive", resource.archive_args),
                Endpoint(("POST",), "create", resource.create_args, "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), "single", ident),
                Endpoint(EDIT, "update", ident + resource.update_args(), "edit"),
                Endpoint(("DELETE",), "delete", ident, "delete"),
            ), resource),
        ]
    routes += _audit_routes()
    return tuple(routes)


COMMIT = Arg("commit", "A commit of the content repository's branch (4 to 40 hexadecimal digits, as listed by "
             "the revisions route)", type="string", required=True, check="commit_id", location="path")
SINCE = Arg("since", "The next_token of an earlier response: list the records created, updated or deleted "
            "since then. Without it only the current next_token is returned; an unknown or expired token "
            "gives 410 (read everything again)", type="string")


def _audit_routes() -> list[Route]:
    """Revisions of every record (editors and administrators) and the changes feed (anyone)."""
    routes = []
    for resource in POST_TYPES + TERM_TYPES:
        ident = (_id_arg(resource),)
        routes += [
            Route(rf"/{resource.name}/(?P<id>\d+)/revisions", (
                Endpoint(("GET",), "revisions", ident, "audit"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)/revisions/(?P<commit>[^/]+)", (
                Endpoint(("GET",), "revision", ident + (COMMIT,), "audit"),
            ), resource),
        ]
    routes.append(Route("/changes", (Endpoint(("GET",), "changes", (SINCE,)),)))
    return routes


ROUTES = build_routes()


def match(path: str) -> tuple[Route, dict] | None:
    """The route whose pattern matches ``path`` (relative to the namespace), with its path values."""
    for route in ROUTES:
        found = route.regex.match(path)
        if found:
            return route, found.groupdict()
    return None

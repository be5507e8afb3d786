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
    permission: str = "public"   # public | create | edit | delete | signature (HMAC of the body, webhooks)


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

# The push webhook of GitHub, Gitea and Forgejo: authenticated by the HMAC-SHA256 signature of the
# raw body (header X-Hub-Signature-256: sha256=HEX, or X-Gitea-Signature / X-Forgejo-Signature: HEX)
# with CALENDAR_WEBHOOK_SECRET; a valid call pulls the git remote.
GIT_HOOK_ARGS = (
    Arg("ref", "The ref the push updated, e.g. refs/heads/main (sent by GitHub, Gitea and Forgejo in a JSON "
               "body). A push to another branch than CALENDAR_GIT_REMOTE_BRANCH is acknowledged without a "
               "pull; without it the service pulls.", type="string", location="body"),
    Arg("payload", "The push event as a JSON string, when the hook sends form-encoded bodies (GitHub's "
                   "application/x-www-form-urlencoded content type); its ref is read as above.",
        type="string", location="body"),
)


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
    routes.append(Route("/hooks/git", (Endpoint(("POST",), "git_hook", GIT_HOOK_ARGS, "signature"),)))
    return tuple(routes)


ROUTES = build_routes()


def match(path: str) -> tuple[Route, dict] | None:
    """The route whose pattern matches ``path`` (relative to the namespace), with its path values."""
    for route in ROUTES:
        found = route.regex.match(path)
        if found:
            return route, found.groupdict()
    return None

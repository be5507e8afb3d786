"""The route table: every path and method of the API, its arguments and its permission.

One table serves the dispatcher, the namespace index and /doc, so the three never
disagree. Paths are WordPress-style patterns relative to the namespace, in the order the
original registers them (the namespace index lists them in this order).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from calendar_service.http.i18n import LANGUAGES, N_
from calendar_service.domain.resources import EVENTS, POST_TYPES, TERM_TYPES, Resource
from calendar_service.http.arguments import ICAL, OCCURRENCE_ARGS, RECURRENCE_SCOPE, Arg, archive_args, create_args, update_args
from calendar_service.http.namespace import NAMESPACE

WP_NAMESPACE = "tribe/events/v1"  # the original plugin's, served too with CALENDAR_WP_COMPAT (see prefix.py)
EDIT = ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class Endpoint:
    methods: tuple[str, ...]
    handler: str              # name in api.HANDLERS
    args: tuple[Arg, ...]
    permission: str = "public"   # public | create | edit | delete | audit | signature (HMAC of the body, webhooks)
    summary: str = ""            # /doc summary (marked with N_); else SUMMARIES by handler
    response: str | None = None  # /doc: name of the components schema of the success body


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


_ID_TEXT = {"events": N_("the event post ID"), "venues": N_("the venue post ID"),
            "organizers": N_("the organizer post ID"), "categories": N_("the event category term ID"),
            "tags": N_("the event tag term ID")}
_SLUG_TEXT = {"events": N_("the event post name"), "venues": N_("the venue post name"),
              "organizers": N_("the organizer post name")}


def _id_arg(resource: Resource) -> Arg:
    check = "event_id_format" if resource is EVENTS else f"{resource.singular}_record"
    return Arg("id", _ID_TEXT[resource.name], type="integer", required=True, check=check, location="path")


def _slug_arg(resource: Resource) -> Arg:
    return Arg("slug", _SLUG_TEXT[resource.name], type="string", required=True,
               check=f"{resource.singular}_slug", location="path")


PASSWORD = Arg("password", N_("The event password"), type="string")
# on create the password is a field of the new event (the original takes it on updates only)
NEW_PASSWORD = Arg("password", N_("The event password"), type="string", location="body")

# Arguments every route takes besides its own (the index and /doc list them on every endpoint).
# An unknown language is not an error: it falls back to English (see i18n.choose).
LANGUAGE = Arg("i18n_language", N_("The language of the descriptions in the answer: one of nl, en, fr, de, it, "
                                   "pl, pt-pt, sl, es (any other value means English)"), type="string")
LANGUAGE_CODES = tuple(LANGUAGES)
COMMON_ARGS = (LANGUAGE,)

# Summaries of operations in /doc, by handler, then by resource; "by-slug" entries for slug routes.
SUMMARIES = {
    "index": N_("Describe the routes of this namespace"),
    "doc": N_("Get the OpenAPI document of this API"),
    ("archive", "events"): N_("List events"),
    ("archive", "venues"): N_("List venues"),
    ("archive", "organizers"): N_("List organizers"),
    ("archive", "categories"): N_("List event categories"),
    ("archive", "tags"): N_("List event tags"),
    ("create", "events"): N_("Create an event"),
    ("create", "venues"): N_("Create a venue"),
    ("create", "organizers"): N_("Create an organizer"),
    ("create", "categories"): N_("Create an event category"),
    ("create", "tags"): N_("Create an event tag"),
    ("single", "events"): N_("Get an event by ID"),
    ("single", "venues"): N_("Get a venue by ID"),
    ("single", "organizers"): N_("Get an organizer by ID"),
    ("single", "categories"): N_("Get an event category by ID"),
    ("single", "tags"): N_("Get an event tag by ID"),
    ("update", "events"): N_("Update an event by ID"),
    ("update", "venues"): N_("Update a venue by ID"),
    ("update", "organizers"): N_("Update an organizer by ID"),
    ("update", "categories"): N_("Update an event category by ID"),
    ("update", "tags"): N_("Update an event tag by ID"),
    ("delete", "events"): N_("Delete an event by ID (moves it to the trash)"),
    ("delete", "venues"): N_("Delete a venue by ID (moves it to the trash)"),
    ("delete", "organizers"): N_("Delete an organizer by ID (moves it to the trash)"),
    ("delete", "categories"): N_("Delete an event category by ID"),
    ("delete", "tags"): N_("Delete an event tag by ID"),
    ("single", "events", "by-slug"): N_("Get an event by slug"),
    ("single", "venues", "by-slug"): N_("Get a venue by slug"),
    ("single", "organizers", "by-slug"): N_("Get an organizer by slug"),
    ("update", "events", "by-slug"): N_("Update an event by slug"),
    ("update", "venues", "by-slug"): N_("Update a venue by slug"),
    ("update", "organizers", "by-slug"): N_("Update an organizer by slug"),
    ("delete", "events", "by-slug"): N_("Delete an event by slug (moves it to the trash)"),
    ("delete", "venues", "by-slug"): N_("Delete a venue by slug (moves it to the trash)"),
    ("delete", "organizers", "by-slug"): N_("Delete an organizer by slug (moves it to the trash)"),
}


def summary_of(route: "Route", endpoint: Endpoint) -> str:
    """The English summary of ``endpoint`` on ``route``: its own, else from SUMMARIES, else ""."""
    if endpoint.summary:
        return endpoint.summary
    name = route.resource.name if route.resource else None
    keys = [(endpoint.handler, name, "by-slug")] if "/by-slug/" in route.pattern else []
    keys += [(endpoint.handler, name), endpoint.handler]
    return next((SUMMARIES[k] for k in keys if k in SUMMARIES), "")

# The push webhook of GitHub, Gitea and Forgejo: authenticated by the HMAC-SHA256 signature of the
# raw body (header X-Hub-Signature-256: sha256=HEX, or X-Gitea-Signature / X-Forgejo-Signature: HEX)
# with CALENDAR_WEBHOOK_SECRET; a valid call pulls the git remote.
GIT_HOOK_ARGS = (
    Arg("ref", N_("The ref the push updated, e.g. refs/heads/main (sent by GitHub, Gitea and Forgejo in a JSON "
                  "body). A push to another branch than CALENDAR_GIT_REMOTE_BRANCH is acknowledged without a "
                  "pull; without it the service pulls."), type="string", location="body"),
    Arg("payload", N_("The push event as a JSON string, when the hook sends form-encoded bodies (GitHub's "
                      "application/x-www-form-urlencoded content type); its ref is read as above."),
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
        # the original registers no `password` on by-slug routes; we take it there too, so an
        # event is unlocked and its password set the same way whichever route names it
        slug = (_slug_arg(resource),) + extra
        as_ical = (ICAL,) if resource is EVENTS else ()
        scope = (RECURRENCE_SCOPE,) if resource is EVENTS else ()
        by_slug_update_args = tuple(a for a in update_args(resource) if a.name != "slug")
        routes += [
            Route(f"/{resource.name}", (
                Endpoint(("GET",), "archive", archive_args(resource)),
                Endpoint(("POST",), "create", create_args(resource) + ((NEW_PASSWORD,) if extra else ()), "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), "single", ident + as_ical),
                Endpoint(("DELETE",), "delete", ident + scope, "delete"),
                Endpoint(EDIT, "update", ident + update_args(resource) + scope, "edit"),
            ), resource),
            *([Route(r"/events/(?P<id>\d+)/occurrences", (
                Endpoint(("GET",), "occurrences", ident + OCCURRENCE_ARGS, "public",
                         N_("List the occurrences of a recurring event (an event that does not repeat is its "
                            "only occurrence), by start, from the start of yesterday unless start_date is given, "
                            "up to the recurrence horizon")),
            ), resource)] if resource is EVENTS else []),
            Route(rf"/{resource.name}/by-slug/(?P<slug>[^/]+)", (
                Endpoint(("GET",), "single", slug + as_ical),
                Endpoint(("DELETE",), "delete", slug, "delete"),
                # the path's slug names the record; renaming goes through the id route
                Endpoint(EDIT, "update", slug + by_slug_update_args, "edit"),
            ), resource),
        ]
    for resource in TERM_TYPES:
        ident = (_id_arg(resource),)
        routes += [
            Route(f"/{resource.name}", (
                Endpoint(("GET",), "archive", archive_args(resource)),
                Endpoint(("POST",), "create", create_args(resource), "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), "single", ident),
                Endpoint(EDIT, "update", ident + update_args(resource), "edit"),
                Endpoint(("DELETE",), "delete", ident, "delete"),
            ), resource),
        ]
    routes += _audit_routes()
    routes.append(Route("/hooks/git", (Endpoint(("POST",), "git_hook", GIT_HOOK_ARGS, "signature",
                                                 N_("Pull the git remote after a signed push event"),
                                                 "GitHookResult"),)))
    routes.append(Route("/status", (Endpoint(("GET",), "status", (), "audit",
                                             N_("Show the state of the content repository for operators: the branch "
                                                "head, the git remote and its last pull, a refused commit, the search "
                                                "index and the files skipped at the head")),)))
    routes += _subscription_routes()
    return tuple(routes)


COMMIT = Arg("commit", N_("A commit of the content repository's branch (4 to 40 hexadecimal digits, as listed "
                "by the revisions route)"), type="string", required=True, check="commit_id", location="path")
SINCE = Arg("since", N_("The next_token of an earlier response: list the records created, updated or deleted "
               "since then. Without it only the current next_token is returned; an unknown or expired token "
               "gives 410 (read everything again)"), type="string")

# /doc summaries of the audit routes, by resource (each names its own success schema)
_REVISIONS_TEXT = {"events": N_("List the revisions of an event"), "venues": N_("List the revisions of a venue"),
                   "organizers": N_("List the revisions of an organizer"),
                   "categories": N_("List the revisions of an event category"),
                   "tags": N_("List the revisions of an event tag")}
_REVISION_TEXT = {"events": N_("Get an event as it was at a commit"), "venues": N_("Get a venue as it was at a commit"),
                  "organizers": N_("Get an organizer as it was at a commit"),
                  "categories": N_("Get an event category as it was at a commit"),
                  "tags": N_("Get an event tag as it was at a commit")}
_RECORD_SCHEMA = {"events": "Event", "venues": "Venue", "organizers": "Organizer", "categories": "Term",
                  "tags": "Term"}


def _audit_routes() -> list[Route]:
    """Revisions of every record (editors and administrators) and the changes feed (anyone)."""
    routes = []
    for resource in POST_TYPES + TERM_TYPES:
        ident = (_id_arg(resource),)
        routes += [
            Route(rf"/{resource.name}/(?P<id>\d+)/revisions", (
                Endpoint(("GET",), "revisions", ident, "audit", _REVISIONS_TEXT[resource.name], "RevisionList"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)/revisions/(?P<commit>[^/]+)", (
                Endpoint(("GET",), "revision", ident + (COMMIT,), "audit", _REVISION_TEXT[resource.name],
                         _RECORD_SCHEMA[resource.name]),
            ), resource),
        ]
    routes.append(Route("/changes", (Endpoint(("GET",), "changes", (SINCE,),
                                              summary=N_("List the records changed since an earlier response"),
                                              response="ChangeList"),)))
    return routes


# Outbound webhooks (editors and administrators; editors manage their own subscriptions)
SUBSCRIPTION_ID = Arg("id", N_("The subscription ID"), type="integer", required=True, location="path")
_TARGET = N_("The URL deliveries are posted to: http or https, a host that resolves to public addresses only "
             "(unless the server allows private networks), no user name or password")
_TYPES = N_("Only changes of these resource types are delivered (events, venues, organizers, categories, tags); "
            "default all")
_CATEGORIES = N_("Only changes of events in one of these event categories (IDs or slugs) are delivered, together "
                 "with the tags filter; default any")
_TAGS = N_("Only changes of events with one of these event tags (IDs or slugs) are delivered, together with the "
           "categories filter; default any")
_ENABLED = N_("Whether the subscription is delivered to; true re-enables a subscription disabled after failed "
              "deliveries (its queued deliveries are retried at once)")
SUBSCRIPTION_FILTER = (
    Arg("types", _TYPES, items="string", check="resource_types", location="body"),
    Arg("categories", _CATEGORIES, items="integer", check="category_list", location="body"),
    Arg("tags", _TAGS, items="integer", check="tag_list", location="body"),
)
LIST_PAGE = (
    Arg("page", N_("The page of the list to return"), type="integer", default=1, check="positive_int"),
    Arg("per_page", N_("The number of items to return on each page (at most 50)"), type="integer", default=10,
        check="positive_int"),
)


def _subscription_routes() -> list[Route]:
    return [
        Route("/subscriptions", (
            Endpoint(("GET",), "subscriptions", LIST_PAGE, "audit",
                     N_("List webhook subscriptions (an editor's own; all for administrators)")),
            Endpoint(("POST",), "subscribe",
                     (Arg("url", _TARGET, type="string", required=True, check="webhook_url", location="body"),)
                     + SUBSCRIPTION_FILTER, "audit",
                     N_("Subscribe a URL to the changes of the calendar (the answer shows the signing secret, "
                        "once)")),
        )),
        Route(r"/subscriptions/(?P<id>\d+)", (
            Endpoint(("GET",), "subscription", (SUBSCRIPTION_ID,), "audit", N_("Get a webhook subscription")),
            Endpoint(EDIT, "update_subscription",
                     (SUBSCRIPTION_ID, Arg("url", _TARGET, type="string", check="webhook_url", location="body"))
                     + SUBSCRIPTION_FILTER + (Arg("enabled", _ENABLED, type="boolean", location="body"),), "audit",
                     N_("Change or re-enable a webhook subscription")),
            Endpoint(("DELETE",), "unsubscribe", (SUBSCRIPTION_ID,), "audit", N_("Delete a webhook subscription")),
        )),
        Route(r"/subscriptions/(?P<id>\d+)/deliveries", (
            Endpoint(("GET",), "deliveries", (SUBSCRIPTION_ID,) + LIST_PAGE, "audit",
                     N_("List the deliveries of a webhook subscription, newest first")),
        )),
    ]


ROUTES = build_routes()


def match(path: str) -> tuple[Route, dict] | None:
    """The route whose pattern matches ``path`` (relative to the namespace), with its path values."""
    for route in ROUTES:
        found = route.regex.match(path)
        if found:
            return route, found.groupdict()
    return None

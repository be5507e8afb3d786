"""The route table: every path and method of the API, its handler, its arguments and its permission.

One table serves the dispatcher, the namespace index and /doc, so the three never
disagree. Paths are WordPress-style patterns relative to the namespace, in the order the
original registers them (the namespace index lists them in this order). Each endpoint names
its handler function, so the table sits above the handlers; the shapes of its entries
(``Route``, ``Endpoint``) are in ``routing.py``, which the handlers and /doc use.
"""
from __future__ import annotations

from calendar_service.http.i18n import N_
from calendar_service.domain.resources import CATEGORIES, EVENTS, POST_TYPES, TAGS, TERM_TYPES, Resource
from calendar_service.http import checks
from calendar_service.http.arguments import ICAL, OCCURRENCE_ARGS, RECURRENCE_SCOPE, Arg, archive_args, create_args, update_args
from calendar_service.http.handlers.archives import handle_archive
from calendar_service.http.handlers.audit import handle_changes, handle_revision, handle_revisions
from calendar_service.http.handlers.discovery import handle_doc, handle_index
from calendar_service.http.handlers.hooks import handle_git_hook, handle_status
from calendar_service.http.handlers.records import (handle_create, handle_delete, handle_occurrences, handle_single,
                                                   handle_update)
from calendar_service.http.handlers.subscriptions import (handle_deliveries, handle_subscribe, handle_subscription,
                                                         handle_subscriptions, handle_unsubscribe,
                                                         handle_update_subscription)
from calendar_service.http.namespace import NAMESPACE
from calendar_service.http.routing import Endpoint, Route

EDIT = ("POST", "PUT", "PATCH")


_ID_TEXT = {"events": N_("the event post ID"), "venues": N_("the venue post ID"),
            "organizers": N_("the organizer post ID"), "categories": N_("the event category term ID"),
            "tags": N_("the event tag term ID")}
_SLUG_TEXT = {"events": N_("the event post name"), "venues": N_("the venue post name"),
              "organizers": N_("the organizer post name")}


def _id_arg(resource: Resource) -> Arg:
    # an event id is looked up by the handler: it may name an occurrence of a recurring series
    check = checks.ID_FORMAT if resource is EVENTS else checks.existing_record(resource)
    return Arg("id", _ID_TEXT[resource.name], type="integer", required=True, check=check, location="path")


def _slug_arg(resource: Resource) -> Arg:
    return Arg("slug", _SLUG_TEXT[resource.name], type="string", required=True,
               check=checks.existing_slug(resource), location="path")


PASSWORD = Arg("password", N_("The event password"), type="string")
# on create the password is a field of the new event (the original takes it on updates only)
NEW_PASSWORD = Arg("password", N_("The event password"), type="string", location="body")

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
        Route("", (Endpoint(("GET",), handle_index, (
            Arg("namespace", "", default=NAMESPACE),
            Arg("context", "", default="view"),
        )),)),
        Route("/doc", (Endpoint(("GET",), handle_doc, ()),)),
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
                Endpoint(("GET",), handle_archive, archive_args(resource)),
                Endpoint(("POST",), handle_create, create_args(resource) + ((NEW_PASSWORD,) if extra else ()),
                         "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), handle_single, ident + as_ical),
                Endpoint(("DELETE",), handle_delete, ident + scope, "delete"),
                Endpoint(EDIT, handle_update, ident + update_args(resource) + scope, "edit"),
            ), resource),
            *([Route(r"/events/(?P<id>\d+)/occurrences", (
                Endpoint(("GET",), handle_occurrences, ident + OCCURRENCE_ARGS, "public",
                         N_("List the occurrences of a recurring event (an event that does not repeat is its "
                            "only occurrence), by start, from the start of yesterday unless start_date is given, "
                            "up to the recurrence horizon")),
            ), resource)] if resource is EVENTS else []),
            Route(rf"/{resource.name}/by-slug/(?P<slug>[^/]+)", (
                Endpoint(("GET",), handle_single, slug + as_ical),
                Endpoint(("DELETE",), handle_delete, slug, "delete"),
                # the path's slug names the record; renaming goes through the id route
                Endpoint(EDIT, handle_update, slug + by_slug_update_args, "edit"),
            ), resource),
        ]
    for resource in TERM_TYPES:
        ident = (_id_arg(resource),)
        routes += [
            Route(f"/{resource.name}", (
                Endpoint(("GET",), handle_archive, archive_args(resource)),
                Endpoint(("POST",), handle_create, create_args(resource), "create"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)", (
                Endpoint(("GET",), handle_single, ident),
                Endpoint(EDIT, handle_update, ident + update_args(resource), "edit"),
                Endpoint(("DELETE",), handle_delete, ident, "delete"),
            ), resource),
        ]
    routes += _audit_routes()
    routes.append(Route("/hooks/git", (Endpoint(("POST",), handle_git_hook, GIT_HOOK_ARGS, "signature",
                                                 N_("Pull the git remote after a signed push event"),
                                                 "GitHookResult"),)))
    routes.append(Route("/status", (Endpoint(("GET",), handle_status, (), "audit",
                                             N_("Show the state of the content repository for operators: the branch "
                                                "head, the git remote and its last pull, a refused commit, the search "
                                                "index and the files skipped at the head")),)))
    routes += _subscription_routes()
    return tuple(routes)


COMMIT = Arg("commit", N_("A commit of the content repository's branch (4 to 40 hexadecimal digits, as listed "
                "by the revisions route)"), type="string", required=True, check=checks.COMMIT_ID, location="path")
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
                Endpoint(("GET",), handle_revisions, ident, "audit", _REVISIONS_TEXT[resource.name], "RevisionList"),
            ), resource),
            Route(rf"/{resource.name}/(?P<id>\d+)/revisions/(?P<commit>[^/]+)", (
                Endpoint(("GET",), handle_revision, ident + (COMMIT,), "audit", _REVISION_TEXT[resource.name],
                         _RECORD_SCHEMA[resource.name]),
            ), resource),
        ]
    routes.append(Route("/changes", (Endpoint(("GET",), handle_changes, (SINCE,),
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
    Arg("types", _TYPES, items="string", check=checks.RESOURCE_TYPE_LIST, location="body"),
    Arg("categories", _CATEGORIES, items="integer", check=checks.terms(CATEGORIES), location="body"),
    Arg("tags", _TAGS, items="integer", check=checks.terms(TAGS), location="body"),
)
LIST_PAGE = (
    Arg("page", N_("The page of the list to return"), type="integer", default=1, check=checks.POSITIVE_INT),
    Arg("per_page", N_("The number of items to return on each page (at most 50)"), type="integer", default=10,
        check=checks.POSITIVE_INT),
)


def _subscription_routes() -> list[Route]:
    return [
        Route("/subscriptions", (
            Endpoint(("GET",), handle_subscriptions, LIST_PAGE, "audit",
                     N_("List webhook subscriptions (an editor's own; all for administrators)")),
            Endpoint(("POST",), handle_subscribe,
                     (Arg("url", _TARGET, type="string", required=True, check=checks.WEBHOOK_URL, location="body"),)
                     + SUBSCRIPTION_FILTER, "audit",
                     N_("Subscribe a URL to the changes of the calendar (the answer shows the signing secret, "
                        "once)")),
        )),
        Route(r"/subscriptions/(?P<id>\d+)", (
            Endpoint(("GET",), handle_subscription, (SUBSCRIPTION_ID,), "audit", N_("Get a webhook subscription")),
            Endpoint(EDIT, handle_update_subscription,
                     (SUBSCRIPTION_ID, Arg("url", _TARGET, type="string", check=checks.WEBHOOK_URL, location="body"))
                     + SUBSCRIPTION_FILTER + (Arg("enabled", _ENABLED, type="boolean", location="body"),), "audit",
                     N_("Change or re-enable a webhook subscription")),
            Endpoint(("DELETE",), handle_unsubscribe, (SUBSCRIPTION_ID,), "audit", N_("Delete a webhook subscription")),
        )),
        Route(r"/subscriptions/(?P<id>\d+)/deliveries", (
            Endpoint(("GET",), handle_deliveries, (SUBSCRIPTION_ID,) + LIST_PAGE, "audit",
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

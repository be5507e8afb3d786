"""The handlers, by the name a route's ``Endpoint`` gives (see ``routes.py``).

Each takes the request's ``Call`` and answers ``(body, status)`` for JSON, or a ready
``Response`` for another representation.
"""
from calendar_service.http.handlers.archives import handle_archive
from calendar_service.http.handlers.audit import handle_changes, handle_revision, handle_revisions
from calendar_service.http.handlers.discovery import handle_doc, handle_index
from calendar_service.http.handlers.hooks import handle_git_hook, handle_status
from calendar_service.http.handlers.subscriptions import (handle_deliveries, handle_subscribe, handle_subscription,
                                                         handle_subscriptions, handle_unsubscribe,
                                                         handle_update_subscription)
from calendar_service.http.handlers.records import (handle_create, handle_delete, handle_occurrences, handle_single,
                                                   handle_update)

HANDLERS = {
    "git_hook": handle_git_hook,
    "status": handle_status,
    "index": handle_index,
    "doc": handle_doc,
    "archive": handle_archive,
    "create": handle_create,
    "single": handle_single,
    "occurrences": handle_occurrences,
    "update": handle_update,
    "delete": handle_delete,
    "revisions": handle_revisions,
    "revision": handle_revision,
    "changes": handle_changes,
    "subscriptions": handle_subscriptions,
    "subscribe": handle_subscribe,
    "subscription": handle_subscription,
    "update_subscription": handle_update_subscription,
    "unsubscribe": handle_unsubscribe,
    "deliveries": handle_deliveries,
}

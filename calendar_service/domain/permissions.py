"""Who may see and change what: WordPress' roles and capabilities, applied per record.

Capabilities come from the role (``domain.roles.CAPABILITIES``); per-record rules follow
WordPress' ``map_meta_cap``: changing someone else's record needs the *others*
capability, changing a published record the *published* one, so contributors change only
their own drafts and pending records.
"""
from __future__ import annotations

from calendar_service.domain.roles import User
from calendar_service.domain.records import Record
from calendar_service.domain.resources import CATEGORIES, Resource

VISIBLE_TO_EDITORS = ("publish", "future", "draft", "pending", "private")


def can_create(user: User | None, resource: Resource) -> bool:
    if user is None or not user.can("edit_posts"):
        return False
    if resource.kind == "term":
        # categories: manage_terms = publish events (author and up); tags: manage_categories (editor and up)
        return user.can("publish_posts" if resource is CATEGORIES else "manage_categories")
    return True


def _may_change(user: User | None, record: Record, others: str, published: str, plain: str) -> bool:
    if user is None or not user.can(plain):
        return False
    if record.resource.kind == "term":
        return can_create(user, record.resource)
    own = record.data.get("author") == user.id
    if not own and not user.can(others):
        return False
    if record.status in ("publish", "future", "private") and not user.can(published):
        return False
    return True


def can_edit(user: User | None, record: Record) -> bool:
    return _may_change(user, record, "edit_others_posts", "edit_published_posts", "edit_posts")


def can_delete(user: User | None, record: Record) -> bool:
    if record.resource.kind == "term":
        return can_create(user, record.resource)
    return _may_change(user, record, "delete_others_posts", "delete_published_posts", "delete_posts")


def can_read(user: User | None, record: Record) -> bool:
    """Whether a single read of ``record`` is allowed (trash is handled by the caller)."""
    if record.status == "publish":
        return True
    if user is None:
        return False
    if user.can("read_private_posts"):
        return True
    return record.data.get("author") == user.id and user.can("edit_posts")


def can_audit(user: User | None) -> bool:
    """Editors and administrators may read the history of any record (revisions)."""
    return user is not None and user.can("edit_others_posts")


def can_publish(user: User | None) -> bool:
    return user is not None and user.can("publish_posts")


def sees_all_statuses(user: User | None) -> bool:
    """Users who can edit posts see every status but trash in lists; others see published only."""
    return user is not None and user.can("edit_posts")


def listable(user: User | None, record: Record, statuses) -> bool:
    """Whether ``record`` belongs in a list asked for with ``statuses``."""
    if record.status not in statuses:
        return False
    if record.status in ("publish",):
        return True
    if user is None:
        return False
    if record.status == "private" and not user.can("read_private_posts"):
        return record.data.get("author") == user.id
    return True


def scale_status(requested: str | None, user: User | None, current: str | None = None) -> str:
    """The status a write ends with: a user without ``publish_posts`` cannot publish or schedule
    (asking for ``publish`` or ``future`` gives ``pending``)."""
    if requested is None:
        if current is not None:
            return current
        return "publish" if can_publish(user) else "draft"
    if requested in ("publish", "future") and not can_publish(user):
        return "pending"
    return requested


def can_empty_trash(user: User | None) -> bool:
    """Deleting trashed records for good needs the rights of an editor (deleting others' posts)."""
    return user is not None and user.can("delete_others_posts")

"""Who may see and change what: WordPress' roles and capabilities, applied per record.

Capabilities come from the role (``domain.roles.CAPABILITIES``); per-record rules follow
WordPress' ``map_meta_cap``: changing someone else's record needs the *others*
capability, changing a published record the *published* one, so contributors change only
their own drafts and pending records.
"""
from __future__ import annotations

from calendar_service.domain.roles import User
from calendar_service.domain.record import Record
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


# The one rule of who sees which record in lists, searches, feeds and embeds, and which
# records a write may link or match by name. By status:
#   publish                      everyone
#   draft, pending, future, ...  users who can edit posts (contributors and up), as the original's lists
#   private                      its author, and users who may read private posts (editors, administrators)
#   trash                        its author, and users who may change others' posts (editors, administrators)
# Anonymous callers and subscribers see published records only. A trashed record keeps being
# hidden from those who could not see it before. Single reads are stricter (``can_read``).
ALL, OWN, NONE = "all", "own", "none"


def status_scope(user: User | None, status: str) -> str:
    """Which records of ``status`` ``user`` may see: ``all``, only their ``own``, or ``none``
    (the index answers lists with this too, one status at a time)."""
    if status == "publish":
        return ALL
    if user is None or not user.can("edit_posts"):
        return NONE
    if status == "private":
        return ALL if user.can("read_private_posts") else OWN
    if status == "trash":
        return ALL if user.can("edit_others_posts") else OWN
    return ALL


def can_see(user: User | None, record: Record) -> bool:
    """Whether ``user`` may see ``record`` in a list, a search, a feed or an embed (see above)."""
    if record.resource.kind == "term":
        return True
    scope = status_scope(user, record.status)
    if scope == OWN:
        return user is not None and record.data.get("author") == user.id
    return scope == ALL


def can_use(user: User | None, record: Record) -> bool:
    """Whether ``user`` may see ``record`` embedded in another, or link it (by id or by a
    matching name) from a write: records they may see, never trashed ones."""
    return record.status != "trash" and can_see(user, record)


def can_match(user: User | None, record: Record) -> bool:
    """Whether a venue or organizer created by name (``POST /venues``, a new venue object in an
    event) may stand for the existing ``record`` of that name (the original's duplicate rule):
    only one ``user`` may use that is published or ``user``'s own, never someone else's
    unpublished record."""
    return can_use(user, record) and (record.status == "publish"
                                      or (user is not None and record.data.get("author") == user.id))


def viewer(user: User | None):
    """A key equal for every two users who see the same records (``can_see``): presented objects
    that embed other records are cached per viewer."""
    if user is None or not user.can("edit_posts"):
        return NONE
    if user.can("read_private_posts") and user.can("edit_others_posts"):
        return ALL
    return (OWN, user.id)


def listable(user: User | None, record: Record, statuses) -> bool:
    """Whether ``record`` belongs in a list asked for with ``statuses``."""
    return record.status in statuses and can_see(user, record)


def can_assign_author(user: User | None, author_id: int | None) -> bool:
    """Only users who may change others' posts (editors, administrators) may give a record
    another author, as in WordPress."""
    return author_id is None or (user is not None and (author_id == user.id or user.can("edit_others_posts")))


def scale_status(requested: str | None, user: User | None, current: str | None = None) -> str:
    """The status a write ends with: a user without ``publish_posts`` cannot publish, schedule
    or make private (asking for ``publish``, ``future`` or ``private`` gives ``pending``)."""
    if requested is None:
        if current is not None:
            return current
        return "publish" if can_publish(user) else "draft"
    if requested in ("publish", "future", "private") and not can_publish(user):
        return "pending"
    return requested


def can_move_every_file(user: User | None) -> bool:
    """Moving every event file to its month folder (a commit touching others' posts) needs the
    rights of an editor."""
    return user is not None and user.can("edit_others_posts")


def can_empty_trash(user: User | None) -> bool:
    """Deleting trashed records for good needs the rights of an editor (deleting others' posts)."""
    return user is not None and user.can("delete_others_posts")

"""Who may do what: the roles, their capabilities, and the signed-in user as the rules see it.

Accounts (the users file, passwords) live in ``calendar_service.auth``; the rules in
``domain.permissions`` need only the user's id and role, defined here so that the domain
depends on nothing above it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ROLES = ("administrator", "editor", "author", "contributor", "subscriber")

# Capabilities per role, as WordPress grants them, the same on events, venues and organizers.
CAPABILITIES = {
    "administrator": {"edit_posts", "publish_posts", "edit_others_posts", "edit_published_posts", "delete_posts",
                      "delete_others_posts", "delete_published_posts", "read_private_posts", "manage_categories",
                      "upload_files"},
    "editor": {"edit_posts", "publish_posts", "edit_others_posts", "edit_published_posts", "delete_posts",
               "delete_others_posts", "delete_published_posts", "read_private_posts", "manage_categories",
               "upload_files"},
    "author": {"edit_posts", "publish_posts", "edit_published_posts", "delete_posts", "delete_published_posts",
               "upload_files"},
    "contributor": {"edit_posts", "delete_posts"},
    "subscriber": set(),
}


@dataclass(frozen=True)
class User:
    """A signed-in account: ``id`` is the ``author`` of records, ``name``/``email`` the commit author."""

    id: int
    login: str
    name: str
    email: str
    role: str
    passwords: tuple = field(default=(), repr=False)

    def can(self, capability: str) -> bool:
        return capability in CAPABILITIES.get(self.role, set())

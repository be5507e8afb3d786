"""WordPress' own routes a client of the original checks before it talks to the calendar (with
``CALENDAR_WP_COMPAT``): ``/wp-json/wp/v2/users/me`` (who the credentials belong to) and
``/wp-json/wp/v2/settings`` (the site's time zone), answered from the accounts and the settings
with WordPress' shapes and errors.
"""
from __future__ import annotations

from flask import request

from calendar_service.auth.accounts import User
from calendar_service.domain.roles import CAPABILITIES
from calendar_service.http import prefix
from calendar_service.http.errors import ApiError

WP_V2 = "wp/v2"
# what WordPress names each route of wp/v2 we serve, with its methods (the discovery index lists them)
ROUTES = {"/wp/v2/users/me": ["GET"], "/wp/v2/settings": ["GET"]}


def not_logged_in() -> ApiError:
    return ApiError("rest_not_logged_in", "You are not currently logged in.", 401)


def capabilities(user: User) -> dict:
    """The account's capabilities as WordPress lists them: every capability of its role, ``read``
    (every role has it) and the role's own name, each ``true``."""
    caps = {"read": True} if user.role in CAPABILITIES else {}
    caps.update({cap: True for cap in sorted(CAPABILITIES.get(user.role, ()))})
    caps[user.role] = True
    return caps


def user_me(user: User | None, settings, context: str) -> dict:
    """``GET /wp/v2/users/me``: the signed-in account. ``context=edit`` adds what WordPress shows
    only to the user itself (login, email, roles, capabilities)."""
    if user is None:
        raise not_logged_in()
    base = prefix.host_base()
    site = settings.site_url or base
    slug = user.login.lower()
    body = {"id": user.id, "name": user.name or user.login, "url": "", "description": "",
            "link": f"{site}/author/{slug}/", "slug": slug, "avatar_urls": {}, "meta": []}
    if context == "edit":
        body.update({"username": user.login, "first_name": "", "last_name": "", "email": user.email,
                     "nickname": user.login, "roles": [user.role], "locale": "en_US",
                     "capabilities": capabilities(user), "extra_capabilities": {user.role: True}})
    body["_links"] = {"self": [{"href": f"{base}{prefix.WP_ROOT}/wp/v2/users/{user.id}"}],
                      "collection": [{"href": f"{base}{prefix.WP_ROOT}/wp/v2/users"}]}
    return body


def site_settings(user: User | None, settings) -> dict:
    """``GET /wp/v2/settings``: WordPress lets administrators (``manage_options``) read it; others
    get ``rest_forbidden`` (401 anonymous, 403 signed in)."""
    if user is None or user.role != "administrator":
        raise ApiError("rest_forbidden", "Sorry, you are not allowed to do that.", 403 if user else 401)
    site = settings.site_url or prefix.host_base()
    urls = prefix.wp_urls(settings)
    return {"title": urls.host_path, "description": "", "url": site, "email": "",
            "timezone": settings.site_timezone, "date_format": "F j, Y", "time_format": "g:i a",
            "start_of_week": 1, "language": "en_US", "use_smilies": True, "default_category": 1,
            "default_post_format": "0", "posts_per_page": settings.per_page_default, "show_on_front": "posts",
            "page_on_front": 0, "page_for_posts": 0, "default_ping_status": "closed",
            "default_comment_status": "closed", "site_logo": None, "site_icon": 0}


def context_arg() -> str:
    return "edit" if request.args.get("context") == "edit" else "view"

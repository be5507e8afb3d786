"""The API's namespaces: the one place their spelling lives.

Every route is under ``PREFIX`` (``/calendar/events/v1``); with ``CALENDAR_WP_COMPAT`` the same
routes are also served under the original plugin's namespace, ``WP_NAMESPACE``, below
WordPress' REST root (see ``prefix.py``). This module imports nothing, so the lowest modules
of ``http/`` (``urls``, ``i18n``) and the WSGI middleware can use it.
"""
from __future__ import annotations

NAMESPACE = "calendar/events/v1"
PREFIX = "/" + NAMESPACE
WP_NAMESPACE = "tribe/events/v1"

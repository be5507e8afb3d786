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
# the original's newer API (see ``tec.py``): always at TEC_PREFIX, and below WordPress' REST root
# as TEC_WP_NAMESPACE with CALENDAR_WP_COMPAT
TEC_NAMESPACE = "calendar/tec/v1"
TEC_PREFIX = "/" + TEC_NAMESPACE
TEC_WP_NAMESPACE = "tec/v1"

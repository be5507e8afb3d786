"""The API's namespace: the one place its spelling lives.

Every route is under ``PREFIX`` (``/calendar/events/v1``). This module imports nothing, so
the lowest modules of ``http/`` (``urls``, ``i18n``) and the WSGI middleware can use it.
"""
from __future__ import annotations

NAMESPACE = "calendar/events/v1"
PREFIX = "/" + NAMESPACE

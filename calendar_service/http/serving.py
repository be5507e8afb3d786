"""Serving with gunicorn: the hook its configuration (``gunicorn.conf.py``) runs in the master.

gunicorn forks its workers from one master process. Each worker builds its own app and service
(``create_app``: its own git processes, state connections, index readers and threads; none of
them survives a fork), but what is plain data is worth loading once, before the fork: the
modules of the app and the records of the content repository. The workers then share those
memory pages with the master and with each other (copy-on-write) instead of holding a copy
each, and a worker starts from the records in memory instead of the records cache.

``gunicorn --preload`` is not the way: it builds the whole app in the master, and the threads
and processes it starts there would not exist in the workers, or be shared by all of them.
"""
from __future__ import annotations

import gc
import logging
import time

from calendar_service.config import Settings
from calendar_service.http import memory
from calendar_service.http.own_text import OwnTexts
from calendar_service.service import build

log = logging.getLogger(__name__)


def on_starting(server=None) -> int:
    """gunicorn's ``on_starting`` hook (the master, before any worker is forked): import the
    app's modules and load the records (``build.preload``), then put all of it out of the cyclic
    collector's sight (``gc.freeze``), so that a collection in a worker does not write to those
    pages. Returns the number of files loaded."""
    started = time.monotonic()
    from calendar_service.http import api, docs_ui, ical, tec  # noqa: F401  (what a worker imports anyway)
    settings = Settings.from_env()
    files = build.preload(settings, kept_texts=OwnTexts(settings.tz))
    gc.collect()
    gc.freeze()
    memory.give_back()   # the load's freed heap space, which the workers would otherwise inherit
    message = "loaded %d files for the workers in %.2f s"
    (server.log.info if server is not None else log.info)(message, files, time.monotonic() - started)
    return files


"""Failures confined to one record: what could not be derived from one record (its search
document, its VEVENT, its JSON, its change entry) is left out, logged once and listed by
``/status``, and everything else answers.

Parsing catches what a file can do to it (``record_files.parse``); this is the net under what
is derived from a parsed record, so that one record can never take a list, a feed, the index or
the webhooks down with it. Per process; the failures of one record version are logged once.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict

log = logging.getLogger(__name__)

FAULTS_KEPT = 1000   # record failures remembered (oldest forgotten first); /status lists the newest


class Faults:
    """The failures of records' derived values: (path, blob, where) -> the error's text."""

    def __init__(self, kept: int = FAULTS_KEPT):
        self.kept = kept
        self.count = 0   # failures seen (of distinct record versions and places) since the start
        self._seen: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def guard(self, record, where: str, make, default=None):
        """``make()``, or ``default`` when it raises (reported for ``record``)."""
        try:
            return make()
        except Exception as exc:   # one record's failure, whatever it is, stays its own
            self.report(record, where, exc)
            return default

    def report(self, record, where: str, exc: BaseException) -> None:
        """Remember (and log, the first time) that ``where`` failed for ``record``."""
        key = (getattr(record, "path", "?"), getattr(record, "blob", ""), where)
        text = f"{type(exc).__name__}: {exc}"[:300]
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return
            self._seen[key] = text
            self.count += 1
            while len(self._seen) > self.kept:
                self._seen.popitem(last=False)
        log.error("%s: %s failed (%s); this record is left out of it, the rest answers", key[0], where, text,
                  exc_info=exc)

    def listed(self, limit: int) -> list[dict]:
        """The newest ``limit`` failures: path, where, error."""
        with self._lock:
            newest = list(self._seen.items())[-limit:] if limit > 0 else []
        return [{"path": path, "where": where, "error": text} for (path, _, where), text in reversed(newest)]


FAULTS = Faults()

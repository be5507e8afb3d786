"""The VEVENTs already built, kept compressed in a cache bounded in bytes.

A VEVENT depends on its record (immutable for its blob, so shared by the snapshots that
follow a write), the URLs and site zone it is written with, and the venues, organizers and
categories the caller may see embedded: an entry is reused while those are the same objects.
It was kept on the record itself, so the cache grew with the calendar (~45 MB at 100,000
events, never given back while the records lived). Now entries live in one least-recently-used
``Memo`` of at most ``VEVENT_BYTES`` compressed bytes: each VEVENT is deflated against a preset
dictionary (the first VEVENT the cache kept, which shares the site's URLs, property names and
zones with the others), ~2.8x smaller, and inflated in microseconds when a feed reuses it. A
feed larger than the budget rebuilds what it no longer holds (least recently used first).
"""
from __future__ import annotations

import threading
import zlib

from calendar_service.domain.snapshot import Memo

VEVENT_BYTES = 32_000_000    # bytes counted (compressed size + 200 each): a 100,000-event feed counts ~25 MB
VEVENT_ENTRIES = 400_000
DICTIONARY_BYTES = 32_768    # zlib's window: a longer preset dictionary is not used


class VeventCache:
    """VEVENT bytes by (record, context), checked against the referenced records they were built from."""

    def __init__(self, budget: int = VEVENT_BYTES, size: int = VEVENT_ENTRIES):
        self._memo = Memo(size, budget)
        self._dictionary: bytes | None = None
        self._lock = threading.Lock()

    def get(self, record, context, refs: tuple) -> bytes | None:
        """The VEVENT bytes kept for ``record`` in ``context`` built from ``refs``, or None."""
        found = self._memo.get((id(record), context))
        if found is None:
            return None
        kept, kept_refs, packed, dictionary = found
        if kept is not record or len(kept_refs) != len(refs) or not all(a is b for a, b in zip(kept_refs, refs)):
            return None
        inflate = zlib.decompressobj(zdict=dictionary)
        return inflate.decompress(packed) + inflate.flush()

    def put(self, record, context, refs: tuple, vevent: bytes) -> None:
        """Keep ``vevent``, built for ``record`` in ``context`` from ``refs`` (the record is held,
        so its id names it while the entry lives)."""
        with self._lock:
            if self._dictionary is None:
                self._dictionary = vevent[:DICTIONARY_BYTES]
            dictionary = self._dictionary
        deflate = zlib.compressobj(6, zdict=dictionary)
        packed = deflate.compress(vevent) + deflate.flush()
        self._memo.put((id(record), context), (record, refs, packed, dictionary), len(packed))

    @property
    def weight(self) -> int:
        """Bytes counted for the entries kept (their compressed sizes and a fixed cost each)."""
        return self._memo.weight

    def __len__(self) -> int:
        return len(self._memo)


VEVENTS = VeventCache()   # one per process: feeds of every app and snapshot share it

"""The VEVENTs already built, kept compressed in temporary files, bounded in bytes and entries.

A VEVENT depends on its record (immutable for its blob, so shared by the snapshots that
follow a write), the URLs and site zone it is written with, and the venues, organizers and
categories the caller may see embedded: an entry is reused while those are the same objects.
Reading one back is a fraction of the time of writing it, so a warm every-event feed takes a
fraction of a cold one's time (docs/performance.md has the figures).

Where the bytes live is what this module is about. Kept as Python objects (a bytes object, its
key and value tuples and an ordered-dict node per VEVENT) the cache of one every-event feed of a
big calendar held a large share of a worker's resident memory. So:
- VEVENTs are deflated a *block* at a time (``put_many``: a feed's VEVENTs in turn, up to
  ``BLOCK_BYTES``; ``put``: one alone), against a preset dictionary (the first VEVENT the cache
  kept, which shares the site's URLs, property names and zones with the others), and written
  to an unlinked temporary file (in ``TMPDIR``), a *segment*; the system's page cache holds
  it, not the worker's heap. Deflating a VEVENT alone costs about what a block of a dozen
  does (the stream's own cost), so a first feed keeps its VEVENTs for a fraction of the time;
  reading one inflates its block, which each thread keeps until it reads another block (a
  feed reads a block's VEVENTs in turn);
- in memory an entry is one ``bytes`` key (the ids of what it was built from) and one ``int``
  (segment, block offset and length, the VEVENT's place in the block), a small fixed cost of heap;
- the oldest segment is dropped whole once the segments pass ``budget`` bytes or the entries
  ``size`` (a segment keeps alive the records and referenced objects its keys name by id, so no
  id is reused while a key names it); once more than half the budget is used, an entry read
  from the oldest quarter is copied forward (kept again, alone), so what feeds keep reading
  outlives the bulk that one large feed wrote once.
Reading and writing happen under one lock (a few microseconds each), so a segment is never
closed under a reader. A child process after ``fork`` starts empty: the files would be shared.
When a temporary file cannot be made, written or read back whole, the cache empties, the problem
is logged, and nothing is kept for ``RETRY_SECONDS`` (then it tries again); feeds are unaffected
but for the time their VEVENTs take to build.
"""
from __future__ import annotations

import logging
import os
import struct
import tempfile
import threading
import time
import weakref
import zlib

log = logging.getLogger(__name__)

VEVENT_BYTES = 64 << 20      # compressed bytes on disk: room for the every-event feed of a big calendar
VEVENT_ENTRIES = 400_000     # keys in memory (a key and an int each)
SEGMENT_BYTES = 4 << 20      # one temporary file's share of the budget
CONTEXTS = 64                # (urls, zone) pairs told apart at once; an old one's entries age out
DICTIONARY_BYTES = 32_768    # zlib's window: a longer preset dictionary is not used
BLOCK_BYTES = 16_384         # VEVENTs deflated together (at most a segment's size): reading one inflates them all
_MASK = 0xFFFF_FFFF
RETRY_SECONDS = 300          # after a failed file, VEVENTs are not kept for this long
SPOOL_MEMORY = 4 << 20       # a feed's VEVENTs held in memory before the rest goes to a temporary file

_CACHES: weakref.WeakSet = weakref.WeakSet()
_PACKERS: dict[int, struct.Struct] = {}   # number of refs -> the key's layout


class _Segment:
    """One temporary file of compressed VEVENTs, the keys naming them, and what those keys name
    by id (held, so that no id is reused while a key names it)."""
    __slots__ = ("number", "fd", "size", "keys", "records", "refs")

    def __init__(self, number: int, fd: int):
        self.number = number
        self.fd = fd
        self.size = 0
        self.keys: list[bytes] = []
        self.records: list = []
        self.refs: dict[int, object] = {}   # id -> a referenced record (a few thousand at most)


class VeventCache:
    """VEVENT bytes by (record, context, refs): the context is compared by value, the record and
    the referenced records by identity."""

    def __init__(self, budget: int = VEVENT_BYTES, size: int = VEVENT_ENTRIES, segment_bytes: int = SEGMENT_BYTES):
        self.budget = budget
        self.size = size
        self.segment_bytes = max(1, min(segment_bytes, budget // 4))
        self.weight = 0                       # compressed bytes in the live segments
        self._index: dict[bytes, int] = {}    # key -> segment number << 64 | offset << 32 | length
        self._segments: dict[int, _Segment] = {}   # oldest first
        self._numbers = 0                     # segments made (the last one's number)
        self._contexts: dict = {}             # context -> its number (never reused)
        self._context_numbers = 0
        self._last_context: tuple | None = None   # (context, its number), the one asked last
        self._dictionary: bytes | None = None
        self._resume_at = 0.0                 # monotonic time before which nothing is kept (a failure)
        self._last_block = threading.local()  # per thread: ((segment, offset), the block inflated)
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get(self, record, context, refs: tuple) -> bytes | None:
        """The VEVENT bytes kept for ``record`` in ``context`` built from ``refs``, or None."""
        with self._lock:
            key = self._key(record, context, refs, add=False)
            where = self._index.get(key) if key is not None else None
            if where is None:
                return None
            number, offset, length = where >> 128, (where >> 96) & _MASK, (where >> 64) & _MASK
            start, size = (where >> 32) & _MASK, where & _MASK
            # read again, and soon dropped: copied forward (below)
            forward = self.weight > self.budget // 2 and number <= self._numbers - len(self._segments) * 3 // 4
            last = getattr(self._last_block, "block", None)
            if last is not None and last[0] == (number, offset):
                raw = last[1]   # a feed reads the VEVENTs of a block in turn
            else:
                raw = None
                try:
                    packed = os.pread(self._segments[number].fd, length, offset)
                except OSError as error:
                    self._fail("read", error)
                    return None
                if len(packed) != length:
                    self._fail("read", EOFError(f"{len(packed)} of {length} bytes"))
                    return None
                dictionary = self._dictionary
        if raw is None:
            try:
                inflate = zlib.decompressobj(zdict=dictionary)
                raw = inflate.decompress(packed) + inflate.flush()
                if not inflate.eof:
                    raise zlib.error("the stream ends early")
            except zlib.error as error:
                with self._lock:
                    self._fail("inflate what was read from", error)
                return None
            self._last_block.block = ((number, offset), raw)
        vevent = raw[start:start + size]
        if forward:
            self.put(record, context, refs, vevent)
        return vevent

    def put(self, record, context, refs: tuple, vevent: bytes) -> None:
        """Keep ``vevent``, built for ``record`` in ``context`` from ``refs``."""
        self.put_many(context, [(record, refs, vevent)])

    def block_bytes(self) -> int:
        """How many bytes of VEVENTs ``put_many`` is best given at once."""
        return min(BLOCK_BYTES, self.segment_bytes)

    def put_many(self, context, entries: list[tuple]) -> None:
        """Keep each (record, refs, vevent) of ``entries``, built in ``context``: compressed as one
        *block* (a VEVENT alone is small, and most of the time of deflating it is the stream's
        own cost); a VEVENT read from it later inflates the block, which the next read of the
        same block (a feed reads them in turn) takes from memory."""
        if not entries:
            return
        with self._lock:
            if self._resume_at and time.monotonic() < self._resume_at:
                return
            if self._dictionary is None:
                self._dictionary = entries[0][2][:DICTIONARY_BYTES]
            dictionary = self._dictionary
        deflate = zlib.compressobj(6, zdict=dictionary)
        packed = deflate.compress(b"".join([vevent for _, _, vevent in entries])) + deflate.flush()
        with self._lock:
            if dictionary is self._dictionary:   # not emptied (a fork) meanwhile
                self._append([(self._key(record, context, refs, add=True), record, refs, len(vevent))
                              for record, refs, vevent in entries], packed)

    def __len__(self) -> int:
        return len(self._index)

    # ------------------------------------------------------------------ under the lock

    def _key(self, record, context, refs: tuple, add: bool) -> bytes | None:
        last = self._last_context   # a feed asks with equal contexts (a tuple of the same objects: compared fast)
        if last is not None and last[0] == context:
            number = last[1]
        else:
            number = self._contexts.get(context)
            if number is None:
                if not add:
                    return None
                self._context_numbers += 1
                number = self._contexts[context] = self._context_numbers
                if len(self._contexts) > CONTEXTS:
                    self._contexts.pop(next(iter(self._contexts)))
            self._last_context = (context, number)
        packer = _PACKERS.get(len(refs)) or _PACKERS.setdefault(len(refs), struct.Struct(f"<{3 + len(refs)}Q"))
        return packer.pack(number, len(refs), id(record), *map(id, refs))

    def _append(self, entries: list[tuple], packed: bytes) -> None:
        """Write a block (``packed``) holding the VEVENTs of ``entries`` (key, record, refs, size) in turn."""
        segment = self._current(len(packed))
        if segment is None:
            return
        try:
            written = os.pwrite(segment.fd, packed, segment.size)
        except OSError as error:
            self._fail("write", error)
            return
        if written != len(packed):
            self._fail("write", OSError(f"{written} of {len(packed)} bytes written"))
            return
        block, start = segment.number << 128 | segment.size << 96 | len(packed) << 64, 0
        for key, record, refs, size in entries:
            self._index[key] = block | start << 32 | size
            start += size
            segment.keys.append(key)
            segment.records.append(record)
            for ref in refs:
                segment.refs[id(ref)] = ref
        segment.size += len(packed)
        self.weight += len(packed)
        while len(self._segments) > 1 and (self.weight > self.budget or len(self._index) > self.size):
            self._drop(next(iter(self._segments.values())))

    def _current(self, length: int) -> _Segment | None:
        """The segment the next ``length`` bytes go to (a new one when the last is full)."""
        if self._segments:
            last = next(reversed(self._segments.values()))
            if last.size == 0 or last.size + length <= self.segment_bytes:
                return last
        try:
            handle = tempfile.TemporaryFile(prefix="calendar-vevents-")
        except OSError as error:
            self._fail("create", error)
            return None
        fd = os.dup(handle.fileno())
        handle.close()
        self._numbers += 1
        segment = self._segments[self._numbers] = _Segment(self._numbers, fd)
        return segment

    def _drop(self, segment: _Segment) -> None:
        for key in segment.keys:
            where = self._index.get(key)
            if where is not None and where >> 128 == segment.number:
                del self._index[key]
        del self._segments[segment.number]
        self.weight -= segment.size
        os.close(segment.fd)

    def _fail(self, what: str, error: Exception) -> None:
        """Empty the cache and keep nothing for ``RETRY_SECONDS`` (feeds still work, each VEVENT
        built), logged: at most once per that time."""
        log.error("iCalendar: the VEVENT cache could not %s its temporary file (%s); VEVENTs are "
                  "built for every feed for the next %d s", what, error, RETRY_SECONDS)
        self._resume_at = time.monotonic() + RETRY_SECONDS
        self._forget()

    def _forget(self) -> None:
        for segment in self._segments.values():
            os.close(segment.fd)
        self._segments.clear()
        self._index.clear()
        self._contexts.clear()
        self._last_context = None
        self._dictionary = None
        self._last_block = threading.local()
        self.weight = 0

    def _after_fork(self) -> None:
        """In a child: the segments' files are the parent's too; start empty."""
        self._lock = threading.Lock()
        self._forget()
        self._resume_at = 0.0


def _empty_after_fork() -> None:
    for cache in list(_CACHES):
        cache._after_fork()


os.register_at_fork(after_in_child=_empty_after_fork)


class Spool:
    """A feed's VEVENTs while it is written (its VTIMEZONEs, found from every event, come first):
    the first ``memory`` bytes in memory, the rest in an unlinked temporary file (in ``TMPDIR``),
    so a large feed costs the worker's heap a bounded amount. When no file can be made or written,
    the rest stays in memory (logged). Read back once, in order, with ``pieces``."""

    def __init__(self, memory: int | None = None):
        self.memory = SPOOL_MEMORY if memory is None else memory
        self._before: list[bytes] = []   # held before the file
        self._after: list[bytes] = []    # held after the file failed
        self._held = 0
        self._file = None
        self._failed = False

    def write(self, data: bytes) -> None:
        if self._failed:
            self._after.append(data)
            return
        if self._file is None:
            if self._held + len(data) <= self.memory:
                self._before.append(data)
                self._held += len(data)
                return
            try:
                self._file = tempfile.TemporaryFile(prefix="calendar-feed-")
            except OSError as error:
                self._fail(error, data)
                return
        try:
            self._file.write(data)
        except OSError as error:
            self._fail(error, data)

    def _fail(self, error: OSError, data: bytes) -> None:
        log.error("iCalendar: a feed's temporary file failed (%s); the rest of the feed is held in memory", error)
        self._failed = True
        self._after.append(data)

    def pieces(self, size: int):
        """The bytes written, in order, as pieces of about ``size`` bytes."""
        yield from _joined(self._before, size)
        self._before = []
        if self._file is not None:
            try:
                self._file.flush()
                self._file.seek(0)
                while piece := self._file.read(size):
                    yield piece
            except OSError as error:   # the part written is lost: the calendar would be cut
                log.error("iCalendar: a feed's temporary file could not be read back (%s)", error)
                raise
        yield from _joined(self._after, size)
        self._after = []

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._before, self._after = [], []


def _joined(parts: list[bytes], size: int):
    piece, held = [], 0
    for part in parts:
        piece.append(part)
        held += len(part)
        if held >= size:
            yield b"".join(piece)
            piece, held = [], 0
    if piece:
        yield b"".join(piece)

VEVENTS = VeventCache()   # one per process: feeds of every app and snapshot share it

"""Term sets kept in a rebuilt segment: each frequent term's documents as a roaring bitmap.

Decoding a term's postings from Whoosh's blocks makes a Python integer per posting: a category
of a million-event calendar holds a few hundred thousand documents, tens of milliseconds for the
first list that names it. A full rebuild (``writer.BulkSegmentWriter``) has every term's
document numbers in hand when it writes a segment, so it also writes, for each term with at least
``MIN_POSTINGS`` postings, the segment's document numbers of that term as a serialized roaring
bitmap, in a file of the segment (``<segment id>.sets``: Whoosh puts it in the segment's compound
file with its other parts, and deletes it with the segment); a reader deserializes one in C
(``SegmentSets``). Only Whoosh's public segment file calls are used.

The file starts with ``MAGIC`` and ``VERSION``; a file of another version, or one that does not
read, is ignored: the postings are decoded from Whoosh's blocks, the same documents. Segments
written by Whoosh's own writer (the syncs after writes) have no such file: they are small.
"""
from __future__ import annotations

import contextlib
import logging
import pickle
import struct
import threading

from pyroaring import BitMap

log = logging.getLogger(__name__)

MAGIC = b"calendar-term-sets\n"
VERSION = 1
EXTENSION = ".sets"
# Terms with fewer postings are decoded from Whoosh's blocks (one or two blocks: cheap) and not
# written: most of a calendar's terms (ids, paths, rare words) have a handful.
MIN_POSTINGS = 2048
_LENGTH = struct.Struct("!Q")


def write(segment, storage, postings: dict) -> None:
    """Write the term sets of ``segment`` (being written into ``storage``; ``postings``: field ->
    {term: [docnum or (docnum, count)]} in docnum order, None for a field not indexed)."""
    table: dict[tuple[str, str], tuple[int, int]] = {}
    chunks: list[bytes] = []
    offset = 0
    for field, terms in postings.items():
        for term, entries in (terms or {}).items():
            if len(entries) < MIN_POSTINGS:
                continue
            try:   # docnums (a list read in C), or (docnum, count) among them for a repeated word
                found = BitMap(entries)
            except TypeError:
                found = BitMap(e if type(e) is int else e[0] for e in entries)
            data = found.serialize()
            table[(field, term)] = (offset, len(data))
            chunks.append(data)
            offset += len(data)
    if not table:
        return
    header = pickle.dumps((VERSION, table), protocol=pickle.HIGHEST_PROTOCOL)
    out = segment.create_file(storage, EXTENSION)
    try:
        out.write(MAGIC + _LENGTH.pack(len(header)) + header)
        for chunk in chunks:
            out.write(chunk)
    finally:
        out.close()


class SegmentSets:
    """The term sets of one segment, read from its file (each set read when asked)."""

    def __init__(self, table: dict, handle, start: int):
        self._table = table
        self._handle = handle
        self._start = start
        self._lock = threading.Lock()   # one file position shared by the requests' threads

    @classmethod
    def open(cls, leaf) -> SegmentSets | None:
        """The term sets of the segment of ``leaf`` (a segment's reader), or None when it has
        none (or none this code reads)."""
        try:
            handle = leaf.segment().open_file(leaf.storage(), EXTENSION)
        except Exception:   # noqa: BLE001 - no such file (a segment Whoosh's own writer wrote): whatever its storage raises
            return None
        try:
            head = handle.read(len(MAGIC) + _LENGTH.size)
            if head[:len(MAGIC)] != MAGIC:
                raise ValueError("not a term sets file")
            (length,) = _LENGTH.unpack(head[len(MAGIC):])
            version, table = pickle.loads(handle.read(length))
            if version != VERSION:
                handle.close()
                return None
            if type(table) is not dict:
                raise ValueError("not the table this code writes")
            return cls(table, handle, len(head) + length)
        except Exception as exc:   # noqa: BLE001 - derived data: the postings give the same documents
            log.warning("ignoring the term sets of segment %s (%s)", leaf.segment().segment_id(), exc)
            handle.close()
            return None

    def get(self, field: str, term: str) -> BitMap | None:
        """The segment's document numbers of ``term`` in ``field``; None when not kept here."""
        found = self._table.get((field, term))
        if found is None:
            return None
        offset, length = found
        try:
            with self._lock:
                self._handle.seek(self._start + offset)
                data = self._handle.read(length)
        except (OSError, ValueError):   # closed with its base: the caller's reader says so (ReaderClosed)
            return None
        if len(data) != length:   # closed (a closed part reads nothing) or cut short: the postings answer
            return None
        try:
            return BitMap.deserialize(data)
        except (ValueError, IndexError) as exc:
            log.warning("a term set of %s in %s does not read (%s): decoding its postings", term, field, exc)
            return None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._handle.close()

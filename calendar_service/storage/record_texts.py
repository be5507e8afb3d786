"""Texts made from records once, kept beside the records cache (``records.cache.texts``).

A caller that makes the same text of a record for every request (the HTTP layer: an event's own
JSON, ``http.own_text``) hands the catalog a *maker*; whenever the catalog writes the records
cache it also writes each record's text, in the cache's row order, to this file. A start maps
the file rather than reading it: a text costs memory only once a request asks for it, the pages
are shared by every process of the service, and a start at 1,000,000 events reads nothing more.

A text is served only for the record it was made from: the file names the cache it was written
with (a random token both carry), each row keeps a checksum of the record's packed bytes, and
the maker's ``context`` (its code and settings) must be the one that wrote the file. Anything
else (another cache, a changed record, a damaged or tampered file) gives no text, and the
caller makes it as it would without the file. Derived data: safe to delete.
"""
from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import sys
import threading
import zlib
from array import array
from base64 import b64decode, b64encode
from pathlib import Path

log = logging.getLogger(__name__)

MAGIC = b"calendar-record-texts 1\n"
HEADER_MAX = 1 << 20            # a header longer than this is not one this module wrote
MAX_TEXT_BYTES = 4 << 20        # a text inflating beyond this is not one this module wrote
DICTIONARY_SAMPLE = 60          # texts sampled for the preset dictionary
DICTIONARY_BYTES = 8192
NO_TEXT = b""                   # a row without a text (the maker made none, or it did not hold)
RAW_DEFLATE = -15               # deflate without zlib's header and checksum: ~40 % quicker to inflate a text


def texts_path(cache_path: Path) -> Path:
    return cache_path.with_name(cache_path.name + ".texts")


class RecordTexts:
    """One texts file, mapped: the text of each row of the records cache it was written with."""

    def __init__(self, token: str, context: str, dictionary: bytes, ends, sums, data: memoryview, keep):
        self.token, self.context, self.dictionary = token, context, dictionary
        self._ends, self._sums, self._data = ends, sums, data
        self._keep = keep   # the mapping the views point into
        self._warned = False

    @classmethod
    def open(cls, path: Path, token) -> "RecordTexts | None":
        """The texts file at ``path`` when it was written with the cache of ``token``; else None
        (none there, another cache's, or not one this module writes: logged)."""
        if not isinstance(token, str):
            return None
        try:
            with open(path, "rb") as handle:
                if handle.read(len(MAGIC)) != MAGIC:
                    raise ValueError("not a texts file")
                length = int.from_bytes(handle.read(8), "little")
                if not 0 < length <= HEADER_MAX:
                    raise ValueError("a header of no length this module writes")
                header = json.loads(handle.read(length))
                if not isinstance(header, dict) or header.get("token") != token:
                    return None   # another cache's texts: the next cache write replaces them
                count, context = header.get("count"), header.get("context")
                if type(count) is not int or count < 0 or type(context) is not str or header.get("order") != sys.byteorder:
                    raise ValueError("a header this module does not write")
                dictionary = b64decode(header.get("dictionary", ""), validate=True)
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            view = memoryview(mapped)
            start = _aligned(len(MAGIC) + 8 + length)
            ends = view[start:start + 8 * count].cast("Q")
            sums = view[start + 8 * count:start + 12 * count].cast("I")
            data = view[start + 12 * count:]
            if len(ends) != count or len(sums) != count or (count and ends[count - 1] != len(data)):
                raise ValueError("rows that do not end where the file does")
            return cls(token, context, dictionary, ends, sums, data, mapped)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring the record texts %s (%s)", path, exc)
            return None

    def __len__(self) -> int:
        return len(self._ends)

    def packed_at(self, index: int, checksum: int) -> bytes:
        """The packed text of row ``index`` when it was made from a record whose packed bytes
        have ``checksum`` (``NO_TEXT`` otherwise)."""
        ends = self._ends
        if not 0 <= index < len(ends) or self._sums[index] != checksum:
            return NO_TEXT
        start, end = ends[index - 1] if index else 0, ends[index]
        if not start < end <= len(self._data):
            return NO_TEXT
        return bytes(self._data[start:end])

    def text_at(self, index: int, checksum: int) -> str | None:
        """The text of row ``index`` (see ``packed_at``), or None."""
        packed = self.packed_at(index, checksum)
        if not packed:
            return None
        try:
            inflate = zlib.decompressobj(RAW_DEFLATE, zdict=self.dictionary)
            raw = inflate.decompress(packed, MAX_TEXT_BYTES)
            if inflate.unconsumed_tail or not inflate.eof:
                raise ValueError("not one whole text")
            return raw.decode()
        except (zlib.error, ValueError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("a record text of row %d does not read (%s): texts that do not read are made again", index, exc)
            return None


def checksum(packed: bytes) -> int:
    """What a row keeps of the packed record it was made from."""
    return zlib.crc32(packed)


def _aligned(offset: int) -> int:
    return (offset + 7) // 8 * 8


class TextsWriter:
    """Writes the texts file of one records cache: ``add`` each row in order, then ``finish``."""

    def __init__(self, path: Path, token: str, context: str, dictionary: bytes):
        self.path, self.token, self.context, self.dictionary = path, token, context, dictionary
        self._ends, self._sums, self._pieces, self._total = array("Q"), array("I"), [], 0

    @staticmethod
    def choose_dictionary(texts) -> bytes:
        return "".join(texts).encode()[-DICTIONARY_BYTES:]

    def pack(self, text: str) -> bytes:
        deflate = zlib.compressobj(6, zlib.DEFLATED, RAW_DEFLATE, zdict=self.dictionary)
        return deflate.compress(text.encode()) + deflate.flush()

    def add(self, packed_text: bytes, record_sum: int) -> None:
        """The next row: its packed text (``NO_TEXT`` for none) and its record's checksum."""
        self._pieces.append(packed_text)
        self._total += len(packed_text)
        self._ends.append(self._total)
        self._sums.append(record_sum if packed_text else 0)

    def finish(self) -> None:
        """Write the file (a temporary file of this writer's, then renamed over the old one)."""
        header = json.dumps({"token": self.token, "context": self.context, "count": len(self._ends),
                             "order": sys.byteorder, "dictionary": b64encode(self.dictionary).decode()}).encode()
        start = _aligned(len(MAGIC) + 8 + len(header))
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
                handle.write(b"\0" * (start - len(MAGIC) - 8 - len(header)))
                handle.write(self._ends.tobytes())
                handle.write(self._sums.tobytes())
                for piece in self._pieces:
                    handle.write(piece)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

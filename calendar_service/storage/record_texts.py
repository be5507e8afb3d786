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

MAGIC = b"calendar-record-texts 2\n"
HEADER_MAX = 1 << 20            # a header longer than this is not one this module wrote
MAX_TEXT_BYTES = 4 << 20        # a text inflating beyond this is not one this module wrote
DICTIONARY_SAMPLE = 60          # texts sampled for the preset dictionary
DICTIONARY_BYTES = 8192
RAW_DEFLATE = -15               # deflate without zlib's header and checksum: ~40 % quicker to inflate a text


def texts_path(cache_path: Path) -> Path:
    return cache_path.with_name(cache_path.name + ".texts")


class RecordTexts:
    """One texts file, mapped: the text of each row of the records cache it was written with.

    The file: ``MAGIC``, the packed texts one after another, the end of each row's text in them
    (8 bytes a row, from 8 bytes on), the checksum of each row's record and of its text (4 bytes
    each a row: texts are raw deflate, which checks nothing itself), a JSON
    header (the cache's token, the context, the row count, the byte order, the dictionary, the
    texts' length) and the header's length (8 bytes). Written in that order, a text at a time:
    the writer holds no text it has written."""

    def __init__(self, token: str, context: str, dictionary: bytes, ends, sums, text_sums, data: memoryview, keep):
        self.token, self.context, self.dictionary = token, context, dictionary
        self._ends, self._sums, self._text_sums, self._data = ends, sums, text_sums, data
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
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            view = memoryview(mapped)
            total = len(view)
            if total < len(MAGIC) + 8 or view[:len(MAGIC)] != MAGIC:
                raise ValueError("not a texts file")
            length = int.from_bytes(view[total - 8:], "little")
            if not 0 < length <= min(HEADER_MAX, total - len(MAGIC) - 8):
                raise ValueError("a header of no length this module writes")
            header = json.loads(bytes(view[total - 8 - length:total - 8]))
            if not isinstance(header, dict) or header.get("token") != token:
                return None   # another cache's texts: the next cache write replaces them
            count, context, size = header.get("count"), header.get("context"), header.get("data_bytes")
            if not (type(count) is int and type(size) is int and 0 <= count and 0 <= size
                    and type(context) is str and header.get("order") == sys.byteorder):
                raise ValueError("a header this module does not write")
            dictionary = b64decode(header.get("dictionary", ""), validate=True)
            start = _aligned(len(MAGIC) + size)
            if start + 16 * count != total - 8 - length:
                raise ValueError("rows that do not end where the file says")
            ends = view[start:start + 8 * count].cast("Q")
            sums = view[start + 8 * count:start + 12 * count].cast("I")
            text_sums = view[start + 12 * count:start + 16 * count].cast("I")
            data = view[len(MAGIC):len(MAGIC) + size]
            if count and ends[count - 1] != size:
                raise ValueError("texts that do not end where the file says")
            return cls(token, context, dictionary, ends, sums, text_sums, data, mapped)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, RecursionError) as exc:   # (a header nested too deep)
            log.warning("ignoring the record texts %s (%s)", path, exc)
            return None

    def __len__(self) -> int:
        return len(self._ends)

    def forget_pages(self) -> None:
        """Let go of the file's pages this process has read (a cache write copies every text
        still valid: ~0.3 GB at 1,000,000 events, which then counted in this process's memory
        until the kernel needed them). They stay in the page cache; a text read later is mapped
        again."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self._keep.madvise(mmap.MADV_DONTNEED)

    def packed_at(self, index: int, record_sum: int) -> tuple[bytes, int] | None:
        """(the packed text, its text's checksum) of row ``index`` when it was made from a
        record whose packed bytes have ``record_sum``, else None."""
        ends = self._ends
        if not 0 <= index < len(ends) or self._sums[index] != record_sum:
            return None
        start, end = ends[index - 1] if index else 0, ends[index]
        if not start < end <= len(self._data):
            return None
        return bytes(self._data[start:end]), self._text_sums[index]

    def text_at(self, index: int, record_sum: int) -> str | None:
        """The text of row ``index`` (see ``packed_at``), or None."""
        found = self.packed_at(index, record_sum)
        if found is None:
            return None
        try:
            inflate = zlib.decompressobj(RAW_DEFLATE, zdict=self.dictionary)
            raw = inflate.decompress(found[0], MAX_TEXT_BYTES)
            if inflate.unconsumed_tail or not inflate.eof or zlib.crc32(raw) != found[1]:
                raise ValueError("not the whole text the row was written with")
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
    """Writes the texts file of one records cache: ``add`` each row in order, then ``finish``;
    used as a context manager, a write that does not finish leaves nothing behind."""

    def __init__(self, path: Path, token: str, context: str, dictionary: bytes):
        self.path, self.token, self.context, self.dictionary = path, token, context, dictionary
        self._ends, self._sums, self._text_sums, self._total = array("Q"), array("I"), array("I"), 0
        self._tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        self._handle = None

    def __enter__(self) -> "TextsWriter":
        self._handle = open(self._tmp, "wb")
        self._handle.write(MAGIC)
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:   # not finished
            self._handle.close()
            self._handle = None
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)

    @staticmethod
    def choose_dictionary(texts) -> bytes:
        return "".join(texts).encode()[-DICTIONARY_BYTES:]

    def pack(self, text: str) -> tuple[bytes, int]:
        """(``text`` packed, its checksum), as ``add`` takes it."""
        raw = text.encode()
        deflate = zlib.compressobj(6, zlib.DEFLATED, RAW_DEFLATE, zdict=self.dictionary)
        return deflate.compress(raw) + deflate.flush(), zlib.crc32(raw)

    def add(self, packed: tuple[bytes, int] | None, record_sum: int) -> None:
        """The next row: its packed text with the text's checksum (``pack``, or a row of
        ``RecordTexts.packed_at``; None: no text) and its record's checksum."""
        data, text_sum = packed if packed is not None else (b"", 0)
        self._handle.write(data)
        self._total += len(data)
        self._ends.append(self._total)
        self._sums.append(record_sum if data else 0)
        self._text_sums.append(text_sum)

    def finish(self) -> None:
        """Write the rows' ends and checksums and the header, and put the file in place."""
        header = json.dumps({"token": self.token, "context": self.context, "count": len(self._ends),
                             "order": sys.byteorder, "data_bytes": self._total,
                             "dictionary": b64encode(self.dictionary).decode()}).encode()
        handle = self._handle
        handle.write(b"\0" * (_aligned(len(MAGIC) + self._total) - len(MAGIC) - self._total))
        handle.write(self._ends.tobytes())
        handle.write(self._sums.tobytes())
        handle.write(self._text_sums.tobytes())
        handle.write(header + len(header).to_bytes(8, "little"))
        handle.close()
        self._handle = None
        try:
            os.replace(self._tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            raise

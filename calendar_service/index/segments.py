"""Whoosh's segment files read in place, without a private copy of each.

Whoosh maps a compound segment file (``*.seg``) into memory and hands each part of it (terms,
postings, columns) to a ``BufferFile``, which reads positioned values from the mapping but also
copies the whole part into a ``BytesIO`` for its sequential reads: the terms and postings of a
10,000-event index cost 4 MB of copies in every process serving it (about 40 MB at 100,000),
on top of the mapped pages the page cache shares between processes. ``SegmentPart`` gives
``BufferFile`` the same sequential reads over the mapping itself.

Whoosh also names new segments and its temporary files with the process-wide ``random``
module: whatever seeds it (a library, a test framework seeding every example alike) makes the
next names repeat, and a repeated segment name in one index folder writes over a live
segment's files. ``file_name`` makes those names from the operating system's randomness.

``install()`` puts both in place (``whoosh.filedb.compound`` builds its buffer files through
that name; the codec, the file storage, the compound writer and the posting pool take
``random_name`` from their own module namespace), the only changes to Whoosh a serving process
makes; the search index calls it when it is opened, never an import: a program that merely
imports the service keeps Whoosh as it is.
"""
from __future__ import annotations

import os
import secrets

from whoosh import writing
from whoosh.codec import base as codec_base
from whoosh.filedb import compound, filestore, structfile

PEEK_BYTES = 256   # what ``peek`` hands over at most (the unpickler asks for 128 KB; a block header is ~100 bytes)


class MappedReader:
    """A read-only file over a buffer (``read``, ``seek``, ``tell``), without copying it."""

    __slots__ = ("_buf", "_pos")

    def __init__(self, buf):
        self._buf = buf
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        start, length = self._pos, len(self._buf)
        end = length if size is None or size < 0 else min(start + size, length)
        if end <= start:
            return b""
        self._pos = end
        return bytes(self._buf[start:end])

    def peek(self, size: int = 0) -> bytes:
        """The bytes from the position on, without moving it (at most ``PEEK_BYTES``; at least one
        unless at the end). With ``peek`` the unpickler reads a posting block's header ahead in one
        call and then takes what it used with one ``read``, instead of one ``read`` per value (about
        20 per block): a term's postings read in about 30 % less time."""
        start = self._pos
        return bytes(self._buf[start:start + (min(size, PEEK_BYTES) if size > 0 else PEEK_BYTES)])

    def readline(self, size: int | None = -1) -> bytes:
        rest = bytes(self._buf[self._pos:]) if size is None or size < 0 else bytes(self._buf[self._pos:self._pos + size])
        cut = rest.find(b"\n")
        line = rest if cut < 0 else rest[:cut + 1]
        self._pos += len(line)
        return line

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            pos += self._pos
        elif whence == os.SEEK_END:
            pos += len(self._buf)
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._buf = b""   # the mapping is released when the segment closes


class SegmentPart(structfile.BufferFile):
    """``BufferFile`` reading through ``MappedReader`` instead of a ``BytesIO`` copy."""

    def __init__(self, buf, name=None, onclose=None):
        self._buf = buf
        self._name = name
        self.file = MappedReader(buf)
        self.onclose = onclose
        self.is_real = False
        self.is_closed = False


NAME_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"   # whoosh's own alphabet for file names
# the modules that call ``whoosh.util.random_name`` through a name of their own
NAMING_MODULES = (codec_base, filestore, compound, writing)


def file_name(size: int = 28) -> str:
    """A segment's or temporary file's random name part, from ``secrets``: a reseeded ``random``
    never makes it repeat (``whoosh.util.random_name``'s signature)."""
    return "".join(secrets.choice(NAME_CHARS) for _ in range(size))


def install() -> None:
    """Make Whoosh read compound segment parts through ``SegmentPart`` and name its files with
    ``file_name`` (idempotent)."""
    compound.BufferFile = SegmentPart
    for module in NAMING_MODULES:
        module.random_name = file_name

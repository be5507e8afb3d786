"""A base's columns kept in a file beside the Whoosh generation they were read from.

Reading a base (``view.BaseView``) from Whoosh at a million events takes ~2.7 s: every column
unpacked, the entries sorted into list order, the maps by id and by docnum and the duration
classes built. What it yields depends only on the Whoosh generation it was read from (its
folder and TOC generation: a commit to the index makes a new TOC generation, a rebuild a new
folder), so the process that reads a base writes what it built to ``FILE_NAME`` in that
generation's folder, and the next start reading the same generation loads it instead: arrays of
machine integers and serialized roaring bitmaps, read in a few tens of milliseconds.

Derived data only, never trusted blindly: the file is used when its magic, ``FORMAT``, byte
order, folder, TOC generation, commit, document counts, sizes and checksum all match what the
reader sees; anything else (absent, stale, truncated, corrupt) and the base is read from Whoosh
again, and the file written anew. The file is written to a temporary name and renamed over the
old one, so a reader sees a whole file or none. Whoosh ignores the file (it is neither a TOC
nor a segment name) and a rebuild removes it with its generation's folder.

Every sync of the index on disk makes a new generation, so once writes pause a serving process
starts ``keep_base`` as a child to read the new generation's base (which writes its file).

Only bases without series are written: a series' occurrences are expanded from the snapshot's
records up to the day's horizon, which the Whoosh generation does not fix.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import sys
import threading
import zlib
from array import array

from pyroaring import BitMap

log = logging.getLogger(__name__)

FILE_NAME = "calendar-base.view"
MAGIC = b"calendar-index-base\n"
# Raise when what the file holds or how a base is built from Whoosh changes: a file of another
# format is read from Whoosh again (and rewritten).
FORMAT = 1
_LENGTH = struct.Struct("<Q")
# the columns, in file order, with their array type codes ("bitmaps": serialized roaring bitmaps)
COLUMNS = (("starts", "q"), ("pubs", "q"), ("rids", "q"), ("ends", "q"), ("docnum_of", "I"), ("pos", "q"),
           ("slot_dense", "i"), ("slot_sparse_ids", "q"), ("slot_sparse_positions", "q"),
           ("blocks", "bitmaps"), ("class_min", "q"), ("class_max", "q"), ("class_members", "bitmaps"))


def path_of(folder: str) -> str:
    return os.path.join(folder, FILE_NAME)


def _key(folder: str, reader, commit: str) -> dict:
    """What a file must have been written for: the generation read and the commit it reflects."""
    return {"format": FORMAT, "byteorder": sys.byteorder, "folder": folder, "generation": reader.generation(),
            "commit": commit, "docs": reader.doc_count_all(), "live": reader.doc_count()}


def _bitmaps_bytes(bitmaps) -> bytes:
    parts = [b.serialize() for b in bitmaps]
    return array("q", map(len, parts)).tobytes() + b"".join(parts)


def _bitmaps_of(data: bytes, count: int) -> list[BitMap]:
    lengths = array("q")
    lengths.frombytes(data[:8 * count])
    out, at = [], 8 * count
    for length in lengths:
        if length < 0 or at + length > len(data):
            raise ValueError("a bitmap runs past its section")
        out.append(BitMap.deserialize(data[at:at + length]))
        at += length
    if at != len(data):
        raise ValueError("bytes after the last bitmap")
    return out


def columns_of(base) -> dict:
    """What the file keeps of a ``view.BaseView`` without series (``BaseView._restore`` makes it again)."""
    classes = list(zip(*base.classes)) or [(), (), ()]
    return {"starts": base.starts, "pubs": base.pubs, "rids": base.rids, "ends": base.ends,
            "docnum_of": base._docnum_of, "pos": base._pos, "blocks": base._blocks, "slot_dense": base.slot._dense,
            "slot_sparse_ids": list(base.slot._sparse), "slot_sparse_positions": list(base.slot._sparse.values()),
            "class_min": classes[0], "class_max": classes[1], "class_members": classes[2]}


def write(folder: str, reader, commit: str, columns: dict, block: int) -> bool:
    """Write the base ``columns`` (see ``COLUMNS``; bitmap columns as lists of BitMaps) read
    through ``reader`` from the Whoosh generation in ``folder``, for ``commit``. False (logged)
    when it cannot be written: the next start reads Whoosh, as without the file."""
    header = _key(folder, reader, commit)
    header["block"] = block
    header["size"] = len(columns["starts"])
    sections, crc = [], 0
    chunks = []
    for name, code in COLUMNS:
        value = columns[name]
        data = _bitmaps_bytes(value) if code == "bitmaps" else (
            value if isinstance(value, array) and value.typecode == code else array(code, value)).tobytes()
        sections.append([name, code, len(data), len(value)])
        crc = zlib.crc32(data, crc)
        chunks.append(data)
    header["sections"] = sections
    header["crc"] = crc
    text = json.dumps(header).encode()
    target = path_of(folder)
    tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as out:
            out.write(MAGIC + _LENGTH.pack(len(text)) + text)
            for data in chunks:
                out.write(data)
        os.replace(tmp, target)
        return True
    except OSError as exc:
        log.warning("the index base could not be kept in %s (%s); the next start reads it from the index", target, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False


def read(folder: str, reader, commit: str, block: int) -> dict | None:
    """The columns kept for the generation ``reader`` reads in ``folder`` at ``commit``, or None
    when there is no such file or it does not match or does not read (logged: read from Whoosh)."""
    target = path_of(folder)
    try:
        with open(target, "rb") as source:
            found = _read(source, _key(folder, reader, commit), block)
    except FileNotFoundError:
        return None
    except Exception as exc:   # a corrupt file of any kind: Whoosh is the source of truth
        log.warning("the kept index base %s is not used (%s); reading it from the index", target, exc)
        return None
    if found is None:
        log.info("the kept index base %s is of another index generation; reading it from the index", target)
    return found


def _read(source, key: dict, block: int) -> dict | None:
    if source.read(len(MAGIC)) != MAGIC:
        raise ValueError("not an index base file")
    length = _LENGTH.unpack(source.read(_LENGTH.size))[0]
    if length > 1 << 20:
        raise ValueError("a header of %d bytes" % length)
    header = json.loads(source.read(length))
    if any(header.get(k) != v for k, v in key.items()) or header.get("block") != block:
        return None   # stale: another generation, commit, format or layout
    names = [[name, code] for name, code in COLUMNS]
    if [s[:2] for s in header["sections"]] != names:
        raise ValueError("unexpected sections")
    size, crc, columns = header["size"], 0, {}
    for name, code, nbytes, count in header["sections"]:
        data = source.read(nbytes)
        if len(data) != nbytes:
            raise ValueError(f"truncated in {name}")
        crc = zlib.crc32(data, crc)
        if code == "bitmaps":
            columns[name] = data, count
            continue
        column = array(code)
        if nbytes % column.itemsize:
            raise ValueError(f"a partial value in {name}")
        column.frombytes(data)
        if len(column) != count:
            raise ValueError(f"{name} holds {len(column)} values, not {count}")
        columns[name] = column
    if source.read(1):
        raise ValueError("bytes after the last section")
    if crc != header["crc"]:
        raise ValueError("checksum mismatch")
    for name, (data, count) in [(n, columns[n]) for n, code in COLUMNS if code == "bitmaps"]:
        columns[name] = _bitmaps_of(data, count)
    # the shapes a base relies on (sizes between columns)
    if not all(len(columns[n]) == size for n in ("starts", "pubs", "rids", "ends", "docnum_of")):
        raise ValueError("columns of different sizes")
    if len(columns["pos"]) != key["docs"] or len(columns["blocks"]) != -(-size // block):
        raise ValueError("the docnum map or the blocks do not fit the size")
    if not len(columns["class_min"]) == len(columns["class_max"]) == len(columns["class_members"]):
        raise ValueError("duration classes of different sizes")
    if len(columns["slot_sparse_ids"]) != len(columns["slot_sparse_positions"]):
        raise ValueError("sparse slots of different sizes")
    columns["size"] = size
    return columns

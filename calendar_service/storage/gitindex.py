"""Recording written files in git's index without a git process, when the index is split.

After a write, the files it put in the working tree must be recorded in git's index, or
``git status`` in the server's checkout shows them changed (and a ``git commit`` there
would undo the write). ``git update-index`` does it, but it reads git's whole index, which
grows with the calendar, and that read is most of what the command costs. With ``core.splitIndex`` (which the service sets), ``.git/index`` is a small file
that only lists what changed since ``sharedindex.<id>`` was written; git reads it by
taking the shared entries and then adding each named entry of the small file, replacing an
entry of the same name. So recording a file is: add (or replace) its named entry in the
small file and rewrite that small file under git's ``index.lock``, as git itself does.

Only that case is handled here: files that exist, an index that is split, in format 2, 3
or 4, with no part this module does not understand. Anything else (a deleted path, an
unsplit or sparse index, a conflict entry, a small file grown past ``SPLIT_LIMIT`` entries)
is answered ``GIT`` and left to ``git update-index``. The format is git's
``Documentation/technical/index-format.txt``.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

RECORDED = "recorded"
GIT = "git"          # not handled here: let git do it
RESHARE = "reshare"  # the small file is big: let git write a new shared index

# entries of the small file past which git should fold them into a new shared index: each is
# read and written again by every record, and git writing a new shared index costs a read and
# write of the whole index, once per SPLIT_LIMIT changed files. git's own bound is 20% of the
# shared entries (splitIndex.maxPercentChange), far more in a big calendar.
SPLIT_LIMIT = 250

SIGNATURE = b"DIRC"
HEADER_SIZE = 12
TRAILER_SIZE = 20
FIXED_SIZE = 62           # stat data, mode, ids, size, object id and 16-bit flags of an entry
EXTENDED_FLAG = 0x4000
STAGE_MASK = 0x3000
NAME_MASK = 0x0FFF
# extensions this module keeps as they are, rewrites (TREE) or may drop (git rebuilds them);
# one whose name starts with a capital letter is optional by git's rules, others are not
KEEP = {b"link", b"REUC"}
TREE = b"TREE"


class Unsupported(Exception):
    """The index is in a shape this module does not rewrite."""


def record_files(git_dir: Path, root: Path, paths: list[str]) -> str:
    """Record the working-tree files ``paths`` (relative to ``root``) in git's index;
    returns RECORDED, GIT (git must do it) or RESHARE (git must, writing a new shared index).
    Never waits: a held ``index.lock`` is GIT (git's own attempt will report it)."""
    index = git_dir / "index"
    lock = git_dir / "index.lock"
    try:
        entries = [_entry_of(root, path) for path in paths]
    except Unsupported:
        return GIT
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError:
        return GIT
    renamed = False
    try:
        try:
            new = rewrite(index.read_bytes(), entries)
        except (Unsupported, OSError, ValueError, IndexError):  # ValueError, IndexError: a truncated file
            return GIT
        if new is None:
            return RESHARE
        with os.fdopen(fd, "wb") as handle:
            fd = -1
            handle.write(new)
        os.replace(lock, index)
        renamed = True
        return RECORDED
    finally:
        if fd >= 0:
            os.close(fd)
        if not renamed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)


def _entry_of(root: Path, path: str) -> tuple[bytes, bytes]:
    """(name, on-disk entry without its name) of the file ``path`` as it is now. Its size is
    stored as 0, as git does for an entry as new as the index ("racily clean"): git then
    compares the content, not the stat data, until it refreshes the entry itself."""
    name = path.encode("utf-8", "surrogateescape")
    if len(name) >= NAME_MASK:
        raise Unsupported("long name")
    file = root / path
    try:
        info = file.lstat()
        if not stat.S_ISREG(info.st_mode):
            raise Unsupported("not a regular file")
        content = file.read_bytes()
    except OSError:
        raise Unsupported("no such file") from None
    sha = hashlib.sha1(b"blob %d\0" % len(content) + content).digest()
    mode = 0o100755 if info.st_mode & 0o100 else 0o100644
    words = [info.st_ctime_ns // 10**9, info.st_ctime_ns % 10**9, info.st_mtime_ns // 10**9,
             info.st_mtime_ns % 10**9, info.st_dev, info.st_ino, mode, info.st_uid, info.st_gid, 0]
    fixed = b"".join((w & 0xFFFFFFFF).to_bytes(4, "big") for w in words) + sha + len(name).to_bytes(2, "big")
    return name, fixed


def rewrite(data: bytes, entries: list[tuple[bytes, bytes]]) -> bytes | None:
    """The small index file ``data`` with ``entries`` (name, entry without name) added or
    replaced; None when it would pass ``SPLIT_LIMIT``. Raises Unsupported."""
    if len(data) < HEADER_SIZE + TRAILER_SIZE or data[:4] != SIGNATURE:
        raise Unsupported("not an index")
    if hashlib.sha1(data[:-TRAILER_SIZE]).digest() != data[-TRAILER_SIZE:]:
        raise Unsupported("checksum")
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        raise Unsupported("version")
    stripped, named, offset = _read_entries(data, version, count)
    extensions = _read_extensions(data, offset)
    if b"link" not in extensions:
        raise Unsupported("not split")
    for name, fixed in entries:
        named[name] = fixed
    if len(stripped) + len(named) > SPLIT_LIMIT:
        return None
    out = [SIGNATURE, version.to_bytes(4, "big"), (len(stripped) + len(named)).to_bytes(4, "big")]
    out.extend(stripped)
    _write_named(out, named, version)
    for signature, body in extensions.items():
        if signature == TREE:
            body = invalidate_tree(body, [name for name, _ in entries])
        out.append(signature + len(body).to_bytes(4, "big") + body)
    body = b"".join(out)
    return body + hashlib.sha1(body).digest()


def _read_entries(data: bytes, version: int, count: int) -> tuple[list[bytes], dict[bytes, bytes], int]:
    """The entries of the small file: the raw bytes of those with a stripped name (replacements
    of shared entries, which git always writes first), the others by name; and where the
    extensions start."""
    stripped: list[bytes] = []
    named: dict[bytes, bytes] = {}
    offset, previous = HEADER_SIZE, b""
    for _ in range(count):
        flags = (data[offset + FIXED_SIZE - 2] << 8) | data[offset + FIXED_SIZE - 1]
        if version == 4 and not flags and not named and data[offset + FIXED_SIZE:offset + FIXED_SIZE + 2] == b"\0\0":
            # a replacement of a shared entry, as git writes them all first: nameless, nothing to decode
            stripped.append(data[offset:offset + FIXED_SIZE + 2])
            offset += FIXED_SIZE + 2
            continue
        fixed_size = FIXED_SIZE + (2 if flags & EXTENDED_FLAG else 0)
        if flags & EXTENDED_FLAG and version < 3:
            raise Unsupported("extended flags")
        if flags & STAGE_MASK:
            raise Unsupported("conflict entry")
        start = offset + fixed_size
        if version == 4:
            strip, start = decode_varint(data, start)
            end = data.index(b"\0", start)
            if strip > len(previous):
                raise Unsupported("name")
            name = previous[:len(previous) - strip] + data[start:end]
            size = end + 1 - offset
        else:
            end = data.index(b"\0", start)
            name = data[start:end]
            size = (fixed_size + len(name) + 8) & ~7
        if flags & NAME_MASK != min(len(name), NAME_MASK):
            raise Unsupported("name length")
        if not name:
            if named:
                raise Unsupported("stripped entry after a named one")
            stripped.append(data[offset:offset + size])
        else:
            if name in named or flags & EXTENDED_FLAG:
                raise Unsupported("duplicate or extended entry")
            named[name] = data[offset:offset + FIXED_SIZE]
        previous = name
        offset += size
    return stripped, named, offset


def _read_extensions(data: bytes, offset: int) -> dict[bytes, bytes]:
    """The extensions kept (by signature, in file order). Raises Unsupported for one git
    requires to be understood."""
    kept: dict[bytes, bytes] = {}
    end = len(data) - TRAILER_SIZE
    while offset < end:
        if offset + 8 > end:
            raise Unsupported("extension header")
        signature = data[offset:offset + 4]
        size = int.from_bytes(data[offset + 4:offset + 8], "big")
        body = data[offset + 8:offset + 8 + size]
        if len(body) != size:
            raise Unsupported("extension size")
        if signature in KEEP or signature == TREE:
            kept[signature] = body
        elif not b"A" <= signature[:1] <= b"Z":
            raise Unsupported(f"extension {signature!r}")
        offset += 8 + size
    return kept


def _write_named(out: list[bytes], named: dict[bytes, bytes], version: int) -> None:
    """Append the named entries in git's order (by name), in the file's format."""
    previous = b""
    for name in sorted(named):
        fixed = named[name]
        if version == 4:
            common = 0
            limit = min(len(name), len(previous))
            while common < limit and name[common] == previous[common]:
                common += 1
            out.append(fixed + encode_varint(len(previous) - common) + name[common:] + b"\0")
            previous = name
        else:
            size = (len(fixed) + len(name) + 8) & ~7
            out.append(fixed + name + b"\0" * (size - len(fixed) - len(name)))


def invalidate_tree(body: bytes, names: list[bytes]) -> bytes:
    """The TREE extension (git's cached tree ids of folders) with the folders holding
    ``names`` marked unknown (entry count -1, no id), so that no commit made from this index
    reuses a folder's old tree."""
    folders = {()} | {tuple(name.split(b"/")[:k]) for name in names for k in range(1, name.count(b"/") + 1)}
    out: list[bytes] = []
    offset = _copy_tree(body, 0, (), folders, out, is_root=True)
    if offset != len(body):
        raise Unsupported("tree extension")
    return b"".join(out)


def _copy_tree(body: bytes, offset: int, parent: tuple, folders: set, out: list[bytes], is_root: bool = False) -> int:
    """Copy the folder at ``offset`` and its subfolders into ``out``; returns the offset after them."""
    end = body.index(b"\0", offset)
    component = body[offset:end]
    line_end = body.index(b"\n", end)
    count_text, subtrees_text = body[end + 1:line_end].split(b" ")
    count, subtrees = int(count_text), int(subtrees_text)
    here = parent if is_root else parent + (component,)
    offset = line_end + 1
    if here in folders:
        out.append(component + b"\0-1 " + subtrees_text + b"\n")
        if count >= 0:
            offset += 20
    else:
        out.append(component + b"\0" + count_text + b" " + subtrees_text + b"\n")
        if count >= 0:
            out.append(body[offset:offset + 20])
            offset += 20
    for _ in range(subtrees):
        offset = _copy_tree(body, offset, here, folders, out)
    return offset


def decode_varint(data: bytes, offset: int) -> tuple[int, int]:
    """git's offset varint (varint.c) at ``offset``: (value, offset after it)."""
    byte = data[offset]
    offset += 1
    value = byte & 127
    while byte & 128:
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) + (byte & 127)
    return value, offset


def encode_varint(value: int) -> bytes:
    """git's offset varint of ``value`` (the inverse of ``decode_varint``)."""
    out = [value & 127]
    value >>= 7
    while value:
        value -= 1
        out.append(128 | (value & 127))
        value >>= 7
    return bytes(reversed(out))

"""Git objects written in process: atomic files, loose objects, trees and commit objects.

GitPython stores each object through a new ``git hash-object`` process; a loose object is
just the zlib-compressed ``type size\\0content`` at ``objects/xx/yyyy...``, so this module
writes it itself (a temporary file, fsynced, renamed) and reads through GitPython's object
database (one long-running ``cat-file``).
"""
from __future__ import annotations

import bisect
import contextlib
import ctypes
import hashlib
import os
import re
import struct
import tempfile
import time
import threading
import zlib
from pathlib import Path

import git

TREE_MODE = 0o40000
BLOB_MODE = 0o100644
FILE_MODES = (0o100644, 0o100755)
LOOSE_OBJECT_MODE = 0o444     # git's own loose objects are read-only
SHA_BYTES = 20                # a binary object id
WRITTEN_ROOTS = 16        # see ObjectStore._written_roots
TREE_CACHE_SIZE = 24          # parsed trees kept: the root and the folders of the last few commits written or diffed
# zlib level of the objects in a pack: git's default for loose objects (core.looseCompression = 1). A
# big folder's tree is rewritten by every write to it: level 6 costs far more time for few fewer bytes.
PACK_COMPRESSION = 1
# an object this big (a folder's tree at 10,000 files and more) is stored without compression
# (zlib level 0, still a valid zlib stream): compressing it costs more time than writing the
# extra bytes. Merging packs deltifies these trees.
STORED_SIZE = 256 * 1024


def blob_sha(data: bytes) -> str:
    """The id git gives a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fsync_folder(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(target: Path, data: bytes, mode: int, prefix: str, sync_folder: bool = True,
                     flush: bool = True) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder, flushed to disk,
    then a rename and an fsync of the folder (unless ``sync_folder`` is False: the caller
    does it): a reader, a killed process or a power cut sees the old file or the new one, never a part.
    With ``flush`` False nothing is flushed: the caller flushes the whole file system
    (``flush_file_system``) before anything depends on it."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if flush:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_folder and flush:
        fsync_folder(target.parent)


def flush_file_system(where: Path) -> None:
    """Flush to disk everything written to the file system holding ``where`` (Linux ``syncfs``:
    one call for thousands of files written without their own fsync; elsewhere ``sync``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        os.sync()
        return
    fd = os.open(where, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"syncfs failed: {os.strerror(error)}")
    finally:
        os.close(fd)


PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
PACK_FILE_MODE = 0o444          # git's packs are read-only too


def pack_bytes(objects: list[tuple[bytes, bytes, bytes]], level: int = PACK_COMPRESSION) -> tuple[bytes, bytes]:
    """The pack file (version 2, no deltas) and its index (version 2) of ``objects``, a list
    of (binary id, kind, content); their ids are given, not checked."""
    pack = bytearray(b"PACK" + struct.pack(">II", 2, len(objects)))
    where = []
    for binsha, kind, data in objects:
        size = len(data)
        byte = (PACK_TYPES[kind] << 4) | (size & 0x0F)
        size >>= 4
        header = bytearray()
        while size:
            header.append(byte | 0x80)
            byte = size & 0x7F
            size >>= 7
        header.append(byte)
        entry = bytes(header) + zlib.compress(data, level if len(data) < STORED_SIZE else 0)
        where.append((binsha, zlib.crc32(entry) & 0xFFFFFFFF, len(pack)))
        pack += entry
    pack_sha = hashlib.sha1(pack).digest()
    pack += pack_sha
    where.sort()
    fanout, i = [], 0
    for first in range(256):
        while i < len(where) and where[i][0][0] <= first:
            i += 1
        fanout.append(i)
    index = bytearray(b"\xfftOc" + struct.pack(">I", 2) + struct.pack(">256I", *fanout))
    index += b"".join(w[0] for w in where)
    index += b"".join(struct.pack(">I", w[1]) for w in where)
    index += b"".join(struct.pack(">I", w[2]) for w in where)   # a pack written here stays far below 2 GB
    index += pack_sha
    index += hashlib.sha1(index).digest()
    return bytes(pack), bytes(index)


def ident(name: str, email: str, when: int) -> str:
    """A git ident line's value, ``name <email> seconds +hhmm`` (local offset), with the
    characters git forbids in names and e-mails removed."""
    def clean(text: str) -> str:
        return re.sub(r"[<>\n\r\0]", "", text).strip() or "unknown"
    offset = time.strftime("%z", time.localtime(when))
    return f"{clean(name)} <{clean(email)}> {when} {offset}"


def group(changes: dict) -> dict:
    """``changes`` by path as nested dicts by folder: {"events": {"a.md": ...}}."""
    tree: dict = {}
    for path, change in changes.items():
        node = tree
        *folders, name = path.split("/")
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = change
    return tree


class Tree:
    """A git tree object as sorted entries: ``keys`` in git's order, ``entries`` their raw bytes."""

    __slots__ = ("keys", "entries")

    def __init__(self, keys: list, entries: list):
        self.keys = keys
        self.entries = entries

    @classmethod
    def parse(cls, raw: bytes) -> "Tree":
        """The tree whose object content is ``raw`` (``mode name\\0<20-byte id>`` entries)."""
        keys, entries = [], []
        pos, end = 0, len(raw)
        while pos < end:
            nul = raw.index(b"\0", pos)
            mode, _, name = raw[pos:nul].partition(b" ")
            stop = nul + 1 + SHA_BYTES
            keys.append(name + b"/" if mode == b"40000" else name)
            entries.append(raw[pos:stop])
            pos = stop
        return cls(keys, entries)

    def copy(self) -> "Tree":
        """A copy that can be changed without changing this tree."""
        return Tree(list(self.keys), list(self.entries))

    @staticmethod
    def _key(name: bytes, mode: int) -> bytes:
        return name + b"/" if mode == TREE_MODE else name  # git sorts a folder as "name/"

    def get(self, name: bytes, mode: int) -> bytes | None:
        """The binary id of the entry ``name`` of this kind, or None."""
        key = self._key(name, mode)
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return self.entries[i][-SHA_BYTES:]
        return None

    def entry(self, name: bytes) -> tuple[int, str] | None:
        """(mode, hex id) of the entry ``name`` that is not a folder, or None."""
        i = bisect.bisect_left(self.keys, name)
        if i < len(self.keys) and self.keys[i] == name:
            raw = self.entries[i]
            return int(raw[:raw.index(b" ")], 8), raw[-SHA_BYTES:].hex()
        return None

    def remove(self, name: bytes, mode: int) -> None:
        """Drop the entry ``name``, whether a file or a folder."""
        for key in (self._key(name, mode), self._key(name, TREE_MODE if mode != TREE_MODE else BLOB_MODE)):
            i = bisect.bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                del self.keys[i]
                del self.entries[i]

    def put(self, name: bytes, mode: int, sha: bytes) -> None:
        """Set the entry ``name`` (replacing a file or folder of that name)."""
        self.remove(name, mode)
        key = self._key(name, mode)
        i = bisect.bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.entries.insert(i, b"%o %s\0%s" % (mode, name, sha))


class ObjectStore:
    """Reads objects through GitPython, writes loose objects, trees and commits itself.

    Reading one object is safe from any thread (GitPython's ``cat-file`` helper is guarded by
    a lock of its own, always the innermost one taken, so readers never wait for a writer's
    whole commit). Writing trees and commits is not: writers hold the store's thread lock.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self._repo: git.Repo | None = None
        self._trees: dict[bytes, Tree] = {}
        self._trees_lock = threading.Lock()   # writers hold the store's lock, diffs of any thread do not
        self._io = threading.RLock()
        self._pending: dict[bytes, tuple[bytes, bytes]] = {}   # objects of the commit being built
        # root trees of the last commits written here: the next write builds on one of them (in a
        # group commit, on one not yet on the branch), without asking git's cat-file for it
        self._written_roots: dict[str, bytes] = {}

    def close(self) -> None:
        """Release the git helper processes GitPython keeps per Repo."""
        with self._io:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    def read(self, sha: bytes) -> bytes:
        """The content of the object ``sha`` (binary id). Raises what GitPython raises when it is missing."""
        with self._io:
            return self._open().odb.stream(sha).read()

    def size(self, sha: str) -> int | None:
        """The size of the object ``sha`` (hex id) without reading it; None when it does not exist."""
        try:
            with self._io:
                return self._open().odb.info(bytes.fromhex(sha)).size
        except Exception:   # a missing object surfaces differently across GitPython versions
            return None

    def read_tree(self, sha: bytes) -> bytes:
        """The content of the tree ``sha``; ValueError when the object is of another type."""
        with self._io:
            stream = self._open().odb.stream(sha)
            if stream.type != b"tree":
                raise ValueError(f"object {sha.hex()} is a {stream.type.decode()}, not a tree")
            return stream.read()

    def _open(self) -> git.Repo:
        """GitPython's Repo, opened on first use."""
        with self._io:
            if self._repo is None:
                self._repo = git.Repo(self.root)
            return self._repo

    def store(self, kind: bytes, data: bytes) -> bytes:
        """Add the object to the pack of the commit being built (written by ``write_commit``);
        returns its binary id."""
        binsha = hashlib.sha1(b"%s %d\0" % (kind, len(data)) + data).digest()
        self._pending[binsha] = (kind, data)
        return binsha

    @property
    def pack_dir(self) -> Path:
        return Path(self._open().common_dir) / "objects" / "pack"

    def flush(self, durable: bool = True) -> list[Path]:
        """Write the objects added since the last flush as one pack: the pack, then its index
        (git uses a pack once its index exists). With ``durable`` both are flushed to disk, then
        the folder; without, the caller passes the files returned to ``make_durable`` before
        anything that depends on them (a branch update) is flushed."""
        objects, self._pending = self._pending, {}
        if not objects:
            return []
        pack, index = pack_bytes([(sha, kind, data) for sha, (kind, data) in objects.items()])
        folder = self.pack_dir
        folder.mkdir(parents=True, exist_ok=True)
        name = "pack-" + pack[-SHA_BYTES:].hex()
        files = [folder / (name + suffix) for suffix in (".pack", ".idx")]
        for file, data in zip(files, (pack, index)):
            write_atomically(file, data, PACK_FILE_MODE, "tmp_pack_", sync_folder=False, flush=durable)
        if durable:
            fsync_folder(folder)
        return files

    @staticmethod
    def make_durable(files: list[Path]) -> None:
        """Flush packs written by ``flush(durable=False)`` to disk, then their folders (once each).
        A pack that is gone was merged by ``git repack`` meanwhile, which writes and flushes
        the merged pack before it deletes the ones it merged."""
        folders = {}
        for file in files:
            try:
                fd = os.open(file, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            folders[file.parent] = None
        for folder in folders:
            fsync_folder(folder)

    def pack_count(self) -> int:
        """How many packs the repository has."""
        try:
            return sum(1 for name in os.listdir(self.pack_dir) if name.endswith(".idx"))
        except FileNotFoundError:
            return 0

    def tree_of(self, commit: str) -> bytes:
        """The binary id of the root tree of ``commit``."""
        known = self._written_roots.get(commit)
        if known is not None:
            return known
        data = self.read(bytes.fromhex(commit))
        return bytes.fromhex(data[len(b"tree "):len(b"tree ") + 2 * SHA_BYTES].decode())

    def parsed_tree(self, tree_sha: bytes) -> Tree:
        """The parsed tree ``tree_sha`` (from the cache when recently used; never to be changed:
        ``Tree.copy`` first). Safe from any thread."""
        with self._trees_lock:
            tree = self._trees.get(tree_sha)
        if tree is None:
            tree = Tree.parse(self.read_tree(tree_sha))
            self._remember(tree_sha, tree)
        return tree

    def _remember(self, tree_sha: bytes, tree: Tree) -> None:
        """Cache a parsed tree, dropping the oldest past TREE_CACHE_SIZE."""
        with self._trees_lock:
            while len(self._trees) >= TREE_CACHE_SIZE:
                self._trees.pop(next(iter(self._trees)))
            self._trees[tree_sha] = tree

    def entries_at(self, commit: str | None, paths) -> dict[str, tuple[int, str]]:
        """(mode, object id in hex) of those ``paths`` that are files at ``commit``, read in
        process from the cached trees (no ``git ls-tree``). Callers hold the store's thread lock."""
        if not commit:
            return {}
        found = {}
        root = self.tree_of(commit)
        for path in paths:
            *folders, name = path.split("/")
            tree_sha: bytes | None = root
            for folder in folders:
                tree_sha = self.parsed_tree(tree_sha).get(folder.encode("utf-8"), TREE_MODE)
                if tree_sha is None:
                    break
            if tree_sha is None:
                continue
            entry = self.parsed_tree(tree_sha).entry(name.encode("utf-8"))
            if entry is not None:
                found[path] = entry
        return found

    def write_tree(self, tree_sha: bytes | None, changes: dict) -> bytes | None:
        """Write the tree ``tree_sha`` (None: empty) with ``changes`` (nested by ``group``: name ->
        content bytes, None to delete, (mode, hex id) of an existing object, or a dict for a
        folder) applied; returns its binary id, None when an existing tree ends up empty.

        Parsed trees are kept sorted in memory (git's order), so a write touching one file
        of a 100,000-file folder costs a bisect and a join, not a parse and a sort.
        """
        tree = self.parsed_tree(tree_sha).copy() if tree_sha is not None else Tree([], [])
        for name, change in changes.items():
            encoded = name.encode("utf-8")
            if isinstance(change, dict):
                sub = self.write_tree(tree.get(encoded, TREE_MODE), change)
                tree.remove(encoded, TREE_MODE)
                if sub is not None:
                    tree.put(encoded, TREE_MODE, sub)
            elif change is None:
                tree.remove(encoded, BLOB_MODE)
            elif isinstance(change, tuple):
                tree.put(encoded, change[0], bytes.fromhex(change[1]))
            else:
                tree.put(encoded, BLOB_MODE, self.store(b"blob", change))
        if not tree.entries and tree_sha is not None:
            return None
        raw = b"".join(tree.entries)
        sha = self.store(b"tree", raw)
        self._remember(sha, tree)
        return sha

    def write_commit(self, tree: bytes | None, parent: str | None, idents: list[bytes], message: bytes,
                     packs: list[Path] | None = None) -> str:
        """Write a commit object and return its id. ``tree`` None is the empty tree (every file
        removed); ``idents`` are the ``author``/``committer``/``encoding`` header lines. With
        ``packs`` (a list), the pack is not flushed to disk: its files are appended to it for
        ``make_durable``."""
        if tree is None:
            tree = self.store(b"tree", b"")  # EMPTY_TREE, written so the commit is complete
        header = [b"tree " + tree.hex().encode()]
        if parent:
            header.append(b"parent " + parent.encode())
        body = b"\n".join(header + idents) + b"\n\n" + message
        commit = self.store(b"commit", body).hex()
        if len(self._written_roots) >= WRITTEN_ROOTS:
            self._written_roots.pop(next(iter(self._written_roots)))
        self._written_roots[commit] = tree
        if packs is None:
            self.flush()
        else:
            packs.extend(self.flush(durable=False))
        return commit

"""Every use of Whoosh's internals, in one place: what each is for, what is checked before it is
used, and Whoosh's own path when it is not.

The rule: no other module of the service reads, calls, overrides or replaces a private name of
Whoosh (an attribute or method whose name starts with ``_``, or a module attribute Whoosh looks up
when it runs). They are written for Whoosh ``WRITTEN_FOR``, the version ``requirements.txt`` pins,
and grouped into the features below. ``install()`` decides once which features are used:

- none when another version is installed (read with ``importlib.metadata``);
- on that version, not a feature whose expected names, signatures or constructor state are
  missing (checked on Whoosh's classes, and on small objects made without any file);
- one warning says what is off and why. A feature that is off takes Whoosh's public path, which
  gives the same results, only slower or with a private copy of each segment part.

``install()`` is called when a ``SearchIndex`` is made (``service.build.build_service`` makes it
at the start of the web app and of every command); it is idempotent, and until it has run every
use here takes Whoosh's public path: importing the package changes nothing in Whoosh.
``uninstall()`` puts Whoosh back as it was and forgets the decision.

The features, each with its reason and its path without it:

- ``SEGMENT_PARTS`` replaces ``whoosh.filedb.compound.BufferFile``. Whoosh maps a compound segment
  file into memory and hands each part (terms, postings, columns) to a ``BufferFile``, which also
  copies the whole part into a ``BytesIO`` for its sequential reads: a private copy in every
  process of what the page cache shares between them. ``SegmentPart`` reads the mapping itself.
  Without it: Whoosh's ``BufferFile`` and its copies.
- ``FILE_NAMES`` replaces ``random_name`` where the codec, the file storage, the compound writer
  and the posting pool look it up. Whoosh draws new segments' and temporary files' names from the
  process-wide ``random``: whatever reseeds it (a library, a test framework seeding every example
  alike) makes names repeat, and a repeated segment name writes over a live segment's files.
  ``file_name`` draws from ``secrets``. Without it: Whoosh's names, safe while nothing in the
  process reseeds ``random`` (nothing in the service does).
- ``COLUMN_READS``: a segment's numeric column unpacked in one call from its reader's buffer.
  Without it: Whoosh's column reader, one value at a time.
- ``DELETION_READS``: a segment's deleted documents taken as one set from its per-document reader.
  Without it: ``all_doc_ids()``.
- ``POSTING_BLOCKS``: a term's postings decoded a block at a time from Whoosh's block matcher.
  Without it: the matcher's ``all_ids()``.
- ``REMEMBERED_COLUMNS``: the per-document readers our writers open remember that a segment has
  no column of a field; Whoosh asks the filesystem again for every posting of such a field
  (``W3PerDocReader._cached_reader``). Without it: Whoosh's own writer (``ix.writer()``).
- ``BULK_WRITING``: a full rebuild's segment written through the codec's block writer and term
  table (``write_postings``, ``write_numeric_columns``), with a term of few postings inline in its
  row, as Whoosh's own readers read them. Without it: Whoosh's ``add_document`` and ``commit``.
- ``TWO_PROCESS_BUILD``: two segments written apart and committed together (``index/building.py``).
  Without it: one process writes the whole rebuild.
- ``TEMP_FOLDERS`` replaces ``FileStorage.create``. Every index writer makes its temporary folder
  twice (the segment writer, then the codec's per-document writer), and Whoosh's ``create`` keeps
  the second one's "exists" error in a local variable: a reference cycle of the error, its
  traceback and the frames of the whole call (the sync's, holding its snapshot), which only the
  cyclic collector frees. A start that freezes what it made (``gc.freeze``) would keep it for
  good. ``create_folder`` ignores the same error without keeping it. Without it: Whoosh's
  ``create``, and a start collects its young objects before the freeze.

Every feature has such a public path, so none of them stops the service from starting.
"""
from __future__ import annotations

import errno
import inspect
import logging
import os
import secrets
import struct
import threading
from array import array
from importlib import metadata
from itertools import accumulate
from pickle import dumps

from whoosh import columns, reading, util, writing
from whoosh.codec import base as codec_base
from whoosh.codec import whoosh3
from whoosh.filedb import compound, filestore, structfile
from whoosh.matching import wrappers
from whoosh.system import pack_uint, pack_ushort

log = logging.getLogger(__name__)

WRITTEN_FOR = "2.7.4"   # the Whoosh every use below was written for and checked against

SEGMENT_PARTS = "segment parts read in place"
FILE_NAMES = "file names from the operating system's randomness"
COLUMN_READS = "numeric columns unpacked a segment at a time"
DELETION_READS = "deleted documents read as one set"
POSTING_BLOCKS = "postings decoded a block at a time"
REMEMBERED_COLUMNS = "writers remembering a missing column"
BULK_WRITING = "a rebuild's segment written in bulk"
TWO_PROCESS_BUILD = "a rebuild in two processes"
TEMP_FOLDERS = "folders made without a reference cycle"
FEATURES = (SEGMENT_PARTS, FILE_NAMES, COLUMN_READS, DELETION_READS, POSTING_BLOCKS, REMEMBERED_COLUMNS,
            BULK_WRITING, TWO_PROCESS_BUILD, TEMP_FOLDERS)

# the modules that call ``whoosh.util.random_name`` through a name of their own
NAMING_MODULES = (codec_base, filestore, compound, writing)
TERMINFO_FORMAT = "!BfIBBfII"   # a term table row's head (W3TermInfo), which ``inline_terminfo`` packs

_lock = threading.Lock()
_used = dict.fromkeys(FEATURES, False)   # what ``install`` decided: everything off until it runs
_decided = False
_replaced: list[tuple[object, str, object]] = []   # (module, name, Whoosh's own value), for ``uninstall``


def installed_version() -> str | None:
    try:
        return metadata.version("Whoosh")
    except metadata.PackageNotFoundError:
        return None


def in_use(feature: str) -> bool:
    return _used[feature]


def install(version: str | None = None) -> bool:
    """Decide which features are used and put the two replacements in place; True when every
    feature is used. ``version`` is the installed Whoosh's (default: read from its metadata). A
    second call changes nothing and returns the first one's answer."""
    global _decided
    with _lock:
        if not _decided:
            _decided = True
            off = problems(installed_version() if version is None else version)
            for feature in FEATURES:
                _used[feature] = feature not in off
            if off:
                log.warning("%s; the search index takes Whoosh's own path there (same results, slower or with "
                            "more memory)", _describe(off))
            if _used[SEGMENT_PARTS]:
                _replace(compound, "BufferFile", SegmentPart)
            if _used[FILE_NAMES]:
                for module in NAMING_MODULES:
                    _replace(module, "random_name", file_name)
            if _used[TEMP_FOLDERS]:
                _replace(filestore.FileStorage, "create", create_folder)
        return all(_used.values())


def uninstall() -> None:
    """Whoosh as it was before ``install``, every feature off, and the decision forgotten."""
    global _decided
    with _lock:
        while _replaced:
            module, name, own = _replaced.pop()
            setattr(module, name, own)
        for feature in FEATURES:
            _used[feature] = False
        _decided = False


def _replace(module, name: str, ours) -> None:
    _replaced.append((module, name, getattr(module, name)))
    setattr(module, name, ours)


def _describe(off: dict[str, str]) -> str:
    """What is off, in one sentence."""
    reasons = set(off.values())
    if len(reasons) == 1 and len(off) == len(FEATURES):
        return f"{reasons.pop()}: none of the service's uses of Whoosh's internals is used"
    return "Whoosh's internals are not used for " + "; ".join(f"{feature} ({why})" for feature, why in off.items())


# ----------------------------------------------------------------------------- the checks

def problems(version: str | None) -> dict[str, str]:
    """What is off, by feature, on Whoosh ``version`` as it is loaded in this process."""
    if version != WRITTEN_FOR:
        return dict.fromkeys(FEATURES, f"Whoosh {version} is installed, not {WRITTEN_FOR}")
    found = {}
    for feature, check in _CHECKS.items():
        try:
            missing = [what for what in check() if what]
        except Exception as exc:   # an object the check makes cannot be made as it expects
            missing = [f"the check failed: {exc!r}"]
        if missing:
            found[feature] = "; ".join(missing)
    return found


def _method(owner, name: str, params: tuple) -> str | None:
    """What is off with ``owner.name``, a function taking ``params``; None when nothing is."""
    label = f"{getattr(owner, '__name__', owner)}.{name}"
    func = getattr(owner, name, None)
    if not callable(func):
        return f"{label} is missing"
    try:
        got = tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return f"{label} has no signature"
    return None if got == params else f"{label} takes {got}, not {params}"


def _names(owner, name: str, *used: str) -> str | None:
    """What is off with ``owner.name``, whose code uses ``used`` (attributes it sets or reads,
    module names it calls); None when nothing is."""
    func = getattr(owner, name, None)
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    missing = [n for n in used if code is None or n not in code.co_names]
    return f"{getattr(owner, '__name__', owner)}.{name} does not use {', '.join(missing)}" if missing else None


def _state(obj, *names: str) -> str | None:
    """What is off with ``obj``, which should hold the attributes ``names``; None when nothing is."""
    missing = [n for n in names if n not in vars(obj)]
    return f"a {type(obj).__qualname__} has no {', '.join(missing)}" if missing else None


def _segment_parts_checks():
    yield None if compound.BufferFile in (structfile.BufferFile, SegmentPart) else \
        "whoosh.filedb.compound.BufferFile was replaced by other code"
    yield _names(compound.CompoundStorage, "open_file", "BufferFile")
    yield _method(structfile.BufferFile, "__init__", ("self", "buf", "name", "onclose"))
    state = set(vars(structfile.BufferFile(b"")))
    yield None if state == PART_STATE else f"a BufferFile holds {sorted(state)}, a SegmentPart {sorted(PART_STATE)}"


def _file_names_checks():
    yield _method(util, "random_name", ("size",))
    for module in NAMING_MODULES:
        yield None if getattr(module, "random_name", None) in (util.random_name, file_name) else \
            f"{module.__name__}.random_name is not whoosh.util.random_name"


def _column_reads_checks():
    reader = columns.NumericColumn("I", 0).reader(None, 0, 8, 2)   # two 4-byte values, no file read
    yield _state(reader, "_count", "_dbfile", "_basepos", "_fixedlen", "_typecode", "_default")
    yield None if (reader._count, reader._fixedlen, reader._typecode) == (2, 4, "I") else \
        "a numeric column reader counts its values differently"
    yield _method(structfile.StructFile, "get", ("self", "position", "length"))


def _deletion_reads_checks():
    yield _names(reading.SegmentReader, "__init__", "_perdoc")
    yield _method(whoosh3.W3PerDocReader, "deleted_docs", ("self",))


def _posting_blocks_checks():
    matcher = whoosh3.W3LeafMatcher
    yield _method(matcher, "_read_data", ("self",))
    yield _method(matcher, "_next_block", ("self",))
    yield _names(matcher, "__init__", "_byteids")
    yield _names(matcher, "reset", "_atend")
    yield _names(matcher, "_read_data", "_data")
    yield _names(matcher, "_read_ids", "_data", "delta_decode")   # a block's ids are stored as gaps
    yield _names(wrappers.WrappingMatcher, "__init__", "child")


def _remembered_columns_checks():
    perdoc = whoosh3.W3PerDocReader
    # ``SegmentWriter`` below overrides these three
    yield _method(writing.SegmentWriter, "per_document_reader", ("self",))
    yield _method(writing.SegmentWriter, "add_reader", ("self", "reader"))
    yield _method(writing.SegmentWriter, "_flush_segment", ("self",))
    yield _method(perdoc, "_cached_reader", ("self", "fieldname", "column"))
    yield _names(perdoc, "__init__", "_readers")
    yield _names(perdoc, "_cached_reader", "_readers")
    yield _method(perdoc, "has_column", ("self", "fieldname"))
    yield _method(perdoc, "column_reader", ("self", "fieldname", "column"))
    yield _names(reading.SegmentReader, "__init__", "_perdoc")


def _bulk_writing_checks():
    writer = writing.SegmentWriter
    yield _method(writer, "_check_state", ("self",))
    yield _method(writer, "_flush_segment", ("self",))
    yield _names(writer, "_finalize_segment", "_flush_segment")
    yield _names(writer, "__init__", "_added", "docnum", "perdocwriter", "fieldwriter")
    yield _method(whoosh3.W3PerDocWriter, "_create_column", ("self", "fieldname", "column"))
    yield _method(whoosh3.W3PerDocWriter, "_get_column", ("self", "fieldname"))
    yield _state(columns.NumericColumn("I"), "_typecode")
    yield _state(columns.NumericColumn("I").writer(None), "_dbfile", "_count", "_default")
    yield _names(whoosh3.W3FieldWriter, "__init__", "_tindex", "_postwriter")
    yield _names(whoosh3.W3FieldWriter, "finish_term", "_tindex", "_fieldid", "pack_ushort")
    yield _method(whoosh3.W3PostingsWriter, "_write_block", ("self", "last"))
    block = whoosh3.W3PostingsWriter(None, 128)   # no file is touched before a term starts
    block._new_block()
    yield _state(block, "_blocklimit", "_ids", "_weights", "_values", "_maxweight")
    row = getattr(whoosh3.W3TermInfo, "_struct", None)
    yield None if isinstance(row, struct.Struct) and row.format == TERMINFO_FORMAT else \
        f"W3TermInfo's row is not packed as {TERMINFO_FORMAT}"


def _two_process_build_checks():
    writer = writing.SegmentWriter
    yield _method(writer, "_finalize_segment", ("self",))
    yield _method(writer, "_commit_toc", ("self", "segments"))
    yield _method(writer, "_finish", ("self",))


def _temp_folders_checks():
    yield None if filestore.FileStorage.create in (_WHOOSH_CREATE, create_folder) else \
        "whoosh.filedb.filestore.FileStorage.create was replaced by other code"
    yield _method(filestore.FileStorage, "create", ("self",))
    yield _names(filestore.FileStorage, "create", "makedirs", "isdir", "folder")


_CHECKS = {SEGMENT_PARTS: _segment_parts_checks, FILE_NAMES: _file_names_checks, COLUMN_READS: _column_reads_checks,
           DELETION_READS: _deletion_reads_checks, POSTING_BLOCKS: _posting_blocks_checks,
           REMEMBERED_COLUMNS: _remembered_columns_checks, BULK_WRITING: _bulk_writing_checks,
           TWO_PROCESS_BUILD: _two_process_build_checks, TEMP_FOLDERS: _temp_folders_checks}
_WHOOSH_CREATE = filestore.FileStorage.create


def create_folder(self):
    """``FileStorage.create`` (the storage's folder made if it is not there; an error if it is not
    a folder), with the "exists" error dropped at once rather than kept in a local variable."""
    path = os.path.abspath(self.folder)
    try:
        os.makedirs(path)
    except FileExistsError:
        pass
    if not os.path.isdir(path):
        error = IOError("%r is not a directory" % path)
        error.errno = errno.ENOTDIR
        raise error
    return self


# ----------------------------------------------------------------------------- segment parts, file names

# what ``peek`` hands over at most: more than a posting block's header, less than the 128 KB the unpickler asks for
PEEK_BYTES = 256


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
        call and then takes what it used with one ``read``, instead of one ``read`` per value."""
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
    """``BufferFile`` reading through ``MappedReader`` instead of a ``BytesIO`` copy (the same
    state as ``BufferFile.__init__`` sets: ``PART_STATE``)."""

    def __init__(self, buf, name=None, onclose=None):
        self._buf = buf
        self._name = name
        self.file = MappedReader(buf)
        self.onclose = onclose
        self.is_real = False
        self.is_closed = False


PART_STATE = {"_buf", "_name", "file", "onclose", "is_real", "is_closed"}
NAME_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"   # whoosh's own alphabet for file names


def file_name(size: int = 28) -> str:
    """A segment's or temporary file's random name part, from ``secrets``: a reseeded ``random``
    never makes it repeat (``whoosh.util.random_name``'s signature)."""
    return "".join(secrets.choice(NAME_CHARS) for _ in range(size))


# ----------------------------------------------------------------------------- reading

def column_values(column, count: int) -> list | None:
    """The first ``count`` values of a segment's numeric column reader (``column_reader(name,
    translate=False)``), unpacked in one call; None unless ``COLUMN_READS`` reads this reader
    (the caller then asks Whoosh's reader value by value)."""
    if not _used[COLUMN_READS] or type(column) is not columns.NumericColumn.Reader:
        return None
    n = min(column._count, count)   # the column stops at the last value that is not the default
    raw = column._dbfile.get(column._basepos, n * column._fixedlen)
    return list(struct.unpack(f"!{n}{column._typecode}", raw)) + [column._default] * (count - n)


def deleted_docs(leaf) -> set[int] | None:
    """The docnums deleted in the segment of ``leaf`` (a segment reader); None unless
    ``DELETION_READS`` reads them (the caller then asks ``leaf.all_doc_ids()``)."""
    perdoc = getattr(leaf, "_perdoc", None) if _used[DELETION_READS] else None
    return set(perdoc.deleted_docs()) if isinstance(perdoc, whoosh3.W3PerDocReader) else None


def posting_blocks(matcher):
    """The docnums of ``matcher`` (a segment's ``postings(field, term)``), one sequence per block
    (one for a term kept inline), deleted documents included; None unless ``POSTING_BLOCKS`` is
    used (the caller then asks ``matcher.all_ids()``). Whoosh's own ``_read_ids`` runs a Python
    generator per id; here a block's gaps are summed in C."""
    if not _used[POSTING_BLOCKS]:
        return None
    if type(matcher) is wrappers.FilterMatcher:   # a segment with deletions filters its matcher
        matcher = matcher.child
    return _blocks(matcher) if type(matcher) is whoosh3.W3LeafMatcher else (matcher.all_ids(),)


def _blocks(matcher):
    while not matcher._atend:
        if matcher._data is None:
            matcher._read_data()
        yield matcher._data[0] if matcher._byteids else accumulate(matcher._data[0])
        matcher._next_block()


# ----------------------------------------------------------------------------- writing

class RememberingPerDocReader(whoosh3.W3PerDocReader):
    """A W3PerDocReader that also remembers a column a segment does not have (a segment's files
    never change once written)."""

    def _cached_reader(self, fieldname, column):
        if fieldname in self._readers:
            return self._readers[fieldname]
        reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
        self._readers[fieldname] = reader
        return reader


def remember_missing_columns(perdoc):
    """``perdoc`` itself, made a RememberingPerDocReader when it is a plain W3PerDocReader and
    ``REMEMBERED_COLUMNS`` is used."""
    if _used[REMEMBERED_COLUMNS] and type(perdoc) is whoosh3.W3PerDocReader:
        perdoc.__class__ = RememberingPerDocReader  # adds no state: only the one method differs
    return perdoc


class SegmentWriter(writing.SegmentWriter):
    """Whoosh's segment writer as the index's writers use it: the per-document readers it opens
    (the new segment read back, the segments merged into it) remember missing columns, and the
    private steps a subclass uses have names of ours (``check_open``, ``document_added``,
    ``write_segment``: the step of a commit that writes the postings)."""

    def per_document_reader(self):
        return remember_missing_columns(super().per_document_reader())

    def add_reader(self, reader):
        for leaf, _offset in reader.leaf_readers():
            perdoc = getattr(leaf, "_perdoc", None)
            if perdoc is not None:
                remember_missing_columns(perdoc)
        super().add_reader(reader)

    def check_open(self) -> None:
        self._check_state()

    def document_added(self) -> None:
        self._added = True
        self.docnum += 1

    def _flush_segment(self):
        self.write_segment()

    def write_segment(self) -> None:
        super()._flush_segment()


def write_numeric_columns(writer, values: dict[str, dict[int, int]]) -> None:
    """Each numeric column of ``values`` (field -> {docnum: value}) as Whoosh writes it value by
    value: a big-endian value per document up to the last one that is not the default (a gap
    filled with the default); a field no document had gets no column."""
    perdoc = writer.perdocwriter
    for name, by_doc in values.items():
        if not by_doc:
            continue
        column = writer.schema[name].column_type
        perdoc._create_column(name, column)
        out = perdoc._get_column(name)
        default = out._default
        count = max((d for d, v in by_doc.items() if v != default), default=-1) + 1
        row = [by_doc.get(d, default) for d in range(count)]
        out._dbfile.write(struct.pack(f"!{count}{column._typecode}", *row))
        out._count = count


def write_postings(writer, postings: dict, counted: dict[str, bool], block_postings: int, inline_postings: int) -> None:
    """Every field's terms of ``postings`` (field -> {term: [docnum or (docnum, count)]}, None
    for a field not indexed) written through the codec's field writer, which is then closed. A
    term's docnums are cut into blocks of ``block_postings`` (or Whoosh's own size, if larger)
    written by the codec's block writer; a term with at most ``inline_postings`` is kept in its
    term table row instead (``inline_terminfo``). ``counted``: the fields whose values are counts."""
    fields = writer.fieldwriter
    for name in sorted(postings):
        terms = postings[name]
        if not terms:  # None: not indexed
            continue
        field = writer.schema[name]
        boost, counts = field.format.field_boost, counted[name]
        fields.start_field(name, field)
        block = fields._postwriter
        limit = max(block._blocklimit, block_postings)
        table, key = fields._tindex, pack_ushort(fields._fieldid)
        for btext, entries in sorted((text.encode("utf-8"), entries) for text, entries in terms.items()):
            if len(entries) <= inline_postings:
                table.add(key + btext, inline_terminfo(entries, boost, counts))
                continue
            fields.start_term(btext)
            for first in range(0, len(entries), limit):
                if first:
                    block._write_block()
                chunk = entries[first:first + limit]
                ids = [e if type(e) is int else e[0] for e in chunk]
                freqs = [1 if type(e) is int else e[1] for e in chunk]
                block._ids = array("I", ids)
                block._weights = array("f", [f * boost for f in freqs])
                block._maxweight = max(block._weights)
                block._values = [pack_uint(f) for f in freqs] if counts else []
            fields.finish_term()
        fields.finish_field()
    fields.close()


def inline_terminfo(entries: list, boost: float, counted: bool) -> bytes:
    """The term table row of a term whose postings (docnum, or (docnum, count)) are kept inline:
    ``W3TermInfo.to_bytes`` of a terminfo made by ``add_block`` and ``set_inlined`` of one block
    (no lengths: the fields are not scorable). Values are the frequency bytes of a counted field,
    None for an Existence field (what Whoosh's block reader gives for it)."""
    ids = tuple(e if type(e) is int else e[0] for e in entries)
    freqs = [1 if type(e) is int else e[1] for e in entries]
    weights = tuple(array("f", [f * boost for f in freqs]))
    values = tuple(pack_uint(f) for f in freqs) if counted else (None,) * len(ids)
    head = whoosh3.W3TermInfo._struct.pack(True, sum(weights), len(ids), 0, 0, max(weights), ids[0], ids[-1])
    return head + dumps((ids, weights, values), 2)


def finalize_segment(writer):
    """What ``writer.commit()`` writes of its own segment, without committing it; the segment."""
    return writer._finalize_segment()


def commit_segments(writer, segments: list) -> None:
    """What Whoosh's ``commit`` does once the writer's own segment is finalized already: the
    table of contents listing ``segments`` in that order, then the writer closed (its lock released)."""
    writer._commit_toc(segments)
    writer._finish()

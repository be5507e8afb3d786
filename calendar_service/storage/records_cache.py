"""The records cache: a whole snapshot of one commit kept on disk, so a start parses nothing.

The file (``records.cache`` in the index folder) is derived data, safe to delete. It holds
each file's parsed record by path and blob id, the files' git dates, the ids unreadable files
claim and the maps the snapshot derives from the records.

A cache is only as good as the code that wrote it. Its version (``cache_version``) is made of
``FORMAT``, an explicit number raised whenever the parsing code or the cache's layout changes
what a cached record holds, and of the versions of the libraries that shape parsed data
(YAML loading, front matter, dates, time zones, bitmaps). A cache of another version is
ignored and rewritten. ``tests/test_records_cache_version.py`` pins a digest of the parsing
modules to ``FORMAT``, so a change to one of them fails the suite until ``FORMAT`` is raised.
"""
from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import pickle
import secrets
import sys
import threading
import zlib
from array import array
from bisect import bisect_left
from importlib import metadata
from itertools import compress, islice, repeat
from operator import le
from pathlib import Path

from calendar_service.domain import file_limits, record_files
from calendar_service.domain.record import Record, fill_history, packed_records
from calendar_service.domain.record_files import FileProblem
from calendar_service.domain.recurrence import limits as recurrence_limits
from calendar_service.domain.resources import EVENTS, RESOURCES
from calendar_service.domain.snapshot import Snapshot, Stale
from calendar_service.storage import record_texts
from calendar_service.storage.file_date_columns import FileDateColumns, position
from calendar_service.storage.record_texts import RecordTexts, TextsWriter
from calendar_service.storage.store import GitStore

log = logging.getLogger(__name__)

# Raise by one whenever a change to the code that parses record files or derives the snapshot's
# maps (domain/record_files.py and every module it imports, domain/snapshot.py), or to this file's
# layout, changes what a cache holds. The test named above fails until it is raised.
FORMAT = 15
# the distributions whose versions change what parsing gives for the same bytes
SHAPING_LIBRARIES = ("PyYAML", "python-frontmatter", "python-dateutil", "tzdata", "pyroaring")
DICTIONARY_SAMPLE = 60          # records sampled for the preset dictionary of packed records
DICTIONARY_BYTES = 8192         # its length: longer ones pack a little smaller but cost more per record
MAX_RECORD_BYTES = 16 << 20     # a packed record inflating beyond this is not one the cache writer wrote


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


@functools.cache
def _code_version() -> str:
    libraries = ";".join(f"{name}={_installed(name)}" for name in SHAPING_LIBRARIES)
    return f"records-{FORMAT};python={sys.version_info[0]}.{sys.version_info[1]};{libraries}"


def cache_version() -> str:
    """The version a cache must carry to be read: ``FORMAT``, the Python version (the pickles'
    reader), the installed version of each of ``SHAPING_LIBRARIES`` and the limits files are
    read with (a file over a limit raised or lowered since reads differently; the recurrence
    limits decide whether a series file is served)."""
    limits = file_limits.LIMITS
    return (f"{_code_version()};limits={limits.file_bytes},{limits.nesting},{limits.keys},{limits.items},"
            f"{limits.string_length};max_occurrences={recurrence_limits.max_occurrences()};"
            f"horizon={recurrence_limits.horizon_months()}")


cache_version.cache_clear = _code_version.cache_clear   # the installed libraries read again


class _CacheUnpickler(pickle.Unpickler):
    """Plain data only (YAML may give dates and times), whatever the file holds."""

    ALLOWED = {("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"), ("datetime", "timezone"),
               ("datetime", "timedelta")}

    def find_class(self, module, name):
        """The allowed class; raises UnpicklingError for anything else."""
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the records cache")


def kept_entry(blob: str, record: Record | None, problems, source: "CachedRecords") -> tuple:
    """(blob, packed data or None, problems as tuples, id, slug, the record's blob when it is not
    the file's): what the cache keeps of one file."""
    kept = tuple((p.path, p.line, p.message, p.severity) for p in problems)
    if record is None:
        return blob, None, kept, None, None, None
    packed = record.packed_data
    if packed is None:
        packed = source.pack(record.file_data())
    return blob, packed, kept, record.id, record.slug, record.blob if record.blob != blob else None


class PackedColumn:
    """The packed data of every record of one cache file, as one buffer: a record restored from
    it holds its position (``Record._packed``) and this column as its source, and its bytes are
    cut from the buffer when its dict is made (a start makes no bytes object per record). A
    post restored with its file's dates holds its row of ``dates`` (``Record.history``): no
    tuple is made per record at start. ``texts``: the texts made of these records when the
    cache was written (``storage.record_texts``), if any."""

    __slots__ = ("source", "buffer", "ends", "dates", "texts")

    def __init__(self, source: "CachedRecords", buffer: bytes, ends: array):
        self.source, self.buffer, self.ends = source, buffer, ends
        self.dates: FileDateColumns | None = None   # the dates the restored records' rows are of
        self.texts: RecordTexts | None = None

    def packed_at(self, index: int) -> bytes:
        ends = self.ends
        return self.buffer[ends[index - 1] if index else 0:ends[index]]

    def facts_at(self, index: int) -> tuple | None:
        """The file dates of row ``index`` (a record's ``history``), or None."""
        return self.dates.row(index)

    def unpack(self, record: Record) -> tuple[dict, dict | None]:
        return self.source.unpack(record)

    def _row_facts(self, index: int):
        return self.dates.row(index) if self.dates is not None else None

    def text_at(self, index: int, facts, context: str) -> str | None:
        """The text a maker of ``context`` made of row ``index``'s record, when the record still
        has the file dates it was made with (``facts``: the record's ``_facts``, its row or dates
        set since), or None."""
        texts = self.texts
        if texts is None or texts.context != context or (facts != index and facts != self._row_facts(index)):
            return None
        return texts.text_at(index, record_texts.checksum(self.packed_at(index)))

    def kept_packed_text(self, index: int, texts: RecordTexts, facts) -> tuple[bytes, int] | None:
        """Row ``index``'s packed text in ``texts`` (``RecordTexts.packed_at``) when these are
        the texts of this column and the row's dates are ``facts`` (what a cache write may copy
        as it is), else None."""
        if texts is not self.texts or tuple(self._row_facts(index) or ()) != tuple(facts or ()):
            return None
        return texts.packed_at(index, record_texts.checksum(self.packed_at(index)))


_COLUMNS = ("paths", "blobs", "ids", "slugs")


class CachedFiles:
    """The files of a cache file by column (path order): paths, blob ids, record ids and slugs,
    whether each has a record (``present``), the records' packed data (``PackedColumn``), the
    problems and the record blobs of the few files that have them (by position). Checked to have
    the shapes the cache writer gives them (ValueError otherwise)."""

    def __init__(self, raw, source: "CachedRecords"):
        if type(raw) is not dict or not all(type(raw.get(name)) is list for name in _COLUMNS):
            raise ValueError("files that are not columns")
        self.paths, self.blobs, self.ids, self.slugs = (raw[name] for name in _COLUMNS)
        count = len(self.paths)
        present, packed, ends = raw.get("present"), raw.get("packed"), raw.get("ends")
        problems, record_blobs = raw.get("problems"), raw.get("record_blobs")
        if not (all(len(raw[name]) == count for name in _COLUMNS) and type(present) is bytes and len(present) == count
                and type(packed) is bytes and type(ends) is bytes and len(ends) == 8 * count
                and raw.get("order") == sys.byteorder and type(problems) is dict and type(record_blobs) is dict):
            raise ValueError("columns of other types or lengths")
        offsets = array("Q")
        offsets.frombytes(ends)
        if offsets and (offsets[-1] != len(packed) or not all(map(le, offsets, islice(offsets, 1, None)))):
            raise ValueError("packed data that does not end where its entries say")
        if not (set(map(type, self.paths)) | set(map(type, self.blobs)) <= {str}
                and set(map(type, problems)) | set(map(type, record_blobs)) <= {int}
                and all(0 <= i < count for i in (*problems, *record_blobs))
                and set(map(type, problems.values())) <= {tuple} and set(map(type, record_blobs.values())) <= {str}):
            raise ValueError("an entry that no cache writer writes")
        self.present, self.problems, self.record_blobs = present, problems, record_blobs
        self.column = PackedColumn(source, packed, offsets)

    def __len__(self) -> int:
        return len(self.paths)

    def position(self, path: str) -> int | None:
        """Where ``path`` is in the columns (they are in path order), or None."""
        return position(self.paths, path)

    def entry(self, path: str, blob: str) -> tuple | None:
        """The restored entry of ``path`` (as ``restored`` gives it, without git dates) when the
        cache holds it at ``blob`` as the file itself (not a last good version), else None."""
        index = self.position(path)
        if index is None or self.blobs[index] != blob or index in self.record_blobs:
            return None
        files, _ = self.restored(None, range(index, index + 1))
        return files[path]

    def restored(self, dates: "FileDateColumns | None", span: range | None = None) -> tuple[dict, dict]:
        """(files, grouped) of the entries in ``span`` (all by default, with the git dates of
        ``dates``; none without): path -> (blob, record or None, problems), and resource -> (its records in path order, their ids, their slugs). A record's resource is the one
        of its path's folder; the checks are made by column in a few passes in C and the records
        made in one loop (a start restores every file of the cache). ValueError or TypeError for
        an entry no cache writer writes."""
        span = span or range(len(self.paths))
        first = span.start
        if dates is not None:
            self.column.dates = dates
        paths = self.paths[span.start:span.stop]
        blobs, ids, slugs = (column[span.start:span.stop] for column in (self.blobs, self.ids, self.slugs))
        present = self.present[span.start:span.stop]
        if paths != sorted(paths):
            raise ValueError("files that are not in path order")
        record_blobs = blobs
        if self.record_blobs:
            record_blobs = list(blobs)
            for index, blob in self.record_blobs.items():
                if index in span:
                    record_blobs[index - first] = blob
        records: list = [None] * len(paths)
        grouped: dict = {}
        found = 0
        column = self.column
        for resource in RESOURCES.values():
            low, high = bisect_left(paths, resource.name + "/"), bisect_left(paths, resource.name + "0")
            mask = present[low:high]
            whole = all(mask)
            positions = range(first + low, first + high)
            if whole:
                at, blob, rid, slug = (c[low:high] for c in (paths, record_blobs, ids, slugs))
            else:
                positions = list(compress(positions, mask))
                at, blob, rid, slug = (list(compress(c[low:high], mask)) for c in (paths, record_blobs, ids, slugs))
            if not at:
                continue
            if set(map(type, slug)) != {str} or not set(map(type, rid)) <= _NONE_OR_INT:
                raise ValueError(f"a cached record of {resource.name} is not one the cache writer writes")
            # a post holds its row of the dates, read when its data is first made (``Record.history``)
            facts = positions if resource.kind == "post" and dates is not None else repeat(None)
            # events are forgotten beyond RECENT_RECORDS; the rest are few and their lists read them all
            made = packed_records(resource, at, blob, rid, slug, positions, facts, column, held=resource is not EVENTS)
            grouped[resource] = (made, rid, slug)
            found += len(made)
            if whole:
                records[low:high] = made
            else:
                for index, record in zip(compress(range(low, high), mask), made):
                    records[index] = record
        if found != sum(map(bool, present)):
            raise ValueError("a cached record outside the folders of records")
        kept = [()] * len(paths)
        for index, problems in self.problems.items():
            if index in span:
                kept[index - first] = tuple(FileProblem(*p) for p in problems)
        return dict(zip(paths, zip(blobs, records, kept))), grouped



class CachedRecords:
    """Packs records for the cache, and makes the data of the records restored from it when each
    is first used: its bytes inflated and read back (plain data only), history dates filled in.
    Bytes that do not read back as the record the entry named (a tampered or damaged cache) are
    logged and the file is read from git instead: the answer is the one a start without a cache
    gives.

    Each record is its own zlib stream against one preset dictionary (a sample of records, kept
    in the cache file): records of one calendar share most of their bytes, so each packs to a
    fraction of its pickle and is made again only when used. A catalog keeps the dictionary of
    the cache it read, so a packed record is written back as it is."""

    def __init__(self, store: GitStore, author_of=None):
        self.store = store
        self.author_of = author_of
        self.dictionary: bytes | None = None
        self.texts: RecordTexts | None = None   # the texts read with the cache (a write copies what still holds)

    def choose_dictionary(self, snapshot: Snapshot) -> None:
        """Take a dictionary from ``snapshot``'s records, unless one is set already."""
        if self.dictionary is not None:
            return
        sample = []
        paths = sorted(snapshot.files)
        for path in paths[::max(1, len(paths) // DICTIONARY_SAMPLE)]:
            record = snapshot.files[path][1]
            if record is not None:
                sample.append(pickle.dumps(record.file_data(), protocol=pickle.HIGHEST_PROTOCOL))
        self.dictionary = b"".join(sample)[-DICTIONARY_BYTES:]

    def pack(self, data: dict) -> bytes:
        deflate = zlib.compressobj(6, zdict=self.dictionary or b"")
        return deflate.compress(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)) + deflate.flush()

    def unpack(self, record: Record) -> tuple[dict, dict | None]:
        """(data, filled) of packed ``record``."""
        try:
            inflate = zlib.decompressobj(zdict=self.dictionary or b"")
            raw = inflate.decompress(record.packed_data, MAX_RECORD_BYTES)
            if inflate.unconsumed_tail or not inflate.eof:
                raise ValueError("not one whole record of at most MAX_RECORD_BYTES")
            data = _CacheUnpickler(io.BytesIO(raw)).load()
            if type(data) is not dict or data.get("id") != record.id or data.get("slug") != record.slug:
                raise ValueError("not the record its entry names")
        except Exception as exc:
            log.warning("the records cache's entry of %s does not read (%s): reading the file from git", record.path, exc)
            data = self._from_git(record)
        facts = record.history
        filled = fill_history(data, *facts, author_of=self.author_of) if facts is not None else None
        return data, filled

    def _from_git(self, record: Record) -> dict:
        raw = self.store.read_blobs([record.blob]).get(record.blob)
        parsed, problems = record_files.parse(record.path, raw) if raw is not None else (None, [])
        if parsed is None or parsed.id != record.id or parsed.slug != record.slug:
            # the entry named an id or slug its file does not have: served as a draft until the
            # file is changed or the cache rewritten (it is never shown to the public)
            log.error("the records cache's entry of %s names a record its file does not hold (%s): served as a draft",
                      record.path, "; ".join(map(str, problems)) or "another id or slug")
            return {"id": record.id, "slug": record.slug, "status": "draft"}
        return parsed.data


_NONE_OR_INT = {type(None), int}


def _columns(snapshot: Snapshot, source: CachedRecords) -> dict:
    """The files of ``snapshot`` as the cache keeps them (see ``CachedFiles``)."""
    paths = sorted(snapshot.files)
    blobs, ids, slugs, present, pieces = [], [], [], bytearray(), []
    ends, total = array("Q"), 0
    problems, record_blobs = {}, {}
    for index, path in enumerate(paths):
        blob, packed, kept, rid, slug, record_blob = kept_entry(*snapshot.files[path], source)
        blobs.append(blob)
        ids.append(rid)
        slugs.append(slug)
        present.append(packed is not None)
        if packed is not None:
            pieces.append(packed)
            total += len(packed)
        ends.append(total)
        if kept:
            problems[index] = kept
        if record_blob is not None:
            record_blobs[index] = record_blob
    return {"paths": paths, "blobs": blobs, "ids": ids, "slugs": slugs, "present": bytes(present),
            "packed": b"".join(pieces), "ends": ends.tobytes(), "order": sys.byteorder,
            "problems": problems, "record_blobs": record_blobs}


def _write_texts(snapshot: Snapshot, files: dict, texts, path: Path, token: str, old: RecordTexts | None) -> None:
    """Write the texts of ``snapshot``'s records for the cache being written (``files``, its
    rows): a text the cache that was read holds is copied as it is where it still holds, the
    others are made by ``texts``' maker. A record whose dates are not the ones the cache keeps
    of its file gets none (its text would show other dates than the ones it is restored with)."""
    paths, present, packed = files["paths"], files["present"], files["packed"]
    ends = array("Q")
    ends.frombytes(files["ends"])
    maker = texts.maker(snapshot)
    if old is not None and old.context != texts.context:
        old = None
    made: dict[int, str | None] = {}
    failed: list[str] = []
    dictionary = old.dictionary if old is not None else None
    if dictionary is None:   # a sample of the texts, made first (and kept for their rows)
        sample = []
        for index in range(0, len(paths), max(1, len(paths) // record_texts.DICTIONARY_SAMPLE)):
            record = snapshot.files[paths[index]][1]
            text = made[index] = _made(maker, record, failed) if present[index] else None
            if text:
                sample.append(text)
        dictionary = TextsWriter.choose_dictionary(sample)
    with TextsWriter(path, token, texts.context, dictionary) as writer:
        file_dates = snapshot.file_dates
        for index, path_of in enumerate(paths):
            if not present[index]:
                writer.add(None, 0)
                continue
            record = snapshot.files[path_of][1]
            facts, history = file_dates.get(path_of), record.history
            packed_text = None
            if history is None or tuple(history) == tuple(facts or ()):
                row = record.cache_row
                if old is not None and row is not None:
                    packed_text = row[0].kept_packed_text(row[1], old, facts)
                if packed_text is None:
                    text = made.pop(index) if index in made else _made(maker, record, failed)
                    if text:
                        packed_text = writer.pack(text)
            writer.add(packed_text, record_texts.checksum(packed[ends[index - 1] if index else 0:ends[index]]))
        writer.finish()
    if old is not None:
        old.forget_pages()
    if len(failed) > 1:
        log.warning("no text of %d more records for the records cache", len(failed) - 1)


def _made(maker, record: Record, failed: list) -> str | None:
    """``maker``'s text of ``record``; None when it makes none or fails (the first failure of a
    write logged, the others counted in ``failed``: those records are made per request)."""
    try:
        return maker(record)
    except Exception:
        if not failed:
            log.exception("no text of %s for the records cache", record.path)
        failed.append(record.path)
        return None


def _check_maps(claims: dict, derived: dict) -> None:
    """ValueError unless the cache's claimed ids and derived reference maps have the shapes the
    cache writer gives them (claimed ids are integers, reference maps hold each term's bitmap as
    its portable bytes; what the bitmaps hold is not looked at here: the snapshot deserializes
    them and drops the maps whole if one does not read)."""
    if not all(type(value) is int for value in claims.values()):
        raise ValueError("a claimed id that is not an integer")
    for name in ("refs", "published"):
        maps = derived.get(name)
        if maps is None:
            continue
        if type(maps) is not dict or not all(type(value) is bytes for value in maps.values()):
            raise ValueError(f"the reference map {name!r} is not one the cache writer writes")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (this machine's: the cache sits beside its index)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's process
        return True
    return True


class RecordsCacheFile:
    """Reads and writes the cache file ``path`` for one catalog; ``source`` makes the data of
    the records restored from it (and packs records for it)."""

    def __init__(self, path: Path | None, source: CachedRecords):
        self.path = Path(path) if path else None
        self._source = source

    def read(self) -> dict:
        """The cache file's content (``files``: the files by column, ``CachedFiles``;
        ``dictionary``: what the data was packed against; with
        ``commit``, ``dates``, ``claims`` and ``derived``: the whole snapshot of that commit); {}
        when unusable."""
        if self.path is None:
            return {}
        try:
            with open(self.path, "rb") as handle:
                cached = _CacheUnpickler(io.BufferedReader(handle)).load()
            if not isinstance(cached, dict) or cached.get("version") != cache_version():
                return {}   # another version's (or no) cache: nothing to say, it is rewritten
            if not isinstance(cached.get("files"), dict) or type(cached.get("dictionary")) is not bytes:
                raise ValueError("not the layout this code writes")
            cached["files"] = CachedFiles(cached["files"], self._source)
            # the records packed against it are made again as they are used: kept for good
            if self._source.dictionary is None:
                self._source.dictionary = cached["dictionary"]
            if self._source.dictionary == cached["dictionary"]:
                texts = RecordTexts.open(record_texts.texts_path(self.path), cached.get("texts_token"))
                cached["files"].column.texts = self._source.texts = texts
                return cached
        except FileNotFoundError:
            pass
        except Exception as exc:  # derived data: a broken cache only costs a full parse
            log.warning("ignoring the records cache %s (%s)", self.path, exc)
        return {}

    def write(self, snapshot: "Snapshot", texts=None) -> None:
        """Save the snapshot of one commit (best effort: a failure is only logged): its parsed
        records by path and blob, the files' git dates, the ids unreadable files claim and the
        maps derived from the records, so that a start at that commit (or one a few files away
        from it) neither parses, lists the tree, reads the history nor builds the maps again.
        With ``texts`` (``context``, and ``maker(snapshot)``: a function of a record giving its
        text or None), the records' texts are written beside it first (``storage.record_texts``)."""
        source = self._source
        source.choose_dictionary(snapshot)
        # in path order: a start sorts the paths it restores, and a sorted list sorts in one pass
        files = _columns(snapshot, source)
        dates = FileDateColumns.columns(snapshot.file_dates, files["paths"])
        tmp = None
        token = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._remove_orphans()
            if texts is not None:
                token = secrets.token_hex(16)
                _write_texts(snapshot, files, texts, record_texts.texts_path(self.path), token, source.texts)
            # a name of this writer's own (another process or thread may be writing one too)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "wb") as handle:
                pickle.dump({"version": cache_version(), "commit": snapshot.commit, "dictionary": source.dictionary,
                             "files": files, "dates": dates, "texts_token": token,
                             "claims": dict(snapshot.claims), "retired": dict(snapshot.retired),
                             "derived": snapshot.derived(),
                             "stale": {path: tuple(found) for path, found in snapshot.stale.items()}}, handle,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except Exception as exc:
            log.warning("could not write the records cache (%s)", exc)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _remove_orphans(self) -> None:
        """Delete the temporary files of writers whose process has ended (a worker stopped while
        its thread wrote the cache leaves one as large as the cache: hundreds of MB at 1,000,000
        events). A live process's file is its writer's to finish."""
        for found in self.path.parent.glob(f"{self.path.name}.*.*.tmp"):
            pid = found.name[:-len(".tmp")].rsplit(".", 2)[-2]   # (the texts' writers' too)
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    found.unlink()
                    log.info("removed %s, left by a records cache writer that ended", found.name)

    def restore(self, cached: dict, entry_order) -> Snapshot | None:
        """The snapshot of the cache's commit from the cache alone (no git), or None when the
        cache does not hold a whole snapshot, or holds something no cache writer writes (a
        tampered or corrupt file: logged, and nothing of it is used). ``entry_order(commit,
        paths)`` ranks the files that claim one id (see ``catalog.entry_order``)."""
        commit, dates, claims, derived = (cached.get(key) for key in ("commit", "dates", "claims", "derived"))
        retired = cached.get("retired")
        if not (isinstance(commit, str) and type(dates) is dict and isinstance(claims, dict)
                and isinstance(derived, dict) and isinstance(retired, dict)):
            return None
        if not all(type(space) is str and type(rid) is int for space, rid in retired.items()):
            log.warning("ignoring the records cache %s (its retired ids are not ids)", self.path)
            cached.clear()
            return None
        try:
            _check_maps(claims, derived)
            dates = FileDateColumns(dates, cached["files"])
            files, grouped = cached["files"].restored(dates)
            stale = {path: Stale(*found) for path, found in (cached.get("stale") or {}).items()}
            if not all(type(path) is str and files.get(path, (None, None))[1] is not None
                       and type(found.line) is int and all(type(v) is str for v in found[2:])
                       for path, found in stale.items()):
                raise ValueError("a stale file that is not one the cache writer writes")
            file_dates = dates   # (changed, added, email, once) as FileDates has them, given as plain tuples
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            log.warning("ignoring the records cache %s (%s: %s)", self.path, type(exc).__name__, exc)
            cached.clear()   # written by no cache writer: none of its entries is used either
            return None

        seniority = functools.partial(entry_order, commit)
        snapshot = Snapshot(commit, files, seniority=seniority, claims=claims, restored=derived, grouped=grouped)
        snapshot.file_dates = file_dates
        snapshot.stale = stale
        snapshot.retired = retired
        return snapshot

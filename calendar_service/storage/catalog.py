"""The records of the branch head, parsed and held in memory, following the branch as it moves.

``Catalog.current()`` checks the branch head (a file read) and, when
it moved, builds the next snapshot from the previous one, reading and re-indexing only
the files that changed. Files are read from git objects, never from the working tree, so
a reader sees committed content only and never a half-written file.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import logging
import os
import pickle
import threading
import time
import zlib
from operator import itemgetter
from pathlib import Path

from calendar_service.domain import records
from calendar_service.domain.layered import Layered
from calendar_service.domain.records import Problem, Record
from calendar_service.domain.resources import EVENTS, RESOURCES
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.grouping import GROUP_LIMIT
from calendar_service.storage.history import FileDates
from calendar_service.storage.objects import blob_sha
from calendar_service.storage.store import GitStore, StoreError

log = logging.getLogger(__name__)

CACHE_MIN_FILES = 2000   # below this, parsing at start is quick enough
CACHE_STALE_SHARE = 10   # rewrite the cache when more than 1/10 of the files changed since its commit
# A start derives from the cache's commit by reading the history since (the changed files' dates:
# a ``git log`` of ~50 ms per commit at 100,000 files), so a running catalog writes the cache again
# after this many new heads, at most once in CACHE_REFRESH_SECONDS (a write of the cache at 100,000
# files is ~2 s of CPU in a thread beside the requests), and a start that spent this long catching
# up writes it at once.
CACHE_REFRESH_HEADS = 100
CACHE_REFRESH_SECONDS = 300.0
CACHE_SLOW_CATCH_UP = 1.0   # seconds
PAST_SNAPSHOTS = 4       # snapshots of commits other than the head kept for ``Catalog.at``
WRITTEN_SNAPSHOTS = GROUP_LIMIT + 1   # snapshots of commits written here, not yet on the branch
# the modules that decide what the cache holds (a parsed record; the snapshot's maps kept with
# the records): a cache written by other code is ignored
CACHED_MODULES = ("record.py", "records.py", "resources.py", "dates.py", "snapshot.py")
# the layout of the cache file (a whole snapshot per commit, each record's data as its own pickle):
# part of its version, so that code expecting another layout ignores it
CACHE_FORMAT = b"snapshot-3"
DICTIONARY_SAMPLE = 60          # records sampled for the preset dictionary of packed records
DICTIONARY_BYTES = 8192         # its length: longer ones pack a little smaller but cost more per record
MAX_RECORD_BYTES = 16 << 20     # a packed record inflating beyond this is not one the cache writer wrote


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for a bulk load (a records cache makes a few
    million containers, none of them garbage: each collection the allocations trigger would walk
    them all again, which more than doubled the time of a cold start at 100,000 records). It is
    enabled again on leaving, unless it was disabled already."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_directory(root) -> Snapshot:
    """The records of the files in a directory's working tree (not git), as the service would
    load them: each file parsed by ``records.parse``, ids and slugs checked by the snapshot.
    Files in the content folders that the service does not read are reported as warnings."""
    root = Path(root)
    files: dict = {}
    for folder in RESOURCES:
        base = root / folder
        if not base.is_dir():
            continue
        for file in sorted(base.rglob("*")):
            if not file.is_file() or file.name.startswith("."):
                continue
            path = file.relative_to(root).as_posix()
            if records.resource_of_path(path) is None:
                files[path] = ("", None, (Problem(path, 1, "not read by the service (wrong folder or extension)",
                                                  "warning"),))
                continue
            raw = file.read_bytes()
            record, problems = records.parse(path, raw)
            if record is not None:
                record.blob = blob_sha(raw)
            files[path] = (record.blob if record else blob_sha(raw), record, tuple(problems))
    return Snapshot(None, files)


@functools.cache
def cache_version() -> str:
    """A hash of the code that parses record files and derives the snapshot's maps, computed
    once when first needed."""
    digest = hashlib.sha1(CACHE_FORMAT)
    for name in CACHED_MODULES:
        digest.update((Path(records.__file__).parent / name).read_bytes())
    return digest.hexdigest()


def __getattr__(name: str):
    # ``CACHE_VERSION`` is computed lazily: importing this module reads no files
    if name == "CACHE_VERSION":
        return cache_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CacheUnpickler(pickle.Unpickler):
    """Plain data only (YAML may give dates and times), whatever the file holds."""

    ALLOWED = {("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"), ("datetime", "timezone"),
               ("datetime", "timedelta")}

    def find_class(self, module, name):
        """The allowed class; raises UnpicklingError for anything else."""
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the records cache")


def _entry(path, blob, packed, problems, rid, slug, facts, source) -> tuple:
    """(blob, record or None, problems) of one cached file, checked to have the shape the cache
    writer gives it (ValueError or TypeError otherwise): a record's resource is the one of its
    path's folder, whatever the entry names. The record is packed: its data is read from
    ``packed`` when first used (``source`` checks it then, see ``CachedRecords``)."""
    if type(path) is not str or type(blob) is not str:
        raise ValueError(f"an entry of {path!r} that no cache writer writes")
    record = None
    if packed is not None:
        resource = RESOURCES.get(path[:path.find("/")])
        if resource is None or type(packed) is not bytes or type(slug) is not str or not (rid is None or type(rid) is int):
            raise ValueError(f"the cached record of {path!r} is not one the cache writer writes")
        # events are forgotten beyond RECENT_RECORDS; the rest are few and their lists read them all
        record = Record.packed(resource, path, blob, rid, slug, packed, facts if resource.kind == "post" else None, source,
                               held=resource is not EVENTS)
    return blob, record, tuple(Problem(*p) for p in problems) if problems else ()


def _cache_entry(blob: str, record: Record | None, problems, source: "CachedRecords") -> tuple:
    """What the cache keeps of one file (see ``_entry``)."""
    kept = tuple((p.path, p.line, p.message, p.severity) for p in problems)
    if record is None:
        return blob, None, kept, None, None, None
    packed = record.packed_data
    if packed is None:
        packed = source.pack(record.file_data())
    return blob, packed, kept, record.resource.name, record.id, record.slug


class CachedRecords:
    """Packs records for the cache, and makes the data of the records restored from it when each
    is first used: its bytes inflated and read back (plain data only), history dates filled in.
    Bytes that do not read back as the record the entry named (a tampered or damaged cache) are
    logged and the file is read from git instead: the answer is the one a start without a cache
    gives.

    Each record is its own zlib stream against one preset dictionary (a sample of records, kept
    in the cache file): ~190 bytes per event against ~780 pickled alone and ~1,800 as a dict,
    ~8 µs to make again. A catalog keeps the dictionary of the cache it read, so a packed record
    is written back as it is."""

    def __init__(self, store: GitStore, author_of=None):
        self.store = store
        self.author_of = author_of
        self.dictionary: bytes | None = None

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
        filled = records.fill_history(data, *facts, author_of=self.author_of) if facts is not None else None
        return data, filled

    def _from_git(self, record: Record) -> dict:
        raw = self.store.read_blobs([record.blob]).get(record.blob)
        parsed, problems = records.parse(record.path, raw) if raw is not None else (None, [])
        if parsed is None or parsed.id != record.id or parsed.slug != record.slug:
            # the entry named an id or slug its file does not have: served as a draft until the
            # file is changed or the cache rewritten (it is never shown to the public)
            log.error("the records cache's entry of %s names a record its file does not hold (%s): served as a draft",
                      record.path, "; ".join(map(str, problems)) or "another id or slug")
            return {"id": record.id, "slug": record.slug, "status": "draft"}
        return parsed.data


def _check_maps(claims: dict, derived: dict, dates: dict) -> None:
    """ValueError unless the cache's claimed ids, file dates and derived reference maps have the
    shapes the cache writer gives them (claimed ids are integers, dates 4-tuples, reference maps
    hold each term's bitmap as its portable bytes; what the bitmaps hold is not looked at here:
    the snapshot deserializes them and drops the maps whole if one does not read)."""
    if not all(type(value) is int for value in claims.values()):
        raise ValueError("a claimed id that is not an integer")
    facts = list(dates.values())
    # one pass in C per check (a generator over 100,000 entries took ~70 ms of a start)
    if facts and not (set(map(type, facts)) == {tuple} and set(map(len, facts)) == {4}
                      and all(set(map(type, map(itemgetter(i), facts))) == {kind}
                              for i, kind in enumerate((int, int, str, bool)))):
        raise ValueError("file dates that are not (changed, added, e-mail, once)")
    for name in ("refs", "published"):
        maps = derived.get(name)
        if maps is None:
            continue
        if type(maps) is not dict or not all(type(value) is bytes for value in maps.values()):
            raise ValueError(f"the reference map {name!r} is not one the cache writer writes")


def entry_order(store: GitStore, head: str, paths) -> dict[str, int]:
    """path -> rank (0 first) of the order in which ``paths`` entered the history of ``head``,
    for deciding which of several files claiming one id keeps it. A file added by an ancestor
    of the commit that added another entered first. Files added side by side (on branches
    merged later) are ordered: first what the service committed (a write it confirmed to a
    client), then by commit time, then by path."""
    added = store.added_by(head, paths)
    service = store.committer[1]

    def compare(a: str, b: str) -> int:
        (ca, ea, ta), (cb, eb, tb) = added.get(a, ("", "", 0)), added.get(b, ("", "", 0))
        if ca and cb and ca != cb:
            if store.is_ancestor(ca, cb):
                return -1
            if store.is_ancestor(cb, ca):
                return 1
        key_a, key_b = (ea != service, ta, a), (eb != service, tb, b)
        return -1 if key_a < key_b else 1 if key_a > key_b else 0

    return {path: rank for rank, path in enumerate(sorted(paths, key=functools.cmp_to_key(compare)))}


class Catalog:
    """Keeps the snapshot of the branch head, refreshing it incrementally when the head moves.

    With ``cache_file`` (derived data, in the index folder, safe to delete) the parsed
    records of the last full load are kept on disk by path and blob id, so a restart parses
    only files that changed since.
    """

    def __init__(self, store: GitStore, cache_file: Path | None = None, author_of=None):
        self.store = store
        self.author_of = author_of  # e-mail -> account id or None: the author of a file written without one
        self.cache_file = Path(cache_file) if cache_file else None
        self._lock = threading.Lock()
        self._snapshot = Snapshot(None, {})
        self._past: dict[str, Snapshot] = {}
        self._written: dict[str, Snapshot] = {}   # see ``after_write``; oldest first
        self._heads_since_cache = 0   # heads this catalog advanced to since the cache was read or written
        self._cache_refreshed = time.monotonic()   # when the cache was last written (or this catalog made)
        self._cache_writing = threading.Lock()   # one background write of the cache at a time
        self._source = CachedRecords(store, author_of)   # makes the data of records restored from the cache

    def _read_cache(self) -> dict:
        """The cache file's content (``files``: path -> (blob, packed data or None, problems as
        tuples, resource name, id, slug); ``dictionary``: what the data was packed against; with
        ``commit``, ``dates``, ``claims`` and ``derived``: the whole snapshot of that commit); {}
        when unusable."""
        if self.cache_file is None:
            return {}
        try:
            with open(self.cache_file, "rb") as handle:
                cached = _CacheUnpickler(io.BufferedReader(handle)).load()
            if not isinstance(cached, dict) or cached.get("version") != cache_version():
                return {}   # another version's (or no) cache: nothing to say, it is rewritten
            if not isinstance(cached.get("files"), dict) or type(cached.get("dictionary")) is not bytes:
                raise ValueError("not the layout this code writes")
            # the records packed against it are made again as they are used: kept for good
            if self._source.dictionary is None:
                self._source.dictionary = cached["dictionary"]
            if self._source.dictionary == cached["dictionary"]:
                return cached
        except FileNotFoundError:
            pass
        except Exception as exc:  # derived data: a broken cache only costs a full parse
            log.warning("ignoring the records cache %s (%s)", self.cache_file, exc)
        return {}

    def _write_cache(self, snapshot: "Snapshot") -> None:
        """Save the snapshot of one commit (best effort: a failure is only logged): its parsed
        records by path and blob, the files' git dates, the ids unreadable files claim and the
        maps derived from the records, so that a start at that commit (or one a few files away
        from it) neither parses, lists the tree, reads the history nor builds the maps again."""
        source = self._source
        source.choose_dictionary(snapshot)
        # in path order: a start sorts the paths it restores, and a sorted list sorts in one pass
        files = {path: _cache_entry(*snapshot.files[path], source) for path in sorted(snapshot.files)}
        # keyed by the same path objects as ``files`` (pickle then writes each path once)
        paths = {path: path for path in files}
        dates = {paths.get(path, path): tuple(facts) for path, facts in snapshot.file_dates.items()}
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            # a name of this writer's own (another process or thread may be writing one too)
            tmp = self.cache_file.with_name(f"{self.cache_file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "wb") as handle:
                pickle.dump({"version": cache_version(), "commit": snapshot.commit, "dictionary": source.dictionary,
                             "files": files, "dates": dates,
                             "claims": dict(snapshot.claims), "derived": snapshot.derived()}, handle,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.cache_file)
        except Exception as exc:
            log.warning("could not write the records cache (%s)", exc)

    def _restore(self, cached: dict) -> Snapshot | None:
        """The snapshot of the cache's commit from the cache alone (no git), or None when the
        cache does not hold a whole snapshot, or holds something no cache writer writes (a
        tampered or corrupt file: logged, and nothing of it is used)."""
        commit, dates, claims, derived = (cached.get(key) for key in ("commit", "dates", "claims", "derived"))
        if not (isinstance(commit, str) and isinstance(dates, dict) and isinstance(claims, dict)
                and isinstance(derived, dict)):
            return None
        try:
            _check_maps(claims, derived, dates)
            source = self._source
            files = {path: _entry(path, blob, packed, problems, rid, slug, dates.get(path), source)
                     for path, (blob, packed, problems, _name, rid, slug) in cached["files"].items()}
            file_dates = dates   # (changed, added, email, once) as FileDates has them, kept as plain tuples
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            log.warning("ignoring the records cache %s (%s: %s)", self.cache_file, type(exc).__name__, exc)
            cached.clear()   # written by no cache writer: none of its entries is used either
            return None

        def seniority(paths):
            return entry_order(self.store, commit, paths)

        snapshot = Snapshot(commit, files, seniority=seniority, claims=claims, restored=derived)
        snapshot.file_dates = file_dates
        return snapshot

    def current(self) -> Snapshot:
        """The snapshot of the branch head as it is now."""
        head = self.store.head()
        snapshot = self._snapshot
        if head == snapshot.commit:
            return snapshot
        with self._lock:
            if self._snapshot.commit != head:
                starting = self._snapshot.commit is None   # a start reads or writes the cache itself
                written = None if starting else self._take_written(head)
                self._snapshot = written if written is not None else self._advance(self._snapshot, head)
                self._heads_since_cache = 0 if starting else self._heads_since_cache + 1
                if (self._heads_since_cache >= CACHE_REFRESH_HEADS
                        and time.monotonic() - self._cache_refreshed >= CACHE_REFRESH_SECONDS):
                    self._write_cache_later(self._snapshot)
            return self._snapshot

    def after_write(self, parent: Snapshot, commit: str) -> Snapshot:
        """The snapshot of ``commit``, just written here on ``parent``'s commit, derived from ``parent``;
        kept for ``current`` (once the branch is there) and ``at``: in a group commit
        (``storage.grouping``) writers build on commits not yet on the branch."""
        if commit == self._snapshot.commit:   # a reader got there first (the branch moved already)
            return self._snapshot
        snapshot = self._advance(parent, commit)
        with self._lock:
            while len(self._written) >= WRITTEN_SNAPSHOTS:
                self._written.pop(next(iter(self._written)))
            self._written[commit] = snapshot
        return snapshot

    def _take_written(self, head: str) -> Snapshot | None:
        """The snapshot ``after_write`` kept of ``head``, now the branch head, dropping those
        written before it (its ancestors, or commits of a group that was dropped). Holds _lock."""
        while head in self._written:
            commit = next(iter(self._written))
            snapshot = self._written.pop(commit)
            if commit == head:
                return snapshot
        return None

    def at(self, commit: str) -> Snapshot:
        """The snapshot of any ``commit``, derived from the current one by reading only the
        files that differ between the two (a few recent ones are kept)."""
        current = self.current()
        if commit == current.commit:
            return current
        with self._lock:
            past = self._written.get(commit, self._past.get(commit))
        if past is None:
            past = self._advance(current, commit)
            with self._lock:
                if len(self._past) >= PAST_SNAPSHOTS:
                    self._past.pop(next(iter(self._past)))
                self._past[commit] = past
        return past

    def _advance(self, previous: Snapshot, head: str | None) -> Snapshot:
        """The snapshot of ``head`` built from ``previous`` (reading only the files that differ),
        or from the records cache and a full listing when ``previous`` has no commit."""
        if head is None:
            return Snapshot(None, {})
        cached: dict = {}
        if previous.commit is None:
            with collector_paused():
                cached = self._read_cache()
                restored = self._restore(cached) if cached else None
            # what the load made goes out of the collector's sight in one freeze once the service
            # has started (``service.calendar.freeze_start_objects``: the maps and the index too)
            if restored is not None:
                if restored.commit == head:
                    return restored
                try:
                    return self._advance_from_cache(restored, head)
                except StoreError as exc:   # the cache's commit is gone (history rewritten, gc)
                    log.info("the records cache's commit is not usable (%s): loading every file", exc)
            changed = self.store.list_files(head)
            files: dict = {}
            claims: dict = {}
            if len(changed) < CACHE_MIN_FILES:
                cached = {}
        else:
            changed = self.store.changed_files(previous.commit, head)
            files = Layered.of(previous.files)   # the previous files shared, not copied
            claims = {path: i for path, i in previous.claims.items() if path not in changed}
        hits: set = set()
        if cached:
            cached_files = cached["files"]
            for path, blob in changed.items():
                entry = cached_files.get(path)
                if entry is None or entry[0] != blob:
                    continue
                try:
                    files[path] = _entry(path, blob, entry[1], entry[2], entry[4], entry[5], None, self._source)
                except (TypeError, ValueError, IndexError) as exc:
                    log.warning("ignoring the records cache's entry of %s (%s)", path, exc)
                    continue
                hits.add(path)
        contents = self.store.read_blobs(sha for path, sha in changed.items() if sha and path not in hits)
        for path, blob in changed.items():
            if blob is None:
                files.pop(path, None)
                continue
            if path in hits or records.resource_of_path(path) is None:
                continue
            raw = contents.get(blob)
            record, problems = records.parse(path, raw) if raw is not None else (None, [Problem(path, 1, "unreadable")])
            if record is not None:
                record.blob = blob
            elif raw is not None and records.claimed_id(raw) is not None:
                claims[path] = records.claimed_id(raw)
            for problem in problems:
                if problem.severity == "error":
                    log.warning("skipping %s", problem)
            files[path] = (blob, record, tuple(problems))
        file_dates = self._file_dates(previous, head, changed)
        for path, blob in changed.items():
            entry = files.get(path) if blob is not None else None
            facts = file_dates.get(path)
            if entry is not None and entry[1] is not None and facts is not None:
                records.apply_history(entry[1], *facts, author_of=self.author_of)

        def seniority(paths):
            return entry_order(self.store, head, paths)

        if previous.commit is None:
            snapshot = Snapshot(head, files, seniority=seniority, claims=claims)
            snapshot.file_dates = file_dates
            # no whole snapshot in the cache (none, an older format, its commit gone): keep this one
            if len(changed) >= CACHE_MIN_FILES:
                self._write_cache_later(snapshot)
            return snapshot
        snapshot = Snapshot(head, files, previous, set(changed), seniority=seniority, claims=claims)
        snapshot.file_dates = file_dates
        return snapshot

    def _advance_from_cache(self, restored: Snapshot, head: str) -> Snapshot:
        """The snapshot of ``head`` derived from the cache's (the files changed since read); the
        cache is written again for ``head`` when many files changed or catching up took long."""
        started = time.monotonic()
        snapshot = self._advance(restored, head)
        changed = len(snapshot.changed_since[1]) if snapshot.changed_since else len(snapshot.files)
        if changed > len(snapshot.files) // CACHE_STALE_SHARE or time.monotonic() - started > CACHE_SLOW_CATCH_UP:
            self._write_cache_later(snapshot)
        return snapshot

    def _write_cache_later(self, snapshot: Snapshot) -> None:
        """Write the cache for ``snapshot`` in a background thread, unless one is writing already."""
        if self.cache_file is None or not self._cache_writing.acquire(blocking=False):
            return
        self._heads_since_cache = 0
        self._cache_refreshed = time.monotonic()

        def write():
            try:
                self._write_cache(snapshot)
            finally:
                self._cache_writing.release()
        threading.Thread(target=write, name="calendar-records-cache", daemon=True).start()

    def _file_dates(self, previous: Snapshot, head: str, changed: dict) -> dict:
        """path -> FileDates of every file at ``head``, derived from ``previous``'s for the paths
        that did not change: one ``git log`` of the content folders at a cold start; after that
        only the commits between the two heads are looked at (none read when ``head`` is one
        commit on top of ``previous``, as after an API write)."""
        if previous.commit is None:
            return self.store.change_dates(head)
        before = previous.file_dates
        dates = Layered.of(before)   # the previous dates shared, not copied: the few changed paths out
        for path in changed:
            dates.pop(path, None)
        present = [path for path, blob in changed.items() if blob is not None]
        if not present:
            return dates
        facts = self.store.commit_facts(head)
        if facts is not None and facts[0] == [previous.commit]:
            _, when, email = facts
            found = {path: FileDates(when, when, email, True) for path in present}
        else:
            found = self.store.change_dates(head, since=previous.commit, paths=present)
            missing = [path for path in present if path not in found]
            if missing:  # the head is not ahead of the previous one (an older commit, rewritten history)
                found.update(self.store.change_dates(head, paths=missing))
                for path in missing:
                    if path in found:
                        dates[path] = found.pop(path)
        for path, new in found.items():
            old = before.get(path)
            # ``old`` may be a plain tuple (a snapshot restored from the cache): read by position
            dates[path] = new if old is None or path not in previous.files else FileDates(new.changed, old[1], old[2], False)
        return dates

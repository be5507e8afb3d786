"""The records of the branch head, parsed and held in memory, following the branch as it moves.

``Catalog.current()`` checks the branch head (a file read) and, when
it moved, builds the next snapshot from the previous one, reading and re-indexing only
the files that changed. Files are read from git objects, never from the working tree, so
a reader sees committed content only and never a half-written file.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import gc
import logging
import threading
import time
from pathlib import Path

from calendar_service.domain import file_limits, record_files
from calendar_service.domain.layered import Layered
from calendar_service.domain.record import apply_history
from calendar_service.domain.record_files import FileProblem
from calendar_service.domain.resources import RESOURCES
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.grouping import GROUP_LIMIT
from calendar_service.storage.history import FileDates
from calendar_service.storage.last_good import LAST_GOOD_COMMITS, LAST_GOOD_FILES, LAST_GOOD_VERSIONS, LastGood, read_file
from calendar_service.storage.objects import blob_sha
from calendar_service.storage.records_cache import CachedRecords, RecordsCacheFile
from calendar_service.storage.store import GitStore, StoreError

log = logging.getLogger(__name__)

CACHE_MIN_FILES = 2000   # below this, parsing at start is quick enough
CACHE_STALE_SHARE = 10   # rewrite the cache when more than 1/10 of the files changed since its commit
# A start derives from the cache's commit by reading the history since (the changed files' dates:
# a ``git log`` whose cost grows with the commits since), so a running catalog writes the cache again
# after this many new heads, at most once in CACHE_REFRESH_SECONDS (a write of the cache of a big
# calendar is seconds of CPU in a thread beside the requests), and a start that spent this long
# catching up writes it at once.
CACHE_REFRESH_HEADS = 100
CACHE_REFRESH_SECONDS = 300.0
CACHE_SLOW_CATCH_UP = 1.0   # seconds
# Once no new head came for this long, a catalog whose snapshot is past the cache's commit writes
# the cache again (at most once per CACHE_REFRESH_SECONDS): a restart after a burst of writes then
# starts at its head instead of catching up with every commit of the burst.
CACHE_QUIET_SECONDS = 30.0
SKIPS_LOGGED = 20        # files skipped with errors logged one by one per new head; the rest counted
NOT_READ = "not read by the service (wrong folder or extension)"
PAST_SNAPSHOTS = 4       # snapshots of commits other than the head kept for ``Catalog.at``
WRITTEN_SNAPSHOTS = GROUP_LIMIT + 1   # snapshots of commits written here, not yet on the branch


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for a bulk load (a records cache makes a few
    million containers, none of them garbage: each collection the allocations trigger would walk
    them all again, the biggest part of a cold start of a big calendar). It is enabled again on
    leaving, unless it was disabled already."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _reused(reuse: Snapshot | None, path: str, blob: str):
    """The parsed entry of ``path`` in ``reuse`` when it holds the same blob there (no parse)."""
    entry = reuse.files.get(path) if reuse is not None else None
    return entry if entry is not None and entry[0] == blob and path not in reuse.stale else None


def load_directory(root, reuse: Snapshot | None = None) -> Snapshot:
    """The records of the files in a directory's working tree (not git), as the service would
    load them: each file parsed by ``records.parse``, ids and slugs checked by the snapshot.
    Files in the content folders that the service does not read are reported as warnings.
    A file with the same content at the same path in ``reuse`` takes that snapshot's parse."""
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
            if record_files.resource_of_path(path) is None:
                files[path] = ("", None, (FileProblem(path, 1, NOT_READ, "warning"),))
                continue
            size = file.stat().st_size
            if size > file_limits.LIMITS.file_bytes:   # not read: it could be any size
                files[path] = ("", None, (record_files.size_problem(path, size),))
                continue
            raw = file.read_bytes()
            same = _reused(reuse, path, blob_sha(raw))
            if same is not None:
                files[path] = same
                continue
            record, problems = record_files.parse(path, raw)
            if record is not None:
                record.blob = blob_sha(raw)
            files[path] = (record.blob if record else blob_sha(raw), record, tuple(problems))
    return Snapshot(None, files)


def load_commit(store, commit: str, reuse: Snapshot | None = None) -> Snapshot:
    """The records of ``commit`` as the service would load them, read from git objects without
    the service's caches (for tools working in a clone; ``store``: a GitStore or a CommitLog):
    every content file parsed, files over
    the size limit never read; a file with the same blob at the same path in ``reuse`` takes that
    snapshot's parse."""
    listed = store.list_files(commit)
    files: dict = {}
    unread: dict[str, list[str]] = {}
    for path, blob in listed.items():
        if record_files.resource_of_path(path) is None:
            files[path] = ("", None, (FileProblem(path, 1, NOT_READ, "warning"),))
        elif (same := _reused(reuse, path, blob)) is not None:
            files[path] = same
        else:
            unread.setdefault(blob, []).append(path)
    for sizes, contents in store.read_files(list(unread), file_limits.LIMITS.file_bytes):
        for blob, size in sizes.items():
            for path in unread[blob]:
                if blob not in contents:
                    files[path] = ("", None, (record_files.size_problem(path, size),))
                    continue
                record, problems = record_files.parse(path, contents[blob])
                if record is not None:
                    record.blob = blob
                files[path] = (blob, record, tuple(problems))
    return Snapshot(commit, files)


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


def retired_after(previous: Snapshot, changed) -> dict:
    """``previous.retired`` with the ids ``previous``'s files at the ``changed`` paths held (a
    deleted file's, or the old id of a file whose id changed; an id still held counts too: it is
    below the next id anyway)."""
    retired = dict(previous.retired)
    for path in changed:
        entry = previous.files.get(path)
        rid = getattr(entry[1], "id", None) if entry is not None and entry[1] is not None else previous.claims.get(path)
        resource = record_files.resource_of_path(path)
        if resource is not None and type(rid) is int and rid > retired.get(resource.id_space, 0):
            retired[resource.id_space] = rid
    return retired


def _try_lock(path: Path):
    """An exclusive lock on ``path`` (an open file: closing it releases it), or None when another
    process holds it."""
    try:
        handle = open(path, "a")
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


class Catalog:
    """Keeps the snapshot of the branch head, refreshing it incrementally when the head moves.

    With ``cache_file`` (derived data, in the index folder, safe to delete) the parsed
    records of the last full load are kept on disk by path and blob id, so a restart parses
    only files that changed since.
    """

    def __init__(self, store: GitStore, cache_file: Path | None = None, author_of=None,
                 last_good: tuple[int, int, int] = (LAST_GOOD_FILES, LAST_GOOD_VERSIONS, LAST_GOOD_COMMITS)):
        self.store = store
        self._last_good = LastGood(store, author_of, *last_good)   # serves broken files' last good versions
        self.author_of = author_of  # e-mail -> account id or None: the author of a file written without one
        self.cache_file = Path(cache_file) if cache_file else None
        self._lock = threading.Lock()
        self._snapshot = Snapshot(None, {})
        self._past: dict[str, Snapshot] = {}
        self._written: dict[str, Snapshot] = {}   # see ``after_write``; oldest first
        self._heads_since_cache = 0   # heads this catalog advanced to since the cache was read or written
        self._cache_refreshed = time.monotonic()   # when the cache was last written (or this catalog made)
        self._head_moved_at = time.monotonic()   # when this catalog last advanced to a new head
        self._cache_commit: str | None = None   # the commit of the cache this catalog read or last wrote
        self._cache_writing = threading.Lock()   # one background write of the cache at a time
        self._source = CachedRecords(store, author_of)   # makes the data of records restored from the cache
        self._cache = RecordsCacheFile(self.cache_file, self._source)
        # what makes the records' texts written beside the cache (``storage.record_texts``), and
        # the context of the texts of the cache this catalog read or wrote (None: none)
        self.kept_texts = None
        self._texts_context: str | None = None

    def adopt(self, loaded: "Catalog") -> bool:
        """Start from the snapshot ``loaded`` holds (the same repository, loaded by the serving
        master before it forked this worker: ``service.build.preload``) rather than from the
        records cache: the worker shares those pages with its siblings until it changes them,
        and advances from that commit as from any other. ``loaded``'s objects (the source its
        restored records make their data with, the store its snapshot asks for seniority) are
        pointed at this catalog's store, so the worker never uses the master's. False when there
        is nothing to adopt (this catalog loaded already, or ``loaded`` holds no commit)."""
        snapshot = loaded._snapshot
        with self._lock:
            if self._snapshot.commit is not None or snapshot.commit is None:
                return False
            loaded.store = loaded._source.store = self.store
            loaded.author_of = loaded._source.author_of = self.author_of
            self._source = loaded._source
            self._cache_commit = loaded._cache_commit
            self._texts_context = loaded._texts_context
            self._cache = RecordsCacheFile(self.cache_file, self._source)
            self._snapshot = snapshot
        return True

    @property
    def current_commit(self) -> str | None:
        """The commit of the snapshot held now (no look at the branch)."""
        return self._snapshot.commit

    def refresh_cache_when_quiet(self) -> bool:
        """Write the records cache for the snapshot held, in the background, when no new head
        came for CACHE_QUIET_SECONDS and either it is past the cache's commit and the last write
        is CACHE_REFRESH_SECONDS old (the refresh by heads only looks when a head comes: after a
        burst of writes the cache stayed behind until the next one), or the cache has no texts
        of this catalog's ``kept_texts`` (one written by a command, or by other code). Only a
        calendar large enough to have a cache (CACHE_MIN_FILES). Called by the follower thread
        while the head does not move, never by a read. Returns whether a write was started."""
        now = time.monotonic()
        with self._lock:
            snapshot = self._snapshot
            behind = snapshot.commit != self._cache_commit and now - self._cache_refreshed >= CACHE_REFRESH_SECONDS
            textless = self.kept_texts is not None and self._texts_context != self.kept_texts.context
            if (self.cache_file is None or snapshot.commit is None or not (behind or textless)
                    or len(snapshot.files) < CACHE_MIN_FILES
                    or now - self._head_moved_at < CACHE_QUIET_SECONDS):
                return False
            # the other workers of the service follow the same branch: one of them writes it
            try:
                written = self.cache_file.stat().st_mtime
            except OSError:
                written = 0.0
            if written >= time.time() - (now - self._head_moved_at):   # since this catalog's last head
                self._cache_commit = snapshot.commit
                self._texts_context = self.kept_texts.context if self.kept_texts else None   # (by a process of this service)
                return False
        lock = _try_lock(self.cache_file.with_name(self.cache_file.name + ".lock"))
        if lock is None:   # another process is writing it now
            return False
        return self._write_cache_later(snapshot, release=lock.close)

    def wait_for_cache(self) -> None:
        """Return once no background write of the records cache runs (before a fork: a thread
        does not go with it, and its lock would stay taken in the child)."""
        with self._cache_writing:
            pass

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
                self._head_moved_at = time.monotonic()
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
                cached = self._cache.read()
                restored = self._cache.restore(cached, functools.partial(entry_order, self.store)) if cached else None
            self._cache_commit = restored.commit if restored is not None else None
            self._texts_context = self._source.texts.context if self._source.texts is not None else None
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
        broken: dict = {}   # path -> (raw, problems) of changed files that do not parse
        if cached:
            cached_files = cached["files"]
            for path, blob in changed.items():
                try:   # (not a last good version: that is looked up again in this history)
                    entry = cached_files.entry(path, blob)
                except (TypeError, ValueError, IndexError) as exc:
                    log.warning("ignoring the records cache's entry of %s (%s)", path, exc)
                    continue
                if entry is not None:
                    files[path] = entry
                    hits.add(path)
        to_read: dict = {}
        for path, blob in changed.items():
            if blob is None:
                files.pop(path, None)
            elif path in hits:
                continue
            elif record_files.resource_of_path(path) is not None:
                to_read.setdefault(blob, []).append(path)
            elif path.partition("/")[0] in RESOURCES and not path.rsplit("/", 1)[-1].startswith("."):
                # in a content folder but not a record file (another extension, a folder the layout
                # does not have): never read, but shown to operators as ``validate`` shows it
                files[path] = (blob, None, (FileProblem(path, 1, NOT_READ, "warning"),))
        limit = file_limits.LIMITS.file_bytes
        skipped = 0
        for sizes, contents in self.store.read_files(to_read, limit):
            for blob in sizes:
                raw = contents.get(blob)
                for path in to_read[blob]:
                    if sizes[blob] > limit:   # never read: it could be any size
                        record, problems = None, [record_files.size_problem(path, sizes[blob])]
                    else:
                        record, problems = read_file(path, raw)
                    skipped += self._enter(files, claims, path, blob, raw, record, problems, skipped)
                    if record is None and any(p.severity == "error" for p in problems):
                        broken[path] = problems
        for blob, paths in to_read.items():   # blobs git does not have (none in a sound repository)
            for path in paths:
                if path not in files or files[path][0] != blob:
                    files[path] = (blob, None, (FileProblem(path, 1, "unreadable"),))
        if skipped > SKIPS_LOGGED:
            log.warning("skipping %d more files with errors (see /status)", skipped - SKIPS_LOGGED)
        file_dates = self._file_dates(previous, head, changed)
        stale = {path: found for path, found in previous.stale.items() if path not in changed}
        kept_good = self._last_good.keep(previous, head, broken, files, file_dates, stale, claims) if broken else set()
        for path, blob in changed.items():
            if path in kept_good:
                continue
            entry = files.get(path) if blob is not None else None
            facts = file_dates.get(path)
            if entry is not None and entry[1] is not None and facts is not None:
                apply_history(entry[1], *facts, author_of=self.author_of)

        def seniority(paths):
            return entry_order(self.store, head, paths)

        if previous.commit is None:
            snapshot = Snapshot(head, files, seniority=seniority, claims=claims)
            snapshot.file_dates = file_dates
            snapshot.stale = stale
            snapshot.retired = self._retired_at(head)
            # no whole snapshot in the cache (none, an older format, its commit gone): keep this one
            if len(changed) >= CACHE_MIN_FILES:
                self._write_cache_later(snapshot)
            return snapshot
        snapshot = Snapshot(head, files, previous, set(changed), seniority=seniority, claims=claims)
        snapshot.file_dates = file_dates
        snapshot.stale = stale
        snapshot.retired = retired_after(previous, changed)
        return snapshot

    @staticmethod
    def _enter(files, claims, path, blob, raw, record, problems, skipped: int) -> int:
        """Enter one read file in ``files`` (and the id an unreadable one writes in ``claims``);
        1 when it is skipped (an error), its first problems logged."""
        if record is not None:
            record.blob = blob
        elif raw is not None and record_files.claimed_id(raw) is not None:
            claims[path] = record_files.claimed_id(raw)
        errors = [problem for problem in problems if problem.severity == "error"]
        if errors and skipped < SKIPS_LOGGED:
            log.warning("skipping %s", errors[0])
        files[path] = (blob, record, tuple(problems))
        return 1 if errors else 0

    def _retired_at(self, head: str) -> dict:
        """id space -> the highest id a deleted file of the history up to ``head`` had (its ``id:``
        line read from its last blob, ``record_files.claimed_id``): a cold start's high-water mark,
        kept in the records cache and advanced per head by ``retired_after``."""
        deleted = self.store.deleted_blobs(head)
        retired: dict = {}
        if not deleted:
            return retired
        contents: dict = {}   # a blob over the size limit never parsed: its id line is not read
        for _, batch in self.store.read_files(set(deleted), file_limits.LIMITS.file_bytes):
            contents.update(batch)
        for blob, path in deleted.items():
            resource = record_files.resource_of_path(path)
            raw = contents.get(blob)
            rid = record_files.claimed_id(raw) if resource is not None and raw is not None else None
            if rid is not None and rid > retired.get(resource.id_space, 0):
                retired[resource.id_space] = rid
        return retired

    def _advance_from_cache(self, restored: Snapshot, head: str) -> Snapshot:
        """The snapshot of ``head`` derived from the cache's (the files changed since read); the
        cache is written again for ``head`` when many files changed or catching up took long."""
        started = time.monotonic()
        snapshot = self._advance(restored, head)
        changed = len(snapshot.changed_since[1]) if snapshot.changed_since else len(snapshot.files)
        if changed > len(snapshot.files) // CACHE_STALE_SHARE or time.monotonic() - started > CACHE_SLOW_CATCH_UP:
            self._write_cache_later(snapshot)
        return snapshot

    def _write_cache_later(self, snapshot: Snapshot, release=None) -> bool:
        """Write the cache for ``snapshot`` in a background thread, unless one is writing already
        (then False); ``release`` is called once the write is over (or not started)."""
        if self.cache_file is None or not self._cache_writing.acquire(blocking=False):
            if release is not None:
                release()
            return False
        self._heads_since_cache = 0
        self._cache_refreshed = time.monotonic()
        self._cache_commit = snapshot.commit
        maker = self.kept_texts
        self._texts_context = maker.context if maker is not None else None

        def write():
            try:
                self._cache.write(snapshot, maker)
            finally:
                self._cache_writing.release()
                if release is not None:
                    release()
        threading.Thread(target=write, name="calendar-records-cache", daemon=True).start()
        return True

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

"""The Whoosh index: derived data that answers event lists fast, always rebuildable from git.

The index records the commit it reflects (``STATE``). When the branch moves, ``sync``
applies only the files changed since that commit; a missing, stale, corrupt or
old-schema index is rebuilt (small repositories inline, large ones in a background
thread). One writer at a time across processes (a file lock); readers never wait: while
the index is behind the branch, lists are answered by scanning the snapshot, with the same
results.

Reading is built for speed: a searcher stays open until the index changes (``view``).
The parts: ``schema`` (what a document holds), ``view`` (one generation as the lists read
it), ``query`` (answering an event list), ``writer`` (Whoosh's writer with a speed fix);
this module keeps the index on disk in step with the branch.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from whoosh import index as whoosh_index
from whoosh.reading import ReaderClosed

from calendar_service.domain.resources import EVENTS
from calendar_service.index import base_file, building, generations, whoosh_internals
from calendar_service.index.query import events
from calendar_service.domain import occurrences
from calendar_service.domain.faults import FAULTS
from calendar_service.index.schema import (SCHEMA_VERSION, event_document, event_documents, make_schema,
                                           occurrence_entries, rid_of_path)
from calendar_service.index.view import BaseView, IndexView
from calendar_service.index.writer import open_rebuild_writer, open_writer
from calendar_service.domain.snapshot import Snapshot

__all__ = ["SearchIndex", "IndexView", "events", "event_document", "make_schema", "SCHEMA_VERSION"]

log = logging.getLogger(__name__)

INLINE_LIMIT = 500          # changes up to this many files are applied in the request that notices them
# A replaced generation may still be read by requests that began before; it is closed once it has
# been retired this long or this many newer ones have come (a closed reader raises ReaderClosed).
RETIRE_SECONDS = 10
MAX_RETIRED = 4
WRITER_TIMEOUT_SECONDS = 30  # how long an update waits for Whoosh's own write lock
BUILD_MEMORY_MB = 256        # Whoosh's posting pool for a full rebuild (more memory, fewer temporary runs)
# A generation derived from the previous one keeps its changed events apart (matched one by one):
# from REBASE_EXTRA documents on (what every list pays for), a new base is read from the index on
# disk in the background. The request reads it itself only past MAX_EXTRA changed FILES (what
# deriving a generation costs: a series' occurrences share its document, so an edit of a long
# series counts as one file), or past MAX_EXTRA_DOCS documents (lists would match too many one by one).
REBASE_EXTRA = 200
FOLLOW_DELAY_SECONDS = 0.1   # the index on disk follows a new generation after this pause
# Once the index on disk has not changed for KEEP_BASE_QUIET_SECONDS, a child process keeps the
# base of its generation in a file (``keep_base``), so that the next start loads it rather than
# reading Whoosh; not below KEEP_BASE_MIN_EVENTS events, where reading it costs a start little.
KEEP_BASE_QUIET_SECONDS = 30.0
KEEP_BASE_MIN_EVENTS = 50_000
KEEP_BASE_TIMEOUT_SECONDS = 900
FOLLOW_BUSY_SECONDS = 0.5    # and while writes keep coming, at most once per this long
MAX_EXTRA = 2000
MAX_EXTRA_DOCS = 50_000
# ``update_now`` rebuilds the whole index rather than apply changes to more than 1/REBUILD_SHARE of the events
REBUILD_SHARE = 4
PROGRESS_EVERY = 500         # a rebuild reports its progress every this many events
# the reasons for a full rebuild that are part of normal work (logged at INFO; any other, a warning)
EXPECTED = ("no index state", "index schema", "site time zone", "the index state names no commit",
            "asked for", "most events changed")


def import_searching() -> None:
    """Import the parts of Whoosh that a first search, list or reading of a base imports on its
    way (a serving master imports them once, so its workers share them: ``build.preload``)."""
    import whoosh.classify  # noqa: F401
    import whoosh.highlight  # noqa: F401
    import whoosh.lang.morph_en  # noqa: F401
    import whoosh.query  # noqa: F401
    import whoosh.scoring  # noqa: F401
    import whoosh.searching  # noqa: F401


def writers_leave_cycles() -> bool:
    """Whether opening an index writer leaves a reference cycle holding its caller's frames
    (Whoosh's own way of making its temporary folder: ``whoosh_internals.TEMP_FOLDERS``)."""
    return not whoosh_internals.in_use(whoosh_internals.TEMP_FOLDERS)


def changes_since(commit: str, snapshot: Snapshot, store) -> list[str] | None:
    """The event files changed from ``commit`` to ``snapshot``'s; None when not known cheaply
    or when ``snapshot`` is not a descendant of ``commit`` (a request still reading an older one)."""
    paths = snapshot.changed_after(commit)
    if paths is None:
        try:
            if not store.is_ancestor(commit, snapshot.commit):
                return None
            paths = store.changed_files(commit, snapshot.commit)
        except Exception:
            return None
    return [p for p in paths if p.startswith("events/")]


def _follow_loop(index: "SearchIndex") -> None:
    """The background thread of ``SearchIndex._follow``: sync to the newest snapshot asked for
    until none is waiting."""
    delay = FOLLOW_DELAY_SECONDS
    while True:
        # let the request that derived the generation finish first (the index writer would share
        # the interpreter with it), and take the writes that follow at once in one sync; while
        # writes keep coming, one sync per FOLLOW_BUSY_SECONDS (lists read the changes from the
        # snapshots meanwhile: the index on disk is what a new base and a start read)
        time.sleep(delay)
        delay = FOLLOW_BUSY_SECONDS
        with index._lock:
            wanted, index._wanted = index._wanted, None
            if wanted is None:
                index._following = False
                return
        try:
            index._catch_up(*wanted)
        except Exception:
            log.exception("updating the search index failed")


def indexed_changes(store, old: str | None, new: str | None) -> dict | None:
    """The files changed from ``old`` to ``new``; None when either is missing (nothing indexed
    yet, an empty branch) or git cannot tell (the indexed commit is gone: history rewritten; git's
    message is logged, since a full rebuild follows)."""
    if not old or not new:
        return None
    try:
        return store.changed_files(old, new)
    except Exception as exc:
        log.warning("the changes from %s to %s are not known: %s", old[:12], new[:12], exc)
        return None


def rebuild_reason(index: "SearchIndex", state: dict | None, changes) -> str:
    """Why ``sync`` rebuilds rather than applying changes (logged with every full rebuild; a
    reason in EXPECTED at INFO level, any other as a warning)."""
    if not state:
        try:
            raw = json.loads(index.state_file.read_text())
        except FileNotFoundError:
            return "no index state (a new index)"
        except ValueError:
            return "the index state is unreadable"
        if raw.get("schema") != SCHEMA_VERSION:
            return f"index schema {raw.get('schema')} (this code's is {SCHEMA_VERSION})"
        if raw.get("site_timezone") != index.site_tz.key:
            return f"site time zone {raw.get('site_timezone')} (now {index.site_tz.key})"
        return "the index state is unusable"
    if not state.get("commit"):
        return "the index state names no commit (an empty repository, or an interrupted repair)"
    if changes is None:
        return f"the changes since the indexed commit {state['commit'][:12]} are not known (history rewritten?)"
    return "the index directory is missing"


def read_view(index: "SearchIndex", snapshot: Snapshot, horizon) -> IndexView:
    """A generation read from the index on disk (which reflects ``snapshot``), its series'
    occurrences expanded up to ``horizon``."""
    ix = whoosh_index.open_dir(str(index.whoosh_dir))

    def expand(rid: int) -> list:
        record = snapshot.get(EVENTS, rid)
        if record is None:
            return []
        return FAULTS.guard(record, "its occurrences", lambda: occurrence_entries(record, index.site_tz, horizon), [])

    return IndexView(BaseView(ix, snapshot.commit, expand, horizon), snapshot.commit, site_tz=index.site_tz)


class _SeriesFound(Exception):
    """A base being read for its file meets a series (whose bases are not kept)."""


class SearchIndex:
    """The index on disk, its state, and keeping it in step with the branch."""

    def __init__(self, directory: Path, site_tz, horizon_months: int | None = None):
        # the one place a serving process changes Whoosh, once (whoosh_internals: each change checked
        # against the Whoosh it was written for, Whoosh's own path where it does not hold)
        whoosh_internals.install()
        self.directory = Path(directory)
        self.site_tz = site_tz
        self.horizon_months = horizon_months   # how far open-ended series are listed (None: the default)
        self._view: IndexView | None = None
        self._retired: list[tuple[float, BaseView]] = []
        self._wanted = None
        self._following = False
        self._lock = threading.Lock()
        self._building = False
        self._adopted: BaseView | None = None   # a base read before this process was forked
        self._moved_at = 0.0          # when this process last brought the index on disk to a commit
        self._keeper_pid: int | None = None   # the process whose keeper thread waits for a pause

    @property
    def whoosh_dir(self) -> Path:
        return self.directory / "whoosh"

    @property
    def state_file(self) -> Path:
        return self.directory / "STATE.json"

    def state(self) -> dict | None:
        """What the index on disk reflects; None when there is none we can use.

        An index made with another schema or another site time zone (events without a
        zone of their own were indexed in it) is as good as none.
        """
        try:
            state = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        if state.get("schema") != SCHEMA_VERSION or state.get("site_timezone") != self.site_tz.key:
            return None
        return state

    def _write_state(self, commit: str | None) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"commit": commit, "schema": SCHEMA_VERSION, "site_timezone": self.site_tz.key,
                                   "updated": datetime.now(timezone.utc).isoformat()}))
        os.replace(tmp, self.state_file)

    def _writer_lock(self, blocking: bool):
        return generations.writer_lock(self.directory, blocking)

    # ------------------------------------------------------------------------- reading

    def view(self, snapshot: Snapshot, store, build: bool = True) -> IndexView | None:
        """The index generation for ``snapshot``'s commit, or None while the index is behind.

        ``build=False`` (a request): only a generation there or derived in memory from the previous
        one; never an index write or a base read from disk (None then: the caller scans, and the
        service's follower thread, which calls this with ``build=True``, brings the index up).

        After a write (or any new commit) the generation is derived from the previous one by
        the events that changed (``IndexView.advanced``): no Whoosh read in the request. The
        index on disk follows in the background (``_follow``), and the base is read again
        from it once enough changes have piled up.
        """
        view = self._view
        horizon = occurrences.horizon(self.horizon_months)   # today's, for open-ended series
        if view is not None and view.base.horizon != horizon:
            view = None   # a new day: the base is read again, with the series expanded further
        if view is not None and view.commit == snapshot.commit:
            return view
        if view is not None and snapshot.commit:
            advanced = self._advance(view, snapshot, store)
            if advanced is not None:
                return advanced
        if not build:
            return None
        state = self.state()
        if not state or state.get("commit") != snapshot.commit:
            self.ensure(snapshot, store)
            state = self.state()
            if not state or state.get("commit") != snapshot.commit:
                return None
        with self._lock:
            if self._view is None or self._view.commit != snapshot.commit or self._view.base.horizon != horizon:
                try:
                    new_view = self._adopted_view(snapshot, horizon) or read_view(self, snapshot, horizon)
                except Exception as exc:
                    # a rebuild in another process may be swapping directories; if the index is
                    # really broken, a full sync under the writer lock rebuilds it
                    log.warning("the search index cannot be read (%s)", exc)
                    self._repair(snapshot, store)
                    return None
                self._replace(new_view)
            return self._view

    def read_base(self, snapshot: Snapshot, store) -> BaseView | None:
        """The base of ``snapshot``'s commit read from the index on disk with its handles closed
        again, for the workers a serving master forks (``adopt``). The index is brought to that
        commit first when few files changed (inline: no thread is left running); None when it
        is further behind (each worker then reads or builds its own)."""
        self.ensure(snapshot, store, background=False)
        state = self.state()
        if not snapshot.commit or not state or state.get("commit") != snapshot.commit:
            return None
        base = read_view(self, snapshot, occurrences.horizon(self.horizon_months)).base
        base.close()
        return base

    def adopt(self, base: BaseView) -> None:
        """Serve ``base`` (read by ``read_base`` in the process this one was forked from) as the
        first generation, if it is still the one the index on disk and the snapshot call for:
        its columns stay on the pages this process shares with the others forked alike."""
        self._adopted = base

    def _adopted_view(self, snapshot: Snapshot, horizon) -> IndexView | None:
        base, self._adopted = self._adopted, None
        if base is None or base.commit != snapshot.commit or base.horizon != horizon:
            return None
        if not base.reopen(whoosh_index.open_dir(str(self.whoosh_dir))):
            return None
        return IndexView(base, snapshot.commit, site_tz=self.site_tz)

    def _advance(self, view: IndexView, snapshot: Snapshot, store) -> IndexView | None:
        """The generation for ``snapshot`` derived from ``view``; None when a full read is due."""
        paths = changes_since(view.commit, snapshot, store)
        if paths is None or len(view.extra_by_path) + len(paths) > MAX_EXTRA or len(view.extra) > MAX_EXTRA_DOCS:
            return None
        try:
            until = view.base.horizon
            advanced = view.advanced(snapshot, paths, lambda record: FAULTS.guard(
                record, "its search document", lambda: event_documents(record, self.site_tz, until), []))
        except Exception as exc:
            log.warning("the index generation cannot be derived from the previous one (%s)", exc)
            return None
        with self._lock:
            if self._view is view:
                self._view = advanced
        self._follow(snapshot, store)
        return advanced

    def _replace(self, new_view: IndexView) -> None:
        """Serve ``new_view`` from now on; its predecessor's base is retired. Called under _lock."""
        old, self._view = self._view, new_view
        if old is not None and old.base is not new_view.base:
            self._retire(old.base)

    def _follow(self, snapshot: Snapshot, store) -> None:
        """Bring the index on disk to ``snapshot`` in a background thread (one at a time, the newest
        snapshot asked for wins), then, when enough changes have piled up, read a new base."""
        with self._lock:
            self._wanted = (snapshot, store)
            if self._following:
                return
            self._following = True

        threading.Thread(target=_follow_loop, args=(self,), name="calendar-index-follow", daemon=True).start()

    def _catch_up(self, snapshot: Snapshot, store) -> None:
        """Sync the index on disk to ``snapshot``; read a new base if the current generation's
        changes reach REBASE_EXTRA."""
        self.ensure(snapshot, store, blocking=True)
        view = self._view
        if view is None or (self.state() or {}).get("commit") != snapshot.commit:
            return
        self._keep_base_later(view.base)
        if len(view.extra) < REBASE_EXTRA:
            return
        fresh = read_view(self, snapshot, view.base.horizon)
        with self._lock:
            # a newer generation came meanwhile: its own catch-up reads the base again
            if self._view is not None and self._view.commit == fresh.commit:
                self._replace(fresh)
                return
        fresh.close()

    def _keep_base_later(self, base: BaseView) -> None:
        """Keep the base of the index on disk in its file once the index has not changed for
        KEEP_BASE_QUIET_SECONDS (``keep_base``: in a child process, which reads it without
        holding this process's interpreter); one waiting thread per process."""
        if base.size < KEEP_BASE_MIN_EVENTS or base.owned:   # small, or with series (not kept)
            return
        with self._lock:
            self._moved_at = time.monotonic()
            if self._keeper_pid == os.getpid():   # (a pid inherited from before a fork waits nowhere)
                return
            self._keeper_pid = os.getpid()
        threading.Thread(target=self._keep_base_when_quiet, name="calendar-index-keep-base", daemon=True).start()

    def _keep_base_when_quiet(self) -> None:
        while True:
            with self._lock:
                left = self._moved_at + KEEP_BASE_QUIET_SECONDS - time.monotonic()
                if left <= 0:
                    self._keeper_pid = None
                    break
            time.sleep(left)
        command = [sys.executable, "-m", "calendar_service.index.keep_base", str(self.directory), self.site_tz.key]
        if self.horizon_months is not None:
            command.append(str(self.horizon_months))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
        try:
            done = subprocess.run(command, capture_output=True, env=env, timeout=KEEP_BASE_TIMEOUT_SECONDS)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("keeping the search index's base for the next start failed: %s", exc)
            return
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        if done.returncode != 0:
            log.warning("keeping the search index's base for the next start failed (exit status %d): %s",
                        done.returncode, said[-1] if said else "no message")

    def keep_base_on_disk(self) -> str | None:
        """Read the base of the generation the index on disk is at, so that its file is kept for
        the next start (what ``keep_base``'s child process does); under the writer lock, so the
        generation and the commit it reflects are read together. None when the file is there
        now or there is nothing to keep (a sync under way, series); else why not."""
        with self._writer_lock(blocking=False) as locked:
            if not locked:
                log.info("a sync of the index is under way: its base is kept after the next pause")
                return None
            commit = (self.state() or {}).get("commit")
            if not commit:
                log.info("the index on disk reflects no commit: no base to keep")
                return None

            def series(rid: int) -> list:
                raise _SeriesFound

            try:
                base = BaseView(whoosh_index.open_dir(str(self.whoosh_dir)), commit, series,
                                occurrences.horizon(self.horizon_months))
            except _SeriesFound:
                log.info("the calendar has recurring series: their bases are not kept")
                return None
            base.close()
            if not base.restored and not os.path.exists(base_file.path_of(base.source[0])):
                return "its file could not be written"
            return None

    def _retire(self, old: BaseView) -> None:
        """Close replaced bases once no request can still be reading them. Called under _lock."""
        now = time.monotonic()
        self._retired.append((now, old))
        while self._retired and (len(self._retired) > MAX_RETIRED or now - self._retired[0][0] > RETIRE_SECONDS):
            self._retired.pop(0)[1].close()

    # ------------------------------------------------------------------------- writing

    def ensure(self, snapshot: Snapshot, store, blocking: bool = False, background: bool = True) -> None:
        """Bring the index to ``snapshot``'s commit: inline for small changes, in the background
        otherwise (not at all without ``background``)."""
        state = self.state()
        if state and state.get("commit") == snapshot.commit:
            return
        since = state.get("commit") if state else None
        changes = indexed_changes(store, since, snapshot.commit)
        work_size = len(changes) if changes is not None else len(snapshot.by_id[EVENTS.name])
        if blocking or work_size <= INLINE_LIMIT:
            self.sync(snapshot, store, changes, since, blocking=blocking)
            return
        if not background:
            return
        with self._lock:
            if self._building:
                return
            self._building = True

        def work():
            try:
                self.sync(snapshot, store, changes, since, blocking=True)
            except Exception:
                log.exception("building the search index failed")
            finally:
                self._building = False

        threading.Thread(target=work, name="calendar-index", daemon=True).start()

    def invalidate(self, snapshot: Snapshot, store, error: BaseException | None = None) -> None:
        """The index gave ``error`` while reading: stop using it and rebuild it in the background.
        A closed reader is not a broken index (a request outlived the retirement of the base it
        read: ``_retire``): the generation is read again, nothing is rebuilt."""
        with self._lock:
            old, self._view = self._view, None
        if old is not None:
            old.close()
        if isinstance(error, ReaderClosed):
            log.warning("a list read a retired index generation; reading the index again (no rebuild)")
            return
        self._repair(snapshot, store, force=True, reason=f"reading it failed ({error!r})")

    def _repair(self, snapshot: Snapshot, store, force: bool = False, reason: str = "") -> None:
        def work():
            with self._writer_lock(True):
                if not force:
                    try:
                        whoosh_index.open_dir(str(self.whoosh_dir)).searcher().close()
                        return
                    except Exception as exc:
                        why = f"it cannot be opened ({exc!r})"
                else:
                    why = reason
                self._write_state(None)
                self.rebuild(snapshot, reason=f"repair: {why}")

        threading.Thread(target=work, name="calendar-index-repair", daemon=True).start()

    def rebuild_now(self, snapshot: Snapshot, progress=None) -> int:
        """Rebuild the whole index for ``snapshot`` (waits for any other writer). Returns the count."""
        with self._writer_lock(True):
            count = self.rebuild(snapshot, progress, reason="asked for (rebuild_now)")
        self.keep_base(snapshot)
        return count

    def update_now(self, snapshot: Snapshot, store, progress=None) -> int:
        """Bring the index on disk to ``snapshot`` now, waiting for any other writer; returns how
        many events were (re)indexed. ``import`` calls it, so that the first start after an import
        lists from the index at once: the changed files are applied, or everything rebuilt when
        they are most of the calendar."""
        state = self.state()
        if state and state.get("commit") == snapshot.commit:
            return 0
        since = state.get("commit") if state else None
        changes = indexed_changes(store, since, snapshot.commit)
        events = len(snapshot.by_id[EVENTS.name])
        if changes is not None and len(changes) * REBUILD_SHARE > events:
            changes = None
            why = "most events changed"
        else:
            why = None
        self.sync(snapshot, store, changes, since, blocking=True, progress=progress, why=why)
        self.keep_base(snapshot)
        return events if changes is None else len(changes)

    def keep_base(self, snapshot: Snapshot) -> bool:
        """Read the base of the index on disk once when it is at ``snapshot``'s commit, so that
        its file is kept beside the generation (``base_file``) and the next start loads it instead
        of reading Whoosh: what the commands that bring the index to a commit (``reindex``,
        ``import``) do last. Best effort: False (logged) when the base could not be read."""
        if not snapshot.commit or (self.state() or {}).get("commit") != snapshot.commit:
            return False
        try:
            read_view(self, snapshot, occurrences.horizon(self.horizon_months)).close()
        except Exception as exc:   # the next start reads it from Whoosh, as without the file
            log.warning("could not read the index base to keep it (%s)", exc)
            return False
        return True

    def sync(self, snapshot: Snapshot, store, changes=None, since: str | None = None, blocking: bool = False,
             progress=None, why: str | None = None) -> bool:
        """Apply ``changes`` (path -> blob or None, from the commit ``since`` to the snapshot's) or
        rebuild (``why``: the caller's reason to pass no changes); returns False when another
        writer is busy."""
        with self._writer_lock(blocking) as locked:
            if not locked:
                return False
            state = self.state()
            if state and state.get("commit") == snapshot.commit:
                return True
            indexed = state.get("commit") if state else None
            if why is None and indexed != since:
                # another writer moved the index after the changes were asked for (readers call
                # ``ensure`` side by side): the changes from where it is now, not a full rebuild
                changes = indexed_changes(store, indexed, snapshot.commit)
            usable = (changes is not None and state and state.get("commit") and self.whoosh_dir.exists()
                      and whoosh_index.exists_in(str(self.whoosh_dir)))
            if not usable:
                self.rebuild(snapshot, progress, reason=why or rebuild_reason(self, state, changes))
                return True
            try:
                ix = whoosh_index.open_dir(str(self.whoosh_dir))
                writer = open_writer(ix, timeout=WRITER_TIMEOUT_SECONDS)
            except Exception as exc:
                self.rebuild(snapshot, progress, reason=f"the index cannot be opened ({exc!r})")
                return True
            try:
                self._apply(writer, snapshot, changes, progress)
                writer.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    writer.cancel()
                raise
            self._write_state(snapshot.commit)
            return True

    def _apply(self, writer, snapshot: Snapshot, changes: dict, progress=None) -> None:
        """Re-index the events whose files changed, and every id those files held or hold.

        Two files may claim one id (the catalog serves the first and reports the other), so
        a change to one file can make an unchanged file the one that is served: documents
        are replaced per id, not only per path.
        """
        paths = [p for p in changes if p.startswith("events/")]
        if not paths:
            return
        ids: set[int] = set()
        # one searcher of the segments on disk for every lookup and deletion: without it Whoosh
        # opens a reader of every segment per deleted term (terms x segments readers, most of a
        # sync's time, in a thread that shares the interpreter with writes)
        with writer.searcher() as searcher:
            for path in paths:
                rid = rid_of_path(searcher, path)
                if rid is not None:
                    ids.add(rid)
            for path in paths:
                writer.delete_by_term("path", path, searcher=searcher)
                entry = snapshot.files.get(path)
                record = entry[1] if entry else None
                if record is not None and record.id is not None:
                    ids.add(record.id)
            for n, rid in enumerate(ids, 1):
                writer.delete_by_term("rid_key", str(rid), searcher=searcher)
                record = snapshot.get(EVENTS, rid)
                document = None if record is None else FAULTS.guard(
                    record, "its search document", lambda: event_document(record, self.site_tz))
                if document is not None:
                    writer.add_document(**document)
                if progress and (n % PROGRESS_EVERY == 0 or n == len(ids)):
                    progress(n, len(ids))

    def rebuild(self, snapshot: Snapshot, progress=None, reason: str = "not given") -> int:
        """Index every event of ``snapshot`` into a fresh directory, then switch to it in one
        atomic step (``generations``). Returns the count.

        Must be called with the writer lock held.
        """
        started = time.monotonic()
        log.log(logging.INFO if reason.startswith(EXPECTED) else logging.WARNING,
                "rebuilding the whole search index in process %d: %s", os.getpid(), reason)
        generations.remove_unused(self.directory)   # builds left by killed rebuilds
        build_dir = self.directory / f"build-{os.getpid()}"
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(parents=True)
        events = snapshot.all(EVENTS)
        total = len(events)
        site_tz = self.site_tz
        building.build(build_dir, make_schema(), events,
                       lambda record: FAULTS.guard(record, "its search document", lambda: event_document(record, site_tz)),
                       lambda ix: open_rebuild_writer(ix, limitmb=BUILD_MEMORY_MB), progress, PROGRESS_EVERY)
        generations.switch(self.directory, build_dir)
        self._write_state(snapshot.commit)
        log.info("indexed %d events in %.1f s", total, time.monotonic() - started)
        return total

"""The Whoosh index: derived data that answers event lists fast, always rebuildable from git.

One Whoosh document per event file, holding what the list filters need: UTC start and end
as epoch seconds (computed from each event's own time zone when the file is indexed), the
publication date, status, author, flags, the raw references to categories, tags, venues
and organizers (ids and, where editors wrote them, slugs), and the analysed text of title,
excerpt and description.

The index records the commit it reflects (``STATE``). When the branch moves, ``sync``
applies only the files changed since that commit; a missing, stale, corrupt or
old-schema index is rebuilt (small repositories inline, large ones in a background
thread). One writer at a time across processes (a file lock); readers never wait: while
the index is behind the branch, lists are answered by scanning the snapshot, with the same
results.

Reading is built for speed: a searcher stays open until the index changes, and per index
generation the start/end/publish columns are read once and the events are kept sorted by
(start, publish date, id), so a date window is a bisect and filters are set lookups.
"""
from __future__ import annotations

import bisect
import contextlib
import fcntl
import json
import logging
import os
import shutil
import struct
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from whoosh import columns, fields, index as whoosh_index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.codec import whoosh3
from whoosh.reading import TermNotFound

from calendar_service.domain import dates
from calendar_service.domain.snapshot import Snapshot, ref_term
from calendar_service.domain.queries import EventQuery, Page, analyse, event_text, search_words
from calendar_service.domain.records import Record
from calendar_service.domain.resources import EVENTS

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
INLINE_LIMIT = 500          # changes up to this many files are applied in the request that notices them
# A replaced generation may still be read by requests that began before; it is closed once it has
# been retired this long or this many newer ones have come (a closed reader raises ReaderClosed).
RETIRE_SECONDS = 10
MAX_RETIRED = 4


def _cached_reader(self, fieldname, column):
    """Whoosh 2.7.4's W3PerDocReader._cached_reader, remembering a missing column too.

    Writing a segment asks for the length column of the field of every posting; for the
    fields without one (ids, keywords) the original answers with a ``stat`` each time:
    three quarters of a full reindex went there. A segment's files never change once
    written, so remembering "no such column" is safe.
    """
    if fieldname in self._readers:
        return self._readers[fieldname]
    reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
    self._readers[fieldname] = reader
    return reader


whoosh3.W3PerDocReader._cached_reader = _cached_reader


def make_schema() -> fields.Schema:
    keyword = dict(commas=True, scorable=False, lowercase=False)
    return fields.Schema(
        path=fields.ID(stored=True, unique=True),
        # columns only: lists read them once per generation, nothing searches them as terms
        rid=fields.COLUMN(columns.NumericColumn("q")),
        rid_key=fields.ID(stored=True),
        status=fields.ID(),
        author=fields.ID(),
        start=fields.COLUMN(columns.NumericColumn("q")),
        end=fields.COLUMN(columns.NumericColumn("q")),
        pub=fields.COLUMN(columns.NumericColumn("q")),
        flags=fields.KEYWORD(**keyword),
        parent=fields.ID(),
        categories=fields.KEYWORD(**keyword),
        tags=fields.KEYWORD(**keyword),
        venue=fields.KEYWORD(**keyword),
        organizer=fields.KEYWORD(**keyword),
        # words analysed by queries.analyse (the same words the scanning path matches)
        text=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False),
    )


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _bound(moment: datetime) -> float:
    """A query bound as epoch seconds, fractions kept (stored times are whole seconds)."""
    return moment.timestamp()


def event_document(record: Record, site_tz) -> dict:
    """The index document of one event."""
    data = record.data
    tz = dates.zone(data.get("timezone"), site_tz)
    start = dates.read_local(data["start_date"], tz)
    end = dates.read_local(data["end_date"], tz)
    pub = dates.read_local(data.get("date_utc") or "1970-01-01 00:00:00", timezone.utc)
    flags = [name for name in ("featured", "hide_from_listings", "sticky") if data.get(name)]
    doc = {
        "path": record.path,
        "rid": record.id,
        "rid_key": str(record.id),
        "status": record.status,
        "author": str(data.get("author") or 0),
        "start": _epoch(start),
        "end": _epoch(end),
        "pub": _epoch(pub),
        "flags": ",".join(flags) or None,
        "parent": str(data["post_parent"]) if data.get("post_parent") else None,
        # the scanning path's words when it has them; not kept on the record otherwise (memory)
        "text": " ".join(record.__dict__.get("_tokens") or set(analyse(event_text(record)))),
    }
    for key in ("categories", "tags", "venue", "organizer"):
        refs = [ref_term(r) for r in data.get(key) or [] if str(r) and "," not in str(r)]
        doc[key] = ",".join(refs) or None
    return {k: v for k, v in doc.items() if v is not None}


def _read_column(reader, name: str) -> dict:
    """docnum -> value of a numeric column for every live document, a segment at a time.

    A segment's column is one run of fixed-size big-endian numbers: unpacking it in one
    call is what makes a new index generation (after every write) cheap; whoosh's
    per-document access costs ~10 us a value.
    """
    out = {}
    for leaf, offset in reader.leaf_readers():
        count = leaf.doc_count_all()
        column = leaf.column_reader(name, translate=False)
        try:
            n = min(column._count, count)
            raw = column._dbfile.get(column._basepos, n * column._fixedlen)
            values = list(struct.unpack(f"!{n}{column._typecode}", raw)) + [column._default] * (count - n)
        except AttributeError:  # not a plain numeric column reader (e.g. a segment without the column)
            values = [column[i] for i in range(count)]
        for d in leaf.all_doc_ids():
            out[offset + d] = values[d]
    return out


class IndexView:
    """One generation of the index, opened once and shared by every request until the next."""

    def __init__(self, ix, commit: str):
        self.commit = commit
        self.searcher = ix.searcher()
        reader = self.searcher.reader()
        self.reader = reader
        live = list(reader.all_doc_ids())
        self.rid, self.start, self.end, self.pub = {}, {}, {}, {}
        if live:  # whoosh has no columns to read in an index without documents
            for name, target in (("rid", self.rid), ("start", self.start), ("end", self.end), ("pub", self.pub)):
                target.update(_read_column(reader, name))
        self.order = sorted(live, key=lambda d: (self.start[d], self.pub[d], self.rid[d]))
        self.sorted_starts = [self.start[d] for d in self.order]
        self.by_rid = {rid: d for d, rid in self.rid.items()}
        self.pos = {d: i for i, d in enumerate(self.order)}
        self.live = frozenset(self.order)
        # shortest and longest duration: an end bound only needs checking near the window's edge
        durations = [self.end[d] - self.start[d] for d in self.order]
        self.min_duration = min(durations, default=0)
        self.max_duration = max(durations, default=0)
        self._visible: dict = {}
        self._sets: dict[tuple[str, str], frozenset] = {}
        self._searches: dict[str, frozenset] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.searcher.close()

    def docs(self, field: str, term: str) -> frozenset:
        """Documents carrying ``term`` in ``field`` (cached for this generation)."""
        key = (field, term)
        found = self._sets.get(key)
        if found is None:
            try:
                found = frozenset(self.reader.postings(field, term).all_ids())
            except TermNotFound:
                found = frozenset()
            with self._lock:
                self._sets[key] = found
        return found

    def visible(self, statuses, user) -> frozenset:
        """Documents of these statuses that ``user`` may list, hidden ones left out (cached)."""
        key = (tuple(statuses), None if user is None else (user.id, user.can("read_private_posts")))
        found = self._visible.get(key)
        if found is None:
            found = _status_docs(self, statuses, user) - self.docs("flags", "hide_from_listings")
            with self._lock:
                if len(self._visible) > 256:
                    self._visible.clear()
                self._visible[key] = found
        return found

    def any_of(self, field: str, terms) -> frozenset:
        result: set = set()
        for term in terms:
            result |= self.docs(field, term)
        return frozenset(result)

    def search(self, text: str) -> frozenset:
        """Events whose title, excerpt or description contain every word (stemmed, or as a prefix)."""
        found = self._searches.get(text)
        if found is None:
            words = search_words(text)
            if not words:
                found = frozenset(self.order)
            else:
                per_word = sorted((self.word(w) for w in dict.fromkeys(words)), key=len)
                found = per_word[0]
                for other in per_word[1:]:
                    found = found & other
            with self._lock:
                if len(self._searches) > 1000:
                    self._searches.clear()
                self._searches[text] = found
        return found

    def word(self, word: str) -> frozenset:
        """Documents with ``word``, or a word beginning with it, in their text (cached)."""
        key = ("text*", word)
        found = self._sets.get(key)
        if found is None:
            found = frozenset().union(*(self.docs("text", term.decode("utf-8") if isinstance(term, bytes) else term)
                                        for term in self.reader.expand_prefix("text", word)))
            with self._lock:
                self._sets[key] = found
        return found


class SearchIndex:
    """The index on disk, its state, and keeping it in step with the branch."""

    def __init__(self, directory: Path, site_tz):
        self.directory = Path(directory)
        self.site_tz = site_tz
        self._view: IndexView | None = None
        self._retired: list[tuple[float, IndexView]] = []
        self._lock = threading.Lock()
        self._building = False

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

    @contextlib.contextmanager
    def _writer_lock(self, blocking: bool):
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / "writer.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------------- reading

    def view(self, snapshot: Snapshot, store) -> IndexView | None:
        """The index generation for ``snapshot``'s commit, or None while the index is behind."""
        view = self._view
        if view is not None and view.commit == snapshot.commit:
            return view
        state = self.state()
        if not state or state.get("commit") != snapshot.commit:
            self.ensure(snapshot, store)
            state = self.state()
            if not state or state.get("commit") != snapshot.commit:
                return None
        with self._lock:
            if self._view is None or self._view.commit != snapshot.commit:
                try:
                    ix = whoosh_index.open_dir(str(self.whoosh_dir))
                    new_view = IndexView(ix, snapshot.commit)
                except Exception as exc:
                    # a rebuild in another process may be swapping directories; if the index is
                    # really broken, a full sync under the writer lock rebuilds it
                    log.warning("the search index cannot be read (%s)", exc)
                    self._repair(snapshot, store)
                    return None
                old, self._view = self._view, new_view
                if old is not None:
                    self._retire(old)
            return self._view

    def _retire(self, old: IndexView) -> None:
        """Close replaced generations once no request can still be reading them. Called under _lock."""
        now = time.monotonic()
        self._retired.append((now, old))
        while self._retired and (len(self._retired) > MAX_RETIRED or now - self._retired[0][0] > RETIRE_SECONDS):
            self._retired.pop(0)[1].close()

    # ------------------------------------------------------------------------- writing

    def ensure(self, snapshot: Snapshot, store, blocking: bool = False) -> None:
        """Bring the index to ``snapshot``'s commit: inline for small changes, in the background otherwise."""
        state = self.state()
        if state and state.get("commit") == snapshot.commit:
            return
        changes = None
        if state and state.get("commit") and snapshot.commit:
            try:
                changes = store.changed_files(state["commit"], snapshot.commit)
            except Exception:
                changes = None  # the indexed commit is gone (history rewritten): rebuild
        work_size = len(changes) if changes is not None else len(snapshot.by_id[EVENTS.name])
        if blocking or work_size <= INLINE_LIMIT:
            self.sync(snapshot, store, changes, blocking=blocking)
            return
        with self._lock:
            if self._building:
                return
            self._building = True

        def work():
            try:
                self.sync(snapshot, store, changes, blocking=True)
            except Exception:
                log.exception("building the search index failed")
            finally:
                self._building = False

        threading.Thread(target=work, name="calendar-index", daemon=True).start()

    def invalidate(self, snapshot: Snapshot, store) -> None:
        """The index gave an error while reading: stop using it and rebuild it in the background."""
        with self._lock:
            old, self._view = self._view, None
        if old is not None:
            old.close()
        self._repair(snapshot, store, force=True)

    def _repair(self, snapshot: Snapshot, store, force: bool = False) -> None:
        def work():
            with self._writer_lock(True):
                if not force:
                    try:
                        whoosh_index.open_dir(str(self.whoosh_dir)).searcher().close()
                        return
                    except Exception:
                        pass
                self._write_state(None)
            self.sync(snapshot, store, None, blocking=True)

        threading.Thread(target=work, name="calendar-index-repair", daemon=True).start()

    def rebuild_now(self, snapshot: Snapshot, progress=None) -> int:
        """Rebuild the whole index for ``snapshot`` (waits for any other writer). Returns the count."""
        with self._writer_lock(True):
            return self.rebuild(snapshot, progress)

    def sync(self, snapshot: Snapshot, store, changes=None, blocking: bool = False, progress=None) -> bool:
        """Apply ``changes`` (path -> blob or None) or rebuild; returns False when another writer is busy."""
        with self._writer_lock(blocking) as locked:
            if not locked:
                return False
            state = self.state()
            if state and state.get("commit") == snapshot.commit:
                return True
            usable = (changes is not None and state and state.get("commit") and self.whoosh_dir.exists()
                      and whoosh_index.exists_in(str(self.whoosh_dir)))
            if not usable:
                self.rebuild(snapshot, progress)
                return True
            try:
                ix = whoosh_index.open_dir(str(self.whoosh_dir))
                writer = ix.writer(timeout=30)
            except Exception as exc:
                log.warning("the search index cannot be opened (%s); rebuilding it", exc)
                self.rebuild(snapshot, progress)
                return True
            try:
                self._apply(ix, writer, snapshot, changes)
                writer.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    writer.cancel()
                raise
            self._write_state(snapshot.commit)
            return True

    def _apply(self, ix, writer, snapshot: Snapshot, changes: dict) -> None:
        """Re-index the events whose files changed, and every id those files held or hold.

        Two files may claim one id (the catalog serves the first and reports the other), so
        a change to one file can make an unchanged file the one that is served: documents
        are replaced per id, not only per path.
        """
        paths = [p for p in changes if p.startswith("events/")]
        if not paths:
            return
        ids: set[int] = set()
        with ix.searcher() as searcher:
            for path in paths:
                stored = searcher.document(path=path)
                if stored is not None:
                    ids.add(int(stored["rid_key"]))
        for path in paths:
            writer.delete_by_term("path", path)
            entry = snapshot.files.get(path)
            record = entry[1] if entry else None
            if record is not None:
                ids.add(record.id)
        for rid in ids:
            writer.delete_by_term("rid_key", str(rid))
            record = snapshot.get(EVENTS, rid)
            if record is not None:
                writer.add_document(**event_document(record, self.site_tz))

    def rebuild(self, snapshot: Snapshot, progress=None) -> int:
        """Index every event of ``snapshot`` into a fresh directory, then swap it in. Returns the count.

        Must be called with the writer lock held.
        """
        started = time.monotonic()
        build_dir = self.directory / f"build-{os.getpid()}"
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(parents=True)
        ix = whoosh_index.create_in(str(build_dir), make_schema())
        writer = ix.writer(limitmb=256)
        events = snapshot.all(EVENTS)
        total = len(events)
        for n, record in enumerate(events, 1):
            writer.add_document(**event_document(record, self.site_tz))
            if progress and (n % 500 == 0 or n == total):
                progress(n, total)
        writer.commit()
        old = self.directory / f"old-{os.getpid()}"
        if self.whoosh_dir.exists():
            os.replace(self.whoosh_dir, old)
        os.replace(build_dir, self.whoosh_dir)
        shutil.rmtree(old, ignore_errors=True)
        self._write_state(snapshot.commit)
        log.info("indexed %d events in %.1f s", total, time.monotonic() - started)
        return total


# ----------------------------------------------------------------------------- queries


def events(view: IndexView, snapshot: Snapshot, q: EventQuery, user) -> Page | None:
    """Answer an event list from the index; None when the query needs the scanning path (geo)."""
    if q.geoloc is not None or q.near is not None:
        return None
    if q.ticketed:
        return Page([], 0, q.page, q.per_page)
    sets = [view.visible(q.statuses, user)]
    for field, wanted, target in (("categories", q.categories, "categories"), ("tags", q.tags, "tags"),
                                  ("venue", q.venues, "venues"), ("organizer", q.organizers, "organizers")):
        if wanted is not None:
            sets.append(view.any_of(field, _ref_terms(snapshot, target, wanted)))
    if q.search:
        sets.append(view.search(q.search))
    if q.post_parent is not None:
        sets.append(view.docs("parent", str(q.post_parent)))
    if q.featured:
        sets.append(view.docs("flags", "featured"))
    sets.sort(key=len)
    matched = sets[0]
    for other in sets[1:]:
        matched = matched & other   # set operations in C: no loop over the candidates in Python
    if q.featured is False:
        matched = matched - view.docs("flags", "featured")
    first = (q.page - 1) * q.per_page
    if q.include is not None:
        wanted_docs = [view.by_rid[i] for i in dict.fromkeys(q.include) if i in view.by_rid]
        ordered = [d for d in sorted(wanted_docs, key=lambda d: (view.pub[d], view.rid[d])) if d in matched]
        items = [snapshot.get(EVENTS, view.rid[d]) for d in ordered[first:first + q.per_page]]
        return Page([r for r in items if r is not None], len(ordered), q.page, q.per_page)
    lo, hi = 0, len(view.order)
    if q.start is not None:
        lo = max(lo, bisect.bisect_left(view.sorted_starts, _bound(q.start)))
    if q.starts_after is not None:
        lo = max(lo, bisect.bisect_right(view.sorted_starts, _bound(q.starts_after)))
    if q.starts_before is not None:
        hi = min(hi, bisect.bisect_left(view.sorted_starts, _bound(q.starts_before)))
    if lo >= hi:
        return Page([], 0, q.page, q.per_page)
    # postings may still name deleted documents: only documents of the window (live ones) count
    pos = view.pos
    if lo == 0 and hi == len(view.order):
        matched = matched & view.live
    elif len(matched) * 4 < hi - lo:
        matched = {d for d in matched if lo <= pos.get(d, -1) < hi}
    else:
        matched = matched & frozenset(view.order[lo:hi])
    end_max = _bound(q.end) if q.end is not None else None
    ends_before = _bound(q.ends_before) if q.ends_before is not None else None
    ends_after = _bound(q.ends_after) if q.ends_after is not None else None
    if end_max is not None or ends_before is not None or ends_after is not None:
        # end >= start + min_duration and end <= start + max_duration: only events starting
        # near a bound can fail it, so only those are looked at
        starts, order, end = view.sorted_starts, view.order, view.end
        ranges = []
        if end_max is not None:
            ranges.append(bisect.bisect_right(starts, end_max - view.max_duration, lo, hi))
        if ends_before is not None:
            ranges.append(bisect.bisect_left(starts, ends_before - view.max_duration, lo, hi))
        check_lo = min(ranges, default=hi)
        check_hi = bisect.bisect_right(starts, ends_after - view.min_duration, lo, hi) if ends_after is not None else lo
        failing = set()
        for i in (*range(lo, check_hi), *range(max(check_lo, check_hi), hi)):
            doc = order[i]
            e = end[doc]
            if (end_max is not None and e > end_max) or (ends_before is not None and not e < ends_before) \
                    or (ends_after is not None and not e > ends_after):
                failing.add(doc)
        if failing:
            matched = matched - failing
    total = len(matched)
    want = first + q.per_page
    if first >= total:
        page_docs = []
    elif want * (hi - lo) / total > total // 4 + 50:
        # sparse matches in a long window: sorting the matches is cheaper than walking the window
        page_docs = sorted(matched, key=pos.__getitem__)[first:want]
    else:
        page_docs = []
        order = view.order
        for i in range(lo, hi):
            doc = order[i]
            if doc in matched:
                page_docs.append(doc)
                if len(page_docs) == want:
                    break
        page_docs = page_docs[first:]
    items = [snapshot.get(EVENTS, view.rid[d]) for d in page_docs]
    return Page([r for r in items if r is not None], total, q.page, q.per_page)


def _status_docs(view: IndexView, statuses, user) -> frozenset:
    docs = set()
    for status in statuses:
        found = view.docs("status", status)
        if status == "private" and not (user is not None and user.can("read_private_posts")):
            found = found & view.docs("author", str(user.id)) if user is not None else frozenset()
        elif status != "publish" and user is None:
            found = frozenset()
        docs |= found
    return frozenset(docs)


def _ref_terms(snapshot: Snapshot, target: str, ids) -> list[str]:
    """Index terms for records ``ids``: their ids, and their slugs (editors may reference by slug)."""
    from calendar_service.domain.resources import RESOURCES
    resource = RESOURCES[target]
    terms = []
    for rid in ids:
        terms.append(ref_term(rid))
        record = snapshot.get(resource, rid)
        if record is not None:
            terms.append(ref_term(record.slug))
    return terms

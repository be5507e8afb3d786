"""One generation of the index as the lists read it: a base read from Whoosh, plus the events
changed since, as compressed bitmaps and sorted columns.

The base (``BaseView``) is read once from a Whoosh generation: every live event gets a
*position*, its rank in list order (start, publication date, id), and the start, end and
publication columns are kept in that order. Every document set (a status, a category, a
search word...) is a roaring bitmap of positions, so a filter is an intersection, a date
window on the start is a range of positions, a total is a count and a page is a select by
rank: a list costs by the page it returns, not by the window it covers. An end bound is
answered per duration class (events whose durations lie within a factor of two): within a
class only the events starting near the bound can go either way, so only those are looked at.

A generation (``IndexView``) is a base plus the events changed since it was read: the
changed events' base positions are dropped (``dead``) and their current documents are kept
beside it (``extra``, a few at most), matched one by one. A write thus makes a new
generation from the previous one in time proportional to what it changed; the base is
read again from Whoosh only once the changes pile up (in the background).
"""
from __future__ import annotations

import bisect
import contextlib
import math
import os
import threading
from array import array
from collections import Counter
from operator import sub

from pyroaring import BitMap, FrozenBitMap

from calendar_service.domain import permissions
from calendar_service.domain.queries import search_words
from calendar_service.domain.resources import EVENTS
from calendar_service.index import base_file, whoosh_internals
from calendar_service.index.schema import SERIES_FLAG, rid_of_path
from calendar_service.index.windowed import (WINDOW_BLOCK, DocnumSets, Window, leaf_posting_blocks, segment_sets,
                                             status_sets)

# Cached answers kept per base before the cache is emptied (memory stays bounded whatever
# the callers ask): visibility sets per (statuses, user), text searches, term sets.
MAX_VISIBLE_SETS = 256
MAX_SEARCHES = 1000
# Document sets per (field, term) and per search word: terms come from requests.
MAX_SETS = 4096
# Sets of events whose end lies within bounds, per (the events asked about, the bounds): the
# pages of one list ask with the same ones, and the bounds come from requests.
MAX_END_FILTERS = 64
# The numeric columns every base reads whole.
COLUMNS = ("rid", "start", "end", "pub")
# Reference fields of a document (see ``schema.REFERENCE_FIELDS``).
REFERENCE_FIELDS = ("categories", "tags", "venue", "organizer")


def read_column(reader, name: str) -> list:
    """The values of a numeric column by docnum (deleted documents included), a segment at a time.

    A segment's column is one run of fixed-size big-endian numbers: unpacking it in one
    call (``whoosh_internals.column_values``) is what makes reading a base cheap; Whoosh's own
    reader, the path without it, reads one value at a time.
    """
    out: list = []
    for leaf, offset in reader.leaf_readers():
        count = leaf.doc_count_all()
        column = leaf.column_reader(name, translate=False)
        values = whoosh_internals.column_values(column, count)
        if values is None:   # not a plain numeric column reader (e.g. a segment without the column)
            values = [column[i] for i in range(count)]
        out[offset:offset + count] = values
    return out


def live_docnums(reader) -> list[int]:
    """The docnums of the documents not deleted, a segment at a time."""
    out: list[int] = []
    for leaf, offset in reader.leaf_readers():
        count = leaf.doc_count_all()
        if not leaf.has_deletions():
            out.extend(range(offset, offset + count))
            continue
        deleted = whoosh_internals.deleted_docs(leaf)
        if deleted is not None:
            out.extend(offset + d for d in range(count) if d not in deleted)
        else:
            out.extend(offset + d for d in leaf.all_doc_ids())
    return out


def posting_ids(reader, field: str, term: str) -> list[int]:
    """The docnums of a term's postings (deleted documents may be included: they have no
    position), a block at a time where ``whoosh_internals.posting_blocks`` reads them."""
    out: list[int] = []
    for leaf, offset in reader.leaf_readers():
        for ids in leaf_posting_blocks(leaf, field, term):
            out.extend(ids if not offset else map(offset.__add__, ids))
    return out


def list_order_keys(starts: list, pubs: list, rids: list) -> list[int]:
    """One integer per entry that sorts as (start, pub, id) does: each column shifted to start
    at 0 and the three packed into one number (a sort of integers is about twice as fast as
    one of tuples)."""
    if not starts:
        return []
    low_start, low_pub, low_rid = min(starts), min(pubs), min(rids)
    pub_span, rid_span = max(pubs) - low_pub + 1, max(rids) - low_rid + 1
    return [((s - low_start) * pub_span + p - low_pub) * rid_span + r - low_rid for s, p, r in zip(starts, pubs, rids)]


def duration_class(duration: int) -> int:
    """Events whose durations (seconds) lie within a factor of two share a class."""
    return duration.bit_length() if duration >= 0 else -(-duration).bit_length() - 1


class Slots:
    """served id -> position in list order, for the ids of one view. Event ids are dense (a
    calendar's ids run from 1 to about its number of files), so a view keeps an array indexed
    by id (4 bytes an id) rather than a dict (~100 bytes an entry); ids beyond that range
    (occurrences of series are served under large ids) go in a dict."""

    __slots__ = ("_dense", "_sparse")
    MISSING = -1

    def __init__(self, rids):
        limit = 4 * len(rids) + 1024
        self._dense = array("i", [self.MISSING]) * (min(max(rids, default=0), limit) + 1)
        self._sparse: dict[int, int] = {}
        dense, sparse = self._dense, self._sparse
        for position, rid in enumerate(rids):
            if 0 <= rid <= limit:
                dense[rid] = position
            else:
                sparse[rid] = position

    @classmethod
    def of(cls, dense: array, sparse: dict) -> Slots:
        """Slots of a base kept in a file (``base_file``): its dense array and sparse ids as they were."""
        slots = cls.__new__(cls)
        slots._dense, slots._sparse = dense, sparse
        return slots

    def get(self, rid, default=None):
        if type(rid) is int and 0 <= rid < len(self._dense):
            position = self._dense[rid]
            return default if position == self.MISSING else position
        return self._sparse.get(rid, default)


def whoosh_generation(ix) -> tuple:
    """Which files ``ix`` reads: its folder (a generation's, see ``generations``) and TOC generation."""
    return os.path.realpath(ix.storage.folder), ix.latest_generation()


class BaseView(DocnumSets):
    """Every event of one Whoosh generation, by position in list order (immutable once read)."""

    def __init__(self, ix, commit: str, expand=None, horizon=None):
        """``expand(rid)`` gives the occurrences of the series of id ``rid`` (see
        ``schema.occurrence_entries``), expanded up to ``horizon``, which the base records: a
        new day's horizon needs a new base (no document is rewritten)."""
        self.commit = commit
        self.horizon = horizon
        self.expanded = expand is not None   # series are their occurrences (else a series is one entry)
        self.source = whoosh_generation(ix)
        self.searcher = ix.searcher()
        reader = self.reader = self.searcher.reader()
        # a base without series depends on the Whoosh generation alone: kept beside it (``base_file``)
        kept = base_file.read(self.source[0], reader, commit, WINDOW_BLOCK) if self.expanded else None
        self.restored = kept is not None   # loaded from the file, not read from Whoosh
        if kept is not None:
            self._restore(kept)
        else:
            self._read(reader, expand)
            if self.expanded and not self._series_docs:
                base_file.write(self.source[0], reader, commit, base_file.columns_of(self), WINDOW_BLOCK)
        self._leaves = self._open_leaves(reader)
        self.all = BitMap(range(self.size))
        self._visible: dict = {}
        self._sets: dict[tuple[str, str], BitMap] = {}
        self._searches: dict[str, BitMap] = {}
        self._ended: dict[tuple, tuple[FrozenBitMap, BitMap]] = {}   # see end_filter
        self._docnums: dict[tuple[str, str], BitMap] = {}
        self._docnum_bytes = 0
        self._lock = threading.Lock()

    def _read(self, reader, expand) -> None:
        """Build the base from the Whoosh generation ``reader`` reads."""
        live = live_docnums(reader)
        rid = start = end = pub = []
        if live:  # whoosh has no columns to read in an index without documents
            rid, start, end, pub = (read_column(reader, name) for name in COLUMNS)
        series_docs = set(posting_ids(reader, "flags", SERIES_FLAG)).intersection(live) if expand else set()
        # one entry per event and per occurrence of a series (whose end, parent term and own
        # document are in ``occurrences``), as columns; each step a pass in C where it can be
        docs = [d for d in live if d not in series_docs] if series_docs else live
        starts, pubs, rids = (list(map(column.__getitem__, docs)) for column in (start, pub, rid))
        docs = list(docs)
        occurrences = {}
        for d in series_docs:
            for served, s, e, parent, doc in expand(rid[d]):
                occurrences[served] = (e, parent, doc)
                starts.append(s)
                pubs.append(pub[d])
                rids.append(served)
                docs.append(d)
        self.size = size = len(docs)
        order = sorted(range(size), key=list_order_keys(starts, pubs, rids).__getitem__)
        # the columns as arrays of machine integers: a list holds a pointer and an int object
        # per entry (~40 bytes), an array 8 bytes (at 1,000,000 events, ~160 MB less per worker)
        self.starts, self.pubs, self.rids = (array("q", map(column.__getitem__, order))
                                             for column in (starts, pubs, rids))
        docs = list(map(docs.__getitem__, order))
        rids = self.rids
        self.ends = array("q", map(end.__getitem__, docs))
        # position -> docnum (a series' for its occurrences); the events' docnums by block of
        # positions, for a window's docnums (``Window``)
        self._docnum_of = array("I", docs)
        self._blocks = self.docnum_blocks()
        self.slot = Slots(rids)                         # served id -> position
        # Whoosh docnum -> position; deleted documents (postings still name them) and series
        # (their occurrences are in ``members``) -> self.size
        self._pos = array("q", [size]) * reader.doc_count_all()
        self.members: dict[int, BitMap] = {}     # a series' docnum -> its occurrences matched as it is
        self.owned: dict[int, BitMap] = {}       # a series' id -> the positions of all its occurrences
        self.special: dict[int, ExtraDoc] = {}   # position -> document of an occurrence with its own fields
        self.parents: dict[str, BitMap] = {}     # parent term -> occurrences with it
        if not series_docs:
            any(map(self._pos.__setitem__, docs, range(size)))   # (None each: runs to the end)
        for i, d in enumerate(docs) if series_docs else ():
            if d not in series_docs:
                self._pos[d] = i
                continue
            e, parent, doc = occurrences[rids[i]]
            self.ends[i] = e
            self.owned.setdefault(rid[d], BitMap()).add(i)
            if parent is not None:
                self.parents.setdefault(parent, BitMap()).add(i)
            if doc is not None:
                self.special[i] = ExtraDoc(doc)
            else:
                self.members.setdefault(d, BitMap()).add(i)
        self._series_docs = BitMap(series_docs)
        if series_docs:
            self._blocks = [block - self._series_docs for block in self._blocks]
        self.occurrence_positions = BitMap.union(BitMap(), *self.owned.values())
        # duration classes: (shortest, longest duration, positions), longest class last
        durations = list(map(sub, self.ends, self.starts))
        # a duration's class is its bit length (in C) unless it is negative (an end before its start)
        classes = list(map(int.bit_length if min(durations, default=0) >= 0 else duration_class, durations))
        by_class = sorted(range(size), key=classes.__getitem__)   # positions grouped by class, each group in order
        self.classes = []
        first = 0
        for c, count in sorted(Counter(classes).items()):
            members = by_class[first:first + count]
            first += count
            spread = list(map(durations.__getitem__, members))
            self.classes.append((min(spread), max(spread), BitMap(members)))

    def _restore(self, kept: dict) -> None:
        """The base ``base_file.columns_of`` kept (a base without series), as read from its file."""
        self.size, self.starts, self.pubs, self.rids, self.ends, self._docnum_of, self._pos, self._blocks = map(
            kept.__getitem__, ("size", "starts", "pubs", "rids", "ends", "docnum_of", "pos", "blocks"))
        self._block = WINDOW_BLOCK
        self.slot = Slots.of(kept["slot_dense"], dict(zip(kept["slot_sparse_ids"], kept["slot_sparse_positions"])))
        self.members, self.owned, self.special, self.parents = {}, {}, {}, {}
        self._series_docs, self.occurrence_positions = BitMap(), BitMap()
        self.classes = list(zip(kept["class_min"], kept["class_max"], kept["class_members"]))

    @staticmethod
    def _open_leaves(reader) -> list:
        return [(leaf, offset, segment_sets(leaf)) for leaf, offset in reader.leaf_readers()]

    def reopen(self, ix) -> bool:
        """Serve this base through ``ix``, this process's own handles on the index (a base read
        before a fork holds the reading process's, closed there: each worker opens its own).
        False, and nothing opened, when ``ix`` is not the Whoosh generation the base was read
        from (its docnums would name other documents)."""
        if whoosh_generation(ix) != self.source:
            return False
        self.searcher = ix.searcher()
        self.reader = self.searcher.reader()
        self._leaves = self._open_leaves(self.reader)
        self._lock = threading.Lock()
        return True

    def single_event(self, rid: int) -> bool:
        """Whether ``rid`` is listed as an event of its own, not as an occurrence of a series
        (its file declares no recurrence, as read when the base was written)."""
        if not self.expanded:
            return False
        slot = self.slot.get(rid)
        return slot is not None and slot not in self.occurrence_positions

    def positions_of(self, rid: int) -> BitMap | None:
        """The positions an event id holds: its own, or all its occurrences' for a series."""
        owned = self.owned.get(rid)
        if owned is not None:
            return owned
        slot = self.slot.get(rid)
        return None if slot is None else BitMap([slot])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.searcher.close()
        for _leaf, _offset, sets in self._leaves:
            if sets is not None:
                sets.close()

    def rid_of_path(self, path: str) -> int | None:
        """The id of the event the file at ``path`` held in this base, if any."""
        return rid_of_path(self.searcher, path)

    def position_after(self, key: tuple) -> int:
        """How many events of the base come before ``key`` (start, publication date, id) in list order."""
        start = key[0]
        lo = bisect.bisect_left(self.starts, start)
        hi = bisect.bisect_right(self.starts, start, lo)
        if lo == hi:
            return lo
        pubs, rids = self.pubs, self.rids
        return bisect.bisect_left(range(lo, hi), key[1:], key=lambda i: (pubs[i], rids[i])) + lo

    def _remember(self, cache: dict, limit: int, key, value) -> None:
        with self._lock:
            if len(cache) >= limit:
                cache.clear()
            cache[key] = value

    def docs(self, field: str, term: str) -> BitMap:
        """Positions of the events carrying ``term`` in ``field`` (cached for this base)."""
        key = (field, term)
        found = self._sets.get(key)
        if found is None:
            docnums = self._term_docnums(field, term)
            found = self._positions(docnums)
            found.discard(self.size)
            if self.owned:
                found = BitMap.union(found, *self._occurrences(docnums, field, (term,)))
            self._remember(self._sets, MAX_SETS, key, found)
        return found

    def _occurrences(self, docnums: BitMap, field: str, terms) -> list[BitMap]:
        """The occurrences of the series among ``docnums`` and the occurrences with their own
        documents that carry one of ``terms``; ``parent`` is each occurrence's own."""
        if field == "parent":
            return [self.parents[term] for term in terms if term in self.parents]
        members = self.members
        # one union of every part: a term a thousand series carry is one call, not a thousand
        parts = [members[d] for d in self._series_docs & docnums if d in members]
        extra = [p for p, x in self.special.items() if any(x.has(field, term) for term in terms)]
        if extra:
            parts.append(BitMap(extra))
        return parts

    def visible(self, statuses, user) -> BitMap:
        """Events of these statuses that ``user`` may list, hidden ones left out (cached)."""
        key = (tuple(statuses), permissions.viewer(user))
        found = self._visible.get(key)
        if found is None:
            found = status_sets(self.docs, statuses, user) - self.docs("flags", "hide_from_listings")
            self._remember(self._visible, MAX_VISIBLE_SETS, key, found)
        return found

    def any_of(self, field: str, terms, window: Window | None = None) -> BitMap:
        """Events carrying one of ``terms``; with a ``window``, only those within it are sure
        to be there (the caller keeps the window's), unless every term's set is kept already."""
        if window is not None and not all((field, term) in self._sets for term in terms):
            docnums = BitMap.union(BitMap(), *(self.docnums(field, term) for term in terms))
            found = self.within(docnums, window)
            return BitMap.union(found, *self._occurrences(docnums, field, terms)) if self.owned else found
        return BitMap.union(BitMap(), *(self.docs(field, term) for term in terms))

    def search(self, text: str, window: Window | None = None) -> BitMap:
        """Events whose title, excerpt or description contain every word (stemmed, or as a
        prefix); with a ``window``, as ``any_of``."""
        found = self._searches.get(text)
        if found is None and window is not None:
            return self._search_within(text, window)
        if found is None:
            words = search_words(text)
            if not words:
                found = self.all
            else:
                found = BitMap.intersection(*(self.word(w) for w in dict.fromkeys(words)))
            self._remember(self._searches, MAX_SEARCHES, text, found)
        return found

    def word(self, word: str) -> BitMap:
        """Events with ``word``, or a word beginning with it, in their text (cached)."""
        key = ("text*", word)
        found = self._sets.get(key)
        if found is None:
            terms = (t.decode("utf-8") if isinstance(t, bytes) else t for t in self.reader.expand_prefix("text", word))
            found = BitMap.union(BitMap(), *(self.docs("text", term) for term in terms))
            extra = [p for p, x in self.special.items() if any(t.startswith(word) for t in x.tokens)]
            if extra:
                found = found | BitMap(extra)
            self._remember(self._sets, MAX_SETS, key, found)
        return found

    def end_filter(self, matched: BitMap, emin: int | None, emax: int | None) -> BitMap:
        """The events of ``matched`` whose end lies in [emin, emax] (None: unbounded); remembered
        for this base by the events and the bounds (the pages of one list ask the same: the
        events near the bounds are looked at one by one, ~40 us of a list at 10,000 events).
        Kept under the set's size and ends and compared in full on a hit: hashing the set itself
        walks all of it (~0.7 ms for the 470,000 events of a default list at 1,000,000), where
        comparing two sets is a few microseconds."""
        key = (len(matched), matched.min() if matched else -1, matched.max() if matched else -1, emin, emax)
        kept = self._ended.get(key)
        if kept is not None and kept[0] == matched:
            return kept[1]
        found = self._end_filter(matched, emin, emax)
        self._remember(self._ended, MAX_END_FILTERS, key, (FrozenBitMap(matched), found))
        return found

    def _end_filter(self, matched: BitMap, emin: int | None, emax: int | None) -> BitMap:
        """``end_filter`` worked out: per duration class [dmin, dmax], an event starting at s ends
        within [s + dmin, s + dmax], so every start of a range passes, every start beyond it
        fails, and only the starts within (dmax - dmin) of a bound are looked at one by one."""
        starts, ends = self.starts, self.ends
        kept = []
        for dmin, dmax, members in self.classes:
            lo = bisect.bisect_left(starts, emin - dmax) if emin is not None else 0
            hi = bisect.bisect_right(starts, emax - dmin) if emax is not None else self.size
            if lo >= hi:
                continue
            part = members & matched
            if lo > 0 or hi < self.size:
                part &= BitMap(range(lo, hi))
            if not part:
                continue
            doubtful = []
            if emin is not None:
                doubtful.append((lo, bisect.bisect_left(starts, emin - dmin)))
            if emax is not None:
                doubtful.append((bisect.bisect_right(starts, emax - dmax), hi))
            failing = []
            for a, b in doubtful:
                for p in part.iter_equal_or_larger(a):
                    if p >= b:
                        break
                    e = ends[p]
                    if (emin is not None and e < emin) or (emax is not None and e > emax):
                        failing.append(p)
            if failing:
                part -= BitMap(failing)
            kept.append(part)
        return BitMap.union(BitMap(), *kept)


def _split(shared: dict, text: str | None, sep: str | None) -> frozenset:
    """The set of the words of ``text`` (split at ``sep``), kept in ``shared`` by its text."""
    if not text:
        return frozenset()
    found = shared.get((sep, text))
    if found is None:
        found = shared[(sep, text)] = frozenset(text.split(sep))
    return found


class ExtraDoc:
    """The index document of an event changed since the base was read, as the lists match it."""

    __slots__ = ("rid", "owner", "path", "start", "end", "pub", "key", "status", "author", "flags", "parent", "refs",
                 "tokens")

    def __init__(self, doc: dict, shared: dict | None = None):
        """``shared`` (optional) keeps the parsed sets by their text, so the occurrences of one
        series, whose documents share those texts, share the sets too."""
        shared = {} if shared is None else shared
        self.rid = doc["rid"]
        self.owner = doc.get("owner", self.rid)   # the id of the file's record (a series' for an occurrence)
        self.path = doc["path"]
        self.start, self.end, self.pub = doc["start"], doc["end"], doc["pub"]
        self.key = (self.start, self.pub, self.rid)
        self.status = doc["status"]
        self.author = doc["author"]
        self.flags = _split(shared, doc.get("flags"), ",")
        self.parent = doc.get("parent")
        self.refs = {f: _split(shared, doc[f], ",") for f in REFERENCE_FIELDS if doc.get(f)}
        self.tokens = _split(shared, doc.get("text"), None)

    def has(self, field: str, term: str) -> bool:
        """Whether the document carries ``term`` in ``field`` (as the index's postings would)."""
        if field == "status":
            return self.status == term
        if field == "author":
            return self.author == term
        if field == "flags":
            return term in self.flags
        if field == "parent":
            return self.parent == term
        if field == "text":
            return term in self.tokens
        return term in self.refs.get(field, ())


class IndexView:
    """One generation of the index, shared by every request until the next: a base, less the
    events changed since it was read (``dead``), plus their current documents (``extra``)."""

    def __init__(self, base: BaseView, commit: str, dead: BitMap | None = None, extra: dict | None = None,
                 site_tz=None):
        self.base = base
        self.site_tz = site_tz   # the zone of events without their own (occurrences are looked up in it)
        self.commit = commit
        self.dead = dead if dead is not None else BitMap()
        self.extra: dict[int, ExtraDoc] = extra or {}
        self.extra_sorted = sorted(self.extra.values(), key=lambda x: x.key)
        self.extra_by_path = {x.path: x.owner for x in self.extra.values()}

    def close(self) -> None:
        self.base.close()

    def advanced(self, snapshot, paths, document) -> IndexView:
        """The generation for ``snapshot``, whose event files ``paths`` changed since this one.

        Every id the changed files held or hold is taken out of the base and, when the snapshot
        still serves an event with it, given its current document (``document(record)``):
        two files may claim one id, so documents are replaced per id, not only per path.
        """
        base = self.base
        ids: set[int] = set()
        for path in paths:
            held = self.extra_by_path.get(path)
            if held is None:
                held = base.rid_of_path(path)
            if held is not None:
                ids.add(held)
            entry = snapshot.files.get(path)
            record = entry[1] if entry else None
            if record is not None and record.id is not None:
                ids.add(record.id)
        dead = BitMap(self.dead)
        extra = {k: x for k, x in self.extra.items() if x.owner not in ids}
        for rid in ids:
            held = base.positions_of(rid)
            if held is not None:
                dead |= held
            record = snapshot.get(EVENTS, rid)
            if record is not None:
                shared: dict = {}
                for doc in document(record):   # one per occurrence of a series
                    x = ExtraDoc(doc, shared)
                    extra[x.rid] = x
        return IndexView(base, snapshot.commit, dead, extra, self.site_tz)


def bound_range(q) -> tuple[int | None, int | None]:
    """The end bounds of ``q`` as whole seconds [emin, emax] (stored ends are whole seconds)."""
    emin = emax = None
    if q.end is not None:
        emax = math.floor(q.end.timestamp())
    if q.ends_before is not None:
        value = math.ceil(q.ends_before.timestamp()) - 1
        emax = value if emax is None else min(emax, value)
    if q.ends_after is not None:
        emin = math.floor(q.ends_after.timestamp()) + 1
    return emin, emax

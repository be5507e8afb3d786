"""One generation of the index as the lists read it: columns, sort order and cached document sets.

Per index generation the start/end/publish columns are read once and the events are kept
sorted by (start, publish date, id), so a date window is a bisect and filters are set lookups.
"""
from __future__ import annotations

import contextlib
import struct
import threading

from whoosh.reading import TermNotFound

from calendar_service.domain import permissions
from calendar_service.domain.queries import search_words

# Cached answers kept per generation before the cache is emptied (memory stays bounded
# whatever the callers ask): visibility sets per (statuses, user), text searches, term sets.
MAX_VISIBLE_SETS = 256
MAX_SEARCHES = 1000
# Document sets per (field, term) and per search word: terms come from requests.
MAX_SETS = 4096
# The numeric columns every generation reads whole.
COLUMNS = ("rid", "start", "end", "pub")


def read_column(reader, name: str) -> dict:
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
            for name in COLUMNS:
                getattr(self, name).update(read_column(reader, name))
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
                if len(self._sets) >= MAX_SETS:
                    self._sets.clear()
                self._sets[key] = found
        return found

    def visible(self, statuses, user) -> frozenset:
        """Documents of these statuses that ``user`` may list, hidden ones left out (cached)."""
        key = (tuple(statuses), permissions.viewer(user))
        found = self._visible.get(key)
        if found is None:
            found = self._status_docs(statuses, user) - self.docs("flags", "hide_from_listings")
            with self._lock:
                if len(self._visible) > MAX_VISIBLE_SETS:
                    self._visible.clear()
                self._visible[key] = found
        return found

    def _status_docs(self, statuses, user) -> frozenset:
        """The documents of each status ``user`` may see (``permissions.status_scope``)."""
        docs = set()
        for status in statuses:
            scope = permissions.status_scope(user, status)
            if scope == permissions.ALL:
                docs |= self.docs("status", status)
            elif scope == permissions.OWN:
                docs |= self.docs("status", status) & self.docs("author", str(user.id))
        return frozenset(docs)

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
                if len(self._searches) > MAX_SEARCHES:
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
                if len(self._sets) >= MAX_SETS:
                    self._sets.clear()
                self._sets[key] = found
        return found

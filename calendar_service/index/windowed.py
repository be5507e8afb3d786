"""Lists within a narrow start window, at a cost by the matches in it rather than by the terms.

A base (``view.BaseView``) keeps each term's events as a bitmap of positions in list order; the
first list naming a term would map every document of it to its position, one by one: at a
million events, tens of milliseconds for a category or a common word. A list whose start bounds
cover a small part of the base (``Window``) works in Whoosh document numbers instead: the term's
document numbers (a roaring bitmap: read whole from the segment's term sets, ``term_sets``, or
decoded from its postings; kept per base), intersected with the window's document numbers (the
base keeps them by block of positions, ``WINDOW_BLOCK``), and only the matches are mapped to
their positions. The result is exact within the window only: the caller (``query.events``)
keeps to it.
"""
from __future__ import annotations

from functools import cached_property
from itertools import chain
from operator import itemgetter

from pyroaring import BitMap
from whoosh.reading import TermNotFound

from calendar_service.domain import permissions
from calendar_service.domain.queries import search_words
from calendar_service.index import term_sets, whoosh_internals

# The sets of document numbers kept for lists within a window (``DocnumSets.docnums``), by their
# bytes: emptied when they would pass this.
MAX_DOCNUM_SET_BYTES = 32 << 20
# A list whose start bounds cover at most 1/WINDOW_SHARE of the base matches its terms within
# that window only (``Window``); a wider one reads each term's whole set of positions (kept).
WINDOW_SHARE = 2
# Positions per block of the window's document numbers kept whole (``BaseView._blocks``).
WINDOW_BLOCK = 4096
MAX_DOCNUM_SETS = 4096   # ... and by their count
MAX_VISIBLE_DOCNUM_SETS = 256   # (with the base's visibility sets: per statuses and viewer)


def leaf_posting_blocks(leaf, field: str, term: str):
    """The segment docnums of a term's postings in one segment's reader, a block at a time."""
    try:
        matcher = leaf.postings(field, term)
    except TermNotFound:
        return ()
    blocks = whoosh_internals.posting_blocks(matcher)
    return blocks if blocks is not None else (matcher.all_ids(),)


def segment_sets(leaf):
    """The term sets of ``leaf``'s segment (``term_sets``), or None."""
    return term_sets.SegmentSets.open(leaf) if hasattr(leaf, "segment") else None


class Window:
    """Positions [lo, hi) of a base, with the docnums of its events worked out when first asked."""

    def __init__(self, base: DocnumSets, lo: int, hi: int):
        self.base, self.lo, self.hi = base, lo, hi

    @cached_property
    def docnums(self) -> BitMap:
        return self.base.window_docnums(self.lo, self.hi)


def status_sets(term_set, statuses, user) -> BitMap:
    """The union of ``term_set(field, term)`` (positions or docnums) over the events of each
    status ``user`` may see (``permissions.status_scope``): every one, or only the user's own."""
    found = BitMap()
    for status in statuses:
        scope = permissions.status_scope(user, status)
        if scope == permissions.ALL:
            found |= term_set("status", status)
        elif scope == permissions.OWN:
            found |= term_set("status", status) & term_set("author", str(user.id))
    return found


class DocnumSets:
    """What a ``view.BaseView`` answers in document numbers (a mixin: the base's fields are
    ``_leaves``, ``_pos``, ``_docnum_of``, ``_blocks``, ``_series_docs``, ``members``,
    ``special``, ``owned``, ``size``, ``reader``, ``all``, ``_docnums``, ``_docnum_bytes``, ``_lock``)."""

    def _term_docnums(self, field: str, term: str) -> BitMap:
        """The docnums of ``term`` in ``field`` (deleted documents included): from each segment's
        term sets where it has them (``term_sets``), else decoded from its postings."""
        parts = []
        for leaf, offset, sets in self._leaves:
            found = sets.get(field, term) if sets is not None else None
            if found is None:
                found = BitMap(chain.from_iterable(leaf_posting_blocks(leaf, field, term)))
            if found:
                parts.append(found.shift(offset) if offset else found)
        return BitMap.union(BitMap(), *parts) if len(parts) != 1 else parts[0]

    def docnums(self, field: str, term: str) -> BitMap:
        """``_term_docnums``, kept for this base (within ``MAX_DOCNUM_SET_BYTES``)."""
        key = (field, term)
        found = self._docnums.get(key)
        if found is None:
            found = self._term_docnums(field, term)
            self._remember_docnums(key, found)
        return found

    def _remember_docnums(self, key, found: BitMap) -> None:
        stats = found.get_statistics()
        weight = (stats["n_bytes_array_containers"] + stats["n_bytes_run_containers"]
                  + stats["n_bytes_bitset_containers"] + 64)
        with self._lock:
            if len(self._docnums) >= MAX_DOCNUM_SETS or self._docnum_bytes + weight > MAX_DOCNUM_SET_BYTES:
                self._docnums.clear()
                self._docnum_bytes = 0
            self._docnums[key] = found
            self._docnum_bytes += weight

    def _positions(self, docnums: BitMap) -> BitMap:
        """The positions of ``docnums`` (series and deleted documents at ``self.size``)."""
        if len(docnums) > 1:
            return BitMap(itemgetter(*docnums)(self._pos))
        return BitMap([self._pos[d] for d in docnums])

    def window(self, lo: int, hi: int) -> Window | None:
        """The positions [lo, hi) as a ``Window``, or None when it covers more than
        1/WINDOW_SHARE of the base (its terms' whole sets are read then, and kept)."""
        return Window(self, lo, hi) if (hi - lo) * WINDOW_SHARE <= self.size else None

    def window_docnums(self, lo: int, hi: int) -> BitMap:
        """The docnums of the events (not the series) at positions [lo, hi): the blocks within
        whole, the ends position by position."""
        if lo >= hi:
            return BitMap()
        block = self._block
        first, last = -(-lo // block), hi // block
        if first >= last:
            parts = [BitMap(self._docnum_of[lo:hi])]
        else:
            parts = self._blocks[first:last]
            if lo < first * block:
                parts.append(BitMap(self._docnum_of[lo:first * block]))
            if last * block < hi:
                parts.append(BitMap(self._docnum_of[last * block:hi]))
        found = BitMap.union(BitMap(), *parts)
        return found - self._series_docs if self._series_docs else found

    def docnum_blocks(self) -> list[BitMap]:
        """The docnums at each block of WINDOW_BLOCK positions (a series' among them too)."""
        docnums, self._block = self._docnum_of, WINDOW_BLOCK
        return [BitMap(docnums[i:i + WINDOW_BLOCK]) for i in range(0, len(docnums), WINDOW_BLOCK)]

    @property
    def position_list(self) -> list:
        """Whoosh docnum -> position (``self.size`` for a series or a deleted document)."""
        return self._pos

    def parts_of(self, lo: int, hi: int):
        """The docnums of the events (not the series) at positions [lo, hi), in order of
        position, a block of positions at most each."""
        block = self._block
        while lo < hi:
            end = min(hi, (lo // block + 1) * block)
            if lo % block == 0 and end - lo == block and lo // block < len(self._blocks):
                found = self._blocks[lo // block]
            else:
                found = BitMap(self._docnum_of[lo:end])
                if self._series_docs:
                    found -= self._series_docs
            yield found
            lo = end

    def visible_docnums(self, statuses, user) -> BitMap:
        """``visible`` in docnums (series and deleted documents may be among them; kept)."""
        key = ("docnums", tuple(statuses), permissions.viewer(user))
        found = self._visible.get(key)
        if found is None:
            found = status_sets(self.docnums, statuses, user) - self.docnums("flags", "hide_from_listings")
            self._remember(self._visible, MAX_VISIBLE_DOCNUM_SETS, key, found)
        return found

    def search_docnums(self, text: str) -> BitMap | None:
        """The docnums whose text has every word of ``text``; None for no words (every event)."""
        words = list(dict.fromkeys(search_words(text)))
        return BitMap.intersection(*(self.word_docnums(w) for w in words)) if words else None

    def within(self, docnums: BitMap, window: Window) -> BitMap:
        """The positions of the events of ``docnums`` within ``window`` (occurrences of series
        are the caller's): a cost by the matches in the window, not by the term's documents."""
        return self._positions(docnums & window.docnums)

    def _search_within(self, text: str, window: Window) -> BitMap:
        """``search`` within ``window``: the words' docnums intersected, then placed (``word``'s
        parts: the events, the series' occurrences, the occurrences with their own text)."""
        words = list(dict.fromkeys(search_words(text)))
        if not words:
            return self.all
        docnums = BitMap.intersection(*(self.word_docnums(w) for w in words))
        found = self.within(docnums, window)
        if not self.owned:
            return found
        members = self.members
        parts = [members[d] for d in self._series_docs & docnums if d in members]
        extra = [p for p, x in self.special.items() if all(any(t.startswith(w) for t in x.tokens) for w in words)]
        if extra:
            parts.append(BitMap(extra))
        return BitMap.union(found, *parts)

    def word_docnums(self, word: str) -> BitMap:
        """The docnums with ``word``, or a word beginning with it, in their text (kept)."""
        key = ("text*", word)
        found = self._docnums.get(key)
        if found is None:
            terms = (t.decode("utf-8") if isinstance(t, bytes) else t for t in self.reader.expand_prefix("text", word))
            found = BitMap.union(BitMap(), *(self._term_docnums("text", term) for term in terms))
            self._remember_docnums(key, found)
        return found

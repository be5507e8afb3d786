"""Answering an event list (an ``EventQuery``) from one index generation."""
from __future__ import annotations

import bisect
from datetime import datetime

from calendar_service.domain.queries import (EventQuery, Page, protected_events, search_words, searchable_tokens,
                                             text_matches)
from calendar_service.domain.resources import EVENTS, RESOURCES
from calendar_service.domain.snapshot import Snapshot, ref_term
from calendar_service.index.view import IndexView

# Reference filters: (index field, query attribute, resource the ids name).
REFERENCE_FILTERS = (("categories", "categories", "categories"), ("tags", "tags", "tags"),
                     ("venue", "venues", "venues"), ("organizer", "organizers", "organizers"))
# Below one match per this many events of the window, matches are tested against the window
# one by one instead of intersecting with the window's set.
SPARSE_WINDOW = 4
# The page is found by sorting the matches rather than walking the window when walking would
# visit more events than 1/WALK_SHARE of the matches plus WALK_SLACK.
WALK_SHARE = 4
WALK_SLACK = 50


def _bound(moment: datetime) -> float:
    """A query bound as epoch seconds, fractions kept (stored times are whole seconds)."""
    return moment.timestamp()


def events(view: IndexView, snapshot: Snapshot, q: EventQuery, user) -> Page | None:
    """Answer an event list from the index; None when the query needs the scanning path (geo)."""
    if q.geoloc is not None or q.near is not None:
        return None
    if q.ticketed:
        return Page([], 0, q.page, q.per_page)
    matched = _matching(view, snapshot, q, user)
    first = (q.page - 1) * q.per_page
    if q.include is not None:
        wanted_docs = [view.by_rid[i] for i in dict.fromkeys(q.include) if i in view.by_rid]
        ordered = [d for d in sorted(wanted_docs, key=lambda d: (view.pub[d], view.rid[d])) if d in matched]
        return _page(view, snapshot, q, ordered[first:first + q.per_page], len(ordered))
    lo, hi = _start_window(view, q)
    if lo >= hi:
        return Page([], 0, q.page, q.per_page)
    matched = _in_window(view, matched, lo, hi)
    failing = _failing_end_bounds(view, q, lo, hi)
    if failing:
        matched = matched - failing
    total = len(matched)
    return _page(view, snapshot, q, _page_docs(view, matched, lo, hi, first, first + q.per_page), total)


def _page(view: IndexView, snapshot: Snapshot, q: EventQuery, docs, total: int) -> Page:
    items = [snapshot.get(EVENTS, view.rid[d]) for d in docs]
    return Page([r for r in items if r is not None], total, q.page, q.per_page)


def _matching(view: IndexView, snapshot: Snapshot, q: EventQuery, user) -> frozenset:
    """The documents every filter but the date bounds lets through."""
    sets = [view.visible(q.statuses, user)]
    for field, attribute, target in REFERENCE_FILTERS:
        wanted = getattr(q, attribute)
        if wanted is not None:
            sets.append(view.any_of(field, _ref_terms(snapshot, target, wanted)))
    if q.search:
        sets.append(_searchable(view.search(q.search), view, snapshot, q))
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
    return matched


def _searchable(found: frozenset, view: IndexView, snapshot: Snapshot, q: EventQuery) -> frozenset:
    """``found`` (the events whose text matches the search) less the password-protected ones
    the caller may not see in full and whose title alone does not match (``queries.searchable_tokens``)."""
    words = search_words(q.search)
    hidden = set()
    for event in protected_events(snapshot):
        doc = view.by_rid.get(event.id)
        if doc in found and not text_matches(words, searchable_tokens(event, q.unlocked)):
            hidden.add(doc)
    return found - hidden if hidden else found


def _start_window(view: IndexView, q: EventQuery) -> tuple[int, int]:
    """The range of ``view.order`` whose starts satisfy the start bounds."""
    lo, hi = 0, len(view.order)
    if q.start is not None:
        lo = max(lo, bisect.bisect_left(view.sorted_starts, _bound(q.start)))
    if q.starts_after is not None:
        lo = max(lo, bisect.bisect_right(view.sorted_starts, _bound(q.starts_after)))
    if q.starts_before is not None:
        hi = min(hi, bisect.bisect_left(view.sorted_starts, _bound(q.starts_before)))
    return lo, hi


def _in_window(view: IndexView, matched, lo: int, hi: int):
    """The matches inside the window (postings may still name deleted documents: only live ones count)."""
    if lo == 0 and hi == len(view.order):
        return matched & view.live
    if len(matched) * SPARSE_WINDOW < hi - lo:
        pos = view.pos
        return {d for d in matched if lo <= pos.get(d, -1) < hi}
    return matched & frozenset(view.order[lo:hi])


def _failing_end_bounds(view: IndexView, q: EventQuery, lo: int, hi: int) -> set:
    """Documents of the window whose end fails an end bound.

    end >= start + min_duration and end <= start + max_duration: only events starting
    near a bound can fail it, so only those are looked at.
    """
    end_max = _bound(q.end) if q.end is not None else None
    ends_before = _bound(q.ends_before) if q.ends_before is not None else None
    ends_after = _bound(q.ends_after) if q.ends_after is not None else None
    if end_max is None and ends_before is None and ends_after is None:
        return set()
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
    return failing


def _page_docs(view: IndexView, matched, lo: int, hi: int, first: int, want: int) -> list:
    """The matches ``first`` to ``want`` in list order."""
    total = len(matched)
    if first >= total:
        return []
    if want * (hi - lo) / total > total // WALK_SHARE + WALK_SLACK:
        # sparse matches in a long window: sorting the matches is cheaper than walking the window
        return sorted(matched, key=view.pos.__getitem__)[first:want]
    page_docs = []
    order = view.order
    for i in range(lo, hi):
        doc = order[i]
        if doc in matched:
            page_docs.append(doc)
            if len(page_docs) == want:
                break
    return page_docs[first:]


def _ref_terms(snapshot: Snapshot, target: str, ids) -> list[str]:
    """Index terms for records ``ids``: their ids, and their slugs (editors may reference by slug)."""
    resource = RESOURCES[target]
    terms = []
    for rid in ids:
        terms.append(ref_term(rid))
        record = snapshot.get(resource, rid)
        if record is not None:
            terms.append(ref_term(record.slug))
    return terms

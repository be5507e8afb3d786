"""Answering an event list (an ``EventQuery``) from one index generation.

Filters are intersections of bitmaps of positions (``view.BaseView``); the start bounds make
a range of positions, the end bounds are answered per duration class; the total is a count
and the page a select by rank. The few events changed since the base was read
(``IndexView.extra``) are matched one by one, by the same rules, and merged in list order.
"""
from __future__ import annotations

import bisect

from pyroaring import BitMap

from calendar_service.domain import occurrences, permissions
from calendar_service.domain.queries import (EventQuery, Page, search_words, searchable_tokens,
                                             text_matches)
from calendar_service.domain.recurrence.ids import ID_BASE, MINUTE_BITS
from calendar_service.domain.resources import EVENTS, RESOURCES
from calendar_service.domain.snapshot import Snapshot, ref_term
from calendar_service.index.view import BaseView, ExtraDoc, IndexView, bound_range
from calendar_service.index.windowed import Window

# Reference filters: (index field, query attribute, resource the ids name).
REFERENCE_FILTERS = (("categories", "categories", "categories"), ("tags", "tags", "tags"),
                     ("venue", "venues", "venues"), ("organizer", "organizers", "organizers"))


def events(view: IndexView, snapshot: Snapshot, q: EventQuery, user) -> Page | None:
    """Answer an event list from the index; None when the query needs the scanning path (geo)."""
    if q.geoloc is not None or q.near is not None:
        return None
    if q.ticketed:
        return Page([], 0, q.page, q.per_page)
    base = view.base
    first = (q.page - 1) * q.per_page
    if q.include is not None:
        matched, extra = _matching(view, snapshot, q, user)
        return _included(view, snapshot, q, matched, extra, first)
    emin, emax = bound_range(q)
    lo, hi = _end_window(base, *_start_window(base.starts, q), emin, emax)
    window = base.window(lo, hi)
    if window is not None:
        page = _page_within(view, snapshot, q, user, window, emin, emax)
        if page is not None:
            return page
    # the terms are matched within the start window when it is narrow (their sets are then
    # exact within it only: everything below keeps to it)
    matched, extra = _matching(view, snapshot, q, user, window)
    if lo > 0 or hi < base.size:
        matched = matched & BitMap(range(lo, hi)) if lo < hi else BitMap()
    if (emin is not None or emax is not None) and matched:
        matched = base.end_filter(matched, emin, emax)
    if extra:
        extra = [x for x in extra if _dates_pass(x, q, emin, emax)]
    total = len(matched) + len(extra)
    if q.files:
        return _files_page(snapshot, q, _file_ids(base, matched, extra), total)
    rids = _page_rids(base, matched, extra, first, min(first + q.per_page, total))
    return _page(view, snapshot, q, rids, total)


def _page_within(view: IndexView, snapshot: Snapshot, q: EventQuery, user, window: Window, emin, emax) -> Page | None:
    """A list of the base alone (no changed events, no series) in a narrow window, by its
    filters' docnums: the total counted a block of positions at a time, only the page's matches
    (and those near the window's ends, which the end bounds may refuse) placed; None when the
    list needs the general path (changed events, series, protected events and a search, the
    filters on parent, featured or owner, files)."""
    base = view.base
    if (view.extra or view.dead or base.owned or q.files or q.post_parent is not None or q.featured is not None
            or q.owner is not None or (q.search and snapshot.protected_events())):
        return None
    sets = [base.visible_docnums(q.statuses, user)]
    for field, attribute, target in REFERENCE_FILTERS:
        wanted = getattr(q, attribute)
        if wanted is not None:
            terms = _ref_terms(snapshot, target, wanted)
            sets.append(BitMap.union(BitMap(), *(base.docnums(field, term) for term in terms)))
    if q.search:
        found = base.search_docnums(q.search)
        if found is not None:
            sets.append(found)
    matched = BitMap.intersection(*sets) if len(sets) > 1 else sets[0]
    lo, hi = window.lo, window.hi
    sure_lo, sure_hi = lo, hi   # the starts whose events pass the end bounds whatever their durations
    if base.classes:
        shortest, longest = base.classes[0][0], base.classes[-1][1]
        if emin is not None:
            sure_lo = min(hi, max(lo, bisect.bisect_left(base.starts, emin - shortest)))
        if emax is not None:
            sure_hi = max(sure_lo, min(hi, bisect.bisect_right(base.starts, emax - longest)))
    first = (q.page - 1) * q.per_page
    want = first + q.per_page
    pos, ends, rank, out = base.position_list, base.ends, 0, []
    for a, b, sure in ((lo, sure_lo, False), (sure_lo, sure_hi, True), (sure_hi, hi, False)):
        for docnums in base.parts_of(a, b):
            if sure:
                count = matched.intersection_cardinality(docnums)
                if not (first < rank + count and rank < want):
                    rank += count
                    continue
            placed = sorted(map(pos.__getitem__, matched & docnums))
            if not sure:
                placed = [p for p in placed if (emin is None or ends[p] >= emin) and (emax is None or ends[p] <= emax)]
            if first < rank + len(placed) and rank < want:
                out.extend(placed[max(0, first - rank):want - rank])
            rank += len(placed)
    rids = base.rids
    return _page(view, snapshot, q, [rids[p] for p in out], rank)


def _page(view: IndexView, snapshot: Snapshot, q: EventQuery, rids, total: int) -> Page:
    # an event the base lists as one of its own and that has not changed since is its record as
    # it is: whether its file declares a series is not read again (that unpacks a record whose
    # presented text is mostly kept already)
    base, changed = view.base, view.extra
    items = [snapshot.get(EVENTS, rid) if rid not in changed and base.single_event(rid)
             else occurrences.listed_record(snapshot, rid, view.site_tz) for rid in rids]
    return Page([r for r in items if r is not None], total, q.page, q.per_page)


def owner_of(rid: int) -> int:
    """The id of the file a served id comes from: the series id of an occurrence id, else itself."""
    return (rid - ID_BASE) >> MINUTE_BITS if ID_BASE <= rid < ID_BASE << 1 else rid


def _file_ids(base: BaseView, matched: BitMap, extra: list[ExtraDoc]) -> list[int]:
    """``EventQuery.files``: the ids of the files with a match, each once, in the list order of
    its first match. Costs by the files, not by the occurrences: a series' first match is the
    smallest of its positions that matched."""
    firsts = matched
    if base.owned and matched:
        firsts = matched - base.occurrence_positions   # the single events
        for held in base.owned.values():
            mine = held & matched
            if mine:
                firsts.add(mine.min())
    rids, starts, pubs = base.rids, base.starts, base.pubs
    keyed = [((starts[p], pubs[p], rids[p]), owner_of(rids[p])) for p in firsts]
    if extra:
        seen = set()
        for x in extra:   # in list order: the first document of a file is its first match
            if x.owner not in seen:
                seen.add(x.owner)
                keyed.append((x.key, x.owner))
        keyed.sort(key=lambda pair: pair[0])
    return [owner for _, owner in keyed]


def _files_page(snapshot: Snapshot, q: EventQuery, ids: list[int], total: int) -> Page:
    first = (q.page - 1) * q.per_page
    records = (snapshot.get(EVENTS, rid) for rid in ids[first:first + q.per_page])
    return Page([r for r in records if r is not None], total, q.page, q.per_page)


def _included(view: IndexView, snapshot: Snapshot, q: EventQuery, matched: BitMap, extra: list, first: int) -> Page:
    """``include``: the listed events that match, by publication date and id (no date bounds)."""
    base, extra_ids = view.base, {x.rid for x in extra}
    found = []
    for rid in dict.fromkeys(q.include):
        if rid in view.extra:
            if rid in extra_ids:
                found.append((view.extra[rid].pub, rid))
            continue
        slot = base.slot.get(rid)
        if slot is not None and slot in matched:
            found.append((base.pubs[slot], rid))
    found.sort()
    if q.files:
        return _files_page(snapshot, q, list(dict.fromkeys(owner_of(rid) for _, rid in found)), len(found))
    return _page(view, snapshot, q, [rid for _, rid in found[first:first + q.per_page]], len(found))


def _matching(view: IndexView, snapshot: Snapshot, q: EventQuery, user, window: Window | None = None) \
        -> tuple[BitMap, list[ExtraDoc]]:
    """The base positions and the changed events every filter but the date bounds lets through
    (with a ``window``: the base positions within it; outside it, some may be missing)."""
    base = view.base
    sets = [base.visible(q.statuses, user)]
    ref_terms = {}
    for field, attribute, target in REFERENCE_FILTERS:
        wanted = getattr(q, attribute)
        if wanted is not None:
            ref_terms[field] = terms = _ref_terms(snapshot, target, wanted)
            sets.append(base.any_of(field, terms, window))
    words = search_words(q.search) if q.search else None
    if q.search:
        sets.append(base.search(q.search, window))
    if q.post_parent is not None:
        sets.append(base.docs("parent", str(q.post_parent)))
    if q.featured:
        sets.append(base.docs("flags", "featured"))
    if q.owner is not None:
        sets.append(base.positions_of(q.owner) or BitMap())
    matched = BitMap.intersection(*sets) if len(sets) > 1 else sets[0]
    if q.featured is False or view.dead:
        matched = matched - view.dead
        if q.featured is False:
            matched -= base.docs("flags", "featured")
    extra = [x for x in view.extra_sorted if _extra_passes(x, q, user, ref_terms, words)]
    if q.search:
        matched, extra = _searchable(view, snapshot, q, words, matched, extra)
    return matched, extra


def _extra_passes(x: ExtraDoc, q: EventQuery, user, ref_terms: dict, words) -> bool:
    """Whether a changed event passes the filters ``_matching`` applies to the base."""
    if "hide_from_listings" in x.flags or x.status not in q.statuses:
        return False
    scope = permissions.status_scope(user, x.status)
    if not (scope == permissions.ALL or (scope == permissions.OWN and x.author == str(user.id))):
        return False
    for field, terms in ref_terms.items():
        if not x.refs.get(field, frozenset()).intersection(terms):
            return False
    if words and not text_matches(words, x.tokens):
        return False
    if q.post_parent is not None and x.parent != str(q.post_parent):
        return False
    if q.featured is not None and ("featured" in x.flags) != q.featured:
        return False
    if q.owner is not None and x.owner != q.owner:
        return False
    return True


def _searchable(view: IndexView, snapshot: Snapshot, q: EventQuery, words, matched: BitMap, extra: list):
    """The matches less the password-protected events the caller may not see in full and whose
    title alone does not match (``queries.searchable_tokens``); a protected series' occurrences
    are checked one by one (an exception may give one its own title)."""
    base = view.base
    hidden_slots, hidden_ids = [], set()
    extra_by_owner: dict[int, list] = {}
    for x in extra:
        extra_by_owner.setdefault(x.owner, []).append(x.rid)
    for event in snapshot.protected_events():
        held = base.positions_of(event.id)
        listed = [base.rids[p] for p in (held & matched)] if held is not None else []
        listed += extra_by_owner.get(event.id, [])
        series_tokens = None
        for rid in listed:
            if rid == event.id and not event.data.get("recurrence"):
                tokens = searchable_tokens(event, q.unlocked)
            else:
                occ = occurrences.listed_record(snapshot, rid, view.site_tz)
                if occ is None:
                    continue
                if not occ.special:
                    if series_tokens is None:
                        series_tokens = searchable_tokens(occ, q.unlocked)
                    tokens = series_tokens
                else:
                    tokens = searchable_tokens(occ, q.unlocked)
            if not text_matches(words, tokens):
                hidden_ids.add(rid)
                slot = base.slot.get(rid)
                if slot is not None:
                    hidden_slots.append(slot)
    if hidden_slots:
        matched = matched - BitMap(hidden_slots)
    if hidden_ids:
        extra = [x for x in extra if x.rid not in hidden_ids]
    return matched, extra


def _start_window(starts: list, q: EventQuery) -> tuple[int, int]:
    """The range of positions whose starts satisfy the start bounds."""
    lo, hi = 0, len(starts)
    if q.start is not None:
        lo = max(lo, bisect.bisect_left(starts, q.start.timestamp()))
    if q.starts_after is not None:
        lo = max(lo, bisect.bisect_right(starts, q.starts_after.timestamp()))
    if q.starts_before is not None:
        hi = min(hi, bisect.bisect_left(starts, q.starts_before.timestamp()))
    return lo, hi


def _end_window(base: BaseView, lo: int, hi: int, emin: int | None, emax: int | None) -> tuple[int, int]:
    """The start window narrowed by the end bounds: an event lasting at least the base's
    shortest duration and at most its longest ends after ``emax`` if it starts after ``emax``
    less the shortest, and before ``emin`` if it starts before ``emin`` less the longest (a list
    from one day to another is a window of starts, not every start from the first day on)."""
    if base.classes:
        shortest, longest = base.classes[0][0], base.classes[-1][1]
        if emax is not None:
            hi = min(hi, bisect.bisect_right(base.starts, emax - shortest))
        if emin is not None:
            lo = max(lo, bisect.bisect_left(base.starts, emin - longest))
    return lo, hi


def _dates_pass(x: ExtraDoc, q: EventQuery, emin, emax) -> bool:
    if q.start is not None and x.start < q.start.timestamp():
        return False
    if q.starts_after is not None and not x.start > q.starts_after.timestamp():
        return False
    if q.starts_before is not None and not x.start < q.starts_before.timestamp():
        return False
    return (emin is None or x.end >= emin) and (emax is None or x.end <= emax)


def _page_rids(base: BaseView, matched: BitMap, extra: list, first: int, want: int) -> list[int]:
    """The ids of the matches ``first`` to ``want`` in list order: the base's by rank, the
    changed events placed among them by their sort keys."""
    if first >= want:
        return []
    rids = base.rids
    if not extra:
        return [rids[p] for p in matched[first:want]]
    placed = []   # each changed event's index in the merged order (strictly increasing)
    for j, x in enumerate(extra):
        before = base.position_after(x.key)
        placed.append((matched.rank(before - 1) if before > 0 else 0) + j)
        if placed[-1] >= want:
            break   # the later ones come after the page (a series' edit costs by the page, not its occurrences)
    out = []
    e = bisect.bisect_left(placed, first)
    for g in range(first, want):
        if e < len(placed) and placed[e] == g:
            out.append(extra[e].rid)
            e += 1
        else:
            out.append(rids[matched[g - e]])
    return out


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

"""List queries: which records a list request selects, and in which order.

Queries are plain data built by the HTTP layer from validated parameters. This module
answers them by scanning a snapshot; the search index answers the same queries faster.
Times are compared as UTC instants computed from each event's own time zone.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from whoosh.analysis import STOP_WORDS
from whoosh.lang.porter import stem as _porter_stem

from calendar_service.domain.faults import FAULTS
from calendar_service.domain import dates
from calendar_service.domain import occurrences, permissions
from calendar_service.domain.recurrence import occurrences as expand_series
from calendar_service.domain.roles import User
from calendar_service.domain.snapshot import Snapshot
from calendar_service.domain.record import Record
from calendar_service.domain.resources import CATEGORIES, EVENTS, Resource


@dataclass
class Page:
    items: list
    total: int
    page: int
    per_page: int

    @property
    def total_pages(self) -> int:
        return -(-self.total // self.per_page) if self.total else 0


@dataclass
class EventQuery:
    page: int = 1
    per_page: int = 10
    start: datetime | None = None          # event start >= start (UTC)
    end: datetime | None = None            # event end <= end
    starts_before: datetime | None = None
    starts_after: datetime | None = None
    ends_before: datetime | None = None
    ends_after: datetime | None = None
    search: str | None = None
    categories: set[int] | None = None
    tags: set[int] | None = None
    venues: set[int] | None = None
    organizers: set[int] | None = None
    featured: bool | None = None
    statuses: tuple[str, ...] = ("publish",)
    include: list[int] | None = None
    post_parent: int | None = None
    ticketed: bool | None = None
    geoloc: bool | None = None
    near: tuple[float, float] | None = None
    # whether the caller may see a password-protected event's protected fields (it gave the
    # password, or may edit it); None: nobody may. Who may not matches such an event by its title only.
    unlocked: Callable[[Record], bool] | None = None
    # open-ended series are listed up to this instant (``occurrences.horizon``; None: today's default)
    horizon: datetime | None = None
    # only this event, or this series' occurrences (``GET /events/{id}/occurrences``)
    owner: int | None = None
    # the matching FILES, not occurrences (an unpaged iCalendar feed): each event file once, a
    # series as its own record at the place of its first matching occurrence; ``total`` still
    # counts the matching occurrences, ``page``/``per_page`` slice the files
    files: bool = False


@dataclass
class LinkedQuery:
    page: int = 1
    per_page: int = 10
    search: str | None = None
    event: int | None = None
    has_events: bool | None = None
    only_with_upcoming: bool = False
    statuses: tuple[str, ...] = ("publish",)


@dataclass
class TermQuery:
    page: int = 1
    per_page: int = 10
    search: str | None = None
    include: list[int] | None = None
    exclude: list[int] | None = None
    order: str = "asc"
    orderby: str = "name"
    hide_empty: bool = True
    parent: int | None = None
    post: int | None = None
    slug: str | None = None


def utc_bounds(snapshot: Snapshot, event: Record, site_tz) -> tuple[datetime, datetime]:
    """The event's start and end as UTC instants."""
    tz = dates.zone(event.data.get("timezone"), site_tz)
    start, end = dates.event_span(event.data["start_date"], event.data["end_date"], tz)
    return start.astimezone(timezone.utc), end.astimezone(timezone.utc)


_WORD = re.compile(r"\w+(?:\.?\w+)*")   # whoosh's default tokenizer pattern
_STEMS: dict[str, str] = {}


def analyse(text: str) -> list[str]:
    """The analysed words of ``text``, as whoosh's StemmingAnalyzer gives them (split on its
    word pattern, lowercased, words shorter than 2 letters and stop words dropped, Porter
    stemmed), written out because the indexer spends most of its time in the generic chain."""
    return list(_stems(_WORD.findall(text)))


_ANALYSED: dict[str, str] = {}   # a word as written -> its stem, "" for a dropped word


def analysed_set(text: str) -> set[str]:
    """``set(analyse(text))``, each distinct word analysed once (a description repeats its words);
    a word as written is remembered with its stem, so a known word costs one lookup (a full
    reindex analyses every event)."""
    memo = _ANALYSED   # only grows (threads read it), up to 200,000 words
    words = set(_WORD.findall(text))
    new = words.difference(memo)
    if not new:
        out = {memo[word] for word in words}
    else:
        stems = {word: next(_stems((word,)), "") for word in new}
        if len(memo) < 200_000:
            memo.update(stems)
        out = {memo[word] for word in words if word not in stems}
        out.update(stems.values())
    out.discard("")
    return out


def _stems(words):
    """The stems of ``words`` (lowercased; short and stop words dropped), remembered per word."""
    stems = _STEMS
    for word in words:
        word = word.lower()
        if len(word) < 2 or word in STOP_WORDS:
            continue
        stemmed = stems.get(word)
        if stemmed is None:
            stemmed = _porter_stem(word)
            if len(stems) < 200_000:
                stems[word] = stemmed
        yield stemmed


def search_words(text: str) -> list[str]:
    """The words of a search as the index sees them (lowercased, stop words dropped, stemmed)."""
    return analyse(text)


def text_matches(words: list[str], tokens) -> bool:
    """Whether every word is one of ``tokens`` or the beginning of one (as the index matches).
    ``tokens`` is a set of words, or a word string (``word_string``: a substring test each)."""
    if isinstance(tokens, str):
        return all(f" {w}" in tokens for w in words)
    return all(w in tokens or any(t.startswith(w) for t in tokens) for w in words)


def word_string(words) -> str:
    """Distinct analysed words as one string, each after a space (" concert jazz night"): the
    compact form a record keeps (far smaller than a frozenset), in which "a word begins with
    ``w``" is the substring test ``" " + w in`` it."""
    return "".join(f" {w}" for w in sorted(set(words)))


def event_text(event: Record) -> str:
    """The searchable text of an event: its title, excerpt and description."""
    return " ".join(str(event.data.get(k) or "") for k in ("title", "excerpt", "description"))


def event_tokens(event: Record) -> str:
    """The analysed words of an event's title, excerpt and description as a ``word_string``
    (kept on the record, which is immutable for its blob; the scanning lists' search)."""
    tokens = event.remembered("words")
    if tokens is None:
        tokens = word_string(analysed_set(event_text(event)))
        event.remember("words", tokens)
    return tokens


def title_tokens(event: Record) -> str:
    """The analysed words of an event's title alone, as a ``word_string`` (kept on the record)."""
    tokens = event.remembered("title_words")
    if tokens is None:
        tokens = word_string(analysed_set(str(event.data.get("title") or "")))
        event.remember("title_words", tokens)
    return tokens


def searchable_tokens(event: Record, unlocked) -> str:
    """The words a search may match an event on: all of its text, or only its title when it is
    password-protected and the caller may not see the protected fields (as WordPress keeps
    protected text out of searches), so a search never reveals a word of hidden text."""
    if event.data.get("password") and not (unlocked is not None and unlocked(event)):
        return title_tokens(event)
    return event_tokens(event)


def _ids(snapshot: Snapshot, event: Record, key: str) -> set[int]:
    return {r.id for r in snapshot.refs(event, key)}


def _passes(snapshot: Snapshot, event: Record, q: EventQuery, user: User | None, words, include) -> bool:
    """Whether ``event`` (an event or an occurrence) passes every filter of ``q`` but the dates."""
    data = event.data
    if data.get("hide_from_listings"):
        return False
    if not permissions.listable(user, event, q.statuses):
        return False
    if include is not None and event.id not in include:
        return False
    if q.post_parent is not None and data.get("post_parent") != q.post_parent:
        return False
    if q.featured is not None and bool(data.get("featured")) != q.featured:
        return False
    if q.ticketed:  # nothing here sells tickets
        return False
    if words and not text_matches(words, searchable_tokens(event, q.unlocked)):
        return False
    for key, wanted in (("categories", q.categories), ("tags", q.tags), ("venue", q.venues),
                        ("organizer", q.organizers)):
        if wanted is not None and not (_ids(snapshot, event, key) & wanted):
            return False
    if q.geoloc is not None or q.near is not None:
        located = [v for v in snapshot.refs(event, "venue")
                   if v.data.get("geo_lat") is not None and v.data.get("geo_lng") is not None]
        if q.geoloc is not None and bool(located) != q.geoloc:
            return False
        if q.near is not None and not located:
            return False
    return True


def _dates_pass(start: datetime, end: datetime, q: EventQuery) -> bool:
    if q.start and start < q.start or q.end and end > q.end:
        return False
    if q.starts_before and not start < q.starts_before or q.starts_after and not start > q.starts_after:
        return False
    return not (q.ends_before and not end < q.ends_before or q.ends_after and not end > q.ends_after)


def _occurrences(snapshot: Snapshot, series: Record, q: EventQuery, user: User | None, words, include, site_tz):
    """(sort key, occurrence) of the series' occurrences that pass ``q``; an occurrence is a
    record, or (series record, series, occurrence) to be made one if it is on the page. The
    occurrences with no exception beyond their times and not served under the series id pass or
    fail alike but for their dates, so one of them stands for all."""
    parsed = occurrences.series_or_none(series, site_tz)
    if parsed is None:
        return
    bounds = {} if include is not None else dict(
        window_start=q.start, window_end=q.end, starts_after=q.starts_after, starts_before=q.starts_before,
        ends_after=q.ends_after, ends_before=q.ends_before)
    until = q.horizon or occurrences.horizon()
    pub = series.data.get("date_utc") or ""
    served_of = occurrences.served_ids(parsed, series.id)
    alike = None
    for occ in expand_series(parsed, horizon_end=until, **bounds):
        served = served_of(occ.original_start)
        plain = include is None and served != series.id and not (occ.overrides and occurrences.needs_document(occ))
        item = (series, parsed, occ)
        if plain and alike is not None:
            passed = alike
        else:
            item = occurrences.occurrence_record(series, parsed, occ)
            passed = _passes(snapshot, item, q, user, words, include)
            if plain:
                alike = passed
        if not passed:
            continue
        if include is None:
            start = occ.start_utc
            if not _dates_pass(start, occ.end_utc, q):
                continue
            yield (start, pub, served), item
        else:
            yield (pub, served), item


def _made(item) -> Record:
    return item if isinstance(item, Record) else occurrences.occurrence_record(*item)


def events(snapshot: Snapshot, q: EventQuery, user: User | None, site_tz) -> Page:
    """Events matching ``q`` that ``user`` may list, ordered by start, publish date, id; a
    recurring series is listed as its occurrences (``domain.occurrences``)."""
    selected = []
    words = search_words(q.search) if q.search else []
    include = set(q.include) if q.include is not None else None
    candidates = snapshot.all(EVENTS) if q.owner is None else \
        [e for e in (snapshot.get(EVENTS, q.owner),) if e is not None]
    first_only = q.files and q.near is None   # a series' first match places it, the rest only count
    uncounted = 0
    for event in candidates:
        try:
            data = event.data
            if data.get("recurrence"):
                found = _occurrences(snapshot, event, q, user, words, include, site_tz)
                if first_only:
                    first = next(found, None)
                    if first is not None:
                        selected.append((first[0], event))
                        uncounted += sum(1 for _ in found)
                    continue
                selected.extend(found)
                continue
            if not _passes(snapshot, event, q, user, words, include):
                continue
            if include is None:
                start, end = utc_bounds(snapshot, event, site_tz)
                if not _dates_pass(start, end, q):
                    continue
                key = (start, data.get("date_utc") or "", event.id)
            else:
                key = (data.get("date_utc") or "", event.id)
            selected.append((key, event))
        except Exception as exc:   # one event's failure stays its own: the list goes on without it
            FAULTS.report(event, "its place in a list", exc)
    selected.sort(key=lambda pair: pair[0])
    if q.near is not None:
        lat, lng = q.near
        selected = [(key, _made(item)) for key, item in selected]
        selected.sort(key=lambda pair: _distance(snapshot, pair[1], lat, lng))
    if q.files:
        return _files_page(snapshot, [e for _, e in selected], len(selected) + uncounted, q)
    page = _page([e for _, e in selected], q.page, q.per_page)
    page.items = [_made(item) for item in page.items]
    return page


def _files_page(snapshot: Snapshot, items: list, total: int, q: EventQuery) -> Page:
    """``EventQuery.files``: each file of ``items`` (events, series, occurrences) once, in the
    order of its first item; ``total`` is the number of matching occurrences."""
    files: dict[int, Record] = {}
    for item in items:
        if isinstance(item, tuple):             # (series record, series, occurrence)
            record = item[0]
        elif getattr(item, "series_id", 0):     # an occurrence record
            record = snapshot.get(EVENTS, item.series_id)
        else:
            record = item
        if record is not None:
            files.setdefault(record.id, record)
    first = (q.page - 1) * q.per_page
    return Page(list(files.values())[first:first + q.per_page], total, q.page, q.per_page)


def _distance(snapshot: Snapshot, event: Record, lat: float, lng: float) -> float:
    best = float("inf")
    for venue in snapshot.refs(event, "venue"):
        if venue.data.get("geo_lat") is not None and venue.data.get("geo_lng") is not None:
            best = min(best, (venue.data["geo_lat"] - lat) ** 2 + (venue.data["geo_lng"] - lng) ** 2)
    return best


def _page(items: list, page: int, per_page: int) -> Page:
    start = (page - 1) * per_page
    return Page(items[start:start + per_page], len(items), page, per_page)


LINKED_SEARCH_KEYS = {
    "venues": ("venue", "description", "excerpt", "address", "city", "province", "state", "stateprovince", "zip", "phone"),
    "organizers": ("organizer", "description", "excerpt", "phone", "email", "website"),
}


def linked(snapshot: Snapshot, resource: Resource, q: LinkedQuery, user: User | None, site_tz) -> Page:
    """Venues or organizers matching ``q``, newest publication first."""
    key = "venue" if resource.name == "venues" else "organizer"
    # words are split on anything but letters, digits and "-" (as the original does)
    words = [w for w in re.split(r"(?:[^\w-]|_)+", (q.search or "").lower()) if w] if q.search else []
    now = datetime.now(timezone.utc)
    selected = []
    for record in snapshot.all(resource):
        if not permissions.listable(user, record, q.statuses):
            continue
        if words:
            fields = [str(record.data.get(k) or "").lower() for k in LINKED_SEARCH_KEYS[resource.name]]
            if not any(all(w in f for w in words) for f in fields):
                continue
        if q.event is None and q.has_events is None and not q.only_with_upcoming:
            selected.append(record)   # no filter needs its events (looking them up is most of a big list's time)
            continue
        events = snapshot.events_referencing(key, record)
        if q.event is not None and not any(e.id == q.event for e in events):
            continue
        if q.has_events is not None:
            # the original counts every status but draft and pending (trashed events too); of those,
            # only events the caller may read count: a private event must not show through its venue
            has = any(e.status not in ("draft", "pending") and (e.status == "trash" or permissions.can_read(user, e))
                      for e in events)
            if has != q.has_events:
                continue
        if q.only_with_upcoming:
            visible = [e for e in events if permissions.listable(user, e, permissions.VISIBLE_TO_EDITORS
                                                                 if permissions.sees_all_statuses(user) else ("publish",))]
            if not any(utc_bounds(snapshot, e, site_tz)[0] >= now for e in visible):
                continue
        selected.append(record)
    selected.sort(key=lambda r: (r.data.get("date_utc") or "", r.id), reverse=True)
    return _page(selected, q.page, q.per_page)


def terms(snapshot: Snapshot, resource: Resource, q: TermQuery, count) -> Page:
    """Categories or tags matching ``q``; ``count(record)`` gives a term's published event count."""
    key = "categories" if resource is CATEGORIES else "tags"
    post_terms = None
    if q.post is not None:
        event = snapshot.get(EVENTS, q.post)
        post_terms = _ids(snapshot, event, key) if event else set()
    selected = []
    for record in snapshot.all(resource):
        if q.include is not None and record.id not in q.include:
            continue
        if q.exclude is not None and record.id in q.exclude:
            continue
        if q.slug is not None and record.slug != q.slug:
            continue
        if q.parent is not None and snapshot.parent_id(record) != q.parent:
            continue
        if post_terms is not None and record.id not in post_terms:
            continue
        if q.search and q.search.lower() not in record.title.lower() and q.search.lower() not in record.slug:
            continue
        if q.hide_empty and count(record) == 0:
            continue
        selected.append(record)
    sorters = {
        "id": lambda r: r.id,
        "name": lambda r: (r.title.lower(), r.id),
        "slug": lambda r: r.slug,
        "count": lambda r: (count(r), r.id),
        "description": lambda r: (str(r.data.get("description") or ""), r.id),
        "term_group": lambda r: r.id,
        "include": lambda r: q.include.index(r.id) if q.include else r.id,
        "include_slugs": lambda r: r.id,
    }
    selected.sort(key=sorters.get(q.orderby, sorters["name"]), reverse=q.order == "desc")
    return _page(selected, q.page, q.per_page)

"""Lists within a narrow window of starts: matched by document numbers, with the sets of frequent
terms kept in a rebuilt index's segments (``term_sets``), and the same answers as scanning.

Real app, real git repository, real Whoosh index. The limits that decide which terms keep their
sets and how positions are grouped are lowered so that a calendar of a few hundred events takes
the paths a calendar of a million takes.
"""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from whoosh import index as whoosh_index

from calendar_service.index import term_sets, windowed
from tests.conftest import Client
from tests.test_event_filters import Content, settle, utc_today
from tests.test_recurrence_lists import _random_calendar

WORDS = ["jazz", "pottery", "choir", "lecture", "yoga", "market", "evening", "family"]


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(term_sets, "MIN_POSTINGS", 3)
    monkeypatch.setattr(windowed, "WINDOW_BLOCK", 8)


def _calendar(rng: random.Random, repo) -> tuple[Content, list[int], list[int]]:
    c = Content(repo)
    cats = [c.category(name) for name in ("Music", "Art", "Talks")]
    tags = [c.tag(name) for name in ("free", "outdoor")]
    today = utc_today()
    for n in range(160):
        day = today + timedelta(days=rng.randint(-30, 90))
        hour = rng.randint(0, 22)
        length = rng.choice([1, 2, 5, 30, 80])   # hours: some events last days
        start = f"{day} {hour:02d}:{rng.choice(['00', '30'])}:00"
        end_day = day + timedelta(hours=hour + length) - timedelta(hours=hour)
        end = f"{end_day + timedelta(days=(hour + length) // 24)} {(hour + length) % 24:02d}:45:00"
        words = rng.sample(WORDS, 2)
        c.event(start, end, title=f"{words[0].title()} {words[1]} {n}",
                description=f"A {rng.choice(WORDS)} afternoon." if rng.random() < 0.5 else "",
                status=rng.choice(["publish"] * 8 + ["draft", "private"]),
                pub=f"2020-01-{rng.randint(1, 28):02d} 00:00:00",
                categories=rng.sample(cats, rng.randint(0, 2)) or None,
                tags=rng.sample(tags, rng.randint(0, 2)) or None,
                hide_from_listings=True if rng.random() < 0.05 else None,
                featured=True if rng.random() < 0.1 else None)
    c.commit()
    return c, cats, tags


def _window(rng: random.Random, cats: list[int], tags: list[int]) -> dict:
    today = utc_today()
    first = today + timedelta(days=rng.randint(-35, 90))
    p = {"start_date": str(first), "per_page": rng.choice([3, 10, 50]), "page": rng.choice([1, 1, 2, 3])}
    if rng.random() < 0.8:
        p["end_date"] = str(first + timedelta(days=rng.choice([1, 3, 7, 20])))
    else:
        p["starts_before"] = str(first + timedelta(days=rng.choice([2, 10])))
    if rng.random() < 0.3:
        p["ends_after"] = str(first + timedelta(days=1))
    roll = rng.random()
    if roll < 0.4:
        p["categories"] = ",".join(str(c) for c in rng.sample(cats, rng.randint(1, 2)))
    elif roll < 0.55:
        p["tags"] = str(rng.choice(tags))
    if rng.random() < 0.5:
        p["search"] = " ".join(rng.sample(WORDS, rng.randint(1, 2)))[:rng.choice([3, 20])]
    if rng.random() < 0.1:
        p["featured"] = rng.choice(["true", "false"])
    return p


def _same(a: Client, b: Client, params: dict) -> None:
    ra, rb = a.get("/events", query_string=params), b.get("/events", query_string=params)
    assert ra.status_code == rb.status_code, (params, ra.get_json(), rb.get_json())
    if ra.status_code != 200:   # a page past the last one
        assert ra.get_json() == rb.get_json()
        return
    ja, jb = ra.get_json(), rb.get_json()
    assert [e["id"] for e in ja["events"]] == [e["id"] for e in jb["events"]], params
    assert (ja["total"], ja["total_pages"]) == (jb["total"], jb["total_pages"]), params


def _segment_sets(index_dir) -> list:
    ix = whoosh_index.open_dir(str(index_dir / "whoosh"))
    with ix.searcher() as searcher:
        return [term_sets.SegmentSets.open(leaf) for leaf, _offset in searcher.reader().leaf_readers()]


def test_lists_in_a_window_are_the_scanning_lists(small_limits, make_app, repo, paths):
    rng = random.Random(37)
    app = make_app()
    content, cats, tags = _calendar(rng, repo)
    svc = app.extensions["calendar"]
    settle(svc, Client(app.test_client(), None), repo)
    # the rebuild kept the frequent terms' sets in its segment
    sets = [s for s in _segment_sets(paths["index_dir"]) if s is not None]
    assert sets and sets[0].get("status", "publish") is not None
    assert sets[0].get("categories", f"#{cats[0]}") is not None
    scanning = make_app()
    scanning.extensions["calendar"].index = None
    for role in (None, "administrator", "author"):
        indexed, scanned = Client(app.test_client(), role), Client(scanning.test_client(), role)
        for _ in range(60):
            _same(indexed, scanned, _window(rng, cats, tags))
    base = svc.index._view.base
    assert base._docnums, "no list was matched by document numbers"
    # after a write the generation has changed events beside the base: the general path, in the window
    eid = next(iter(content.events))
    text = (repo.root / content.paths[eid]).read_text().replace("title: ", "title: Jazz moved ", 1)
    content.pending[content.paths[eid]] = text
    content.commit("edit one")
    indexed, scanned = Client(app.test_client(), None), Client(scanning.test_client(), None)
    settle(svc, indexed, repo)
    assert svc.index._view.base is base and svc.index._view.extra
    for _ in range(40):
        _same(indexed, scanned, _window(rng, cats, tags))


def test_series_in_a_window_are_the_scanning_lists(small_limits, make_app, repo):
    rng = random.Random(3737)
    svc, c, cat, today, indexed, scanned, admin_i, admin_s = _random_calendar(rng, make_app, repo)
    assert svc.index._view.base.owned
    for _ in range(60):
        first = today + timedelta(days=rng.randint(-30, 120))
        p = {"start_date": str(first), "end_date": str(first + timedelta(days=rng.choice([2, 6, 15]))),
             "per_page": rng.choice([2, 10]), "page": rng.choice([1, 2])}
        if rng.random() < 0.4:
            p["search"] = rng.choice(["lect", "moved", "yoga", "choir"])
        if rng.random() < 0.4:
            p["categories"] = str(cat)
        admin = rng.random() < 0.3
        _same(admin_i if admin else indexed, admin_s if admin else scanned, p)


def test_term_sets_of_another_version_are_not_read(small_limits, make_app, repo, paths, monkeypatch):
    rng = random.Random(7)
    app = make_app()
    _content, cats, tags = _calendar(rng, repo)
    settle(app.extensions["calendar"], Client(app.test_client(), None), repo)
    monkeypatch.setattr(term_sets, "VERSION", term_sets.VERSION + 1)
    assert _segment_sets(paths["index_dir"]) == [None] * len(_segment_sets(paths["index_dir"]))
    again = make_app()   # reads the same index: its sets are ignored, the postings decoded
    settle(again.extensions["calendar"], Client(again.test_client(), None), repo)
    scanning = make_app()
    scanning.extensions["calendar"].index = None
    indexed, scanned = Client(again.test_client(), None), Client(scanning.test_client(), None)
    for _ in range(30):
        _same(indexed, scanned, _window(rng, cats, tags))
    assert all(sets is None for _leaf, _offset, sets in again.extensions["calendar"].index._view.base._leaves)


def test_a_retired_base_says_its_reader_is_closed(small_limits, make_app, repo):
    """A list still reading a base that was closed (retired) gets Whoosh's ReaderClosed, which
    reads the generation again, never another error (which would rebuild the index)."""
    from whoosh.reading import ReaderClosed

    app = make_app()
    _content, _cats, _tags = _calendar(random.Random(11), repo)
    svc = app.extensions["calendar"]
    settle(svc, Client(app.test_client(), None), repo)
    base = svc.index._view.base
    assert any(sets is not None for _leaf, _offset, sets in base._leaves)
    base.close()
    with pytest.raises(ReaderClosed):
        base.docnums("status", "publish")


def test_the_end_bounds_are_remembered_per_set_and_bounds_and_answer_as_worked_out(make_app, repo, monkeypatch):
    """``BaseView.end_filter`` remembers its answers by the events asked about and the bounds (the
    pages of one list ask the same): a remembered answer is the worked-out one, another set or
    other bounds are worked out again, and the memo stays bounded."""
    from pyroaring import BitMap

    from calendar_service.index import view as index_view
    monkeypatch.setattr(index_view, "MAX_END_FILTERS", 5)
    rng = random.Random(41)
    app = make_app()
    _calendar(rng, repo)
    svc = app.extensions["calendar"]
    settle(svc, Client(app.test_client(), None), repo)
    base = svc.index._view.base
    assert base.classes and base.size > 100

    def by_hand(matched, emin, emax):
        return BitMap(p for p in matched if (emin is None or base.ends[p] >= emin) and (emax is None or base.ends[p] <= emax))

    ends = sorted(base.ends)
    for _ in range(40):
        matched = BitMap(rng.sample(range(base.size), rng.randint(0, base.size)))
        emin, emax = rng.choice([None, *ends]), rng.choice([None, *ends])
        first = base.end_filter(matched, emin, emax)
        assert first == by_hand(matched, emin, emax)
        assert base.end_filter(BitMap(matched), emin, emax) is first   # an equal set: remembered
        assert len(base._ended) <= 5
    # sets of one size and the same first and last event (what the memo is kept under) that differ
    b = next(p for p in range(2, base.size - 1) if base.ends[p] != base.ends[1])
    one, other = BitMap([0, 1, base.size - 1]), BitMap([0, b, base.size - 1])
    for matched in (one, other, one):   # an end bound only the second event of ``one`` meets
        answer = base.end_filter(matched, base.ends[1], base.ends[1])
        assert answer == by_hand(matched, base.ends[1], base.ends[1]) and (1 in answer) == (matched is one)
    evens, odds = BitMap(range(0, base.size, 2)), BitMap(range(1, base.size, 2))
    for bounds in ((None, ends[-1]), (ends[len(ends) // 3], None)):   # the same bounds, other sets
        assert base.end_filter(evens, *bounds) == by_hand(evens, *bounds)
        assert base.end_filter(odds, *bounds) == by_hand(odds, *bounds)

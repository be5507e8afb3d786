"""The VEVENT writer's faster folding (http/ical_fold.py) and its cache bounded in bytes
(http/ical_cache.py): feeds stay the same bytes, and the cache stays within its budget."""
from __future__ import annotations

import random

import pytest
from icalendar.parser.string import _foldline

from calendar_service.http import ical, ical_cache
from calendar_service.http.ical_fold import fold
from tests.test_ical import QUERIES, by_hand, many   # noqa: F401  (fixtures: 45 events in five zones)


def test_folding_is_icalendars_for_every_kind_of_line():
    rng = random.Random(15)
    alphabets = ["abc xyz", "ab\\^,;:", "ab\\^é€😀x", "^\\"]
    lines = ["", "x" * 74, "x" * 75, "x" * 73 + "\\n", "x" * 73 + "^n", "é" * 40, "\\" * 200]
    for _ in range(5_000):
        alphabet = rng.choice(alphabets)
        lines.append("".join(rng.choice(alphabet) for _ in range(rng.choice([rng.randint(0, 90), rng.randint(60, 500)]))))
    for line in lines:
        assert fold(line) == _foldline(line), line
    assert fold("a" * 100, limit=40) == _foldline("a" * 100, limit=40)
    with pytest.raises(AssertionError):
        fold("two\nlines")


def _feeds(client) -> list[bytes]:
    return [client.get("/events", query_string={**params, "ical": "1"}).data for params in QUERIES]


def test_feeds_are_the_same_bytes_from_a_cache_too_small_to_hold_them(many, anon, monkeypatch):  # noqa: F811  (a fixture)
    roomy = ical_cache.VeventCache()
    monkeypatch.setattr(ical, "VEVENTS", roomy)
    built = _feeds(anon)
    assert len(roomy) == 40 and _feeds(anon) == built   # every public event kept, then reused
    tiny = ical_cache.VeventCache(budget=4_000)
    monkeypatch.setattr(ical, "VEVENTS", tiny)
    assert _feeds(anon) == built and _feeds(anon) == built
    assert 0 < tiny.weight <= 4_000 and len(tiny) < 40


def test_a_kept_vevent_is_smaller_than_it_and_given_back_whole():
    cache = ical_cache.VeventCache()
    first = b"BEGIN:VEVENT\r\nUID:1@example.org\r\nSUMMARY:Choir\r\nEND:VEVENT\r\n"
    second = first.replace(b"1@", b"2@").replace(b"Choir", b"Jazz night at the hall")

    class Rec:
        pass
    a, b, venue = Rec(), Rec(), Rec()
    cache.put(a, "ctx", (venue,), first)
    cache.put(b, "ctx", (), second)
    assert cache.get(a, "ctx", (venue,)) == first and cache.get(b, "ctx", ()) == second
    assert cache.get(a, "ctx", (Rec(),)) is None and cache.get(a, "other", (venue,)) is None
    assert cache.get(Rec(), "ctx", ()) is None
    assert cache.weight - 2 * 200 < len(first) + len(second)


def test_a_large_feed_gives_the_heap_back_once_it_is_sent(many, anon, monkeypatch):  # noqa: F811  (a fixture)
    """A feed of at least TRIM_AFTER_EVENTS events trims the C heap when the server closes it
    (the VEVENTs built and dropped leave it full of holes); a smaller one does not."""
    from calendar_service.http import memory

    if memory._malloc_trim() is None:
        pytest.skip("not glibc: nothing to give back")
    monkeypatch.setattr(memory, "TRIM_AFTER_EVENTS", 40)
    before = memory.trims
    small = anon.get("/events", query_string={"ical": "1", "per_page": 10})
    small.get_data()
    small.close()
    assert memory.trims == before
    large = anon.get("/events", query_string={"ical": "1"})   # every public event: 40
    assert large.get_data().count(b"BEGIN:VEVENT") == 40
    assert memory.trims == before   # not while the body is still being sent
    large.close()
    assert memory.trims == before + 1

"""The VEVENT writer's faster folding (http/ical_fold.py) and its cache bounded in bytes
(http/ical_cache.py): feeds stay the same bytes, and the cache stays within its budget."""
from __future__ import annotations

import logging
import os
import random
import threading
import time
import tracemalloc

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
    tiny = ical_cache.VeventCache(budget=roomy.weight // 3)   # a third of them
    monkeypatch.setattr(ical, "VEVENTS", tiny)
    assert _feeds(anon) == built and _feeds(anon) == built
    assert 0 < tiny.weight <= tiny.budget and len(tiny) < 40


def test_a_kept_vevent_is_smaller_than_it_and_given_back_whole():
    cache = ical_cache.VeventCache()
    first = b"BEGIN:VEVENT\r\nUID:1@example.org\r\nSUMMARY:Choir\r\nEND:VEVENT\r\n"
    second = first.replace(b"1@", b"2@").replace(b"Choir", b"Jazz night at the hall")

    a, b, venue = _Rec(), _Rec(), _Rec()
    cache.put(a, "ctx", (venue,), first)
    cache.put(b, "ctx", (), second)
    assert cache.get(a, "ctx", (venue,)) == first and cache.get(b, "ctx", ()) == second
    assert cache.get(a, "ctx", (_Rec(),)) is None and cache.get(a, "other", (venue,)) is None
    assert cache.get(_Rec(), "ctx", ()) is None
    assert cache.weight < len(first) + len(second)


class _Rec:
    """Stands for a record: the cache compares records by identity only."""


def _vevent(n: int, rng: random.Random, size: int = 1_500) -> bytes:
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(size))
    return f"BEGIN:VEVENT\r\nUID:{n}@example.org\r\nDESCRIPTION:{noise}\r\nEND:VEVENT\r\n".encode()


def test_a_kept_vevent_costs_the_heap_its_key_not_its_bytes():
    """The bytes go to temporary files: 2,000 VEVENTs of ~1.5 KB that do not compress grow the
    heap by a few hundred bytes each (~1.4 KB each when they were kept as objects)."""
    rng = random.Random(3)
    cache = ical_cache.VeventCache()
    records, vevents = [_Rec() for _ in range(2_000)], [_vevent(n, rng) for n in range(2_000)]
    venue = _Rec()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for record, vevent in zip(records, vevents):
            cache.put(record, "ctx", (venue,), vevent)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) == 2_000 and cache.weight > 2_000 * 1_000
    assert grown < 2_000 * 400, grown
    assert all(cache.get(r, "ctx", (venue,)) == v for r, v in zip(records, vevents))


def test_the_oldest_segment_goes_first_and_what_is_read_again_is_kept():
    rng = random.Random(4)
    cache = ical_cache.VeventCache(budget=40_000, segment_bytes=5_000)
    hot, hot_vevent = _Rec(), _vevent(0, rng)
    cache.put(hot, "ctx", (), hot_vevent)
    kept = []
    for n in range(1, 200):
        record = _Rec()
        kept.append((record, _vevent(n, rng)))
        cache.put(record, "ctx", (), kept[-1][1])
        assert cache.get(hot, "ctx", ()) == hot_vevent
        assert cache.weight <= cache.budget
    # read after every put, so copied forward while the bulk it came with was dropped
    assert cache.get(hot, "ctx", ()) == hot_vevent
    hits = [cache.get(r, "ctx", ()) == v for r, v in reversed(kept)]
    assert hits[:5] == [True] * 5 and not any(hits[-100:])   # the newest kept, the oldest dropped


def test_threads_reading_while_segments_are_dropped_get_their_own_bytes_or_nothing(caplog):
    """Four threads put and read VEVENTs in a cache so small that segments are dropped (their
    files closed, their descriptors reused by new ones) all the time: a read gives back exactly
    what was put for that record, or None; never another VEVENT, never a failure."""
    rng = random.Random(6)
    cache = ical_cache.VeventCache(budget=24_000, segment_bytes=3_000)
    records = [_Rec() for _ in range(300)]
    vevents = {id(r): _vevent(n, rng, size=rng.randint(50, 900)) for n, r in enumerate(records)}
    wrong, hits = [], [0]

    def work(seed: int) -> None:
        pick = random.Random(seed)
        for _ in range(5_000):
            record = pick.choice(records)
            if pick.random() < 0.5:
                cache.put(record, ("urls", "zone"), (), vevents[id(record)])
            else:
                got = cache.get(record, ("urls", "zone"), ())
                if got is not None:
                    hits[0] += 1
                    if got != vevents[id(record)]:
                        wrong.append(got[:40])

    with caplog.at_level(logging.ERROR, logger="calendar_service.http.ical_cache"):
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not wrong and hits[0] > 1_000
    assert not [r for r in caplog.records if r.name == "calendar_service.http.ical_cache"]
    assert cache.weight <= cache.budget and len(cache) < len(records)


def test_a_forked_child_starts_empty_and_the_parent_keeps_its_vevents():
    rng = random.Random(5)
    cache = ical_cache.VeventCache()
    record, vevent = _Rec(), _vevent(1, rng)
    cache.put(record, "ctx", (), vevent)
    pid = os.fork()
    if pid == 0:   # the child: its files would be the parent's too
        ok = len(cache) == 0 and cache.get(record, "ctx", ()) is None
        cache.put(record, "ctx", (), b"BEGIN:VEVENT\r\nUID:child\r\nEND:VEVENT\r\n")
        os._exit(0 if ok and len(cache) == 1 else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert cache.get(record, "ctx", ()) == vevent and len(cache) == 1


def test_feeds_are_served_when_no_temporary_file_can_be_made(many, anon, monkeypatch, tmp_path, caplog):  # noqa: F811  (a fixture)
    built = _feeds(anon)
    gone = str(tmp_path / "gone")   # a directory that does not exist
    monkeypatch.setattr(ical, "VEVENTS", ical_cache.VeventCache())
    monkeypatch.setattr("tempfile.tempdir", gone)
    with caplog.at_level(logging.ERROR, logger="calendar_service.http.ical_cache"):
        assert _feeds(anon) == built and _feeds(anon) == built
    assert len(ical.VEVENTS) == 0
    problems = [r for r in caplog.records if "VEVENT cache could not create" in r.getMessage()]
    assert len(problems) == 1   # logged once, not per VEVENT: nothing is tried for a while

    # once the retry time has passed and files can be made again, VEVENTs are kept again
    monkeypatch.setattr(ical_cache, "RETRY_SECONDS", 3)
    monkeypatch.setattr(ical, "VEVENTS", ical_cache.VeventCache())
    assert _feeds(anon) == built and len(ical.VEVENTS) == 0
    monkeypatch.setattr("tempfile.tempdir", None)
    assert _feeds(anon) == built and len(ical.VEVENTS) == 0   # still waiting
    time.sleep(3.1)
    assert _feeds(anon) == built and len(ical.VEVENTS) == 40


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

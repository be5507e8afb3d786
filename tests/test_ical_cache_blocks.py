"""VEVENTs kept a block at a time (http/ical_cache.py, ``put_many``): a feed deflates its
VEVENTs in blocks of about ``BLOCK_BYTES``, not one by one; each is read back whole, from any
thread, in any order, and a block read again is inflated once."""
from __future__ import annotations

import random
import threading
import zlib

from calendar_service.http import ical, ical_cache
from tests.test_ical import QUERIES, by_hand, many   # noqa: F401  (fixtures: 45 events in five zones)


class _Rec:
    """Stands for a record: the cache compares records by identity only."""


def _vevent(n: int, rng: random.Random) -> bytes:
    words = " ".join(rng.choice(["choir", "jazz", "hall", "market", "quiz", "run"]) for _ in range(rng.randint(5, 200)))
    return f"BEGIN:VEVENT\r\nUID:{n}@example.org\r\nSUMMARY:{words}\r\nEND:VEVENT\r\n".encode()


def test_vevents_kept_together_are_each_given_back_whole(monkeypatch):
    rng = random.Random(7)
    cache = ical_cache.VeventCache()
    venue = _Rec()
    entries = [(_Rec(), (venue,) if n % 2 else (), _vevent(n, rng)) for n in range(60)]
    inflated = []
    real = zlib.decompressobj
    monkeypatch.setattr(ical_cache.zlib, "decompressobj", lambda **kw: inflated.append(1) or real(**kw))
    cache.put_many("ctx", entries)
    assert len(cache) == 60
    for record, refs, vevent in entries:          # in turn: the block is inflated once
        assert cache.get(record, "ctx", refs) == vevent
    assert len(inflated) == 1
    for record, refs, vevent in reversed(entries):
        assert cache.get(record, "ctx", refs) == vevent
    assert len(inflated) == 1
    assert cache.get(entries[1][0], "ctx", ()) is None and cache.get(entries[0][0], "other", ()) is None

    seen = []
    thread = threading.Thread(target=lambda: seen.extend(cache.get(r, "ctx", f) == v for r, f, v in entries))
    thread.start()
    thread.join()
    assert seen == [True] * 60 and len(inflated) == 2   # another thread inflates it for itself


def test_a_block_costs_less_than_its_vevents_one_by_one():
    rng = random.Random(8)
    entries = [(_Rec(), (), _vevent(n, rng)) for n in range(30)]
    together, apart = ical_cache.VeventCache(), ical_cache.VeventCache()
    together.put_many("ctx", entries)
    for record, refs, vevent in entries:
        apart.put(record, "ctx", refs, vevent)
    assert together.weight < apart.weight
    assert all(together.get(r, "ctx", f) == v and apart.get(r, "ctx", f) == v for r, f, v in entries)


def test_a_feed_keeps_its_vevents_in_blocks(many, anon, monkeypatch):  # noqa: F811  (a fixture)
    cache = ical_cache.VeventCache()
    monkeypatch.setattr(ical, "VEVENTS", cache)
    monkeypatch.setattr(ical_cache, "BLOCK_BYTES", 4_096)
    blocks = []
    real = cache.put_many
    monkeypatch.setattr(cache, "put_many", lambda context, entries: blocks.append(len(entries)) or real(context, entries))
    built = anon.get("/events", query_string={"ical": "1"}).data
    assert len(cache) == 40 and sum(blocks) == 40 and max(blocks) > 1
    assert anon.get("/events", query_string={"ical": "1"}).data == built   # read back from the blocks

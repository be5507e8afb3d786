"""The index base kept beside its Whoosh generation (``index/base_file.py``).

A start reading a Whoosh generation another process read before loads the base that process kept
instead of building it again; lists must be the same either way. The file is derived data and
never trusted blindly: a file that is corrupt, truncated, of another format, generation or commit
is ignored, the base read from Whoosh again, and the file written anew.
"""
from __future__ import annotations

import json
import os
import struct
import threading
import time
from pathlib import Path

import pytest

from calendar_service.index import base_file
from conftest import Client, followed

QUERIES = (
    "/events?per_page=50",
    "/events?per_page=50&start_date=2000-01-01&end_date=2040-01-01&status=publish,draft,private",
    "/events?per_page=2&page=2&start_date=2000-01-01&end_date=2040-01-01",
    "/events?per_page=50&start_date=2000-01-01&end_date=2040-01-01&search=Kept",
    "/events?per_page=50&starts_before=2031-01-20&ends_after=2031-01-05&strict_dates=true",
    "/events?per_page=50&start_date=2031-01-01&end_date=2031-02-01",
)


def _index_quiet(timeout: float = 30.0) -> None:
    """Wait until no thread writes the index (a service's follow thread after a write)."""
    deadline = time.monotonic() + timeout
    while any(t.name.startswith("calendar-index") for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _lists(app) -> dict:
    client = Client(app.test_client(), "administrator")
    out = {}
    for query in QUERIES:
        r = client.get(query)
        assert r.status_code == 200, (query, r.get_json())
        out[query] = ([e["id"] for e in r.get_json()["events"]], r.headers.get("X-TEC-Total"))
    return out


def _base(app):
    return app.extensions["calendar"].index._view.base


def _kept(app) -> Path:
    return Path(_base(app).source[0]) / base_file.FILE_NAME


@pytest.fixture
def calendar(factory):
    """Events of several durations, statuses and words, some hidden from listings."""
    category = factory.category()
    made = []
    for n in range(30):
        day = 1 + n % 28
        made.append(factory.event(
            title=f"Kept event {n}" if n % 3 else f"Other event {n}",
            start_date=f"2031-01-{day:02d} 10:00:00",
            end_date=f"2031-01-{day:02d} {11 + n % 5}:00:00" if n % 4 else f"2031-02-{day:02d} 09:00:00",
            categories=[category["id"]] if n % 2 else [],
            status="draft" if n % 7 == 0 else "publish",
            hide_from_listings=n % 11 == 0))
    _index_quiet()
    return made


def test_a_start_loads_the_base_kept_by_the_start_before(make_app, calendar):
    first = make_app()
    assert _base(first).restored is False
    kept = _kept(first)
    assert kept.exists()
    listed = _lists(first)

    second = make_app()
    base = _base(second)
    assert base.restored is True
    assert _lists(second) == listed
    # every column the same as the base read from Whoosh
    assert base_file.columns_of(base) == base_file.columns_of(_base(first))
    assert base.size == _base(first).size and list(base.all) == list(_base(first).all)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty", "not a base", "longer", "header"])
def test_a_corrupt_kept_base_is_read_from_whoosh_and_written_again(make_app, calendar, damage):
    first = make_app()
    listed = _lists(first)
    kept = _kept(first)
    data = bytearray(kept.read_bytes())
    if damage == "flipped byte":
        data[-100] ^= 0xFF
    elif damage == "truncated":
        del data[len(data) // 2:]
    elif damage == "empty":
        data = bytearray()
    elif damage == "not a base":
        data = bytearray(b"something else entirely" * 10)
    elif damage == "longer":
        data += b"\0" * 8
    elif damage == "header":
        start = len(base_file.MAGIC) + 8
        data[start:start + 1] = b"["   # JSON that does not parse
    kept.write_bytes(bytes(data))

    second = make_app()
    assert _base(second).restored is False   # read from Whoosh
    assert _lists(second) == listed
    assert kept.read_bytes() != bytes(data)  # and kept again, whole
    assert _base(make_app()).restored is True


@pytest.mark.parametrize("field", ["format", "generation", "commit", "docs", "live", "block", "byteorder"])
def test_a_kept_base_of_another_generation_commit_or_format_is_not_used(make_app, calendar, field):
    first = make_app()
    listed = _lists(first)
    kept = _kept(first)
    data = kept.read_bytes()
    at = len(base_file.MAGIC)
    length = struct.unpack("<Q", data[at:at + 8])[0]
    header = json.loads(data[at + 8:at + 8 + length])
    header[field] = "other" if isinstance(header[field], str) else header[field] + 1
    text = json.dumps(header).encode()
    kept.write_bytes(data[:at] + struct.pack("<Q", len(text)) + text + data[at + 8 + length:])

    second = make_app()
    assert _base(second).restored is False
    assert _lists(second) == listed
    assert _base(make_app()).restored is True


def test_a_start_after_writes_reads_the_new_generation(make_app, app, calendar, factory):
    first = make_app()
    before = _kept(first).read_bytes()
    added = factory.event(title="Kept after a write", start_date="2031-01-10 10:00:00", end_date="2031-01-10 11:00:00")
    _index_quiet()
    # the index on disk moved to a new TOC generation: the kept base is stale
    second = make_app()
    assert _base(second).restored is False
    listed = _lists(second)
    assert added["id"] in listed[QUERIES[3]][0]
    assert _kept(second).read_bytes() != before
    third = make_app()
    assert _base(third).restored is True
    assert _lists(third) == listed


def test_a_rebuild_keeps_the_base_of_its_new_generation_for_the_next_start(make_app, calendar):
    first = make_app()
    old = _kept(first)
    service = first.extensions["calendar"]
    service.index.rebuild_now(service.catalog.current())
    assert not old.exists()   # removed with the old generation's folder
    # the command read the new generation's base once, so the first start after it loads it
    second = make_app()
    assert _kept(second) != old and _kept(second).exists()
    assert _base(second).restored is True
    assert _lists(second) == _lists(first)


def test_bringing_the_index_to_a_commit_keeps_its_base_for_the_next_start(make_app, calendar, factory):
    first = make_app()
    service = first.extensions["calendar"]
    factory.event(title="Kept after an update", start_date="2031-01-12 10:00:00", end_date="2031-01-12 11:00:00")
    _index_quiet()
    stale = make_app()   # the follow thread moved the index on disk: this start reads Whoosh again
    assert _base(stale).restored is False
    _kept(stale).unlink()
    assert service.index.keep_base(service.catalog.current()) is True
    assert _base(make_app()).restored is True
    assert _lists(make_app()) == _lists(stale)


def test_a_base_with_series_is_not_kept(make_app, factory):
    # (within the horizon of open-ended series: occurrences are listed up to it)
    factory.event(title="Kept daily", recurrence=["RRULE:FREQ=DAILY;COUNT=5"])
    factory.event(title="Kept single")
    _index_quiet()
    first = make_app()
    assert not _kept(first).exists()
    second = make_app()
    assert _base(second).restored is False
    listed = _lists(second)
    assert listed == _lists(first) and len(listed[QUERIES[3]][0]) == 6


def test_a_base_that_cannot_be_kept_is_served_all_the_same(make_app, calendar, paths):
    folder = Path(os.path.realpath(paths["index_dir"] / "whoosh"))
    (folder / base_file.FILE_NAME).unlink()
    (folder / base_file.FILE_NAME).mkdir()   # in the way of the file: neither written nor read
    first = make_app()
    assert _base(first).restored is False
    assert not list(folder.glob("*.tmp"))   # nothing half-written left
    second = make_app()
    assert _base(second).restored is False
    assert _lists(second) == _lists(first)


def test_once_the_index_on_disk_rests_a_child_process_keeps_its_base_for_the_next_start(
        make_app, app, calendar, factory, monkeypatch, caplog):
    from calendar_service.index import search
    monkeypatch.setattr(search, "KEEP_BASE_MIN_EVENTS", 0)
    monkeypatch.setattr(search, "KEEP_BASE_QUIET_SECONDS", 0.3)
    for n in range(2):   # the second write moves the pause on: one child for both
        added = factory.event(title=f"Kept after a pause {n}", start_date="2031-01-10 10:00:00",
                              end_date="2031-01-10 11:00:00")
    _index_quiet(120)   # the follow thread, then the keeper's pause and its child process
    assert "failed" not in caplog.text
    # without the child, the first start after the writes would read Whoosh (the test above)
    second = make_app()
    assert _base(second).restored is True
    assert added["id"] in _lists(second)[QUERIES[3]][0]


def test_the_child_keeps_nothing_while_a_sync_holds_the_index_or_for_series(make_app, app, factory, paths):
    import subprocess
    import sys

    from calendar_service.index import generations

    def child(*args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "calendar_service.index.keep_base", *args],
                              capture_output=True, text=True, timeout=120)
    factory.event(title="Kept single")
    # every service of the test done with the index (a start, a follower bringing it to the
    # branch): a generation made while the child runs would hold no base
    for service_app in (app, make_app()):
        followed(service_app)
    _index_quiet()
    folder = Path(os.path.realpath(paths["index_dir"] / "whoosh"))
    (folder / base_file.FILE_NAME).unlink(missing_ok=True)
    with generations.writer_lock(paths["index_dir"], blocking=True):
        done = child(str(paths["index_dir"]), "UTC")   # a sync under way: nothing read, nothing kept
    assert done.returncode == 0 and "under way" in done.stderr
    (folder / base_file.FILE_NAME).unlink(missing_ok=True)   # (a live service's thread may have read a base meanwhile)
    done = child(str(paths["index_dir"]), "UTC")
    assert done.returncode == 0, done.stderr
    assert (folder / base_file.FILE_NAME).exists(), done.stderr
    assert _base(make_app()).restored is True
    factory.event(title="Kept daily", recurrence=["RRULE:FREQ=DAILY;COUNT=5"])
    make_app()
    _index_quiet()
    folder = Path(os.path.realpath(paths["index_dir"] / "whoosh"))
    (folder / base_file.FILE_NAME).unlink(missing_ok=True)
    done = child(str(paths["index_dir"]), "UTC")
    assert done.returncode == 0 and "series" in done.stderr
    assert not (folder / base_file.FILE_NAME).exists()   # a base with series is not kept
    assert child("only-one-argument").returncode == 2

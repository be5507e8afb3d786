"""A large content repository's start objects are frozen out of the cyclic collector's walk, and a
record a write replaces is still freed (frozen objects go when their last reference does)."""
import gc
import threading
import time
import weakref

import pytest

from calendar_service.domain.resources import EVENTS
from calendar_service.service import calendar


@pytest.fixture
def unfreeze():
    yield
    gc.unfreeze()   # the rest of the test run's objects go back to the collector


def test_a_large_start_is_frozen_and_replaced_records_are_still_freed(monkeypatch, make_app, unfreeze):
    gc.unfreeze()
    seed = make_app()
    client = seed.test_client()
    from tests.conftest import Client
    admin = Client(client, "administrator")
    ids = [admin.post("/events", json={"title": f"Event {n}", "start_date": "tomorrow 10am",
                                       "end_date": "tomorrow 12pm"}).get_json()["id"] for n in range(3)]
    monkeypatch.setattr(calendar, "FREEZE_FILES", 3)
    app = make_app()
    assert gc.get_freeze_count() > 0
    service = app.extensions["calendar"]
    first = service.snapshot()
    frozen_snapshot = weakref.ref(first)
    del first
    admin = Client(app.test_client(), "administrator")
    assert admin.post(f"/events/{ids[0]}", json={"title": "Changed"}).status_code == 200
    assert service.snapshot().get(EVENTS, ids[0]).title == "Changed"
    assert frozen_snapshot() is None   # freed by reference counting, frozen or not


def test_a_small_start_is_not_frozen(make_app, unfreeze):
    gc.unfreeze()
    make_app()
    assert gc.get_freeze_count() == 0


def _first_snapshot_freed(make_app, repo, monkeypatch) -> bool:
    """Start on a repository an editor committed to since the index was written (the start brings
    the index on disk to the head inline: an index writer opens), freeze what it made, then write
    once: whether the start's snapshot was freed with its last reference."""
    seed = make_app()
    from tests.conftest import Client
    admin = Client(seed.test_client(), "administrator")
    made = admin.post("/events", json={"title": "Seed", "start_date": "tomorrow 10am", "end_date": "tomorrow 12pm"})
    eid = made.get_json()["id"]
    from tests.conftest import followed
    followed(seed)
    seed.extensions["calendar"].close()   # (its follower would bring the index to the editor's commit)
    repo.commit_file("events/by-an-editor.md", "---\ntitle: By an editor\nstart_date: '2031-01-01 10:00:00'\n"
                     "end_date: '2031-01-01 11:00:00'\n---\n")
    monkeypatch.setattr(calendar, "FREEZE_FILES", 1)
    app = make_app()
    service = app.extensions["calendar"]
    assert gc.get_freeze_count() > 0
    first = weakref.ref(service.snapshot())
    admin = Client(app.test_client(), "administrator")
    assert admin.post(f"/events/{eid}", json={"title": "Changed"}).status_code == 200
    # the service's own threads (the index follower, the head follower) may hold it a moment
    from tests.conftest import INDEX_THREADS, followed
    followed(service)
    deadline = time.monotonic() + 20
    while first() is not None and time.monotonic() < deadline:
        if not any(t.name.startswith(INDEX_THREADS) for t in threading.enumerate()):
            break
        time.sleep(0.02)
    return first() is None


def test_a_start_that_syncs_the_index_freezes_no_cycle_holding_its_snapshot(monkeypatch, make_app, repo, unfreeze):
    """The index writer a start opens (its inline sync) leaves no reference cycle of frames holding
    the start's snapshot (``whoosh_internals.TEMP_FOLDERS``), so the start freezes without
    collecting first; with Whoosh's own folder making it collects first."""
    from calendar_service.index import search
    gc.unfreeze()
    assert search.writers_leave_cycles() is False
    assert _first_snapshot_freed(make_app, repo, monkeypatch)


def test_without_the_collection_whoosh_s_own_folder_making_would_freeze_the_snapshot(
        monkeypatch, make_app, repo, unfreeze):
    """What the collection before a freeze guards against: Whoosh's own ``FileStorage.create``
    keeps its "exists" error in a local, a cycle through the frames of the index sync; frozen
    without a collection, the start's snapshot is never freed."""
    from calendar_service.index import search, whoosh_internals
    gc.unfreeze()
    whoosh_internals.uninstall()
    whoosh_internals.install(version="0.0")   # decided: Whoosh's own paths (a start installs nothing more)
    try:
        assert search.writers_leave_cycles() is True
        monkeypatch.setattr(search, "writers_leave_cycles", lambda: False)   # the collection skipped
        assert not _first_snapshot_freed(make_app, repo, monkeypatch)
    finally:
        gc.unfreeze()
        gc.collect()
        whoosh_internals.uninstall()
        whoosh_internals.install()

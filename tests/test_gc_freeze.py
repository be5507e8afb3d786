"""A large content repository's start objects are frozen out of the cyclic collector's walk, and a
record a write replaces is still freed (frozen objects go when their last reference does)."""
import gc
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

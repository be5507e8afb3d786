"""A start from the records cache, and presented records kept across commits.

The records cache (``CALENDAR_INDEX_DIR/records.cache``) holds a whole snapshot of one commit:
records, the files' git dates and the maps derived from them. A start at that commit takes it as
it is; a start a few commits later derives from it; either must serve exactly what a start
without any cache serves. Presented records are kept from one commit to the next only while
what they show is unchanged (embedded venues, organizers, terms and the terms' counts).
"""
from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import threading
import time

import pytest

from calendar_service.http.app import close_app
from conftest import Client, remove_index, set_cached

ROUTES = ("/events?per_page=50&status=publish,draft,private", "/venues?per_page=50", "/organizers?per_page=50",
          "/categories?per_page=50", "/tags?per_page=50")


def _wait_for_cache() -> None:
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            with contextlib.suppress(RuntimeError):   # listed while still starting: it is not writing yet
                thread.join(30)


def _everything(app, *more: str) -> dict:
    client = Client(app.test_client(), "administrator")
    out = {}
    for route in (*ROUTES, *more):
        r = client.get(route)
        assert r.status_code == 200, (route, r.get_json())
        out[route] = r.get_json()
    return out


@pytest.fixture
def small_cache(monkeypatch):
    from calendar_service.storage import catalog
    monkeypatch.setattr(catalog, "CACHE_MIN_FILES", 1)
    return catalog


def test_a_start_from_the_cache_serves_what_a_start_without_it_serves(paths, make_app, factory, repo, small_cache):
    category = factory.category()
    venue = factory.venue(city="Springfield")
    for n in range(4):
        factory.event(categories=[category["id"]], venue=venue["id"], tags=[f"tag-{n % 2}"])
    factory.event(status="draft")
    # written by hand: its dates come from git history (kept in the cache with the records)
    repo.commit_file("events/by-hand.md", "---\nid: 900\nslug: by-hand\ntitle: By hand\n"
                     "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\nText\n")
    index_dir = paths["index_dir"]

    remove_index(index_dir)          # derived data: a start rebuilds it (and writes the cache)
    fresh = _everything(make_app(), "/events/900")
    _wait_for_cache()
    cache = index_dir / "records.cache"
    entries = pickle.loads(cache.read_bytes())
    assert entries["commit"] == repo.head() and entries["dates"] and entries["derived"]["distinct"] is True

    # at the cache's commit nothing is read from git: a value changed only in the cache shows
    assert _everything(make_app(), "/events/900") == fresh
    by_hand = fresh["/events/900"]
    assert by_hand["date_utc"] > "2020" and by_hand["modified_utc"] == by_hand["date_utc"]
    path = next(p for p in entries["files"]["paths"] if p.startswith("events/") and p != "events/by-hand.md")
    set_cached(entries, path, title="Only in the cache")
    cache.write_bytes(pickle.dumps(entries))
    restored = _everything(make_app(), "/events/900")
    assert "Only in the cache" in [e["title"] for e in restored[ROUTES[0]]["events"]]

    # a commit later the start derives from the cache's snapshot: the same answers as without it,
    # the new count of the category and the git dates of the changed file included
    remove_index(index_dir)
    make_app()
    _wait_for_cache()
    repo.commit_file(path, repo("show", f"HEAD:{path}").replace("title: ", "title: Edited ", 1))
    derived = _everything(make_app(), "/events/900")
    remove_index(index_dir)
    assert _everything(make_app(), "/events/900") == derived
    assert any(e["title"].startswith("Edited ") for e in derived[ROUTES[0]]["events"])


def test_records_from_the_cache_are_made_when_used_and_forgotten_beyond_the_bound(paths, make_app, factory, repo,
                                                                                  small_cache, monkeypatch):
    """A start from the cache makes no record's data until it is used; beyond the bound of
    events holding their data the oldest forget it, and make it again the same when asked."""
    from calendar_service.domain.record import RECENT
    category = factory.category()
    venue = factory.venue()
    for n in range(6):
        factory.event(categories=[category["id"]], venue=venue["id"], tags=[f"tag-{n % 2}"])
    repo.commit_file("events/by-hand.md", "---\nid: 900\nslug: by-hand\ntitle: By hand\n"
                     "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\nText\n")
    remove_index(paths["index_dir"])
    fresh = _everything(make_app(), "/events/900")
    _wait_for_cache()

    RECENT.clear()
    app = make_app(recent_records=2)   # CALENDAR_RECENT_RECORDS
    assert RECENT.size == 2
    snapshot = app.extensions["calendar"].catalog.current()
    restored = [entry[1] for entry in snapshot.files.values() if entry[1] is not None]
    assert restored and all(record.packed_data is not None for record in restored)
    assert _everything(app, "/events/900") == fresh
    assert len(RECENT) <= 2
    events = [record for record in restored if record.resource.name == "events"]
    assert len([record for record in events if record._data is not None]) <= 2
    # venues, organizers and terms are held once made (their lists read every one of them)
    others = [record for record in restored if record.resource.name != "events"]
    assert others and all(record._data is not None for record in others)
    # the forgotten ones are made again from their bytes, git dates filled in as before
    assert _everything(app, "/events/900") == fresh
    assert fresh["/events/900"]["date_utc"] > "2020"


def _search_ids(app, role, words: str) -> set:
    """Ids a search lists, once the search index reflects the branch head (not the scanning path)."""
    service = app.extensions["calendar"]
    client = Client(app.test_client(), role)
    deadline = time.monotonic() + 20
    while True:
        r = client.get("/events", query_string={"search": words})
        view = service.index._view
        if view is not None and view.commit == service.store.head():
            assert r.status_code == 200, r.get_json()
            return {e["id"] for e in r.get_json()["events"]}
        assert time.monotonic() < deadline, "the index did not catch up"
        time.sleep(0.02)


def test_protected_events_are_known_from_the_cache_without_reading_every_record(paths, make_app, factory, repo,
                                                                                small_cache):
    """The password-protected events are kept with the references: a start from the cache
    knows them (a search matches only their titles), and a write that removes a password or
    adds one is followed."""
    hidden = factory.event(title="Garden party", description="Bring a zebracorn costume", password="sesame")
    plain = factory.event(title="Zoo visit", description="See the zebracorn enclosure")
    remove_index(paths["index_dir"])
    make_app()
    _wait_for_cache()
    app = make_app()
    snapshot = app.extensions["calendar"].catalog.current()
    assert all(entry[1] is None or entry[1].packed_data is not None for entry in snapshot.files.values())
    assert [e.id for e in snapshot.protected_events()] == [hidden["id"]]
    assert _search_ids(app, None, "zebracorn") == {plain["id"]}
    assert _search_ids(app, None, "garden") == {hidden["id"]}

    admin = Client(app.test_client(), "administrator")
    assert admin.post(f"/events/{hidden['id']}", json={"password": ""}).status_code == 200
    assert _search_ids(app, None, "zebracorn") == {plain["id"], hidden["id"]}
    assert admin.post(f"/events/{plain['id']}", json={"password": "other"}).status_code == 200
    assert _search_ids(app, None, "zebracorn") == {hidden["id"]}


def test_a_cache_whose_commit_is_gone_is_still_used_by_blob(paths, make_app, factory, repo, small_cache):
    for _ in range(3):
        factory.event()
    make_app()
    _wait_for_cache()
    cache = paths["index_dir"] / "records.cache"
    entries = pickle.loads(cache.read_bytes())
    expected = _everything(make_app())
    entries["commit"] = "0" * 40      # no such commit (history rewritten, objects collected)
    cache.write_bytes(pickle.dumps(entries))
    assert _everything(make_app()) == expected
    _wait_for_cache()
    assert pickle.loads(cache.read_bytes())["commit"] == repo.head()   # written again for the head


def test_a_running_service_keeps_the_cache_near_its_head(paths, make_app, factory, repo, small_cache, monkeypatch):
    """A start catches up from the cache's commit through the history since (a ``git log`` that
    grows with the commits), so the cache follows a running service every few heads, and a
    start that took long to catch up writes it at once."""
    monkeypatch.setattr(small_cache, "CACHE_REFRESH_HEADS", 3)
    factory.event()
    monkeypatch.setattr(small_cache, "CACHE_REFRESH_SECONDS", 3600.0)
    app = make_app()
    _wait_for_cache()
    cache = paths["index_dir"] / "records.cache"
    started = pickle.loads(cache.read_bytes())["commit"]
    client = Client(app.test_client(), "administrator")
    for n in range(4):   # within the hour after the start: heads enough, but too soon to write it again
        repo.commit_file(f"events/early-{n}.md", f"---\nid: {930 + n}\nslug: early-{n}\ntitle: Early {n}\n"
                         "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\n")
        assert client.get(f"/events/{930 + n}").status_code == 200
    _wait_for_cache()
    assert pickle.loads(cache.read_bytes())["commit"] == started
    monkeypatch.setattr(small_cache, "CACHE_REFRESH_SECONDS", 0.0)
    app = make_app()
    _wait_for_cache()
    first = pickle.loads(cache.read_bytes())["commit"]
    client = Client(app.test_client(), "administrator")
    heads = []
    for n in range(3):
        repo.commit_file(f"events/by-hand-{n}.md", f"---\nid: {910 + n}\nslug: by-hand-{n}\ntitle: By hand {n}\n"
                         "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\n")
        heads.append(repo.head())
        assert client.get(f"/events/{910 + n}").status_code == 200   # the service follows the branch
        _wait_for_cache()
        written = pickle.loads(cache.read_bytes())["commit"]
        assert written == (first if n < 2 else heads[-1]), n   # untouched for two heads, written at the third

    # a start that spends longer than CACHE_SLOW_CATCH_UP deriving from an older cache writes it again
    repo.commit_file("events/by-hand-9.md", "---\nid: 919\nslug: by-hand-9\ntitle: By hand 9\n"
                     "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\n")
    monkeypatch.setattr(small_cache, "CACHE_STALE_SHARE", 10 ** 6)   # only the time rule can write it
    monkeypatch.setattr(small_cache, "CACHE_SLOW_CATCH_UP", 0.0)
    make_app()
    _wait_for_cache()
    assert pickle.loads(cache.read_bytes())["commit"] == repo.head()


def test_the_first_list_after_a_write_shows_what_changed_in_the_events_it_embeds(admin, factory):
    category = factory.category()
    venue = factory.venue(city="Springfield")
    listed = [factory.event(categories=[category["id"]], venue=venue["id"]) for _ in range(3)]
    other = factory.event()

    def by_id():
        return {e["id"]: e for e in admin.get("/events?per_page=50").get_json()["events"]}

    before = by_id()
    assert {before[e["id"]]["categories"][0]["count"] for e in listed} == {3}

    # a write to an unrelated event: the listed ones are the same objects as before
    assert admin.post(f"/events/{other['id']}", json={"title": "Unrelated"}).status_code == 200
    after = by_id()
    assert all(after[e["id"]] == before[e["id"]] for e in listed)
    assert after[other["id"]]["title"] == "Unrelated"

    # one more event in the category: every event embedding it shows the new count at once
    factory.event(categories=[category["id"]])
    assert {by_id()[e["id"]]["categories"][0]["count"] for e in listed} == {4}

    # the venue renamed: every event embedding it shows the new name at once
    assert admin.post(f"/venues/{venue['id']}", json={"venue": "Renamed Hall"}).status_code == 200
    assert {by_id()[e["id"]]["venue"]["venue"] for e in listed} == {"Renamed Hall"}

    # the category renamed, then an event taken out of it
    assert admin.post(f"/categories/{category['id']}", json={"name": "Renamed"}).status_code == 200
    assert {by_id()[e["id"]]["categories"][0]["name"] for e in listed} == {"Renamed"}
    assert admin.post(f"/events/{listed[0]['id']}", json={"categories": []}).status_code == 200
    final = by_id()
    assert final[listed[0]["id"]]["categories"] == []
    assert {final[e["id"]]["categories"][0]["count"] for e in listed[1:]} == {3}


def test_a_page_of_kept_texts_makes_no_record_of_a_single_event(paths, make_app, factory, repo, small_cache):
    """A list page whose events' presented texts are kept reads no event's data again to learn
    whether its file declares a series: the index lists it as an event of its own (a series'
    occurrences are still made from the series)."""
    venue = factory.venue()
    for n in range(5):
        factory.event(venue=venue["id"], start_date=f"2027-02-0{n + 1} 10:00:00", end_date=f"2027-02-0{n + 1} 11:00:00")
    repo.commit_file("events/weekly.md", "---\nid: 900\nslug: weekly\ntitle: Weekly\nstart_date: 2027-02-02 12:00:00\n"
                     "end_date: 2027-02-02 13:00:00\nrecurrence:\n- RRULE:FREQ=WEEKLY;COUNT=3\n---\nText\n")
    remove_index(paths["index_dir"])
    make_app()
    _wait_for_cache()
    app = make_app()
    service = app.extensions["calendar"]
    client = Client(app.test_client(), None)
    query = {"start_date": "2027-01-01", "end_date": "2027-03-01"}
    deadline = time.monotonic() + 20
    while service.index._view is None or service.index._view.commit != service.store.head():
        assert time.monotonic() < deadline, "the index did not catch up"
        client.get("/events", query_string=query)
        time.sleep(0.02)
    first = client.get("/events", query_string=query)
    assert first.status_code == 200
    listed = first.get_json()["events"]
    assert [e["title"] for e in listed].count("Weekly") == 3 and len(listed) == 8
    events = [entry[1] for entry in service.catalog.current().files.values()
              if entry[1] is not None and entry[1].resource.name == "events"]
    assert events and all(record.packed_data is not None for record in events)
    for record in events:
        record.forget()
    again = client.get("/events", query_string=query)
    assert again.data == first.data
    made = {record.slug for record in events if record._data is not None}
    assert made <= {"weekly"}, made   # the series is read to make its occurrences


def test_the_file_dates_kept_by_column_are_the_ones_git_gives(paths, make_app, factory, repo, small_cache):
    """The cache keeps the files' git dates by column (``records_cache.FileDateColumns``): a start
    from it gives every file, and every record it makes, the dates a start reading git gives; the
    snapshots that writes derive from it keep them for the files they do not change."""
    venue, category = factory.venue(), factory.category()
    events = [factory.event(venue=venue["id"], categories=[category["id"]]) for _ in range(3)]
    repo.commit_file("events/by-hand.md", "---\nid: 900\nslug: by-hand\ntitle: By hand\n"
                     "start_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\nText\n")
    (repo.root / "events/by-hand.md").write_text((repo.root / "events/by-hand.md").read_text() + "More\n")
    repo("add", "events/by-hand.md")
    subprocess.run(["git", "-C", str(repo.root), "-c", "user.name=Other", "-c", "user.email=other@example.org",
                    "commit", "-q", "-m", "A later edit"], check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2031-01-01T00:00:00+00:00"})
    remove_index(paths["index_dir"])
    parsed = make_app().extensions["calendar"].snapshot()
    _wait_for_cache()
    from_git = {path: tuple(facts) for path, facts in parsed.file_dates.items()}
    assert type(parsed.file_dates) is dict and "events/by-hand.md" in from_git and len(from_git) >= 5
    changed, added, email, once = from_git["events/by-hand.md"]   # edited by another, later
    assert changed > added and email == "editor@example.org" and once is False

    app = make_app()
    service = app.extensions["calendar"]
    snapshot = service.snapshot()
    kept = snapshot.file_dates
    assert type(kept).__name__ == "FileDateColumns"
    assert dict(kept.items()) == from_git and {path: kept[path] for path in from_git} == from_git
    assert set(kept) == set(from_git) and len(kept) == len(from_git)
    assert "events/none.md" not in kept and kept.get("events/none.md") is None
    for path, (_, record, _) in snapshot.files.items():
        if record is not None and record.resource.kind == "post":
            assert record.history == from_git[path], path
            assert type(record._facts) is int   # its row of the dates: a start makes no tuple per record

    # a write: the next snapshot keeps the other files' dates (derived from the columns)
    changed = next(p for p, (_, r, _) in snapshot.files.items() if r is not None and r.id == events[0]["id"])
    admin = Client(app.test_client(), "administrator")
    assert admin.post(f"/events/{events[0]['id']}", json={"title": "Changed"}).status_code == 200
    after = service.snapshot().file_dates
    assert after[changed] != from_git[changed] and after[changed][1] == from_git[changed][1]   # added then
    assert {path: tuple(after[path]) for path in from_git if path != changed} == \
        {path: facts for path, facts in from_git.items() if path != changed}
    remove_index(paths["index_dir"])
    again = make_app().extensions["calendar"].snapshot().file_dates
    assert {path: tuple(facts) for path, facts in again.items()} == {path: tuple(f) for path, f in after.items()}


def test_maps_derived_from_the_dates_by_column_flatten_to_the_columns_with_changes_over_them(
        paths, make_app, factory, repo, small_cache, monkeypatch):
    """A snapshot's file dates derived from a start's columns (``Layered``), once past their share
    of changes, take as their base the columns with the changes over them (a copy of the changes,
    not a dict of every file: ~0.5 s at 1,000,000 files), step after step, and answer as a dict would."""
    from calendar_service.domain import layered as layered_maps
    from calendar_service.domain.layered import Layered
    from calendar_service.storage.records_cache import FileDateColumns
    events = [factory.event() for _ in range(3)]
    factory.venue()
    remove_index(paths["index_dir"])
    make_app()
    _wait_for_cache()
    columns = make_app().extensions["calendar"].snapshot().file_dates
    assert isinstance(columns, FileDateColumns)
    expected = dict(columns.items())
    gone, other = (repo.path_of(event["slug"]) for event in events[:2])
    monkeypatch.setattr(layered_maps, "MIN_CHANGES", 0)   # every change past the share
    step = Layered.of(columns)
    del step[gone]
    step = step.derive()
    assert isinstance(step._base, FileDateColumns)
    step[other] = (5, 4, "x@example.org", False)
    step = step.derive()
    step["events/new.md"] = (1, 2, "new@example.org", True)
    step = step.derive()
    want = {**{path: facts for path, facts in expected.items() if path != gone}, other: (5, 4, "x@example.org", False),
            "events/new.md": (1, 2, "new@example.org", True)}
    assert isinstance(step._base, FileDateColumns) and len(step) == len(want)
    assert dict(step.items()) == want and sorted(step) == sorted(want)
    assert {path: step[path] for path in want} == want and gone not in step and step.get(gone) is None
    assert dict(columns.items()) == expected   # the start's map is unchanged


def test_a_cache_write_removes_what_ended_writers_left_and_leaves_nothing_when_it_fails(paths, make_app, factory,
                                                                                         small_cache):
    """A worker stopped while its thread wrote the records cache leaves its temporary file (as
    large as the cache); the next write removes those of writers whose process has ended and
    keeps a live one's. A write that fails removes its own."""
    for _ in range(3):
        factory.event()
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    index_dir.mkdir(parents=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    running = subprocess.Popen(["sleep", "60"])
    try:
        left = index_dir / f"records.cache.{ended.pid}.140000000000000.tmp"
        left_texts = index_dir / f"records.cache.texts.{ended.pid}.140000000000002.tmp"   # (its texts' writer)
        live = index_dir / f"records.cache.{running.pid}.140000000000001.tmp"
        other = index_dir / "records.cache.notes.tmp"   # not a writer's name: not touched
        for path in (left, left_texts, live, other):
            path.write_bytes(b"partial")
        make_app()   # a start without a cache writes one
        _wait_for_cache()
        assert (index_dir / "records.cache").is_file()
        assert not left.exists() and not left_texts.exists() and live.exists() and other.exists()

        # a write that fails (its target is a folder: the rename is refused) leaves no file of its own
        from calendar_service.storage.records_cache import RecordsCacheFile
        catalog = make_app().extensions["calendar"].catalog
        blocked = paths["index_dir"].parent / "blocked"
        (blocked / "records.cache").mkdir(parents=True)
        (blocked / "records.cache" / "keep").write_text("x")
        RecordsCacheFile(blocked / "records.cache", catalog._source).write(catalog.current())
        assert sorted(p.name for p in blocked.iterdir()) == ["records.cache"]
    finally:
        running.kill()
        running.wait()


def test_a_quiet_branch_gets_its_records_cache_written_again_after_a_burst_of_writes(paths, make_app, monkeypatch,
                                                                                     small_cache):
    """After writes stop, the follower writes the records cache for the head once the branch has
    been quiet for CACHE_QUIET_SECONDS (the refresh by heads waits for 100 of them and only looks
    when one comes), so a restart starts at the head rather than catching up with the burst."""
    monkeypatch.setattr(small_cache, "CACHE_QUIET_SECONDS", 0.5)
    monkeypatch.setattr(small_cache, "CACHE_REFRESH_SECONDS", 0.0)
    index_dir = paths["index_dir"]
    event = {"start_date": "tomorrow 10am", "end_date": "tomorrow 11am"}
    first_app = make_app()
    assert Client(first_app.test_client(), "administrator").post("/events", json={"title": "First", **event}).status_code == 201
    close_app(first_app)
    app = make_app(follow_interval=0.05)   # a start without a cache writes one
    client = Client(app.test_client(), "administrator")
    _wait_for_cache()
    cache = index_dir / "records.cache"
    first = pickle.loads(cache.read_bytes())["commit"]
    for n in range(3):
        r = client.post("/events", json={"title": f"Burst {n}", **event})
        assert r.status_code == 201, r.get_json()
    head = app.extensions["calendar"].store.head()
    assert head != first
    written_at = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:   # (the file is replaced whole: read it as it is)
        if pickle.loads(cache.read_bytes())["commit"] == head:
            written_at = time.monotonic()
            break
        time.sleep(0.05)
    assert written_at is not None, "the cache stayed at the commit before the writes"
    # and a start from it is at the head at once: the same answers as the service that wrote it
    assert _everything(make_app()) == _everything(app)

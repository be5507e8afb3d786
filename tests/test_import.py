"""The importer: The Events Calendar's JSON in, one commit of record files out.

Round trips (the original's sample responses, and our own list output exported from one
service and imported into another), deduplication of linked records, bad input that names
the record and writes nothing, and imports into a repository that already has content,
with a service running on it.
"""
from __future__ import annotations

import copy
import pickle
import threading
import json
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from calendar_service import create_app
from calendar_service import __main__ as cli
from calendar_service.cli.importer import ImportFailure, import_events
from calendar_service.storage import bulk
from calendar_service.storage.store import GitStore
from conftest import Client, flat, set_cached

SAMPLES = Path(__file__).resolve().parent / "samples"  # responses recorded from the original
UTC = ZoneInfo("UTC")


def sample(name: str):
    return json.loads((SAMPLES / name).read_text())


def store_of(paths) -> GitStore:
    return GitStore(paths["content_dir"])


def import_items(paths, items, **kwargs):
    store = store_of(paths)
    try:
        return import_events(store, items, UTC, **kwargs)
    finally:
        store.close()


def all_events(client: Client) -> list:
    """Every event the service lists (past ones too), in list order."""
    out, page = [], 1
    while True:
        r = client.get("/events", query_string={"start_date": "1990-01-01", "end_date": "2100-01-01", "per_page": 50, "page": page,
                                                 "status": "publish,draft,private,pending,future"})
        assert r.status_code == 200, r.get_json()
        body = r.get_json()
        out += body["events"]
        if page >= body["total_pages"]:
            return out
        page += 1


def diff(a, b, path="") -> list[str]:
    """Field-by-field differences between two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in dict.fromkeys([*a, *b]):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: only in {'first' if key in a else 'second'}")
            else:
                found += diff(a[key], b[key], f"{path}.{key}")
        if list(a) != list(b) and not found:
            found.append(f"{path}: key order differs")
        return found
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


# ----------------------------------------------------------------------------- round trips


def test_sample_list_response_round_trips_through_the_command_line(paths, make_app, repo, monkeypatch, capsys):
    original = sample("events_list.json")
    source = paths["content_dir"].parent / "events_list.json"
    source.write_text(json.dumps(original))
    monkeypatch.setenv("CALENDAR_CONTENT_DIR", str(paths["content_dir"]))
    assert cli.main(["import", str(source), "--author", "Ann Importer <ann@example.org>"]) == 0
    out = capsys.readouterr()
    assert "imported 3 events" in out.out and "writing" in out.err  # summary, and a progress bar on stderr
    assert repo.count() == 1 and repo.last_author() == "Ann Importer <ann@example.org>"
    assert repo.status() == ""   # working tree and git index in line with the commit
    assert "events/peer-concert.md" in flat(repo.files())

    app = make_app(site_url="http://localhost:5000", site_timezone="America/New_York")
    client = Client(app.test_client(), None)
    assert app.extensions["calendar"].catalog.current().problems == []
    listed = client.get("/events", query_string={"start_date": "2000-01-01", "end_date": "2100-01-01"}, base_url="http://localhost:5000")
    assert len(listed.get_json()["events"]) == len(original["events"])
    for event, mine in zip(original["events"], listed.get_json()["events"]):
        differences = diff(event, mine)
        # expected: the port is part of our global ids; we derive a currency symbol from "$25"
        allowed = (".global_id", ".venue.global_id", ".organizer[0].global_id", ".cost_details.currency")
        assert [d for d in differences if not d.startswith(allowed)] == [], (event["id"], differences)


def test_single_event_response_imports(paths, make_app):
    original = sample("event_single.json")
    result = import_items(paths, [original])
    assert result.created["events"] == 1 and result.commit
    client = Client(make_app(site_url="http://localhost:5000").test_client(), None)
    mine = client.get(f"/events/{original['id']}").get_json()
    for key in ("title", "slug", "start_date", "end_date", "timezone", "utc_start_date", "all_day", "description",
                "excerpt", "featured", "show_map", "website", "cost"):
        assert mine[key] == original[key], key
    assert [t["slug"] for t in mine["categories"]] == [t["slug"] for t in original["categories"]]
    assert [t["slug"] for t in mine["tags"]] == [t["slug"] for t in original["tags"]]


def test_our_list_output_round_trips_into_an_empty_repository(tmp_path, app, admin, factory, users_template):
    music = factory.category(name="Music", description="Live music")
    jazz = factory.category(name="Jazz", parent=music["id"])
    venue = factory.venue(venue="Riverside Hall", address="1 Quay St", city="Springfield", country="United States",
                          state="IL", zip="62701", website="https://hall.example.org")
    organizer = factory.organizer(organizer="Arts Council", email="arts@example.org", phone="555-0100")
    factory.event(title="Jazz Night", start_date="2030-05-01 20:00:00", end_date="2030-05-01 23:00:00",
                  timezone="Europe/Berlin", description="First paragraph.\n\nSecond line one\nline two.",
                  excerpt="Short", cost="€12", categories=[jazz["id"], music["id"]], tags=["outdoor", "free"],
                  venue=venue["id"], organizer=[organizer["id"]], featured=True, website="https://jazz.example.org")
    factory.event(title="All Day Fair", start_date="2030-06-02", end_date="2030-06-02", all_day=True,
                  venue={"venue": "Market Square", "city": "Springfield"}, organizer=organizer["id"],
                  tags=["free"], cost="10-25", show_map=False)
    hidden = factory.event(title="Draft Talk", start_date="2029-01-10 09:00:00", end_date="2029-01-10 10:00:00",
                  status="draft", description="<div>Already HTML</div>", sticky=True, hide_from_listings=True)
    factory.event(title="Past Lecture", start_date="2001-03-04 18:00:00", end_date="2001-03-04 19:30:00",
                  categories=[music["id"]])
    listed = all_events(admin)
    assert len(listed) == 3   # hidden from listings: exported as a single event
    exported = listed + [admin.get(f"/events/{hidden['id']}").get_json()]

    other = tmp_path / "second"
    users = other / "users.yaml"
    other.mkdir()
    users.write_bytes(Path(users_template).read_bytes())
    result = import_events(GitStore(other / "content"), json.loads(json.dumps(exported)), UTC)
    assert result.remapped == [] and result.created["events"] == 4
    assert result.created["venues"] == 2 and result.created["organizers"] == 1
    second = create_app({"content_dir": other / "content", "index_dir": other / "index", "users_file": users,
                         "seed_sample": False, "site_timezone": "UTC"})
    second_admin = Client(second.test_client(), "administrator")
    assert second.extensions["calendar"].catalog.current().problems == []
    assert diff(listed, all_events(second_admin)) == []
    for event in exported:
        first = admin.get(f"/events/{event['id']}").get_json()
        assert diff(first, second_admin.get(f"/events/{event['id']}").get_json()) == []
    for path in ("/venues", "/organizers", "/categories", "/tags"):
        query = {"per_page": 50, "hide_empty": 0} if path in ("/categories", "/tags") else {"per_page": 50}
        assert diff(admin.get(path, query_string=query).get_json(),
                    second_admin.get(path, query_string=query).get_json()) == [], path


# ----------------------------------------------------------------------------- dedupe


def _event(n: int, **extra) -> dict:
    return {"id": 100 + n, "title": f"Event {n}", "start_date": f"2030-01-{n:02d} 10:00:00",
            "end_date": f"2030-01-{n:02d} 12:00:00", **extra}


def test_linked_records_are_created_once_each(paths, repo, make_app):
    hall = {"id": 50, "venue": "Peer Hall", "slug": "peer-hall", "city": "Springfield"}
    org = {"id": 60, "organizer": "Peer Org", "slug": "peer-org"}
    music = {"id": 2, "name": "Music", "slug": "music", "taxonomy": "tribe_events_cat"}
    items = [
        _event(1, venue=hall, organizer=[org], categories=[music], tags=[{"id": 9, "name": "free", "slug": "free"}]),
        _event(2, venue=copy.deepcopy(hall), organizer=[copy.deepcopy(org), {"organizer": "No Id Org"}],
               categories=[music]),
        # no ids: deduplicated by slug/name; a bare id refers to a record given earlier in the input
        _event(3, venue=50, organizer=[{"organizer": "No Id Org"}], categories=[2], tags=["free", "new tag"]),
        _event(4, venue=[], organizer=[], tags=[{"name": "new tag"}]),
    ]
    result = import_items(paths, items)
    assert result.created == {"events": 4, "venues": 1, "organizers": 2, "categories": 1, "tags": 2}
    assert sorted(flat(repo.files())) == sorted([
        "events/event-1.md", "events/event-2.md", "events/event-3.md", "events/event-4.md",
        "venues/peer-hall.yaml", "organizers/peer-org.yaml", "organizers/no-id-org.yaml",
        "categories/music.yaml", "tags/free.yaml", "tags/new-tag.yaml"])
    client = Client(make_app().test_client(), None)
    third = client.get("/events/103").get_json()
    assert third["venue"]["id"] == 50 and third["categories"][0]["id"] == 2
    assert [t["slug"] for t in third["tags"]] == ["free", "new-tag"]
    assert [o["organizer"] for o in third["organizer"]] == ["No Id Org"]
    assert third["organizer"][0]["id"] == client.get("/events/102").get_json()["organizer"][1]["id"]

    # a second import finds what is there: the same records (same id and slug; unchanged, so not
    # written), or another term with the same slug/name (reused as it is)
    again = import_items(paths, [_event(5, venue=hall, organizer=[org], categories=[music],
                                        tags=[{"id": 77, "name": "Free", "slug": "free"}])])
    assert again.created == {"events": 1, "venues": 0, "organizers": 0, "categories": 0, "tags": 0}
    assert again.unchanged == {"events": 0, "venues": 1, "organizers": 1, "categories": 1, "tags": 0}
    assert again.reused == {"events": 0, "venues": 0, "organizers": 0, "categories": 0, "tags": 1}
    assert again.remapped == [("event", 105, 106)]   # "No Id Org" got 105, the first free id
    fifth = Client(make_app().test_client(), None).get("/events/106").get_json()
    assert fifth["venue"]["id"] == 50 and fifth["tags"][0]["id"] == 9


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad, field", [
    ({"start_date": "next tuesday"}, "start_date"),
    ({"end_date": "2029-01-01 00:00:00"}, "end_date"),
    ({"title": ""}, "title"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"venue": {"city": "No name"}}, "venue.venue"),
    ({"categories": [{"name": "X", "id": "abc"}]}, "categories.id"),
    ({"venue": 999}, "venue"),
    ({"status": "bogus"}, "status"),
])
def test_bad_input_names_the_record_and_field_and_writes_nothing(paths, make_app, repo, bad, field):
    make_app()   # an existing repository, empty
    before = (repo.count(), sorted(p.name for p in paths["content_dir"].iterdir()))
    items = [_event(1), _event(2), {**_event(3, title="Broken One"), **bad}]
    with pytest.raises(ImportFailure) as caught:
        import_items(paths, items)
    message = str(caught.value)
    assert message.startswith("event #2 (id 103") and f"field '{field}'" in message, message
    if bad.get("title") != "":
        assert "'Broken One'" in message
    assert (repo.count(), sorted(p.name for p in paths["content_dir"].iterdir())) == before
    assert repo("for-each-ref").strip() == ""


def test_bad_input_on_the_command_line_exits_2(paths, repo, monkeypatch, capsys):
    source = paths["content_dir"].parent / "bad.json"
    source.write_text(json.dumps({"events": [_event(1), "not an event"]}))
    monkeypatch.setenv("CALENDAR_CONTENT_DIR", str(paths["content_dir"]))
    assert cli.main(["import", str(source)]) == 2
    err = capsys.readouterr().err
    assert "event #1: the record must be an event object" in err and "nothing was imported" in err
    assert repo.count() == 0
    source.write_text("{not json")
    assert cli.main(["import", str(source)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


# ----------------------------------------------------------------------------- non-empty repository


def test_import_into_a_repository_in_use(paths, app, admin, anon, factory, repo):
    existing = [factory.event(title="Peer Concert") for _ in range(2)]   # slugs peer-concert, peer-concert-2
    venue = factory.venue(venue="Some Hall")
    assert anon.get("/events").get_json()["total"] == 2
    # an editor's uncommitted change stays untouched
    edited = paths["content_dir"] / repo.path_of(existing[0]["slug"])
    edited.write_text(edited.read_text() + "\nedited, not committed\n")
    head = repo.head()

    original = sample("events_list.json")
    # ids 7, 8, 9 and venue 5 / organizer 6: make one of them clash with an existing record
    original["events"][0]["id"] = existing[1]["id"]
    original["events"][0]["venue"]["id"] = venue["id"]     # same id, other slug: a new venue with a new id
    result = import_items(paths, original["events"])
    assert repo("rev-parse", "HEAD~1").strip() == head and repo.count() == 4
    changed = {(kind, old): new for kind, old, new in result.remapped}
    assert set(changed) == {("event", existing[1]["id"]), ("venue", venue["id"])}
    new_id = changed[("event", existing[1]["id"])]
    assert "is now" in repo.last_message()
    assert repo.status().strip() == f"M {repo.path_of(existing[0]['slug'])}"
    assert "edited, not committed" in edited.read_text()

    # the running service follows: the clashing event got a new id and a new slug
    assert len(all_events(admin)) == 5
    imported = admin.get(f"/events/{new_id}").get_json()
    assert imported["title"] == "Peer Concert" and imported["slug"] == "peer-concert-3"
    assert imported["venue"]["venue"] == "Peer Hall" and imported["venue"]["id"] != venue["id"]
    assert admin.get(f"/events/{existing[1]['id']}").get_json()["slug"] == existing[1]["slug"]
    assert admin.get("/events/8").get_json()["title"] == original["events"][1]["title"]
    fsck = subprocess.run(["git", "-C", str(repo.root), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


# ----------------------------------------------------------------------------- records cache (cold start)


def test_parsed_records_are_cached_by_blob_for_the_next_start(paths, make_app, repo, monkeypatch):
    from calendar_service.storage import catalog as catalog_module
    from calendar_service.storage.records_cache import cache_version
    monkeypatch.setattr(catalog_module, "CACHE_MIN_FILES", 1)
    items = [_event(n, venue={"id": 50, "venue": "Hall"}) for n in range(1, 6)]
    import_items(paths, items)
    cache = paths["index_dir"] / "records.cache"
    app = make_app()
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            thread.join(10)
    assert cache.exists()
    first = Client(app.test_client(), None)
    before = first.get("/events/101").get_json()

    # the cache is what a restart reads (a record changed only in the cache shows), keyed by blob:
    # a file changed since is parsed again
    entries = pickle.loads(cache.read_bytes())
    set_cached(entries, repo.path_of("event-1"), title="From the cache")
    cache.write_bytes(pickle.dumps(entries))
    repo.commit_file(repo.path_of("event-2"), repo("show", "HEAD:" + repo.path_of("event-2")).replace("Event 2", "Edited 2"))
    client = Client(make_app().test_client(), None)
    assert client.get("/events/101").get_json()["title"] == "From the cache"
    assert client.get("/events/102").get_json()["title"] == "Edited 2"
    assert diff(before, first.get("/events/101").get_json()) == []

    # a broken cache, or one holding anything but plain data, is ignored
    for content in (b"garbage", pickle.dumps({"version": cache_version(), "files": GitStore})):
        cache.write_bytes(content)
        client = Client(make_app().test_client(), None)
        assert client.get("/events/101").get_json()["title"] == "Event 1"


# ----------------------------------------------------------------------------- re-import (re-sync)


def _tree(repo) -> dict[str, str]:
    """path -> blob id of every committed file."""
    return dict(line.split(" ", 2)[2].split("\t")[::-1] for line in repo("ls-tree", "-r", "HEAD").splitlines())


def test_importing_the_same_export_twice_changes_nothing(paths, repo, make_app):
    original = sample("events_list.json")["events"]
    first = import_items(paths, copy.deepcopy(original))
    assert first.commit and repo.count() == 1
    files = _tree(repo)
    again = import_items(paths, copy.deepcopy(original))
    assert again.commit is None and repo.count() == 1 and _tree(repo) == files
    assert sum(again.created.values()) == 0 and sum(again.updated.values()) == 0
    assert again.unchanged == {"events": 3, "venues": 1, "organizers": 1, "categories": 1, "tags": 3}
    assert "imported nothing new; unchanged 3 events" in again.summary()
    assert repo.status() == ""
    assert len(all_events(Client(make_app().test_client(), "administrator"))) == 3


def test_a_modified_export_rewrites_exactly_the_changed_files_in_one_commit(paths, repo, make_app):
    original = sample("events_list.json")["events"]
    import_items(paths, copy.deepcopy(original))
    # an editor adds a password to one event in git: a key the import does not manage, kept
    workshop = repo("show", "HEAD:" + repo.path_of("peer-workshop"))
    repo.commit_file(repo.path_of("peer-workshop"), workshop.replace("title:", "password: sesame\ntitle:", 1))
    before = _tree(repo)

    changed = copy.deepcopy(original)
    changed[0]["title"] = "Peer Concert (moved)"                      # event 7
    changed[0]["venue"]["city"] = "Shelbyville"                       # venue 5
    changed[2]["description"] = "<p>New text.</p>"                    # event 9 (has the password)
    changed.append({**copy.deepcopy(original[1]), "id": 40, "global_id": "localhost?id=40",
                    "global_id_lineage": ["localhost?id=40"], "slug": "peer-new", "title": "Peer New"})
    result = import_items(paths, changed)
    assert repo.count() == 3 and result.commit == repo.head()
    touched = sorted(repo("show", "--name-status", "--format=", "HEAD").split("\n"))
    assert flat(t for t in touched if t) == ["A\tevents/peer-new.md", "M\tevents/peer-concert.md",
                                         "M\tevents/peer-workshop.md", "M\tvenues/peer-hall.yaml"]
    assert result.updated == {"events": 2, "venues": 1, "organizers": 0, "categories": 0, "tags": 0}
    assert result.created["events"] == 1 and result.remapped == []
    assert repo.last_message().startswith("Import 1 events, update 2\n")
    after = _tree(repo)
    assert set(flat(p for p in after if after[p] != before.get(p))) == {
        "events/peer-new.md", "events/peer-concert.md", "events/peer-workshop.md", "venues/peer-hall.yaml"}
    assert "password: sesame" in repo("show", "HEAD:" + repo.path_of("peer-workshop"))
    assert repo.status() == ""

    admin = Client(make_app().test_client(), "administrator")
    concert = admin.get("/events/7").get_json()
    assert concert["title"] == "Peer Concert (moved)" and concert["slug"] == "peer-concert"
    assert concert["venue"]["city"] == "Shelbyville" and concert["venue"]["id"] == 5
    assert admin.get("/events/9").get_json()["description"] == "<p>New text.</p>"
    assert admin.get("/events/40").get_json()["title"] == "Peer New"
    # records missing from an export are left alone
    import_items(paths, [changed[0]])
    assert repo.count() == 3 and len(all_events(admin)) == 4


def test_folders_of_many_files_get_the_same_commit_through_mktree(paths, repo, make_app, monkeypatch):
    """A folder getting many files has its tree made by `git mktree` (fast-import finds each path
    by a linear scan of its folder: hours for a million events). With the threshold at one file
    every folder goes that way: the first import into an empty repository, then a re-import that
    adds, rewrites and keeps files beside an editor's commit, give the same trees as above."""
    monkeypatch.setattr(bulk, "MKTREE_FILES", 1)
    test_a_modified_export_rewrites_exactly_the_changed_files_in_one_commit(paths, repo, make_app)
    assert repo("fsck", "--no-progress").strip() == ""


def test_a_record_whose_id_was_taken_is_matched_again_by_its_global_id(paths, app, admin, factory, repo):
    existing = factory.event(title="Local Talk")
    venue = factory.venue(venue="Local Hall")
    item = {**_event(1, title="Remote Gig"), "id": existing["id"], "global_id": "peer.example?id=%d" % existing["id"],
            "global_id_lineage": ["peer.example?id=%d" % existing["id"]],
            "venue": {"id": venue["id"], "venue": "Remote Hall", "global_id": "peer.example?id=%d" % venue["id"]}}
    first = import_items(paths, [copy.deepcopy(item)])
    changed = {(kind, old): new for kind, old, new in first.remapped}
    new_event, new_venue = changed[("event", existing["id"])], changed[("venue", venue["id"])]
    assert {new_event, new_venue}.isdisjoint({existing["id"], venue["id"]})
    count, files = repo.count(), _tree(repo)

    again = import_items(paths, [copy.deepcopy(item)])
    assert again.commit is None and again.remapped == [] and repo.count() == count and _tree(repo) == files
    assert again.unchanged["events"] == 1 and again.unchanged["venues"] == 1

    item["title"], item["venue"]["phone"] = "Remote Gig (late)", "555-0199"
    third = import_items(paths, [copy.deepcopy(item)])
    assert third.remapped == [] and third.updated["events"] == 1 and third.updated["venues"] == 1
    assert admin.get(f"/events/{new_event}").get_json()["title"] == "Remote Gig (late)"
    assert admin.get(f"/events/{existing['id']}").get_json()["title"] == "Local Talk"
    assert admin.get(f"/venues/{new_venue}").get_json()["phone"] == "555-0199"
    assert admin.get(f"/venues/{venue['id']}").get_json()["venue"] == "Local Hall"


def test_a_reimport_never_overwrites_an_uncommitted_edit(paths, repo):
    original = sample("events_list.json")["events"]
    import_items(paths, copy.deepcopy(original))
    edited = paths["content_dir"] / repo.path_of("peer-concert")
    edited.write_text(edited.read_text() + "\nmy draft, not committed\n")
    count = repo.count()
    original[0]["title"] = "Changed upstream"
    with pytest.raises(Exception) as caught:
        import_items(paths, original)
    assert f"{repo.path_of('peer-concert')} changed since it was read" in str(caught.value)
    assert repo.count() == count and "my draft, not committed" in edited.read_text()
    assert "calendar-import" not in repo("for-each-ref")

"""Last known good: a file that stops parsing never removes its record.

The service keeps serving the version of the file's last commit that parsed, marks it (the
``X-Calendar-Stale`` header of its reads, the ``stale`` list of ``/status``), and neither the
changes feed nor webhooks announce a deletion nobody made; a write to it is a 409 that never
writes over the editor's file. A file that never parsed is not served; deleting a broken file
deletes its record. The cases happen as they do for editor teams: a clean merge that leaves a key
twice, conflict markers committed by mistake, a typo in a series' rule, pushed to a bare remote
served by ``git daemon`` and pulled by the git webhook; restarts with and without the records cache.
"""
from __future__ import annotations

import shutil

import pytest

from calendar_service.storage import catalog as catalog_module
from conftest import Client
from test_remote import bare, editor_clone, instance, instances, remote_url  # noqa: F401 (fixtures)
from test_start_cache import _wait_for_cache
from test_webhooks import FAST, receiver, subscribe, wait_for  # noqa: F401 (fixture)

STALE = "X-Calendar-Stale"


def changes(client, token) -> list[tuple[str, int, str]]:
    r = client.get(f"/changes?since={token}")
    assert r.status_code == 200, r.get_json()
    return [(c["type"], c["id"], c["action"]) for c in r.get_json()["changes"]]


def stale_of(client) -> dict:
    r = client.get("/status")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["stale_count"] == len(body["stale"])
    return {entry["path"]: entry for entry in body["stale"]}


def front_matter_path(clone, event_id: int) -> str:
    return next(p for p in clone("ls-files", "events").split()
                if f"\nid: {event_id}\n" in (clone.root / p).read_text())


# ----------------------------------------------------------------------------- the editors' cases


def test_a_clean_merge_that_leaves_cost_twice_keeps_the_event_everywhere(instance, receiver, bare, tmp_path):
    """A pull request appends ``cost:`` at the end of the front matter while an API update sets the
    cost at its fixed position: git merges them without a conflict and the file holds ``cost``
    twice. Every replica keeps serving the event (the version of the merge's first parent), marks
    it, and neither ``/changes`` nor webhooks say ``deleted``."""
    a = instance("a", state_dir=tmp_path / "state-a", **FAST)
    r = a.admin.post("/events", json={"title": "Harbour Concert", "start_date": "2027-06-01 20:00",
                                      "end_date": "2027-06-01 22:00", "description": "On the pier."})
    assert r.status_code == 201, r.get_json()
    event_id = r.get_json()["id"]
    clone = editor_clone(bare, tmp_path / "editor")
    path = front_matter_path(clone, event_id)
    text = (clone.root / path).read_text()
    head, body = text[4:].split("\n---\n", 1)
    clone.commit_file(path, f"---\n{head}\ncost: '5'\n---\n{body}", "Add the entry fee")   # the pull request
    assert a.admin.post(f"/events/{event_id}", json={"cost": "10"}).status_code == 200   # meanwhile, the API
    subscribe(a.admin, receiver, "/all")
    before_merge = a.repo.head()
    clone("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")   # a clean merge
    merged = (clone.root / path).read_text()
    assert merged.count("\ncost:") == 2, merged
    clone("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code == 200
    assert a.repo.head() == clone.head()

    b = instance("b")   # a replica that starts after the merge: it looks the last good version up in history
    for replica in (a, b):
        r = replica.admin.get(f"/events/{event_id}")
        assert r.status_code == 200, r.get_json()
        assert r.get_json()["title"] == "Harbour Concert"
        stale = stale_of(replica.admin)[path]
        assert r.headers[STALE] == f"{path}:{stale['line']}"
        assert merged.split("\n")[stale["line"] - 1].startswith("cost:")
        assert stale["broken_by"] == clone.head()
        assert stale["served_commit"] == clone("rev-parse", "HEAD^1").strip()
        assert "cost" in stale["message"]
        assert ("events", event_id, "deleted") not in changes(replica.admin, before_merge)
        titles = [e["title"] for e in replica.admin.get("/events?start_date=2027-01-01").get_json()["events"]]
        assert titles == ["Harbour Concert"], replica
    # the replicas agree: the same version, the same ETag
    assert a.admin.get(f"/events/{event_id}").headers["ETag"] == b.admin.get(f"/events/{event_id}").headers["ETag"]
    assert a.admin.get(f"/events/{event_id}").get_json() == b.admin.get(f"/events/{event_id}").get_json()

    # the branch's steps: the pull request's commit (an update), then the merge (the same version served)
    got = wait_for(lambda: [d for d in receiver.ok("/all") if d["payload"]["data"]["commit"] == stale["served_commit"]],
                   what="the delivery of the pull request's commit")
    assert got[0]["payload"]["data"]["changes"] == [{"type": "events", "id": event_id, "action": "updated",
                                                     "commit": stale["served_commit"]}]
    a.hook()
    assert all(c["action"] != "deleted" for d in receiver.ok("/all") for c in d["payload"]["data"]["changes"])


def test_conflict_markers_keep_the_event_and_a_write_to_it_is_a_409(instance, bare, tmp_path):
    a = instance("a")
    r = a.admin.post("/events", json={"title": "Board Meeting", "start_date": "2027-06-02 09:00",
                                      "end_date": "2027-06-02 10:00"})
    event_id = r.get_json()["id"]
    etag = r.headers["ETag"]
    token = a.repo.head()
    clone = editor_clone(bare, tmp_path / "editor")
    path = front_matter_path(clone, event_id)
    text = (clone.root / path).read_text()
    broken = text.replace("title: Board Meeting\n", "<<<<<<< HEAD\ntitle: Board Meeting\n=======\n"
                                                    "title: Board meeting (moved)\n>>>>>>> feature\n")
    clone.commit_file(path, broken, "Merge the feature branch")
    clone("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code == 200

    r = a.admin.get(f"/events/{event_id}")
    assert r.status_code == 200 and r.get_json()["title"] == "Board Meeting"
    assert r.headers["ETag"] == etag   # the version served is the one before: its ETag too
    assert r.headers[STALE].startswith(f"{path}:")
    assert changes(a.admin, token) == []
    assert a.admin.get(f"/events/{event_id}", headers={"If-None-Match": etag}).status_code == 304

    for write in (lambda: a.admin.post(f"/events/{event_id}", json={"title": "Board Meeting, room 2"}),
                  lambda: a.admin.delete(f"/events/{event_id}")):
        r = write()
        assert r.status_code == 409, r.get_json()
        body = r.get_json()
        assert body["code"] == "calendar-file-broken" and body["data"]["status"] == 409
        assert body["data"]["path"] == path and body["message"].startswith(f"{path}:{body['data']['line']}: ")
        assert "Fix the file in git" in body["message"]
    # the editor's file is untouched, here and on the remote
    assert (a.repo.root / path).read_text() == broken
    assert clone("fetch", "-q") == "" and clone("rev-parse", "origin/main").strip() == clone.head()


def test_a_typo_in_a_series_rule_keeps_the_series_and_its_occurrences(instance, bare, tmp_path):
    a = instance("a")
    r = a.admin.post("/events", json={"title": "Sunday Market", "start_date": "2027-06-06 08:00",
                                      "end_date": "2027-06-06 12:00",
                                      "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=SU;COUNT=6"]})
    assert r.status_code == 201, r.get_json()
    series_id = r.get_json()["id"]
    window = "/events?start_date=2027-06-01&end_date=2027-12-31&per_page=50"
    before = [(e["id"], e["start_date"]) for e in a.admin.get(window).get_json()["events"]]
    assert len(before) == 6
    token = a.repo.head()
    clone = editor_clone(bare, tmp_path / "editor")
    path = front_matter_path(clone, series_id)
    text = (clone.root / path).read_text()
    clone.commit_file(path, text.replace("BYDAY=SU;", "BYDAY=SUNDAY;"), "Spell the day out")
    clone("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code == 200

    assert [(e["id"], e["start_date"]) for e in a.admin.get(window).get_json()["events"]] == before
    assert a.admin.get(f"/events/{series_id}/occurrences?start_date=2027-06-01").get_json()["total"] == 6
    assert a.admin.get(f"/events/{before[2][0]}").headers[STALE].startswith(f"{path}:")
    assert changes(a.admin, token) == []
    assert path in stale_of(a.admin)


# ----------------------------------------------------------------------------- starts, repair, delete


@pytest.mark.parametrize("with_cache", [False, True])
def test_a_start_with_a_broken_head_file_serves_its_last_good_version(paths, make_app, factory, repo,
                                                                      monkeypatch, with_cache):
    monkeypatch.setattr(catalog_module, "CACHE_MIN_FILES", 1)
    event = factory.event(title="Choir Rehearsal")
    path = repo.path_of(event["slug"])
    good = (repo.root / path).read_text()
    repo.commit_file(path, good.replace("title: Choir Rehearsal", "title: Choir Rehearsal\ntitle: again"), "Oops")
    repo.commit_file(path, good.replace("title: Choir Rehearsal", "title: [Choir"), "Oops again")
    served = Client(make_app().test_client(), "administrator").get(f"/events/{event['id']}")
    etag = served.headers["ETag"]
    shutil.rmtree(paths["index_dir"])
    started = make_app()   # a start without the records cache: the history is read
    _wait_for_cache()
    client = Client(started.test_client(), "administrator")
    r = client.get(f"/events/{event['id']}")
    assert r.status_code == 200 and r.get_json()["title"] == "Choir Rehearsal"
    assert r.headers[STALE] == f"{path}:4" and r.headers["ETag"] == etag
    found = stale_of(client)[path]
    assert found["broken_by"] == repo("rev-parse", "HEAD~1").strip()
    assert found["served_commit"] == repo("rev-parse", "HEAD~2").strip()
    if with_cache:
        assert (paths["index_dir"] / "records.cache").exists()
        monkeypatch.setattr(catalog_module.GitStore, "path_versions",
                            lambda *a, **k: pytest.fail("the history was read again despite the cache"))
    else:
        (paths["index_dir"] / "records.cache").unlink(missing_ok=True)
    again = Client(make_app().test_client(), "administrator")
    r = again.get(f"/events/{event['id']}")
    assert r.status_code == 200 and r.get_json()["title"] == "Choir Rehearsal"
    assert r.headers[STALE] == f"{path}:4" and r.headers["ETag"] == etag
    assert stale_of(again)[path] == found


def test_a_file_that_never_parsed_is_listed_not_served(anon, admin, repo, factory):
    factory.event()
    repo.commit_file("events/new-by-hand.md", "---\nid: 700\ntitle: [unfinished\n---\n", "Start an event")
    assert anon.get("/events/700").status_code == 404
    status = admin.get("/status").get_json()
    assert any(s["path"] == "events/new-by-hand.md" for s in status["skipped"])
    assert status["stale"] == [] and status["stale_count"] == 0


def test_repairing_a_broken_file_serves_the_new_version_and_drops_the_mark(anon, admin, repo, factory):
    event = factory.event(title="Poetry Slam")
    path = repo.path_of(event["slug"])
    good = (repo.root / path).read_text()
    repo.commit_file(path, good.replace("title: Poetry Slam", "title: [Poetry"), "Break")
    token = repo.head()
    assert anon.get(f"/events/{event['id']}").headers[STALE] == f"{path}:4"
    repo.commit_file(path, good.replace("title: Poetry Slam", "title: Poetry Slam, repaired"), "Repair")
    r = anon.get(f"/events/{event['id']}")
    assert r.get_json()["title"] == "Poetry Slam, repaired" and STALE not in r.headers
    assert stale_of(admin) == {}
    assert changes(anon, token) == [("events", event["id"], "updated")]
    assert admin.post(f"/events/{event['id']}", json={"title": "Poetry Slam, again"}).status_code == 200


def test_deleting_a_broken_file_deletes_its_record_once(anon, admin, repo, factory):
    event = factory.event()
    path = repo.path_of(event["slug"])
    token = repo.head()
    repo.commit_file(path, "---\nid: 1\ntitle: [broken\n---\n", "Break")
    broken = repo.head()
    assert anon.get(f"/events/{event['id']}").status_code == 200
    repo("rm", "-q", path)
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "Remove")
    assert anon.get(f"/events/{event['id']}").status_code == 404
    assert changes(anon, token) == [("events", event["id"], "deleted")]
    assert changes(anon, broken) == [("events", event["id"], "deleted")]
    assert stale_of(admin) == {}


# ----------------------------------------------------------------------------- one record's failure stays its own


def test_a_record_that_fails_downstream_is_left_out_and_the_rest_answers(app, anon, admin, repo, factory):
    """Files that parse but whose derived values cannot be made (an event ending in the year 10000
    once converted to UTC), and a rule running to the end of the calendar: lists, iCalendar feeds, the
    changes feed, /status and /readyz answer with the other records; each failure is logged once
    and listed by /status (or the file is refused when it is read, as a file that does not parse)."""
    kept = factory.event(title="Quiet Evening", start_date="2027-03-01 18:00", end_date="2027-03-01 19:00")
    token = repo.head()
    repo.commit_files({
        "events/far.md": "---\nid: 801\nslug: far\ntitle: Far\nstatus: publish\n"
                         "start_date: '9999-12-31 10:00:00'\nend_date: '9999-12-31 23:00:00'\ntimezone: Etc/GMT+12\n---\n",
        "events/endless.md": "---\nid: 800\nslug: endless\ntitle: Endless\nstatus: publish\n"
                             "start_date: '2027-03-02 10:00:00'\nend_date: '2027-03-02 11:00:00'\ntimezone: UTC\n"
                             "recurrence:\n- RRULE:FREQ=DAILY;UNTIL=99991231T235959Z\n---\n"}, "Far away")
    for _ in range(2):   # the second time from what was remembered
        for query in ("/events?start_date=2027-03-01", "/events?start_date=2027-03-01&search=e",
                      "/events?start_date=2027-03-01&per_page=50&geoloc=0"):
            r = anon.get(query)
            assert r.status_code == 200, r.get_json()
            assert "Quiet Evening" in [e["title"] for e in r.get_json()["events"]]
        r = anon.get("/events?start_date=2027-03-01&ical=1")
        assert r.status_code == 200 and b"Quiet Evening" in r.data
        assert anon.get(f"/events/{kept['id']}").status_code == 200
        r = anon.get(f"/changes?since={token}")
        assert r.status_code == 200, r.get_json()
        r = admin.get("/status")
        assert r.status_code == 200, r.get_json()
        status = r.get_json()
        assert app.test_client().get("/readyz").status_code in (200, 503)
    listed = ({f["path"] for f in status["record_failures"]} | {s["path"] for s in status["skipped"]})
    assert "events/far.md" in listed, status
    # a rule running to the end of the calendar runs to the horizon: served like any open-ended rule
    r = anon.get("/events?start_date=2027-03-02&end_date=2027-03-03")
    assert "Endless" in [e["title"] for e in r.get_json()["events"]]

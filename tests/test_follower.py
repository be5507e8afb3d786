"""Reads never write: the follower thread of each process gives ids and brings the search index
to a new head on its own, and /readyz does not depend on requests moving anything forward."""
from __future__ import annotations

import time

from conftest import PASSWORDS, followed
from servers import Server

NO_ID = ("---\ntitle: Committed without id\nslug: committed-without-id\nstatus: publish\n"
         "start_date: 2030-05-01 10:00:00\nend_date: 2030-05-01 11:00:00\n---\nText.\n")
LIST = "/events?start_date=2000-01-01&end_date=2040-01-01"


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_get_never_commits(app, admin, anon, repo, factory):
    """An editor commits a file without id: lists, single reads, the changes feed and the status
    view, in a loop, make no commit (the follower is stopped here: only requests could)."""
    event = factory.event(title="Before", start_date="2030-05-01 08:00", end_date="2030-05-01 09:00")
    followed(app)
    app.extensions["calendar"].follower.stop()
    repo.commit_file("events/committed-without-id.md", NO_ID, "An event without id")
    head = repo.head()
    for _ in range(20):
        assert [e["title"] for e in anon.get(LIST).get_json()["events"]] == ["Before"]
        assert anon.get(f"/events/{event['id'] + 1}").status_code == 404
        assert anon.get(f"/events/{event['id']}").status_code == 200
        assert anon.get("/changes").status_code == 200
        assert admin.get("/status").get_json()["waiting_for_id"] == ["events/committed-without-id.md"]
        assert admin.get("/venues").status_code == 200
    assert repo.head() == head


def test_the_follower_gives_ids_without_any_request(app, repo, factory):
    """The same commit with the follower running: within about two seconds, and without any
    request, the service's id commit lands and the search index reaches the new head."""
    event = factory.event(title="Before", start_date="2030-05-01 08:00", end_date="2030-05-01 09:00")
    followed(app)
    repo.commit_file("events/committed-without-id.md", NO_ID, "An event without id")
    edited = repo.head()
    assert wait_for(lambda: repo.head() != edited, 3.0), "no id commit without a request"
    assert repo.last_message().startswith("Give ids and slugs to files")
    assert f"id: {event['id'] + 1}" in (repo.root / "events/committed-without-id.md").read_text()
    service = app.extensions["calendar"]
    assert wait_for(lambda: service.index.view(service.catalog.current(), service.store, build=False) is not None, 3.0)


def test_readyz_stays_ready_after_a_write_with_only_probes(paths):
    """Behind a balancer that routes only to ready replicas, a write must not take the replica out:
    /readyz stays 200 after it (with no list request ever made), and the index catches up alone."""
    server = Server(paths, "gunicorn", workers=2)
    try:
        server.start()
        status, body, _ = server.request("POST", "/events", {"title": "Probe", "start_date": "2030-06-01 10:00",
                                                              "end_date": "2030-06-01 11:00"},
                                         auth=("administrator", PASSWORDS["administrator"]))
        assert status == 201, body
        for _ in range(30):
            status, body, raw = server.request("GET", "/readyz", api=False)
            assert status == 200, raw
            assert body["ready"] is True
            time.sleep(0.1)
        index_state = paths["index_dir"] / "STATE.json"
        assert wait_for(lambda: body["head"] in index_state.read_text(), 10.0), "the index did not follow alone"
    finally:
        server.kill()


def test_readyz_never_answers_500(app, repo, factory):
    """A failure while checking readiness (here the branch's ref file cannot be read: a directory
    stands in its place) is a 503 naming the failure, never a 500; once repaired, a 200."""
    factory.event(title="Before", start_date="2030-05-01 08:00", end_date="2030-05-01 09:00")
    followed(app)
    client = app.test_client()
    ref = repo.root / ".git/refs/heads/main"
    head = ref.read_text()
    ref.unlink()
    ref.mkdir()
    try:
        answer = client.get("/readyz")
        assert answer.status_code == 503, answer.get_data(as_text=True)
        body = answer.get_json()
        assert body["code"] == "calendar-not-ready" and body["data"]["status"] == 503
        assert "the readiness check failed" in body["message"]
    finally:
        ref.rmdir()
        ref.write_text(head)
    assert client.get("/readyz").status_code == 200

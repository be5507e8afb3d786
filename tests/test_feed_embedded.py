"""The changes feed and webhooks list the events whose embedded venue or organizer changed.

An event embeds its venue and organizers: when one of them is edited, renamed, trashed or deleted,
what the event serves changes (and its ETag), so a client that syncs by the feed must see the event
as ``updated`` although its own file did not change. Through the HTTP API and a real remote push
(``git daemon``); webhooks share the change detection and announce the same.
"""
from __future__ import annotations

from conftest import Client, followed
from test_remote import bare, editor_clone, instance, instances, remote_url  # noqa: F401 (fixtures)
from test_webhooks import FAST, receiver, subscribe, wait_for  # noqa: F401 (fixtures)

EVENT = {"start_date": "2030-05-01 10:00", "end_date": "2030-05-01 12:00", "status": "publish"}


def _feed(client, token: str) -> tuple[list[dict], str]:
    r = client.get(f"/changes?since={token}")
    assert r.status_code == 200, r.get_json()
    return r.get_json()["changes"], r.get_json()["next_token"]


def test_events_embedding_a_changed_venue_or_organizer_are_updated(instance, receiver, bare, tmp_path):  # noqa: F811
    a = instance("a", state_dir=tmp_path / "state-a", **FAST)
    admin, anon = a.admin, Client(a.app.test_client(), None)
    venue = admin.post("/venues", json={"venue": "Old Hall"}).get_json()["id"]
    other = admin.post("/venues", json={"venue": "Other Hall"}).get_json()["id"]
    organizer = admin.post("/organizers", json={"organizer": "Ann"}).get_json()["id"]
    at_venue = [admin.post("/events", json={"title": f"At the hall {n}", "venue": venue, **EVENT}).get_json()["id"]
                for n in range(3)]
    organized = admin.post("/events", json={"title": "Organized", "organizer": [organizer], "venue": other,
                                            **EVENT}).get_json()["id"]
    elsewhere = admin.post("/events", json={"title": "Elsewhere", "venue": other, **EVENT}).get_json()["id"]
    assert elsewhere
    subscribe(admin, receiver, "/hook")
    token = anon.get("/changes").get_json()["next_token"]
    etags = {i: anon.get(f"/events/{i}").headers["ETag"] for i in at_venue}

    # an API edit of the venue: its events are updated, for anonymous readers too
    assert admin.post(f"/venues/{venue}", json={"venue": "New Hall"}).status_code == 200
    changes, token = _feed(anon, token)
    assert changes == [{"type": "events", "id": i, "action": "updated"} for i in at_venue] + [
        {"type": "venues", "id": venue, "action": "updated"}]
    assert all(anon.get(f"/events/{i}").headers["ETag"] != etags[i] for i in at_venue)
    got = wait_for(lambda: receiver.ok("/hook"), what="the venue edit's delivery")
    assert [(c["type"], c["id"], c["action"]) for c in got[0]["payload"]["data"]["changes"]] == [
        ("events", i, "updated") for i in at_venue] + [("venues", venue, "updated")]

    # an organizer trashed
    assert admin.delete(f"/organizers/{organizer}").status_code == 200
    changes, token = _feed(admin, token)
    assert {"type": "events", "id": organized, "action": "updated"} in changes
    assert all(c["id"] != elsewhere for c in changes if c["type"] == "events")

    # the venue deleted by an editor in a clone, pushed to the remote and pulled
    clone = editor_clone(bare, tmp_path / "editor")
    path = next(p for p in clone("ls-files", "venues").split() if "new-hall" in p or "old-hall" in p)
    clone("rm", "-q", path)
    clone("-c", "user.name=Ed", "-c", "user.email=ed@example.org", "commit", "-q", "-m", "Remove the hall")
    clone("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code in (200, 202)
    followed(a.app)
    changes, token = _feed(anon, token)
    assert changes == [{"type": "events", "id": i, "action": "updated"} for i in at_venue] + [
        {"type": "venues", "id": venue, "action": "deleted"}]
    got = wait_for(lambda: len(receiver.ok("/hook")) >= 3 and receiver.ok("/hook"), what="the pull's delivery")
    assert {(c["type"], c["id"], c["action"]) for c in got[2]["payload"]["data"]["changes"]} == {
        ("events", i, "updated") for i in at_venue} | {("venues", venue, "deleted")}

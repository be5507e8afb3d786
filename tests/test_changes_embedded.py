"""The changes feed lists an event whose embedded venue or organizer changed or went: its served
object and ETag changed, though its file did not. Through the API, plain git commits and a real
remote served by ``git daemon``."""
from __future__ import annotations

from conftest import followed
from test_remote import EDITOR, bare, editor_clone, instance, instances, remote_url  # noqa: F401  (fixtures)
from test_revisions_changes import changes, git_commit


def etag(client, path: str) -> str:
    r = client.get(path)
    assert r.status_code == 200, r.get_json()
    return r.headers["ETag"]


def test_an_api_edit_of_a_venue_lists_the_events_that_embed_it(anon, admin, factory):
    hall = factory.venue(venue="Hall")
    club = factory.venue(venue="Club")
    organizer = factory.organizer(organizer="Choir")
    at_hall = [factory.event(venue=hall["id"])["id"] for _ in range(3)]
    at_club = factory.event(venue=club["id"])["id"]
    sung = factory.event(organizer=[organizer["id"]])["id"]
    token = anon.get("/changes").get_json()["next_token"]
    before = {i: etag(anon, f"/events/{i}") for i in at_hall}
    assert admin.post(f"/venues/{hall['id']}", json={"address": "1 Main St"}).status_code == 200
    found = changes(anon, token)
    assert sorted(found) == sorted([("venues", hall["id"], "updated")]
                                   + [("events", i, "updated") for i in at_hall])
    assert all(etag(anon, f"/events/{i}") != before[i] for i in at_hall)   # what the feed now says
    assert ("events", at_club, "updated") not in found and ("events", sung, "updated") not in found
    token = anon.get("/changes").get_json()["next_token"]
    assert admin.post(f"/organizers/{organizer['id']}", json={"phone": "555"}).status_code == 200
    assert sorted(changes(anon, token)) == [("events", sung, "updated"), ("organizers", organizer["id"], "updated")]


def test_a_venue_deleted_in_git_lists_the_events_that_embedded_it(anon, repo, factory):
    hall = factory.venue(venue="Gone Hall")
    events = [factory.event(venue=hall["id"])["id"] for _ in range(2)]
    token = anon.get("/changes").get_json()["next_token"]
    repo("rm", "-q", f"venues/{hall['slug']}.yaml")
    git_commit(repo, "Remove the hall")
    found = changes(anon, token)
    assert sorted(found) == sorted([("venues", hall["id"], "deleted")] + [("events", i, "updated") for i in events])
    assert anon.get(f"/events/{events[0]}").get_json()["venue"] == []


def test_an_organizer_changed_by_a_pushed_commit_lists_its_events(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    organizer = a.admin.post("/organizers", json={"organizer": "Brass Band"}).get_json()
    event = a.admin.post("/events", json={"title": "Parade", "start_date": "tomorrow 10am",
                                          "end_date": "tomorrow 11am", "organizer": [organizer["id"]]}).get_json()
    token = a.admin.get("/changes").get_json()["next_token"]
    editor = editor_clone(bare, tmp_path / "editor")
    path = editor.root / f"organizers/{organizer['slug']}.yaml"
    path.write_text(path.read_text().replace("Brass Band", "Silver Brass Band"))
    editor(*EDITOR, "commit", "-q", "-am", "Rename the band")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    assert sorted(changes(a.admin, token)) == [("events", event["id"], "updated"),
                                               ("organizers", organizer["id"], "updated")]
    assert a.admin.get(f"/events/{event['id']}").get_json()["organizer"][0]["organizer"] == "Silver Brass Band"

"""Hidden records and hidden text stay hidden.

One rule decides what a caller may see (``permissions.can_see``): lists, searches, iCal
feeds, embedded venues and organizers, the terms or venues of an event, the duplicate rule
and linking by id all follow it. Each test goes through the real app, a real git repository
and, where lists are involved, both the search index and the scanning fallback.
"""
from __future__ import annotations

import json
import time

import icalendar
import pytest

from conftest import Client

USER_ID = {"administrator": 1, "editor": 2, "author": 3, "contributor": 4, "subscriber": 5}
NO_SUCH_EVENT = 999_999


def _created(r) -> dict:
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def _event(client, **fields) -> dict:
    body = {"title": "Plain event", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am", **fields}
    return _created(client.post("/events", json=body))


def _vevents(r) -> dict:
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/calendar"), r.data[:200]
    cal = icalendar.Calendar.from_ical(r.data)
    return {int(str(e["UID"]).split("@")[0]): e for e in cal.walk("VEVENT")}


class Lists:
    """List requests answered by the search index (waiting until it reflects the branch head)
    or, with the index switched off, by scanning."""

    def __init__(self, app, repo, mode: str):
        self.svc = app.extensions["calendar"]
        self.repo = repo
        self.mode = mode
        self.flask = app.test_client()
        if mode == "scan":
            self.svc.index = None

    def client(self, role):
        return Client(self.flask, role)

    def get(self, role, **params):
        if self.mode == "index":
            deadline = time.monotonic() + 20
            while True:
                r = self.client(role).get("/events", query_string=params)
                view = self.svc.index._view
                if view is not None and view.commit == self.repo.head():
                    break
                assert time.monotonic() < deadline, "the index did not catch up"
                time.sleep(0.02)
        else:
            r = self.client(role).get("/events", query_string=params)
        return r

    def ids(self, role, **params) -> set[int]:
        r = self.get(role, **params)
        assert r.status_code == 200, r.get_json()
        return {e["id"] for e in r.get_json()["events"]}


@pytest.fixture(params=["index", "scan"])
def lists(request, app, repo) -> Lists:
    return Lists(app, repo, request.param)


# ----------------------------------------------------------------------------- search (Medium 2)


def test_search_matches_a_protected_event_on_its_title_only(lists, admin):
    hidden = _event(admin, title="Garden party", description="Bring a zebracorn costume",
                    excerpt="quagmire", password="open sesame")
    plain = _event(admin, title="Zoo visit", description="See the zebracorn enclosure")
    for role in (None, "subscriber", "contributor", "author"):
        assert lists.ids(role, search="zebrac") == {plain["id"]}, role
        assert lists.ids(role, search="quagmire") == set(), role
        assert lists.ids(role, search="garden") == {hidden["id"]}, role       # the title stays searchable
        assert lists.ids(role, search="garden zebracorn") == set(), role
        # who gives the password sees the text, and may search it
        assert lists.ids(role, search="zebrac", password="open sesame") == {plain["id"], hidden["id"]}, role
        assert lists.ids(role, search="zebrac", password="wrong") == {plain["id"]}, role
    for role in ("editor", "administrator"):  # who may edit the event reads it in full
        assert lists.ids(role, search="zebrac") == {plain["id"], hidden["id"]}, role


def test_ical_feed_search_does_not_look_into_protected_text(lists, admin):
    hidden = _event(admin, title="Garden party", description="Bring a zebracorn costume", password="pw")
    lists.ids(None)  # the index catches up
    anon = lists.client(None)
    assert _vevents(anon.get("/events", query_string={"ical": "1", "search": "zebracorn"})) == {}
    found = _vevents(anon.get("/events", query_string={"ical": "1", "search": "garden"}))
    assert list(found) == [hidden["id"]] and "DESCRIPTION" not in found[hidden["id"]]
    assert list(_vevents(lists.client("editor").get("/events", query_string={"ical": "1", "search": "zebracorn"})))\
        == [hidden["id"]]


# ----------------------------------------------------------------------------- embeds (Medium 3)


@pytest.fixture
def hidden_links(admin, as_role):
    """A published event of the administrator at a private venue, with a draft organizer of
    the administrator, a published one, and a trashed one."""
    venue = _created(admin.post("/venues", json={"venue": "Secret Bunker", "address": "1 Hidden Way",
                                                 "city": "Nowhere", "status": "private"}))
    draft = _created(admin.post("/organizers", json={"organizer": "Draft Org", "email": "draft@example.org",
                                                     "status": "draft"}))
    public = _created(admin.post("/organizers", json={"organizer": "Public Org"}))
    trashed = _created(admin.post("/organizers", json={"organizer": "Gone Org", "email": "gone@example.org"}))
    event = _event(admin, title="Open day", venue=venue["id"], organizer=[draft["id"], public["id"], trashed["id"]])
    assert admin.delete(f"/organizers/{trashed['id']}").status_code == 200
    return {"venue": venue, "draft": draft, "public": public, "trashed": trashed, "event": event}


def test_embeds_show_only_what_the_caller_may_see(hidden_links, as_role):
    event_id = hidden_links["event"]["id"]
    public = hidden_links["public"]["id"]
    for role in (None, "subscriber", "contributor", "author"):
        client = as_role(role)
        for r in (client.get(f"/events/{event_id}"), client.get(f"/events/by-slug/{hidden_links['event']['slug']}")):
            assert r.status_code == 200
            body = r.get_json()
            text = r.get_data(as_text=True)
            assert body["venue"] == [] and "Secret Bunker" not in text and "1 Hidden Way" not in text, role
            assert "Gone Org" not in text and "gone@example.org" not in text, role
            expected = [public] if role in (None, "subscriber") else [hidden_links["draft"]["id"], public]
            assert [o["id"] for o in body["organizer"]] == expected, role
            assert "location" not in body["json_ld"]
        listed = next(e for e in client.get("/events").get_json()["events"] if e["id"] == event_id)
        assert listed["venue"] == [] and "Secret Bunker" not in str(listed)
        vevent = _vevents(client.get(f"/events/{event_id}", query_string={"ical": "1"}))[event_id]
        assert "LOCATION" not in vevent, role
        feed = _vevents(client.get("/events", query_string={"ical": "1"}))[event_id]
        assert "LOCATION" not in feed and "Gone Org" not in feed.to_ical().decode()
    for role in ("editor", "administrator"):
        body = as_role(role).get(f"/events/{event_id}").get_json()
        assert body["venue"]["venue"] == "Secret Bunker" and body["venue"]["city"] == "Nowhere"
        assert [o["id"] for o in body["organizer"]] == [hidden_links["draft"]["id"], public]  # never the trashed one
        vevent = _vevents(as_role(role).get(f"/events/{event_id}", query_string={"ical": "1"}))[event_id]
        assert "Secret Bunker" in str(vevent["LOCATION"])


def test_a_hidden_record_cannot_be_linked_by_id(hidden_links, as_role, repo):
    venue_id = hidden_links["venue"]["id"]
    author = as_role("author")
    assert author.get(f"/venues/{venue_id}").status_code == 403
    before = repo.count()
    for role in ("contributor", "author"):
        for body in ({"venue": venue_id}, {"venue": {"id": venue_id}}, {"venue": str(venue_id)},
                     {"organizer": [hidden_links["trashed"]["id"]]}):
            hidden_id = str(venue_id) if "venue" in body else str(hidden_links["trashed"]["id"])
            r = as_role(role).post("/events", json={"title": "Mine", "start_date": "tomorrow 9am",
                                                    "end_date": "tomorrow 10am", **body})
            unknown = json.loads(json.dumps(body).replace(hidden_id, str(NO_SUCH_EVENT)))
            missing = as_role(role).post("/events", json={"title": "Mine", "start_date": "tomorrow 9am",
                                                          "end_date": "tomorrow 10am", **unknown})
            assert r.status_code == missing.status_code == 400, (role, body, r.get_json())
            assert r.get_data(as_text=True) == missing.get_data(as_text=True).replace(str(NO_SUCH_EVENT), hidden_id)
            assert "Secret Bunker" not in r.get_data(as_text=True)
    assert repo.count() == before
    # who may see the venue may link it
    editor_event = _event(as_role("editor"), venue=venue_id)
    assert editor_event["venue"]["id"] == venue_id


def test_the_duplicate_rule_matches_only_what_the_caller_may_use(hidden_links, as_role, repo):
    venue = hidden_links["venue"]
    author = as_role("author")
    r = author.post("/venues", json={"venue": "secret bunker"})
    created = _created(r)
    assert created["id"] != venue["id"] and "1 Hidden Way" not in r.get_data(as_text=True)
    assert created["author"] == str(USER_ID["author"])
    # an event naming it by name gets the author's own venue, not the private one
    event = _event(author, venue={"venue": "Secret Bunker"})
    assert event["venue"]["id"] == created["id"]
    # someone else's draft is never adopted by name, even by an editor who may read it
    draft = _created(as_role("contributor").post("/organizers", json={"organizer": "Shared Org"}))
    assert draft["status"] == "draft"
    editor = as_role("editor")
    published = _event(editor, organizer=[{"organizer": "Shared Org"}])
    assert [o["id"] for o in published["organizer"]] != [draft["id"]]
    assert _created(editor.post("/organizers", json={"organizer": "Shared Org"}))["id"] != draft["id"]
    # the caller's own records and published ones still match
    assert _created(as_role("contributor").post("/organizers", json={"organizer": "shared org"}))["id"] == draft["id"]
    public = hidden_links["public"]
    assert _created(author.post("/organizers", json={"organizer": "Public Org"}))["id"] == public["id"]


# ----------------------------------------------------------------------------- trash (Medium 4)


def test_trashed_records_keep_their_visibility(lists, as_role, repo):
    editor, contributor = as_role("editor"), as_role("contributor")
    private = _event(editor, title="Board meeting", description="Salaries", status="private")
    own = _event(contributor, title="My draft")
    for record in (private, own):
        assert as_role("administrator").delete(f"/events/{record['id']}").status_code == 200
    assert lists.ids("contributor", status="trash") == {own["id"]}
    assert lists.ids("author", status="trash") == set()
    assert lists.ids("editor", status="trash") == {private["id"], own["id"]}
    r = lists.get("contributor", status="trash,private,publish,draft", search="salaries")
    assert r.status_code == 200 and r.get_json()["events"] == []
    venue = _created(editor.post("/venues", json={"venue": "Private room", "status": "private"}))
    assert editor.delete(f"/venues/{venue['id']}").status_code == 200
    r = contributor.get("/venues", query_string={"status": "trash"})
    assert r.status_code == 200 and "Private room" not in r.get_data(as_text=True)
    assert venue["id"] in {v["id"] for v in editor.get("/venues", query_string={"status": "trash"}).get_json()["venues"]}


# ----------------------------------------------------------------------------- trashing edits nothing else (Medium 6)


def test_trashing_a_venue_or_organizer_changes_no_event(as_role, repo):
    contributor, editor = as_role("contributor"), as_role("editor")
    organizer = _created(contributor.post("/organizers", json={"organizer": "Contributor Org"}))
    event = _event(editor, title="Editor event", organizer=[organizer["id"]])
    event_file = (repo.root / repo.path_of(event['slug'])).read_text()
    before = repo.count()
    assert contributor.delete(f"/organizers/{organizer['id']}").status_code == 200
    assert repo.count() == before + 1
    assert repo("show", "--name-only", "--format=", "HEAD").split() == [f"organizers/{organizer['slug']}.yaml"]
    assert "Unlink" not in repo.last_message()
    assert (repo.root / repo.path_of(event['slug'])).read_text() == event_file
    assert editor.get(f"/events/{event['id']}").get_json()["organizer"] == []   # a trashed one is not embedded
    # restoring it links it again
    assert contributor.post(f"/organizers/{organizer['id']}", json={"status": "draft"}).status_code == 200
    assert [o["id"] for o in editor.get(f"/events/{event['id']}").get_json()["organizer"]] == [organizer["id"]]


def test_emptying_the_trash_unlinks_removed_venues(app, as_role, repo):
    editor = as_role("editor")
    venue = _created(editor.post("/venues", json={"venue": "Soon gone"}))
    event = _event(editor, venue=venue["id"])
    trashed_event = _event(editor, venue=venue["id"])
    event_path, trashed_path = repo.path_of(event["slug"]), repo.path_of(trashed_event["slug"])
    assert editor.delete(f"/venues/{venue['id']}").status_code == 200
    assert editor.delete(f"/events/{trashed_event['id']}").status_code == 200
    svc = app.extensions["calendar"]
    user = svc.accounts.get("editor")
    assert svc.empty_trash(svc.trashed(), user) == 2
    assert repo.status() == ""
    assert sorted(repo("show", "--name-only", "--format=", "HEAD").split()) == sorted(
        [f"venues/{venue['slug']}.yaml", event_path, trashed_path])
    assert not (repo.root / trashed_path).exists()
    assert "venue: []" in (repo.root / event_path).read_text()


# ----------------------------------------------------------------------------- an event's terms and venues (Low 1)


def test_terms_and_venues_of_a_hidden_event_are_like_a_missing_one(as_role, admin):
    category = _created(admin.post("/categories", json={"name": "Hush"}))
    tag = _created(admin.post("/tags", json={"name": "quiet"}))
    venue = _created(admin.post("/venues", json={"venue": "Back room"}))
    draft = _event(admin, status="draft", categories=[category["id"]], tags=[tag["id"]], venue=venue["id"])
    protected = _event(admin, categories=[category["id"]], tags=[tag["id"]], venue=venue["id"], password="pw")
    private = _event(as_role("editor"), status="private", categories=[category["id"]], venue=venue["id"])
    cases = [(draft, (None, "subscriber")), (protected, (None, "subscriber", "contributor", "author")),
             (private, (None, "subscriber", "contributor", "author"))]
    routes = [("/categories", "post"), ("/tags", "post"), ("/categories", "event"), ("/venues", "event")]
    for event, roles in cases:
        for role in roles:
            client = as_role(role)
            for path, key in routes:
                params = {key: event["id"], "hide_empty": "0"}
                r = client.get(path, query_string=params)
                missing = client.get(path, query_string={**params, key: NO_SUCH_EVENT})
                assert r.status_code == missing.status_code == 400, (role, path, event["id"], r.get_json())
                assert r.get_json() == missing.get_json()
    editor = as_role("editor")
    for event in (draft, protected, private):
        names = [c["name"] for c in editor.get("/categories", query_string={"post": event["id"], "hide_empty": "0"})
                 .get_json()["categories"]]
        assert names == ["Hush"]
        venues = editor.get("/venues", query_string={"event": event["id"]}).get_json()["venues"]
        assert [v["id"] for v in venues] == [venue["id"]]


def test_event_filters_by_a_hidden_venue_are_like_a_missing_one(as_role, admin):
    venue = _created(admin.post("/venues", json={"venue": "Vault", "status": "private"}))
    _event(admin, venue=venue["id"])
    anon = as_role(None)
    r = anon.get("/events", query_string={"venue": venue["id"]})
    missing = anon.get("/events", query_string={"venue": NO_SUCH_EVENT})
    assert r.status_code == missing.status_code == 400 and r.get_json() == missing.get_json()
    assert len(as_role("editor").get("/events", query_string={"venue": venue["id"]}).get_json()["events"]) == 1


# ----------------------------------------------------------------------------- author and status (Low 2)


@pytest.mark.parametrize("kind,title", [("events", "title"), ("venues", "venue"), ("organizers", "organizer")])
def test_only_editors_give_a_record_another_author(kind, title, as_role, repo):
    body = {title: "Whose?"}
    if kind == "events":
        body.update(start_date="tomorrow 9am", end_date="tomorrow 10am")
    for role in ("contributor", "author"):
        client = as_role(role)
        before = repo.count()
        r = client.post(f"/{kind}", json={**body, "author": USER_ID["administrator"]})
        assert r.status_code == 403 and r.get_json()["code"] == "rest_cannot_edit_others", r.get_json()
        assert repo.count() == before
        own = _created(client.post(f"/{kind}", json={**body, title: f"Mine {role}", "author": USER_ID[role]}))
        assert own["author"] == str(USER_ID[role])
        r = client.post(f"/{kind}/{own['id']}", json={"author": USER_ID["editor"]})
        assert r.status_code == 403 and r.get_json()["code"] == "rest_cannot_edit_others"
        assert repo.count() == before + 1
    given = _created(as_role("editor").post(f"/{kind}", json={**body, title: "For the author",
                                                              "author": USER_ID["author"]}))
    assert given["author"] == str(USER_ID["author"])


def test_a_contributor_cannot_make_a_record_private(as_role):
    contributor = as_role("contributor")
    event = _event(contributor, status="private")
    assert event["status"] == "pending"
    venue = _created(contributor.post("/venues", json={"venue": "Hideout", "status": "private"}))
    assert venue["status"] == "pending"
    assert contributor.post(f"/events/{event['id']}", json={"status": "private"}).get_json()["status"] == "pending"
    assert _event(as_role("author"), status="private")["status"] == "private"

"""Auditors and sync clients: revisions of every record (made through the API or with plain
git, followed across slug renames), a record as it was at a commit, and the changes feed.
Commits outside the API are made with plain git in the content repository."""
from __future__ import annotations

from datetime import datetime

import pytest

from conftest import API

EDITOR = ("-c", "user.name=Editor", "-c", "user.email=editor@example.org")


def event_file(record_id: int, title: str, slug: str | None = None, status: str = "publish", extra: str = "") -> str:
    return ("---\n" f"id: {record_id}\n" f"title: {title}\n" + (f"slug: {slug}\n" if slug else "")
            + f"status: {status}\nstart_date: '2030-05-01 10:00:00'\nend_date: '2030-05-01 12:00:00'\n{extra}---\nBy hand.\n")


def git_commit(repo, message: str) -> str:
    repo(*EDITOR, "commit", "-q", "-m", message)
    return repo.head()


def git_rename(repo, old: str, new: str, old_slug: str, new_slug: str, message: str = "Rename by hand") -> str:
    """Move a record file and change its slug, as an editor does with git mv."""
    repo("mv", old, new)
    path = repo.root / new
    path.write_text(path.read_text().replace(f"slug: {old_slug}", f"slug: {new_slug}"))
    repo("add", new)
    return git_commit(repo, message)


def history(repo, *paths) -> list[str]:
    return repo("log", "--format=%H", "--", *paths).split()


# ============================================================================= revisions


def test_revisions_list_api_and_git_commits_newest_first(as_role, admin, repo, factory):
    event = factory.event(title="First title")
    factory.event()  # another event's commits are not this one's revisions
    assert admin.post(f"/events/{event['id']}", json={"title": "Second title"}).status_code == 200
    editor = as_role("editor")
    assert len(editor.get(f"/events/{event['id']}/revisions").get_json()["revisions"]) == 2
    path = repo.root / repo.path_of(event['slug'])
    path.write_text(path.read_text().replace("Second title", "Third title"))
    repo("add", "-A")
    by_hand = git_commit(repo, "Fix the title by hand\n\nLonger explanation.")
    factory.venue()

    r = as_role("editor").get(f"/events/{event['id']}/revisions")
    assert r.status_code == 200, r.get_json()
    revisions = r.get_json()["revisions"]
    assert [x["commit"] for x in revisions] == history(repo, repo.path_of(event['slug']))
    assert len(revisions) == 3 and revisions[0]["commit"] == by_hand
    assert revisions[0]["author"] == {"name": "Editor", "email": "editor@example.org"}
    assert revisions[0]["message"] == "Fix the title by hand\n\nLonger explanation."
    assert revisions[1]["author"] == {"name": "Administrator", "email": "administrator@example.org"}
    assert revisions[1]["message"].startswith(f'Update event {event["id"]} "Second title"')
    assert revisions[2]["message"].startswith(f'Create event {event["id"]} "First title"')
    assert set(revisions[0]) == {"commit", "author", "date", "message", "parents"}
    assert revisions[0]["parents"] == [revisions[1]["commit"]]
    assert datetime.fromisoformat(revisions[0]["date"]).tzinfo is not None


def test_revisions_follow_the_record_across_slug_renames(admin, repo, factory):
    event = factory.event(title="Old name")
    created = repo.head()
    assert admin.post(f"/events/{event['id']}", json={"slug": "api-name"}).status_code == 200
    api_rename = repo.head()
    api_path = repo.path_of("api-name")
    assert not list((repo.root / "events").rglob("old-name.md"))
    git_renamed = git_rename(repo, api_path, api_path.replace("api-name", "git-name"), "api-name", "git-name")
    assert admin.post(f"/events/{event['id']}", json={"excerpt": "After the renames"}).status_code == 200
    latest = repo.head()
    # a later file under an earlier slug of the record is another record: not followed
    repo.commit_file("events/old-name.md", event_file(900, "Someone else"), message="Reuse the old name")

    revisions = admin.get(f"/events/{event['id']}/revisions").get_json()["revisions"]
    assert [x["commit"] for x in revisions] == [latest, git_renamed, api_rename, created]
    other = admin.get("/events/900/revisions").get_json()["revisions"]
    assert [x["commit"] for x in other] == [repo.head()]


def test_revisions_of_venues_organizers_and_terms(admin, repo, factory):
    venue = factory.venue()
    organizer = factory.organizer()
    category = factory.category()
    tag = factory.tag()
    for kind, record, field in (("venues", venue, "venue"), ("organizers", organizer, "organizer"),
                                ("categories", category, "name"), ("tags", tag, "name")):
        assert admin.post(f"/{kind}/{record['id']}", json={field: f"Renamed {kind}"}).status_code == 200
        revisions = admin.get(f"/{kind}/{record['id']}/revisions").get_json()["revisions"]
        assert len(revisions) == 2, (kind, revisions)
        assert revisions[0]["commit"] == repo.head()
        old = admin.get(f"/{kind}/{record['id']}/revisions/{revisions[1]['commit']}")
        assert old.status_code == 200 and old.get_json()[field] == record[field], kind


def test_a_record_as_it_was_at_a_commit(admin, repo, factory):
    event = factory.event(title="Before", venue={"venue": "Old Hall"}, categories=["Jazz"])
    first = repo.head()
    venue_id = event["venue"]["id"]
    assert admin.post(f"/venues/{venue_id}", json={"venue": "New Hall"}).status_code == 200
    assert admin.post(f"/events/{event['id']}", json={"title": "After", "slug": "after"}).status_code == 200

    current = admin.get(f"/events/{event['id']}").get_json()
    r = admin.get(f"/events/{event['id']}/revisions/{first}")
    assert r.status_code == 200, r.get_json()
    past = r.get_json()
    assert list(past) == list(current)  # the normal response shape of an event
    assert past["title"] == "Before" and past["slug"] == "before" and current["title"] == "After"
    assert past["venue"]["venue"] == "Old Hall" and current["venue"]["venue"] == "New Hall"  # embedded as it was
    assert past["categories"][0]["name"] == "Jazz"
    # a commit that did not touch the record shows it as it was then; short ids work
    middle = repo("rev-parse", "HEAD~1").strip()
    assert admin.get(f"/events/{event['id']}/revisions/{middle[:7]}").get_json()["title"] == "Before"
    assert admin.get(f"/events/{event['id']}/revisions/{repo.head().upper()}").get_json()["title"] == "After"


def test_unknown_commits_and_commits_without_the_record_are_404(admin, repo, factory):
    before = factory.venue()
    older = repo.head()
    event = factory.event()
    off_branch = repo("commit-tree", "-p", "HEAD", "-m", "not on the branch", "HEAD^{tree}").strip()
    repo("update-ref", "refs/heads/elsewhere", off_branch)
    for commit in ("deadbeef", "0" * 40, older, off_branch):
        r = admin.get(f"/events/{event['id']}/revisions/{commit}")
        assert r.status_code == 404, (commit, r.get_json())
        assert r.get_json()["code"] == "rest_revision_not_found" and r.get_json()["data"]["status"] == 404
    assert admin.get(f"/venues/{before['id']}/revisions/{older}").status_code == 200
    assert admin.get("/events/99999/revisions").status_code == 404
    assert admin.get(f"/events/{before['id']}/revisions").get_json()["code"] == "rest-invalid-event-id"


@pytest.mark.parametrize("value", ["--output=x", "-p", "HEAD", "main", "abc", "g1234567", "1234567~1", "a" * 41,
                                   "%2D%2Dhelp", "@{1}"])
def test_the_commit_must_be_hex_before_it_reaches_git(as_role, factory, value):
    event = factory.event()
    for role in ("editor", None):  # validation comes before the permission check
        r = as_role(role).get(f"/events/{event['id']}/revisions/{value}")
        assert r.status_code in (400, 404), (value, r.get_json())
        if r.status_code == 400:
            assert r.get_json()["code"] == "rest_invalid_param" and "commit" in r.get_json()["data"]["params"]
        else:  # a value with a slash or an encoded one does not reach the route at all
            assert r.get_json()["code"] == "rest_no_route"


def test_revisions_are_for_editors_and_administrators(as_role, repo, factory):
    event = factory.event()
    venue = factory.venue()
    commit = repo.head()
    for path in (f"/events/{event['id']}/revisions", f"/venues/{venue['id']}/revisions/{commit}"):
        anonymous = as_role(None).get(path)
        assert anonymous.status_code == 401 and anonymous.get_json()["code"] == "rest_forbidden"
        for role in ("author", "contributor", "subscriber"):
            r = as_role(role).get(path)
            assert r.status_code == 403 and r.get_json()["code"] == "rest_forbidden", (role, path)
        for role in ("editor", "administrator"):
            assert as_role(role).get(path).status_code == 200, (role, path)
    # unknown venue ids fail validation first, as on the other routes
    assert as_role(None).get("/venues/99999/revisions").status_code == 400


def test_revision_routes_are_in_the_index_and_the_doc(anon):
    routes = anon.get("").get_json()["routes"]
    for name in ("events", "venues", "organizers", "categories", "tags"):
        assert f"{API}/{name}/(?P<id>\\d+)/revisions" in routes
        entry = routes[f"{API}/{name}/(?P<id>\\d+)/revisions/(?P<commit>[^/]+)"]
        assert entry["methods"] == ["GET"] and "commit" in entry["endpoints"][0]["args"]
    assert routes[f"{API}/changes"]["endpoints"][0]["args"]["since"]["description"]
    doc = anon.get("/doc").get_json()["paths"]
    params = doc["/events/{id}/revisions/{commit}"]["get"]["parameters"]
    assert {p["name"] for p in params} == {"id", "commit", "i18n_language"} and all(p["description"] for p in params)
    assert "since" in {p["name"] for p in doc["/changes"]["get"]["parameters"]}


def test_history_is_read_without_a_git_process_per_commit(admin, repo, factory):
    """Many commits of history: the answer is complete (one git log, blobs read in process)."""
    event = factory.event(title="Busy")
    for n in range(30):
        assert admin.post(f"/events/{event['id']}", json={"excerpt": f"edit {n}", "slug": f"busy-{n % 3}"}).status_code == 200
    revisions = admin.get(f"/events/{event['id']}/revisions").get_json()["revisions"]
    assert len(revisions) == 31


# ============================================================================= the changes feed


def changes(client, token) -> list[tuple[str, int, str]]:
    r = client.get(f"/changes?since={token}")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert set(body) == {"changes", "next_token"}
    for entry in body["changes"]:
        assert set(entry) == {"type", "id", "action"}  # ids only: never a title
    return [(c["type"], c["id"], c["action"]) for c in body["changes"]]


def test_without_since_only_the_current_token(anon, admin, repo, factory):
    event = factory.event()
    assert anon.get("/changes").get_json() == {"next_token": repo.head()}
    assert anon.get("/changes/").get_json() == {"next_token": repo.head()}  # a trailing slash is tolerated
    assert admin.get(f"/events/{event['id']}/revisions/").get_json() == admin.get(f"/events/{event['id']}/revisions").get_json()
    assert anon.post("/changes").get_json()["code"] == "rest_no_route"


def test_changes_since_a_token_net_effect_per_record(admin, anon, repo, factory):
    kept = factory.event(title="Kept")
    edited = factory.event(title="Edited")
    trashed = factory.event(title="Trashed")
    by_hand = factory.event(title="Edited in git")
    venue = factory.venue(venue="Moved Venue")
    tag = factory.tag()
    token = anon.get("/changes").get_json()["next_token"]

    created = factory.event(title="Created")
    assert admin.post(f"/events/{edited['id']}", json={"title": "Edited again"}).status_code == 200
    assert admin.delete(f"/events/{trashed['id']}").status_code == 200
    assert admin.delete(f"/tags/{tag['id']}").status_code == 200
    path = repo.root / repo.path_of(by_hand['slug'])
    path.write_text(path.read_text().replace("Edited in git", "Edited in git, again"))
    repo("add", "-A")
    git_commit(repo, "Edit by hand")
    git_rename(repo, f"venues/{venue['slug']}.yaml", "venues/moved.yaml", venue["slug"], "moved")
    repo.commit_file("events/short-lived.md", event_file(700, "Short lived"), message="Add")
    repo("rm", "-q", "events/short-lived.md")
    git_commit(repo, "Remove again")

    expected = [("events", created["id"], "created"), ("events", edited["id"], "updated"),
                ("events", trashed["id"], "deleted"), ("events", by_hand["id"], "updated"),
                ("venues", venue["id"], "updated"), ("tags", tag["id"], "deleted")]
    found = changes(anon, token)
    assert sorted(found) == sorted(expected)
    assert ("events", kept["id"]) not in [(t, i) for t, i, _ in found]
    assert 700 not in [i for t, i, _ in found if t == "events"]  # created and deleted within the span
    assert found == sorted(found, key=lambda c: (["events", "venues", "organizers", "categories", "tags"].index(c[0]), c[1]))
    assert anon.get(f"/changes?since={token}").get_json()["next_token"] == repo.head()
    assert changes(anon, repo.head()) == []


def test_a_broken_file_is_no_change_and_its_repair_an_update(anon, repo, factory):
    """A file that breaks keeps being served as its last good version: the feed announces no
    deletion; its repair is an update (or nothing, when the repaired file is the old one)."""
    event = factory.event()
    token = repo.head()
    path = repo.root / repo.path_of(event['slug'])
    good = path.read_text()
    repo.commit_file(repo.path_of(event['slug']), "---\ntitle: [broken\n---\n", message="Break it")
    broken = repo.head()
    assert changes(anon, token) == []
    repo.commit_file(repo.path_of(event['slug']), good, message="Repair it")
    assert changes(anon, broken) == []   # the version served before and after is the same
    repo.commit_file(repo.path_of(event['slug']), good.replace("title: ", "title: Better "), message="Edit it")
    assert changes(anon, broken) == [("events", event["id"], "updated")]
    assert changes(anon, token) == [("events", event["id"], "updated")]


def test_the_empty_repository_token_lists_everything_readable(as_role, factory):
    event, venue = factory.event(), factory.venue()
    hidden = factory.event(status="draft")
    found = changes(as_role(None), "0" * 40)
    assert found == [("events", event["id"], "created"), ("venues", venue["id"], "created")]
    assert ("events", hidden["id"], "created") in changes(as_role("editor"), "0" * 40)


@pytest.mark.parametrize("token", ["", "abc", "0" * 39, "g" * 40, "1" * 40, "HEAD", "--all"])
def test_malformed_or_unknown_tokens_are_410(anon, factory, token):
    factory.event()
    r = anon.get("/changes", query_string={"since": token})
    assert r.status_code == 410, (token, r.get_json())
    assert r.get_json()["code"] == "rest_changes_token_expired" and r.get_json()["data"]["status"] == 410


def test_a_token_from_rewritten_history_is_410(anon, repo, factory):
    factory.event()
    factory.event()
    token = repo.head()
    repo("reset", "-q", "--hard", "HEAD~1")
    assert anon.get(f"/changes?since={token}").status_code == 410
    assert anon.get(f"/changes?since={repo.head()}").status_code == 200


def test_drafts_and_trash_appear_only_as_ids_to_those_who_cannot_see_them(as_role, repo, factory):
    anon, editor, contributor = as_role(None), as_role("editor"), as_role("contributor")
    published = factory.event(title="Secret plans ahead")
    token = repo.head()
    draft = contributor.post("/events", json={"title": "Secret draft", "start_date": "2030-01-01 10:00",
                                              "end_date": "2030-01-01 11:00"}).get_json()
    assert draft["status"] == "draft"
    assert editor.post(f"/events/{published['id']}", json={"status": "draft"}).status_code == 200

    assert changes(editor, token) == [("events", published["id"], "updated"), ("events", draft["id"], "created")]
    # anonymous callers: the draft never existed for them, the unpublished event is gone
    assert changes(anon, token) == [("events", published["id"], "deleted")]
    raw = anon.get(f"/changes?since={token}").get_data(as_text=True)
    assert "Secret" not in raw
    # the contributor sees their own draft, and no longer the unpublished event of someone else
    assert changes(contributor, token) == [("events", published["id"], "deleted"), ("events", draft["id"], "created")]

    middle = repo.head()
    assert editor.post(f"/events/{draft['id']}", json={"status": "publish"}).status_code == 200
    assert changes(anon, middle) == [("events", draft["id"], "created")]
    assert editor.delete(f"/events/{draft['id']}").status_code == 200  # trash: gone for everyone
    assert changes(editor, middle) == [("events", draft["id"], "deleted")]
    assert changes(anon, middle) == []  # was neither readable before nor after

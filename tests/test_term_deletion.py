"""Deleting a category or tag never edits events the deleting caller may not edit, and
``has_events`` counts only events the caller may read. Through the real app and git repository.

Deleting a term removes it from the events carrying it, in a commit by the caller (as the
original removes the term's relationships). When one of those events is someone else's (or
private) and the caller may not edit it, the deletion is refused with 409
``calendar-term-in-use`` and nothing is written; editors and administrators, who may edit every
event, delete as before.
"""
from __future__ import annotations

import yaml


def _created(r) -> dict:
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def _event(client, **fields) -> dict:
    return _created(client.post("/events", json={"title": "Event", "start_date": "2030-05-01 10:00",
                                                 "end_date": "2030-05-01 11:00", **fields}))


def _front_matter(repo, slug: str) -> dict:
    text = (repo.root / repo.path_of(slug)).read_text()
    return yaml.safe_load(text.split("---")[1])


def test_an_author_cannot_delete_a_category_someone_elses_private_event_uses(as_role, repo):
    author, editor = as_role("author"), as_role("editor")
    category = _created(author.post("/categories", json={"name": "Shared"}))
    hidden = _event(editor, title="Board meeting", status="private", categories=[category["id"]])
    head, count = repo.head(), repo.count()
    r = author.delete(f"/categories/{category['id']}")
    assert r.status_code == 409, r.get_json()
    body = r.get_json()
    assert body["code"] == "calendar-term-in-use" and body["data"]["status"] == 409
    assert "Board" not in body["message"] and str(hidden["id"]) not in body["message"]
    assert repo.head() == head and repo.count() == count and not repo.status()
    assert _front_matter(repo, hidden["slug"])["categories"] == ["shared"]
    assert author.get(f"/categories/{category['id']}").status_code == 200
    # an editor may edit the event, so the editor's deletion goes through and unlinks it
    r = editor.delete(f"/categories/{category['id']}")
    assert r.status_code == 200, r.get_json()
    assert _front_matter(repo, hidden["slug"]).get("categories") in ([], None)
    assert "Editor" in repo.last_author() or "editor" in repo.last_author()


def test_an_author_cannot_delete_a_category_another_authors_event_uses(as_role, admin, repo):
    author = as_role("author")
    category = _created(author.post("/categories", json={"name": "Jazz"}))
    theirs = _event(admin, title="Their concert", status="publish", categories=[category["id"]])
    count = repo.count()
    assert author.delete(f"/categories/{category['id']}").status_code == 409
    assert repo.count() == count
    assert _front_matter(repo, theirs["slug"])["categories"] == ["jazz"]


def test_an_author_deletes_a_category_only_their_own_events_use(as_role, repo):
    author = as_role("author")
    category = _created(author.post("/categories", json={"name": "Mine"}))
    own = _event(author, title="My talk", status="publish", categories=[category["id"]])
    r = author.delete(f"/categories/{category['id']}")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["id"] == category["id"]
    assert _front_matter(repo, own["slug"]).get("categories") in ([], None)
    assert as_role(None).get(f"/events/{own['id']}").get_json()["categories"] == []


def test_an_editor_deletes_a_tag_any_event_uses(as_role, admin, repo):
    editor = as_role("editor")
    tag = _created(editor.post("/tags", json={"name": "Outdoor"}))
    private = _event(admin, title="Admin's own", status="private", tags=[tag["id"]])
    assert editor.delete(f"/tags/{tag['id']}").status_code == 200
    assert _front_matter(repo, private["slug"]).get("tags") in ([], None)


def test_has_events_counts_only_events_the_caller_may_read(as_role, admin):
    editor, anon, subscriber = as_role("editor"), as_role(None), as_role("subscriber")
    hidden_venue = _created(admin.post("/venues", json={"venue": "Back room", "status": "publish"}))
    public_venue = _created(admin.post("/venues", json={"venue": "Main hall", "status": "publish"}))
    _event(editor, title="Private board", status="private", venue=hidden_venue["id"])
    _event(editor, title="Open day", status="publish", venue=public_venue["id"])

    def ids(client, value):
        r = client.get(f"/venues?has_events={value}&per_page=50")
        assert r.status_code == 200, r.get_json()
        return {v["id"] for v in r.get_json()["venues"]}

    for client in (anon, subscriber):
        assert ids(client, "true") == {public_venue["id"]}
        assert hidden_venue["id"] in ids(client, "false")
    assert ids(admin, "true") == {public_venue["id"], hidden_venue["id"]}
    assert ids(editor, "true") == {public_venue["id"], hidden_venue["id"]}

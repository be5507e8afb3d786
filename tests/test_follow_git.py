"""Following git: commits made with plain git in the content repository (edit, add, delete,
a broken file) are served on the next request without a restart, including event lists
answered by the Whoosh index; a broken file is skipped and logged, never a 500."""
from __future__ import annotations

import logging

EDITOR = ("-c", "user.name=Editor", "-c", "user.email=editor@example.org")


def event_file(record_id: int, title: str, extra: str = "") -> str:
    return (f"---\nid: {record_id}\ntitle: {title}\nstatus: publish\nstart_date: '2030-05-01 10:00:00'\n"
            f"end_date: '2030-05-01 12:00:00'\n{extra}---\nWritten by hand.\n")


def listed(app, client, query: str = "") -> list[str]:
    """Titles of a list request, asserting it was answered by an index at the branch head."""
    r = client.get("/events?start_date=2030-01-01&end_date=2030-12-31" + query)
    assert r.status_code == 200, r.get_json()
    svc = app.extensions["calendar"]
    view = svc.index._view
    assert view is not None and view.commit == svc.store.head(), "the list was not answered by the index"
    return [e["title"] for e in r.get_json()["events"]]


def test_edit_add_delete_and_break_in_git_are_served_without_restart(app, anon, repo, factory, caplog):
    venue = factory.venue(venue="Hand Hall")
    repo.commit_file("events/first.md", event_file(100, "First by hand", f"venue: [{venue['id']}]\n"), "Add first")
    repo.commit_file("events/second.md", event_file(101, "Second by hand", "featured: true\n"), "Add second")
    assert listed(app, anon) == ["First by hand", "Second by hand"]
    assert listed(app, anon, "&featured=true") == ["Second by hand"]
    assert listed(app, anon, f"&venue={venue['id']}") == ["First by hand"]

    # edit: title, flag and venue change; the index answers the filters with the new values
    repo.commit_file("events/first.md", event_file(100, "First, edited", "featured: true\n"), "Edit first")
    assert anon.get("/events/100").get_json()["title"] == "First, edited"
    assert listed(app, anon, "&featured=true") == ["First, edited", "Second by hand"]
    assert listed(app, anon, f"&venue={venue['id']}") == []
    assert listed(app, anon, "&search=edited") == ["First, edited"]

    # delete
    repo("rm", "-q", "events/second.md")
    repo(*EDITOR, "commit", "-q", "-m", "Remove second")
    assert anon.get("/events/101").status_code == 404
    assert listed(app, anon) == ["First, edited"]

    # a broken file: skipped and logged, the rest keeps being served, never a 500
    caplog.set_level(logging.WARNING, logger="calendar_service")
    repo.commit_file("events/first.md", "---\nid: 100\ntitle: [broken\n---\n", "Break first")
    repo.commit_file("events/third.md", event_file(102, "Third by hand"), "Add third")
    assert listed(app, anon) == ["Third by hand"]
    assert anon.get("/events/100").status_code == 404
    assert anon.get(f"/venues/{venue['id']}").status_code == 200
    assert anon.get("/events/by-slug/first").status_code == 400  # unknown slug: as for any unknown slug
    assert any("skipping events/first.md:4: YAML syntax error" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]

    # repaired: served again
    repo.commit_file("events/first.md", event_file(100, "First, repaired"), "Repair first")
    assert listed(app, anon) == ["First, repaired", "Third by hand"]


def test_a_slug_rename_in_git_is_served_under_the_new_slug(app, anon, repo, factory):
    event = factory.event(title="Renamed in git", start_date="2030-05-02 10:00", end_date="2030-05-02 11:00")
    old = f"events/{event['slug']}.md"
    repo("mv", old, "events/new-name.md")
    path = repo.root / "events/new-name.md"
    path.write_text(path.read_text().replace(f"slug: {event['slug']}", "slug: new-name"))
    repo("add", "-A")
    repo(*EDITOR, "commit", "-q", "-m", "Rename")
    assert anon.get("/events/by-slug/new-name").get_json()["id"] == event["id"]
    assert anon.get(f"/events/by-slug/{event['slug']}").status_code == 400
    assert listed(app, anon) == ["Renamed in git"]

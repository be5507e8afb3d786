"""Following git: commits made with plain git in the content repository (edit, add, delete,
a broken file) are served on the next request without a restart, including event lists
answered by the Whoosh index; a broken file is logged and its last good version served, never a 500."""
from __future__ import annotations

import logging

from conftest import followed

EDITOR = ("-c", "user.name=Editor", "-c", "user.email=editor@example.org")


def event_file(record_id: int, title: str, extra: str = "") -> str:
    return (f"---\nid: {record_id}\ntitle: {title}\nstatus: publish\nstart_date: '2030-05-01 10:00:00'\n"
            f"end_date: '2030-05-01 12:00:00'\n{extra}---\nWritten by hand.\n")


def listed(app, client, query: str = "") -> list[str]:
    """Titles of a list request, asserting it was answered by an index at the branch head (once the
    follower thread has brought it there: a list never waits for it)."""
    followed(app)
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

    # a broken file: logged and served as its last good version, the rest keeps being served, never a 500
    caplog.set_level(logging.WARNING, logger="calendar_service")
    repo.commit_file("events/first.md", "---\nid: 100\ntitle: [broken\n---\n", "Break first")
    repo.commit_file("events/third.md", event_file(102, "Third by hand"), "Add third")
    assert listed(app, anon) == ["First, edited", "Third by hand"]
    assert anon.get("/events/100").get_json()["title"] == "First, edited"
    assert anon.get(f"/venues/{venue['id']}").status_code == 200
    assert any("skipping events/first.md:4: YAML syntax error" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]

    # repaired: served again
    repo.commit_file("events/first.md", event_file(100, "First, repaired"), "Repair first")
    assert listed(app, anon) == ["First, repaired", "Third by hand"]


def test_a_slug_rename_in_git_is_served_under_the_new_slug(app, anon, repo, factory):
    event = factory.event(title="Renamed in git", start_date="2030-05-02 10:00", end_date="2030-05-02 11:00")
    old = repo.path_of(event['slug'])
    repo("mv", old, "events/new-name.md")
    path = repo.root / "events/new-name.md"
    path.write_text(path.read_text().replace(f"slug: {event['slug']}", "slug: new-name"))
    repo("add", "-A")
    repo(*EDITOR, "commit", "-q", "-m", "Rename")
    assert anon.get("/events/by-slug/new-name").get_json()["id"] == event["id"]
    assert anon.get(f"/events/by-slug/{event['slug']}").status_code == 400
    assert listed(app, anon) == ["Renamed in git"]


def test_a_copied_file_gets_a_new_id_and_the_original_keeps_its_own(app, anon, repo, factory, make_app, caplog):
    """An editor copies a file (id included) and changes title and slug. The copy sorts first,
    yet the original, older in history, keeps its id; the copy is served under a new id, given
    in a commit of the service's own that changes only its id line, with a warning."""
    caplog.set_level(logging.INFO, logger="calendar_service")
    event = factory.event(title="Jazz Night", start_date="2030-05-03 20:00", end_date="2030-05-03 23:00")
    original = (repo.root / repo.path_of("jazz-night")).read_text()
    copy = original.replace("title: Jazz Night", "title: Jazz Copy").replace("slug: jazz-night", "slug: a-jazz-copy")
    repo.commit_file("events/a-jazz-copy.md", copy, "Copy jazz night")
    followed(app)   # the follower thread gives the copy its id, without any request
    assert anon.get(f"/events/{event['id']}").get_json()["title"] == "Jazz Night"
    copied = anon.get("/events/by-slug/a-jazz-copy").get_json()
    assert copied["title"] == "Jazz Copy" and copied["id"] == event["id"] + 1
    assert sorted(listed(app, anon)) == ["Jazz Copy", "Jazz Night"]
    assert repo.last_author() == "Calendar Service <calendar-service@localhost>"
    assert (f"events/a-jazz-copy.md: had id {event['id']}, which events/2030/05/jazz-night.md holds since before; "
            f"now id {event['id'] + 1}") in repo.last_message()
    assert repo("show", "HEAD:events/a-jazz-copy.md") == copy.replace(f"id: {event['id']}\n", f"id: {event['id'] + 1}\n")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "a-jazz-copy" in r.getMessage()]
    assert warnings == [f"events/a-jazz-copy.md: id {event['id']} is also in events/2030/05/jazz-night.md, which entered "
                        "the history first; giving this file a new id"]
    # nothing left to do: more requests make no more commits; a restarted service serves the same
    head = repo.head()
    assert anon.get(f"/events/{event['id']}").status_code == 200 and repo.head() == head
    restarted = make_app()
    followed(restarted)
    again = restarted.test_client()
    assert again.get(f"/calendar/events/v1/events/{event['id']}").get_json()["title"] == "Jazz Night"
    assert repo.head() == head


def test_the_older_file_keeps_a_duplicate_id_in_a_fresh_process_too(make_app, repo, paths):
    """Decided by history, not by which process saw what first or by file names: a service
    started on a repository that already holds the duplicate gives the newer file the new id."""
    repo.root.mkdir(parents=True)
    repo("init", "-q", "-b", "main")
    repo.commit_file("events/zz-first.md", event_file(7, "First in history"), "First")
    repo.commit_file("events/aa-second.md", event_file(7, "Second in history"), "Second")
    started = make_app()
    followed(started)
    client = started.test_client()
    assert client.get("/calendar/events/v1/events/7").get_json()["title"] == "First in history"
    assert client.get("/calendar/events/v1/events/8").get_json()["title"] == "Second in history"
    assert repo("show", "HEAD:events/zz-first.md") == event_file(7, "First in history")


def test_a_create_never_writes_over_a_file_the_service_cannot_read(app, admin, anon, repo, factory):
    """An editor's file with a YAML error sits where a new record's file would go: the create
    takes the next free name and the editor's text stays as it was; so does a slug change."""
    broken = "---\ntitle: Story Time for Toddlers\nstart_date: [oops\n---\nNotes the editor must not lose.\n"
    repo.commit_file("events/story-time-for-toddlers.md", broken, "Add story time (broken)")
    r = admin.post("/events", json={"title": "Story Time for Toddlers", "start_date": "2030-05-04 10:00",
                                    "end_date": "2030-05-04 11:00"})
    assert r.status_code == 201, r.get_json()
    assert r.get_json()["slug"] == "story-time-for-toddlers-2"
    other = factory.event(title="Winter Gala", start_date="2030-05-05 10:00", end_date="2030-05-05 11:00")
    r = admin.post(f"/events/{other['id']}", json={"slug": "story-time-for-toddlers"})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["slug"] == "story-time-for-toddlers-3"
    assert repo("show", "HEAD:events/story-time-for-toddlers.md") == broken
    assert (repo.root / "events/story-time-for-toddlers.md").read_text() == broken


def test_a_plain_copy_is_served_under_its_own_id_and_file_name(app, anon, repo, factory):
    """``cp jazz-night.md jazz-night-matinee.md`` and a new title only: id and slug both belong to
    the original; one commit gives the copy a new id and its file name as slug."""
    event = factory.event(title="Jazz Night", start_date="2030-05-06 20:00", end_date="2030-05-06 23:00")
    original = (repo.root / repo.path_of("jazz-night")).read_text()
    repo.commit_file("events/jazz-night-matinee.md", original.replace("title: Jazz Night", "title: Jazz Matinee"))
    head = repo.head()
    followed(app)
    assert anon.get(f"/events/{event['id']}").get_json()["title"] == "Jazz Night"
    copy = anon.get("/events/by-slug/jazz-night-matinee").get_json()
    assert copy["title"] == "Jazz Matinee" and copy["id"] == event["id"] + 1
    assert anon.get("/events/by-slug/jazz-night").get_json()["id"] == event["id"]
    assert repo("rev-parse", "HEAD~1").strip() == head  # one commit for both
    assert repo("diff", "--stat", "HEAD~1", "HEAD").splitlines()[-1].strip() == "1 file changed, 2 insertions(+), 2 deletions(-)"
    assert sorted(listed(app, anon)) == ["Jazz Matinee", "Jazz Night"]


def test_the_id_of_a_file_that_cannot_be_read_is_kept_free_for_its_repair(app, admin, anon, repo, factory):
    """The API does not hand out an id written in a broken file: once repaired, the file keeps
    it and the record the API confirmed keeps its own."""
    event = factory.event(title="Before", start_date="2030-05-07 10:00", end_date="2030-05-07 11:00")
    claimed = event["id"] + 1
    repo.commit_file("events/winter-gala.md", f"---\nid: {claimed}\ntitle: [Winter Gala\n---\nNotes.\n", "Broken gala")
    created = admin.post("/events", json={"title": "Spring Fair", "start_date": "2030-05-08 10:00",
                                          "end_date": "2030-05-08 11:00"}).get_json()
    assert created["id"] == claimed + 1
    repo.commit_file("events/winter-gala.md", event_file(claimed, "Winter Gala"), "Repair gala")
    assert anon.get(f"/events/{claimed}").get_json()["title"] == "Winter Gala"
    assert anon.get(f"/events/{created['id']}").get_json()["title"] == "Spring Fair"
    assert repo.last_message() == "Repair gala"  # nothing to reassign


def test_the_changes_feed_shows_a_file_given_an_id_as_created_once(app, anon, repo, factory):
    event = factory.event(title="Before", start_date="2030-05-09 10:00", end_date="2030-05-09 11:00")
    token = anon.get("/changes").get_json()["next_token"]
    text = event_file(0, "Without id").replace("id: 0\n", "")
    repo.commit_file("events/without-id.md", text, "Add an event without id")
    followed(app)   # the follower thread gives the id (a read never does)
    r = anon.get(f"/changes?since={token}")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["changes"] == [{"type": "events", "id": event["id"] + 1, "action": "created"}]
    # the two commits, one by one: the file without id was never served, so only its assignment counts
    assert anon.get(f"/changes?since={repo('rev-parse', 'HEAD~1').strip()}").get_json()["changes"] == [
        {"type": "events", "id": event["id"] + 1, "action": "created"}]

"""The git store and the snapshot: one commit per write, identities, compare-and-swap, local
changes, edits made outside the API, broken files, shared id spaces, crash recovery and
concurrent writers. Through the app and through GitStore / Catalog directly."""
from __future__ import annotations

import json
import os
import subprocess
import threading
from datetime import datetime, timedelta, timezone

import pytest

from calendar_service.storage import gitindex
from calendar_service.storage.catalog import Catalog
from calendar_service.domain.resources import EVENTS, VENUES
from calendar_service.storage.store import BranchMoved, GitStore, StoreError, blob_sha
from conftest import Client, Git, followed

COMMITTER = "Calendar Service <calendar-service@localhost>"
ADMIN_AUTHOR = "Administrator <administrator@example.org>"


def day(offset: int = 1, hour: int = 10) -> str:
    moment = datetime.now(timezone.utc).replace(hour=hour, minute=0, second=0, microsecond=0) + timedelta(days=offset)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def event_file(record_id: int, title: str, slug: str | None = None, extra: str = "", body: str = "Written by hand.") -> str:
    return (
        "---\n"
        f"id: {record_id}\n"
        f"title: {title}\n"
        + (f"slug: {slug}\n" if slug else "")
        + "status: publish\n"
        f"start_date: '{day(1, 10)}'\n"
        f"end_date: '{day(1, 12)}'\n"
        "timezone: UTC\n"
        f"{extra}"
        "---\n"
        f"{body}\n"
    )


def fsck(repo) -> None:
    proc = subprocess.run(["git", "-C", str(repo.root), "fsck", "--full", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def assert_clean(repo) -> None:
    fsck(repo)
    assert repo.status() == "", repo.status()
    assert not (repo.root / ".git" / "calendar-journal.json").exists()


def committer(repo, rev: str = "HEAD") -> str:
    return repo("log", "-1", "--format=%cn <%ce>", rev).strip()


def changed_paths(repo, rev: str = "HEAD") -> list[str]:
    return sorted(repo("diff-tree", "--root", "--no-commit-id", "--name-only", "-r", rev).split())


# ----------------------------------------------------------------------------- one write, one commit


def test_each_api_write_is_exactly_one_clean_commit(admin, repo, factory):
    assert repo.count() == 0
    event = factory.event(title="Concert")
    assert repo.count() == 1
    assert changed_paths(repo) == [repo.path_of(event['slug'])]
    assert_clean(repo)
    assert repo.last_message().startswith(f'Create event {event["id"]} "Concert"')

    r = admin.post(f"/events/{event['id']}", json={"title": "Concert (moved)"})
    assert r.status_code == 200
    assert repo.count() == 2
    assert_clean(repo)

    r = admin.delete(f"/events/{event['id']}")
    assert r.status_code == 200
    assert repo.count() == 3
    assert_clean(repo)
    text = (repo.root / repo.path_of(event['slug'])).read_text()
    assert "status: trash" in text


def test_one_commit_for_a_write_touching_several_files(admin, repo):
    r = admin.post("/events", json={"title": "Linked", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am",
                                    "venue": {"venue": "New Hall"}, "organizer": [{"organizer": "New Org"}],
                                    "categories": ["Brand new category"], "tags": ["brand-new-tag"]})
    assert r.status_code == 201, r.get_json()
    assert repo.count() == 1
    paths = changed_paths(repo)
    assert len(paths) == 5, paths
    assert {p.split("/")[0] for p in paths} == {"events", "venues", "organizers", "categories", "tags"}
    assert_clean(repo)
    # trashing the venue changes its file only; the event no longer embeds it
    venue_id = r.get_json()["venue"]["id"]
    assert admin.delete(f"/venues/{venue_id}").status_code == 200
    assert repo.count() == 2
    assert len(changed_paths(repo)) == 1
    assert_clean(repo)
    assert admin.get(f"/events/{r.get_json()['id']}").get_json()["venue"] == []


def test_failed_writes_make_no_commit(admin, anon, repo, factory):
    factory.event()
    before, head = repo.count(), repo.head()
    assert admin.post("/events", json={"title": "No dates"}).status_code == 400
    assert anon.post("/events", json={"title": "x", "start_date": "tomorrow", "end_date": "tomorrow"}).status_code == 401
    assert admin.post("/events/999999", json={"title": "x"}).status_code == 404
    assert (repo.count(), repo.head()) == (before, head)
    assert_clean(repo)


def test_commit_author_is_the_user_and_committer_the_service(as_role, repo):
    admin, author = as_role("administrator"), as_role("author")
    assert admin.post("/venues", json={"venue": "Admin's venue"}).status_code == 201
    assert repo.last_author() == ADMIN_AUTHOR
    assert committer(repo) == COMMITTER
    assert author.post("/organizers", json={"organizer": "Author's organizer"}).status_code == 201
    assert repo.last_author() == "Author <author@example.org>"
    assert committer(repo) == COMMITTER
    assert "by author" in repo.last_message()


def test_committer_identity_is_configurable(make_app, paths):
    app = make_app(committer_name="Robot", committer_email="robot@example.org")
    admin = Client(app.test_client(), "administrator")
    assert admin.post("/tags", json={"name": "robotic"}).status_code == 201
    from conftest import Git
    repo = Git(paths["content_dir"])
    assert committer(repo) == "Robot <robot@example.org>"
    assert repo.last_author() == ADMIN_AUTHOR


# ----------------------------------------------------------------------------- GitStore directly


@pytest.fixture
def store(app, paths):
    store = GitStore(paths["content_dir"])
    yield store
    store.close()


def test_gitstore_commit_writes_one_commit(store, repo, app):
    with store.write_lock():
        sha = store.commit({"notes/hello.txt": b"hello\n", "events/keep.txt": b"x\n"}, "Two files",
                           ("Someone", "someone@example.org"), store.head())
    assert store.head() == sha == repo.head()
    assert repo.count() == 1
    assert (repo.root / "notes" / "hello.txt").read_bytes() == b"hello\n"
    assert repo("show", "HEAD:notes/hello.txt") == "hello\n"
    assert repo.last_author() == "Someone <someone@example.org>"
    assert_clean(repo)
    # deleting through the store
    with store.write_lock():
        store.commit({"notes/hello.txt": None}, "Remove", ("Someone", "someone@example.org"), sha)
    assert not (repo.root / "notes" / "hello.txt").exists()
    assert repo.files() == ["events/keep.txt"]
    assert_clean(repo)


def test_removing_the_last_file_commits_the_empty_tree(tmp_path):
    store = GitStore(tmp_path / "content")
    store.init()
    repo = Git(store.root)
    author = ("Someone", "someone@example.org")
    try:
        with store.write_lock():
            first = store.commit({"events/only.md": b"only\n"}, "One file", author, None)
            emptied = store.commit({"events/only.md": None}, "Remove the last file", author, first)
        assert store.head() == emptied == repo.head() and repo.count() == 2
        assert repo("rev-parse", "HEAD^{tree}").strip() == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        assert repo.files() == [] and not (store.root / "events" / "only.md").exists()
        assert_clean(repo)
        with store.write_lock():  # and a commit on top of the empty tree
            store.commit({"events/again.md": b"again\n"}, "A file again", author, emptied)
        assert repo.files() == ["events/again.md"]
        assert_clean(repo)
    finally:
        store.close()


def test_gitstore_commit_with_a_stale_head_raises_and_writes_nothing(store, repo, factory):
    factory.event()
    old = repo.head()
    factory.event()
    head = repo.head()
    count, files = repo.count(), repo.files()
    with store.write_lock():
        with pytest.raises(BranchMoved):
            store.commit({"events/stale.md": b"---\nid: 99\n---\n"}, "Stale", ("X", "x@example.org"), old)
        with pytest.raises(BranchMoved):
            store.commit({"events/stale.md": b"data"}, "Stale", ("X", "x@example.org"), None)
    assert repo.head() == head and repo.count() == count and repo.files() == files
    assert not (repo.root / "events" / "stale.md").exists()
    assert_clean(repo)


def test_gitstore_refuses_to_overwrite_local_changes(store, repo, factory):
    event = factory.event()
    path = repo.path_of(event['slug'])
    local = (repo.root / path).read_text() + "\nAn editor's unsaved paragraph.\n"
    (repo.root / path).write_text(local)
    head = repo.head()
    with store.write_lock():
        with pytest.raises(StoreError):
            store.commit({path: b"replaced"}, "Overwrite", ("X", "x@example.org"), head)
    assert repo.head() == head
    assert (repo.root / path).read_text() == local
    assert not (repo.root / ".git" / "calendar-journal.json").exists()


def test_catalog_follows_the_branch(store, repo, app):
    catalog = Catalog(store)
    assert catalog.current().all(EVENTS) == []
    repo.commit_file("events/by-hand.md", event_file(7, "By hand"))
    snap = catalog.current()
    assert [r.id for r in snap.all(EVENTS)] == [7]
    assert snap.get(EVENTS, 7).title == "By hand"
    assert snap.commit == repo.head()
    repo.commit_file("events/by-hand.md", event_file(7, "By hand, edited"))
    assert catalog.current().get(EVENTS, 7).title == "By hand, edited"
    repo("rm", "-q", "events/by-hand.md")
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "Remove")
    assert catalog.current().all(EVENTS) == []
    # the snapshot is read from git objects, not from the working tree
    (repo.root / "events").mkdir(exist_ok=True)
    (repo.root / "events" / "uncommitted.md").write_text(event_file(8, "Uncommitted"))
    assert catalog.current().all(EVENTS) == []


def test_catalog_reports_problems_with_their_location(store, repo, app):
    repo.commit_file("venues/broken.yaml", "venue: Broken\nid: [unclosed\n")
    repo.commit_file("venues/fine.yaml", "id: 3\nvenue: Fine\n")
    snap = Catalog(store).current()
    assert [r.id for r in snap.all(VENUES)] == [3]
    problems = [str(p) for p in snap.problems]
    assert any(p.startswith("venues/broken.yaml:") for p in problems), problems


# ----------------------------------------------------------------------------- local changes in the working tree


def test_update_of_a_locally_modified_file_is_a_409(admin, repo, factory):
    event = factory.event(title="Guarded")
    path = repo.root / repo.path_of(event['slug'])
    local = path.read_text().replace("Guarded", "Guarded (editor is typing)")
    path.write_text(local)
    count, head = repo.count(), repo.head()

    r = admin.post(f"/events/{event['id']}", json={"title": "Changed through the API"})
    assert r.status_code == 409, r.get_json()
    body = r.get_json()
    assert set(body) == {"code", "message", "data"} and body["data"]["status"] == 409
    assert r.mimetype == "application/json"
    assert path.read_text() == local
    assert (repo.count(), repo.head()) == (count, head)
    assert not (repo.root / ".git" / "calendar-journal.json").exists()
    # deleting is refused too
    assert admin.delete(f"/events/{event['id']}").status_code == 409
    assert path.read_text() == local and repo.count() == count
    # the API still serves the committed version
    assert admin.get(f"/events/{event['id']}").get_json()["title"] == "Guarded"
    # once the editor discards the change, the update goes through
    repo("checkout", "--", repo.path_of(event['slug']))
    assert admin.post(f"/events/{event['id']}", json={"title": "Changed through the API"}).status_code == 200
    assert repo.count() == count + 1
    assert_clean(repo)


def test_create_over_an_untracked_file_is_a_409(admin, repo, factory):
    factory.event()
    tomorrow = datetime.now(timezone.utc) + timedelta(days=1)   # the site's zone is UTC: the event's month
    untracked = repo.root / "events" / tomorrow.strftime("%Y/%m") / "fresh-title.md"
    untracked.parent.mkdir(parents=True, exist_ok=True)
    untracked.write_text("an editor's draft, not committed yet\n")
    count = repo.count()
    r = admin.post("/events", json={"title": "Fresh title", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am"})
    assert r.status_code == 409, r.get_json()
    assert untracked.read_text() == "an editor's draft, not committed yet\n"
    assert repo.count() == count


def test_a_locally_deleted_file_is_not_resurrected(admin, repo, factory):
    event = factory.event()
    path = repo.root / repo.path_of(event['slug'])
    path.unlink()
    count = repo.count()
    assert admin.post(f"/events/{event['id']}", json={"title": "Back?"}).status_code == 409
    assert not path.exists() and repo.count() == count


# ----------------------------------------------------------------------------- edits made outside the API


def test_commits_outside_the_api_are_served_without_restart(admin, anon, repo, factory):
    factory.event()  # the app has served a snapshot already
    repo.commit_file("events/hand-made.md", event_file(100, "Hand made", extra="featured: true\n"))
    r = anon.get("/events/100")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["title"] == "Hand made" and r.get_json()["featured"] is True
    assert anon.get("/events/by-slug/hand-made").get_json()["id"] == 100
    assert 100 in [e["id"] for e in anon.get("/events").get_json()["events"]]

    repo.commit_file("events/hand-made.md", event_file(100, "Hand made, edited", body="New text."))
    r = anon.get("/events/100")
    assert r.get_json()["title"] == "Hand made, edited"
    assert "New text." in r.get_json()["description"]

    # an API write goes on top of the editor's commit and keeps the editor's file
    editor_head = repo.head()
    assert admin.post("/events/100", json={"excerpt": "Summary"}).status_code == 200
    assert repo("rev-parse", "HEAD^").strip() == editor_head
    assert "Hand made, edited" in (repo.root / "events" / "hand-made.md").read_text()

    repo("rm", "-q", "events/hand-made.md")
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "Remove")
    assert anon.get("/events/100").status_code == 404
    assert 100 not in [e["id"] for e in anon.get("/events").get_json()["events"]]


def test_new_ids_continue_after_ids_written_by_hand(admin, repo, factory):
    factory.event()
    repo.commit_file("organizers/hand.yaml", "id: 40\norganizer: By hand\n")
    repo.commit_file("tags/hand.yaml", "id: 30\nname: handmade\n")
    assert factory.venue()["id"] == 41
    assert factory.category()["id"] == 31


BROKEN_FILES = {
    "events/bad-yaml.md": "---\nid: 500\ntitle: [unclosed\n---\nbody\n",
    "events/no-front-matter.md": "just some text\n",
    "events/duplicate-key.md": event_file(512, "Twice", extra="title: Again\n"),
    "events/unclosed.md": f"---\nid: 513\ntitle: Unclosed\nstart_date: '{day(1)}'\nend_date: '{day(1, 11)}'\n\nNo closing line.\n",
    "events/id-not-a-number.md": event_file(0, "Id not a number").replace("id: 0", "id: abc"),
    "events/no-dates.md": "---\nid: 501\ntitle: No dates\n---\n",
    "events/bad-date.md": event_file(502, "Bad date").replace(day(1, 10), "next tuesday-ish"),
    "events/bad-flag.md": event_file(503, "Bad flag", extra="featured: maybe\n"),
    "events/bad-venue-list.md": event_file(504, "Bad venue", extra="venue: {a: 1}\n"),
    "events/end-before-start.md": event_file(505, "Backwards").replace(day(1, 12), day(0, 1)),
    "events/bad-timezone.md": event_file(506, "Bad tz").replace("timezone: UTC", "timezone: Mars/Olympus"),
    "venues/list.yaml": "- just\n- a list\n",
    "venues/bad-lat.yaml": "id: 507\nvenue: Bad lat\ngeo_lat: north\n",
    "organizers/no-name.yaml": "id: 508\n",
    "categories/bad.yaml": "id: {x: 1}\nname: Bad\n",
    "tags/binary.yaml": "id: 509\nname: bin\x00ary\n",
    "tags/list-name.yaml": "id: 510\nname: [a, b]\n",
}


def test_broken_files_are_skipped_and_the_rest_still_serves(anon, repo, factory):
    event = factory.event(venue={"venue": "Good venue"}, organizer=[{"organizer": "Good org"}],
                          categories=["Good cat"], tags=["goodtag"])
    for path, content in BROKEN_FILES.items():
        repo.commit_file(path, content, message=f"Add {path}")
    (repo.root / "tags" / "latin1.yaml").write_bytes("id: 511\nname: café\n".encode("latin-1"))
    repo("add", "tags/latin1.yaml")
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "Latin-1")
    for resource, key, expected in (("events", "events", 1), ("venues", "venues", 1), ("organizers", "organizers", 1),
                                    ("categories", "categories", 1), ("tags", "tags", 1)):
        r = anon.get(f"/{resource}?hide_empty=false" if resource in ("categories", "tags") else f"/{resource}")
        assert r.status_code == 200, (resource, r.get_json())
        assert r.get_json()["total"] == expected, (resource, [x.get("slug") for x in r.get_json()[key]])
    r = anon.get(f"/events/{event['id']}")
    assert r.status_code == 200 and r.get_json()["venue"]["venue"] == "Good venue"
    for record_id in (500, 501, 502, 503, 504, 505, 506, 512, 513):
        assert anon.get(f"/events/{record_id}").status_code == 404, record_id
    assert anon.get("/venues/507").status_code == 400
    assert anon.get("/organizers/508").status_code == 400
    assert anon.get("/doc").status_code == 200
    # each broken file is reported, located by its path
    store = GitStore(repo.root)
    try:
        reported = {p.path for p in Catalog(store).current().problems if p.severity == "error"}
    finally:
        store.close()
    assert reported == set(BROKEN_FILES) | {"tags/latin1.yaml"}


def test_an_editor_may_reference_a_venue_by_slug(anon, repo, factory):
    venue = factory.venue(venue="Town Hall")
    organizer = factory.organizer(organizer="Town Council")
    category = factory.category(name="Civic")
    assert venue["slug"] == "town-hall"
    repo.commit_file("events/meeting.md", event_file(
        200, "Town meeting", extra="venue: town-hall\norganizer: [town-council]\ncategories: [civic]\n"))
    r = anon.get("/events/200")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["venue"]["id"] == venue["id"]
    assert [o["id"] for o in body["organizer"]] == [organizer["id"]]
    assert [c["id"] for c in body["categories"]] == [category["id"]]
    assert [e["id"] for e in anon.get(f"/events?venue={venue['id']}").get_json()["events"]] == [200]


# ----------------------------------------------------------------------------- id spaces


def test_ids_are_shared_by_posts_and_by_terms(factory):
    posts = [factory.event()["id"], factory.venue()["id"], factory.organizer()["id"], factory.event()["id"],
             factory.venue()["id"]]
    terms = [factory.category()["id"], factory.tag()["id"], factory.category()["id"], factory.tag()["id"]]
    assert len(set(posts)) == len(posts)
    assert len(set(terms)) == len(terms)
    assert posts == sorted(posts) and terms == sorted(terms)


def test_nested_creations_take_distinct_ids(admin):
    r = admin.post("/events", json={"title": "Many", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am",
                                    "venue": [{"venue": "V one"}, {"venue": "V two"}],
                                    "organizer": [{"organizer": "O one"}, {"organizer": "O two"}],
                                    "categories": ["C one", "C two"], "tags": ["t-one", "t-two"]})
    assert r.status_code == 201, r.get_json()
    body = r.get_json()
    venues = body["venue"] if isinstance(body["venue"], list) else [body["venue"]]
    posts = [body["id"], *(v["id"] for v in venues), *(o["id"] for o in body["organizer"])]
    terms = [c["id"] for c in body["categories"]] + [t["id"] for t in body["tags"]]
    assert len(posts) == 5 and len(set(posts)) == 5
    assert len(terms) == 4 and len(set(terms)) == 4


def test_a_duplicate_id_written_by_hand_is_not_served_twice(app, anon, repo, factory):
    """The id stays with the event the API created; the venue written later with the same id is
    served too, under the next free id (events, venues and organizers share one id space)."""
    event = factory.event()
    repo.commit_file("venues/clash.yaml", f"id: {event['id']}\nvenue: Clash\n")
    followed(app)
    assert anon.get(f"/events/{event['id']}").get_json()["title"] == event["title"]
    assert anon.get(f"/venues/{event['id']}").status_code == 400
    assert anon.get("/venues").get_json()["venues"][0]["id"] == event["id"] + 1
    assert repo("show", "HEAD:venues/clash.yaml") == f"id: {event['id'] + 1}\nvenue: Clash\n"
    # and the next id is still a fresh one
    assert factory.organizer()["id"] == event["id"] + 2


# ----------------------------------------------------------------------------- crash recovery


class KilledAfterRefUpdate(GitStore):
    """A store whose process 'dies' right after moving the branch, before the working tree."""

    def _sync_worktree(self, changes):
        raise KeyboardInterrupt("killed")


def _journal(repo):
    return repo.root / ".git" / "calendar-journal.json"


def test_recovery_finishes_a_write_killed_after_the_ref_update(make_app, paths, repo, factory):
    event = factory.event(title="Before crash")
    path = repo.path_of(event['slug'])
    old_content = (repo.root / path).read_bytes()
    new_content = old_content.replace(b"Before crash", b"After crash")
    killed = KilledAfterRefUpdate(paths["content_dir"])
    with pytest.raises(KeyboardInterrupt):
        with killed.write_lock():
            killed.commit({path: new_content, "events/created-in-crash.md": event_file(300, "Created").encode(),
                           }, "Crashing write", ("Admin", "admin@example.org"), repo.head())
    killed.close()
    assert _journal(repo).exists()
    assert repo("show", f"HEAD:{path}").encode() == new_content
    assert (repo.root / path).read_bytes() == old_content          # the working tree lags behind
    assert not (repo.root / "events" / "created-in-crash.md").exists()

    app = make_app()  # the next start
    assert not _journal(repo).exists()
    assert (repo.root / path).read_bytes() == new_content
    assert (repo.root / "events" / "created-in-crash.md").read_text() == event_file(300, "Created")
    assert_clean(repo)
    anon = Client(app.test_client(), None)
    assert anon.get(f"/events/{event['id']}").get_json()["title"] == "After crash"
    assert anon.get("/events/300").status_code == 200


def test_a_start_recovers_beside_loading_the_records_and_before_it_answers(make_app, paths, repo, factory,
                                                                          monkeypatch):
    """A start runs the recovery in a thread of its own (its git processes beside the records'
    load: the load reads git's objects and refs, which recovery never changes) and waits for it
    before ``create_app`` returns; a recovery that fails fails the start."""
    event = factory.event(title="Before crash")
    path = repo.path_of(event['slug'])
    new_content = (repo.root / path).read_bytes().replace(b"Before crash", b"After crash")
    killed = KilledAfterRefUpdate(paths["content_dir"])
    with pytest.raises(KeyboardInterrupt):
        with killed.write_lock():
            killed.commit({path: new_content}, "Crashing write", ("Admin", "admin@example.org"), repo.head())
    killed.close()
    ran_in = []
    recover = GitStore.recover

    def watched(store):
        ran_in.append(threading.current_thread().name)
        recover(store)

    monkeypatch.setattr(GitStore, "recover", watched)
    app = make_app()
    assert ran_in == ["calendar-recovery"]
    assert not any(t.name == "calendar-recovery" for t in threading.enumerate())
    assert not _journal(repo).exists() and (repo.root / path).read_bytes() == new_content
    assert_clean(repo)
    assert Client(app.test_client(), None).get(f"/events/{event['id']}").get_json()["title"] == "After crash"

    def failing(store):
        raise StoreError("recovery failed")

    monkeypatch.setattr(GitStore, "recover", failing)
    with pytest.raises(StoreError, match="recovery failed"):
        make_app()


class KilledBeforeIndexUpdate(GitStore):
    """A store whose process 'dies' after writing the working tree, before ``git update-index``."""

    def _git(self, *args, **kwargs):
        if args and args[0] == "update-index":
            raise KeyboardInterrupt("killed")
        return super()._git(*args, **kwargs)


def _killed(*args, **kwargs):
    raise KeyboardInterrupt("killed")


@pytest.mark.parametrize("where", ["in process", "git update-index"])
def test_recovery_refreshes_the_index_of_a_write_killed_before_update_index(make_app, paths, repo, factory,
                                                                            monkeypatch, where):
    event = factory.event(title="Index lag")
    path = repo.path_of(event['slug'])
    new_content = (repo.root / path).read_bytes().replace(b"Index lag", b"Index caught up")
    if where == "in process":   # the split index's small file rewritten by the service itself
        monkeypatch.setattr(gitindex, "record_files", _killed)
    else:                       # git's index left to git (not split, or a file deleted)
        monkeypatch.setattr(gitindex, "record_files", lambda *args: gitindex.GIT)
    killed = KilledBeforeIndexUpdate(paths["content_dir"])
    with pytest.raises(KeyboardInterrupt):
        with killed.write_lock():
            killed.commit({path: new_content, "events/made-in-crash.md": event_file(301, "Made").encode()},
                          "Crashing write", ("Admin", "admin@example.org"), repo.head())
    killed.close()
    # the commit step is complete (no journal): git's index is updated after the write lock is
    # released, so the killed process left the files new and their index entries old
    assert not _journal(repo).exists() and repo.status() != ""
    monkeypatch.undo()
    make_app()  # the next start
    assert not _journal(repo).exists()
    assert (repo.root / path).read_bytes() == new_content
    assert_clean(repo)


def test_recovery_from_a_hand_written_journal(make_app, paths, repo, factory):
    event = factory.event(title="Journal one")
    doomed = factory.event(title="Journal two")
    path, doomed_path = repo.path_of(event['slug']), repo.path_of(doomed['slug'])
    old_head = repo.head()
    old_bytes = (repo.root / path).read_bytes()
    doomed_bytes = (repo.root / doomed_path).read_bytes()
    old_blob, doomed_blob = blob_sha(old_bytes), blob_sha(doomed_bytes)
    assert old_blob == repo("rev-parse", f"HEAD:{path}").strip()

    store = GitStore(paths["content_dir"])
    with store.write_lock():
        new_head = store.commit({path: old_bytes.replace(b"Journal one", b"Journal one, updated"), doomed_path: None},
                                "Update and delete", ("Admin", "admin@example.org"), old_head)
    store.close()
    # put the working tree back as a process killed before _sync_worktree would have left it
    (repo.root / path).write_bytes(old_bytes)
    (repo.root / doomed_path).write_bytes(doomed_bytes)
    _journal(repo).write_text(json.dumps({"commit": new_head, "old": old_head,
                                          "paths": {path: old_blob, doomed_path: doomed_blob}}))
    make_app()
    assert not _journal(repo).exists()
    assert (repo.root / path).read_bytes() == repo("show", f"HEAD:{path}").encode()
    assert b"Journal one, updated" in (repo.root / path).read_bytes()
    assert not (repo.root / doomed_path).exists()
    assert repo.head() == new_head
    assert_clean(repo)


def test_recovery_leaves_files_somebody_changed_since(make_app, paths, repo, factory):
    event = factory.event(title="Contested")
    path = repo.path_of(event['slug'])
    old_bytes = (repo.root / path).read_bytes()
    killed = KilledAfterRefUpdate(paths["content_dir"])
    with pytest.raises(KeyboardInterrupt):
        with killed.write_lock():
            killed.commit({path: old_bytes.replace(b"Contested", b"By the API")}, "Crash", ("A", "a@example.org"),
                          repo.head())
    killed.close()
    (repo.root / path).write_text("an editor rewrote this meanwhile\n")
    make_app()
    assert not _journal(repo).exists()
    assert (repo.root / path).read_text() == "an editor rewrote this meanwhile\n"


def test_a_journal_whose_commit_never_landed_is_discarded(make_app, paths, repo, factory):
    event = factory.event(title="Untouched")
    path = repo.path_of(event['slug'])
    head = repo.head()
    content = (repo.root / path).read_bytes()
    # a commit object that exists but that the branch never pointed at (killed before update-ref)
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.root / ".git" / "tmp-index")}
    run = lambda *a, **kw: subprocess.run(["git", "-C", str(repo.root), *a], env=env, check=True,  # noqa: E731
                                          capture_output=True, text=True, **kw).stdout.strip()
    run("read-tree", "HEAD")
    blob = run("hash-object", "-w", "--stdin", input="---\nid: 1\ntitle: Never landed\n---\n")
    run("update-index", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree")
    dangling = run("-c", "user.name=X", "-c", "user.email=x@example.org", "commit-tree", tree, "-p", head,
                   "-m", "never landed")
    os.unlink(repo.root / ".git" / "tmp-index")
    _journal(repo).write_text(json.dumps({"commit": dangling, "old": head, "paths": {path: blob_sha(content)}}))
    inode = (repo.root / path).stat().st_ino

    app = make_app()
    assert not _journal(repo).exists()
    assert repo.head() == head
    assert (repo.root / path).read_bytes() == content
    assert (repo.root / path).stat().st_ino == inode  # not even rewritten with the same bytes
    assert repo.status() == ""
    assert Client(app.test_client(), None).get(f"/events/{event['id']}").get_json()["title"] == "Untouched"


def test_a_garbled_journal_is_discarded(make_app, repo, factory):
    event = factory.event()
    path = repo.root / repo.path_of(event['slug'])
    content = path.read_bytes()
    _journal(repo).write_text("{not json")
    make_app()
    assert not _journal(repo).exists()
    assert path.read_bytes() == content


# ----------------------------------------------------------------------------- concurrency


def test_concurrent_writes_from_many_threads(app, repo):
    threads, per_thread = 8, 5
    results: list = []
    errors: list = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work(n: int):
        client = Client(app.test_client(), "administrator")
        start.wait()
        for i in range(per_thread):
            try:
                if i % 2:
                    r = client.post("/venues", json={"venue": f"Venue t{n} #{i}"})
                else:
                    r = client.post("/events", json={"title": f"Event t{n} #{i}", "start_date": "tomorrow 10am",
                                                     "end_date": "tomorrow 11am"})
                with lock:
                    results.append((r.status_code, r.get_json()))
            except Exception as exc:  # pragma: no cover - reported below
                with lock:
                    errors.append(repr(exc))

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert not errors, errors
    assert [status for status, _ in results] == [201] * (threads * per_thread), \
        [body for status, body in results if status != 201][:3]
    ids = [body["id"] for _, body in results]
    assert len(set(ids)) == threads * per_thread
    assert repo.count() == threads * per_thread
    assert len(repo.files()) == threads * per_thread
    assert_clean(repo)
    authors = set(repo("log", "--format=%an <%ae>").split("\n")) - {""}
    assert authors == {ADMIN_AUTHOR}


def test_concurrent_writes_from_two_app_instances(make_app, repo):
    """Two apps on one repository stand in for two worker processes: the file lock serializes them."""
    apps = [make_app(), make_app()]
    results: list = []
    lock = threading.Lock()

    def work(app, n):
        client = Client(app.test_client(), "administrator")
        for i in range(4):
            r = client.post("/tags", json={"name": f"tag-{n}-{i}"})
            with lock:
                results.append((r.status_code, r.get_json()))

    workers = [threading.Thread(target=work, args=(apps[n % 2], n)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert [s for s, _ in results] == [201] * 16, [b for s, b in results if s != 201][:3]
    assert len({b["id"] for _, b in results}) == 16
    assert repo.count() == 16
    assert_clean(repo)
    # both instances see all of them
    for app in apps:
        assert Client(app.test_client(), None).get("/tags?per_page=50&hide_empty=false").get_json()["total"] == 16


def test_incremental_snapshots_equal_a_full_build(app, admin, factory, repo):
    """A snapshot advanced commit by commit must hold exactly what a fresh load of the commit holds."""
    import random

    from calendar_service.storage.catalog import Catalog
    from calendar_service.domain.resources import EVENTS, RESOURCES, TAGS, VENUES

    service = app.extensions["calendar"]
    rng = random.Random(7)
    venues = [factory.venue() for _ in range(3)]
    tags = [factory.tag() for _ in range(3)]
    events = [factory.event(venue=v["id"], tags=[t["id"]]) for v, t in zip(venues, tags)]
    for step in range(14):
        action = step % 4
        if action == 0:
            events.append(factory.event(venue=rng.choice(venues)["id"], tags=[rng.choice(tags)["id"]]))
        elif action == 1:
            target = rng.choice(events)
            body = {"tags": [rng.choice(tags)["id"]], "status": rng.choice(["publish", "draft"])}
            assert admin.post(f"/events/{target['id']}", json=body).status_code == 200
        elif action == 2:
            victim = venues.pop(rng.randrange(len(venues)))
            assert admin.delete(f"/venues/{victim['id']}").status_code == 200
            venues.append(factory.venue())
        else:  # an editor references a venue by slug, outside the API
            slug = rng.choice(venues)["slug"]
            repo.commit_file(f"events/by-hand-{step}.md",
                             f"---\nid: {9000 + step}\ntitle: By hand {step}\nstart_date: '2030-01-01 10:00:00'\n"
                             f"end_date: '2030-01-01 11:00:00'\nvenue: [{slug}]\ntags: [{tags[0]['id']}]\n---\nBody\n")
        incremental = service.snapshot()
        fresh = Catalog(service.store).current()
        assert incremental.commit == fresh.commit == repo.head()
        for name in RESOURCES:
            assert {i: r.path for i, r in incremental.by_id[name].items()} == \
                {i: r.path for i, r in fresh.by_id[name].items()}, (step, name)
            assert set(incremental.by_slug[name]) == set(fresh.by_slug[name]), (step, name)
        for venue in fresh.all(VENUES):
            assert [e.id for e in incremental.events_referencing("venue", venue)] == \
                [e.id for e in fresh.events_referencing("venue", venue)], step
        for tag in fresh.all(TAGS):
            assert incremental.published_count("tags", tag) == fresh.published_count("tags", tag), step
        assert len(incremental.all(EVENTS)) == len(fresh.all(EVENTS))


def test_a_failing_git_command_is_named_with_its_exit_status_when_git_says_nothing(tmp_path):
    """An operator reads which git command failed (not ``-c``, an option of it) and how, even
    when git wrote nothing on its standard error (``git diff --quiet`` of two different files)."""
    from calendar_service.storage.errors import StoreError
    from calendar_service.storage.gitcmd import Git
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    with pytest.raises(StoreError) as failed:
        Git(tmp_path).run("-c", "core.quotePath=false", "diff", "--quiet", "--no-index", "a.txt", "b.txt")
    assert str(failed.value) == "git diff failed: exit status 1"

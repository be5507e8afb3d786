"""The git remote: pushes after each write, pulls (webhook, periodic), rebases, conflicts.

A real bare repository in a temporary directory is the remote; two service instances
(two apps with their own content and index directories) push to it and pull from it.
Editors reach it with plain git (clone, commit, push). Nothing is mocked.
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml

from calendar_service import create_app
from servers import git_daemon
from conftest import API, Client, Git, followed

SECRET = "hook-secret-for-tests"
EDITOR = ["-c", "user.name=Remote Editor", "-c", "user.email=remote.editor@example.org"]


class Instance:
    """One running service: its app, an administrator client, its content repository."""

    def __init__(self, app):
        self.app = app
        self.service = app.extensions["calendar"]
        self.admin = Client(app.test_client(), "administrator")
        self.repo = Git(self.service.settings.content_dir)

    def hook(self, body: bytes | None = None, headers: dict | None = None, sign: bool = True, **kw):
        body = json.dumps({"ref": "refs/heads/main"}).encode() if body is None else body
        headers = {"Content-Type": "application/json", **(headers or {})}
        if sign:
            headers["X-Hub-Signature-256"] = "sha256=" + signature(body)
        return self.app.test_client().post(API + "/hooks/git", data=body, headers=headers, **kw)

    def create(self, title: str):
        return self.admin.post("/events", json={"title": title, "start_date": "tomorrow 10am",
                                                "end_date": "tomorrow 11am"})


def signature(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def bare(tmp_path) -> Path:
    """The remote's bare repository (editors and the tests reach it by path)."""
    path = tmp_path / "served" / "remote.git"
    path.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


@pytest.fixture
def remote_url(bare) -> str:
    """The same repository as the services reach it: over the network, ``git daemon`` on loopback."""
    with git_daemon(bare.parent) as url:
        yield f"{url}/{bare.name}"


@pytest.fixture
def remote(bare) -> Git:
    return Git(bare)


@pytest.fixture
def instances(tmp_path, users_template):
    """``instances("a", url)`` -> a service on its own content directory following the remote
    ``url``; every one built is closed at the end of the test."""
    built = []

    def build(name: str, url: str, **overrides) -> Instance:
        users = tmp_path / f"users-{name}.yaml"
        shutil.copy(users_template, users)
        config = {"content_dir": tmp_path / f"content-{name}", "index_dir": tmp_path / f"index-{name}",
                  "users_file": users, "seed_sample": False, "site_timezone": "UTC",
                  "git_remote": url, "pull_interval": 0, "webhook_secret": SECRET, **overrides}
        made = Instance(create_app(config))
        built.append(made)
        return made

    yield build
    for made in built:
        made.service.close()


@pytest.fixture
def instance(instances, remote_url):
    """``instance("a")`` -> a service on its own content directory, following the remote over git://."""
    return lambda name, **overrides: instances(name, remote_url, **overrides)


def remote_events(remote: Git) -> dict[str, dict]:
    """The event files on the remote branch: path -> front matter."""
    found = {}
    for path in remote("ls-tree", "-r", "--name-only", "main", "--", "events").split():
        text = remote("show", f"main:{path}")
        found[path] = yaml.safe_load(text.split("---")[1])
    return found


def titles(instance: Instance) -> list[str]:
    r = instance.admin.get("/events?per_page=50&status=publish,draft&start_date=2000-01-01")
    assert r.status_code == 200, r.get_json()
    return sorted(e["title"] for e in r.get_json()["events"])


def editor_clone(bare: Path, where: Path) -> Git:
    subprocess.run(["git", "clone", "-q", str(bare), str(where)], check=True, capture_output=True)
    return Git(where)


# ----------------------------------------------------------------------------- writes and pulls


def test_writes_of_two_instances_reach_the_remote_and_each_other(instance, remote, caplog):
    caplog.set_level("INFO", logger="calendar_service.service.calendar")
    a, b = instance("a"), instance("b")
    r = a.create("From A")
    assert r.status_code == 201, r.get_json()
    assert remote("rev-parse", "main").strip() == a.repo.head()
    # B has not pulled: its push is refused, it catches up and recomputes the write on A's head
    r = b.create("From B")
    assert r.status_code == 201, r.get_json()
    assert "the remote moved during a write; recomputing it on the remote head (1)" in caplog.text
    events = {e["title"]: e["id"] for e in remote_events(remote).values()}
    assert sorted(events) == ["From A", "From B"]
    assert events["From A"] != events["From B"] == r.get_json()["id"]  # B did not reuse A's id
    assert remote("rev-parse", "main").strip() == b.repo.head()
    assert remote("rev-list", "--count", "--merges", "main").strip() == "0"  # linear history
    assert remote("log", "--format=%an|%s", "main").splitlines() == [
        f'Administrator|Create event {events["From B"]} "From B"',
        f'Administrator|Create event {events["From A"]} "From A"',
    ]
    assert titles(b) == ["From A", "From B"]
    # A sees B's record after the webhook
    assert titles(a) == ["From A"]
    hook = a.hook()
    assert hook.status_code == 200, hook.get_json()
    assert hook.get_json()["pulled"] is True and hook.get_json()["head"] == remote("rev-parse", "main").strip()
    assert titles(a) == ["From A", "From B"]
    assert a.repo.status() == ""  # the working tree followed the branch


def test_updates_of_different_records_from_stale_instances_both_apply(instance, remote):
    a, b = instance("a"), instance("b")
    one, two = a.create("One").get_json(), a.create("Two").get_json()
    b.service.pull_remote()
    assert a.admin.post(f"/events/{one['id']}", json={"title": "One by A"}).status_code == 200
    r = b.admin.post(f"/events/{two['id']}", json={"title": "Two by B"})  # B is behind: rebased and retried
    assert r.status_code == 200, r.get_json()
    assert sorted(e["title"] for e in remote_events(remote).values()) == ["One by A", "Two by B"]
    assert titles(b) == ["One by A", "Two by B"]


def test_concurrent_writes_of_two_instances_all_land_exactly_once(instance, remote):
    a, b = instance("a"), instance("b")
    results: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

    def writer(inst: Instance, name: str):
        client = Client(inst.app.test_client(), "administrator")
        for n in range(5):
            title = f"{name} {n}"
            r = client.post("/events", json={"title": title, "start_date": "tomorrow 10am", "end_date": "tomorrow 11am"})
            with lock:
                results.append((title, r.status_code, r.get_json()))

    threads = [threading.Thread(target=writer, args=(inst, f"{label}{t}"))
               for label, inst in (("A", a), ("B", b)) for t in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(results) == 20
    for title, status, body in results:
        assert status in (201, 409), (title, status, body)  # a 409 only when it kept losing races
        if status != 201:
            assert body["code"] == "calendar-write-conflict" and body["data"]["status"] == 409
    succeeded = {title: body["id"] for title, status, body in results if status == 201}
    assert len(succeeded) >= 10
    events = list(remote_events(remote).values())
    on_remote = [e["title"] for e in events]
    assert sorted(on_remote) == sorted(succeeded)  # every success exactly once, nothing else
    assert {e["title"]: e["id"] for e in events} == succeeded
    assert len({e["id"] for e in events}) == len(events)
    assert remote("rev-list", "--count", "main").strip() == str(len(succeeded))
    for inst in (a, b):
        inst.service.pull_remote()
        assert inst.repo.head() == remote("rev-parse", "main").strip()
        assert titles(inst) == sorted(succeeded)
        assert inst.repo.status() == ""


def test_a_real_conflict_is_409_and_loses_nothing(instance, remote):
    a, b = instance("a"), instance("b")
    event = a.create("Shared").get_json()
    b.service.pull_remote()
    r = a.admin.post(f"/events/{event['id']}", json={"title": "Title by A"})
    assert r.status_code == 200
    before = b.repo.count()
    r = b.admin.post(f"/events/{event['id']}", json={"title": "Title by B"})
    assert r.status_code == 409
    body = r.get_json()
    assert body["code"] == "calendar-write-conflict" and body["data"] == {"status": 409}
    assert b.repo.path_of("shared") in body["message"]
    # the remote keeps A's acknowledged write; B's branch equals the remote
    assert [e["title"] for e in remote_events(remote).values()] == ["Title by A"]
    assert b.repo.head() == remote("rev-parse", "main").strip() == a.repo.head()
    assert b.repo.count() == before + 1
    assert b.admin.get(f"/events/{event['id']}").get_json()["title"] == "Title by A"
    assert "Title by A" in (b.repo.root / b.repo.path_of("shared")).read_text()
    # the refused commit stays reachable in B's repository
    kept = b.repo("for-each-ref", "--format=%(refname)", "refs/calendar/conflicts/").split()
    assert len(kept) == 1
    assert "Title by B" in b.repo("show", f"{kept[0]}:{b.repo.path_at('shared', kept[0])}")


def test_local_commits_are_replayed_onto_the_remote_head(instance, remote):
    a, b = instance("a"), instance("b")
    a.create("From A")
    # an editor commits in B's checkout while A's write is on the remote only
    b.repo.commit_file("venues/hall.yaml", "id: 50\nvenue: Hall\nslug: hall\n", "Add the hall by hand")
    local = b.repo.head()
    result = b.service.pull_remote()
    assert result.moved and result.pushed and result.conflicts == []
    log = remote("log", "--format=%an <%ae>|%cn|%s", "main").splitlines()
    assert log[0] == "Editor <editor@example.org>|Editor|Add the hall by hand"  # author, committer, message kept
    assert log[1].endswith('"From A"')
    assert b.repo.head() == remote("rev-parse", "main").strip() != local
    assert b.admin.get("/venues/50").get_json()["venue"] == "Hall"
    assert titles(b) == ["From A"]
    assert b.repo.status() == ""


def test_an_editor_commit_in_the_checkout_during_a_push_goes_on_top(instance, remote, bare):
    a = instance("a")
    a.create("First")
    # the remote's post-receive hook plays an editor who commits in A's checkout while A's push runs,
    # i.e. after the remote accepted the write and before A's branch moves
    hook = bare / "hooks/post-receive"
    hook.write_text(f"""#!/bin/sh
rm -f "$0"
cd '{a.repo.root}' && env -i PATH="$PATH" HOME="$HOME" sh -c '
  mkdir -p venues && printf "id: 60\\nvenue: Side\\nslug: side\\n" > venues/side.yaml
  git add venues/side.yaml && git -c user.name=Editor -c user.email=e@x.org commit -q -m "Side venue"'
""")
    hook.chmod(0o755)
    r = a.create("Second")
    assert r.status_code == 201, r.get_json()
    assert not hook.exists()  # the hook did run
    assert remote("log", "--format=%s", "main").splitlines()[:2] == ["Side venue", f'Create event {r.get_json()["id"]} "Second"']
    assert a.repo.head() == remote("rev-parse", "main").strip()
    assert titles(a) == ["First", "Second"] and a.admin.get("/venues/60").get_json()["venue"] == "Side"
    assert a.repo.status() == ""


def test_a_conflicting_local_commit_is_kept_aside(instance, remote):
    a, b = instance("a"), instance("b")
    event = a.create("Shared").get_json()
    b.service.pull_remote()
    assert a.admin.post(f"/events/{event['id']}", json={"title": "By the API"}).status_code == 200
    path = b.repo.path_of("shared")
    text = (b.repo.root / path).read_text().replace("title: Shared", "title: By hand")
    b.repo.commit_file(path, text, "Retitle by hand")
    local = b.repo.head()
    result = b.service.pull_remote()
    assert result.conflicts == [local] and not result.pushed
    assert b.repo.head() == remote("rev-parse", "main").strip()
    assert b.admin.get(f"/events/{event['id']}").get_json()["title"] == "By the API"
    assert b.repo("rev-parse", f"refs/calendar/conflicts/{local}").strip() == local
    assert b.repo.status() == ""


def test_an_editor_push_to_the_remote_shows_after_the_webhook(instance, remote, bare, tmp_path):
    a = instance("a")
    event = a.create("Jazz").get_json()
    editor = editor_clone(bare, tmp_path / "editor")
    path = editor.root / editor.path_of("jazz")
    path.write_text(path.read_text().replace("title: Jazz", "title: Jazz by the river"))
    (editor.root / "categories").mkdir()
    (editor.root / "categories/music.yaml").write_text("id: 7\nname: Music\nslug: music\n")
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "Retitle and add a category")
    editor("push", "-q", "origin", "main")
    assert a.admin.get(f"/events/{event['id']}").get_json()["title"] == "Jazz"  # not pulled yet
    r = a.hook()
    assert r.status_code == 200
    assert r.get_json() == {"pulled": True, "head": editor.head(), "moved": True, "pushed": False, "conflicts": []}
    assert a.admin.get(f"/events/{event['id']}").get_json()["title"] == "Jazz by the river"
    assert a.admin.get("/categories/7").get_json()["name"] == "Music"
    assert (a.repo.root / "categories/music.yaml").exists()
    assert a.repo.status() == ""
    # and the next API write builds on it
    assert a.create("After the editor").status_code == 201
    assert remote("log", "-2", "--format=%an", "main").split("\n")[1] == "Remote Editor"


def test_an_id_the_api_confirmed_survives_a_merged_branch_that_picked_it(instance, remote, bare, tmp_path, caplog):
    """On a branch an editor writes "Advent Market" with the id the API hands out next (as
    ``new`` used to); meanwhile the API creates "Zumba in the Park" with that id. The branch is
    merged in the order that puts it first in the branch's first-parent history, and pushed.
    Both replicas pull it before either gives ids: they plan the same commit, one lands, the
    other catches up and has nothing left to do. Zumba keeps its id and content, Advent Market
    is served under the next id, an id never names two records."""
    caplog.set_level("INFO", logger="calendar_service")
    a, b = instance("a"), instance("b")
    base = a.create("Base").get_json()
    editor = editor_clone(bare, tmp_path / "editor")
    editor("checkout", "-q", "-b", "advent")
    day = (datetime.date.today() + datetime.timedelta(days=20)).isoformat()
    advent = (f"---\nid: {base['id'] + 1}\ntitle: Advent Market\nstart_date: '{day} 10:00:00'\n"
              f"end_date: '{day} 18:00:00'\n---\nMulled wine.\n")
    (editor.root / "events/advent-market.md").write_text(advent)
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "Add the advent market")

    zumba = a.create("Zumba in the Park")
    assert zumba.status_code == 201
    zumba = zumba.get_json()
    assert zumba["id"] == base["id"] + 1  # the id the branch picked

    editor("checkout", "-q", "main")
    editor(*EDITOR, "merge", "-q", "--no-ff", "-m", "Merge advent", "advent")
    editor(*EDITOR, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")  # Zumba enters by this merge
    editor("push", "-q", "origin", "main")
    merged = editor.head()
    a.service.pull_remote()
    b.service.pull_remote()
    # each follower thread would give ids: one commit lands, the other has nothing left to do
    for replica in (a, b):
        followed(replica.app)
        r = replica.admin.get(f"/events/{zumba['id']}")
        assert r.status_code == 200 and r.get_json()["title"] == "Zumba in the Park"
    assert b.hook().status_code == 200 and a.hook().status_code == 200
    for replica in (a, b):
        followed(replica.app)
    assert remote("rev-list", "--count", f"{merged}..main").strip() == "1"
    assert remote("log", "-1", "--format=%an%n%B", "main").startswith(
        "Calendar Service\nGive ids and slugs to files that lack them or share them with an older file\n\n"
        f"events/advent-market.md: had id {zumba['id']}, which {a.repo.path_of('zumba-in-the-park')} holds since before; "
        f"now id {zumba['id'] + 1}")
    for replica in (a, b):
        assert replica.service.store.head() == remote("rev-parse", "main").strip()
        assert replica.admin.get(f"/events/{zumba['id']}").get_json()["description"] == zumba["description"]
        found = replica.admin.get("/events?search=zumba&start_date=2000-01-01").get_json()["events"]
        assert [e["id"] for e in found] == [zumba["id"]]
        assert replica.admin.get(f"/events/{zumba['id'] + 1}").get_json()["title"] == "Advent Market"
        assert titles(replica) == ["Advent Market", "Base", "Zumba in the Park"]
    assert remote("show", "main:events/advent-market.md") == advent.replace(f"id: {zumba['id']}", f"id: {zumba['id'] + 1}")
    assert any("events/advent-market.md: id" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    # the next create takes a fresh id
    assert a.create("After").get_json()["id"] == zumba["id"] + 2


def test_a_pull_never_overwrites_an_uncommitted_change(instance, remote, bare, tmp_path):
    a = instance("a")
    a.create("Jazz")
    a.create("Blues")
    jazz, blues = a.repo.root / a.repo.path_of("jazz"), a.repo.root / a.repo.path_of("blues")
    jazz.write_text("an editor's unfinished work\n")
    editor = editor_clone(bare, tmp_path / "editor")
    for name in ("jazz", "blues"):
        path = editor.root / editor.path_of(name)
        path.write_text(path.read_text().replace("title: ", "title: New "))
    editor(*EDITOR, "commit", "-q", "-a", "-m", "Retitle both")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    assert a.repo.head() == editor.head()
    assert jazz.read_text() == "an editor's unfinished work\n"
    assert "title: New Blues" in blues.read_text()
    assert titles(a) == ["New Blues", "New Jazz"]  # readers serve the branch, not the working tree


def test_a_remote_with_history_is_cloned_at_start_instead_of_seeding(instance, remote):
    a = instance("a", seed_sample=True)  # empty remote: the sample is written and pushed
    assert remote("rev-parse", "main").strip() == a.repo.head()
    b = instance("b", seed_sample=True)  # the remote has the calendar: B takes it, no second sample
    assert b.repo.head() == a.repo.head()
    assert titles(a) == titles(b) and titles(b)


def test_the_remote_may_be_a_remote_named_in_the_content_repository(instance, bare, tmp_path):
    content = tmp_path / "content-named"
    subprocess.run(["git", "init", "-q", "-b", "main", str(content)], check=True)
    subprocess.run(["git", "-C", str(content), "remote", "add", "origin", str(bare)], check=True)
    a = instance("named", git_remote="origin")
    assert a.create("Via origin").status_code == 201
    b = instance("b")
    assert titles(b) == ["Via origin"]


# ----------------------------------------------------------------------------- the webhook


def test_webhook_refuses_missing_and_wrong_signatures(instance):
    a = instance("a")
    head = a.repo.head() if a.repo.count() else None
    r = a.hook(sign=False)
    assert r.status_code == 401
    assert r.get_json() == {"code": "calendar-webhook-unsigned", "message": r.get_json()["message"],
                            "data": {"status": 401}}
    r = a.hook(sign=False, headers={"X-Hub-Signature-256": "sha256=" + signature(b"other body")})
    assert r.status_code == 403 and r.get_json()["code"] == "calendar-webhook-bad-signature"
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    r = a.hook(body, sign=False, headers={"X-Hub-Signature-256": "sha256=" + signature(body, "wrong secret")})
    assert r.status_code == 403 and r.get_json()["data"] == {"status": 403}
    r = a.hook(body, sign=False, headers={"X-Hub-Signature-256": signature(body)})  # no sha256= prefix
    assert r.status_code == 403
    assert (a.repo.head() if a.repo.count() else None) == head


def test_webhook_accepts_gitea_and_github_form_bodies(instance, remote):
    a, b = instance("a"), instance("b")
    b.create("From B")
    body = json.dumps({"ref": "refs/heads/main", "after": "x"}).encode()
    r = a.hook(body, sign=False, headers={"X-Gitea-Signature": signature(body)})
    assert r.status_code == 200 and r.get_json()["pulled"] is True
    assert titles(a) == ["From B"]
    b.create("Again from B")
    form = urlencode({"payload": json.dumps({"ref": "refs/heads/main"})}).encode()
    r = a.hook(form, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200 and r.get_json()["pulled"] is True
    assert titles(a) == ["Again from B", "From B"]
    # a push to another branch is acknowledged without pulling
    b.create("Third from B")
    body = json.dumps({"ref": "refs/heads/feature"}).encode()
    r = a.hook(body)
    assert r.status_code == 200 and r.get_json() == {"pulled": False, "head": a.repo.head()}
    assert "Third from B" not in titles(a)


def test_webhook_is_disabled_without_a_secret(instance):
    a = instance("a", webhook_secret="")
    r = a.hook()
    assert r.status_code == 403 and r.get_json()["code"] == "calendar-webhook-disabled"
    assert a.app.test_client().get(API + "/hooks/git").status_code == 404  # POST only
    doc = a.admin.get("/doc").get_json()
    assert set(doc["paths"]["/hooks/git"]) == {"post"}
    index = a.admin.get(API).get_json()
    args = index["routes"][API + "/hooks/git"]["endpoints"][0]["args"]
    assert set(args) == {"ref", "payload", "i18n_language"} and args["ref"]["description"]


# ----------------------------------------------------------------------------- an unreachable remote


def test_an_unreachable_remote_fails_the_write_with_503_and_commits_nothing(instance, remote, bare, tmp_path):
    a = instance("a")
    assert a.create("Before").status_code == 201
    head, files = a.repo.head(), a.repo.files()
    moved = tmp_path / "remote-away.git"
    bare.rename(moved)
    r = a.create("While away")
    assert r.status_code == 503
    body = r.get_json()
    assert body["code"] == "calendar-remote-unavailable" and body["data"] == {"status": 503}
    assert body["message"] == "The git remote could not be reached. The write was not applied. Try again later."
    assert a.repo.head() == head and a.repo.files() == files and a.repo.status() == ""
    assert titles(a) == ["Before"]
    assert a.hook().status_code == 503
    moved.rename(bare)
    assert a.create("Back again").status_code == 201
    assert sorted(e["title"] for e in remote_events(remote).values()) == ["Back again", "Before"]


def test_a_push_the_remote_refuses_fails_the_write_with_503_at_once(instance, remote, bare):
    a = instance("a")
    assert a.create("Before").status_code == 201
    head = a.repo.head()
    hook = bare / "hooks/pre-receive"
    hook.write_text("#!/bin/sh\necho 'the branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    r = a.create("Refused")
    assert r.status_code == 503
    assert r.get_json()["message"] == "The git remote refused the push. The write was not applied. Try again later."
    assert a.repo.head() == head == remote("rev-parse", "main").strip()
    assert a.repo("for-each-ref", "refs/calendar/conflicts/") == ""


def test_credentials_of_the_remote_url_never_show(instance, caplog):
    url = "http://calendar-bot:s3cr3t-token@127.0.0.1:9/calendar.git"  # port 9: connection refused at once
    a = instance("a", git_remote=url, seed_sample=True)
    assert a.repo.count() == 0  # no sample while the remote is unreachable: it would be an unrelated history
    r = a.create("Nowhere")
    assert r.status_code == 503
    assert "s3cr3t" not in r.get_data(as_text=True) and "127.0.0.1" not in r.get_data(as_text=True)
    assert "http://127.0.0.1:9/calendar.git" in caplog.text  # the log names the remote, without its password
    assert "s3cr3t" not in caplog.text
    assert "s3cr3t" not in repr(a.service.settings)
    assert a.repo.count() == 0


# ----------------------------------------------------------------------------- the periodic pull


def test_the_periodic_pull_follows_the_remote(instance):
    a = instance("a", pull_interval=0.2)
    b = instance("b")
    b.create("Pulled by the timer")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and titles(a) != ["Pulled by the timer"]:
        time.sleep(0.1)
    assert titles(a) == ["Pulled by the timer"]
    assert a.repo.status() == ""


def test_a_replica_started_with_the_remote_unreachable_answers_503_until_it_has_content(instance, tmp_path):
    """Started while its remote cannot be reached, a new replica has nothing to serve: reads and
    writes answer 503 calendar-not-ready (never an empty calendar with 200) until a pull succeeds."""
    later = tmp_path / "later.git"  # not there yet: every fetch fails
    a = instance("a", git_remote=str(later))
    assert a.repo.count() == 0
    for path in ("/events", "/events/1", "/venues", "/categories"):
        r = a.admin.get(path)
        assert r.status_code == 503, (path, r.get_json())
        assert r.get_json()["code"] == "calendar-not-ready"
    assert a.create("Too early").status_code == 503
    assert a.app.test_client().get("/readyz").status_code == 503

    # the remote appears, with a calendar; the webhook pulls it and the replica serves it
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(later)], check=True)
    b = instance("b", git_remote=str(later))
    assert b.create("Served at last").status_code == 201
    assert a.hook().status_code == 200
    r = a.admin.get("/events?start_date=2000-01-01")
    assert r.status_code == 200 and [e["title"] for e in r.get_json()["events"]] == ["Served at last"]
    assert a.app.test_client().get("/readyz").status_code == 200

"""Replicas behind one network remote: force-pushes, creates racing across replicas, a hung
remote, change tokens and ETags from a replica that is ahead, updates that change nothing.

The remote is a bare repository served by ``git daemon`` on loopback (git://), started and
stopped by a fixture; two service instances (apps with their own content and index
directories) push to it and pull from it, an editor works in a plain clone. Nothing is mocked.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from calendar_service.config import Settings
from conftest import PASSWORDS, Client, Git
from servers import Server, git_daemon
from test_remote import Instance, instances  # noqa: F401  (fixture)

PER_REPLICA = 25  # concurrent creates sent to each replica


@pytest.fixture
def daemon(tmp_path):
    """A bare repository ``remote.git`` served by ``git daemon`` on 127.0.0.1 (push enabled);
    yields (git:// URL, path of the bare repository)."""
    base = tmp_path / "served"
    base.mkdir()
    bare = base / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    with git_daemon(base) as url:
        yield f"{url}/remote.git", bare


@pytest.fixture
def replica(instances):
    """``replica("a", url)`` -> a service instance following the remote ``url``."""
    return instances


def remote_titles(bare: Path) -> list[str]:
    remote = Git(bare)
    found = []
    for path in remote("ls-tree", "-r", "--name-only", "main", "--", "events").split():
        found.append(yaml.safe_load(remote("show", f"main:{path}").split("---")[1])["title"])
    return sorted(found)


def served_titles(inst: Instance) -> list[str]:
    r = inst.admin.get("/events?per_page=50&status=publish,draft&start_date=2000-01-01")
    assert r.status_code == 200, r.get_json()
    return sorted(e["title"] for e in r.get_json()["events"])


# ----------------------------------------------------------------------------- a force-push


def test_a_force_push_is_followed_and_never_undone(daemon, replica, tmp_path, caplog):
    url, bare = daemon
    a, b = replica("a", url), replica("b", url)
    assert a.create("Keep").status_code == 201
    assert a.create("Spam Event").status_code == 201
    assert b.hook().get_json()["moved"] is True
    assert served_titles(b) == ["Keep", "Spam Event"]
    editor = tmp_path / "editor"
    subprocess.run(["git", "clone", "-q", url, str(editor)], check=True, capture_output=True)
    editor = Git(editor)
    editor("reset", "-q", "--hard", "HEAD~1")
    editor("push", "-q", "-f", "origin", "main")
    dropped = b.repo.head()
    # meanwhile an editor committed in B's checkout: that commit never reached the remote
    b.repo.commit_file("venues/hall.yaml", "id: 90\nvenue: Hall\nslug: hall\n", "Add the hall by hand")
    caplog.set_level("WARNING", logger="calendar_service.storage.remote")
    r = b.hook()
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["moved"] is True and body["pushed"] is True and body["conflicts"] == []
    remote = Git(bare)
    assert remote("log", "--format=%s", "main").splitlines()[:1] == ["Add the hall by hand"]
    assert remote_titles(bare) == ["Keep"]  # the dropped commit was not pushed back
    assert served_titles(b) == ["Keep"] and b.admin.get("/venues/90").status_code == 200
    assert b.repo.head() == remote("rev-parse", "main").strip()
    kept = b.repo("for-each-ref", "--format=%(refname) %(objectname)", "refs/calendar/replaced/").split()
    assert len(kept) == 2 and kept[0].startswith("refs/calendar/replaced/") and kept[1] != dropped
    assert b.repo("rev-parse", kept[0] + "~1").strip() == dropped  # the old head (hall on top of the spam)
    assert "rewrote its history" in caplog.text
    assert b.repo.status() == ""
    # A never pulled: its next write does not bring the dropped commit back either
    r = a.create("After the cleanup")
    assert r.status_code == 201, r.get_json()
    assert remote_titles(bare) == ["After the cleanup", "Keep"]
    assert served_titles(a) == ["After the cleanup", "Keep"]
    # a second pull on B with nothing new does nothing
    body = b.hook().get_json()
    assert body["pushed"] is False and served_titles(b) == ["After the cleanup", "Keep"]


def test_a_force_push_with_nothing_local_just_moves_back(daemon, replica, tmp_path):
    url, bare = daemon
    a = replica("a", url)
    a.create("Keep")
    a.create("Spam Event")
    editor = tmp_path / "editor"
    subprocess.run(["git", "clone", "-q", url, str(editor)], check=True, capture_output=True)
    Git(editor)("reset", "-q", "--hard", "HEAD~1")
    Git(editor)("push", "-q", "-f", "origin", "main")
    body = a.hook().get_json()
    assert body == {"pulled": True, "head": Git(editor).head(), "moved": True, "pushed": False, "conflicts": []}
    assert served_titles(a) == ["Keep"] and remote_titles(bare) == ["Keep"]
    assert not (a.repo.root / "events/spam-event.md").exists()


# ----------------------------------------------------------------------------- creates under load


def test_concurrent_creates_on_two_replicas_all_succeed(daemon, tmp_path, users_template):
    """Two replicas as real gunicorn servers (2 workers each), PER_REPLICA concurrent creates on each:
    creates never conflict, so every one succeeds, however often it lost the race for the remote."""
    url, bare = daemon
    servers = []
    try:
        for name in ("a", "b"):
            users = tmp_path / f"users-{name}.yaml"
            shutil.copy(users_template, users)
            (tmp_path / name).mkdir()
            paths = {"content_dir": tmp_path / name / "content", "index_dir": tmp_path / name / "index",
                     "users_file": users}
            server = Server(paths, "gunicorn", workers=2,
                            extra_env={"CALENDAR_GIT_REMOTE": url, "CALENDAR_PULL_INTERVAL": "0"})
            servers.append(server)
            server.start(timeout=60)
        results: list[tuple[str, int, dict]] = []
        lock = threading.Lock()
        start = threading.Barrier(2 * PER_REPLICA)

        def create(server: Server, title: str):
            start.wait(60)
            for _ in range(50):   # a worker that has not fetched the calendar yet says so (503): retry
                status, body, _ = server.request("POST", "/events", {"title": title, "start_date": "tomorrow 10am",
                                                                     "end_date": "tomorrow 11am"},
                                                 auth=("administrator", PASSWORDS["administrator"]), timeout=120)
                if status != 503 or body.get("code") != "calendar-not-ready":
                    break
                time.sleep(0.2)
            with lock:
                results.append((title, status, body))

        threads = [threading.Thread(target=create, args=(server, f"{label} {n}"))
                   for label, server in zip("AB", servers) for n in range(PER_REPLICA)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    finally:
        for server in servers:
            server.kill()
    assert len(results) == 2 * PER_REPLICA
    failed = [(title, status, body) for title, status, body in results if status != 201]
    assert failed == []
    ids = [body["id"] for _, _, body in results]
    assert len(set(ids)) == 2 * PER_REPLICA
    assert remote_titles(bare) == sorted(title for title, _, _ in results)
    assert Git(bare)("rev-list", "--count", "main").strip() == str(2 * PER_REPLICA)


# ----------------------------------------------------------------------------- a hung remote


@pytest.fixture
def hung_remote():
    """A loopback TCP server that accepts connections and never answers; yields its git:// URL."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"git://127.0.0.1:{server.getsockname()[1]}/x"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def test_a_hung_remote_answers_503_within_the_timeout(hung_remote, replica, caplog):
    started = time.monotonic()
    a = replica("a", hung_remote, remote_timeout=1)
    assert time.monotonic() - started < 8  # the first pull at start gave up after the timeout
    assert "did not answer within 1 s" in caplog.text
    started = time.monotonic()
    r = a.create("Nowhere")
    elapsed = time.monotonic() - started
    assert r.status_code == 503, r.get_data(as_text=True)
    assert r.headers["Content-Type"].startswith("application/json")
    # a replica that never reached its remote and holds nothing is not ready: it says so at once
    assert r.get_json() == {"code": "calendar-not-ready", "message": r.get_json()["message"],
                            "data": {"status": 503}}
    assert elapsed < 8
    assert a.repo.count() == 0 and a.repo.status() == ""
    started = time.monotonic()
    assert a.hook().status_code == 503
    assert time.monotonic() - started < 8


def test_the_remote_timeout_setting():
    assert Settings.from_env({}).remote_timeout == 10
    assert Settings.from_env({"CALENDAR_REMOTE_TIMEOUT": "2.5"}).remote_timeout == 2.5
    with pytest.raises(ValueError, match="CALENDAR_REMOTE_TIMEOUT"):
        Settings.from_env({"CALENDAR_REMOTE_TIMEOUT": "0"})
    root = Path(__file__).resolve().parent.parent
    assert "`CALENDAR_REMOTE_TIMEOUT` | `10`" in (root / "docs" / "configuration.md").read_text()
    assert "gunicorn -w 4 --timeout 60 " in (root / "README.md").read_text()


# ----------------------------------------------------------------------------- change tokens


def test_a_token_from_a_replica_that_is_ahead_works_on_one_that_lags(daemon, replica):
    url, bare = daemon
    a, b = replica("a", url), replica("b", url)
    first = a.create("First").get_json()
    b.hook()
    token = b.admin.get("/changes").get_json()["next_token"]
    second = a.create("Second").get_json()
    ahead = a.admin.get(f"/changes?since={token}").get_json()
    assert ahead["changes"] == [{"type": "events", "id": second["id"], "action": "created"}]
    # B lags behind A: A's token is unknown to B until B fetches
    assert b.repo.head() == token != ahead["next_token"]
    r = b.admin.get(f"/changes?since={ahead['next_token']}")
    assert r.status_code == 200, r.get_json()
    assert r.get_json() == {"changes": [], "next_token": ahead["next_token"]}
    assert b.repo.head() == ahead["next_token"] and served_titles(b) == ["First", "Second"]
    assert first["id"] != second["id"]
    # a commit the remote never had stays a 410
    assert b.admin.get("/changes?since=" + "ab" * 20).status_code == 410


def test_a_token_from_rewritten_remote_history_is_410_on_every_replica(daemon, replica, tmp_path):
    url, bare = daemon
    a, b = replica("a", url), replica("b", url)
    a.create("Keep")
    a.create("Spam Event")
    token = a.admin.get("/changes").get_json()["next_token"]
    editor = tmp_path / "editor"
    subprocess.run(["git", "clone", "-q", url, str(editor)], check=True, capture_output=True)
    Git(editor)("reset", "-q", "--hard", "HEAD~1")
    Git(editor)("push", "-q", "-f", "origin", "main")
    assert b.admin.get(f"/changes?since={token}").status_code == 410  # B fetched: not in the remote's history
    assert a.hook().status_code == 200
    assert a.admin.get(f"/changes?since={token}").status_code == 410


# ----------------------------------------------------------------------------- ETags across replicas


def test_the_etag_does_not_depend_on_the_host(make_app):
    app = make_app(allowed_hosts=(".example.org", "localhost"))
    admin, anon = Client(app.test_client(), "administrator"), Client(app.test_client(), None)
    event = admin.post("/events", json={"title": "Hosted", "start_date": "tomorrow 10am",
                                        "end_date": "tomorrow 11am"}).get_json()
    path = f"/events/{event['id']}"
    one = anon.get(path, headers={"Host": "a.example.org"})
    two = anon.get(path, headers={"Host": "b.example.org:8080"})
    assert one.get_json()["rest_url"] != two.get_json()["rest_url"]  # the bodies differ by host...
    assert one.headers["ETag"] == two.headers["ETag"]                 # ...the tag does not
    r = admin.post(path, json={"title": "Renamed"}, headers={"Host": "c.example.org", "If-Match": one.headers["ETag"]})
    assert r.status_code == 200


def test_write_responses_carry_the_new_etag(admin, anon, factory):
    r = admin.post("/events", json={"title": "Tagged", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am"})
    assert r.status_code == 201
    created = r.headers["ETag"]
    path = f"/events/{r.get_json()['id']}"
    assert anon.get(path).headers["ETag"] == created
    r = admin.post(path, json={"title": "Tagged again"}, headers={"If-Match": created})
    assert r.status_code == 200 and r.headers["ETag"] != created
    assert anon.get(path).headers["ETag"] == r.headers["ETag"]
    venue = factory.venue()
    r = admin.delete(f"/venues/{venue['id']}")
    assert r.status_code == 200 and r.headers["ETag"] == admin.get(f"/venues/{venue['id']}").headers["ETag"]
    r = admin.post("/tags", json={"name": "Loud"})
    assert r.status_code == 201 and r.headers["ETag"] == anon.get(f"/tags/{r.get_json()['id']}").headers["ETag"]


def test_an_etag_from_one_replica_holds_on_the_other_and_a_stale_one_is_412_on_both(daemon, replica):
    url, bare = daemon
    a, b = replica("a", url, allowed_hosts=(".example.org", "localhost")), replica("b", url, allowed_hosts=(".example.org", "localhost"))
    event = a.create("Shared").get_json()
    path = f"/events/{event['id']}"
    b.hook()
    first = a.admin.get(path, headers={"Host": "a.example.org"}).headers["ETag"]
    assert b.admin.get(path, headers={"Host": "b.example.org"}).headers["ETag"] == first
    # A changes the record; B lags (no pull)
    r = a.admin.post(path, json={"title": "By A"}, headers={"If-Match": first})
    assert r.status_code == 200
    second = r.headers["ETag"]
    # the stale tag: 412 on A, and 412 on B too (not a 409), nothing committed anywhere
    remote_head = Git(bare)("rev-parse", "main").strip()
    r = a.admin.post(path, json={"title": "Stale on A"}, headers={"If-Match": first})
    assert r.status_code == 412 and r.get_json()["code"] == "rest_precondition_failed"
    r = b.admin.post(path, json={"title": "Stale on B"}, headers={"If-Match": first})
    assert r.status_code == 412, r.get_json()
    assert r.get_json()["code"] == "rest_precondition_failed"
    assert Git(bare)("rev-parse", "main").strip() == remote_head
    assert b.repo("for-each-ref", "refs/calendar/conflicts/") == ""
    # A's new tag is valid on B (which lagged: it pulls to check it)
    c = replica("c", url)
    c_before = c.repo.head()
    a.admin.post(path, json={"title": "By A again"})
    third = a.admin.get(path).headers["ETag"]
    assert c.repo.head() == c_before
    r = c.admin.post(path, json={"title": "By C"}, headers={"If-Match": third})
    assert r.status_code == 200, r.get_json()
    assert remote_titles(bare) == ["By C"]
    assert second != third


# ----------------------------------------------------------------------------- no empty commits


def test_an_update_that_changes_nothing_makes_no_commit(admin, repo, factory):
    event = factory.event(title="Same", venue={"venue": "Hall"}, categories=["Rock"])
    path = f"/events/{event['id']}"
    before, body = repo.count(), admin.get(path).get_json()
    tag = admin.get(path).headers["ETag"]
    r = admin.post(path, json={"title": "Same", "categories": [event["categories"][0]["id"]],
                               "venue": event["venue"]["id"]}, headers={"If-Match": tag})
    assert r.status_code == 200, r.get_json()
    assert r.headers["ETag"] == tag and admin.get(path).get_json() == body
    assert r.get_json()["modified"] == body["modified"] and r.get_json()["title"] == "Same"
    assert repo.count() == before
    r = admin.post(path, json={})
    assert r.status_code == 200 and repo.count() == before
    for kind, key in (("venues", "venue"), ("tags", "name")):
        target = f"/{kind}/{event['venue']['id'] if kind == 'venues' else factory.tag()['id']}"
        count = repo.count()
        value = admin.get(target).get_json()[key]
        assert admin.post(target, json={key: value}).status_code == 200
        assert repo.count() == count, kind
    r = admin.post(path, json={"title": "Changed"})
    assert r.status_code == 200 and repo.count() == before + 2  # the tag above is one commit
    assert r.get_json()["title"] == "Changed"

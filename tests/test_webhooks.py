"""Outbound webhooks: subscriptions, deliveries of every commit that reaches the branch
(API write, editor commit, pull), Standard Webhooks signatures checked by the ``standardwebhooks``
library in a real receiving server on loopback, retries, automatic disabling, the guard against
server-side request forgery, and delivery across a kill -9 and by one of two processes only.
Every test runs with the state in SQLite and in PostgreSQL (a real server: tests/postgres.py).
"""
from __future__ import annotations

import http.server
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from calendar_service import create_app
from calendar_service.http.app import close_app
from conftest import PASSWORDS, Client, Git
from servers import Server
from test_remote import bare, editor_clone, instance, instances, remote_url  # noqa: F401 (fixtures)

FAST = {"webhook_allow_private": ("127.0.0.0/8",), "webhook_poll": 0.05, "webhook_backoff": 0.1,
        "webhook_backoff_max": 0.4, "webhook_lease": 2.0, "webhook_timeout": 1.0}
FAST_ENV = {"CALENDAR_WEBHOOK_ALLOW_PRIVATE": "127.0.0.0/8", "CALENDAR_WEBHOOK_POLL": "0.05",
            "CALENDAR_WEBHOOK_BACKOFF": "0.1", "CALENDAR_WEBHOOK_BACKOFF_MAX": "0.4",
            "CALENDAR_WEBHOOK_LEASE": "2", "CALENDAR_WEBHOOK_TIMEOUT": "1"}
EVENT = {"start_date": "2030-05-01 10:00", "end_date": "2030-05-01 12:00", "status": "publish"}


class Receiver:
    """An HTTP server on loopback that verifies every delivery with ``standardwebhooks``.

    ``secrets`` maps a path to the subscription's secret; ``answers`` (per path) is a list of
    statuses to answer in turn (then 200); ``delay`` holds each request that long. Every request
    is recorded: path, headers, body, whether it verified, start and end times."""

    def __init__(self):
        self.secrets: dict[str, str] = {}
        self.answers: dict[str, list] = {}
        self.delay = 0.0
        self.got: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                start = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(receiver.delay)
                headers = dict(self.headers.items())
                try:
                    payload = Webhook(receiver.secrets[self.path]).verify(body, headers)
                except (KeyError, WebhookVerificationError):
                    payload = None
                with receiver.lock:
                    queue = receiver.answers.get(self.path) or []
                    status = queue.pop(0) if queue else 200
                    receiver.got.append({"path": self.path, "headers": {k.lower(): v for k, v in headers.items()},
                                         "payload": payload, "verified": payload is not None, "status": status,
                                         "start": start, "end": time.monotonic()})
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", f"http://127.0.0.1:{receiver.port}/redirected")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def ok(self, path: str) -> list[dict]:
        """The verified, acknowledged deliveries to ``path``, in arrival order."""
        with self.lock:
            return [g for g in self.got if g["path"] == path and g["verified"] and g["status"] == 200]

    def to(self, path: str) -> list[dict]:
        with self.lock:
            return [g for g in self.got if g["path"] == path]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=["sqlite", "postgresql"])
def paths(paths, request):
    """This test's paths, with the state in SQLite (``state_dir``) or in a fresh PostgreSQL database."""
    if request.param == "postgresql":
        return {**paths, "state_url": request.getfixturevalue("state_url")}
    return paths


def state_env(paths: dict) -> dict:
    """The environment that puts a server's state where ``paths`` says."""
    return {"CALENDAR_STATE_URL": paths["state_url"]} if paths.get("state_url") else {}


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    made.close()


def wait_for(condition, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def hooked(make_app):
    """An app with fast webhook settings (loopback allowed); closed at the end."""
    built = []

    def build(**overrides):
        app = make_app(**{**FAST, **overrides})
        built.append(app)
        return app
    yield build
    for app in built:
        close_app(app)


def subscribe(client: Client, receiver: Receiver, path: str, **body) -> dict:
    r = client.post("/subscriptions", json={"url": receiver.url(path), **body})
    assert r.status_code == 201, r.get_json()
    found = r.get_json()
    assert found["secret"].startswith("whsec_")
    receiver.secrets[path] = found["secret"]
    return found


def commits_after(repo: Git, base: str) -> list[str]:
    return repo("rev-list", "--first-parent", "--reverse", f"{base}..HEAD").split()


# ----------------------------------------------------------------------------- producing and delivering

def test_api_writes_are_delivered_signed_in_commit_order(hooked, receiver, repo):
    app = hooked()
    editor, admin = Client(app.test_client(), "editor"), Client(app.test_client(), "administrator")
    base = repo.head() if repo.count() else None
    sub = subscribe(editor, receiver, "/a")
    ids = [admin.post("/events", json={"title": f"Talk {n}", **EVENT}).get_json()["id"] for n in range(3)]
    admin.post(f"/events/{ids[0]}", json={"title": "Talk zero"})
    admin.delete(f"/events/{ids[1]}")
    commits = commits_after(repo, base) if base else repo("rev-list", "--reverse", "HEAD").split()
    got = wait_for(lambda: len(receiver.ok("/a")) >= 5 and receiver.ok("/a"), what="five deliveries")
    assert [g["payload"]["data"]["commit"] for g in got] == commits[-5:]
    assert [g["payload"]["data"]["changes"] for g in got] == (
        [[{"type": "events", "id": i, "action": "created", "commit": c}] for i, c in zip(ids, commits[-5:])]
        + [[{"type": "events", "id": ids[0], "action": "updated", "commit": commits[-2]}],
           [{"type": "events", "id": ids[1], "action": "deleted", "commit": commits[-1]}]])
    assert all(g["payload"]["type"] == "calendar.changed" for g in got)
    assert len({g["headers"]["webhook-id"] for g in got}) == 5
    # the log shows them delivered; the secret is shown once, never again
    # (the receiver records a request before its answer reaches the sender, which then marks it)
    log = wait_for(lambda: (found := editor.get(f"/subscriptions/{sub['id']}/deliveries").get_json())
                   and all(d["status"] == "delivered" for d in found["deliveries"]) and found, what="the log")
    assert log["total"] == 5
    assert [d["commit"] for d in log["deliveries"]] == commits[-5:][::-1]
    shown = editor.get(f"/subscriptions/{sub['id']}").get_data(as_text=True)
    assert sub["secret"] not in shown and sub["secret"] not in editor.get("/subscriptions").get_data(as_text=True)
    if not app.extensions["calendar"].settings.state_url:
        state = app.extensions["calendar"].settings.state_dir / "webhooks.sqlite3"
        assert state.stat().st_mode & 0o777 == 0o600
    assert sub["secret"] not in "".join(p.read_text(errors="replace") for p in repo.root.rglob("*") if p.is_file())


def test_editor_commits_and_a_reset_branch_are_delivered(hooked, receiver, repo, factory):
    app = hooked()
    admin = Client(app.test_client(), "administrator")
    factory.venue(venue="Before")  # the repository has a commit before the subscription
    subscribe(admin, receiver, "/git")
    text = "---\nid: 500\ntitle: By hand\nstatus: publish\nstart_date: '2030-05-01 10:00:00'\n" \
           "end_date: '2030-05-01 12:00:00'\n---\nWritten by hand.\n"
    repo.commit_file("events/by-hand.md", text, "Add an event by hand")
    added = repo.head()
    got = wait_for(lambda: receiver.ok("/git"), what="the editor's commit")
    assert got[0]["payload"]["data"]["changes"] == [{"type": "events", "id": 500, "action": "created",
                                                     "commit": added}]
    repo("reset", "-q", "--hard", "HEAD~1")  # the commit is dropped from the branch
    got = wait_for(lambda: len(receiver.ok("/git")) >= 2 and receiver.ok("/git"), what="the reset")
    data = got[1]["payload"]["data"]
    assert data["replaced"] == added and data["commit"] == repo.head()
    assert data["changes"] == [{"type": "events", "id": 500, "action": "deleted", "commit": repo.head()}]


def test_a_pull_from_the_remote_is_delivered(instance, receiver, bare, tmp_path, paths):
    a = instance("a", state_dir=tmp_path / "state-a", state_url=paths.get("state_url", ""), **FAST)
    a.create("First")
    subscribe(a.admin, receiver, "/pull")
    clone = editor_clone(bare, tmp_path / "editor")
    path = next(p for p in clone("ls-files").split() if p.startswith("events/"))
    clone.commit_file(path, (clone.root / path).read_text().replace("First", "First, renamed"), "Rename by hand")
    clone("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code == 200
    got = wait_for(lambda: receiver.ok("/pull"), what="the pulled commit")
    event_id = yaml.safe_load((clone.root / path).read_text().split("---")[1])["id"]
    assert got[0]["payload"]["data"]["changes"] == [{"type": "events", "id": event_id, "action": "updated",
                                                     "commit": clone.head()}]


def test_records_an_owner_cannot_read_are_never_announced(hooked, receiver, paths):
    app = hooked()
    admin, editor = Client(app.test_client(), "administrator"), Client(app.test_client(), "editor")
    subscribe(admin, receiver, "/admin")
    subscribe(editor, receiver, "/demoted")
    users = yaml.safe_load(paths["users_file"].read_text())
    for entry in users["users"]:
        if entry["login"] == "editor":
            entry["role"] = "subscriber"  # the owner loses the right to read drafts
    paths["users_file"].write_text(yaml.safe_dump(users, sort_keys=False))
    draft = admin.post("/events", json={"title": "Secret plan", **EVENT, "status": "draft"}).get_json()
    admin.post(f"/events/{draft['id']}", json={"status": "publish"})
    wait_for(lambda: len(receiver.ok("/admin")) >= 2, what="the administrator's deliveries")
    time.sleep(0.3)
    admin_changes = [g["payload"]["data"]["changes"][0]["action"] for g in receiver.ok("/admin")]
    assert admin_changes == ["created", "updated"]
    demoted = receiver.ok("/demoted")
    assert [g["payload"]["data"]["changes"][0]["action"] for g in demoted] == ["created"]  # at publishing only
    assert demoted[0]["payload"]["data"]["commit"] == receiver.ok("/admin")[1]["payload"]["data"]["commit"]


def test_filters_by_type_category_and_tag(hooked, receiver, factory):
    app = hooked()
    admin = Client(app.test_client(), "administrator")
    music, jazz = factory.category(name="Music"), factory.tag(name="Jazz")
    subscribe(admin, receiver, "/venues", types=["venues"])
    subscribe(admin, receiver, "/music", categories=["music"])
    subscribe(admin, receiver, "/jazz", tags=[jazz["id"]])
    r = admin.post("/subscriptions", json={"url": receiver.url("/x"), "types": ["events", "speakers"]})
    assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param" and "types" in r.get_json()["data"]["params"]
    assert admin.post("/subscriptions", json={"url": receiver.url("/x"), "categories": [99999]}).status_code == 400
    plain = admin.post("/events", json={"title": "Plain", **EVENT}).get_json()
    in_music = admin.post("/events", json={"title": "Concert", **EVENT, "categories": [music["id"]]}).get_json()
    tagged = admin.post("/events", json={"title": "Session", **EVENT, "tags": [jazz["id"]]}).get_json()
    venue = factory.venue(venue="Hall")
    wait_for(lambda: receiver.ok("/venues"), what="the venue")
    time.sleep(0.3)
    ids = {p: [c["id"] for g in receiver.ok(p) for c in g["payload"]["data"]["changes"]]
           for p in ("/venues", "/music", "/jazz")}
    assert ids == {"/venues": [venue["id"]], "/music": [in_music["id"]], "/jazz": [tagged["id"]]}
    assert plain["id"] not in sum(ids.values(), [])


# ----------------------------------------------------------------------------- failures

def test_retries_back_off_keep_the_webhook_id_and_hold_later_commits(hooked, receiver):
    app = hooked()
    admin = Client(app.test_client(), "administrator")
    sub = subscribe(admin, receiver, "/flaky")
    receiver.answers["/flaky"] = [500, 503, 500]
    first = admin.post("/events", json={"title": "One", **EVENT}).get_json()
    second = admin.post("/events", json={"title": "Two", **EVENT}).get_json()
    got = wait_for(lambda: len(receiver.ok("/flaky")) >= 2 and receiver.ok("/flaky"), what="both deliveries")
    attempts = receiver.to("/flaky")
    assert [a["status"] for a in attempts] == [500, 503, 500, 200, 200]
    assert len({a["headers"]["webhook-id"] for a in attempts[:4]}) == 1  # one delivery, retried
    assert [g["payload"]["data"]["changes"][0]["id"] for g in got] == [first["id"], second["id"]]  # in order
    gaps = [b["start"] - a["start"] for a, b in zip(attempts, attempts[1:4])]
    assert gaps[0] >= 0.09 and gaps[1] >= 0.18 and gaps[2] >= 0.35, gaps  # 0.1, 0.2, 0.4 s
    log = wait_for(lambda: (found := admin.get(f"/subscriptions/{sub['id']}/deliveries").get_json()["deliveries"])
                   and all(d["status"] == "delivered" for d in found) and found, what="the log")
    assert [(d["status"], d["attempts"]) for d in log] == [("delivered", 1), ("delivered", 4)]
    assert log[1]["last_error"] is None and log[1]["last_status_code"] == 200


class Hanging:
    """A receiver on loopback that accepts connections and never answers (until closed)."""

    def __init__(self):
        import socket
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self):
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def test_a_hanging_receiver_does_not_delay_a_healthy_one(hooked, receiver):
    hanging = Hanging()
    try:
        app = hooked(webhook_timeout=8.0, webhook_lease=12.0, webhook_backoff=30.0)
        admin = Client(app.test_client(), "administrator")
        # the hanging subscription is older: its delivery is due first
        r = admin.post("/subscriptions", json={"url": f"http://127.0.0.1:{hanging.port}/hook"})
        assert r.status_code == 201, r.get_json()
        subscribe(admin, receiver, "/healthy")
        ids = []
        started = time.monotonic()
        for n in range(3):  # three commits: the healthy one gets all three, in order, while the other hangs
            ids.append(admin.post("/events", json={"title": f"Talk {n}", **EVENT}).get_json()["id"])
        got = wait_for(lambda: len(receiver.ok("/healthy")) >= 3 and receiver.ok("/healthy"), timeout=20,
                       what="the healthy receiver's deliveries")
        took = time.monotonic() - started
        print(f"\nhealthy receiver: 3 deliveries {took:.2f} s after the first write, another receiver hanging")
        assert took < 3.0, took
        assert wait_for(lambda: hanging.accepted, what="the hanging receiver's connection")
        assert len(hanging.accepted) == 1  # its own deliveries wait for the one under way: commit order
        assert [g["payload"]["data"]["changes"][0]["id"] for g in got] == ids
    finally:
        hanging.close()


def test_a_run_of_failures_disables_and_put_enables_again(hooked, receiver):
    app = hooked(webhook_max_failures=3)
    admin = Client(app.test_client(), "administrator")
    sub = subscribe(admin, receiver, "/down")
    receiver.answers["/down"] = [500] * 3
    admin.post("/events", json={"title": "Lost?", **EVENT})
    found = wait_for(lambda: (s := admin.get(f"/subscriptions/{sub['id']}").get_json()) and not s["enabled"] and s,
                     what="the subscription disabled")
    assert found["consecutive_failures"] == 3 and "3 consecutive failed" in found["disabled_reason"]
    time.sleep(0.6)
    assert len(receiver.to("/down")) == 3  # no more attempts while disabled
    log = admin.get(f"/subscriptions/{sub['id']}/deliveries").get_json()["deliveries"]
    assert log[0]["status"] == "retrying" and log[0]["last_error"] == "HTTP 500" and log[0]["attempts"] == 3
    r = admin.put(f"/subscriptions/{sub['id']}", json={"enabled": True})
    assert r.status_code == 200 and r.get_json()["enabled"] and r.get_json()["consecutive_failures"] == 0
    wait_for(lambda: receiver.ok("/down"), what="the queued delivery after re-enabling")


def test_targets_are_checked_against_request_forgery(hooked, receiver, make_app):
    app = hooked(webhook_allow_private=())
    admin = Client(app.test_client(), "administrator")
    for url, reason in [(receiver.url("/x"), "127.0.0.1"), (f"http://localhost:{receiver.port}/x", "localhost"),
                        ("http://[::ffff:127.0.0.1]/", "127.0.0.1"), ("http://169.254.169.254/latest", "169.254"),
                        ("http://10.1.2.3/", "10.1.2.3"), ("http://0.0.0.0/", "0.0.0.0"), ("http://[::1]/", "::1"),
                        ("ftp://example.org/", "http and https"), ("http://u:hunter2@example.org/", "user name"),
                        ("http:///nohost", "no host"),
                        # special-purpose blocks Python counts as global: relays, anycast, NAT64, documentation
                        ("http://192.0.0.9/", "192.0.0.9"), ("http://192.0.0.170/", "192.0.0.170"),
                        ("http://192.88.99.1/", "192.88.99.1"), ("http://192.31.196.1/", "192.31.196.1"),
                        ("http://192.52.193.1/", "192.52.193.1"), ("http://192.175.48.1/", "192.175.48.1"),
                        ("http://[64:ff9b::a01:203]/", "64:ff9b::a01:203"), ("http://[64:ff9b:1::1]/", "64:ff9b:1::1"),
                        ("http://[2620:4f:8000::1]/", "2620:4f:8000::1"), ("http://[3fff::1]/", "3fff::1"),
                        ("http://[5f00::1]/", "5f00::1"), ("http://[2002:c058:6301::1]/", "2002:c058:6301::1")]:
        r = admin.post("/subscriptions", json={"url": url})
        body = r.get_json()
        assert r.status_code == 400 and body["code"] == "rest_invalid_param", (url, body)
        assert reason in body["data"]["params"]["url"], (url, body)
        assert "hunter2" not in r.get_data(as_text=True)
    assert admin.get("/subscriptions").get_json()["total"] == 0


def test_the_target_is_checked_again_at_each_delivery_and_redirects_are_not_followed(hooked, receiver, paths):
    app = hooked()
    admin = Client(app.test_client(), "administrator")
    receiver.answers["/moved"] = [302] * 10
    moved = subscribe(admin, receiver, "/moved")
    admin.post("/events", json={"title": "One", **EVENT})
    wait_for(lambda: len(receiver.to("/moved")) >= 2, what="two attempts")
    assert not receiver.to("/redirected")
    log = admin.get(f"/subscriptions/{moved['id']}/deliveries").get_json()["deliveries"]
    assert log[0]["last_error"] == "HTTP 302 (redirects are not followed)"
    close_app(app)
    # the same state, now without loopback allowed: the queued delivery is refused before connecting
    receiver.got.clear()
    again = hooked(webhook_allow_private=())
    admin = Client(again.test_client(), "administrator")
    wait_for(lambda: "loopback" in (admin.get(f"/subscriptions/{moved['id']}/deliveries").get_json()
                                    ["deliveries"][0]["last_error"] or ""), what="the refusal at delivery")
    assert not receiver.got


def test_subscriptions_are_for_editors_and_administrators(hooked, receiver):
    app = hooked()
    client = app.test_client()
    admin, editor, author, anon = (Client(client, role) for role in ("administrator", "editor", "author", None))
    assert anon.get("/subscriptions").status_code == 401
    r = author.post("/subscriptions", json={"url": receiver.url("/x")})
    assert r.status_code == 403 and r.get_json()["code"] == "rest_forbidden"
    mine = subscribe(editor, receiver, "/editor")
    theirs = subscribe(admin, receiver, "/admin")
    assert [s["id"] for s in editor.get("/subscriptions").get_json()["subscriptions"]] == [mine["id"]]
    assert [s["id"] for s in admin.get("/subscriptions").get_json()["subscriptions"]] == [mine["id"], theirs["id"]]
    assert editor.get(f"/subscriptions/{theirs['id']}").status_code == 404
    assert editor.delete(f"/subscriptions/{theirs['id']}").status_code == 404
    r = editor.post("/subscriptions", json={"types": ["events"]})
    assert r.status_code == 400 and r.get_json()["code"] == "rest_missing_callback_param"
    assert admin.delete(f"/subscriptions/{mine['id']}").status_code == 200
    assert editor.get("/subscriptions").get_json()["total"] == 0


# ----------------------------------------------------------------------------- real processes

def _server(paths: dict, state: Path, kind: str = "app", workers: int = 1, **env: str) -> Server:
    return Server(paths, kind=kind, workers=workers,
                  extra_env={**FAST_ENV, "CALENDAR_STATE_DIR": str(state), **state_env(paths), **env})


def test_kill_9_of_the_sender_loses_no_delivery_and_repeats_keep_their_id(paths, receiver, tmp_path):
    state = tmp_path / "state"
    editor = ("editor", PASSWORDS["editor"])
    server = _server(paths, state).start()
    try:
        status, body, _ = server.request("POST", "/subscriptions", {"url": receiver.url("/kill")}, auth=editor)
        assert status == 201, body
        receiver.secrets["/kill"] = body["secret"]
        receiver.delay = 0.3  # the queue is still full when the kill comes
        for n in range(6):
            assert server.request("POST", "/events", {"title": f"Before {n}", **EVENT}, auth=editor)[0] == 201
        wait_for(lambda: receiver.to("/kill"), what="the first delivery")
        server.kill()  # SIGKILL mid-stream
        assert len(receiver.to("/kill")) < 6
        receiver.delay = 0.02
        server = _server(paths, state).start()
        for n in range(4):
            assert server.request("POST", "/events", {"title": f"After {n}", **EVENT}, auth=editor)[0] == 201
        server.proc.send_signal(signal.SIGTERM)  # and a plain restart
        server.proc.wait(timeout=10)
        server = _server(paths, state).start()
        assert server.request("POST", "/events", {"title": "Last", **EVENT}, auth=editor)[0] == 201
        commits = Git(paths["content_dir"])("rev-list", "--reverse", "HEAD").split()
        wait_for(lambda: {g["payload"]["data"]["commit"] for g in receiver.ok("/kill")} >= set(commits[-11:]),
                 timeout=30, what="every commit delivered")
    finally:
        server.kill()
    by_commit: dict = {}
    for g in receiver.to("/kill"):
        assert g["verified"]
        by_commit.setdefault(g["payload"]["data"]["commit"], set()).add(g["headers"]["webhook-id"])
    assert set(by_commit) == set(commits[-11:])
    assert all(len(ids) == 1 for ids in by_commit.values()), by_commit  # a repeat has the same webhook-id
    order = [g["payload"]["data"]["commit"] for g in receiver.ok("/kill")]
    assert sorted(set(order), key=order.index) == commits[-11:]  # first arrivals in commit order


def test_two_processes_sharing_the_state_never_both_deliver(paths, receiver, tmp_path):
    state = tmp_path / "state"
    admin = ("administrator", PASSWORDS["administrator"])
    # one delivery worker per process: any two deliveries overlapping in time come from two processes
    server = _server(paths, state, kind="gunicorn", workers=2, CALENDAR_WEBHOOK_WORKERS="1").start()
    try:
        for name in ("/one", "/two", "/three"):
            status, body, _ = server.request("POST", "/subscriptions", {"url": receiver.url(name)}, auth=admin)
            assert status == 201, body
            receiver.secrets[name] = body["secret"]
        receiver.delay = 0.05
        for n in range(5):
            assert server.request("POST", "/events", {"title": f"Talk {n}", **EVENT}, auth=admin)[0] == 201
        wait_for(lambda: all(len(receiver.ok(p)) >= 5 for p in ("/one", "/two", "/three")), timeout=30,
                 what="every delivery")
        pids = subprocess.run(["pgrep", "-g", str(server.proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(pids) >= 3  # the master and two workers, each with a delivery thread
    finally:
        server.kill()
    got = sorted(receiver.got, key=lambda g: g["start"])
    assert len(got) == 15 and len({g["headers"]["webhook-id"] for g in got}) == 15  # each exactly once
    for a, b in zip(got, got[1:]):
        assert b["start"] >= a["end"] - 0.005, "two deliveries overlapped: two processes delivered at once"

"""The service's state database on SQLite and on PostgreSQL (a real server, tests/postgres.py):
the limits on guessing hold across processes and instances sharing it, a state database that
cannot be reached answers 503 (never an unlimited guess) and comes back by itself, two
processes that both believe they deliver never attempt the same delivery, and the URL's
password is never shown.
"""
from __future__ import annotations

import base64
import logging
import multiprocessing
import sqlite3
import time
from urllib.parse import urlsplit

import pytest

from calendar_service.auth.limits import AttemptLimiter
from calendar_service.config import Settings
from calendar_service.http.app import close_app
from calendar_service.storage.state import SWEEP_EVERY, StateDB
from conftest import API, PASSWORDS, Client
from servers import Server
from test_webhooks import EVENT, FAST, Receiver, wait_for


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path) -> dict:
    """Where this test keeps the state: ``{"state_dir": ...}`` or ``{"state_dir": ..., "state_url": ...}``."""
    found = {"state_dir": tmp_path / "state"}
    if request.param == "postgresql":
        found["state_url"] = request.getfixturevalue("state_url")
    return found


def env_of(backend: dict, **more: str) -> dict:
    env = {"CALENDAR_STATE_DIR": str(backend["state_dir"]), **more}
    if backend.get("state_url"):
        env["CALENDAR_STATE_URL"] = backend["state_url"]
    return env


def instances(paths: dict, backend: dict, count: int = 2, workers: int = 2, **env: str) -> list[Server]:
    """``count`` gunicorn instances of ``workers`` workers each, sharing the content and the state."""
    started = []
    try:
        for _ in range(count):
            started.append(Server(paths, kind="gunicorn", workers=workers, extra_env=env_of(backend, **env)).start())
    except BaseException:
        for server in started:
            server.kill()
        raise
    return started


def each_process(servers: list[Server], call, times: int = 6) -> list:
    """``call(server)`` several times on every instance (the connections spread over its workers)."""
    return [call(server) for server in servers for _ in range(times)]


# ----------------------------------------------------------------------------- the limits, shared

def test_sign_in_limits_hold_across_instances_and_workers(paths, backend):
    servers = instances(paths, backend, CALENDAR_LOGIN_ATTEMPTS="4", CALENDAR_LOGIN_ADDRESS_ATTEMPTS="0")
    try:
        wrong = ("editor", "wrong")
        for n in range(4):  # the attempts spread over two instances and their workers
            assert servers[n % 2].request("GET", "/events", auth=wrong)[0] == 401
        answers = each_process(servers, lambda s: s.request("GET", "/events", auth=wrong))
        assert {status for status, _, _ in answers} == {429}, [a[0] for a in answers]
        assert all(body["code"] == "rest_too_many_requests" for _, body, _ in answers)
        # locked: the right password too, on every instance; other logins are not affected
        right = each_process(servers, lambda s: s.request("GET", "/events", auth=("editor", PASSWORDS["editor"])))
        assert {status for status, _, _ in right} == {429}
        other = each_process(servers, lambda s: s.request("GET", "/events", auth=("author", PASSWORDS["author"])))
        assert {status for status, _, _ in other} == {200}
    finally:
        for server in servers:
            server.kill()


def test_event_password_limits_hold_across_instances_and_workers(paths, backend):
    servers = instances(paths, backend, CALENDAR_EVENT_PASSWORD_ATTEMPTS="3")
    admin = ("administrator", PASSWORDS["administrator"])
    try:
        status, event, _ = servers[0].request("POST", "/events", {"title": "Locked", "password": "s3cret", **EVENT},
                                              auth=admin)
        assert status == 201, event
        path = f"/events/{event['id']}?password="
        for n in range(3):
            status, body, _ = servers[n % 2].request("GET", path + f"guess-{n}")
            assert status == 403 and body["code"] == "event-password-protected"
        answers = each_process(servers, lambda s: s.request("GET", path + "guess-again"))
        assert {status for status, _, _ in answers} == {429}
        assert {s.request("GET", path + "s3cret")[0] for s in servers for _ in range(4)} == {429}
        assert {s.request("GET", "/events")[0] for s in servers} == {200}  # reading stays open
    finally:
        for server in servers:
            server.kill()


def _create_at_once(directory: str, barrier, answers) -> None:
    db = StateDB(directory)
    try:
        barrier.wait(timeout=20)
        with db.write(create=True):
            pass
        answers.put("ok")
    except Exception as exc:   # reported to the test, which names it
        answers.put(repr(exc))
    finally:
        db.close()


def test_processes_creating_the_sqlite_database_at_once_all_get_it(tmp_path):
    """Two gunicorn workers' first writes both create the file and switch it to WAL; SQLite tells
    the one that loses that race "database is locked" at once, without waiting (one in ~12
    rounds of three here before the switch was retried)."""
    context = multiprocessing.get_context("fork")
    failed = []
    for round_ in range(100):
        barrier, answers = context.Barrier(3), context.Queue()
        processes = [context.Process(target=_create_at_once, args=(str(tmp_path / str(round_)), barrier, answers))
                     for _ in range(3)]
        for p in processes:
            p.start()
        for p in processes:
            p.join(timeout=30)
            if p.is_alive():   # never left behind, whatever went wrong
                p.kill()
        failed += [a for a in (answers.get(timeout=5) for _ in processes) if a != "ok"]
    assert not failed, failed[:3]


def test_failures_are_stored_hashed_and_bounded(backend):
    db = StateDB(backend["state_dir"], backend.get("state_url", ""))
    limiter = AttemptLimiter(2, 300, size=100, state=db, kind="login")
    try:
        assert not db.exists() or backend.get("state_url")  # SQLite: made by the first failure, not before
        for i in range(1000):
            limiter.failed(f"login-{i}")
        assert len(limiter) <= 100 + SWEEP_EVERY  # swept now and then: the oldest keys go
        assert limiter.retry_after("login-999") == 0  # one failure: not locked
        limiter.failed("login-999")
        assert 299 <= limiter.retry_after("login-999") <= 300
        assert limiter.retry_after("login-0") == 0   # dropped with the oldest
        if not backend.get("state_url"):
            rows = sqlite3.connect(db.path).execute("SELECT kind, key FROM failures").fetchall()
        else:
            import psycopg
            with psycopg.connect(backend["state_url"]) as conn:
                rows = conn.execute("SELECT kind, key FROM failures").fetchall()
        assert rows and all(len(key) == 64 and "login" not in key for _, key in rows)
    finally:
        db.close()


# ----------------------------------------------------------------------------- PostgreSQL down

def test_postgres_down_fails_closed_and_comes_back_by_itself(make_app, own_postgres, caplog):
    url = own_postgres.new_database()
    app = make_app(state_url=url, login_attempts=3)
    client = app.test_client()
    editor, admin = Client(client, "editor"), Client(client, "administrator")
    try:
        assert editor.get("/events").status_code == 200
        status = admin.get("/status").get_json()["state"]
        assert status["kind"] == "postgresql" and status["reachable"] is True
        assert "pg-secret-word" not in admin.get("/status").get_data(as_text=True)
        own_postgres.stop()
        caplog.set_level(logging.INFO)
        for _ in range(3):
            r = editor.get("/events")
            assert r.status_code == 503, r.get_json()
            assert r.get_json() == {"code": "calendar-state-unavailable", "data": {"status": 503},
                                    "message": "The service's state database cannot be reached. Try again shortly."}
            assert int(r.headers["Retry-After"]) > 0
        wrong = base64.b64encode(b"author:wrong").decode()
        assert client.get(API + "/events", headers={"Authorization": "Basic " + wrong}).status_code == 503
        assert client.get(API + "/events").status_code == 200  # anonymous reads are unaffected
        assert admin.get("/subscriptions").status_code == 503
        down = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
        assert len(down) == 1, [r.getMessage() for r in down]  # once per outage
        assert all("pg-secret-word" not in r.getMessage() for r in caplog.records)
        own_postgres.start()
        assert editor.get("/events").status_code == 200  # by itself: the next call reconnects
        for _ in range(3):
            assert client.get(API + "/events", headers={"Authorization": "Basic " + wrong}).status_code == 401
        assert editor.get("/events").status_code == 200  # the count is per login
        assert client.get(API + "/events", headers={"Authorization": "Basic " + wrong}).status_code == 429
    finally:
        close_app(app)


def test_the_url_is_checked_and_its_password_never_shown(paths):
    with pytest.raises(ValueError, match="CALENDAR_STATE_URL"):
        Settings.from_env({"CALENDAR_STATE_URL": "mysql://u:hidden@db/x"}, **paths).resolved()
    settings = Settings.from_env({"CALENDAR_STATE_URL": "postgresql://u:hidden@db:5432/x"}, **paths).resolved()
    assert settings.state_url.startswith("postgresql://") and "hidden" not in repr(settings)
    assert StateDB(paths["state_dir"], settings.state_url).dialect.describe() == "postgresql://u:***@db:5432/x"


# ----------------------------------------------------------------------------- deliveries, claimed

def test_two_deliverers_never_attempt_the_same_delivery(make_app, backend):
    """Two services sharing the state, both forced to deliver at once (as when a lease just
    expired, or clocks are skewed): the claims keep them from attempting the same delivery."""
    receiver = Receiver()
    receiver.delay = 0.1
    apps = [make_app(**FAST, **backend, webhook_workers=4) for _ in range(2)]
    attempts: dict[str, list] = {}
    for app in apps:
        webhooks = app.extensions["calendar"].webhooks
        webhooks._renew = lambda: True   # each believes it holds the lease
        attempt = webhooks._pool._attempt
        webhooks._pool._attempt = lambda d, attempt=attempt, mine=attempts.setdefault(webhooks.worker_id, []): (
            mine.append(d["message_id"]), attempt(d))
    admin = [Client(app.test_client(), "administrator") for app in apps]
    try:
        paths = [f"/{n}" for n in range(4)]
        for path in paths:
            receiver.secrets[path] = admin[0].post("/subscriptions", json={"url": receiver.url(path)}).get_json()["secret"]
        for n in range(6):
            assert admin[n % 2].post("/events", json={"title": f"Talk {n}", **EVENT}).status_code == 201
        wait_for(lambda: all(len(receiver.ok(p)) >= 6 for p in paths), timeout=60, what="every delivery")
        time.sleep(0.5)  # a duplicate would arrive meanwhile
    finally:
        for app in apps:
            close_app(app)
        receiver.close()
    ids = [g["headers"]["webhook-id"] for g in receiver.got]
    assert len(ids) == 24 and len(set(ids)) == 24, "a delivery was attempted twice"
    # every attempt went to the receiver once; which service made it is up to timing
    assert sum(len(found) for found in attempts.values()) == 24, {k: len(v) for k, v in attempts.items()}


# ----------------------------------------------------------------------------- moving to PostgreSQL

def test_state_copy_moves_subscriptions_and_their_queue_from_sqlite_to_postgresql(make_app, paths, state_url,
                                                                                 monkeypatch, capsys):
    """One machine's SQLite state moves to PostgreSQL with `state copy`: the subscription keeps its
    id and secret, a delivery that was failing keeps its webhook-id and goes out from the new
    store, the delivery log comes along, and a second copy is refused (nothing doubled)."""
    from calendar_service.cli.commands import main as cli

    receiver = Receiver()
    receiver.answers["/moved"] = [503] * 1000          # the receiver is down while the machine runs alone
    sqlite_dir = paths["state_dir"]
    one = make_app(**FAST, state_dir=sqlite_dir)
    admin = Client(one.test_client(), "administrator")
    try:
        sub = admin.post("/subscriptions", json={"url": receiver.url("/moved")}).get_json()
        receiver.secrets["/moved"] = sub["secret"]
        for n in range(2):
            assert admin.post("/events", json={"title": f"Before the move {n}", **EVENT}).status_code == 201
        wait_for(lambda: len(receiver.to("/moved")) >= 2, what="failed attempts")
    finally:
        close_app(one)
    tried = {g["headers"]["webhook-id"] for g in receiver.to("/moved")}
    with sqlite3.connect(sqlite_dir / "webhooks.sqlite3") as db:
        queued = [row[0] for row in db.execute("SELECT message_id FROM deliveries ORDER BY id")]
    assert len(queued) == 2 and tried == {queued[0]}   # the head failed (retried), the next one waits behind it

    monkeypatch.setenv("CALENDAR_STATE_URL", state_url)
    monkeypatch.setenv("CALENDAR_STATE_DIR", str(paths["state_dir"].parent / "unused"))
    assert cli(["state", "copy", "--from", str(sqlite_dir)]) == 0
    printed = capsys.readouterr().out
    assert "copied 1 subscriptions and 2 deliveries" in printed, printed
    assert urlsplit(state_url).password not in printed

    receiver.answers["/moved"] = []                     # it is back: the new store delivers
    many = make_app(**FAST, state_dir=paths["state_dir"].parent / "unused", state_url=state_url)
    admin = Client(many.test_client(), "administrator")
    try:
        moved = admin.get(f"/subscriptions/{sub['id']}")
        assert moved.status_code == 200 and moved.get_json()["url"] == receiver.url("/moved")
        got = wait_for(lambda: len(receiver.ok("/moved")) >= 2 and receiver.ok("/moved"), what="the moved queue")
        assert [g["headers"]["webhook-id"] for g in got[:2]] == queued   # the same ids, in commit order
        assert [g["payload"]["data"]["changes"][0]["action"] for g in got[:2]] == ["created", "created"]
        log = admin.get(f"/subscriptions/{sub['id']}/deliveries").get_json()
        assert log["total"] == 2 and all(d["attempts"] >= 2 for d in log["deliveries"][-1:]), log
        # a new write after the move is announced too, with the next id
        assert admin.post("/events", json={"title": "After the move", **EVENT}).status_code == 201
        wait_for(lambda: len(receiver.ok("/moved")) >= 3, what="a delivery made after the move")
    finally:
        close_app(many)
        receiver.close()
    # a second copy into a store that holds subscriptions is refused, and says so
    assert cli(["state", "copy", "--from", str(sqlite_dir)]) == 2
    assert "already holds subscriptions" in capsys.readouterr().err

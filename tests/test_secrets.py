"""Secrets never leak: account passwords (right or wrong), application-password hashes and
event passwords never reach the content repository's history (blobs and commit messages),
the logs (DEBUG, in process; stderr of a real server), error messages or list responses.

By design an event password set by an editor is stored in that event's file (the original
stores post passwords in the post); it must appear nowhere else.
"""
from __future__ import annotations

import base64
import logging
import subprocess

from conftest import API, PASSWORDS, Client
from servers import Server

WRONG = "wr0ng-Pa55word-marker"
EVENT_SECRET = "ev3nt-s3cret-marker"


def basic(login: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def history_bytes(root) -> bytes:
    """Every object in the repository (all blobs, trees, commits with their messages) and the reflog."""
    objects = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    log = subprocess.run(["git", "-C", str(root), "log", "-g", "--format=%H %gs", "--all"], capture_output=True).stdout
    return objects + log


def account_secrets(users_file) -> list[str]:
    text = users_file.read_text()
    hashes = [line.split("hash:", 1)[1].strip() for line in text.splitlines() if "hash:" in line]
    return list(PASSWORDS.values()) + hashes + [WRONG]


def test_no_secret_in_history_logs_errors_or_lists(app, repo, paths, caplog):
    caplog.set_level(logging.DEBUG)
    client = app.test_client()
    editor = Client(client, "editor")
    anon = Client(client, None)
    bodies: list[str] = []

    # authentication failures of every kind
    for headers in (basic("administrator", WRONG), basic("nobody", WRONG), basic("editor", WRONG + "x"),
                    {"Authorization": "Basic " + base64.b64encode(WRONG.encode()).decode()},
                    {"Authorization": f"Bearer {WRONG}"}):
        for method in ("get", "post"):
            r = getattr(client, method)(API + "/events", headers=headers, json={"title": "x"})
            assert r.status_code == 401
            bodies.append(r.get_data(as_text=True))

    # an editor's event with a password, and what others see of it
    r = editor.post("/events", json={"title": "Protected", "start_date": "2030-01-01 10:00",
                                     "end_date": "2030-01-01 11:00", "password": EVENT_SECRET,
                                     "description": "hidden body"})
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    bodies.append(r.get_data(as_text=True))
    r = editor.post(f"/events/{event['id']}", json={"password": EVENT_SECRET})  # the update route takes it
    assert r.status_code == 200
    bodies.append(r.get_data(as_text=True))
    for path in ("/events?start_date=2029-01-01&end_date=2031-01-01", f"/events/{event['id']}",
                 f"/events/{event['id']}?password=wrong-guess", f"/events/by-slug/{event['slug']}",
                 f"/events?include={event['id']}"):
        for who in (anon, editor, Client(client, "subscriber")):
            bodies.append(who.get(path).get_data(as_text=True))
    assert anon.get(f"/events/{event['id']}", query_string={"password": "wrong-guess"}).status_code == 403
    # an update that fails validation and one that succeeds, both carrying the password
    bodies.append(editor.post(f"/events/{event['id']}", json={"password": EVENT_SECRET, "start_date": "nope"})
                  .get_data(as_text=True))
    bodies.append(editor.post(f"/events/{event['id']}", json={"password": EVENT_SECRET + "2", "title": "Still"})
                  .get_data(as_text=True))
    # a protected event unlocked with its password shows its content, never the password itself
    unlocked = anon.get(f"/events/{event['id']}", query_string={"password": EVENT_SECRET + "2"})
    assert unlocked.status_code == 200
    bodies.append(unlocked.get_data(as_text=True))

    secrets = account_secrets(paths["users_file"]) + [EVENT_SECRET]
    for body in bodies:
        for secret in secrets:
            assert secret not in body, (secret, body[:300])
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    for secret in secrets:
        assert secret not in logged, secret

    history = history_bytes(repo.root)
    for secret in account_secrets(paths["users_file"]) + ["$argon2"]:
        assert secret.encode() not in history, secret
    # the event password is in the event's file (by design) and nowhere else: not in commit messages
    messages = repo("log", "--format=%B")
    assert EVENT_SECRET not in messages
    files_with_it = repo("grep", "-l", EVENT_SECRET + "2", "HEAD", "--").split()
    assert files_with_it == [f"HEAD:{repo.path_of(event['slug'])}"]
    # the users file never enters the content repository
    names = repo("log", "--all", "--name-only", "--format=")
    assert "users" not in names


def test_a_real_server_logs_no_secret(paths):
    server = Server(paths, "app")  # python app.py logs at INFO
    try:
        server.start()
        for login in ("administrator", "ghost"):
            status, body, raw = server.request("GET", "/events", auth=(login, WRONG))
            assert status == 401 and WRONG not in raw
        status, body, raw = server.request("POST", "/events", {"title": "P", "start_date": "2030-01-01",
                                                               "end_date": "2030-01-01", "password": EVENT_SECRET},
                                           auth=("administrator", PASSWORDS["administrator"]))
        assert status == 201
        status, body, raw = server.request("POST", f"/events/{body['id']}", {"password": EVENT_SECRET},
                                           auth=("administrator", PASSWORDS["administrator"]))
        assert status == 200 and EVENT_SECRET not in raw
        status, body, raw = server.request("GET", f"/events/{body['id']}?password=guess-{WRONG}")
        assert status == 403 and WRONG not in raw
        status, body, raw = server.request("GET", "/events?start_date=2029-01-01&end_date=2031-01-01")
        assert EVENT_SECRET not in raw
    finally:
        server.kill()
    log = server.stderr()
    assert "GET /calendar" in log or "127.0.0.1" in log  # the server did log its requests
    for secret in account_secrets(paths["users_file"]) + [EVENT_SECRET]:
        assert secret not in log, secret

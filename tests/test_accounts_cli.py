"""The account CLI (``python -m calendar_service user ...``) run as a real subprocess, the
users-file location rule, and the sample calendar written to a new repository."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import calendar_service
from calendar_service import create_app
from calendar_service.storage.catalog import Catalog
from calendar_service.config import Settings
from calendar_service.storage.store import GitStore
from conftest import API, Git, flat

PROJECT = Path(calendar_service.__file__).resolve().parent.parent  # the package the tests import


@pytest.fixture
def cli(tmp_path):
    """Run the CLI with its users file in this test's temporary directory."""
    users = tmp_path / "accounts" / "users.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALENDAR_")}
    env.update(CALENDAR_USERS_FILE=str(users), CALENDAR_CONTENT_DIR=str(tmp_path / "content"),
               PYTHONPATH=str(PROJECT) + os.pathsep + env.get("PYTHONPATH", ""))

    def run(*args: str, expect: int | None = 0, extra_env: dict | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "calendar_service", *args], cwd=tmp_path, capture_output=True,
                              text=True, env={**env, **(extra_env or {})}, timeout=60)
        if expect is not None:
            assert proc.returncode == expect, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    run.users = users
    return run


@pytest.fixture
def api(tmp_path, cli):
    """An app that uses the CLI's users file; ``api(login, password)`` -> status of an authenticated GET."""
    app = create_app({"content_dir": tmp_path / "content", "index_dir": tmp_path / "index",
                      "users_file": cli.users, "seed_sample": False})
    client = app.test_client()

    def status(login: str, password: str) -> int:
        token = base64.b64encode(f"{login}:{password}".encode()).decode()
        return client.get(API + "/events", headers={"Authorization": f"Basic {token}"}).status_code

    status.client = client
    return status


def printed_password(output: str) -> str:
    match = re.search(r"password(?: [0-9a-f]+)?: (.+)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def assert_not_stored(users: Path, *passwords: str) -> None:
    text = users.read_text()
    for password in passwords:
        assert password not in text
        assert password.replace(" ", "") not in text
    hashes = [line.split("hash:", 1)[1].strip() for line in text.splitlines() if "hash:" in line]
    assert hashes and all(h.startswith(("$argon2id$", "$token-sha256$")) for h in hashes), hashes


# ----------------------------------------------------------------------------- CLI


def test_add_prints_a_generated_password_that_signs_in(cli, api):
    proc = cli("user", "add", "alice", "--role", "editor", "--email", "alice@example.org", "--name", "Alice A.")
    assert "created editor alice" in proc.stdout
    password = printed_password(proc.stdout)
    assert len(password.replace(" ", "")) >= 16
    assert_not_stored(cli.users, password)
    assert api("alice", password) == 200
    assert api("alice", password.replace(" ", "")) == 200
    assert api("alice", password + "x") == 401
    # the user's details are what commits will be authored with
    listing = cli("user", "list").stdout
    assert re.search(r"^1\talice\teditor\talice@example.org\t1 password", listing, re.M), listing


def test_add_with_a_given_password_does_not_echo_it(cli, api):
    proc = cli("user", "add", "bob", "--role", "author", "--password", "bobs-chosen-password")
    assert "bobs-chosen-password" not in proc.stdout + proc.stderr
    assert_not_stored(cli.users, "bobs-chosen-password")
    assert api("bob", "bobs-chosen-password") == 200


def test_list_shows_every_account(cli):
    cli("user", "add", "carol", "--role", "contributor", "--password", "p1-long-enough")
    cli("user", "add", "dave", "--role", "subscriber", "--password", "p2-long-enough")
    lines = [line.split("\t") for line in cli("user", "list").stdout.strip().splitlines()]
    assert [(line[0], line[1], line[2]) for line in lines] == [("1", "carol", "contributor"),
                                                              ("2", "dave", "subscriber")]
    assert "p1-long-enough" not in cli("user", "list").stdout


def test_passwd_replaces_every_password(cli, api):
    first = printed_password(cli("user", "add", "erin", "--role", "editor").stdout)
    token = printed_password(cli("user", "token", "erin").stdout)
    assert api("erin", first) == 200 and api("erin", token) == 200
    proc = cli("user", "passwd", "erin")
    second = printed_password(proc.stdout)
    assert second != first
    assert api("erin", second) == 200
    assert api("erin", first) == 401
    assert api("erin", token) == 401
    cli("user", "passwd", "erin", "--password", "erins-own-password")
    assert api("erin", "erins-own-password") == 200 and api("erin", second) == 401
    assert_not_stored(cli.users, first, second, token, "erins-own-password")


def test_token_adds_a_password_and_revoke_removes_it(cli, api):
    main = printed_password(cli("user", "add", "frank", "--role", "administrator").stdout)
    proc = cli("user", "token", "frank", "--label", "laptop")
    match = re.search(r"application password ([0-9a-f]+): (.+)$", proc.stdout, re.M)
    assert match, proc.stdout
    token_id, token = match.group(1), match.group(2).strip()
    assert token != main
    assert_not_stored(cli.users, main, token)
    assert "laptop" in cli.users.read_text()
    assert api("frank", token) == 200
    assert api("frank", main) == 200
    assert "2 password(s)" in cli("user", "list").stdout

    cli("user", "revoke", "frank", token_id)
    assert api("frank", token) == 401
    assert api("frank", main) == 200
    # revoking again is an error
    proc = cli("user", "revoke", "frank", token_id, expect=None)
    assert proc.returncode != 0 and token_id in proc.stderr


def test_a_token_authors_commits_as_its_user(cli, api, tmp_path):
    cli("user", "add", "gina", "--role", "editor", "--email", "gina@example.org", "--name", "Gina G",
        "--password", "ginas-main-password")
    token = printed_password(cli("user", "token", "gina").stdout)
    auth = base64.b64encode(f"gina:{token}".encode()).decode()
    r = api.client.post(API + "/tags", json={"name": "by-token"}, headers={"Authorization": f"Basic {auth}"})
    assert r.status_code == 201, r.get_json()
    assert Git(tmp_path / "content").last_author() == "Gina G <gina@example.org>"


def test_remove_deletes_the_account(cli, api):
    password = printed_password(cli("user", "add", "hank", "--role", "editor").stdout)
    cli("user", "add", "ivy", "--role", "editor", "--password", "ivys-password-1")
    assert api("hank", password) == 200
    assert "removed hank" in cli("user", "remove", "hank").stdout
    assert api("hank", password) == 401
    assert api("ivy", "ivys-password-1") == 200
    assert [line.split("\t")[1] for line in cli("user", "list").stdout.strip().splitlines()] == ["ivy"]
    proc = cli("user", "remove", "hank", expect=None)
    assert proc.returncode != 0 and "hank" in proc.stderr


def test_unknown_role_is_refused_clearly(cli):
    proc = cli("user", "add", "mallory", "--role", "wizard", expect=None)
    assert proc.returncode != 0
    assert "wizard" in proc.stderr and "role" in proc.stderr
    assert "administrator" in proc.stderr  # the valid choices are named
    assert not cli.users.exists() or "mallory" not in cli.users.read_text()


@pytest.mark.parametrize("args, fragment", [
    (("user", "add", "bad:login", "--role", "editor"), "login"),
    (("user", "passwd", "nobody"), "nobody"),
    (("user", "token", "nobody"), "nobody"),
])
def test_other_cli_errors_exit_non_zero(cli, args, fragment):
    proc = cli(*args, expect=None)
    assert proc.returncode != 0
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr


def test_duplicate_login_is_refused(cli):
    cli("user", "add", "judy", "--role", "editor", "--password", "judys-password-1")
    proc = cli("user", "add", "judy", "--role", "author", expect=None)
    assert proc.returncode != 0 and "already exists" in proc.stderr
    lines = cli("user", "list").stdout.strip().splitlines()
    assert [line.split("\t")[:3] for line in lines] == [["1", "judy", "editor"]]


def test_users_file_mode_is_private(cli):
    cli("user", "add", "kate", "--role", "editor", "--password", "kates-password-1")
    assert cli.users.stat().st_mode & 0o077 == 0


# ----------------------------------------------------------------------------- users file location


def test_users_file_inside_the_content_dir_is_refused(tmp_path):
    content = tmp_path / "content"
    for users in (content / "users.yaml", content / "sub" / "users.yaml", content):
        with pytest.raises(ValueError, match="CALENDAR_USERS_FILE"):
            Settings.from_env(environ={}, content_dir=content, users_file=users)
    with pytest.raises(ValueError):
        Settings.from_env(environ={"CALENDAR_CONTENT_DIR": str(content),
                                   "CALENDAR_USERS_FILE": str(content / "users.yaml")})
    with pytest.raises(ValueError):
        create_app({"content_dir": content, "users_file": content / "users.yaml", "seed_sample": False})
    assert not (content / ".git").exists()
    # next to the content dir is fine, even with a similar name
    settings = Settings.from_env(environ={}, content_dir=content, users_file=tmp_path / "content-users.yaml")
    assert settings.users_file == (tmp_path / "content-users.yaml").resolve()


def test_cli_refuses_a_users_file_inside_the_content_dir(cli, tmp_path):
    inside = tmp_path / "content" / "users.yaml"
    proc = cli("user", "add", "leo", "--role", "editor", expect=None,
               extra_env={"CALENDAR_USERS_FILE": str(inside)})
    assert proc.returncode != 0 and "CALENDAR_USERS_FILE" in proc.stderr
    assert not inside.exists()


# ----------------------------------------------------------------------------- sample calendar


def test_sample_calendar_is_written_to_a_new_repository(make_app, paths):
    app = make_app(seed_sample=True)
    repo = Git(paths["content_dir"])
    assert repo.count() == 1
    assert repo.status() == ""
    subprocess.run(["git", "-C", str(repo.root), "fsck", "--full", "--strict"], check=True, capture_output=True)
    files = repo.files()
    event_files = [f for f in files if f.startswith("events/")]
    assert 15 <= len(event_files) <= 25
    client = app.test_client()
    r = client.get(API + "/events?per_page=50")
    assert r.status_code == 200
    body = r.get_json()
    # one file per event, one of them a weekly series (the list shows its occurrences, each
    # naming the series as post_parent but the first, served under the series' id)
    series = [f for f in event_files if "recurrence:" in (repo.root / f).read_text()]
    assert flat(series) == ["events/choir-rehearsal.md"]
    assert body["total"] == len(body["events"]) >= len(event_files)
    assert len({e.get("post_parent") or e["id"] for e in body["events"]}) == len(event_files)
    assert r.headers["X-TEC-Total"] == str(body["total"])
    # the default page shows the first ten
    assert len(client.get(API + "/events").get_json()["events"]) == 10
    for resource in ("venues", "organizers", "categories", "tags"):
        r = client.get(f"{API}/{resource}")
        assert r.status_code == 200
        assert r.get_json()["total"] > 0 and r.get_json()[resource], resource
    # every sample file loads without a problem
    store = GitStore(paths["content_dir"])
    try:
        assert Catalog(store).current().problems == []
    finally:
        store.close()
    # events link to existing venues and organizers
    first = body["events"][0]
    assert first["venue"] and first["venue"]["id"]
    assert client.get(f"{API}/venues/{first['venue']['id']}").status_code == 200


def test_sample_calendar_is_not_written_twice(make_app, paths):
    make_app(seed_sample=True)
    repo = Git(paths["content_dir"])
    head = repo.head()
    app = make_app(seed_sample=True)
    assert repo.count() == 1 and repo.head() == head
    # not even after the calendar was emptied through the API
    admin_token = base64.b64encode(b"administrator:administrator-secret-pass").decode()
    client = app.test_client()
    for tag in client.get(API + "/tags?per_page=50&hide_empty=false").get_json()["tags"]:
        r = client.delete(f"{API}/tags/{tag['id']}", headers={"Authorization": f"Basic {admin_token}"})
        assert r.status_code == 200
    count = repo.count()
    make_app(seed_sample=True)
    assert repo.count() == count


def test_no_sample_without_seed_or_over_existing_content(make_app, paths, tmp_path):
    make_app(seed_sample=False)
    assert Git(paths["content_dir"]).count() == 0
    assert create_app({**paths, "seed_sample": True}) is not None
    # an existing (empty) repository is not a new one
    assert Git(paths["content_dir"]).count() == 0

    other = tmp_path / "other-content"
    (other / "events").mkdir(parents=True)
    (other / "events" / "mine.md").write_text("---\nid: 1\n---\n")
    create_app({**paths, "content_dir": other, "seed_sample": True})
    assert Git(other).count() == 0
    assert (other / "events" / "mine.md").read_text() == "---\nid: 1\n---\n"

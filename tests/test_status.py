"""Operators and load balancers: the status command, /healthz, /readyz, and validate's path check."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import followed
from test_pull_security import Crafter, _git  # noqa: F401
from test_remote import bare, instance, instances, remote, remote_url  # noqa: F401  (fixtures)


def test_healthz_and_readyz(instance):  # noqa: F811
    a = instance("a")
    client = a.app.test_client()
    assert client.get("/healthz").status_code == 200
    # nothing pulled yet from the empty remote counts as a successful sync
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.get_json()
    assert ready.get_json()["ready"] is True


def test_readyz_is_503_while_the_remote_is_poisoned_at_start(instance, bare, tmp_path):  # noqa: F811
    seed = instance("seed")
    assert seed.create("Seeded").status_code == 201
    crafter = Crafter(bare)
    crafter.push_tree_with([crafter.nested(".git/config", ("100644", "blob", crafter.blob(b"[core]\n")))], "poison")
    late = instance("late")
    answer = late.app.test_client().get("/readyz")
    assert answer.status_code == 503
    assert answer.get_json()["code"] == "calendar-not-ready" and answer.get_json()["data"]["status"] == 503
    status = late.admin.get("/status").get_json()
    assert status["head"] is None and status["remote"]["refused"]["path"].startswith(".git")
    assert status["remote"]["last_pull"]["result"] == "refused"


def test_status_command_prints_the_status_view(instance, tmp_path, users_template):  # noqa: F811
    a = instance("a")
    assert a.create("Shown").status_code == 201
    a.service.stop_pulling()
    env = {**os.environ, "CALENDAR_CONTENT_DIR": str(a.service.settings.content_dir),
           "CALENDAR_INDEX_DIR": str(a.service.settings.index_dir), "CALENDAR_USERS_FILE": str(users_template),
           "CALENDAR_GIT_REMOTE": a.service.settings.git_remote, "CALENDAR_TIMEZONE": "UTC"}
    done = subprocess.run([sys.executable, "-m", "calendar_service", "status"], capture_output=True, env=env,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["head"] == a.repo.head()
    assert shown["remote"]["refused"] is None and shown["remote"]["last_pull"]["result"] == "ok"
    assert shown["skipped"] == []


def test_validate_reports_a_symlink_under_a_content_folder(tmp_path):
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)
    (root / "events" / "passwd.md").symlink_to("/etc/passwd")
    done = subprocess.run([sys.executable, "-m", "calendar_service", "validate", str(root)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert "passwd.md:1: the service refuses this path: a symbolic link" in done.stdout


def test_the_store_never_writes_an_unsafe_path(instance):  # noqa: F811
    a = instance("a")
    store = a.service.store
    for path in (".git/config", "events/../../escaped.md", "/tmp/abs.md", "events/GIT~1/x.md", "events/a\\b.md"):
        with store.write_lock():
            try:
                store.commit({path: b"x\n"}, "bad", ("Someone", "someone@example.org"), store.head())
            except Exception as exc:  # noqa: BLE001
                assert "refusing to write" in str(exc)
            else:
                raise AssertionError(f"{path} was written")


def test_the_path_rule():
    from calendar_service.domain.paths import path_problem
    for path in ("events/a.md", "venues/x/y.yaml", "README.md", "LICENSE", ".gitignore", ".github/workflows/v.yml",
                 ".pre-commit-config.yaml", ".editorconfig"):
        assert path_problem(path, 0o100644) is None, path
    for path in (".git/config", ".GIT/config", ".git./x", ".git. /x", "git~1/x", "GIT~2/x", ".g\u200cit/x",
                 "events/.git/x", "events/../x", "events/./x", "events//x", "/etc/passwd", "events/a\\b",
                 "events/a\nb", "notes/x.md", "setup.py", ""):
        assert path_problem(path, 0o100644), path
    assert path_problem("events/a.md", 0o120000) == "a symbolic link"
    assert path_problem("events/sub", 0o160000) == "a submodule"


def test_a_refused_commit_is_logged_once(instance, bare, caplog):  # noqa: F811
    a = instance("a")
    assert a.create("Before").status_code == 201
    crafter = Crafter(bare)
    commit = crafter.push_tree_with([("120000", "blob", crafter.blob(b"/etc/passwd"), "README.md")], "link")
    caplog.set_level("ERROR", logger="calendar_service.storage.remote")
    for _ in range(3):
        assert a.hook().status_code == 409
    assert a.create("During").status_code == 201
    refusals = [r for r in caplog.records if commit in r.getMessage()]
    assert len(refusals) == 1 and "README.md" in refusals[0].getMessage()


def test_status_lists_files_waiting_for_an_id(instance, bare, tmp_path):  # noqa: F811
    """An editor's file without id is served once the service's id commit lands; while the
    remote refuses that commit, the file is not served and the status view names it."""
    from test_remote import editor_clone
    a = instance("a")
    assert a.create("Seed").status_code == 201
    editor = editor_clone(bare, tmp_path / "editor")
    (tmp_path / "editor" / "events" / "no-id-yet.md").write_text(
        "---\ntitle: No id yet\nslug: no-id-yet\nstatus: publish\nstart_date: 2030-05-01 10:00:00\n"
        "end_date: 2030-05-01 11:00:00\n---\nText.\n", encoding="utf-8")
    editor("add", "-A")
    editor("-c", "user.name=Ed", "-c", "user.email=ed@example.org", "commit", "-q", "-m", "An event without id")
    editor("push", "-q", "origin", "main")
    hook = bare / "hooks" / "pre-receive"  # the remote now refuses every push (a protected branch)
    hook.write_text("#!/bin/sh\necho 'the branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert a.hook().status_code == 200
    status = a.admin.get("/status").get_json()
    assert status["waiting_for_id"] == ["events/no-id-yet.md"]
    titles = [e["title"] for e in a.admin.get("/events?start_date=2000-01-01&end_date=2040-01-01").get_json()["events"]]
    assert titles == ["Seed"]
    hook.unlink()  # the remote takes pushes again: the next head gets its ids
    editor("commit", "-q", "--allow-empty", "-m", "poke")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)   # the follower thread gives the id at the new head
    assert a.admin.get("/status").get_json()["waiting_for_id"] == []
    titles = [e["title"] for e in a.admin.get("/events?start_date=2000-01-01&end_date=2040-01-01").get_json()["events"]]
    assert sorted(titles) == ["No id yet", "Seed"]


def test_status_shows_files_in_content_folders_the_service_does_not_read(app, repo, admin, anon, factory):
    """A file in a content folder with another extension (``.txt``, ``.yaml`` beside events) is
    never read, but operators see it as ``validate`` shows it; dot files (``.gitkeep``) are not listed."""
    event = factory.event(title="Still here")
    repo.commit_files({"events/notes.txt": "title: not an event\n", "events/party.yaml": "title: Party\n",
                       "venues/.gitkeep": ""}, "Files the service does not read")
    followed(app)
    status = admin.get("/status").get_json()
    warned = {s["path"]: s for s in status["skipped"]}
    assert warned["events/notes.txt"]["severity"] == "warning"
    assert "not read by the service" in warned["events/party.yaml"]["message"]
    assert "venues/.gitkeep" not in warned
    assert status["skipped_files"] == 0   # warnings: nothing that should be served is missing
    assert anon.get(f"/events/{event['id']}").status_code == 200
    repo.commit_files({"events/notes.txt": None}, "Remove the notes")
    followed(app)
    assert "events/notes.txt" not in {s["path"] for s in admin.get("/status").get_json()["skipped"]}

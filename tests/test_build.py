"""One way to build the service: ``build_service`` for the app and for every command line
command, tied to the app's lifetime (no atexit hooks), closed by the commands that build it."""
from __future__ import annotations

import atexit
import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

import calendar_service
from calendar_service import create_app
from calendar_service.config import Settings
from calendar_service.http.app import close_app
from calendar_service.service.build import NoRepository, build_service
from conftest import Client, Git, flat

PROJECT = Path(calendar_service.__file__).resolve().parent.parent


@pytest.fixture
def bare(tmp_path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def cli(paths, *args, remote: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALENDAR_")}
    env.update(CALENDAR_CONTENT_DIR=str(paths["content_dir"]), CALENDAR_USERS_FILE=str(paths["users_file"]),
               CALENDAR_INDEX_DIR=str(paths["index_dir"]),
               PYTHONPATH=str(PROJECT) + os.pathsep + env.get("PYTHONPATH", ""))
    if remote is not None:
        env["CALENDAR_GIT_REMOTE"] = str(remote)
    return subprocess.run([sys.executable, "-m", "calendar_service", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_trash_empty_pushes_its_commit_to_the_configured_remote(paths, bare):
    app = create_app({**paths, "seed_sample": False, "site_timezone": "UTC", "git_remote": str(bare),
                      "pull_interval": 0})
    admin = Client(app.test_client(), "administrator")
    kept = admin.post("/events", json={"title": "Kept", "start_date": "tomorrow 8am", "end_date": "tomorrow 9am"})
    assert kept.status_code == 201, kept.get_json()
    created = admin.post("/events", json={"title": "Soon gone", "start_date": "tomorrow 10am",
                                          "end_date": "tomorrow 11am"})
    assert created.status_code == 201, created.get_json()
    assert admin.delete(f"/events/{created.get_json()['id']}").status_code == 200
    close_app(app)
    remote, local = Git(bare), Git(paths["content_dir"])
    assert remote("rev-parse", "main").strip() == local.head()  # the API pushed the trashing

    done = cli(paths, "trash", "empty", "--user", "editor", "--yes", remote=bare)
    assert done.returncode == 0, done.stderr
    assert "deleted 1 record(s)" in done.stdout
    assert remote("rev-parse", "main").strip() == local.head()
    assert remote("log", "-1", "--format=%an|%s", "main").strip() == "Editor|Empty the trash: 1 record(s)"
    assert flat(remote("ls-tree", "-r", "--name-only", "main").split()) == ["events/kept.md"]


def test_commands_without_a_repository_do_not_create_one(paths):
    for args in (("reindex",), ("trash", "list")):
        result = cli(paths, *args)
        assert result.returncode == 2
        assert f"error: no content repository at {paths['content_dir']}" in result.stderr
    assert not (paths["content_dir"] / ".git").exists()
    with pytest.raises(NoRepository):
        build_service(Settings.from_env({}, **paths), create=False)


def test_reindex_reads_the_repository_the_app_writes(paths):
    app = create_app({**paths, "seed_sample": True, "site_timezone": "UTC"})
    close_app(app)
    result = cli(paths, "reindex")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("indexed ") and " events of commit " in result.stdout
    assert int(result.stdout.split()[1]) > 0  # the sample calendar seeded by the app


def test_the_app_registers_no_atexit_hook_and_its_service_ends_with_it(paths, bare):
    hooks = atexit._ncallbacks()
    app = create_app({**paths, "seed_sample": False, "site_timezone": "UTC", "git_remote": str(bare),
                      "pull_interval": 0.05})
    assert atexit._ncallbacks() == hooks
    service = app.extensions["calendar"]
    thread = service.sync._thread
    assert thread is not None and thread.is_alive()
    gone = weakref.ref(app)
    del app
    gc.collect()
    assert gone() is None  # nothing keeps the app alive
    thread.join(5)
    assert not thread.is_alive()  # its pull thread stopped with it
    assert service.store._objects._repo is None  # and its git processes were released


def test_close_app_closes_the_service_once(paths):
    app = create_app({**paths, "seed_sample": False, "site_timezone": "UTC"})
    service = app.extensions["calendar"]
    service.snapshot()
    close_app(app)
    close_app(app)  # a second close does nothing
    assert service.store._objects._repo is None

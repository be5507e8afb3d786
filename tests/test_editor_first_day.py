"""An editor's first day, step by step as docs/editing.md ("Your first day") walks it: every
step through the real command line (``python -m calendar_service`` in a subprocess) and git, in
a clone of a content repository served by ``git daemon``, with the real service (gunicorn)
following that remote."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from servers import Server, git_daemon

ROOT = Path(__file__).resolve().parents[1]
EDITOR = ["-c", "user.name=First Day", "-c", "user.email=first.day@example.org"]
WAIT = 60   # seconds for the service to pull, give the id and push it


def clean_env(**extra) -> dict:
    """The editor's shell: no CALENDAR_ setting (they point at the service's data directory)."""
    found = {k: v for k, v in os.environ.items() if not k.startswith(("CALENDAR_", "GIT_"))}
    return {**found, "PYTHONPATH": str(ROOT), **extra}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def calendar(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run(cwd, sys.executable, "-m", "calendar_service", *args)


def git(cwd: Path, *args: str) -> str:
    return run(cwd, "git", *EDITOR, *args).stdout


def front_matter(path: Path) -> dict:
    return yaml.safe_load(path.read_text().split("---\n")[1])


def eventually(check, what: str):
    deadline = time.monotonic() + WAIT
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        time.sleep(0.3)


def test_an_editors_first_day(tmp_path, paths):
    # the content repository on its git server, with one venue the team made before
    seed = tmp_path / "seed"
    seed.mkdir()
    run(seed, "git", "init", "-q", "-b", "main")
    (seed / "venues").mkdir()
    (seed / "venues/town-hall.yaml").write_text("id: 1\nvenue: Town Hall\nslug: town-hall\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "The first venue")
    served = tmp_path / "served"
    served.mkdir()
    run(tmp_path, "git", "clone", "-q", "--bare", str(seed), str(served / "content.git"))
    with git_daemon(served) as base:
        url = f"{base}/content.git"
        server = Server(paths, "gunicorn", workers=1, extra_env={
            "CALENDAR_GIT_REMOTE": url, "CALENDAR_PULL_INTERVAL": "1", "CALENDAR_FOLLOW_INTERVAL": "0.2"})
        try:
            server.start(timeout=60)

            # 1. clone the content repository
            run(tmp_path, "git", "clone", "-q", url, "clone")
            clone = tmp_path / "clone"

            # 2. a new event with `new`, run inside the clone: the path, then the next steps
            made = calendar(clone, "new", "event", "--title", "Jazz Night", "--start", "2030-06-05 20:00",
                            "--end", "2030-06-05 22:00", "--description", "Live jazz.")
            path = Path(made.stdout.strip())
            relative = path.relative_to(clone).as_posix()
            assert relative == "events/2030/06/jazz-night.md"
            assert "Next steps:" in made.stderr and f"validate {relative}" in made.stderr
            text = path.read_text().replace("timezone: UTC\n", "timezone: UTC\nvenue: [town-hall]\n")
            path.write_text(text)                 # linked to the venue, as an editor would

            # 3. validate that file
            checked = calendar(clone, "validate", relative)
            assert checked.stdout.startswith("your files OK: 1 file(s) checked"), checked.stdout

            # 3b. what the change does to the calendar, as a reviewer (and the CI workflow) sees it
            shown = calendar(clone, "diff")
            assert shown.returncode == 0, shown.stdout + shown.stderr
            assert "1 added" in shown.stdout and 'event (new, no id yet) "Jazz Night"' in shown.stdout
            assert "at Town Hall" in shown.stdout

            # 4. commit and push
            git(clone, "add", relative)
            git(clone, "commit", "-q", "-m", "Add Jazz Night")
            git(clone, "push", "-q", "origin", "main")
            pushed = git(clone, "rev-parse", "HEAD").strip()

            # 5. the service gives the file its id in a commit of its own, on the remote
            def id_commit():
                git(clone, "fetch", "-q", "origin")
                log = git(clone, "log", "--format=%H %s", f"{pushed}..origin/main").splitlines()
                return log if any(" Give ids" in line for line in log) else None
            eventually(id_commit, "the service's id commit on the remote")
            state = json.loads(calendar(clone, "status").stdout)   # status in the clone: behind by it
            assert state["kind"] == "clone" and state["upstream"]["behind"] >= 1

            # 6. pull: the file has its id
            git(clone, "pull", "-q", "--ff-only")
            record_id = front_matter(path)["id"]
            assert isinstance(record_id, int) and record_id > 1
            assert json.loads(calendar(clone, "status").stdout)["upstream"]["behind"] == 0

            # 7. a second edit, of another field: no conflict with the id line
            edited = path.read_text().replace("end_date: '2030-06-05 22:00:00'", "end_date: '2030-06-05 23:30:00'")
            assert edited != path.read_text()
            path.write_text(edited)
            assert calendar(clone, "validate", "--changed").returncode == 0
            moved = calendar(clone, "diff").stdout
            assert "moved: Wed 05 Jun 2030 20:00–22:00 UTC → Wed 05 Jun 2030 20:00–23:30 UTC" in moved, moved
            git(clone, "commit", "-q", "-am", "Jazz Night runs until 23:30")
            git(clone, "push", "-q", "origin", "main")

            # 8. the API serves it
            def served_event():
                status, body, _ = server.request("GET", f"/events/{record_id}")
                return body if status == 200 and body.get("end_date") == "2030-06-05 23:30:00" else None
            event = eventually(served_event, "the API serving the second edit")
            assert event["title"] == "Jazz Night" and event["start_date"] == "2030-06-05 20:00:00"
            assert event["venue"]["venue"] == "Town Hall"
        finally:
            server.kill()

"""The command line in an editor's clone of the content repository (cloned over ``git daemon``):
``validate`` checks only your files (paths, ``--changed``) and the references your change
breaks; the plain git hook of docs/editing.md; ``new`` outside a content repository and its next
steps; ``status`` in a clone."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from servers import git_daemon

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=Editor", "-c", "user.email=editor@example.org"]

EVENT = ("---\nid: {id}\ntitle: {title}\nstart_date: '2030-05-01 10:00:00'\nend_date: '2030-05-01 12:00:00'\n"
         "{extra}---\nBody.\n")
BROKEN = "---\nid: 40\ntitle: [x\n---\n"


def env(**extra) -> dict:
    found = {k: v for k, v in os.environ.items() if not k.startswith(("CALENDAR_", "GIT_"))}
    return {**found, "PYTHONPATH": str(ROOT), **extra}


def cli(*args: str, cwd: Path, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calendar_service", *args], cwd=cwd, env=env(**extra),
                          capture_output=True, text=True, timeout=120)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, env=env(), check=True, capture_output=True, text=True).stdout


def put(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


@pytest.fixture
def clone(tmp_path):
    """An editor's clone (over git://) of a content repository whose main branch already holds
    someone else's broken file and an event with a dangling venue reference."""
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    put(seed, "venues/hall.yaml", "id: 1\nvenue: Hall\n")
    put(seed, "venues/barn.yaml", "id: 2\nvenue: Barn\n")
    put(seed, "events/concert.md", EVENT.format(id=3, title="Concert", extra="venue: [1]\n"))
    put(seed, "events/theirs-broken.md", BROKEN)
    put(seed, "events/old-dangling.md", EVENT.format(id=5, title="Old", extra="venue: [99]\n"))
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "Seed")
    served = tmp_path / "served"
    served.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(served / "content.git"))
    with git_daemon(served) as url:
        editor = tmp_path / "editor"
        git(tmp_path, "clone", "-q", f"{url}/content.git", str(editor))
        yield editor


def test_validate_with_paths_counts_only_yours(clone, tmp_path):
    put(clone, "events/mine.md", EVENT.format(id=10, title="Mine", extra="venue: [2]\n"))
    whole = cli("validate", cwd=clone)               # no paths: exactly as before, every problem fails
    assert whole.returncode == 1 and "events/theirs-broken.md:4:" in whole.stdout
    ok = cli("validate", "events/mine.md", cwd=clone)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("your files OK: 1 file(s) checked")
    assert "2 other files have problems (not yours): run validate without paths to see them" in ok.stderr
    # relative to the current folder, or to the top of the content repository
    assert cli("validate", "mine.md", cwd=clone / "events").returncode == 0
    assert cli("validate", "events/mine.md", cwd=clone / "events").returncode == 0
    put(clone, "events/mine.md", EVENT.format(id=10, title="Mine", extra="venue: [2]\ntagz: [1]\n"))
    bad = cli("validate", "events/mine.md", cwd=clone)
    assert bad.returncode == 1 and bad.stdout.startswith("events/mine.md:")
    assert "theirs-broken" not in bad.stdout
    assert cli("validate", "events/mine.md", "--allow-warnings", cwd=clone).returncode == 0
    outside = tmp_path / "elsewhere.md"
    outside.write_text(BROKEN)
    refused = cli("validate", str(outside), cwd=clone)
    assert refused.returncode == 2
    assert "outside the content repository" in refused.stderr and refused.stdout == ""


def test_validate_changed_reports_the_references_your_change_breaks(clone):
    git(clone, "checkout", "-q", "-b", "work")
    ok = cli("validate", "--changed", cwd=clone)     # nothing changed since the merge base with origin/main
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 other files have problems (not yours)" in ok.stderr
    put(clone, "events/untracked.md", EVENT.format(id=11, title="New", extra="venue: [2]\n"))
    (clone / "venues/hall.yaml").unlink()            # the concert (unchanged) links to it
    bad = cli("validate", "--changed", cwd=clone)
    assert bad.returncode == 1
    assert bad.stdout.splitlines() == ["events/concert.md:6: venue: no venue has the id 1"]
    assert "2 other files have problems (not yours)" in bad.stderr   # the old dangling reference is not yours
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "Remove the hall")
    # committed: the same against the merge base, and against a BASE given by name
    assert cli("validate", "--changed", cwd=clone).stdout == bad.stdout
    assert cli("validate", "--changed", "origin/main", cwd=clone).stdout == bad.stdout
    assert cli("validate", "--changed", "HEAD", cwd=clone).returncode == 0   # nothing changed since HEAD
    put(clone, "events/untracked.md", BROKEN.replace("40", "41"))
    worse = cli("validate", "--changed=HEAD", cwd=clone)
    assert worse.returncode == 1 and worse.stdout.startswith("events/untracked.md:4: YAML syntax error")
    wrong = cli("validate", "--changed", "no-such-branch", cwd=clone)
    assert wrong.returncode == 2 and "no such commit" in wrong.stderr


def plain_hook() -> str:
    page = (ROOT / "docs/editing.md").read_text()
    block = re.search(r"<!-- plain-git-hook -->\n```sh\n(.*?)```", page, re.S).group(1)
    return block.replace("python3 ", f"{sys.executable} ")


def test_the_plain_git_hook_refuses_a_broken_commit_and_not_others_broken_files(clone):
    hook = clone / ".git/hooks/pre-commit"
    hook.write_text(plain_hook())
    hook.chmod(0o755)

    def commit(message: str) -> subprocess.CompletedProcess:
        return subprocess.run([*GIT, "commit", "-q", "-m", message], cwd=clone, env=env(), capture_output=True,
                              text=True, timeout=120)

    put(clone, "events/mine.md", BROKEN.replace("40", "12"))
    git(clone, "add", "events/mine.md")
    refused = commit("A broken file")
    assert refused.returncode != 0 and "events/mine.md:4: YAML syntax error" in refused.stdout + refused.stderr
    assert git(clone, "log", "-1", "--format=%s").strip() == "Seed"
    put(clone, "events/mine.md", EVENT.format(id=12, title="Mine", extra="venue: [2]\n"))
    git(clone, "add", "events/mine.md")
    done = commit("A good file beside someone else's broken one")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "other files have problems (not yours)" in done.stderr
    git(clone, "rm", "-q", "venues/hall.yaml")   # a deletion that breaks the concert's venue
    broke = commit("Remove the hall")
    assert broke.returncode != 0 and "events/concert.md:6: venue: no venue has the id 1" in broke.stdout + broke.stderr
    assert git(clone, "log", "-1", "--format=%s").strip() == "A good file beside someone else's broken one"


def test_new_refuses_outside_a_content_repository_and_prints_the_next_steps(clone, tmp_path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    args = ("new", "event", "--title", "Lost", "--start", "2030-06-01 10:00", "--end", "2030-06-01 11:00")
    refused = cli(*args, cwd=nowhere)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "is not in a content repository" in refused.stderr
    assert "--dir" in refused.stderr and "CALENDAR_CONTENT_DIR" in refused.stderr and "clone" in refused.stderr
    assert list(nowhere.iterdir()) == []              # no ./content/events/... written
    assert cli(*args, "--dir", str(nowhere), cwd=tmp_path).returncode == 2
    made = cli(*args, cwd=clone / "events")
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"{clone}/events/2030/06/lost.md\n"   # the path alone, for scripts
    steps = made.stderr
    assert "validate 2030/06/lost.md" in steps and "git add events/2030/06/lost.md" in steps
    assert "push" in steps and "fills in its id:" in steps and "git pull" in steps


def test_status_in_a_clone_shows_head_upstream_and_problems(clone, tmp_path):
    git(clone, "checkout", "-q", "-b", "work", "--track", "origin/main")
    put(clone, "events/mine.md", EVENT.format(id=10, title="Mine", extra=""))
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "Mine")
    for args, cwd in ((("status",), clone / "events"), (("status", "-C", str(clone)), tmp_path),
                      (("status", str(clone)), tmp_path)):
        done = cli(*args, cwd=cwd)
        assert done.returncode == 0, (args, done.stderr)
        state = json.loads(done.stdout)
        assert state["kind"] == "clone" and Path(state["root"]) == clone and state["branch"] == "work"
        assert state["head"]["subject"] == "Mine"
        assert state["upstream"] == {"branch": "origin/main", "ahead": 1, "behind": 0}
        assert state["files_with_problems"] == 2
        assert any(p.startswith("events/theirs-broken.md:4:") for p in state["problems"])
        assert "GET /calendar/events/v1/status" in state["service"]
    outside = cli("status", cwd=tmp_path)
    assert outside.returncode == 2 and "not in a content repository" in outside.stderr

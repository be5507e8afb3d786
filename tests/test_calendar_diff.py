"""``python -m calendar_service diff``: what a pull request does to the calendar, on real
histories in a clone of a remote served by ``git daemon`` (a revert, a rename with an edit, a
series edit, a deleted venue, a moved event, an overlap at one venue), in text and Markdown,
and the commands of the shipped CI workflow."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from servers import git_daemon

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "deploy" / "content-ci" / "github-actions.yml"

VENUE = "id: {id}\nvenue: {name}\nslug: {slug}\n"
EVENT = """---
id: {id}
title: {title}
slug: {slug}
status: publish
start_date: '{start}'
end_date: '{end}'
timezone: Europe/Berlin
{extra}---
{body}
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALENDAR_TIMEZONE": "Europe/Berlin"}
    env.pop("CALENDAR_CONTENT_DIR", None)
    return subprocess.run([sys.executable, "-m", "calendar_service", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def event(rid, title, start, end, extra="", body="About it."):
    slug = title.lower().replace(" ", "-")
    return EVENT.format(id=rid, title=title, slug=slug, start=start, end=end, extra=extra, body=body)


@pytest.fixture
def clone(tmp_path):
    """An editor's clone (on a feature branch) of a remote served over git://, holding a small
    calendar: two venues, a concert at the hall, a weekly series at the club."""
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(served / "calendar.git")], check=True)
    with git_daemon(served) as url:
        seed = tmp_path / "seed"
        subprocess.run(["git", "clone", "-q", f"{url}/calendar.git", str(seed)], check=True, capture_output=True)
        for repo in (seed,):
            git(repo, "config", "user.email", "seed@example.org")
            git(repo, "config", "user.name", "Seed")
        write(seed, "venues/hall.yaml", VENUE.format(id=1, name="Hall", slug="hall"))
        write(seed, "venues/club.yaml", VENUE.format(id=2, name="Club", slug="club"))
        write(seed, "events/2027/06/concert.md", event(3, "Concert", "2027-06-12 19:00:00", "2027-06-12 21:00:00",
                                                       "venue: [1]\ncost: '10'\n"))
        write(seed, "events/2027/06/quiz.md", event(4, "Quiz", "2027-06-01 20:00:00", "2027-06-01 22:00:00",
                                                    "venue: [2]\nrecurrence:\n- RRULE:FREQ=WEEKLY;COUNT=4\n"))
        git(seed, "add", "-A")
        git(seed, "commit", "-qm", "A small calendar")
        git(seed, "push", "-q", "origin", "main")
        editor = tmp_path / "editor"
        subprocess.run(["git", "clone", "-q", f"{url}/calendar.git", str(editor)], check=True, capture_output=True)
        git(editor, "config", "user.email", "editor@example.org")
        git(editor, "config", "user.name", "Editor")
        git(editor, "checkout", "-q", "-b", "my-change")
        yield editor


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def test_a_clean_branch_shows_no_change(clone):
    r = run_cli("diff", cwd=clone)
    assert r.returncode == 0, r.stderr
    assert "no change to the calendar" in r.stdout
    assert "(the merge base with origin/" in r.stdout


def test_a_moved_event_shows_old_and_new_dates_in_its_zone(clone):
    write(clone, "events/2027/06/concert.md", event(3, "Concert", "2027-06-13 20:00:00", "2027-06-13 23:00:00",
                                                    "venue: [1]\ncost: '12'\n"))
    r = run_cli("diff", cwd=clone)       # the working tree, not committed yet
    assert r.returncode == 0, r.stderr
    assert "1 changed" in r.stdout
    assert ("moved: Sat 12 Jun 2027 19:00–21:00 Europe/Berlin → Sun 13 Jun 2027 20:00–23:00 Europe/Berlin"
            in r.stdout)
    assert "cost: 10 → 12" in r.stdout
    commit(clone, "Move the concert")
    assert run_cli("diff", cwd=clone).stdout == r.stdout   # committed: the same change


def test_a_rename_with_an_edit_is_one_record_that_moved_files(clone):
    git(clone, "mv", "events/2027/06/concert.md", "events/2027/06/summer-concert.md")
    text = (clone / "events/2027/06/summer-concert.md").read_text()
    (clone / "events/2027/06/summer-concert.md").write_text(text.replace("title: Concert", "title: Summer Concert"))
    commit(clone, "Rename the concert")
    r = run_cli("diff", "origin/main", "HEAD", cwd=clone)
    assert r.returncode == 0, r.stderr
    assert "1 changed" in r.stdout and "added" not in r.stdout and "removed" not in r.stdout
    assert "file: events/2027/06/concert.md → events/2027/06/summer-concert.md" in r.stdout
    assert "title: Concert → Summer Concert" in r.stdout


def test_a_revert_undoes_the_diff(clone):
    write(clone, "events/2027/06/concert.md", event(3, "Concert", "2027-06-12 19:00:00", "2027-06-12 21:00:00",
                                                    "venue: [1]\ncost: '15'\n"))
    commit(clone, "Raise the price")
    changed = run_cli("diff", "origin/main", "HEAD", cwd=clone)
    assert "cost: 10 → 15" in changed.stdout
    git(clone, "revert", "--no-edit", "HEAD")
    r = run_cli("diff", "origin/main", "HEAD", cwd=clone)
    assert r.returncode == 0 and "no change to the calendar" in r.stdout
    between = run_cli("diff", "HEAD~1", "HEAD", cwd=clone)      # the revert itself
    assert "cost: 15 → 10" in between.stdout


def test_a_series_edit_lists_the_occurrences_that_appear_and_disappear(clone):
    path = "events/2027/06/quiz.md"
    text = (clone / path).read_text()
    (clone / path).write_text(text.replace("COUNT=4", "COUNT=6"))
    r = run_cli("diff", cwd=clone)
    assert r.returncode == 0, r.stderr
    assert "occurrences: 2 appear, 0 disappear" in r.stdout
    assert "+ Tue 29 Jun 2027 20:00–22:00" in r.stdout and "+ Tue 06 Jul 2027 20:00–22:00" in r.stdout
    (clone / path).write_text(text.replace("COUNT=4", "COUNT=4\n- EXDATE;TZID=Europe/Berlin:20270608T200000"))
    r = run_cli("diff", cwd=clone)
    assert "occurrences: 0 appear, 1 disappear" in r.stdout, r.stdout
    assert "- Tue 08 Jun 2027 20:00–22:00" in r.stdout


def test_a_deleted_venue_breaks_references_and_fails(clone):
    (clone / "venues/hall.yaml").unlink()
    commit(clone, "Remove the hall")
    r = run_cli("diff", cwd=clone)
    assert r.returncode == 1, r.stdout
    assert "1 removed" in r.stdout and 'venue 1 "Hall"' in r.stdout
    assert "References that break" in r.stdout
    assert "events/2027/06/concert.md:" in r.stdout and "venue: no venue has the id 1" in r.stdout


def test_a_file_that_no_longer_reads_fails_and_is_not_called_removed(clone):
    path = clone / "events/2027/06/concert.md"
    path.write_text(path.read_text().replace("cost: '10'", "cost: '10'\ncost: '11'"))
    r = run_cli("diff", cwd=clone)
    assert r.returncode == 1
    assert "Files that no longer read" in r.stdout and "events/2027/06/concert.md:" in r.stdout
    assert "removed" not in r.stdout


def test_a_new_overlap_at_one_venue_is_reported_once(clone):
    write(clone, "events/2027/06/talk.md", "---\n" + event(None, "Talk", "2027-06-12 20:00:00", "2027-06-12 22:00:00",
                                                           "venue: [1]\n").split("\n", 2)[2])
    r = run_cli("diff", cwd=clone)
    assert r.returncode == 0, r.stderr
    assert "1 added" in r.stdout and "(new, no id yet)" in r.stdout
    assert "Overlaps at one venue (new)" in r.stdout
    assert "Hall: Concert (event 3) and Talk (events/2027/06/talk.md), Sat 12 Jun 2027 20:00–21:00" in r.stdout
    # an overlap already on the base branch is not the change's
    commit(clone, "Add a talk")
    write(clone, "events/2027/06/talk.md", (clone / "events/2027/06/talk.md").read_text().replace("Talk", "Talk!"))
    again = run_cli("diff", "HEAD", cwd=clone)
    assert "Overlaps" not in again.stdout


def test_markdown_for_a_pull_request_comment(clone):
    (clone / "venues/hall.yaml").unlink()
    write(clone, "venues/club.yaml", VENUE.format(id=2, name="The *Club* [x](http://evil)", slug="club"))
    r = run_cli("diff", "--format", "markdown", cwd=clone)
    assert r.returncode == 1
    out = r.stdout
    assert out.startswith("### ❌ Calendar diff\n")
    assert "#### Removed (1)" in out and "#### ❌ References that break" in out
    assert "\\*Club\\* \\[x\\]" in out          # a title cannot format or link the comment


def test_wrong_use_exits_2(clone, tmp_path):
    assert run_cli("diff", "no-such-branch", cwd=clone).returncode == 2
    assert run_cli("diff", "--upload-pack=evil", cwd=clone).returncode == 2
    elsewhere = tmp_path / "not-a-clone"
    elsewhere.mkdir()
    r = run_cli("diff", "-C", str(elsewhere), cwd=tmp_path)
    assert r.returncode == 2 and "not a content repository" in r.stderr


def test_the_shipped_workflow_runs_these_commands(clone):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["calendar"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps)
    assert "python -m calendar_service diff" in script and "--format markdown" in script
    assert workflow[True]["pull_request"] is not None or "pull_request" in workflow[True]
    # the diff step as the workflow runs it, on a pull request's branch
    commit_file = clone / "venues/club.yaml"
    commit_file.write_text(commit_file.read_text().replace("Club", "Jazz Club"))
    commit(clone, "Rename the club")
    assert "validate --changed \"$BASE\"" in script
    checked = run_cli("validate", "--changed", "origin/main", cwd=clone)       # the validate step
    assert checked.returncode == 0, checked.stdout + checked.stderr
    r = run_cli("diff", "origin/main", "HEAD", "--format", "markdown", cwd=clone)   # the diff step
    assert r.returncode == 0 and "venue: Club → Jazz Club" in r.stdout
    (clone / "venues/hall.yaml").unlink()                                     # a change that breaks
    commit(clone, "Remove the hall")
    assert run_cli("validate", "--changed", "origin/main", cwd=clone).returncode == 1
    assert run_cli("diff", "origin/main", "HEAD", "--format", "markdown", cwd=clone).returncode == 1

"""Editors working in git: ``python -m calendar_service validate`` and ``new``, on real files,
through main() and as a real subprocess (as pre-commit and CI run it), and the files they
accept being served by the API once committed with plain git."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import followed

from calendar_service.cli.commands import main
from calendar_service.domain.record_files import ID_PLACEHOLDER
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.store import GitStore

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command as an editor, a pre-commit hook or CI runs it."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "calendar_service", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=60)


def write(root: Path, path: str, content: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")


EVENT = """---
id: {id}
title: {title}
start_date: '2030-05-01 10:00:00'
end_date: '2030-05-01 12:00:00'
{extra}---
Body.
"""


@pytest.fixture
def content(tmp_path) -> Path:
    """A small valid content directory (no git needed: validate reads the working tree)."""
    root = tmp_path / "content"
    write(root, "venues/hall.yaml", "id: 1\nvenue: Hall\n")
    write(root, "organizers/club.yaml", "id: 2\norganizer: Club\n")
    write(root, "categories/music.yaml", "id: 1\nname: Music\n")
    write(root, "categories/jazz.yaml", "id: 2\nname: Jazz\nparent: 1\n")
    write(root, "tags/free.yaml", "id: 3\nname: free\n")
    write(root, "events/concert.md", EVENT.format(
        id=3, title="Concert", extra="venue: [1]\norganizer: [club]\ncategories: [1, jazz]\ntags: [3]\n"))
    return root


# ----------------------------------------------------------------------------- validate


def test_validate_accepts_valid_content_with_a_summary(content, capsys):
    assert main(["validate", str(content)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("content OK: 6 records in 6 files")
    assert "1 events" in out[0] and "2 categories" in out[0]


PROBLEMS = {
    # path: (content, [(line, words expected in the message)])
    "events/bad-yaml.md": ("---\nid: 10\ntitle: [unclosed\n---\n", [(4, "YAML syntax error")]),
    "events/no-title.md": ("---\nid: 11\nstart_date: '2030-01-01 10:00:00'\nend_date: '2030-01-01 11:00:00'\n---\n",
                           [(1, "required field 'title' is missing")]),
    "events/no-dates.md": ("---\nid: 12\ntitle: X\n---\n", [(1, "'start_date' is missing"), (1, "'end_date' is missing")]),
    "events/bad-date.md": (EVENT.format(id=13, title="Bad", extra="").replace("2030-05-01 10:00:00", "someday"),
                           [(4, "'start_date' must be a date and time")]),
    "events/backwards.md": (EVENT.format(id=14, title="Back", extra="").replace("2030-05-01 12:00:00", "2030-04-01 12:00:00"),
                            [(5, "end_date is before start_date")]),
    "events/wrong-type.md": (EVENT.format(id=15, title="Flag", extra="featured: maybe\n"),
                             [(6, "'featured' must be true or false")]),
    "events/refs.md": (EVENT.format(id=16, title="Refs", extra="venue: [99]\norganizer: [nobody]\ntags: [77]\n"),
                       [(6, "venue: no venue has the id 99"), (7, "organizer: no organizer has the slug 'nobody'"),
                        (8, "tags: no tag has the id 77")]),
    "events/typo.md": (EVENT.format(id=17, title="Typo", extra="feautred: true\n"),
                       [(6, "unknown key 'feautred' (did you mean 'featured'?)")]),
    "events/other-name.md": (EVENT.format(id=18, title="Other", extra="slug: something-else\n"),
                             [(6, "slug 'something-else' does not match the file name 'other-name'")]),
    "venues/same-id.yaml": ("id: 3\nvenue: Same id as the concert\n",
                            [(1, "warning: id 3 is also in events/concert.md, which is older: the service gives this file a new id")]),
    "tags/same-id-as-free.yaml": ("id: 3\nname: again\n", [(1, "id 3 is also in tags/free.yaml")]),
    "events/twice.md": (EVENT.format(id=19, title="Twice", extra="title: Again\n"),
                        [(6, "duplicate key 'title' (first on line 3); YAML would keep only the last")]),
    "venues/twice.yaml": ("id: 21\nvenue: A\ncity: B\n\ncity: C\n", [(5, "duplicate key 'city' (first on line 3)")]),
    "events/unclosed.md": (EVENT.format(id=22, title="Open", extra="").replace("---\nBody", "Body"),
                           [(1, "the front matter is not closed")]),
    "categories/orphan.yaml": ("id: 20\nname: Orphan\nparent: 99\n", [(3, "parent: no category has the id 99")]),
    "organizers/list.yaml": ("- a\n- b\n", [(1, "expected a mapping")]),
    "events/notes.txt": ("notes\n", [(1, "not read by the service")]),
}


def test_validate_reports_every_problem_as_path_line_message(content, capsys):
    for path, (text, _) in PROBLEMS.items():
        write(content, path, text)
    assert main(["validate", str(content)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    for path, (_, expected) in PROBLEMS.items():
        for line, words in expected:
            prefix = f"{content / path}:{line}: "
            assert any(l.startswith(prefix) and words in l for l in lines), (path, line, words, lines)
    assert len(lines) == sum(len(e) for _, e in PROBLEMS.values()), lines
    assert "problem(s)" in captured.err and "content OK" not in captured.out


def test_validate_reports_what_the_service_skips(content, capsys):
    """Errors validate reports are exactly the files the service refuses to serve (one set of rules)."""
    for path, (text, _) in PROBLEMS.items():
        write(content, path, text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(content)], check=True)
    subprocess.run(["git", "-C", str(content), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(content), "-c", "user.name=E", "-c", "user.email=e@x", "commit", "-qm", "all"],
                   check=True)
    store = GitStore(content)
    try:
        skipped = {p.path for p in Catalog(store).current().problems if p.severity == "error"}
    finally:
        store.close()
    main(["validate", str(content)])
    reported = {line.split(":", 1)[0] for line in capsys.readouterr().out.splitlines() if ": warning: " not in line}
    reported = {str(Path(p).relative_to(content)) for p in reported}
    references = {"events/refs.md", "categories/orphan.yaml"}  # served, with the dangling references left out
    assert skipped == reported - references


def test_warnings_fail_unless_allowed(content, capsys):
    write(content, "events/typo.md", EVENT.format(id=17, title="Typo", extra="my_note: kept\n"))
    assert main(["validate", str(content)]) == 1
    assert main(["validate", str(content), "--allow-warnings"]) == 0
    out = capsys.readouterr().out
    assert "warning: unknown key 'my_note'" in out and "content OK" in out


def test_validate_as_a_subprocess_in_the_content_directory(content):
    """As the pre-commit hook runs it: ``validate .`` from the repository root, relative paths."""
    ok = run_cli("validate", ".", cwd=content)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("content OK")
    write(content, "events/broken.md", "---\nid: 40\ntitle: [x\n---\n")
    bad = run_cli("validate", ".", cwd=content)
    assert bad.returncode == 1
    assert bad.stdout.splitlines() == ["events/broken.md:4: YAML syntax error: did not find expected ',' or ']'"]


def test_validate_defaults_to_the_configured_content_dir(content, tmp_path):
    write(content, "venues/broken.yaml", "id: 50\n")
    result = run_cli("validate", cwd=tmp_path, env={"CALENDAR_CONTENT_DIR": str(content)})
    assert result.returncode == 1
    assert f"{content}/venues/broken.yaml:1: required field 'venue' is missing" in result.stdout
    missing = run_cli("validate", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no content directory" in missing.stderr


def test_the_pre_commit_hook_definition_runs_validate():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "calendar-validate")
    # pre-commit passes the staged files: only they (and what they break elsewhere) count
    assert hook["language"] == "python" and hook["pass_filenames"] is True and "args" not in hook
    assert hook["entry"] == "python -m calendar_service validate"


# ----------------------------------------------------------------------------- new


def test_new_writes_valid_files_without_an_id(content, capsys):
    assert main(["new", "event", "--title", "Jazz Night!", "--start", "2030-06-01 20:00", "--end", "2030-06-01 23:00",
                 "--timezone", "Europe/Berlin", "--dir", str(content)]) == 0
    assert main(["new", "venue", "--title", "Riverside Hall", "--dir", str(content)]) == 0
    assert main(["new", "tag", "--title", "Outdoor", "--dir", str(content)]) == 0
    assert main(["new", "organizer", "--title", "Arts Council", "--status", "draft", "--dir", str(content)]) == 0
    assert main(["new", "category", "--title", "Workshops", "--description", "Learn", "--dir", str(content)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(content / p) for p in ("events/2030/06/jazz-night.md", "venues/riverside-hall.yaml",
                                                   "tags/outdoor.yaml", "organizers/arts-council.yaml",
                                                   "categories/workshops.yaml")]
    event = (content / "events/2030/06/jazz-night.md").read_text()
    # no id: one picked here could be handed out by the API meanwhile; the service fills in the
    # empty id: line at the top (its commit then merges with the editor's next edit)
    assert event.startswith("---\n" + ID_PLACEHOLDER + "title: Jazz Night!\nslug: jazz-night\nstatus: publish\n")
    assert "start_date: '2030-06-01 20:00:00'\nend_date: '2030-06-01 23:00:00'\ntimezone: Europe/Berlin\n" in event
    venue = (content / "venues/riverside-hall.yaml").read_text()
    assert venue.startswith(ID_PLACEHOLDER) and yaml.safe_load(venue)["id"] is None
    assert yaml.safe_load((content / "organizers/arts-council.yaml").read_text())["status"] == "draft"
    assert yaml.safe_load((content / "categories/workshops.yaml").read_text()) == {
        "id": None, "name": "Workshops", "slug": "workshops", "description": "Learn"}
    assert main(["validate", str(content)]) == 0


def test_new_refuses_to_overwrite_and_to_write_invalid_events(content, capsys):
    before = (content / "venues/hall.yaml").read_bytes()
    assert main(["new", "venue", "--title", "Hall", "--dir", str(content)]) == 2
    assert (content / "venues/hall.yaml").read_bytes() == before
    assert "exists already" in capsys.readouterr().err
    for args in (["--start", "2030-01-01 10:00"], ["--start", "2030-01-02", "--end", "2030-01-01"],
                 ["--start", "whenever", "--end", "2030-01-01"], ["--start", "2030-01-01", "--end", "2030-01-02",
                                                                  "--timezone", "Mars/Olympus"]):
        assert main(["new", "event", "--title", "Party", *args, "--dir", str(content)]) == 2, args
    assert main(["new", "event", "--title", "Party", "--slug", "../escape", "--start", "2030-01-01",
                 "--end", "2030-01-01", "--dir", str(content)]) == 2
    assert not (content / "events/party.md").exists() and not (content / "escape.md").exists()


def test_a_new_file_committed_with_git_is_served(app, anon, repo, factory, paths):
    venue = factory.venue()
    result = run_cli("new", "event", "--title", "Committed by hand", "--start", "2030-03-01 18:00",
                     "--end", "2030-03-01 20:00", "--dir", str(paths["content_dir"]))
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip())
    assert path == paths["content_dir"] / "events/2030/03/committed-by-hand.md"  # the folder of its month
    assert repo.status().strip() == "?? events/"  # written, not committed
    repo("add", "events/2030/03/committed-by-hand.md")
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "Add an event")
    before = repo.head()
    followed(app)   # the follower thread gives the file the next id, in a commit of its own
    r = anon.get(f"/events/{venue['id'] + 1}")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["title"] == "Committed by hand" and r.get_json()["start_date"] == "2030-03-01 18:00:00"
    assert repo("rev-parse", "HEAD~1").strip() == before
    assert repo.last_author() == "Calendar Service <calendar-service@localhost>"
    assert repo.last_message().startswith("Give ids and slugs to files")
    assert f"events/2030/03/committed-by-hand.md: had no id; now id {venue['id'] + 1}" in repo.last_message()
    # new's placeholder line filled in, the comment under it kept
    placeholder = ID_PLACEHOLDER.replace("id:", f"id: {venue['id'] + 1}", 1)
    assert path.read_text().startswith(f"---\n{placeholder}title: Committed by hand\n")
    assert repo.status() == ""


def test_validate_and_new_work_on_the_content_clone_they_run_in(tmp_path, content):
    """Run at the top of a content clone (or in one of its folders) without arguments, both
    commands work on that clone, not on ./content."""
    subprocess.run(["git", "init", "-q", str(content)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALENDAR_")}
    env["PYTHONPATH"] = str(ROOT)

    def run(*args, cwd):
        return subprocess.run([sys.executable, "-m", "calendar_service", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60)

    ok = run("validate", cwd=content)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("content OK: 6 records in 6 files")
    made = run("new", "event", "--title", "Advent Market", "--start", "2030-12-01 10:00", "--end", "2030-12-01 18:00",
               cwd=content / "events")
    assert made.returncode == 0, made.stderr
    assert Path(made.stdout.strip()) == content / "events/2030/12/advent-market.md"
    assert not (content / "events/content").exists() and not (content / "content").exists()
    write(content, "events/broken.md", "---\nid: 40\ntitle: [x\n---\n")
    bad = run("validate", cwd=content)
    assert bad.returncode == 1
    assert bad.stdout.splitlines() == ["events/broken.md:4: YAML syntax error: did not find expected ',' or ']'"]

"""An API update of a file an editor wrote changes only the lines of the fields it changes:
the editor's key order, comments, blank lines, quoting and body stay, an added key lands
after the key before it in the declared order, and git merges such an update with an
editor's edit of another field."""
from __future__ import annotations

import subprocess

import yaml

from conftest import followed
from test_remote import EDITOR, bare, editor_clone, instance, instances, remote_url  # noqa: F401  (fixtures)

EDITORS_EVENT = """\
---
# Spring fair: keep the title short
title: Spring fair
id: 700
status: publish

# times are local (Europe/Berlin)
start_date: 2030-05-01 10:00:00
end_date: '2030-05-01 12:00:00'
timezone: Europe/Berlin
tags: [fair, spring]
room: Hall B   # not read by the service, kept
website: "https://example.org/fair"
cost: '10'
---
The fair.

  An indented line, and trailing spaces   
"""

PATH = "events/spring-fair.md"


def changed_lines(repo, path: str) -> tuple[list[str], list[str]]:
    """(removed, added) lines of ``path`` in the last commit."""
    diff = repo("show", "--format=", "-U0", "HEAD", "--", path).splitlines()
    removed = [line[1:] for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")]
    return removed, added


# what an API update stamps on a file (the values git's history gave a file without them)
STAMPS = ("author:", "date_utc:", "modified_utc:")


def _without_modified(lines: list[str], stamps=STAMPS) -> list[str]:
    return [line for line in lines if not line.startswith(stamps)]


def _setup(app, repo, text: str = EDITORS_EVENT, path: str = PATH):
    repo.commit_file(path, text, "An editor's event")
    followed(app)


def test_an_update_of_one_field_changes_only_its_line(app, repo, admin):
    _setup(app, repo)
    r = admin.post("/events/700", json={"title": "Spring fair 2030"})
    assert r.status_code == 200, r.get_json()
    removed, added = changed_lines(repo, PATH)
    assert removed == ["title: Spring fair"]
    assert _without_modified(added) == ["title: Spring fair 2030"]
    text = (repo.root / PATH).read_text()
    assert "\n".join(_without_modified(text.split("\n"))) == EDITORS_EVENT.replace("title: Spring fair\n",
                                                                                "title: Spring fair 2030\n")
    # the stamps git's history gave the file are written after the key before them (status)
    assert "status: publish\nauthor: 2\ndate_utc: '" in text and "'\nmodified_utc: '" in text
    got = admin.get("/events/700").get_json()
    assert got["title"] == "Spring fair 2030" and got["cost"].endswith("10")


def test_an_added_field_lands_after_the_key_before_it(app, repo, admin):
    _setup(app, repo)
    r = admin.post("/events/700", json={"all_day": False, "excerpt": "Short", "featured": True})
    assert r.status_code == 200, r.get_json()
    lines = (repo.root / PATH).read_text().split("\n")
    # declared order: ... timezone, all_day, excerpt, cost, ... website, ..., featured, ..., tags
    assert lines[lines.index("timezone: Europe/Berlin") + 1] == "all_day: false"
    assert lines[lines.index("all_day: false") + 1] == "excerpt: Short"
    assert lines[lines.index("website: \"https://example.org/fair\"") + 1] == "featured: true"
    removed, added = changed_lines(repo, PATH)
    assert removed == []
    assert sorted(_without_modified(added)) == ["all_day: false", "excerpt: Short", "featured: true"]


def test_an_added_key_never_goes_inside_the_next_keys_comment(app, repo, admin):
    text = "---\ntitle: Commented\nid: 701\nstatus: publish\n\n# the start is local\nstart_date: 2030-05-01 10:00:00\n" \
           "end_date: 2030-05-01 11:00:00\n---\n"
    _setup(app, repo, text, "events/commented.md")
    r = admin.post("/events/701", json={"date": "2030-01-01 09:00:00"})
    assert r.status_code == 200, r.get_json()
    lines = _without_modified((repo.root / "events/commented.md").read_text().split("\n"), ("author:", "modified_utc:"))
    at = lines.index("status: publish")
    assert lines[at + 1] == "date_utc: '2030-01-01 09:00:00'"
    assert lines[at + 2:at + 5] == ["", "# the start is local", "start_date: 2030-05-01 10:00:00"]


def test_a_removed_field_loses_only_its_lines(app, repo, admin):
    _setup(app, repo)
    r = admin.post("/events/700", json={"cost": ""})
    assert r.status_code == 200, r.get_json()
    removed, added = changed_lines(repo, PATH)
    assert removed == ["cost: '10'"]
    assert _without_modified(added) == []
    assert admin.get("/events/700").get_json()["cost"] == ""


def test_the_body_keeps_its_bytes_and_changes_alone(app, repo, admin):
    _setup(app, repo)
    assert admin.post("/events/700", json={"start_date": "2030-05-01 11:00:00"}).status_code == 200
    text = (repo.root / PATH).read_text()
    assert text.endswith("---\nThe fair.\n\n  An indented line, and trailing spaces   \n")
    assert admin.post("/events/700", json={"description": "New body"}).status_code == 200
    removed, added = changed_lines(repo, PATH)
    assert "The fair." in removed and "New body" in added
    assert _without_modified(added) == ["New body"]
    assert (repo.root / PATH).read_text().split("---\n")[1].startswith("# Spring fair: keep the title short\n")


def test_a_series_write_changes_only_the_recurrence_lines(app, repo, admin):
    text = ("---\ntitle: Weekly\nid: 702\nstatus: publish\nstart_date: 2030-05-06 10:00:00\nend_date: 2030-05-06 11:00:00\n"
            "timezone: UTC\n# every Monday, ten times\nrecurrence:\n  - RRULE:FREQ=WEEKLY;COUNT=10\n"
            "# the organizer writes the venue\nroom: Hall B\n---\nWeekly meeting.\n")
    _setup(app, repo, text, "events/weekly.md")
    r = admin.post("/events/702", json={"recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"]})
    assert r.status_code == 200, r.get_json()
    removed, added = changed_lines(repo, "events/weekly.md")
    assert removed == ["  - RRULE:FREQ=WEEKLY;COUNT=10"] or removed == ["recurrence:", "  - RRULE:FREQ=WEEKLY;COUNT=10"]
    assert any("COUNT=4" in line for line in added)
    assert all(line.startswith(("recurrence", "- ", *STAMPS)) for line in added), added
    after = (repo.root / "events/weekly.md").read_text()
    assert "# every Monday, ten times\nrecurrence:" in after and "# the organizer writes the venue\nroom: Hall B\n" in after


def test_an_odd_file_is_written_whole_and_reads_back(app, repo, admin):
    text = "---\n{title: Flow, id: 703, status: publish, start_date: '2030-05-01 10:00:00', end_date: '2030-05-01 11:00:00'}\n---\n"
    _setup(app, repo, text, "events/flow.md")
    assert admin.post("/events/703", json={"title": "Flow 2"}).status_code == 200
    after = (repo.root / "events/flow.md").read_text()
    assert after.startswith("---\nid: 703\ntitle: Flow 2\n")   # today's layout: the whole file
    assert admin.get("/events/703").get_json()["title"] == "Flow 2"


def test_a_file_the_service_creates_keeps_the_service_layout(app, repo, admin):
    r = admin.post("/events", json={"title": "Made by the API", "start_date": "2030-05-01 10:00:00",
                                    "end_date": "2030-05-01 11:00:00"})
    assert r.status_code == 201
    text = (repo.root / repo.path_of("made-by-the-api")).read_text()
    keys = [line.split(":")[0] for line in text.split("---\n")[1].splitlines()]
    assert keys[:3] == ["id", "title", "slug"]


def test_a_venue_update_keeps_the_editors_yaml(app, repo, admin):
    text = "# our main hall\nvenue: Main Hall\nid: 704\nstatus: publish\ncity: Springfield   # not Shelbyville\n" \
           "stateprovince: IL\n"
    _setup(app, repo, text, "venues/main-hall.yaml")
    assert admin.post("/venues/704", json={"phone": "555-1234"}).status_code == 200
    after = "\n".join(_without_modified((repo.root / "venues/main-hall.yaml").read_text().split("\n")))
    # the older stateprovince is written as state (as a whole file writes it), after city as
    # the declared order puts it, and the phone after the state
    assert after == text.replace("stateprovince: IL\n", "") + "state: IL\nphone: 555-1234\n"


# ----------------------------------------------------------------------------- merging with an editor's PR


def test_an_editors_pr_merges_with_an_api_update_of_another_field(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    assert a.create("Seed").status_code == 201
    editor = editor_clone(bare, tmp_path / "editor")
    (editor.root / PATH).write_text(EDITORS_EVENT)
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "An editor's event")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    # the editor's pull request changes the last key, on a branch of its own
    editor("checkout", "-q", "-b", "cost")
    (editor.root / PATH).write_text(EDITORS_EVENT.replace("cost: '10'", "cost: '12'"))
    editor(*EDITOR, "commit", "-q", "-am", "Raise the cost")
    # meanwhile an API update changes the title on main
    r = a.admin.post("/events/700", json={"title": "Spring fair 2030"})
    assert r.status_code == 200, r.get_json()
    editor("fetch", "-q", "origin")
    editor("checkout", "-q", "main")
    editor("reset", "-q", "--hard", "origin/main")
    done = subprocess.run(["git", *EDITOR, "merge", "--no-edit", "--no-ff", "cost"], cwd=editor.root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = yaml.safe_load((editor.root / PATH).read_text().split("---")[1])
    assert merged["title"] == "Spring fair 2030" and merged["cost"] == "12"
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    got = a.admin.get("/events/700").get_json()
    assert got["title"] == "Spring fair 2030" and got["cost"].endswith("12")


# ----------------------------------------------------------------------------- a 409 after a rename


def test_a_conflict_after_an_editors_rename_names_the_path_the_file_has_now(instance, bare, tmp_path):  # noqa: F811
    a, b = instance("a"), instance("b")
    event = a.create("Renamed later").get_json()
    b.service.pull_remote()
    old_path = b.repo.path_of("renamed-later")
    editor = editor_clone(bare, tmp_path / "editor")
    new_path = "events/renamed-by-hand.md"
    editor("mv", old_path, new_path)
    text = (editor.root / new_path).read_text().replace("title: Renamed later", "title: Renamed by hand")
    (editor.root / new_path).write_text(text)
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "Rename and retitle by hand")
    renamed_in = editor("rev-parse", "--short=12", "HEAD").strip()
    editor("push", "-q", "origin", "main")
    # b has not pulled the rename: its write is refused by the remote, and b pulls
    r = b.admin.post(f"/events/{event['id']}", json={"title": "Title by B"})
    assert r.status_code == 409, r.get_json()
    message = r.get_json()["message"]
    assert f"{new_path}, renamed from {old_path} in {renamed_in}" in message, message
    assert not (b.repo.root / old_path).exists() and (b.repo.root / new_path).exists()
    # the path named is the one to edit: a write after the 409 goes there
    r = b.admin.post(f"/events/{event['id']}", json={"title": "Title by B"})
    assert r.status_code == 200, r.get_json()
    assert "Title by B" in (b.repo.root / new_path).read_text()

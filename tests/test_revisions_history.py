"""``/revisions`` lists every commit that changed a record's file content, on any parent's line,
across renames, children before parents, merges that changed it with their parents: checked
against an independent reading of the history with plain git, on histories made by an editor's
clone of a remote served by ``git daemon`` and the service's own API writes."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import followed
from test_remote import EDITOR, bare, editor_clone, instance, instances, remote_url  # noqa: F401  (fixtures)


def record_blob(repo, commit: str, record_id: int) -> str | None:
    """The blob of the event file holding ``id: record_id`` at ``commit`` (plain git: no service code)."""
    found = subprocess.run(["git", "-C", str(repo.root), "grep", "-l", "-E", f"^id: {record_id}$", commit,
                            "--", "events/"], capture_output=True, text=True).stdout.split()
    if not found:
        return None
    path = found[0].split(":", 1)[1]
    return repo("rev-parse", f"{commit}:{path}").strip()


def commits_that_changed(repo, record_id: int) -> list[str]:
    """Commits of the branch whose version of the record differs from each parent's."""
    changed = []
    for line in repo("rev-list", "--parents", "main").splitlines():
        commit, *parents = line.split()
        mine = record_blob(repo, commit, record_id)
        if all(record_blob(repo, parent, record_id) != mine for parent in parents) and (mine or parents):
            if mine is not None or any(record_blob(repo, p, record_id) for p in parents):
                changed.append(commit)
    return changed


def check(instance, repo, record_id: int) -> list[dict]:
    r = instance.admin.get(f"/events/{record_id}/revisions")
    assert r.status_code == 200, r.get_json()
    revisions = r.get_json()["revisions"]
    listed = [x["commit"] for x in revisions]
    assert len(listed) == len(set(listed)), "each commit once"
    assert sorted(listed) == sorted(commits_that_changed(repo, record_id))
    position = {commit: i for i, commit in enumerate(listed)}
    for entry in revisions:   # children before parents
        assert entry["parents"] == repo("rev-list", "--parents", "-n", "1", entry["commit"]).split()[1:]
        for parent in entry["parents"]:
            if parent in position:
                assert position[parent] > position[entry["commit"]]
        assert instance.admin.get(f"/events/{record_id}/revisions/{entry['commit']}").status_code == 200
    return revisions


def renamed_while_updated(a, bare, tmp_path) -> tuple[dict, str]:
    """An editor's pull request renames and retitles an event while an API update lands on
    main; the editor merges and pushes. Returns the event and the API update's commit."""
    event = a.create("Quiz").get_json()
    path = a.repo.path_of("quiz")
    editor = editor_clone(bare, tmp_path / "editor")
    editor("checkout", "-q", "-b", "pr")
    new_path = path.replace("quiz.md", "pub-quiz.md")
    editor("mv", path, new_path)
    moved = editor.root / new_path
    moved.write_text(moved.read_text().replace("title: Quiz", "title: Pub quiz").replace("slug: quiz", "slug: pub-quiz"))
    editor(*EDITOR, "commit", "-q", "-am", "Rename the quiz")
    # meanwhile an API update lands on main
    assert a.admin.post(f"/events/{event['id']}", json={"cost": "5"}).status_code == 200
    api_commit = a.repo.head()
    editor("fetch", "-q", "origin")
    editor("checkout", "-q", "main")
    editor("merge", "-q", "--ff-only", "origin/main")
    done = subprocess.run(["git", *EDITOR, "merge", "--no-edit", "pr"], cwd=editor.root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr   # git's rename detection merges both
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    return event, api_commit


def test_a_pull_request_that_renamed_and_edited_while_the_api_updated(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    event, api_commit = renamed_while_updated(a, bare, tmp_path)
    served = a.admin.get(f"/events/{event['id']}").get_json()
    assert served["title"] == "Pub quiz" and served["cost"] == "5"
    revisions = check(a, a.repo, event["id"])
    assert api_commit in [x["commit"] for x in revisions]


def test_a_hand_resolved_conflict_is_listed_with_its_parents(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    event = a.create("Talk").get_json()
    path = a.repo.path_of("talk")
    editor = editor_clone(bare, tmp_path / "editor")
    editor("checkout", "-q", "-b", "pr")
    file = editor.root / path
    file.write_text(file.read_text().replace("title: Talk", "title: Talk by the editor"))
    editor(*EDITOR, "commit", "-q", "-am", "Retitle")
    assert a.admin.post(f"/events/{event['id']}", json={"title": "Talk by the API"}).status_code == 200
    editor("fetch", "-q", "origin")
    editor("checkout", "-q", "main")
    editor("merge", "-q", "--ff-only", "origin/main")
    subprocess.run(["git", *EDITOR, "merge", "--no-edit", "pr"], cwd=editor.root, capture_output=True)
    text = file.read_text()
    assert "<<<<<<<" in text
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
             and "title: Talk by" not in line]
    resolved = "".join(lines).replace("---\n", "---\ntitle: Talk, agreed\n", 1)
    file.write_text(resolved)
    editor("add", path)
    editor(*EDITOR, "commit", "-q", "--no-edit")
    merge = editor.head()
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    assert a.admin.get(f"/events/{event['id']}").get_json()["title"] == "Talk, agreed"
    revisions = check(a, a.repo, event["id"])
    assert revisions[0]["commit"] == merge and len(revisions[0]["parents"]) == 2


def test_a_revert_is_a_revision(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    event = a.create("Fair").get_json()
    assert a.admin.post(f"/events/{event['id']}", json={"cost": "9"}).status_code == 200
    editor = editor_clone(bare, tmp_path / "editor")
    editor(*EDITOR, "revert", "--no-edit", "HEAD")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    revisions = check(a, a.repo, event["id"])
    assert revisions[0]["message"].startswith("Revert") and len(revisions) == 3


AUDITING = Path(__file__).resolve().parents[1] / "docs" / "auditing.md"


def audit_recipe() -> str:
    """The shell recipe of docs/auditing.md (its first ```sh block), as auditors copy it."""
    text = AUDITING.read_text()
    return text.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_plain_git_recipe_for_auditors_gives_what_revisions_lists(instance, bare, tmp_path):  # noqa: F811
    """docs/auditing.md's recipe, on a history with a rename on one branch and an API update on
    the other, a hand edit and a revert."""
    a = instance("a")
    event, _ = renamed_while_updated(a, bare, tmp_path)
    other = a.create("Another quiz").get_json()   # a record sharing the template is not pulled in
    # a clean merge that only takes one side's version of the record is no change of it
    editor = editor_clone(bare, tmp_path / "second")
    editor("checkout", "-q", "-b", "pr2")
    path = editor.root / a.repo.path_of("pub-quiz")
    path.write_text(path.read_text().replace("cost: '5'", "cost: '6'"))
    editor(*EDITOR, "commit", "-q", "-am", "Raise the price")
    assert a.admin.post(f"/events/{other['id']}", json={"cost": "1"}).status_code == 200
    editor("fetch", "-q", "origin")
    editor("checkout", "-q", "main")
    editor("merge", "-q", "--ff-only", "origin/main")
    editor(*EDITOR, "merge", "-q", "--no-ff", "--no-edit", "pr2")
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    assert a.admin.get(f"/events/{event['id']}").get_json()["cost"] == "6"
    check(a, a.repo, event["id"])
    out = subprocess.run(["sh", "-c", audit_recipe()], cwd=a.repo.root, capture_output=True, text=True, check=True,
                         env={**os.environ, "ID": str(event["id"])}).stdout.splitlines()
    listed = [x["commit"] for x in a.admin.get(f"/events/{event['id']}/revisions").get_json()["revisions"]]
    assert [line.split()[0] for line in out if line.strip()] == listed


def test_an_editors_new_file_is_listed_from_its_first_commit(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    assert a.create("Seed").status_code == 201
    editor = editor_clone(bare, tmp_path / "editor")
    from calendar_service.cli.commands import main
    assert main(["new", "event", "--title", "Open Mic", "--start", "2030-05-02 20:00", "--end", "2030-05-02 22:00",
                 "--dir", str(editor.root)]) == 0
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "Add the open mic")
    created = editor.head()
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    followed(a.app)
    event = a.admin.get("/events/by-slug/open-mic").get_json()
    listed = [x["commit"] for x in a.admin.get(f"/events/{event['id']}/revisions").get_json()["revisions"]]
    assert listed == [a.repo.head(), created]   # the service's id commit, then the editor's

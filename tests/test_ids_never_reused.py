"""An id is never handed out twice: the next id is above every id a file ever had on the branch
(derived from git: replicas agree, a cold start reads it from the history's deletions)."""
from __future__ import annotations

from test_remote import EDITOR, bare, editor_clone, instance, instances, remote_url  # noqa: F401  (fixtures)


def changes(inst, token):
    answer = inst.admin.get(f"/changes?since={token}").get_json()
    return answer["changes"], answer["next_token"]


def test_reverting_the_newest_create_does_not_free_its_id(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    first = a.create("Kept").get_json()
    token = a.admin.get("/changes").get_json()["next_token"]
    created = a.create("Reverted by an editor")
    assert created.status_code == 201
    reverted_id = created.get_json()["id"]
    create_commit = a.repo.head()
    seen, token = changes(a, token)
    assert seen == [{"type": "events", "id": reverted_id, "action": "created"}]

    editor = editor_clone(bare, tmp_path / "editor")
    editor(*EDITOR, "revert", "--no-edit", create_commit)
    editor("push", "-q", "origin", "main")
    assert a.hook().status_code == 200
    assert a.admin.get(f"/events/{reverted_id}").status_code == 404
    seen, token = changes(a, token)
    assert seen == [{"type": "events", "id": reverted_id, "action": "deleted"}]

    again = a.create("Created after the revert").get_json()
    assert again["id"] > reverted_id and again["id"] != first["id"]
    seen, token = changes(a, token)
    assert seen == [{"type": "events", "id": again["id"], "action": "created"}]

    # a replica starting cold (no records cache) from the same history agrees
    b = instance("b")
    assert b.create("On another replica").get_json()["id"] == again["id"] + 1


def test_a_file_without_id_is_not_given_a_deleted_id(app, admin, repo, factory):
    """The service's id commit (an editor's new file) skips the ids of deleted files too."""
    from conftest import followed
    kept = factory.event(title="Kept", start_date="2030-05-01 08:00", end_date="2030-05-01 09:00")
    gone = factory.event(title="Gone", start_date="2030-05-01 10:00", end_date="2030-05-01 11:00")
    repo("rm", "-q", repo.path_of("gone"))
    repo(*EDITOR, "commit", "-q", "-m", "Remove gone")
    repo.commit_file("events/new-by-hand.md", "---\ntitle: New by hand\nstatus: publish\n"
                     "start_date: 2030-05-02 10:00:00\nend_date: 2030-05-02 11:00:00\n---\n", "New by hand")
    followed(app)
    listed = admin.get("/events?start_date=2000-01-01&end_date=2040-01-01").get_json()["events"]
    assert {e["title"]: e["id"] for e in listed} == {"Kept": kept["id"], "New by hand": gone["id"] + 1}

"""git's split index in version 4 on the service's content repository (docs/architecture.md):
set at start unless git's configuration already says otherwise, the index file converted once,
and everything git's index promises still holds after writes through the API and by editors."""
from __future__ import annotations

import struct

from tests.conftest import Client


def _version(path) -> int:
    head = path.read_bytes()[:8]
    assert head[:4] == b"DIRC"
    return struct.unpack(">I", head[4:8])[0]


def test_the_service_splits_its_index_in_version_4_and_the_index_still_matches_head(paths, make_app, repo):
    repo_dir = paths["content_dir"]
    repo_dir.mkdir(parents=True)
    repo("init", "-q", "-b", "main")
    for n in range(60):   # enough entries that a few writes stay in the split part (git: < 20 % changed)
        (repo_dir / "events").mkdir(exist_ok=True)
        (repo_dir / "events" / f"hand-{n}.md").write_text(
            f"---\nid: {n + 1}\ntitle: Hand made {n}\nstart_date: '2030-01-01 10:00:00'\n"
            "end_date: '2030-01-01 11:00:00'\n---\n")
    repo("add", "events")
    repo("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", "By hand")
    git_dir = repo_dir / ".git"
    assert _version(git_dir / "index") == 2 and not list(git_dir.glob("sharedindex.*"))

    admin = Client(make_app().test_client(), "administrator")
    assert repo("config", "--get", "core.splitIndex").strip() == "true"
    assert repo("config", "--get", "index.version").strip() == "4"
    shared = list(git_dir.glob("sharedindex.*"))
    assert len(shared) == 1 and _version(shared[0]) == 4 and _version(git_dir / "index") == 4
    assert b"link" in (git_dir / "index").read_bytes()   # the split index's extension naming the shared one

    created = []
    for n in range(4):
        r = admin.post("/events", json={"title": f"Split {n}", "start_date": "2030-02-01 10:00:00",
                                        "end_date": "2030-02-01 11:00:00"})
        assert r.status_code == 201, r.get_json()
        created.append(r.get_json())
    # the index matches the branch after every answered write: nothing staged, nothing changed
    assert repo("diff-index", "--cached", "--name-only", "HEAD").strip() == ""
    assert repo.status() == ""
    assert len(repo("ls-files", "events").split()) == 64
    assert [p.name for p in git_dir.glob("sharedindex.*")] == [shared[0].name]   # the big file stays

    # an editor's own git commands read and write the split index as usual
    repo.commit_file("events/second-hand.md", "---\nid: 80\ntitle: Second\nstart_date: '2030-01-02 10:00:00'\n"
                     "end_date: '2030-01-02 11:00:00'\n---\n")
    assert repo.status() == "" and "events/second-hand.md" in repo("ls-files", "events").split()
    assert created[0]["id"] > 60


def test_settings_git_already_has_are_left_alone(paths, make_app, repo):
    repo_dir = paths["content_dir"]
    repo_dir.mkdir(parents=True)
    repo("init", "-q", "-b", "main")
    repo("config", "core.splitIndex", "false")
    repo.commit_file("events/hand-made.md", "---\nid: 7\ntitle: Hand made\nstart_date: '2030-01-01 10:00:00'\n"
                     "end_date: '2030-01-01 11:00:00'\n---\n")
    make_app()
    git_dir = repo_dir / ".git"
    assert repo("config", "--get", "core.splitIndex").strip() == "false"
    assert repo("config", "--get", "index.version").strip() == "4"
    assert not list(git_dir.glob("sharedindex.*")) and _version(git_dir / "index") == 4
    make_app()   # a second start changes nothing
    assert not list(git_dir.glob("sharedindex.*")) and repo.status() == ""

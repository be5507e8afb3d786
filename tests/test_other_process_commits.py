"""What one worker process reads of the commits another worker wrote a moment ago: the files they
changed, the files' contents and their dates, read through the object reader the store keeps
running (no git process started, neither under the write lock nor by the follower), and the
same answers as git's own commands."""
from __future__ import annotations

import subprocess

from calendar_service.domain.resources import EVENTS
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.gitcmd import CONTENT_FOLDERS
from calendar_service.storage.store import GitStore


class Counted(GitStore):
    """A store that counts the git commands it starts."""

    runs: list

    def _git(self, *args, **kwargs):
        self.__dict__.setdefault("runs", []).append(args[0] if args else "")
        return super()._git(*args, **kwargs)


def git_diff(root, old: str, new: str) -> dict:
    out = subprocess.run(["git", "-C", str(root), "diff-tree", "-r", "--no-renames", "--name-status", old, new, "--",
                          *CONTENT_FOLDERS], capture_output=True, text=True, check=True).stdout
    return {line.split("\t", 1)[1]: line.split("\t", 1)[0] for line in out.splitlines()}


def test_the_commits_of_another_worker_are_read_without_a_git_process(admin, factory, repo):
    event = factory.event(title="Before")
    other = Counted(repo.root)
    catalog = Catalog(other)
    before = catalog.current()
    old = before.commit
    # another worker: three commits (an update, a create, an update) on top of what this one read
    factory.event(title="Another")
    factory.event(title="A third")
    from_the_other = admin.post(f"/events/{event['id']}", json={"title": "After"})
    assert from_the_other.status_code == 200
    new = repo("rev-parse", "HEAD").strip()
    other.runs = []
    changed = other.changed_files(old, new)
    snapshot = catalog.current()
    assert other.runs == []
    assert {path: "D" if blob is None else "AM" for path, blob in changed.items()}.keys() == git_diff(repo.root, old, new).keys()
    assert snapshot.commit == new
    fresh = Catalog(GitStore(repo.root)).current()   # what a start reads (one git log of every file)
    assert {p: e[0] for p, e in snapshot.files.items()} == {p: e[0] for p, e in fresh.files.items()}
    for path in changed:
        assert tuple(snapshot.file_dates[path]) == tuple(fresh.file_dates[path]), path
    assert snapshot.get(EVENTS, event["id"]).title == "After"
    other.close()

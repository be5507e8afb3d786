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


def _git_raw(root, old: str, new: str, whole: bool) -> dict:
    out = subprocess.run(["git", "-C", str(root), "diff-tree", "-r", "--no-renames", "--no-abbrev", "-z", old, new,
                          *([] if whole else ["--", *CONTENT_FOLDERS])], capture_output=True, check=True).stdout
    fields = out.split(b"\0")
    found = {}
    for meta, path in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, old_sha, new_sha, status = meta.lstrip(b":").decode().split()
        zero = "0" * 40
        found[path.decode()] = (int(old_mode, 8), int(new_mode, 8), None if old_sha == zero else old_sha,
                                None if new_sha == zero else new_sha, status)
    return found


def test_two_commits_are_diffed_in_process_as_git_diffs_them(repo, make_app):
    """The in-process diff (``history.tree_diff``: versions of a folder compared by their entries'
    bytes, only the differing ones read) gives git's answer: added, changed, deleted files in
    nested folders, a folder emptied, new folders, files beside the content folders, both ways
    and between equal commits; a file turned into a folder is left to git."""
    from calendar_service.storage.history import tree_diff
    make_app()   # makes the repository
    repo.commit_files({f"events/2030/0{m}/e{m}-{k}.md": f"---\nid: {100 + 10 * m + k}\ntitle: E{k}\n---\n"
                       for m in range(1, 4) for k in range(6)} | {"venues/hall.yaml": "id: 9\nvenue: Hall\n",
                                                                  "README.md": "hello\n"})
    old = repo.head()
    repo.commit_files({"events/2030/01/e1-0.md": "---\nid: 110\ntitle: Changed\n---\n",   # changed
                       "events/2030/01/e1-9.md": "---\nid: 119\ntitle: New\n---\n",        # added
                       **{f"events/2030/02/e2-{k}.md": None for k in range(6)},            # a folder emptied
                       "events/2031/05/far.md": "---\nid: 300\ntitle: Far\n---\n",         # new folders
                       "venues/hall.yaml": None, "README.md": "changed\n"})
    new = repo.head()
    store = GitStore(repo.root)
    try:
        for whole in (False, True):
            for a, b in ((old, new), (new, old), (old, old)):
                found = tree_diff(store._objects, a, b, whole)
                assert found is not None
                assert {p: (c.old_mode, c.new_mode, c.old_sha, c.new_sha, c.status) for p, c in found.items()} == \
                    _git_raw(repo.root, a, b, whole)
        assert "README.md" in tree_diff(store._objects, old, new, True)
        assert "README.md" not in tree_diff(store._objects, old, new, False)
        # a file that becomes a folder: git's own order of the two, so git answers
        repo.commit_files({"events/2030/03/e3-0.md": None, "events/2030/03/e3-0.md/inner.md": "---\nid: 130\n---\n"})
        assert tree_diff(store._objects, new, repo.head(), False) is None
    finally:
        store.close()


def test_a_snapshot_knows_what_changed_since_each_of_its_recent_ancestors(app, factory, repo):
    """``Snapshot.changed_after``: the files changed since any of the last CHANGES_KEPT commits it
    was derived through (what the search index needs to catch up with a group of writes), None
    for a commit it was not derived from; the same files git's diff names."""
    from calendar_service.domain.snapshot import CHANGES_KEPT
    catalog = app.extensions["calendar"].catalog
    factory.event(title="First")
    start = catalog.current().commit
    for title in ("Second", "Third", "Fourth"):
        factory.event(title=title)
    venue = factory.venue()
    snapshot = catalog.current()
    assert snapshot.commit == repo.head()
    assert snapshot.changed_after(start) == set(git_diff(repo.root, start, snapshot.commit))
    assert len([p for p in snapshot.changed_after(start) if p.startswith("events/")]) == 3
    assert snapshot.changed_after(snapshot.commit) is None   # not derived from itself
    assert snapshot.changed_after("0" * 40) is None
    assert any(path.startswith("venues/") for path in snapshot.changed_after(start)) and venue["id"]
    for n in range(CHANGES_KEPT):
        factory.tag(name=f"Tag {n}")
    assert catalog.current().changed_after(start) is None   # beyond the steps kept: git answers

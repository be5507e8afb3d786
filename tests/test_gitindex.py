"""Recording written files in git's split index in process (storage/gitindex.py), checked by
git itself: after a commit made without touching git's index (as the service makes them),
``record_files`` must leave an index that git reads as matching the branch, whose cached
folder trees do not undo the commit, and that git's own commands go on using."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from calendar_service.storage import gitindex

IDENT = ["-c", "user.name=Editor", "-c", "user.email=editor@example.org"]


class Repo:
    def __init__(self, root: Path):
        self.root = root
        self.git_dir = root / ".git"

    def __call__(self, *args: str, env: dict | None = None) -> str:
        done = subprocess.run(["git", *IDENT, *args], cwd=self.root, capture_output=True,
                              env={**os.environ, **(env or {})})
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    def commit_behind_the_index(self, files: dict[str, str | None], message: str = "service write") -> None:
        """Write ``files`` (None: delete) to the working tree and commit them through a scratch
        index, leaving git's own index as it was: what a write of the service does."""
        scratch = {"GIT_INDEX_FILE": str(self.git_dir / "scratch-index")}
        self("read-tree", "HEAD", env=scratch)
        for path, text in files.items():
            target = self.root / path
            if text is None:
                target.unlink()
                self("update-index", "--remove", path, env=scratch)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                self("update-index", "--add", path, env=scratch)
        tree = self("write-tree", env=scratch).strip()
        commit = self("commit-tree", tree, "-p", "HEAD", "-m", message).strip()
        self("update-ref", "HEAD", commit)
        (self.git_dir / "scratch-index").unlink()

    def matches_head(self) -> bool:
        staged = self("diff-index", "--cached", "--name-only", "HEAD").strip()
        changed = self("status", "--porcelain").strip()
        return staged == "" and changed == "" and self("write-tree").strip() == self("rev-parse", "HEAD^{tree}").strip()


def _repo(tmp_path: Path, version: int, split: bool = True, files: int = 40) -> Repo:
    repo = Repo(tmp_path / "content")
    repo.root.mkdir(parents=True)
    repo("init", "-q", "-b", "main")
    repo("config", "index.version", str(version))
    repo("config", "core.splitIndex", "true" if split else "false")
    for n in range(files):
        target = repo.root / "events" / "2030" / f"{n % 12 + 1:02d}" / f"event-{n}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"---\nid: {n + 1}\ntitle: Event {n}\n---\n")
    (repo.root / "venues").mkdir()
    (repo.root / "venues" / "hall.yaml").write_text("id: 100\ntitle: Hall\n")
    repo("add", "-A")
    repo("commit", "-q", "-m", "first")
    return repo


@pytest.mark.parametrize("version", [2, 3, 4])
def test_recorded_files_match_the_branch_and_an_editors_commit_keeps_the_write(tmp_path, version):
    repo = _repo(tmp_path, version)
    assert b"link" in (repo.git_dir / "index").read_bytes()
    assert b"TREE" in (repo.git_dir / "index").read_bytes()   # the cached folder trees a stale index would reuse
    written = {"events/2030/01/event-0.md": "---\nid: 1\ntitle: Changed\n---\n",
               "events/2031/07/brand-new.md": "---\nid: 200\ntitle: New month folder\n---\n"}
    repo.commit_behind_the_index(written)
    assert not repo.matches_head()

    assert gitindex.record_files(repo.git_dir, repo.root, list(written)) == gitindex.RECORDED
    assert repo.matches_head()
    assert repo("ls-files", "-s").splitlines() == [
        line.replace(" blob ", " ", 1).replace("\t", " 0\t", 1) for line in repo("ls-tree", "-r", "HEAD").splitlines()]

    # an editor's commit in this checkout commits the editor's file on top of the write, undoing nothing
    (repo.root / "venues" / "hall.yaml").write_text("id: 100\ntitle: Great Hall\n")
    repo("add", "venues/hall.yaml")
    repo("commit", "-q", "-m", "editor")
    assert repo("diff", "--name-only", "HEAD~1", "HEAD").split() == ["venues/hall.yaml"]
    assert "Changed" in repo("show", "HEAD:events/2030/01/event-0.md")
    assert repo.matches_head()


def test_entries_git_moved_into_the_small_file_and_repeated_records_stay_one_entry(tmp_path):
    repo = _repo(tmp_path, 4)
    repo.commit_behind_the_index({"events/2030/02/event-1.md": "one\n"})
    repo("update-index", "-q", "--add", "events/2030/02/event-1.md")   # git writes a replacement entry
    before = (repo.git_dir / "index").stat().st_size
    for n in range(5):
        text = f"round {n}\n"
        repo.commit_behind_the_index({"events/2030/02/event-1.md": text, "events/2030/03/event-2.md": text})
        assert gitindex.record_files(repo.git_dir, repo.root,
                                     ["events/2030/02/event-1.md", "events/2030/03/event-2.md"]) == gitindex.RECORDED
        assert repo.matches_head()
    assert (repo.git_dir / "index").stat().st_size < before + 400   # two entries, not ten
    assert repo("fsck", "--no-progress").strip() == ""


def test_a_change_in_the_same_second_with_the_same_size_is_still_seen(tmp_path):
    repo = _repo(tmp_path, 4)
    repo.commit_behind_the_index({"events/2030/01/event-0.md": "AAAA\n"})
    assert gitindex.record_files(repo.git_dir, repo.root, ["events/2030/01/event-0.md"]) == gitindex.RECORDED
    (repo.root / "events/2030/01/event-0.md").write_text("BBBB\n")   # same size, same second
    assert repo("status", "--porcelain").strip() == "M events/2030/01/event-0.md"


def test_what_is_left_to_git(tmp_path):
    repo = _repo(tmp_path, 4)
    repo.commit_behind_the_index({"events/2030/01/event-0.md": None})
    index = (repo.git_dir / "index").read_bytes()
    # a deleted file: git removes the entry
    assert gitindex.record_files(repo.git_dir, repo.root, ["events/2030/01/event-0.md"]) == gitindex.GIT
    # somebody holds git's index lock: not waited for, and their lock is not touched
    (repo.git_dir / "index.lock").write_bytes(b"theirs")
    assert gitindex.record_files(repo.git_dir, repo.root, ["venues/hall.yaml"]) == gitindex.GIT
    assert (repo.git_dir / "index.lock").read_bytes() == b"theirs"
    (repo.git_dir / "index.lock").unlink()
    # a damaged index file
    (repo.git_dir / "index").write_bytes(index[:-1] + bytes([index[-1] ^ 1]))
    assert gitindex.record_files(repo.git_dir, repo.root, ["venues/hall.yaml"]) == gitindex.GIT
    assert not (repo.git_dir / "index.lock").exists()
    (repo.git_dir / "index").write_bytes(index)
    # an index that is not split
    plain = _repo(tmp_path / "plain", 4, split=False)
    assert gitindex.record_files(plain.git_dir, plain.root, ["venues/hall.yaml"]) == gitindex.GIT


def test_a_small_file_past_its_bound_asks_git_for_a_new_shared_index(tmp_path, monkeypatch):
    repo = _repo(tmp_path, 4)
    monkeypatch.setattr(gitindex, "SPLIT_LIMIT", 3)
    files = {f"events/2032/01/new-{n}.md": f"new {n}\n" for n in range(4)}
    repo.commit_behind_the_index(files)
    assert gitindex.record_files(repo.git_dir, repo.root, list(files)) == gitindex.RESHARE
    assert not repo.matches_head()   # nothing written: git does it, with a new shared index
    shared = set(repo.git_dir.glob("sharedindex.*"))
    repo("-c", "splitIndex.maxPercentChange=0", "update-index", "-q", "--add", *files)
    assert repo.matches_head() and set(repo.git_dir.glob("sharedindex.*")) != shared


def test_varints_round_trip():
    for value in (0, 1, 127, 128, 129, 16511, 16512, 2 ** 40):
        encoded = gitindex.encode_varint(value)
        assert gitindex.decode_varint(encoded + b"rest", 0) == (value, len(encoded))

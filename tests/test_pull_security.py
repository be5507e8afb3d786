"""A hostile pusher: commits on the remote whose trees try to reach outside the content.

Editors push to the shared remote; the service follows it (webhook, periodic pull). A tree
can hold entries git's own checkout refuses (``.git/...``, ``..``, symlinks, submodules),
and a plain bare remote accepts them. Each test crafts such a tree with git's plumbing
(``mktree`` / ``commit-tree``), pushes it to a real bare remote, sends the signed webhook
and checks that nothing moved, nothing was written or run outside the content, the
service keeps serving and writing, and operators are told which commit and path.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import Client
from test_remote import bare, instance, instances, remote, remote_url  # noqa: F401  (fixtures)

ADMIN_ONLY_STATUS = "/status"


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, check=True)
    return done.stdout.decode().strip()


class Crafter:
    """Builds commits with arbitrary trees on top of the remote branch and pushes them."""

    def __init__(self, bare: Path):
        self.bare = bare

    def blob(self, data: bytes) -> str:
        return _git(self.bare, "hash-object", "-w", "--stdin", input=data)

    def tree(self, entries: list[tuple[str, str, str, str]]) -> str:
        """entries: (mode, type, sha, name); names are written as given (no checks)."""
        text = "".join(f"{mode} {kind} {sha}\t{name}\n" for mode, kind, sha, name in entries)
        return _git(self.bare, "mktree", "--missing", input=text.encode())

    def head_entries(self) -> list[tuple[str, str, str, str]]:
        out = _git(self.bare, "ls-tree", "main")
        entries = []
        for line in out.splitlines():
            meta, name = line.split("\t", 1)
            mode, kind, sha = meta.split()
            entries.append((mode, kind, sha, name))
        return entries

    def push_tree_with(self, extra: list[tuple[str, str, str, str]], message: str) -> str:
        """Commit the remote head's tree plus ``extra`` top-level entries and move the remote branch."""
        entries = [e for e in self.head_entries() if e[3] not in {x[3] for x in extra}] + extra
        tree = self.tree(entries)
        parent = _git(self.bare, "rev-parse", "main")
        env_args = ["-c", "user.name=Mallory", "-c", "user.email=mallory@example.org"]
        commit = _git(self.bare, *env_args, "commit-tree", tree, "-p", parent, "-m", message)
        _git(self.bare, "update-ref", "refs/heads/main", commit, parent)
        return commit

    def nested(self, path: str, leaf: tuple[str, str, str]) -> tuple[str, str, str, str]:
        """A top-level entry holding ``leaf`` (mode, type, sha) at ``path`` (components split on /)."""
        parts = path.split("/")
        mode, kind, sha = leaf
        for name in reversed(parts[1:]):
            sha = self.tree([(mode, kind, sha, name)])
            mode, kind = "040000", "tree"
        return (mode, kind, sha, parts[0])


@pytest.fixture
def crafter(bare) -> Crafter:  # noqa: F811
    return Crafter(bare)


@pytest.fixture
def follower(instance, remote):  # noqa: F811
    """A service following the remote, with one published event already pulled."""
    a = instance("a")
    r = a.create("Before the attack")
    assert r.status_code == 201, r.get_json()
    return a


def _event_md(title: str, event_id: int) -> bytes:
    return (f"---\nid: {event_id}\ntitle: {title}\nslug: {title.lower().replace(' ', '-')}\nstatus: publish\n"
            f"start_date: 2031-05-01 10:00:00\nend_date: 2031-05-01 11:00:00\ntimezone: UTC\n---\n").encode()


def _assert_refused(follower, before: str, commit: str, path_fragment: str, tmp_path: Path):
    r = follower.hook()
    assert r.status_code == 409, (r.status_code, r.get_data(as_text=True))
    body = r.get_json()
    assert body["code"] == "calendar-pull-refused"
    assert body["data"]["status"] == 409
    assert body["data"]["commit"] == commit
    assert path_fragment in body["data"]["path"]
    assert follower.repo.head() == before, "a refused pull must not move the branch"
    # operators see it in the status view
    status = follower.admin.get(ADMIN_ONLY_STATUS)
    assert status.status_code == 200, status.get_json()
    refused = status.get_json()["remote"]["refused"]
    assert refused["commit"] == commit and path_fragment in refused["path"]
    # the service keeps serving and writing on its last good head
    listed = follower.admin.get("/events?start_date=2000-01-01")
    assert listed.status_code == 200
    assert [e["title"] for e in listed.get_json()["events"]] == ["Before the attack"]
    created = follower.create("After the attack")
    assert created.status_code == 201, created.get_json()
    assert follower.admin.get(f"/events/{created.get_json()['id']}").status_code == 200
    assert not list(tmp_path.rglob("pwned*")), "a command from the pushed commit ran"


def test_a_dotgit_commondir_with_an_fsmonitor_never_runs(follower, crafter, tmp_path):
    proof = tmp_path / "pwned-proof"
    before = follower.repo.head()
    commondir = crafter.nested(".git/commondir", ("100644", "blob", crafter.blob(b"../evilgit\n")))
    config = crafter.nested("evilgit/config", ("100644", "blob", crafter.blob(
        f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {proof}; false"\n'.encode())))
    commit = crafter.push_tree_with([commondir, config], "innocent looking")
    _assert_refused(follower, before, commit, ".git", tmp_path)
    content = follower.service.settings.content_dir
    assert not (content / ".git" / "commondir").exists()
    assert not (content / "evilgit").exists()
    # a later write runs git update-index again: still nothing runs
    assert follower.create("Once more").status_code == 201
    assert not proof.exists()


@pytest.mark.parametrize("name", [".GIT", ".Git", ".git.", ".git. ", "git~1", "GIT~1"])
def test_every_spelling_of_dotgit_is_refused(follower, crafter, tmp_path, name):
    before = follower.repo.head()
    entry = crafter.nested(f"{name}/config", ("100644", "blob", crafter.blob(b"[core]\n")))
    commit = crafter.push_tree_with([entry], "spelling")
    _assert_refused(follower, before, commit, name.strip(), tmp_path)


def test_a_dotdot_component_is_refused_and_nothing_escapes(follower, crafter, tmp_path):
    before = follower.repo.head()
    escaped = crafter.nested("x/../../escaped.txt", ("100644", "blob", crafter.blob(b"outside\n")))
    commit = crafter.push_tree_with([escaped], "dotdot")
    _assert_refused(follower, before, commit, "..", tmp_path)
    assert not list(tmp_path.rglob("escaped.txt"))
    # every later webhook call still answers in the envelope, never 500
    again = follower.hook()
    assert again.status_code == 409 and again.get_json()["code"] == "calendar-pull-refused"


def _folder_entries(crafter: Crafter, folder: str) -> list[tuple[str, str, str, str]]:
    """The entries of ``folder`` at the remote head, as (mode, type, sha, name)."""
    entries = []
    for line in _git(crafter.bare, "ls-tree", f"main:{folder}").splitlines():
        meta, name = line.split("\t", 1)
        mode, kind, sha = meta.split()
        entries.append((mode, kind, sha, name))
    return entries


def test_a_symlink_in_events_is_refused_and_nothing_outside_is_read(follower, crafter, tmp_path):
    before = follower.repo.head()
    entries = _folder_entries(crafter, "events") + [("120000", "blob", crafter.blob(b"/etc/passwd"), "passwd.md")]
    commit = crafter.push_tree_with([("040000", "tree", crafter.tree(entries), "events")], "symlink")
    _assert_refused(follower, before, commit, "events/passwd.md", tmp_path)
    content = follower.service.settings.content_dir
    assert not (content / "events" / "passwd.md").exists()
    everything = follower.admin.get("/events?start_date=2000-01-01&status=publish,draft,private,pending&per_page=50")
    assert "root:" not in everything.get_data(as_text=True)


def test_a_submodule_is_refused(follower, crafter, tmp_path):
    before = follower.repo.head()
    commit = crafter.push_tree_with([("160000", "commit", "1" * 40, "vendored")], "submodule")
    _assert_refused(follower, before, commit, "vendored", tmp_path)


def test_a_repaired_remote_is_followed_again(follower, crafter, remote, tmp_path):  # noqa: F811
    before = follower.repo.head()
    bad = crafter.push_tree_with([crafter.nested(".git/hooks/post-checkout", ("100755", "blob", crafter.blob(
        f"#!/bin/sh\ntouch {tmp_path}/pwned-hook\n".encode())))], "hook")
    _assert_refused(follower, before, bad, ".git", tmp_path)
    # the editors rewrite the remote's history without the bad commit (the service's own write stays)
    _git(crafter.bare, "update-ref", "refs/heads/main", before)
    repaired = ("100644", "blob", crafter.blob(_event_md("Repaired", 900)), "repaired.md")
    crafter.push_tree_with([("040000", "tree", crafter.tree(_folder_entries(crafter, "events") + [repaired]),
                             "events")], "repair")
    r = follower.hook()
    assert r.status_code == 200, r.get_json()
    status = follower.admin.get(ADMIN_ONLY_STATUS).get_json()
    assert status["remote"]["refused"] is None
    # the repaired event is in 2031, past the default end of a list (24 months from now)
    listed = follower.admin.get("/events?start_date=2000-01-01&end_date=2040-01-01").get_json()["events"]
    titles = sorted(e["title"] for e in listed)
    assert "Repaired" in titles and "After the attack" in titles  # the local write was replayed
    assert _git(crafter.bare, "rev-parse", "main") == follower.repo.head()  # and pushed
    assert not list(tmp_path.rglob("pwned*"))


def test_ordinary_repository_files_are_accepted(follower, crafter):
    readme = ("100644", "blob", crafter.blob(b"# Our calendar\n"), "README.md")
    workflow = crafter.nested(".github/workflows/validate.yml", ("100644", "blob", crafter.blob(b"on: push\n")))
    hook = ("100644", "blob", crafter.blob(b"repos: []\n"), ".pre-commit-config.yaml")
    commit = crafter.push_tree_with([readme, workflow, hook], "docs")
    r = follower.hook()
    assert r.status_code == 200, r.get_json()
    assert follower.repo.head() == commit
    assert (follower.service.settings.content_dir / "README.md").read_bytes() == b"# Our calendar\n"


def test_status_is_for_editors_only(follower):
    anonymous = follower.app.test_client().get("/calendar/events/v1" + ADMIN_ONLY_STATUS)
    assert anonymous.status_code == 401
    assert Client(follower.app.test_client(), "subscriber").get(ADMIN_ONLY_STATUS).status_code == 403
    assert Client(follower.app.test_client(), "editor").get(ADMIN_ONLY_STATUS).status_code == 200


def test_a_pull_at_start_refuses_a_poisoned_remote(instance, crafter, remote, tmp_path):  # noqa: F811
    seed = instance("seed")
    assert seed.create("Seeded").status_code == 201
    commit = crafter.push_tree_with([crafter.nested(".git/config", ("100644", "blob", crafter.blob(
        f'[core]\n\tfsmonitor = "touch {tmp_path}/pwned-start; false"\n'.encode())))], "poison")
    late = instance("late")  # a new replica clones the poisoned remote: it must not check the commit out
    assert late.service.branch_head() != commit
    assert not (late.service.settings.content_dir / ".git" / "config").read_text().count("pwned")
    assert late.create("Late write").status_code in (201, 503)
    assert not list(tmp_path.rglob("pwned*"))


@pytest.mark.parametrize("path", ["events/.gitattributes", ".github/.gitattributes", "events/2031/05/.GitAttributes",
                                  "venues/.gitattributes.", "events/GITATT~1", "events/.gitmodules"])
def test_a_nested_gitattributes_is_refused_like_the_root_one(follower, crafter, tmp_path, path):
    before = follower.repo.head()
    # a filter git would run at checkout, and an encoding that rewrites every event on the way
    attributes = crafter.blob(f"* filter=pwn working-tree-encoding=UTF-16\n# touch {tmp_path}/pwned\n".encode())
    top, rest = path.split("/", 1)
    existing = {e[3]: e for e in crafter.head_entries()}
    if top in existing and existing[top][1] == "tree":
        inner = _folder_entries(crafter, top)
        leaf = crafter.nested(rest, ("100644", "blob", attributes)) if "/" in rest else \
            ("100644", "blob", attributes, rest)
        entry = ("040000", "tree", crafter.tree([e for e in inner if e[3] != leaf[3]] + [leaf]), top)
    else:
        entry = crafter.nested(path, ("100644", "blob", attributes))
    commit = crafter.push_tree_with([entry], "attributes")
    _assert_refused(follower, before, commit, path.rstrip("."), tmp_path)
    refused = follower.admin.get(ADMIN_ONLY_STATUS).get_json()["remote"]["refused"]
    assert "gitattributes" in refused["reason"] or "gitmodules" in refused["reason"], refused
    assert not (follower.service.settings.content_dir / path).exists()

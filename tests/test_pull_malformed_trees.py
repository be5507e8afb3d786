"""A pushed commit whose tree objects are malformed: refused, naming the commit and the path.

git's own object checks (``fetch.fsckObjects``) stop most of these while they are fetched, with
a message naming an object id only; a tree entry whose mode says folder but which points at a
file makes git on the remote unable to send the commit at all. Either way the pull is refused
(409 ``calendar-pull-refused``, ``/status`` ``remote.refused``, one ERROR in the log) naming the
commit and the path an editor has to fix, never "the remote could not be reached". Each tree is
written raw into a real bare remote served by ``git daemon``.
"""
from __future__ import annotations

import logging

import pytest

from test_pull_security import ADMIN_ONLY_STATUS, Crafter, _folder_entries, _git, crafter, follower  # noqa: F401
from test_remote import bare, instance, instances, remote, remote_url  # noqa: F401  (fixtures)


def raw_tree(crafter: Crafter, entries: list[tuple[bytes, bytes, str]]) -> str:
    """A tree object written byte for byte: entries are (mode as written, name, hex id), in the
    order given, without any of git's checks."""
    data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    return _git(crafter.bare, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", input=data)


def events_entries(crafter: Crafter) -> list[tuple[bytes, bytes, str]]:
    return [(b"40000" if mode == "040000" else mode.encode(), name.encode(), sha)
            for mode, _, sha, name in _folder_entries(crafter, "events")]


def push_events(crafter: Crafter, entries: list[tuple[bytes, bytes, str]], message: str) -> str:
    return crafter.push_tree_with([("040000", "tree", raw_tree(crafter, entries), "events")], message)


def first_file(crafter: Crafter) -> tuple[bytes, bytes, str]:
    """The first plain file of the remote's ``events`` folder, at any depth: (mode, path under events/, id)."""
    out = _git(crafter.bare, "ls-tree", "-r", "main:events").splitlines()[0]
    meta, name = out.split("\t", 1)
    mode, _, sha = meta.split()
    return mode.encode(), name.encode(), sha


def assert_refused(follower, before: str, commit: str, path: str, caplog):  # noqa: F811
    with caplog.at_level(logging.ERROR):
        r = follower.hook()
    assert r.status_code == 409, (r.status_code, r.get_data(as_text=True))
    body = r.get_json()
    assert body["code"] == "calendar-pull-refused", body
    assert body["data"]["commit"] == commit
    assert body["data"]["path"] == path, body["data"]
    assert follower.repo.head() == before
    refused = follower.admin.get(ADMIN_ONLY_STATUS).get_json()["remote"]["refused"]
    assert refused is not None and refused["commit"] == commit and refused["path"] == path, refused
    logged = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert any(commit in line and (path or "not a tree") in line for line in logged), logged
    # the service keeps serving and writing
    assert follower.admin.get("/events?start_date=2000-01-01").status_code == 200
    assert follower.create("After the refusal").status_code == 201
    return refused


def _sorted(entries):
    return sorted(entries, key=lambda e: e[1] + (b"/" if e[0] == b"40000" else b""))


@pytest.mark.parametrize("known", [True, False], ids=["a file also listed", "a new file"])
def test_a_folder_entry_pointing_at_a_file_is_refused_not_unreachable(follower, crafter, caplog, known):
    """git on the remote stops before it sends anything: no tree of the commit can be read here, so
    the refusal names the commit and the object (and the entry when the remote's git names it)."""
    before = follower.repo.head()
    blob = crafter.blob(b"---\ntitle: a file\n---\n")
    extra = [(b"100644", b"aa.md", blob)] if known else []
    commit = push_events(crafter, _sorted(events_entries(crafter) + extra + [(b"40000", b"zz", blob)]),
                         "folder is a file")
    with caplog.at_level(logging.ERROR):
        r = follower.hook()
    assert r.status_code == 409, (r.status_code, r.get_data(as_text=True))
    body = r.get_json()
    assert body["code"] == "calendar-pull-refused" and body["data"]["commit"] == commit, body
    assert body["data"]["path"] in ("", "zz") and blob in body["data"]["reason"] + body["data"]["path"] or \
        body["data"]["path"] == "zz", body
    assert "not a tree" in body["data"]["reason"], body
    assert follower.repo.head() == before
    refused = follower.admin.get(ADMIN_ONLY_STATUS).get_json()["remote"]["refused"]
    assert refused is not None and refused["commit"] == commit and "not a tree" in refused["reason"], refused
    assert any(commit in rec.getMessage() for rec in caplog.records if rec.levelno >= logging.ERROR)
    again = follower.hook()  # every later webhook call: the same refusal, never 503 or 500
    assert again.status_code == 409 and again.get_json()["data"]["commit"] == commit
    assert follower.create("After the refusal").status_code == 201


@pytest.mark.parametrize("case", ["bad mode", "zero-padded mode", "duplicate", "dotdot", "slash", "unsorted"])
def test_a_tree_git_refuses_names_the_path(follower, crafter, caplog, case):
    before = follower.repo.head()
    blob = crafter.blob(b"---\ntitle: x\n---\n")
    entries = events_entries(crafter)
    if case == "bad mode":
        entries, path = _sorted(entries + [(b"100600", b"odd.md", blob)]), "events/odd.md"
    elif case == "zero-padded mode":
        sub = raw_tree(crafter, [(b"100644", b"inner.md", blob)])
        entries, path = _sorted(entries + [(b"040000", b"padded", sub)]), "events/padded"
    elif case == "duplicate":
        entries, path = _sorted(entries + [(b"100644", b"twice.md", blob), (b"100644", b"twice.md", blob)]), \
            "events/twice.md"
    elif case == "dotdot":
        sub = raw_tree(crafter, [(b"100644", b"escaped.md", blob)])
        entries, path = _sorted(entries + [(b"40000", b"..", sub)]), "events/.."
    elif case == "slash":
        entries, path = _sorted(entries + [(b"100644", b"a/b.md", blob)]), "events/a/b.md"
    else:
        entries, path = list(reversed(_sorted(entries + [(b"100644", b"zzz.md", blob), (b"100644", b"aaa.md", blob)]))), \
            "events/aaa.md"
    commit = push_events(crafter, entries, case)
    assert_refused(follower, before, commit, path, caplog)

"""Unknown change tokens cannot make a replica hammer its git remote.

A token this replica does not know may come from a replica that is ahead, so the replica looks
at the git remote before answering 410. Anyone can send random tokens: the looks are shared (one
at a time; callers asking meanwhile take its outcome; the same token asked again shortly reuses
it) and anonymous callers are limited per address (429 with ``Retry-After``). What reaches the
remote is counted in the real ``git daemon``'s own log.
"""
from __future__ import annotations

import secrets
import threading

import pytest

from conftest import Client
from servers import git_daemon
from test_remote import bare, instances  # noqa: F401  (fixtures)

N = 8


@pytest.fixture
def logged(bare, tmp_path):  # noqa: F811
    """(remote URL, a function counting the remote's upload-pack requests so far)."""
    log = tmp_path / "daemon.log"
    with git_daemon(bare.parent, log=log) as url:
        yield f"{url}/{bare.name}", lambda: log.read_text(errors="replace").count("Request upload-pack")


def _ask(app, token: str, role=None):
    return Client(app.test_client(), role).get(f"/changes?since={token}")


def test_concurrent_asks_for_an_unknown_token_look_at_the_remote_once(instances, logged):  # noqa: F811
    url, looks = logged
    a = instances("a", url)
    assert a.create("Something").status_code == 201
    token = secrets.token_hex(20)
    before = looks()
    barrier = threading.Barrier(N)
    answers = []

    def ask():
        barrier.wait()
        answers.append(_ask(a.app, token))

    threads = [threading.Thread(target=ask) for _ in range(N)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in answers] == [410] * N, [r.get_json() for r in answers]
    print(f"\n{N} concurrent asks for one unknown token: {looks() - before} request(s) reached the remote")
    assert looks() - before <= 1
    # asked again at once: the answer is reused, the remote is not contacted
    assert _ask(a.app, token).status_code == 410
    assert looks() - before <= 1


def test_concurrent_asks_for_different_unknown_tokens_share_looks(instances, logged):  # noqa: F811
    url, looks = logged
    a = instances("a", url)
    assert a.create("Something").status_code == 201
    before = looks()
    barrier = threading.Barrier(N)
    answers = []

    def ask():
        barrier.wait()
        answers.append(_ask(a.app, secrets.token_hex(20), "editor"))

    threads = [threading.Thread(target=ask) for _ in range(N)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in answers] == [410] * N
    print(f"\n{N} concurrent asks for {N} unknown tokens: {looks() - before} request(s) reached the remote")
    assert looks() - before < N


def test_anonymous_unknown_tokens_are_limited_per_address(instances, logged):  # noqa: F811
    url, looks = logged
    a = instances("a", url, changes_remote_lookups=5, changes_remote_window=60.0)
    assert a.create("Something").status_code == 201
    before = looks()
    for _ in range(5):
        assert _ask(a.app, secrets.token_hex(20)).status_code == 410
    r = _ask(a.app, secrets.token_hex(20))
    assert r.status_code == 429, r.get_json()
    body = r.get_json()
    assert body["code"] == "rest_too_many_requests" and body["data"]["status"] == 429
    assert int(r.headers["Retry-After"]) >= 1
    assert looks() - before <= 5
    # a known token and no token still answer; signed-in callers are not limited
    token = Client(a.app.test_client(), None).get("/changes").get_json()
    assert _ask(a.app, token["next_token"]).status_code == 200
    assert _ask(a.app, secrets.token_hex(20), "editor").status_code == 410

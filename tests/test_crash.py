"""Crash safety with real processes: a server is SIGKILLed (its whole process group) in the
middle of a stream of writes and restarted on the same data. Every write that was
acknowledged with a 2xx is there, git's object store is sound, lock files left by killed git
processes are recovered at start (only when stale), the index catches up and writes work.

Whoosh's own locks are ``fcntl`` locks that the kernel releases when a process dies, so a
killed index writer leaves a lock file that is not held; the test checks the index is
writable after the kill. The kill between the ref update and the working tree (the journal)
is covered in test_store.py; here it is driven through a restart of a real server.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time

import pytest

from conftest import PASSWORDS
from servers import Server, is_envelope, kill_mid_stream

ADMIN = ("administrator", PASSWORDS["administrator"])


def git(root, *args, check=True) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check).stdout


def fsck_full(root) -> None:
    proc = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "error" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def stream_writes(server: Server, acked: list, stop: threading.Event, prefix: str) -> None:
    """Create events (and update the first one) until stopped or the server dies."""
    n = 0
    while not stop.is_set():
        n += 1
        body = {"title": f"{prefix} {n}", "start_date": "2030-01-01 10:00", "end_date": "2030-01-01 11:00",
                "description": f"<p>body {prefix} {n}</p>"}
        try:
            if acked and n % 4 == 0:
                status, parsed, _ = server.request("POST", f"/events/{acked[0][0]}",
                                                   {"excerpt": f"excerpt {prefix} {n}"}, ADMIN, timeout=5)
                if status == 200:
                    acked.append((parsed["id"], parsed["title"], parsed["excerpt"]))
                continue
            status, parsed, _ = server.request("POST", "/events", body, ADMIN, timeout=5)
        except OSError:
            continue  # the server is gone: not acknowledged
        if status == 201:
            acked.append((parsed["id"], parsed["title"], None))


def test_sigkill_mid_stream_loses_nothing_acknowledged(paths):
    content = paths["content_dir"]
    server = Server(paths, "gunicorn", workers=2)
    acked: list = []
    stop = threading.Event()
    writers = [functools.partial(stream_writes, server, acked, stop, f"w{i}") for i in range(3)]
    kill_mid_stream(server, writers, acked, stop, enough=25, seconds=8)
    assert len(acked) >= 10, f"only {len(acked)} writes were acknowledged before the kill"
    fsck_full(content)

    restarted = Server(paths, "app")
    try:
        restarted.start()
        latest: dict = {}
        for ident, title, excerpt in acked:
            latest.setdefault(ident, {"title": title})
            if excerpt is not None:
                latest[ident]["excerpt"] = excerpt
        for ident, expected in latest.items():
            status, body, _ = restarted.request("GET", f"/events/{ident}")
            assert status == 200, (ident, body)
            assert body["title"] == expected["title"]
        # an acknowledged update of the shared event survived (or a later one that was in flight)
        if any(e is not None for _, _, e in acked):
            status, body, _ = restarted.request("GET", f"/events/{acked[0][0]}")
            assert "excerpt w" in body["excerpt"], body["excerpt"]
        # every acknowledged event is in a committed file
        committed = git(content, "grep", "-h", "^id: ", "HEAD", "--", "events").split()
        assert {str(i) for i in latest} <= set(committed)
        # the index catches up: a list served after restart holds every acknowledged event
        status, body, _ = restarted.request("GET", "/events?per_page=50&start_date=2029-12-31&end_date=2030-01-02")
        assert status == 200
        total = body["total"]
        assert total >= len(latest)
        # and writes work again
        status, body, _ = restarted.request("POST", "/events", {"title": "After restart", "start_date": "2030-01-01",
                                                                "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
    finally:
        restarted.kill()
    fsck_full(content)
    assert git(content, "status", "--porcelain") == ""


def _prepare(paths) -> None:
    """A repository with one committed event, made by the service itself."""
    server = Server(paths, "app")
    try:
        server.start()
        status, body, _ = server.request("POST", "/events", {"title": "Seed", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
    finally:
        server.kill()


def test_stale_git_lock_files_are_recovered_at_start(paths):
    content = paths["content_dir"]
    _prepare(paths)
    git_dir = content / ".git"
    locks = [git_dir / "index.lock", git_dir / "refs" / "heads" / "main.lock"]
    for lock in locks:
        lock.write_text("left by a killed git process\n")
        old = time.time() - 600
        os.utime(lock, (old, old))
    # a write killed while writing its files leaves its journal and a temporary file next to the
    # record files (here: killed before the file was renamed into place)
    head = git(content, "rev-parse", "HEAD").strip()
    (git_dir / "calendar-journal.json").write_text(json.dumps({"commit": head, "old": None, "paths": {}}))
    (content / "events" / ".tmp-killed").write_text("half a file")
    (paths["index_dir"] / "whoosh").mkdir(parents=True, exist_ok=True)
    (paths["index_dir"] / "whoosh" / "MAIN_WRITELOCK").touch()  # not held by anyone: the kernel released it
    server = Server(paths, "app")
    try:
        server.start()
        for lock in locks:
            assert not lock.exists(), lock
        assert not (content / "events" / ".tmp-killed").exists()
        assert "removed the stale git lock file .git/index.lock" in server.stderr()
        assert "removed the stale git lock file .git/refs/heads/main.lock" in server.stderr()
        status, body, _ = server.request("POST", "/events", {"title": "After locks", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
        status, body, _ = server.request("GET", "/events?search=locks&start_date=2029-01-01&end_date=2031-01-01")
        assert status == 200 and [e["title"] for e in body["events"]] == ["After locks"]
    finally:
        server.kill()
    fsck_full(content)
    assert git(content, "status", "--porcelain") == ""


def test_a_file_named_like_a_temporary_one_is_left_alone_when_no_write_was_killed(paths):
    """Only a killed write (its journal left behind) makes temporary files in the working tree:
    without one, an editor's file that happens to start with ``.tmp-`` is not the service's."""
    content = paths["content_dir"]
    _prepare(paths)
    (content / "events" / ".tmp-notes").write_text("an editor's notes")
    server = Server(paths, "app")
    try:
        server.start()
        status, body, _ = server.request("GET", "/events?start_date=2029-01-01&end_date=2031-01-01")
        assert status == 200 and [e["title"] for e in body["events"]] == ["Seed"]
    finally:
        server.kill()
    assert (content / "events" / ".tmp-notes").read_text() == "an editor's notes"


def test_a_lock_file_held_by_a_live_process_is_left_alone_and_writes_fail_cleanly(paths):
    """A lock some process holds open may be an editor's git command in progress (git keeps its
    lock files open while it holds them): never removed; the write is a 409."""
    content = paths["content_dir"]
    _prepare(paths)
    lock = content / ".git" / "refs" / "heads" / "main.lock"
    server = Server(paths, "app")
    holder = None
    try:
        server.start()
        head = git(content, "rev-parse", "HEAD")
        with lock.open("w") as handle:  # a live process holding the lock open, as git does
            handle.write("an editor's git process\n")
            holder = subprocess.Popen(["sleep", "120"], stdout=handle)
        status, body, _ = server.request("POST", "/events", {"title": "Blocked", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 409 and is_envelope(body, 409), body
        assert lock.exists()
        assert git(content, "rev-parse", "HEAD") == head
        assert "<content>" in body["message"] or str(content) not in body["message"]
        holder.kill()
        holder.wait()
        lock.unlink()
        status, body, _ = server.request("POST", "/events", {"title": "Unblocked", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        server.kill()
    fsck_full(content)


def test_a_fresh_lock_file_no_process_holds_is_removed_at_once(paths):
    """A writer killed a moment ago leaves a young lock file nobody holds: the next write clears
    it instead of answering 409 until it ages."""
    content = paths["content_dir"]
    _prepare(paths)
    server = Server(paths, "gunicorn", workers=2)
    try:
        server.start()
        lock = content / ".git" / "refs" / "heads" / "main.lock"
        lock.write_text("killed a moment ago\n")
        status, body, _ = server.request("POST", "/events", {"title": "Through", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
        assert not lock.exists()
        assert "removed the stale git lock file .git/refs/heads/main.lock" in server.stderr()
    finally:
        server.kill()
    fsck_full(content)


def test_a_stale_ref_lock_met_while_running_is_recovered(paths):
    """A worker killed inside `git update-ref` while the other workers live on: the next write clears it."""
    content = paths["content_dir"]
    _prepare(paths)
    server = Server(paths, "gunicorn", workers=2)
    try:
        server.start()
        lock = content / ".git" / "refs" / "heads" / "main.lock"
        lock.write_text("killed\n")
        old = time.time() - 600
        os.utime(lock, (old, old))
        status, body, _ = server.request("POST", "/events", {"title": "Through", "start_date": "2030-01-01",
                                                             "end_date": "2030-01-01"}, ADMIN)
        assert status == 201, body
        assert not lock.exists()
    finally:
        server.kill()
    fsck_full(content)
    assert git(content, "status", "--porcelain") == ""


def test_kill_between_ref_update_and_working_tree_is_finished_by_a_restarted_server(paths):
    """The journal case through a real restart: the branch moved, the working tree did not."""
    content = paths["content_dir"]
    _prepare(paths)
    from calendar_service.storage.store import GitStore

    class Killed(GitStore):
        def _sync_worktree(self, changes):
            raise KeyboardInterrupt("killed")

    path = git(content, "ls-files", "events").split()[0]
    before = (content / path).read_bytes()
    store = Killed(content)
    with pytest.raises(KeyboardInterrupt):
        with store.write_lock():
            store.commit({path: before.replace(b"Seed", b"Seed, changed")}, "Killed write",
                         ("A", "a@example.org"), store.head())
    store.close()
    assert (content / path).read_bytes() == before
    server = Server(paths, "gunicorn", workers=2)
    try:
        server.start()
        assert b"Seed, changed" in (content / path).read_bytes()
        status, body, _ = server.request("GET", "/events?start_date=2029-01-01&end_date=2031-01-01")
        assert [e["title"] for e in body["events"]] == ["Seed, changed"]
    finally:
        server.kill()
    assert git(content, "status", "--porcelain") == ""
    fsck_full(content)

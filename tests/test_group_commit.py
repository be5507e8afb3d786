"""Group commit (``storage.grouping``), through a real repository: concurrent writers of one
process build their commits one on another while an earlier group is being published, and
the next publish puts several on the branch with one move.

- history stays a line of one commit per write; the reflog keeps one line per commit;
- no commit is on the branch before its packs are flushed and the branch moved, and another
  process cannot take the write lock while commits are pending;
- a group whose publish finds the branch moved (an editor's commit in the service's checkout)
  is dropped, and the API's write is computed again on the editor's commit: nothing lost.
"""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from conftest import Client

from calendar_service.storage.recovery import SharedFlock
from calendar_service.storage.store import GitStore, StoreError

AUTHOR = ("Writer", "writer@example.org")


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


class SlowFirstPublish(GitStore):
    """A store whose first working-tree update (inside the first publish, after its branch move)
    waits for ``go``: meanwhile the other writers build on the pending commits."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.armed = False
        self.publishing = threading.Event()
        self.go = threading.Event()
        self.worktree_updates: list[list[str]] = []

    def _sync_worktree(self, changes):
        if not self.armed:
            return super()._sync_worktree(changes)
        self.worktree_updates.append(sorted(changes))
        if len(self.worktree_updates) == 1:
            self.publishing.set()
            assert self.go.wait(30)
        super()._sync_worktree(changes)


def write(store: GitStore, name: str, built: list) -> None:
    with store.write_lock(grouped=True):
        base = store.write_base()
        commit = store.commit({f"events/{name}.md": b"%s\n" % name.encode()}, f"Write {name}", AUTHOR, base)
        built.append((name, commit, base))   # in the order the writers held the lock


def other_process_could_lock(root) -> bool:
    """Whether a process other than the store's could take the repository's write lock now."""
    script = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
              "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(3)")
    result = subprocess.run(["python3", "-c", script, str(root / ".git" / "calendar-write.lock")])
    return result.returncode == 0


def test_writers_build_on_pending_commits_and_one_move_publishes_them(tmp_path):
    root = tmp_path / "content"
    store = SlowFirstPublish(root)
    store.init()
    with store.write_lock():
        base = store.commit({"events/start.md": b"---\ntitle: start\n---\n"}, "Start", AUTHOR, store.head())
    store.armed = True

    built: list = []
    first = threading.Thread(target=write, args=(store, "a", built))
    first.start()
    assert store.publishing.wait(30)   # a's publish moved the branch and waits in its working tree
    later = [threading.Thread(target=write, args=(store, name, built)) for name in ("b", "c")]
    for thread in later:
        thread.start()
    deadline = time.monotonic() + 30
    while len(built) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    (_, a, on_a), (y, b, on_b), (z, c, on_c) = built   # y, z: b and c in the order they got the lock
    # each built on the commit before it, none of b and c on the branch yet, and no other
    # process may write meanwhile (it would build on a branch about to move)
    assert (on_a, on_b, on_c) == (base, a, b)
    assert store.head() == a
    assert not (root / "events/b.md").exists() and not (root / "events/c.md").exists()
    assert not other_process_could_lock(root)
    store.go.set()
    for thread in [first, *later]:
        thread.join(30)

    assert store.head() == c and git(root, "rev-parse", "HEAD").strip() == c
    # b and c were published together: one working-tree update with both files
    assert store.worktree_updates == [["events/a.md"], ["events/b.md", "events/c.md"]]
    assert git(root, "log", "--format=%H %s", f"{base}..HEAD").splitlines() == [f"{c} Write {z}", f"{b} Write {y}",
                                                                               f"{a} Write a"]
    assert git(root, "log", "-1", "--format=%an <%ae>", c).strip() == "Writer <writer@example.org>"
    # the reflog: one line per commit, as if each had moved the branch
    reflog = git(root, "reflog", "--format=%H %gs", "main").splitlines()
    assert reflog[:4] == [f"{c} Write {z}", f"{b} Write {y}", f"{a} Write a", f"{base} Start"]
    assert (root / "events/c.md").read_bytes() == b"c\n"
    assert git(root, "status", "--porcelain") == ""
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert other_process_could_lock(root)
    store.close()


def test_a_group_the_branch_moved_under_is_computed_again_on_the_editors_commit(app, repo, admin):
    event = admin.post("/events", json={"title": "Before", "start_date": "2026-12-01 10:00:00",
                                       "end_date": "2026-12-01 11:00:00"}).get_json()
    store = app.extensions["calendar"].store
    queued = store.commit
    moved = []

    def commit_then_editor_commits(*args, **kwargs):
        commit = queued(*args, **kwargs)
        if not moved:   # the API's commit is queued, not yet on the branch: an editor commits in the checkout
            # (with its id: the follower thread would otherwise give it one in a commit of its own)
            repo.commit_file("venues/editors-hall.yaml", "id: 900\nvenue: Editor's hall\n", "Editor's venue")
            moved.append((commit, repo.head()))
        return commit

    store.commit = commit_then_editor_commits
    try:
        response = admin.post(f"/events/{event['id']}", json={"title": "After"})
    finally:
        del store.commit
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["title"] == "After"
    dropped, editors = moved[0]
    # the editor's commit stands, the API's write is one commit on it, the dropped one is nowhere
    updates = git(repo.root, "log", "--format=%H %P %an", "--grep=^Update event", "HEAD").splitlines()
    assert len(updates) == 1   # one commit for the one write
    assert updates[0].split(" ", 2)[1:] == [editors, "Administrator"]
    assert dropped not in git(repo.root, "rev-list", "HEAD")
    assert (repo.root / "venues/editors-hall.yaml").exists()
    assert "title: After" in (repo.root / repo.path_of(event["slug"])).read_text()
    assert repo.status() == ""
    assert Client(app.test_client(), None).get(f"/events/{event['id']}").get_json()["title"] == "After"



WAITER = """
import sys, time
from pathlib import Path
from calendar_service.storage.recovery import SharedFlock
lock = SharedFlock(Path(sys.argv[1]))
print("waiting", flush=True)
lock.acquire()
print(time.monotonic(), flush=True)
lock.release()
"""


def test_a_process_whose_writers_never_pause_lets_a_waiting_process_in(tmp_path):
    """The writers of one process hand the write lock's shares on without a break (each takes
    its share before the one before it lets go, as in a stream of group commits); another
    process waiting for the lock still gets it once the share held when it came is released,
    not when the stream ends."""
    path = tmp_path / "calendar-write.lock"
    lock = SharedFlock(path)

    def writer(held: threading.Event, successor_held: threading.Event) -> None:
        lock.acquire()
        held.set()
        successor_held.wait(0.3)   # let go once the next writer holds a share (or it is kept waiting)
        lock.release()

    held = [threading.Event()]
    threads = []

    def start_writer() -> None:
        held.append(threading.Event())
        threads.append(threading.Thread(target=writer, args=(held[-2], held[-1])))
        threads[-1].start()
        assert held[-2].wait(5)

    stop = threading.Event()

    def relay() -> None:   # writers one after another for at most 4 s
        began = time.monotonic()
        while not stop.is_set() and time.monotonic() - began < 4:
            start_writer()
        held[-1].set()

    relaying = threading.Thread(target=relay)
    relaying.start()
    time.sleep(0.2)
    waiter = subprocess.Popen(["python3", "-c", WAITER, str(path)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    assert waiter.stdout.readline().strip() == "waiting"
    started = time.monotonic()
    got = float(waiter.stdout.readline())
    stop.set()
    relaying.join(10)
    for thread in threads:
        thread.join(5)
    assert waiter.wait(5) == 0
    assert len(threads) > 10   # the relay ran
    assert got - started < 1.5, f"the other process waited {got - started:.2f} s"


TURNS = """
import sys, time
from pathlib import Path
from calendar_service.storage.recovery import SharedFlock
lock = SharedFlock(Path(sys.argv[1]))
print("waiting", flush=True)
for _ in range(6):
    started = time.monotonic()
    lock.acquire()
    print(time.monotonic() - started, flush=True)
    time.sleep(0.01)
    lock.release()
    time.sleep(0.005)
"""


def test_a_waiting_process_waits_for_one_batch_not_for_a_stream(tmp_path):
    """Writers of one process come every 10 ms and hold the lock 20 ms each (each takes its share
    before the one before it lets go, as the writers of a stream of group commits do); a writer
    of another process that comes again and again gets the lock each time once the shares held
    when it came are released: a few tens of milliseconds, not a long hold of the stream."""
    path = tmp_path / "calendar-write.lock"
    lock = SharedFlock(path)
    stop = threading.Event()

    def writer() -> None:
        lock.acquire()
        time.sleep(0.02)
        lock.release()

    def stream() -> None:
        while not stop.is_set():
            threading.Thread(target=writer).start()
            time.sleep(0.01)

    streaming = threading.Thread(target=stream)
    streaming.start()
    try:
        waiter = subprocess.Popen(["python3", "-c", TURNS, str(path)], stdout=subprocess.PIPE, text=True,
                                  cwd=Path(__file__).resolve().parent.parent)
        assert waiter.stdout.readline().strip() == "waiting"
        waits = sorted(float(line) for line in waiter.stdout)
        assert waiter.wait(10) == 0
    finally:
        stop.set()
        streaming.join(5)
    assert len(waits) == 6
    assert waits[3] < 0.12, f"the other process waited {waits}"


class FullDisk(GitStore):
    """A store whose working-tree update fails once, as on a full disk."""

    failed = False

    def _sync_worktree(self, changes):
        if not self.failed and "events/full.md" in changes:
            self.failed = True
            raise OSError(28, "No space left on device", str(self.root / "events/full.md"))
        super()._sync_worktree(changes)


def test_a_publish_that_fails_answers_with_a_store_error_without_the_servers_paths(tmp_path):
    root = tmp_path / "content"
    store = FullDisk(root)
    store.init()
    with store.write_lock():
        store.commit({"events/start.md": b"start\n"}, "Start", AUTHOR, store.head())
    try:
        with store.write_lock(grouped=True):
            commit = store.commit({"events/full.md": b"full\n"}, "Full", AUTHOR, store.write_base())
    except StoreError as exc:
        error = exc
    else:
        raise AssertionError("no error")
    assert "No space left on device" in str(error) and str(tmp_path) not in str(error)
    assert "working tree could not be updated" in str(error)
    # the commit stands (the branch moved before the working tree failed); the journal lets the
    # next start finish the file, and the next write goes on
    assert store.head() == commit
    assert (root / ".git" / "calendar-journal.json").exists()
    store.recover()
    assert (root / "events/full.md").read_bytes() == b"full\n"
    with store.write_lock(grouped=True):
        store.commit({"events/next.md": b"next\n"}, "Next", AUTHOR, store.write_base())
    assert git(root, "status", "--porcelain") == ""
    store.close()

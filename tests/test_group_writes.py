"""The write path under concurrency, through the real stack: threads against one Flask app,
two server processes on one repository, and a server SIGKILLed while a group of writes is
between its commits and its index update.

Every acknowledged write is exactly one commit, authored by its user, holding its content;
no write is lost; the repository stays sound (``git fsck``), its working tree and git's
index match the branch (``git status``), and the small packs writes leave are merged.
"""
from __future__ import annotations

import functools
import re
import subprocess
import threading
from collections import Counter

from conftest import PASSWORDS, Client
from servers import Server, kill_mid_stream

from calendar_service.storage.store import GitStore
from calendar_service.storage.writing import PACK_LIMIT

USERS = {"administrator": "Administrator <administrator@example.org>", "editor": "Editor <editor@example.org>"}


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def fsck_full(root) -> None:
    proc = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "error" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def commits_since(root, base: str) -> list[tuple[str, str, str]]:
    """(commit, author, subject) of the commits after ``base``, oldest first."""
    out = git(root, "log", "--reverse", "--format=%H%x00%an <%ae>%x00%s", f"{base}..HEAD")
    return [tuple(line.split("\0")) for line in out.splitlines()]


def test_threads_each_write_is_one_commit_by_its_user_with_its_content(app, repo, factory):
    events = [factory.event(title=f"Threaded {i}") for i in range(8)]
    base = repo.head()
    outcomes: list = []
    lock = threading.Lock()

    def writer(j: int) -> None:
        role = "administrator" if j % 2 == 0 else "editor"
        client = Client(app.test_client(), role)
        for k in range(5):
            event = events[(j + 2 * k) % len(events)]
            title = f"Writer {j} round {k}"
            response = client.post(f"/events/{event['id']}", json={"title": title})
            with lock:
                outcomes.append((role, event["id"], title, response.status_code))

    threads = [threading.Thread(target=writer, args=(j,)) for j in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [o for o in outcomes if o[3] != 200] == []
    commits = commits_since(repo.root, base)
    assert len(commits) == len(outcomes) == 30
    # each commit: the user's name, the event's subject, and exactly that event's file changed
    by_title = {title: (role, ident) for role, ident, title, _ in outcomes}
    seen = Counter()
    for commit, author, subject in commits:
        assert re.match(r"^Update event \d+", subject), subject
        changed = git(repo.root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()
        assert len(changed) == 1 and changed[0].startswith("events/"), changed
        content = git(repo.root, "show", f"{commit}:{changed[0]}")
        title = re.search(r"^title: (.*)$", content, re.M).group(1).strip("'\"")
        role, ident = by_title[title]
        assert author == USERS[role], (author, role)
        assert subject.startswith(f"Update event {ident} "), (subject, ident)
        seen[title] += 1
    assert set(seen) == set(by_title) and set(seen.values()) == {1}   # none lost, none twice
    # the last write of each event is what the branch holds and serves
    anon = Client(app.test_client(), None)
    last = {}
    for commit, _, subject in commits:
        ident = int(subject.split()[2])
        last[ident] = git(repo.root, "log", "-1", "--format=%H", commit)
    for event in events:
        body = anon.get(f"/events/{event['id']}").get_json()
        assert body["title"] in by_title and by_title[body["title"]][1] == event["id"]
    fsck_full(repo.root)
    assert repo.status() == ""


def test_two_processes_on_one_repository_lose_no_write(paths):
    first = Server(paths, "app")
    second = Server(paths, "app")
    acked: list = []
    lock = threading.Lock()

    def stream(server: Server, name: str) -> None:
        for k in range(12):
            status, body, _ = server.request("POST", "/events", {"title": f"{name} {k}", "start_date": "2030-01-01",
                                                                 "end_date": "2030-01-01"},
                                             ("administrator", PASSWORDS["administrator"]))
            assert status == 201, body
            with lock:
                acked.append((body["id"], body["title"]))

    try:
        first.start()
        second.start()
        threads = [threading.Thread(target=stream, args=(server, f"{name}{t}"))
                   for server, name in ((first, "one"), (second, "two")) for t in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for server in (first, second):
            for ident, title in acked:
                status, body, _ = server.request("GET", f"/events/{ident}")
                assert status == 200 and body["title"] == title
    finally:
        first.kill()
        second.kill()
    content = paths["content_dir"]
    subjects = git(content, "log", "--format=%s").splitlines()
    assert len(acked) == 48 and len(subjects) == 48
    assert Counter(re.match(r"^Create event (\d+)", s).group(1) for s in subjects) == Counter(
        str(ident) for ident, _ in acked)
    fsck_full(content)
    assert git(content, "status", "--porcelain") == ""


def test_sigkill_in_the_middle_of_a_group_loses_nothing_confirmed(paths):
    """Four writers on two workers; the server is killed while writes are in flight (some
    committed and not yet answered, some answered with git's index not yet updated)."""
    content = paths["content_dir"]
    admin = ("administrator", PASSWORDS["administrator"])
    server = Server(paths, "gunicorn", workers=2)
    acked: list = []
    stop = threading.Event()

    def stream(name: str) -> None:
        k = 0
        while not stop.is_set():
            k += 1
            try:
                status, body, _ = server.request("POST", "/events", {"title": f"{name} {k}", "start_date": "2030-01-01",
                                                                     "end_date": "2030-01-01"}, admin, timeout=5)
            except OSError:
                continue  # the server is gone: not acknowledged
            if status == 201:
                acked.append((body["id"], body["title"]))

    writers = [functools.partial(stream, f"group {i}") for i in range(4)]
    kill_mid_stream(server, writers, acked, stop, enough=20, seconds=15)
    assert len(acked) >= 10, f"only {len(acked)} writes were acknowledged before the kill"
    fsck_full(content)
    # every confirmed write is a commit on the branch, once
    subjects = Counter(re.match(r"^Create event (\d+)", s).group(1)
                       for s in git(content, "log", "--format=%s").splitlines())
    for ident, _ in acked:
        assert subjects[str(ident)] == 1, ident
    restarted = Server(paths, "app")
    try:
        restarted.start()   # recovery: git's index entries of the killed group are brought in line
        for ident, title in acked:
            status, body, _ = restarted.request("GET", f"/events/{ident}")
            assert status == 200 and body["title"] == title
        status, body, _ = restarted.request("POST", "/events", {"title": "After the kill", "start_date": "2030-01-01",
                                                                "end_date": "2030-01-01"}, admin)
        assert status == 201, body
    finally:
        restarted.kill()
    fsck_full(content)
    assert git(content, "status", "--porcelain") == ""


def test_each_commit_is_one_small_pack_and_the_packs_are_merged(tmp_path):
    root = tmp_path / "content"
    store = GitStore(root)
    store.init()
    head = None
    heads = []
    for k in range(PACK_LIMIT + 5):
        with store.write_lock():
            head = store.commit({f"events/e{k}.md": f"---\ntitle: E{k}\n---\n".encode(), "venues/v.yaml": b"k: %d\n" % k},
                                f"Write {k}", ("Writer", "writer@example.org"), head)
        heads.append(head)
    store.close()
    assert git(root, "count-objects", "-v").count("count: 0") == 1          # no loose object
    packs = len(list((root / ".git" / "objects" / "pack").glob("*.idx")))
    assert packs <= PACK_LIMIT and packs < len(heads)                      # merged at least once
    fsck_full(root)
    assert git(root, "rev-list", "HEAD").split() == heads[::-1]
    assert git(root, "show", f"{heads[3]}:events/e3.md") == "---\ntitle: E3\n---\n"
    # the branch moved through git's lock protocol: a reflog line per write, with its subject
    reflog = git(root, "reflog", "--format=%H %gs", "refs/heads/main").splitlines()
    assert reflog[0] == f"{heads[-1]} Write {len(heads) - 1}" and len(reflog) == len(heads)
    assert git(root, "status", "--porcelain") == ""

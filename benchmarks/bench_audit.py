"""Benchmark of revisions, revision-at-commit, the changes feed and 304s on a synthetic history.

``python3 -m benchmarks.bench_audit [--events 2000] [--commits 1000] [--repeat 5]`` builds a
content repository with that many events and commits (every 50th a slug rename of event 1),
packs it with ``git gc`` and prints the median time of each request kind, cold (nothing cached
for the head) and warm. The audit figures of docs/performance.md come from here.
"""
from __future__ import annotations

import argparse
import base64
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calendar_service import create_app
from calendar_service.domain import record_files
from calendar_service.auth.accounts import Accounts
from calendar_service.domain.resources import EVENTS
from calendar_service.storage.store import GitStore

API = "/calendar/events/v1"


def _event(record_id: int, title: str, slug: str) -> bytes:
    return record_files.dump(EVENTS, {"id": record_id, "title": title, "slug": slug, "status": "publish",
                                 "start_date": "2030-01-01 10:00:00", "end_date": "2030-01-01 11:00:00",
                                 "timezone": "UTC"})


def build(root: Path, events: int, commits: int) -> None:
    """A repository with ``events`` events and ``commits`` more commits, packed."""
    store = GitStore(root)
    store.init()
    author = ("Bench", "bench@example.org")
    with store.write_lock():
        store.commit({f"events/e{i}.md": _event(i, f"Event {i}", f"e{i}") for i in range(1, events + 1)},
                     "Initial events", author, None)
    slug = "e1"
    for n in range(commits):
        with store.write_lock():
            if n % 50 == 0:
                new = f"e1-r{n}"
                changes = {f"events/{slug}.md": None, f"events/{new}.md": _event(1, f"Event 1 v{n}", new)}
                slug = new
            else:
                i = random.randint(2, events)
                changes = {f"events/e{i}.md": _event(i, f"Event {i} v{n}", f"e{i}")}
            store.commit(changes, f"Change {n}", author, store.head())
    store.close()
    subprocess.run(["git", "-C", str(root), "gc", "-q"], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_audit")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    started = time.monotonic()
    build(work / "content", options.events, options.commits)
    print(f"built {options.events} events and {options.commits} commits in {time.monotonic() - started:.0f} s ({work})")
    git = lambda *args: subprocess.run(["git", "-C", str(work / "content"), *args], capture_output=True,
                                       text=True, check=True).stdout.strip()
    first, middle = git("rev-list", "--max-parents=0", "HEAD"), git("rev-parse", f"HEAD~{options.commits // 10}")
    Accounts(work / "users.yaml").add("bench", "editor", email="bench@example.org", password="bench-password")
    app = create_app({"content_dir": work / "content", "index_dir": work / "index",
                      "users_file": work / "users.yaml", "seed_sample": False})
    svc = app.extensions["calendar"]
    client = app.test_client()
    auth = {"Authorization": "Basic " + base64.b64encode(b"bench:bench-password").decode()}

    def timed(label: str, url: str, headers=auth, expect: int = 200, cold: bool = True, before=None) -> None:
        times = []
        for _ in range(options.repeat):
            if before:
                before()
            if cold:
                svc.catalog.current().memo.clear()
                svc.catalog._past.clear()
                svc.history._logs.clear()
            start = time.perf_counter()
            response = client.get(API + url, headers=headers)
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == expect, response.get_json()
        print(f"{label:<52} p50 {statistics.median(times):8.1f} ms")

    last = options.events
    timed("revisions, busy record (renamed), cold", "/events/1/revisions")
    timed("revisions, quiet record, cold", f"/events/{last}/revisions")
    timed("revisions, other record, same head", f"/events/{last - 1}/revisions", cold=False)
    write = lambda: client.post(API + f"/events/{last - 2}", json={"excerpt": str(time.time())}, headers=auth)
    timed("revisions right after a write", "/events/1/revisions", cold=False, before=write)
    timed("record at the first commit", f"/events/1/revisions/{first}")
    timed(f"record at HEAD~{options.commits // 10}", f"/events/1/revisions/{middle[:10]}")
    timed("changes since the first commit", f"/changes?since={first}")
    timed(f"changes since HEAD~{options.commits // 10}", f"/changes?since={middle}")
    tag = client.get(API + "/events/2").headers["ETag"]
    timed("single read, If-None-Match (304)", "/events/2", headers={"If-None-Match": tag}, expect=304, cold=False)
    timed("single read (200)", "/events/2", headers={}, cold=False)
    for command in (["validate", str(work / "content")], ["new", "venue", "--title", "Bench Hall", "--dir", str(work / "content")]):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "calendar_service", *command], capture_output=True, text=True)
        print(f"{'python -m calendar_service ' + command[0]:<52} {(time.perf_counter() - start) * 1000:8.0f} ms "
              f"(exit {done.returncode})")
    svc.store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

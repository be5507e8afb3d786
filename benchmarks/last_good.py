"""Benchmark: a start (no records cache) and a new head when many files stop parsing, not run in CI.

    python -m benchmarks.last_good [--files 5000] [--broken 5000] [--history 20]

Builds a content repository with ``--files`` events committed by one fast-import, then
``--history`` commits each editing a few files, then one commit breaking ``--broken`` of them
(a key written twice). Times: a start at the last good head, a start at the broken head (each
broken file's last good version looked up in git history, bounded by ``CALENDAR_LAST_GOOD_*``),
and a running catalog following the breaking commit. Prints seconds and how many records are
served as their last good version.
"""
from __future__ import annotations

import argparse
import logging
import subprocess
import tempfile
import time
from pathlib import Path

from calendar_service.storage.catalog import Catalog
from calendar_service.storage.last_good import LAST_GOOD_COMMITS, LAST_GOOD_FILES, LAST_GOOD_VERSIONS
from calendar_service.storage.store import GitStore

GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.org"]


def event(i: int, title: str) -> str:
    return (f"---\nid: {i}\nslug: event-{i}\ntitle: {title}\nstatus: publish\n"
            f"start_date: '2027-05-01 10:00:00'\nend_date: '2027-05-01 12:00:00'\n---\nText {i}.\n")


def fast_import(root: Path, files: dict[str, str], message: str) -> None:
    stream = [f"commit refs/heads/main\ncommitter Bench <bench@example.org> {int(time.time())} +0000\n"
              f"data {len(message)}\n{message}\n"]
    head = subprocess.run(["git", "rev-parse", "-q", "--verify", "main"], cwd=root, capture_output=True, text=True)
    if head.returncode == 0:
        stream.append(f"from {head.stdout.strip()}\n")
    for path, text in files.items():
        data = text.encode()
        stream.append(f"M 100644 inline {path}\ndata {len(data)}\n")
        stream.append(data.decode() + "\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input="".join(stream).encode(), check=True)


def timed(what: str, make):
    started = time.perf_counter()
    found = make()
    print(f"{what:<48} {time.perf_counter() - started:7.2f} s")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--broken", type=int, default=5000)
    parser.add_argument("--history", type=int, default=20)
    parser.add_argument("--budget", type=int, default=LAST_GOOD_FILES, help="CALENDAR_LAST_GOOD_FILES")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "content"
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
        fast_import(root, {f"events/event-{i}.md": event(i, f"Event {i}") for i in range(1, args.files + 1)}, "Add")
        for n in range(args.history):
            fast_import(root, {f"events/event-{i}.md": event(i, f"Event {i}, edit {n}")
                               for i in range(1 + n, args.files + 1, max(1, args.files // 10))}, f"Edit {n}")
        store = GitStore(root, "main")
        good = store.head()
        bad = {f"events/event-{i}.md": event(i, f"Event {i}").replace("status: publish\n", "status: publish\ntitle: x\n")
               for i in range(1, args.broken + 1)}
        fast_import(root, bad, "Break")
        broken = store.head()
        subprocess.run(["git", "update-ref", "refs/heads/main", good], cwd=root, check=True)
        bounds = (args.budget, LAST_GOOD_VERSIONS, LAST_GOOD_COMMITS)
        running = Catalog(store, last_good=bounds)
        timed(f"start at the good head ({args.files} files)", running.current)
        subprocess.run(["git", "update-ref", "refs/heads/main", broken], cwd=root, check=True)
        snapshot = timed(f"running catalog follows the break ({args.broken} files)", running.current)
        print(f"  served as last good: {len(snapshot.stale)}")
        fresh = Catalog(GitStore(root, "main"), last_good=bounds)
        snapshot = timed("start at the broken head, no cache", fresh.current)
        print(f"  served as last good: {len(snapshot.stale)}; never served: "
              f"{sum(1 for e in snapshot.files.values() if e[1] is None)}")


if __name__ == "__main__":
    main()

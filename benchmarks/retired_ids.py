"""Benchmark: the cold start's high-water mark of deleted ids (``Catalog._retired_at``), not run in CI.

    python -m benchmarks.retired_ids [--deleted 20000] [--kept 1000] [--commits 200]

Builds a repository (git fast-import) whose history added ``--deleted`` event files and deleted them
again over ``--commits`` commits, with ``--kept`` files left, and times what a start without records
cache adds for it: the ``git log --diff-filter=D --raw`` of the content folders, reading the
deleted blobs, and their ``id:`` lines. Prints the figures.
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from calendar_service.domain import record_files
from calendar_service.storage.store import GitStore

EVENT = "---\nid: {id}\ntitle: Event {id}\nstatus: publish\nstart_date: 2030-01-01 10:00:00\nend_date: 2030-01-01 11:00:00\n---\nBody {id}.\n"


def build(root: Path, deleted: int, kept: int, commits: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    lines: list[bytes] = []
    mark = 0
    per = max(1, deleted // max(1, commits // 2))
    alive: list[str] = []
    next_id = 1

    def commit(ops: list[str], when: int) -> None:
        nonlocal mark
        mark += 1
        message = f"commit {mark}".encode()
        lines.append(b"commit refs/heads/main\n")
        lines.append(f"committer Bench <b@example.org> {1700000000 + when} +0000\n".encode())
        lines.append(f"data {len(message)}\n".encode() + message + b"\n")
        for op in ops:
            lines.append(op.encode() if isinstance(op, str) else op)

    def add(path: str, rid: int) -> bytes:
        data = EVENT.format(id=rid).encode()
        return f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n"

    when = 0
    while next_id <= deleted:
        batch = []
        for _ in range(per):
            if next_id > deleted:
                break
            path = f"events/e{next_id}.md"
            batch.append(add(path, next_id))
            alive.append(path)
            next_id += 1
        when += 1
        commit(batch, when)
        when += 1
        commit([f"D {path}\n" for path in alive], when)
        alive = []
    commit([add(f"events/kept{i}.md", deleted + i + 1) for i in range(kept)], when + 1)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(lines), check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deleted", type=int, default=20000)
    parser.add_argument("--kept", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=200)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "content"
        started = time.perf_counter()
        build(root, options.deleted, options.kept, options.commits)
        print(f"built {options.deleted} deleted + {options.kept} kept files in {time.perf_counter() - started:.1f} s")
        store = GitStore(root, "main", ("Bench", "b@example.org"))
        try:
            head = store.head()
            started = time.perf_counter()
            deleted = store.deleted_blobs(head)
            logged = time.perf_counter()
            contents = store.read_blobs(set(deleted))
            read = time.perf_counter()
            highest = max((record_files.claimed_id(raw) or 0 for raw in contents.values()), default=0)
            done = time.perf_counter()
            print(f"git log of deletions: {len(deleted)} blobs in {logged - started:.3f} s")
            print(f"reading the blobs: {read - logged:.3f} s; their id lines: {done - read:.3f} s "
                  f"(highest {highest})")
            print(f"total added to a cold start: {done - started:.3f} s")
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

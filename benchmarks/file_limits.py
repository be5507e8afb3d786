"""Benchmark: what the content file limits cost and what they save, not run in CI.

    python -m benchmarks.file_limits [--files 10000] [--push 20000] [--repeat 3]

Prints:
- the cost of checking the node tree (nesting, keys, items) on ``--files`` ordinary event files:
  loading their front matter with the check and without it (least CPU time of ``--repeat`` runs);
- parsing one file of 100,000 keys (over the keys limit) and one of 1,000 keys (at it);
- a push of ``--push`` unparsable files pulled by a running catalog: the time, the peak memory of
  the process (ru_maxrss) and what ``/status`` counts (use ``--push 200000`` for the big case).
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from calendar_service.domain import file_limits, record_files
from calendar_service.service import status
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.store import GitStore


def event(n: int) -> str:
    return (f"---\nid: {n + 1}\ntitle: Event number {n}\nstatus: publish\nstart_date: 2026-05-{n % 28 + 1:02} 10:00:00\n"
            f"end_date: 2026-05-{n % 28 + 1:02} 11:00:00\ntimezone: Europe/Berlin\nall_day: false\n"
            f"categories: [music, {n % 50}]\ntags: [free]\nvenue: [hall-{n % 100}]\ncost: '10'\n"
            f"website: https://example.org/events/{n}\n---\nA description of event {n}.\n\nTwo paragraphs.\n")


class _Unchecked(record_files._StrictLoader):
    """The strict loader without the node check: what loading cost before the limits."""

    def get_single_data(self):
        node = self.get_single_node()
        return None if node is None else self.construct_document(node)


def least(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def node_check(files: int, repeat: int) -> None:
    texts = [record_files._split_front_matter(event(n))[0] for n in range(files)]
    checked = least(lambda: [yaml.load(t, Loader=record_files._StrictLoader) for t in texts], repeat)
    unchecked = least(lambda: [yaml.load(t, Loader=_Unchecked) for t in texts], repeat)
    print(f"front matter of {files:,} events: {unchecked:.3f} s without the node check, {checked:.3f} s with it "
          f"(+{(checked - unchecked) / unchecked * 100:.1f} %)")
    raws = [event(n).encode() for n in range(files)]
    whole = least(lambda: [record_files.parse(f"events/e{n}.md", raw) for n, raw in enumerate(raws)], repeat)
    print(f"parse() of the same {files:,} files: {whole:.3f} s ({whole / files * 1e6:.0f} µs per file)")


def many_keys() -> None:
    for count in (100_000, 990):
        body = "".join(f"k{i}: {i}\n" for i in range(count))
        raw = f"---\ntitle: Keys\nstart_date: 2026-05-01 10:00:00\nend_date: 2026-05-01 11:00:00\n{body}---\n".encode()
        limits = file_limits.LIMITS
        file_limits.configure(file_limits.Limits(file_bytes=8 << 20))   # the size limit out of the way
        try:
            started = time.perf_counter()
            _, problems = record_files.parse("events/keys.md", raw)
            took = time.perf_counter() - started
        finally:
            file_limits.configure(limits)
        print(f"a file of {count:,} keys ({len(raw) / 1e6:.1f} MB): parsed in {took:.2f} s; {len(problems)} "
              f"problems, first: {problems[0] if problems else None}")


def git(root: Path, *args: str, **kw) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=Bench", "-c", "user.email=bench@example.org", *args],
                   check=True, capture_output=True, **kw)


def push(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "content"
        store = GitStore(root)
        store.init()
        (root / "events").mkdir(exist_ok=True)
        (root / "events" / "first.md").write_text(event(0))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "first")
        catalog = Catalog(store)
        catalog.current()
        # many unparsable files as one commit through fast-import (as a push would bring them)
        lines = ["commit refs/heads/main", "committer Bench <bench@example.org> 0 +0000", "data 4", "many",
                 "from refs/heads/main^0"]
        for n in range(count):
            data = f"---\ntitle: [unclosed {n}\n---\n"
            lines += [f"M 100644 inline events/broken-{n:06}.md", f"data {len(data.encode())}", data]
        subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input="\n".join(lines).encode() + b"\n",
                       check=True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        snapshot = catalog.current()
        took = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        class _Settings:
            branch, git_remote_branch, status_files_shown = "main", "", 200

        started = time.perf_counter()
        view = status.view(_Settings, store, snapshot, None, False)
        shown = time.perf_counter() - started
        print(f"a push of {count:,} unparsable files: catalog advanced in {took:.1f} s, peak RSS "
              f"{before / 1024:.0f} -> {peak / 1024:.0f} MB; status: {len(view['skipped'])} listed of "
              f"{view['skipped_total']:,} ({view['skipped_files']:,} files) in {shown:.2f} s")
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--push", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    node_check(options.files, options.repeat)
    many_keys()
    if options.push:
        push(options.push)


if __name__ == "__main__":
    main()

"""Old and new code, back to back, on the same data: import, full reindex, first iCalendar feed.

    python3 benchmarks/regress.py --code /tmp/old-build --code . [--size 10000] [--rounds 2]
                                  [--work /tmp/regress] [--steps import,reindex,feed] [--profile STEP]

The synthetic calendar (``benchmarks/synthetic.py`` of this tree, a fixed seed and day) is
generated once per size into ``--work`` and imported by each ``--code`` tree in turn (any
checkout of the project: ``git worktree add /tmp/old-build <commit>``). Each step runs in its
own interpreter with ``PYTHONPATH`` set to that tree, so only the project's code differs:

- import: ``importer.import_events`` of the JSON into a fresh repository (one commit);
- reindex: ``Catalog.current`` (fills the records cache), then ``SearchIndex.rebuild_now``
  timed alone, as the benchmark's reindex row;
- feed: ``create_app`` on that repository and index (a restart), then the first
  ``GET /events?ical=1`` read to its end (every event in the default window), as the
  benchmark's first-feed row.

The trees alternate within each round, so a load change on the shared machine hits both; the
CPU seconds (this process and git's) are steadier than wall time when other jobs share the cores.
``--profile reindex`` (or import, feed) prints the step's 25 costliest functions (cumulative).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED, TODAY, SITE_TZ = 20261123, "2026-11-23", "UTC"


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children (git): steadier than wall time under load."""
    import resource
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _stop(result: dict, t0: float, c0: float) -> None:
    result["seconds"] = time.perf_counter() - t0
    result["cpu_s"] = _cpu() - c0


def _module(*names: str):
    """The first of ``calendar_service.<name>`` that exists (older trees had no layer folders)."""
    import importlib
    for name in names:
        try:
            return importlib.import_module(f"calendar_service.{name}")
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[0])


def _child(step: str, work: Path, data: Path, profile: bool) -> dict:
    """One step in this interpreter (``calendar_service`` comes from PYTHONPATH)."""
    import threading
    from zoneinfo import ZoneInfo

    content, index_dir = work / "content", work / "index"
    result: dict = {}
    profiler = None
    if profile:
        import cProfile
        profiler = cProfile.Profile()
    if step == "import":
        importer = _module("cli.importer", "importer")
        GitStore = _module("storage.store", "store").GitStore
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        store = GitStore(content, "main")
        store.init()
        items = importer.load(data)
        t0, c0 = time.perf_counter(), _cpu()
        profiler and profiler.enable()
        imported = importer.import_events(store, items, ZoneInfo(SITE_TZ), author=("Bench", "bench@localhost"),
                                          source="synthetic calendar")
        profiler and profiler.disable()
        _stop(result, t0, c0)
        result["events"] = imported.created["events"]
        store.close()
    elif step == "reindex":
        SearchIndex = _module("index.search", "search").SearchIndex
        Catalog = _module("storage.catalog", "catalog").Catalog
        GitStore = _module("storage.store", "store").GitStore
        shutil.rmtree(index_dir, ignore_errors=True)
        store = GitStore(content, "main")
        snapshot = Catalog(store, index_dir / "records.cache").current()
        for thread in threading.enumerate():
            if thread.name == "calendar-records-cache":
                thread.join()
        index = SearchIndex(index_dir, ZoneInfo(SITE_TZ))
        t0, c0 = time.perf_counter(), _cpu()
        profiler and profiler.enable()
        result["events"] = index.rebuild_now(snapshot)
        profiler and profiler.disable()
        _stop(result, t0, c0)
        result["index_mb"] = sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file()) / 1e6
        store.close()
    elif step == "feed":
        from calendar_service import create_app
        config = {"content_dir": content, "index_dir": index_dir, "users_file": work / "users.yaml",
                  "seed_sample": False, "site_timezone": SITE_TZ}
        t0 = time.perf_counter()
        app = create_app(config)
        result["create_app_s"] = time.perf_counter() - t0
        client = app.test_client()
        client.get("/calendar/events/v1/events")   # the first list: the index base is read
        t0, c0 = time.perf_counter(), _cpu()
        profiler and profiler.enable()
        response = client.get("/calendar/events/v1/events", query_string={"ical": 1})
        body = response.get_data()
        profiler and profiler.disable()
        _stop(result, t0, c0)
        result["events"] = body.count(b"BEGIN:VEVENT")
        result["mb"] = len(body) / 1e6
    else:
        raise SystemExit(f"unknown step {step}")
    if profiler:
        import io
        import pstats
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue(), file=sys.stderr)
    return result


def _generate(size: int, work: Path) -> Path:
    data = work / f"import-{size}.json"
    if not data.exists():
        from datetime import date

        sys.path.insert(0, str(HERE.parent))
        from benchmarks.synthetic import build_calendar
        _, meta = build_calendar(size, SEED, date.fromisoformat(TODAY), 0)
        work.mkdir(parents=True, exist_ok=True)
        data.write_text(json.dumps({"events": meta["api_events"]}))
    return data


def _label(code: Path) -> str:
    head = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(code), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + ("+" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", action="append", type=Path, help="a checkout of the project (repeatable)")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/regress"))
    parser.add_argument("--steps", default="import,reindex,feed")
    parser.add_argument("--profile", default="", help="a step to profile")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.dir, args.data, args.profile == args.child)))
        return
    codes = [c.resolve() for c in (args.code or [HERE.parent])]
    data = _generate(args.size, args.work)
    steps = args.steps.split(",")
    table: dict = {}
    for round_ in range(args.rounds):
        for n, code in enumerate(codes):
            label = f"{n}:{_label(code)}"
            target = args.work / f"{args.size}-{n}"
            for step in steps:
                env = {**os.environ, "PYTHONPATH": str(code)}
                proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", step, "--dir",
                                       str(target), "--data", str(data), "--profile", args.profile],
                                      env=env, capture_output=True, text=True)
                if proc.returncode:
                    print(proc.stderr, file=sys.stderr)
                    raise SystemExit(f"{label} {step} failed")
                if proc.stderr.strip():
                    print(proc.stderr, file=sys.stderr)
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                table.setdefault((label, step), []).append(result)
                extra = ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                  for k, v in result.items() if k != "seconds")
                print(f"round {round_ + 1} {label:>12} {step:8} {result['seconds']:7.2f} s  ({extra})", flush=True)
    print(f"\nbest of {args.rounds} round(s), {args.size} events:")
    for (label, step), results in table.items():
        best = min(r["seconds"] for r in results)
        cpu = min(r["cpu_s"] for r in results)
        rate = f"  {results[0]['events'] / best:,.0f} events/s" if step != "feed" else ""
        print(f"  {label:>12} {step:8} {best:7.2f} s (CPU {cpu:6.2f} s){rate}")


if __name__ == "__main__":
    main()

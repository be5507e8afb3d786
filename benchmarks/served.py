"""The served benchmark: the figures that only exist over HTTP, against the service as it is shipped
to run (gunicorn, several worker processes).

    python3 -m benchmarks.served [--repo OUT/work-10000] [--size 10000] [--runs 2]
                                 [--gunicorn "-w 2 --threads 4"] [--reads 400] [--writer-seconds 16]
                                 [--memory-only] [--quick] [--json FILE]

``--repo`` is a repository kept by ``python3 -m benchmarks.bench --keep`` (``content/``, ``index/``,
``users.yaml`` with the benchmark's administrator); without it a calendar of ``--size`` events
is built in a temporary folder first. Each run starts ``python3 -m gunicorn GUNICORN`` on a
free loopback port (``--gunicorn`` takes any arguments, e.g. ``-c deploy/cluster/gunicorn.conf.py
-w 2 --threads 4`` or ``--preload``, so the figures are those of the shipped way of serving),
waits until ``/readyz`` answers and both workers serve lists, then measures:

1. memory: a fixed mix of ``--reads`` reads (lists: default, category + window, tag, venue, deep
   page; text search; venues; single events by id and slug; a small iCalendar feed), then the
   proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``: a page shared by N processes
   counts 1/N in each) summed over the gunicorn master and its workers, with their RSS; each
   process is printed. The git helper processes the workers start are listed apart.
2. writers (not with ``--memory-only``): 1 writer, then 4 concurrent writers, each with its own keep-alive connection and
   Basic auth, creating events and updating the ones it created (every write a commit),
   alternated in slices (1, 4, 1, 4, ...) so that both counts see the same machine: writes/s
   and p50 / p99 latency of each count.

Every run stops its gunicorn before the next. The table gives each figure per run, the goal,
and whether every run met it; ``--json`` writes every figure. A run changes the repository by
its writes (events are added).
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from pathlib import Path

from benchmarks.common import ADMIN_LOGIN, ADMIN_PASSWORD, API, PACKAGE_ROOT, child_pids, percentile, say
from benchmarks.processes import Process, free_port, request, wait_until

DEFAULT_GUNICORN = "-w 2 --threads 4"
WRITERS = (1, 4)
READ_THREADS = 4
WARMUP_WRITES = 3   # each of 4 writers, before the measured slices
MIB = 1024 * 1024
NAME_WIDTH = 64
# name -> (figure key, goal kind, goal value)
GOALS = {
    "memory after the reads, PSS of master + workers (MiB)": ("pss_mib", "max", 110),
    "4 writers: writes/s, at least one writer's": ("writers_4_per_s", "min_of", "writers_1_per_s"),
    "4 writers: p99 of a write (ms)": ("writers_4_p99_ms", "max", 100),
}


# ----------------------------------------------------------------------------- the calendar


def prepare(repo: Path | None, size: int) -> tuple[Path, bool]:
    """The working folder to serve (``repo``, or one built now: then True for removing it)."""
    if repo is not None:
        for part in ("content", "users.yaml"):
            if not (repo / part).exists():
                raise SystemExit(f"{repo} has no {part}: keep one with python3 -m benchmarks.bench --keep")
        return repo.resolve(), False
    from benchmarks.build import served_calendar
    work = Path(tempfile.mkdtemp(prefix=f"served-{size}-"))
    served_calendar(work, size)
    return work, True


def ensure_admin(users: Path) -> None:
    """The benchmark's administrator in ``users`` (a kept repository has it already)."""
    from calendar_service.auth.accounts import Accounts
    accounts = Accounts(users)
    if accounts.get(ADMIN_LOGIN) is None:
        accounts.add(ADMIN_LOGIN, "administrator", email="bench@example.org", name="Bench Admin",
                     password=ADMIN_PASSWORD)


# ----------------------------------------------------------------------------- the server


class Served:
    """gunicorn serving ``work`` on a free loopback port; ``with Served(...) as s``."""

    def __init__(self, work: Path, gunicorn: str, log: Path):
        self.work, self.port = work, free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CALENDAR_", "GIT_"))}
        env.update(PYTHONPATH=str(PACKAGE_ROOT), PYTHONWARNINGS="ignore", CALENDAR_BIND=f"127.0.0.1:{self.port}",
                   CALENDAR_WORKERS="2", CALENDAR_CONTENT_DIR=str(work / "content"),
                   CALENDAR_INDEX_DIR=str(work / "index"), CALENDAR_USERS_FILE=str(work / "users.yaml"),
                   CALENDAR_STATE_DIR=str(work / "state"), CALENDAR_SEED_SAMPLE="false",
                   CALENDAR_TIMEZONE="UTC", CALENDAR_PULL_INTERVAL="0")
        # the arguments given, then what every run needs: its port, the app (unless a config names it)
        argv = [sys.executable, "-m", "gunicorn", *shlex.split(gunicorn), "-b", f"127.0.0.1:{self.port}",
                "--log-level", "warning"]
        if "-c" not in argv and "--config" not in argv:
            argv += ["--timeout", "120", "calendar_service:create_app()"]
        self.process = Process("gunicorn", argv, log, env=env, cwd=PACKAGE_ROOT)

    def __enter__(self) -> "Served":
        started = time.monotonic()
        self.process.start()

        def answers() -> bool:
            if self.process.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.process.tail()}")
            return request(self.port, "GET", "/readyz", timeout=30).status == 200
        wait_until(answers, 600, "/readyz", poll=0.2)
        # every worker has its calendar loaded: lists on new connections (spread over the workers)
        in_a_row = 0
        while in_a_row < 20:
            in_a_row = in_a_row + 1 if request(self.port, "GET", API + "/events", timeout=120).status == 200 else 0
        self.start_s = time.monotonic() - started
        return self

    def __exit__(self, *exc) -> None:
        self.process.stop()

    @property
    def master(self) -> int:
        return self.process.proc.pid


def memory(pid: int) -> dict:
    """Pss and Rss of ``pid`` in MiB (``smaps_rollup``), with its command."""
    figures = {"pid": pid}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("Pss", "Rss"):
                figures[key.lower() + "_mib"] = int(value.split()[0]) * 1024 / MIB
        figures["command"] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80].strip()
    except OSError:
        pass
    return figures


def serving_memory(master: int) -> dict:
    """Pss and Rss summed over the master and its workers; the helpers the workers start apart."""
    workers = child_pids(master)
    processes = [memory(pid) | {"role": "master"} for pid in [master]]
    processes += [memory(pid) | {"role": "worker"} for pid in workers]
    helpers = [memory(pid) | {"role": "helper"} for w in workers for pid in child_pids(w)]
    serving = [p for p in processes if "pss_mib" in p]
    return {"pss_mib": sum(p["pss_mib"] for p in serving), "rss_mib": sum(p["rss_mib"] for p in serving),
            "helpers_pss_mib": sum(p.get("pss_mib", 0) for p in helpers), "processes": processes + helpers}


# ----------------------------------------------------------------------------- requests


class Client:
    """One keep-alive connection to 127.0.0.1:``port`` (opened again after a failure)."""

    def __init__(self, port: int, auth: tuple[str, str] | None = None):
        self.port = port
        self.headers = {"Authorization": "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()} \
            if auth else {}
        self.conn = None

    def call(self, method: str, path: str, body=None) -> tuple[int, bytes, float]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        started = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            status, raw = 0, str(exc).encode()
        return status, raw, (time.perf_counter() - started) * 1000

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def discover(port: int) -> dict:
    """What the reads need, asked of the service: event ids and slugs, terms, venues, words."""
    def body(path: str):
        answer = request(port, "GET", API + path, timeout=120)
        if answer.status != 200:
            raise RuntimeError(f"GET {path}: {answer.status}")
        return answer.body
    first = body("/events?per_page=50")
    events = first["events"]
    words = sorted({w.strip(".,:;!?").lower() for e in events for w in e["title"].split() if len(w) > 4}) or ["event"]
    return {"events": [(e["id"], e["slug"]) for e in events], "pages": max(1, min(40, int(first["total"]) // 10)),
            "categories": [c["id"] for c in body("/categories?per_page=50").get("categories", [])] or [None],
            "tags": [t["id"] for t in body("/tags?per_page=50").get("tags", [])] or [None],
            "venues": [v["id"] for v in body("/venues?per_page=50").get("venues", [])] or [None],
            "words": words}


def read_mix(found: dict, count: int, seed: int = 37) -> list[str]:
    """``count`` request paths in fixed proportions: lists 40 %, search 15 %, venues 5 %,
    single events 30 %, a small feed 10 %."""
    rng = random.Random(seed)
    today = date.today()
    day = lambda offset: (today + timedelta(days=offset)).isoformat()  # noqa: E731
    pick = rng.choice

    def term(name: str, values: list) -> str:
        value = pick(values)
        return f"&{name}={value}" if value is not None else ""
    kinds = [
        (0.08, lambda: "/events"),
        (0.16, lambda: f"/events?start_date={day(rng.randint(0, 300))}&end_date={day(rng.randint(301, 330))}"
                       + term("categories", found["categories"])),
        (0.24, lambda: "/events?" + term("tags", found["tags"])[1:]),
        (0.32, lambda: "/events?" + term("venue", found["venues"])[1:]),
        (0.40, lambda: f"/events?page={rng.randint(min(2, found['pages']), found['pages'])}&per_page=10"),
        (0.55, lambda: f"/events?search={pick(found['words'])}"),
        (0.60, lambda: "/venues"),
        (0.75, lambda: f"/events/{pick(found['events'])[0]}"),
        (0.90, lambda: f"/events/by-slug/{pick(found['events'])[1]}"),
        (1.00, lambda: f"/events?ical=1&start_date={day(rng.randint(0, 300))}&end_date={day(rng.randint(301, 308))}"
                       + term("categories", found["categories"])),
    ]
    paths = []
    for _ in range(count):
        r = rng.random()
        paths.append(API + next(make for limit, make in kinds if r < limit)())
    return paths


def run_reads(port: int, paths: list[str]) -> dict:
    """``paths`` over READ_THREADS connections, each opened anew every few requests (so that both
    workers serve them); returns the count of answers that were not 200."""
    failed: list[str] = []
    parts = [paths[n::READ_THREADS] for n in range(READ_THREADS)]

    def reader(part: list[str]) -> None:
        client = Client(port)
        for n, path in enumerate(part):
            if n % 10 == 0:
                client.close()
            status, raw, _ = client.call("GET", path)
            if status != 200:
                failed.append(f"{status} {path}: {raw[:120]!r}")
        client.close()
    started = time.perf_counter()
    threads = [threading.Thread(target=reader, args=(part,)) for part in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"reads": len(paths), "seconds": time.perf_counter() - started, "errors": failed[:5],
            "failed": len(failed)}


def event_body(title: str, k: int) -> dict:
    start = date.today() + timedelta(days=30 + k % 300)
    return {"title": title, "status": "publish", "start_date": f"{start.isoformat()} 18:00:00",
            "end_date": f"{start.isoformat()} 20:00:00", "description": "Written by the served benchmark. " * 6}


def run_writers(port: int, seconds: float, slices: int, tag: str) -> dict:
    """1 and 4 writers in alternated slices: each writer creates an event, then updates the ones it
    created (one create in four writes). Every write's latency is kept."""
    auth = (ADMIN_LOGIN, ADMIN_PASSWORD)
    totals = {count: {"writes": 0, "seconds": 0.0, "latencies": [], "errors": []} for count in WRITERS}
    per_slice = seconds / slices / len(WRITERS)
    # not counted: 4 writers' first writes (a worker checks a password once with Argon2, then
    # remembers it; the first writes of a worker load what writes need)
    warm = {"writes": 0, "seconds": 0.0, "latencies": [], "errors": []}
    for part, count, total, least in [(-1, max(WRITERS), warm, WARMUP_WRITES)] + [
            (part, count, totals[count], 2) for part in range(slices) for count in WRITERS]:
        start = time.perf_counter()
        limit = per_slice if part >= 0 else 0

        def writer(j: int) -> None:
            client, mine, k = Client(port, auth), [], 0
            while time.perf_counter() - start < limit or k < least:
                title = f"Served writer {tag}.{count}.{j} slice {part} round {k}"
                if not mine or k % 4 == 0:
                    status, raw, ms = client.call("POST", API + "/events", event_body(title, k))
                    if status == 201:
                        mine.append(json.loads(raw)["id"])
                else:
                    status, raw, ms = client.call("POST", f"{API}/events/{mine[k % len(mine)]}", {"title": title})
                if status in (200, 201):
                    total["latencies"].append(ms)
                elif len(total["errors"]) < 3:
                    total["errors"].append(f"{status}: {raw[:200]!r}")
                k += 1
            client.close()
        threads = [threading.Thread(target=writer, args=(j,)) for j in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total["seconds"] += time.perf_counter() - start
    if warm["errors"]:
        say(f"warm-up writes failed: {warm['errors']}")
    result = {}
    for count, total in totals.items():
        done = len(total["latencies"])
        result[f"writers_{count}"] = {
            "writes": done, "seconds": total["seconds"], "per_s": done / total["seconds"] if total["seconds"] else 0,
            "p50_ms": percentile(total["latencies"], 0.5), "p99_ms": percentile(total["latencies"], 0.99),
            "max_ms": max(total["latencies"], default=float("nan")), "errors": total["errors"]}
    return result


# ----------------------------------------------------------------------------- one run, the table


def one_run(work: Path, options, n: int) -> dict:
    log = work / f"served-gunicorn-{n}.log"
    say(f"run {n}: gunicorn {options.gunicorn} serving {work}")
    with Served(work, options.gunicorn, log) as served:
        say(f"run {n}: ready in {served.start_s:.1f} s on port {served.port}")
        found = discover(served.port)
        reads = run_reads(served.port, read_mix(found, options.reads))
        after_reads = serving_memory(served.master)
        say(f"run {n}: {reads['reads']} reads in {reads['seconds']:.1f} s ({reads['failed']} failed); "
            f"PSS {after_reads['pss_mib']:.0f} MiB, RSS {after_reads['rss_mib']:.0f} MiB"
            + (f"  ERRORS {reads['errors']}" if reads["failed"] else ""))
        for p in after_reads["processes"]:
            say(f"    {p['role']:<7} {p['pid']:>7}  PSS {p.get('pss_mib', float('nan')):7.1f} MiB  "
                f"RSS {p.get('rss_mib', float('nan')):7.1f} MiB  {p.get('command', '')}")
        if options.memory_only:
            return {"start_s": served.start_s, "reads": reads, "memory_after_reads": after_reads,
                    "pss_mib": after_reads["pss_mib"], "rss_mib": after_reads["rss_mib"]}
        writers = run_writers(served.port, options.writer_seconds, options.slices, f"{os.getpid()}.{n}")
        for count in WRITERS:
            w = writers[f"writers_{count}"]
            say(f"run {n}: {count} writer(s): {w['per_s']:.1f} writes/s, p50 {w['p50_ms']:.1f} ms, "
                f"p99 {w['p99_ms']:.1f} ms ({w['writes']} writes)" + (f"  ERRORS {w['errors']}" if w["errors"] else ""))
        after_writes = serving_memory(served.master)
    return {"start_s": served.start_s, "reads": reads, "memory_after_reads": after_reads,
            "memory_after_writes": after_writes, **writers,
            "pss_mib": after_reads["pss_mib"], "rss_mib": after_reads["rss_mib"],
            "writers_1_per_s": writers["writers_1"]["per_s"], "writers_4_per_s": writers["writers_4"]["per_s"],
            "writers_1_p99_ms": writers["writers_1"]["p99_ms"], "writers_4_p99_ms": writers["writers_4"]["p99_ms"]}


def verdict(run: dict, kind: str, value, goal) -> bool:
    return value >= run[goal] if kind == "min_of" else value <= goal


def table(result: dict) -> str:
    runs = result["runs"]
    head = (f"== served: gunicorn {result['gunicorn']}, {result['events']} events, {len(runs)} run(s), "
            f"{result['reads']} reads, " + (f"writers {result['writer_seconds']:.0f} s in {result['slices']} slices =="
                                            if "writers_1" in runs[0] else "no writers =="))
    cols = "  ".join(f"run {n + 1:>2}" for n in range(len(runs)))
    lines = [head, "", f"{'figure':<{NAME_WIDTH}} {cols}"]
    info = [("memory after the reads, RSS of master + workers (MiB)", "rss_mib", "{:.0f}"),
            ("memory after the writes, PSS of master + workers (MiB)", None, "{:.0f}"),
            ("1 writer: writes/s", "writers_1_per_s", "{:.1f}"),
            ("1 writer: p50 / p99 of a write (ms)", None, ""),
            ("4 writers: p50 of a write (ms)", None, "{:.1f}")]
    if "writers_1" not in runs[0]:   # --memory-only
        info = info[:1]
    for name, key, fmt in info:
        if key:
            values = [fmt.format(run[key]) for run in runs]
        elif name.startswith("memory after the writes"):
            values = [fmt.format(run["memory_after_writes"]["pss_mib"]) for run in runs]
        elif name.startswith("1 writer"):
            values = [f"{run['writers_1']['p50_ms']:.1f}/{run['writers_1']['p99_ms']:.0f}" for run in runs]
        else:
            values = [fmt.format(run["writers_4"]["p50_ms"]) for run in runs]
        lines.append(f"{name:<{NAME_WIDTH}} " + "  ".join(f"{v:>6}" for v in values))
    lines += ["", f"{'target':<{NAME_WIDTH}} {'measured (each run)':>30} {'goal':>16}  result"]
    for name, (key, kind, goal) in GOALS.items():
        if key not in runs[0]:
            continue
        measured = " / ".join(f"{run[key]:.1f} vs {run[goal]:.1f}" if kind == "min_of" else f"{run[key]:.0f}"
                              for run in runs)
        met = all(verdict(run, kind, run[key], goal) for run in runs)
        goal_text = "≥ 1 writer's" if kind == "min_of" else f"≤ {goal}"
        lines.append(f"{name:<{NAME_WIDTH}} {measured:>30} {goal_text:>16}  {'met' if met else 'NOT MET'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="a repository kept by benchmarks.bench --keep (OUT/work-N)")
    parser.add_argument("--size", type=int, default=10000, help="events of the calendar built without --repo")
    parser.add_argument("--gunicorn", default=DEFAULT_GUNICORN, help=f"gunicorn's arguments (default {DEFAULT_GUNICORN!r})")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--reads", type=int, default=400, help="reads before the memory is taken")
    parser.add_argument("--writer-seconds", type=float, default=16, help="seconds of writes per run (both counts)")
    parser.add_argument("--slices", type=int, default=4, help="alternations of 1 and 4 writers per run")
    parser.add_argument("--memory-only", action="store_true", help="the memory after the reads alone (no writers)")
    parser.add_argument("--quick", action="store_true", help="a short run (300 events without --repo, 1 run)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    options = parser.parse_args(argv)
    if options.quick:
        options.size = min(options.size, 300)
        options.runs, options.reads, options.writer_seconds, options.slices = 1, 40, 2, 1
    work, built = prepare(options.repo, options.size)
    try:
        ensure_admin(work / "users.yaml")
        runs = [one_run(work, options, n) for n in range(1, options.runs + 1)]
        events = request_count(work)
        result = {"gunicorn": options.gunicorn, "events": events, "reads": options.reads,
                  "writer_seconds": options.writer_seconds, "slices": options.slices, "runs": runs,
                  "median": {key: statistics.median(run[key] for run in runs)
                             for key in ("pss_mib", "rss_mib", "writers_1_per_s", "writers_4_per_s",
                                         "writers_1_p99_ms", "writers_4_p99_ms") if key in runs[0]}}
        print(table(result), flush=True)
        if options.json:
            options.json.write_text(json.dumps(result, indent=1, default=str))
        return 0 if all(not run["reads"]["failed"] for run in runs) else 1
    finally:
        if built:
            shutil.rmtree(work, ignore_errors=True)


def request_count(work: Path) -> str:
    """The calendar's size as its event files say (the runs' own writes included)."""
    events = work / "content" / "events"
    return f"{sum(1 for _ in events.rglob('*.md')):,}" if events.exists() else "?"


if __name__ == "__main__":
    sys.exit(main())

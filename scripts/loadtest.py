"""Load test: a mixed read workload over HTTP against ``gunicorn -w 2 --threads 4`` with ``wrk``.

    python3 scripts/loadtest.py [--size 10000] [--work DIR] [--runs 3] [--duration 20]
                                [--connections 16] [--wrk-threads 2] [--port 8765]

Builds (once; ``--work`` keeps it for the next run) a synthetic calendar of ``--size`` events
(``benchmarks/synthetic.py``, imported through the importer as ONE commit, index built), starts
gunicorn on loopback with two workers of four threads, waits until both answer, then runs
``wrk`` ``--runs`` times with a Lua script that picks each request at random from a fixed mix:

    30 %  lists: default page, a category + 30-day window, a tag, a deep page, venue filter
    15 %  search (+ a window)
    20 %  single event by id          15 %  single event by slug
    10 %  conditional single reads (If-None-Match with the current ETag: 304)
    10 %  iCalendar feeds (a category + 7-day window, small)

and prints requests/s, p50 and p99 latency and non-2xx/3xx answers of each run, the best and the
median run, and the resident memory (VmRSS) of each gunicorn worker after the runs. Then a
floor: the same wrk against ``/healthz`` (the same gunicorn and Flask app, no work), whose
requests/s say what this machine gives the stack at that moment (other jobs share it); the
mix's median as a fraction of the floor is the steadier figure. Needs
``wrk`` (Debian: ``apt-get install -y wrk``) and gunicorn (requirements-dev.txt). Not part of the
test suite. Everything it starts is stopped before it exits.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import child_pids, rss_mb  # noqa: E402

API = "/calendar/events/v1"
SEED = 20261123
MIX_SIZE = 4000          # distinct request lines in the Lua script

LUA = r"""
local requests = {}
local n = 0
local f = assert(io.open("%(paths)s", "r"))
for line in f:lines() do
  local etag, path = line:match("^(%%S*) (.*)$")
  n = n + 1
  if etag == "-" then
    requests[n] = wrk.format("GET", path)
  else
    requests[n] = wrk.format("GET", path, {["If-None-Match"] = etag})
  end
end
f:close()
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("seed", counter)
end

function init(args)
  math.randomseed(seed * 7919)
end

function request()
  return requests[math.random(n)]
end

function done(summary, latency, requests)
  local out = assert(io.open("%(result)s", "w"))
  out:write(string.format(
    '{"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p99_us": %%d, "max_us": %%d, ' ..
    '"connect_errors": %%d, "read_errors": %%d, "write_errors": %%d, "timeouts": %%d, "status_errors": %%d}',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout,
    summary.errors.status))
  out:close()
end
"""


def say(message: str) -> None:
    print(f"[loadtest {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build(work: Path, size: int) -> dict:
    """The calendar in ``work`` (content repository, index, users file); returns what requests need."""
    from benchmarks.build import served_calendar
    return served_calendar(work, size, SEED)


def request_mix(meta: dict, base: str) -> list[str]:
    """``MIX_SIZE`` lines ``ETAG PATH`` (``-``: no condition), in the proportions of the docstring."""
    rng = random.Random(SEED)
    today = date.today()
    day = lambda offset: (today + timedelta(days=offset)).isoformat()  # noqa: E731
    cats, tags, venues = meta["category_ids"], meta["tag_ids"], meta["venue_ids"]
    listed, words = meta["listed"], meta["search_words"]
    lists = [
        lambda: "/events",
        lambda: f"/events?categories={rng.choice(cats)}&start_date={day(rng.randint(0, 300))}"
                f"&end_date={day(rng.randint(301, 330))}",
        lambda: f"/events?tags={rng.choice(tags)}",
        lambda: f"/events?page={rng.randint(2, 40)}&per_page=10",
        lambda: f"/events?venue={rng.choice(venues)}",
    ]
    lines = []
    singles = []
    for _ in range(MIX_SIZE):
        r = rng.random()
        if r < 0.30:
            lines.append("- " + API + rng.choice(lists)())
        elif r < 0.45:
            offset = rng.randint(0, 60)
            lines.append(f"- {API}/events?search={rng.choice(words)}&start_date={day(offset)}&end_date={day(offset + 365)}")
        elif r < 0.65:
            lines.append(f"- {API}/events/{rng.choice(listed)[0]}")
        elif r < 0.80:
            lines.append(f"- {API}/events/by-slug/{rng.choice(listed)[1]}")
        elif r < 0.90:
            singles.append(len(lines))
            lines.append(f"? {API}/events/{rng.choice(listed)[0]}")
        else:
            offset = rng.randint(0, 300)
            lines.append(f"- {API}/events?ical=1&categories={rng.choice(cats)}&start_date={day(offset)}"
                         f"&end_date={day(offset + 7)}")
    etags: dict[str, str] = {}
    for at in singles:
        path = lines[at][2:]
        if path not in etags:
            with urllib.request.urlopen(base + path, timeout=30) as response:
                etags[path] = response.headers["ETag"]
        lines[at] = f"{etags[path]} {path}"
    return lines


def wait_ready(base: str, master: int, seconds: float = 300) -> None:
    """Until both workers have loaded the calendar (each answers a list; 20 answers in a row)."""
    deadline = time.monotonic() + seconds
    ok = 0
    while ok < 20:
        if time.monotonic() > deadline:
            raise RuntimeError("gunicorn did not answer in time")
        try:
            with urllib.request.urlopen(base + API + "/events", timeout=60) as response:
                ok = ok + 1 if response.status == 200 else 0
        except OSError:
            ok = 0
            time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--work", type=Path, help="build/reuse the calendar here (default: a temporary folder)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=20, help="seconds per wrk run")
    parser.add_argument("--warmup", type=int, default=10, help="seconds of unmeasured load before the runs")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("wrk is missing: apt-get install -y wrk", file=sys.stderr)
        return 2

    temporary = args.work is None
    work = Path(tempfile.mkdtemp(prefix="loadtest-")) if temporary else args.work.resolve()
    server = None
    try:
        meta = build(work, args.size)
        base = f"http://127.0.0.1:{args.port}"
        env = {**os.environ, "CALENDAR_CONTENT_DIR": str(work / "content"), "CALENDAR_INDEX_DIR": str(work / "index"),
               "CALENDAR_USERS_FILE": str(work / "users.yaml"), "CALENDAR_SEED_SAMPLE": "false",
               "CALENDAR_PULL_INTERVAL": "0"}
        say(f"starting gunicorn -w {args.workers} --threads {args.threads} on {base}")
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", str(args.workers), "--threads", str(args.threads),
             "--timeout", "120", "-b", f"127.0.0.1:{args.port}", "--log-level", "warning",
             "calendar_service:create_app()"], cwd=ROOT, env=env)
        wait_ready(base, server.pid)
        workers = child_pids(server.pid)   # gunicorn's workers
        say(f"workers {workers}, RSS after start {[round(rss_mb(p)) for p in workers]} MB")
        lines = request_mix(meta, base)
        paths_file, result_file, lua_file = work / "requests.txt", work / "wrk-result.json", work / "mix.lua"
        paths_file.write_text("\n".join(lines) + "\n")
        lua_file.write_text(LUA % {"paths": paths_file, "result": result_file})
        wrk = ["wrk", "-t", str(args.wrk_threads), "-c", str(args.connections), "-s", str(lua_file), base]
        if args.warmup:
            say(f"warm-up {args.warmup} s")
            subprocess.run([*wrk[:1], "-d", f"{args.warmup}s", *wrk[1:]], check=True, stdout=subprocess.DEVNULL)
        runs = []
        for n in range(1, args.runs + 1):
            subprocess.run([*wrk[:1], "-d", f"{args.duration}s", *wrk[1:]], check=True, stdout=subprocess.DEVNULL)
            run = json.loads(result_file.read_text())
            run["rps"] = run["requests"] / (run["duration_us"] / 1e6)
            runs.append(run)
            errors = sum(run[k] for k in ("connect_errors", "read_errors", "write_errors", "timeouts", "status_errors"))
            say(f"run {n}: {run['rps']:.0f} requests/s, p50 {run['p50_us'] / 1000:.1f} ms, "
                f"p99 {run['p99_us'] / 1000:.1f} ms, {run['requests']} requests, {errors} errors")
        rss = [rss_mb(p) for p in workers]
        floor_paths = work / "floor.txt"
        floor_paths.write_text("- /healthz\n")
        lua_file.write_text(LUA % {"paths": floor_paths, "result": result_file})
        subprocess.run([*wrk[:1], "-d", f"{args.duration}s", *wrk[1:]], check=True, stdout=subprocess.DEVNULL)
        floor = json.loads(result_file.read_text())
        floor["rps"] = floor["requests"] / (floor["duration_us"] / 1e6)
        say(f"floor (/healthz): {floor['rps']:.0f} requests/s, p50 {floor['p50_us'] / 1000:.1f} ms")
        best = max(runs, key=lambda r: r["rps"])
        median = sorted(runs, key=lambda r: r["rps"])[len(runs) // 2]
        report = {
            "size": args.size, "workers": args.workers, "threads": args.threads, "connections": args.connections,
            "duration_s": args.duration, "runs": runs,
            "best_rps": best["rps"], "median_rps": median["rps"],
            "median_p50_ms": statistics.median(r["p50_us"] for r in runs) / 1000,
            "median_p99_ms": statistics.median(r["p99_us"] for r in runs) / 1000,
            "rss_worker_mb": [round(x, 1) for x in rss],
            "floor_rps": floor["rps"], "median_of_floor": median["rps"] / floor["rps"],
        }
        print(json.dumps(report, indent=1))
        say(f"best {report['best_rps']:.0f} requests/s, median {report['median_rps']:.0f} requests/s "
            f"(p50 {report['median_p50_ms']:.1f} ms, p99 {report['median_p99_ms']:.1f} ms), "
            f"{report['median_of_floor']:.2f} of the floor's {floor['rps']:.0f}; "
            f"RSS per worker {', '.join(f'{x:.0f}' for x in rss)} MB")
        return 0
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if temporary:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Soak test: one app, thousands of mixed requests and writes, resource use printed as it goes.

    python scripts/soak.py [--requests 5000] [--writes 1000] [--every 500] [--threads 1]

Builds the app on a temporary content repository (nothing else is touched), then sends a
mix of list, single, search, create, update and delete requests through the real stack,
``--writes`` of them writes. Every ``--every`` requests it prints this process's resident
memory and open file descriptors (from /proc/self), its threads and its child processes
(git helpers GitPython keeps), and at the end the growth since the first sample after
warm-up. Any 5xx is counted and printed. Not part of the test suite (it runs for minutes).
"""
from __future__ import annotations

import argparse
import base64
import gc
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calendar_service import create_app  # noqa: E402
from calendar_service.auth.accounts import Accounts  # noqa: E402
from benchmarks.common import child_pids, rss_mb  # noqa: E402

API = "/calendar/events/v1"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def sample() -> dict:
    gc.collect()
    return {"rss_kb": round(rss_mb() * 1024), "fds": open_fds(), "threads": threading.active_count(),
            "children": len(child_pids(os.getpid()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests in all (default 5000)")
    parser.add_argument("--writes", type=int, default=1000, help="how many of them write (default 1000)")
    parser.add_argument("--every", type=int, default=500, help="print figures every N requests (default 500)")
    parser.add_argument("--steady", action="store_true",
                        help="after the first sample, write only updates and deletes of existing records, so "
                             "the data stops growing and any growth left is a leak")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also print the ten source lines whose allocations grew most after the first sample")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    options = parser.parse_args()

    if options.tracemalloc:
        import tracemalloc
        tracemalloc.start(8)
    traced = None
    rng = random.Random(options.seed)
    workdir = Path(tempfile.mkdtemp(prefix="calendar-soak-"))
    accounts = Accounts(workdir / "users.yaml")
    accounts.add("soak", "administrator", password="soak-pass-word")
    app = create_app({"content_dir": workdir / "content", "index_dir": workdir / "index",
                      "users_file": workdir / "users.yaml", "seed_sample": True})
    client = app.test_client()
    auth = {"Authorization": "Basic " + base64.b64encode(b"soak:soak-pass-word").decode()}
    events: list[int] = []
    venues: list[int] = []
    failures: list[str] = []
    statuses: dict[int, int] = {}

    def call(method: str, path: str, **kwargs):
        response = getattr(client, method)(API + path, **kwargs)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            failures.append(f"{method.upper()} {path}: {response.status_code}")
        body = response.get_json(silent=True)
        response.close()
        return response.status_code, body

    write_ratio = options.writes / max(options.requests, 1)
    writes = 0
    started = time.monotonic()
    baseline = None
    print(f"{'requests':>8} {'writes':>6} {'rss MB':>7} {'fds':>4} {'threads':>7} {'children':>8} {'req/s':>6}")
    for n in range(1, options.requests + 1):
        if writes < options.writes and rng.random() < write_ratio:
            writes += 1
            kind = rng.random()
            day = f"2030-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            if options.steady and baseline is not None and len(events) > 20:
                kind = 0.6 + kind * 0.35  # updates only (deletes would shrink the data)
            if kind < 0.45 or not events:
                status, body = call("post", "/events", headers=auth, json={
                    "title": f"Soak event {n} {rng.choice(['jazz', 'rock', 'folk', 'talk'])}",
                    "start_date": f"{day} 10:00", "end_date": f"{day} 12:00",
                    "description": "<p>" + " ".join(rng.choice(["music", "art", "food", "walk"]) for _ in range(30)),
                    "categories": [rng.choice(["Music", "Art", "Food"])], "tags": [f"t{rng.randint(1, 20)}"]})
                if status == 201:
                    events.append(body["id"])
            elif kind < 0.55:
                status, body = call("post", "/venues", headers=auth, json={"venue": f"Soak venue {n}"})
                if status == 201:
                    venues.append(body["id"])
            elif kind < 0.95:
                target = rng.choice(events)
                fields = {"excerpt": f"changed {n}"}
                if venues and rng.random() < 0.3:
                    fields["venue"] = rng.choice(venues)
                call("post", f"/events/{target}", headers=auth, json=fields)
            else:
                target = events.pop(rng.randrange(len(events)))
                call("delete", f"/events/{target}", headers=auth)
        else:
            kind = rng.random()
            if kind < 0.35:
                call("get", f"/events?page={rng.randint(1, 3)}&start_date=2029-01-01&end_date=2031-12-31")
            elif kind < 0.5:
                call("get", f"/events?search={rng.choice(['jazz', 'music', 'walk food', 'nothing'])}"
                            "&start_date=2029-01-01&end_date=2031-12-31")
            elif kind < 0.6:
                call("get", "/events?categories=music&start_date=2030-03-01&end_date=2030-06-30")
            elif kind < 0.8 and events:
                call("get", f"/events/{rng.choice(events)}")
            elif kind < 0.9:
                call("get", "/venues?per_page=20")
            else:
                call("get", f"/{rng.choice(['categories', 'tags'])}?hide_empty=0")
        if n == min(options.every, options.requests):
            baseline = sample()
            if options.tracemalloc:
                traced = tracemalloc.take_snapshot()
        if n % options.every == 0 or n == options.requests:
            figures = sample()
            rate = n / (time.monotonic() - started)
            print(f"{n:>8} {writes:>6} {figures['rss_kb'] / 1024:>7.1f} {figures['fds']:>4} {figures['threads']:>7} "
                  f"{figures['children']:>8} {rate:>6.0f}", flush=True)
    end = sample()
    baseline = baseline or end
    print(f"\nstatuses: {dict(sorted(statuses.items()))}; server errors: {len(failures)}")
    for failure in failures[:10]:
        print("  ", failure)
    print(f"growth since request {min(options.every, options.requests)}: "
          f"rss {(end['rss_kb'] - baseline['rss_kb']) / 1024:+.1f} MB, fds {end['fds'] - baseline['fds']:+d}, "
          f"threads {end['threads'] - baseline['threads']:+d}, children {end['children'] - baseline['children']:+d}")
    if traced is not None:
        print("allocation growth by line:")
        for stat in tracemalloc.take_snapshot().compare_to(traced, "lineno")[:10]:
            print("  ", stat)
    app.extensions["calendar"].store.close()
    if options.keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

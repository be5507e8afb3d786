"""Benchmark: what the limits on guessing cost now that they are counted in the state database
(SQLite, PostgreSQL) rather than in each process's memory; not run in CI.

    python -m benchmarks.state_limits [--calls 2000] [--requests 400] [--url postgresql://...]

Prints, per backend, microseconds per sign-in check (``Limits.check_login``: two reads) and per
failed sign-in (``Limits.login_failed``: two writes), and the p50/p90 of an authenticated GET
of one event through the app in-process (Flask test client, SQLite state) with the counts in
memory (as before) and in the state database. Without ``--url`` a PostgreSQL is started on
loopback when its binaries are installed (as the tests do).
"""
from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calendar_service.auth.limits import Limits
from calendar_service.storage.state import StateDB

ROOT = Path(__file__).resolve().parent.parent


def per_call_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - start) / calls * 1e6


def limits_cost(name: str, limits: Limits, calls: int) -> None:
    check = per_call_us(lambda i: limits.check_login(f"login-{i % 500}", f"192.0.2.{i % 250}"), calls)
    fail = per_call_us(lambda i: limits.login_failed(f"login-{i}", f"198.51.100.{i % 250}"), calls)
    check_after = per_call_us(lambda i: limits.check_login(f"login-{i}", f"198.51.100.{i % 250}"), calls)
    print(f"{name:<11} check {check:8.1f} us   failure {fail:8.1f} us   check with failures stored {check_after:8.1f} us")


def get_latency(tmp: Path, requests: int) -> None:
    from calendar_service import create_app
    from calendar_service.auth.accounts import Accounts
    users = tmp / "users.yaml"
    _, password = Accounts(users).add("bench", "administrator", email="b@example.org")  # generated: HMAC, fast
    app = create_app({"content_dir": tmp / "content", "index_dir": tmp / "index", "users_file": users,
                      "state_dir": tmp / "state", "seed_sample": False, "site_timezone": "UTC",
                      "webhook_delivery": False})
    service = app.extensions["calendar"]
    client = app.test_client()
    auth = {"Authorization": "Basic " + base64.b64encode(f"bench:{password}".encode()).decode()}
    r = client.post("/calendar/events/v1/events", headers=auth,
                    json={"title": "Bench", "start_date": "2030-01-01 10:00", "end_date": "2030-01-01 11:00"})
    path = f"/calendar/events/v1/events/{r.get_json()['id']}"
    shared = service.accounts.limits
    memory = Limits.from_settings(service.settings)
    client.get("/calendar/events/v1/events", headers={"Authorization": "Basic YmVuY2g6d3Jvbmc="})  # one failure: the file exists
    rows = {}
    for round_ in range(3):  # interleaved, so load on the machine hits both alike
        for name, limits in (("memory", memory), ("state", shared)):
            service.accounts.limits = limits
            samples = rows.setdefault(name, [])
            for _ in range(requests // 3):
                start = time.perf_counter()
                assert client.get(path, headers=auth).status_code == 200
                samples.append((time.perf_counter() - start) * 1000)
    for name, samples in rows.items():
        samples.sort()
        print(f"authenticated GET, counts in {name:<6}: p50 {statistics.median(samples):6.2f} ms   "
              f"p90 {samples[int(len(samples) * 0.9)]:6.2f} ms   ({len(samples)} requests)")
    service.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--url", default="", help="a PostgreSQL database to use (its tables are made)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-state-") as tmp:
        tmp = Path(tmp)
        limits_cost("memory", Limits(), args.calls)
        sqlite = StateDB(tmp / "state-sqlite")
        limits_cost("sqlite", Limits(state=sqlite), args.calls)
        sqlite.close()
        server = None
        url = args.url
        if not url:
            sys.path.insert(0, str(ROOT / "tests"))
            from postgres import Postgres, binaries
            if binaries() is not None:
                server = Postgres(binaries())
                url = server.new_database()
        if url:
            pg = StateDB(tmp / "unused", url)
            try:
                limits_cost("postgresql", Limits(state=pg), args.calls)
            finally:
                pg.close()
                if server is not None:
                    server.close()
        else:
            print("postgresql  skipped: no --url and no PostgreSQL binaries")
        get_latency(tmp / "app", args.requests)


if __name__ == "__main__":
    main()

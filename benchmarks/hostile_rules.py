"""Benchmark: what the worst recurrence rules cost, not run in CI.

    python -m benchmarks.hostile_rules [--repeat 3]

For each rule (far UNTIL, rules that never match, rules that produce every minute): the time of
the check alone (``recurrence_problems``, what a write and a pushed file run), then the time of a
contributor's ``POST /events`` carrying it through the real app (a throw-away repository), the
answer's status, the next anonymous list, and the worker's resident memory after both.
"""
from __future__ import annotations

import argparse
import base64
import tempfile
import time
from pathlib import Path
from zoneinfo import ZoneInfo

from benchmarks.common import rss_mb
from calendar_service.domain.recurrence import recurrence_problems

API = "/calendar/events/v1"
MINUTES = ",".join(str(m) for m in range(60))
RULES = [
    ("UNTIL in year 9999", "RRULE:FREQ=DAILY;UNTIL=99991231T000000Z", "2026-12-01 19:00"),
    ("HOURLY, Feb 30 (never)", "RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "2026-12-01 19:00"),
    ("YEARLY, Feb 31 (never)", "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31", "2026-12-01 19:00"),
    ("MONTHLY, 6th Monday (never)", "RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", "2026-12-01 19:00"),
    ("YEARLY, week 1 in June (never)", "RRULE:FREQ=YEARLY;BYWEEKNO=1;BYMONTH=6", "2026-12-01 19:00"),
    ("HOURLY with 60 BYMINUTE", "RRULE:FREQ=HOURLY;BYMINUTE=" + MINUTES, "2026-12-01 00:00"),
    ("DAILY, 24 BYHOUR x 60 BYMINUTE", "RRULE:FREQ=DAILY;BYHOUR=" + ",".join(str(h) for h in range(24))
     + ";BYMINUTE=" + MINUTES, "2026-12-01 00:00"),
]


def check_ms(rule: str, start: str, repeat: int) -> tuple[float, int]:
    best, found = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        found = recurrence_problems([rule], None, start + ":00", start + ":00", ZoneInfo("UTC"), False)
        best = min(best, time.perf_counter() - t0)
    return best * 1000, len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    from calendar_service import create_app
    from calendar_service.auth.accounts import Accounts

    print(f"{'rule':34} {'check ms':>9} {'problems':>8} {'POST ms':>8} {'status':>6} {'list ms':>8} {'RSS MB':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Accounts(root / "users.yaml").add("writer", "contributor", email="w@example.org", name="W",
                                          password="writer-secret-pass")
        app = create_app({"content_dir": root / "content", "index_dir": root / "index",
                          "users_file": root / "users.yaml", "state_dir": root / "state", "seed_sample": False,
                          "site_timezone": "UTC"})
        client = app.test_client()
        auth = {"Authorization": "Basic " + base64.b64encode(b"writer:writer-secret-pass").decode()}
        for name, rule, start in RULES:
            ms, problems = check_ms(rule, start, options.repeat)
            t0 = time.perf_counter()
            answer = client.post(API + "/events", headers=auth, json={
                "title": name, "start_date": start, "end_date": start, "recurrence": [rule]})
            post_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            listed = client.get(API + "/events")
            list_ms = (time.perf_counter() - t0) * 1000
            assert listed.status_code == 200
            print(f"{name:34} {ms:9.2f} {problems:8} {post_ms:8.1f} {answer.status_code:6} {list_ms:8.1f} "
                  f"{rss_mb():7.0f}")
        app.extensions["calendar"].close()


if __name__ == "__main__":
    main()

"""Benchmark: expanding recurring series (domain/recurrence.py), not run in CI.

    python -m benchmarks.recurrence [--series 1000] [--months 24] [--repeat 5]

Builds ``--series`` weekly series (a weekly evening in one of a few zones,
some with one or two weekdays, some with an UNTIL, a few EXDATEs and an exception), and times:
reading them (``parse_recurrence``), expanding every series over the horizon (``occurrences``,
about 104 occurrences each over 24 months), expanding a one-week window of each, and the same
horizon for monthly rules (the dateutil path). Prints the least CPU time of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import random
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from calendar_service.domain import recurrence

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "UTC"]


def build(count: int, monthly: bool = False, seed: int = 7) -> list[tuple]:
    """The arguments of ``parse_recurrence`` for ``count`` series starting this year."""
    rng = random.Random(seed)
    out = []
    year = datetime.now().year
    for i in range(count):
        zone = ZONES[i % len(ZONES)]
        start = datetime(year, 1, 5, 17 + i % 4) + timedelta(days=rng.randrange(7))
        end = start + timedelta(hours=2)
        if monthly:
            lines = ["RRULE:FREQ=MONTHLY;BYDAY=%d%s" % (rng.choice([1, 2, 3, -1]), recurrence.WEEKDAYS[start.weekday()])]
            nth = (start.day - 1) // 7 + 1
            lines = [f"RRULE:FREQ=MONTHLY;BYDAY={nth}{recurrence.WEEKDAYS[start.weekday()]}"]
        else:
            days = sorted({start.weekday(), rng.randrange(7)}) if i % 3 == 0 else [start.weekday()]
            rule = "RRULE:FREQ=WEEKLY;BYDAY=" + ",".join(recurrence.WEEKDAYS[d] for d in days)
            lines = [rule]
            exdate = start + timedelta(weeks=10)
            lines.append(f"EXDATE;TZID={zone}:{exdate:%Y%m%dT%H%M%S}" if zone != "UTC"
                         else f"EXDATE:{exdate:%Y%m%dT%H%M%S}Z")
        exceptions = {}
        if not monthly and i % 2:
            moved = start + timedelta(weeks=3)
            exceptions[moved.strftime("%Y-%m-%d %H:%M:%S")] = {
                "title": "Moved", "start_date": (moved + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")}
        out.append((lines, exceptions, start.strftime("%Y-%m-%d %H:%M:%S"), end.strftime("%Y-%m-%d %H:%M:%S"),
                    ZoneInfo(zone), False))
    return out


def best(fn, repeat: int) -> tuple[float, object]:
    """The least CPU time of ``repeat`` runs of ``fn`` (CPU time: the machine may be shared) and its result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return min(times), result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--months", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    now = datetime.now(timezone.utc)
    horizon = recurrence.horizon_end(now, args.months)
    start = now
    rows = []
    for label, monthly in (("weekly", False), ("monthly", True)):
        specs = build(args.series, monthly)
        seconds, series = best(lambda: [recurrence.parse_recurrence(*spec) for spec in specs], args.repeat)
        rows.append((f"parse {args.series} {label} series", seconds, len(series)))
        seconds, total = best(lambda: sum(1 for s in series for _ in recurrence.occurrences(s, start, None, horizon)),
                              args.repeat)
        rows.append((f"expand {args.series} {label} series to the {args.months}-month horizon", seconds, total))
        week_lo = now + timedelta(days=200)
        week_hi = week_lo + timedelta(days=7)
        seconds, total = best(lambda: sum(1 for s in series for _ in recurrence.occurrences(s, week_lo, week_hi, horizon)),
                              args.repeat)
        rows.append((f"expand {args.series} {label} series, one week 200 days ahead", seconds, total))
    print(f"{'what':70} {'seconds':>9} {'occurrences':>12} {'us/occ':>8}")
    for what, seconds, total in rows:
        per = seconds / total * 1e6 if total else 0.0
        print(f"{what:70} {seconds:9.3f} {total:12d} {per:8.2f}")


if __name__ == "__main__":
    main()

"""cProfile of chosen requests, as a table of the functions where their time goes."""
from __future__ import annotations

import cProfile
import os
import pstats
import time

from benchmarks.common import PACKAGE_ROOT, say

# the longest list rows are profiled over about half the row budget, within these request counts
MIN_PROFILED, MAX_PROFILED = 3, 30
UNSEEN = 50_000   # request numbers from here make queries no row has sent (nothing cached)


def profile_lists(runner, service, rows: list[dict], lists: dict, cfg: dict) -> list[dict]:
    """cProfile the slowest list row (by p50), and the slowest one served by the index if that differs."""
    # rows of ``lists`` (the fresh pages are profiled apart)
    list_rows = [r for r in rows if r["kind"] == "list" and r.get("floor_of", r["name"]) in lists]
    chosen = [max(list_rows, key=lambda r: r["p50_ms"])]
    indexed = [r for r in list_rows if r["mode"] == "index"]
    if indexed and max(indexed, key=lambda r: r["p50_ms"]) is not chosen[0]:
        chosen.append(max(indexed, key=lambda r: r["p50_ms"]))
    out = []
    for row in chosen:
        base = row.get("floor_of", row["name"])
        request = lists[base]
        count = max(MIN_PROFILED, min(MAX_PROFILED, int(cfg["budget"] / 2 * 1000 / max(row["p50_ms"], 0.01))))
        saved = service.index
        if row["mode"] == "scan":
            service.index = None
        try:
            # queries not used before (no cached search results)
            out.append(profile_requests(row["name"], count, lambda k: request(UNSEEN + k), cfg["size"]))
        finally:
            service.index = saved
    return out


def profile_requests(name: str, count: int, request, size: int) -> dict:
    say(f"{size}: profiling {name} over {count} requests")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    try:
        for k in range(count):
            request(k)
    finally:
        profiler.disable()
    wall = time.perf_counter() - started
    return {"row": name, "requests": count, "wall_s": wall, "top15_cumulative": profile_table(profiler, count, wall)}


_WRAPPERS = ("/werkzeug/", "/flask/", "/benchmarks/")


def _where(filename: str, line: int, func: str) -> str:
    if filename == "~":
        return func
    marker = filename.rfind("site-packages/")
    stdlib = os.path.dirname(os.__file__) + "/"
    if marker >= 0:
        short = filename[marker + 14:]
    elif filename.startswith(stdlib):
        short = "stdlib/" + filename[len(stdlib):]
    else:
        short = filename.replace(str(PACKAGE_ROOT) + "/", "")
    return f"{short}:{line}({func})"


def profile_table(profiler: cProfile.Profile, requests: int, wall: float, top: int = 15) -> str:
    """Top functions by cumulative time, leaving out the test client, Flask and this module
    (their frames only wrap the request), then the top by own time. Percentages are of the
    wall time of the profiled requests."""
    stats = pstats.Stats(profiler)
    total = wall
    entries = [(key, value) for key, value in stats.stats.items()
               if not any(w in key[0] for w in _WRAPPERS)]
    lines = [f"{requests} requests, {total:.3f} s wall time under the profiler ({total / requests * 1000:.1f} ms "
             f"per request); test-client, Flask and bench frames left out",
             f"{'cum s':>8} {'cum %':>6} {'own s':>8} {'calls':>9}  function"]
    for (filename, line, func), (cc, nc, tt, ct, _) in sorted(entries, key=lambda e: -e[1][3])[:top]:
        lines.append(f"{ct:8.3f} {ct / total * 100:5.1f}% {tt:8.3f} {nc:9d}  {_where(filename, line, func)}")
    lines += ["", f"top {top // 2 + 3} by own time:", f"{'own s':>8} {'own %':>6} {'calls':>9}  function"]
    for (filename, line, func), (cc, nc, tt, ct, _) in sorted(entries, key=lambda e: -e[1][2])[:top // 2 + 3]:
        lines.append(f"{tt:8.3f} {tt / total * 100:5.1f}% {nc:9d}  {_where(filename, line, func)}")
    return "\n".join(lines) + "\n"

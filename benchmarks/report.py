"""The table printed for each size: one-off figures, then one row per request kind against its floor."""
from __future__ import annotations

import math

NAME_WIDTH = 58      # the one-off figures' name column
ROW_WIDTH = 50       # the request rows' name column


def _fmt_ms(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _ratio(value, floor) -> str:
    if not value or not floor or math.isnan(value) or math.isnan(floor):
        return "—"
    return f"{value / floor:.1f}x"


def table(size_result: dict) -> str:
    b, s = size_result["build"], size_result.get("serve", {})
    meta = b["meta"]
    lines = [
        f"== {meta['events']:,} events ({meta['venues']} venues, {meta['organizers']} organizers, "
        f"{meta['categories']} categories, {meta['tags']} tags; {meta['drafts']} drafts, {meta['hidden']} hidden; "
        f"{meta['files']:,} files, {meta['bytes'] / 1e6:.1f} MB; seed {size_result['seed']}) ==",
        "",
        f"{'one-off figure':<{NAME_WIDTH}} {'value':>12} {'floor':>12} {'ratio':>7}",
    ]
    lines += _one_off_lines(b, s)
    rest = size_result.get("rest")
    if rest:   # --rested: the start that caught up with the previous serve before this one
        lines.append(_one("start right after the previous serve's writes (--rested)", rest["start_s"]))
    lines.append(f"{'loose objects after the initial commit':<{NAME_WIDTH}} {b['loose_objects']:>12,}")
    if s:
        lines += _request_lines(s)
    lines += [""] + target_lines(meta["events"], b, s)
    if meta.get("series"):
        lines += [""] + series_target_lines(meta, b, s)
    return "\n".join(lines)


def _one(name, value, unit="s", floor=None) -> str:
    text = "—" if value is None else (f"{value:.2f} {unit}" if unit else f"{value:,.0f}")
    ftext = "—" if floor is None else f"{floor:.2f} {unit}"
    return f"{name:<{NAME_WIDTH}} {text:>12} {ftext:>12} {_ratio(value, floor):>7}"


def _one_off_lines(b: dict, s: dict) -> list[str]:
    lines = [
        _one("generate files (records.dump)", b["generate_s"]),
        _one("one commit of the generated files (not the importer)" if b.get("commit_direct") else
             "import (JSON file -> one commit, importer) (floor: git) [a]", b["commit_s"],
             floor=b.get("floor_bulk_commit_s")),
        _one("snapshot load (Catalog.current, parse every file)", b["snapshot_s"]),
    ]
    if b.get("records_cache_s") is not None:
        lines.append(_one("  writing the records cache and its texts (background)", b["records_cache_s"]))
    lines += [_one("full reindex (SearchIndex.rebuild_now)", b["reindex_s"]),
              _one("  reindex throughput (events/s)", b["reindex_docs_per_s"], unit="")]
    if s:
        lines += [_one("cold start: create_app (import not included)", s["create_app_s"]),
                  _one("cold start: first list request", s["first_list_s"]),
                  _one("cold start: total until the first list returns", s["cold_start_s"]),
                  _one("RSS after load (serving process, MB)", s["rss_after_load_mb"], unit="")]
        if s.get("first_feed_ms") is not None:
            lines.append(_one(f"first iCalendar feed, every VEVENT built ({s['feed_events']:,} events)",
                              s["first_feed_ms"] / 1000))
        lines.append(_one("RSS at the end of the serving process (MB)", s["rss_end_mb"], unit=""))
    lines += [_one("peak RSS of the build process (MB)", b["peak_rss_mb"], unit=""),
              _one("search index on disk (MB)", b["index_mb"], unit="")]
    return lines


def _request_lines(s: dict) -> list[str]:
    lines = ["", f"{'request (in process, Flask test client)':<{ROW_WIDTH}} {'p50 ms':>9} {'p95 ms':>9} {'n':>5} "
                 f"{'floor p50':>10} {'ratio':>7}"]
    for row in s["rows"]:
        flag = " *" if row.get("stopped_by_budget") else ""
        err = f"  ERR {row['errors'][0][:60]}" if row.get("errors") else ""
        lines.append(f"{row['name']:<{ROW_WIDTH}} {_fmt_ms(row['p50_ms']):>9} {_fmt_ms(row['p95_ms']):>9} "
                     f"{row['n']:>5} {_fmt_ms(row.get('floor_p50_ms')):>10} "
                     f"{_ratio(row['p50_ms'], row.get('floor_p50_ms')):>7}{flag}{err}")
    lines.append(f"{'first list after the creates (index catch-up)':<{ROW_WIDTH}} "
                 f"{_fmt_ms(s['list_after_creates_ms']):>9}")
    git_floor = s["floors"]["git add + commit"]
    lines += [
        "",
        "[a] floor: write the same files + `git add -A` + `git commit` in a scratch repository.",
        f"floors: list/single rows = the same body through a trivial route of the same app, timed "
        f"alternately with the row; the fresh list pages = the same bytes and content type from a bare "
        f"Flask app (one route, no hooks), timed alternately with each page{_fresh_note(s)}; writes = "
        f"`git add` + `git commit` of one event file in this repository (p50 {_fmt_ms(git_floor['p50_ms'])} ms, "
        f"p95 {_fmt_ms(git_floor['p95_ms'])} ms, n={git_floor['n']}).",
        f"default list total: {s['default_list_total']} events; writes sent {s['writes_sent']}, commits made "
        f"{s['write_commits']}; * = row stopped by the time budget.",
    ]
    return lines


def _fresh_note(s: dict) -> str:
    row = next((r for r in s["rows"] if r["name"] == FRESH_ROW), None)
    if row is None:
        return ""
    how = (f"the memos emptied before {row['memo_cleared']} of them" if row.get("memo_cleared")
           else "pages no earlier request asked for")
    return f" ({how}; {row.get('fresh_events', 0)} events presented for the first time)"


# ----------------------------------------------------------------------------- targets (one-off events)

# The size columns of the targets table: a run is held to the column of the smallest size at
# least its own (1,000 events to the 10,000 column).
TARGET_SIZES = (10_000, 100_000, 1_000_000)
LIST_ROWS = ("list: default, first page", "list: category + 30-day window", "list: search + 1-year window",
             "list: deep page")
OVERLAP_ROW = "list: overlap window"
AFTER_WRITE_ROW = "list: default, right after a write"
SINGLE_ROWS = ("single: by id", "single: by slug")
WRITE_ROWS = ("write: create event (POST)", "write: update event (POST to id)")
FRESH_ROW = "list: page of 10 freshly presented events"   # benchmarks.fresh_list (its floor: a bare Flask app)


def _le_ratio(limit):
    return ("ratio", limit)


def _le_ms(limit):
    return ("ms", limit)


# target name -> one goal per size column (None: no goal for that size)
TARGETS = {
    "list / category+window / search+window / deep page, p50": (_le_ratio(6), _le_ratio(10), _le_ms(10)),
    "first list after a write, p50": (_le_ratio(10), _le_ms(10), _le_ms(50)),
    "overlap window (starts_before + ends_after + strict_dates), p50": (_le_ratio(6), _le_ratio(10), _le_ms(20)),
    "single by id / slug, p50": (_le_ratio(3), _le_ratio(3), _le_ratio(3)),
    "list page of 10 freshly presented events, p50 (floor: bare Flask)": (_le_ratio(8), _le_ratio(8), _le_ratio(8)),
    "write, one commit, p50 (floor: naive git add + commit)": (_le_ratio(0.5), _le_ratio(0.3), _le_ms(300)),
    "4 concurrent writers, writes/s (>= one writer's rate)": (("writers",), ("writers",), None),
    "RSS per worker after a mixed run (MB)": (("mb", 100), ("mb", 300), ("mb", 2000)),
    "cold start (s)": (("s", 0.5), ("s", 2), ("s", 3)),
    # the unpaged feed of every event of the default window, the first one after the start (no
    # VEVENT kept yet); not measured above FULL_ROWS_MAX (~470,000 VEVENTs at 1,000,000 events)
    "first every-event iCalendar feed (s)": (("s", 0.5), ("s", 5), None),
    "reindex throughput (events/s)": (("rate", 5000), ("rate", 5000), None),
    "first start after import lists from the index": (("index",), ("index",), ("index",)),
}


def _rows_named(s: dict, prefixes) -> list[dict]:
    return [r for r in s.get("rows", []) if r.get("mode") == "index" and r["name"].startswith(tuple(prefixes))]


def _request_check(rows: list[dict], goal) -> tuple[str, bool | None]:
    """The figure of each row and whether every one meets ``goal`` (None: a figure is missing)."""
    if not rows:
        return "not measured", None
    kind, limit = goal
    texts, verdicts = [], []
    for row in rows:
        value, floor = row.get("p50_ms"), row.get("floor_p50_ms")
        if value is None or (kind == "ratio" and not floor):
            texts.append("—")
            verdicts.append(None)
        elif kind == "ratio":
            texts.append(f"{value / floor:.1f}x")
            verdicts.append(value / floor <= limit)
        else:
            texts.append(f"{_fmt_ms(value)} ms")
            verdicts.append(value <= limit)
    met = False if False in verdicts else (None if None in verdicts else True)
    return " / ".join(texts), met


def _goal_text(goal) -> str:
    kind = goal[0]
    if kind == "ratio":
        return f"<= {goal[1]:g}x floor"
    if kind == "ms":
        return f"<= {goal[1]:g} ms"
    if kind == "mb":
        return f"<= {goal[1]:g} MB"
    if kind == "s":
        return f"<= {goal[1]:g} s"
    if kind == "rate":
        return f">= {goal[1]:,}/s"
    if kind == "writers":
        return ">= 1 writer"
    return "from the index"


def _per_second(row):
    """writes/s of a writers_N result (serve.py stores a row with ``writes_per_s``)."""
    return row.get("writes_per_s") if isinstance(row, dict) else row


def _check(name: str, goal, b: dict, s: dict) -> tuple[str, bool | None]:
    if name.startswith("list /"):
        return _request_check(_rows_named(s, LIST_ROWS), goal)
    if name.startswith("first list after"):
        return _request_check(_rows_named(s, (AFTER_WRITE_ROW,)), goal)
    if name.startswith("overlap"):
        return _request_check(_rows_named(s, (OVERLAP_ROW,)), goal)
    if name.startswith("list page of 10 fresh"):
        return _request_check(_rows_named(s, (FRESH_ROW,)), goal)
    if name.startswith("single"):
        return _request_check(_rows_named(s, SINGLE_ROWS), goal)
    if name.startswith("write,"):
        return _request_check(_rows_named(s, WRITE_ROWS), goal)
    if name.startswith("4 concurrent"):
        one, four = (_per_second(s.get(key, b.get(key))) for key in ("writers_1", "writers_4"))
        if one is None or four is None:
            return "not measured", None
        one, four = (x["writes_per_s"] if isinstance(x, dict) else x for x in (one, four))
        return f"{four:.1f} vs {one:.1f}", four >= one
    if name.startswith("RSS"):
        value = s.get("rss_worker_mb", b.get("rss_worker_mb"))
        return ("not measured", None) if value is None else (f"{value:.0f} MB", value <= goal[1])
    if name.startswith("first every-event"):
        value = s.get("first_feed_ms")
        return ("not measured", None) if value is None else (f"{value / 1000:.2f} s", value / 1000 <= goal[1])
    if name.startswith("cold start"):
        value = s.get("cold_start_s")
        return ("not measured", None) if value is None else (f"{value:.2f} s", value <= goal[1])
    if name.startswith("reindex"):
        value = b.get("reindex_docs_per_s")
        return ("not measured", None) if value is None else (f"{value:,.0f}/s", value >= goal[1])
    value = s.get("first_list_from_index")
    return ("not measured", None) if value is None else (("yes" if value else "no"), bool(value))


def target_lines(size: int, b: dict, s: dict) -> list[str]:
    """Every row of the issue's targets table for the column of ``size``: figure, goal, met or not."""
    column = next((i for i, limit in enumerate(TARGET_SIZES) if size <= limit), len(TARGET_SIZES) - 1)
    lines = [f"targets for {TARGET_SIZES[column]:,} events (this run: {size:,})",
             f"{'target':<{NAME_WIDTH + 6}} {'measured':>24} {'goal':>16}  result"]
    for name, goals in TARGETS.items():
        goal = goals[column]
        if goal is None:
            lines.append(f"{name:<{NAME_WIDTH + 6}} {'':>24} {'—':>16}  no goal at this size")
            continue
        text, met = _check(name, goal, b, s or {})
        verdict = "not measured" if met is None else ("met" if met else "NOT MET")
        lines.append(f"{name:<{NAME_WIDTH + 6}} {text:>24} {_goal_text(goal):>16}  {verdict}")
    return lines


# ----------------------------------------------------------------------------- targets (recurring series)

SERIES_WRITE_ROWS = ("write: update series file", "write: one occurrence")
# name -> goal: lists, search and filters with series stay within the ratios the lists are held to
# without series (the one-off column); a write to a series within 1.5x bare git; a reindex with series
# >= 2,000 files/s
SERIES_TARGETS = {
    "lists with series (default/category/search/deep page), p50": None,
    "overlap window with series, p50": None,
    "series write (update file / one occurrence), p50 of git": _le_ratio(1.5),
    "full reindex with series (files/s)": ("rate", 2000),
}


def series_target_lines(meta: dict, b: dict, s: dict) -> list[str]:
    """Issue 16's speed targets for a run with ``--series``: figure, goal, met or not."""
    size = meta["events"]
    column = next((i for i, limit in enumerate(TARGET_SIZES) if size <= limit), len(TARGET_SIZES) - 1)
    list_goal, overlap_goal = (TARGETS[name][column] for name in TARGETS if name.startswith(("list /", "overlap")))
    lines = [f"targets of recurring events ({meta['series']:,} weekly series beside {size:,} events)",
             f"{'target':<{NAME_WIDTH + 6}} {'measured':>24} {'goal':>16}  result"]
    for name, goal in SERIES_TARGETS.items():
        if name.startswith("lists"):
            goal = list_goal
            text, met = _request_check(_rows_named(s or {}, LIST_ROWS), goal)
        elif name.startswith("overlap"):
            goal = overlap_goal
            text, met = _request_check(_rows_named(s or {}, (OVERLAP_ROW,)), goal)
        elif name.startswith("series write"):
            text, met = _request_check(_rows_named(s or {}, SERIES_WRITE_ROWS), goal)
        else:
            value = b.get("reindex_docs_per_s")
            text, met = ("not measured", None) if value is None else (f"{value:,.0f}/s", value >= goal[1])
        verdict = "not measured" if met is None else ("met" if met else "NOT MET")
        lines.append(f"{name:<{NAME_WIDTH + 6}} {text:>24} {_goal_text(goal):>16}  {verdict}")
    return lines

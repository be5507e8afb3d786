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
    lines.append(f"{'loose objects after the initial commit':<{NAME_WIDTH}} {b['loose_objects']:>12,}")
    if s:
        lines += _request_lines(s)
    return "\n".join(lines)


def _one(name, value, unit="s", floor=None) -> str:
    text = "—" if value is None else (f"{value:.2f} {unit}" if unit else f"{value:,.0f}")
    ftext = "—" if floor is None else f"{floor:.2f} {unit}"
    return f"{name:<{NAME_WIDTH}} {text:>12} {ftext:>12} {_ratio(value, floor):>7}"


def _one_off_lines(b: dict, s: dict) -> list[str]:
    lines = [
        _one("generate files (records.dump)", b["generate_s"]),
        _one("import (JSON file -> one commit, importer) (floor: git) [a]", b["commit_s"],
             floor=b["floor_bulk_commit_s"]),
        _one("snapshot load (Catalog.current, parse every file)", b["snapshot_s"]),
    ]
    if b.get("records_cache_s") is not None:
        lines.append(_one("  writing the records cache (background at first start)", b["records_cache_s"]))
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
        f"floors: list/single rows = the same body through a trivial route of the same app; writes = "
        f"`git add` + `git commit` of one event file in this repository (p50 {_fmt_ms(git_floor['p50_ms'])} ms, "
        f"p95 {_fmt_ms(git_floor['p95_ms'])} ms, n={git_floor['n']}).",
        f"default list total: {s['default_list_total']} events; writes sent {s['writes_sent']}, commits made "
        f"{s['write_commits']}; * = row stopped by the time budget.",
    ]
    return lines

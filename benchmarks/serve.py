"""The serve phase (its own process): cold start on the built repository, then reads with the
index, the same lists scanning, floors, iCalendar feeds, writes, and the git floor of a write."""
from __future__ import annotations

import json
import random
import threading
import time
from datetime import date, datetime, timedelta
from pathlib import Path

from benchmarks.common import API, MIN_SAMPLES, SITE_TZ, WARMUP, rss_mb, run_git, say, summary
from benchmarks.fresh_list import FRESH_ROW, FreshPages
from benchmarks.profiling import profile_lists, profile_requests
from benchmarks.runner import Runner

EXTRA_PICKS = 1100      # events picked for single reads beyond one per request
MAX_DEEP_PAGE = 40      # the deep-page row asks for this page, or the last one if there are fewer
PROFILED_FRESH = 30     # fresh list pages profiled with --profile
PROFILED_WRITES = 10    # update requests profiled with --profile (each one more commit)
WRITERS = (1, 4)        # concurrent writers measured (threads, each its own client): writers_1, writers_4
WRITER_SECONDS = 4.0    # each writers_N run lasts about this long in all (at most the row budget)
WRITER_SLICES = 4       # ... in this many slices, alternated between the writer counts
WRITER_MIN_WRITES = 2   # ... and at least this many writes per writer and slice
# above this size the scanning-fallback rows and the every-event feed are not measured: at
# 1,000,000 events a scan takes seconds per request (seven per row) and the unpaged feed is
# ~470,000 VEVENTs (~400 MB of body, minutes per request); neither has a goal there
FULL_ROWS_MAX = 200_000


def phase_serve(cfg: dict) -> dict:
    """Cold start on the built repository, then reads (each alternated with its floor), scanning reads, writes."""
    return ServePhase(cfg).run()


def phase_rest(cfg: dict) -> dict:
    """Leave a kept repository as a service leaves it once it has rested after writes: one start
    (catching up with the commits a previous serve made, reading the index base from Whoosh and
    keeping it), a list, then what its follower does once the branch has been quiet (the records
    cache written for the head, ``Catalog.refresh_cache_when_quiet``, without the wait) and the
    keeper the index runs after a quiet spell (``index.keep_base``). Returns how long the start
    and the rest took."""
    from calendar_service import create_app
    from calendar_service.http.app import close_app
    from calendar_service.index import keep_base
    from calendar_service.storage import catalog as catalog_module

    work = Path(cfg["work"])
    started = time.perf_counter()
    app = create_app({"content_dir": work / "content", "index_dir": work / "index",
                      "users_file": work / "users.yaml", "seed_sample": False, "site_timezone": SITE_TZ})
    start_s = time.perf_counter() - started
    status = app.test_client().get(API + "/events").status_code
    catalog = app.extensions["calendar"].catalog
    catalog.wait_for_cache()   # a start that caught up slowly writes it at once
    catalog_module.CACHE_QUIET_SECONDS = catalog_module.CACHE_REFRESH_SECONDS = 0.0   # (this process only)
    catalog.refresh_cache_when_quiet()
    catalog.wait_for_cache()
    close_app(app)
    kept = keep_base.main([str(work / "index"), SITE_TZ])
    result = {"start_s": start_s, "rest_s": time.perf_counter() - started, "first_list_status": status,
              "base_kept": kept == 0}
    say(f"{cfg['size']}: rested: a start after the previous serve took {start_s:.2f} s, "
        f"{result['rest_s']:.2f} s with its records cache written; index base kept: {result['base_kept']}")
    return result


class ServePhase:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.work = Path(cfg["work"])
        self.meta = cfg["meta"]
        self.size, self.repeat, self.budget = cfg["size"], cfg["repeat"], cfg["budget"]
        self.today = date.fromisoformat(cfg["today"])
        self.result: dict = {}
        self.rows: list[dict] = []
        self.floor_bodies: dict[str, object] = {}

    def run(self) -> dict:
        self.cold_start()
        self.runner = Runner(self.client, self.repeat, self.budget)
        rng = random.Random(self.cfg["seed"] + 1)
        listed = self.meta["listed"]
        self.picks = rng.sample(listed, min(len(listed), max(self.repeat, 1) + EXTRA_PICKS))
        lists = self.list_requests()
        floors = self.reads(lists)
        self.fresh_pages(floors)
        if self.size <= FULL_ROWS_MAX:
            self.scanning_reads(lists)
        else:
            say(f"{self.size}: scanning-fallback rows not measured (above {FULL_ROWS_MAX:,} events)")
        for row in self.rows:
            floor_row = floors.get(row.get("floor_of", row["name"]))
            if floor_row:
                row["floor_p50_ms"], row["floor_p95_ms"] = floor_row["p50_ms"], floor_row["p95_ms"]
        self.feeds()
        # what one gunicorn worker holds after a mixed read run (lists, singles, scans, feeds),
        # before the writes (whose peak is another figure): the "RSS per worker" row
        self.result["rss_worker_mb"] = rss_mb()
        say(f"{self.size}: RSS after the mixed reads {self.result['rss_worker_mb']:.0f} MB")
        if self.cfg.get("profile"):
            self.result["profiles"] = profile_lists(self.runner, self.service, self.rows, lists, self.cfg)
            self.result["profiles"].append(profile_requests(
                FRESH_ROW + " (pages not asked before)", PROFILED_FRESH, self.fresh.profiled, self.size))
        self.writes(floors)
        self.service.store.close()
        git_floor = self.git_floor()
        for row in self.rows:
            if row["kind"] == "write":
                row["floor_p50_ms"], row["floor_p95_ms"] = git_floor["p50_ms"], git_floor["p95_ms"]
        self.result["rows"] = self.rows
        self.result["floors"] = {**floors, "git add + commit": git_floor}
        return self.result

    # ----------------------------------------------------------------------- start

    def cold_start(self) -> None:
        result, size = self.result, self.size
        t0 = time.perf_counter()
        from flask import Blueprint, Response

        from calendar_service import create_app
        result["import_s"] = time.perf_counter() - t0

        config = {"content_dir": self.work / "content", "index_dir": self.work / "index",
                  "users_file": self.work / "users.yaml", "seed_sample": False, "site_timezone": SITE_TZ}
        say(f"{size}: cold start (create_app + first list request)")
        t0 = time.perf_counter()
        app = create_app(config)
        result["create_app_s"] = time.perf_counter() - t0

        # the floor route: same app, a precomputed body encoded by the standard library's encoder
        # (a fixed reference: a floor encoded by the service's own encoder would get cheaper with
        # every speed-up of that encoder, and the ratios of the same rows rise); registered
        # before the first request
        floor_bp = Blueprint("bench_floor", __name__)

        @floor_bp.route("/__bench/floor/<name>")
        def floor(name):
            return Response(json.dumps(self.floor_bodies[name], ensure_ascii=False, separators=(",", ":")),
                            headers={"Content-Type": "application/json; charset=UTF-8"})

        app.register_blueprint(floor_bp)
        self.client = app.test_client()
        self.service = app.extensions["calendar"]
        t0 = time.perf_counter()
        first = self.client.get(API + "/events")
        result["first_list_s"] = time.perf_counter() - t0
        result["cold_start_s"] = result["create_app_s"] + result["first_list_s"]
        result["first_list_status"] = first.status_code
        result["first_list_from_index"] = self.service.index is not None and self.service.index._view is not None
        result["rss_after_load_mb"] = rss_mb()
        say(f"{size}: cold start {result['cold_start_s']:.2f} s (create_app {result['create_app_s']:.2f} s, "
            f"first list {result['first_list_s'] * 1000:.0f} ms, from index: {result['first_list_from_index']}), "
            f"RSS {result['rss_after_load_mb']:.0f} MB")

    # ----------------------------------------------------------------------- reads

    def day(self, offset: int) -> str:
        return (self.today + timedelta(days=offset)).isoformat()

    def search_text(self, k: int) -> str:
        # distinct strings (the index caches search results by text): words, then pairs of words
        words = self.meta["search_words"]
        w = len(words)
        if k < w:
            return words[k]
        a, b = divmod(k - w, w)
        return f"{words[a % w]} {words[(a + 1 + b) % w]}"

    def list_requests(self) -> dict:
        runner, day, category_ids = self.runner, self.day, self.meta["category_ids"]
        probe = runner.get("/events", {"page": 1, "per_page": 10})
        deep_page = max(1, min(MAX_DEEP_PAGE, int(probe.headers.get("X-TEC-TotalPages", "1"))))
        self.result["default_list_total"] = int(probe.headers.get("X-TEC-Total", "0"))
        self.result["deep_page"] = deep_page
        return {
            "list: default, first page": lambda k: runner.get("/events"),
            "list: category + 30-day window": lambda k: runner.get("/events", {
                "categories": category_ids[k % len(category_ids)], "start_date": day(k % 365),
                "end_date": day(k % 365 + 30)}),
            "list: search + 1-year window": lambda k: runner.get("/events", {
                "search": self.search_text(k), "start_date": day(k % 60), "end_date": day(k % 60 + 365)}),
            f"list: deep page ({deep_page} of per_page 10)": lambda k: runner.get("/events", {
                "page": deep_page, "per_page": 10, "start_date": day(-(k % 30) - 1)}),
            # what CalDAV clients ask: every event overlapping a 30-day window
            "list: overlap window (starts_before + ends_after)": lambda k: runner.get("/events", {
                "starts_before": day(k % 365 + 30), "ends_after": day(k % 365), "strict_dates": "true"}),
        }

    def reads(self, lists: dict) -> dict[str, dict]:
        """Lists and single reads with the index, each timed alternately with its floor (its
        answer's body through a trivial route); returns the floors by row."""
        runner, picks = self.runner, self.picks
        singles = {
            "single: by id": lambda k: runner.get(f"/events/{picks[k % len(picks)][0]}"),
            "single: by slug": lambda k: runner.get(f"/events/by-slug/{picks[k % len(picks)][1]}"),
        }
        floors: dict[str, dict] = {}
        say(f"{self.size}: reads with the index, each alternated with its floor")
        for name, request in {**lists, **singles}.items():
            row, floors[name] = runner.measure_with_floor(name, request, self.floor_request)
            row["kind"] = "list" if name.startswith("list") else "single"
            row["mode"] = "index"
            self.rows.append(row)
        return floors

    def fresh_pages(self, floors: dict) -> None:
        """List pages of events never presented before, against a bare Flask app serving the same
        bytes (see ``fresh_list``)."""
        say(f"{self.size}: list pages of freshly presented events, alternated with a bare Flask floor")
        self.fresh = FreshPages(self.runner, self.service)
        row, floors["bare Flask"] = self.fresh.measure(self.repeat, self.budget)
        self.rows.append(row)

    def scanning_reads(self, lists: dict) -> None:
        say(f"{self.size}: the same lists with service.index = None (scanning fallback)")
        saved_index, self.service.index = self.service.index, None
        for name, request in lists.items():
            row, body = self.runner.measure(name + " [scan]", request)
            row["kind"], row["mode"], row["floor_of"] = "list", "scan", name
            self.rows.append(row)
        self.service.index = saved_index

    def floor_request(self, body: bytes):
        """The floor of a read row: its body (decoded once) encoded again through a trivial route."""
        key = f"f{len(self.floor_bodies)}"
        self.floor_bodies[key] = json.loads(body)
        return lambda: self.client.get(f"/__bench/floor/{key}")

    def feeds(self) -> None:
        result, day, category_ids = self.result, self.day, self.meta["category_ids"]
        say(f"{self.size}: iCalendar feeds (every matching event; bodies read inside the timing: they are streamed)")

        def feed(params: dict):
            # read chunk by chunk and kept by nobody, as a WSGI server sends a streamed body, then
            # closed as it closes it: the whole body held by the test client would be the
            # harness's memory (and its heap holes), not the worker's
            response = self.runner.get("/events", {"ical": 1, **params}, buffered=False)
            response.sent_bytes = sum(len(chunk) for chunk in response.response)
            response.close()
            return response

        feeds = {}
        if self.size <= FULL_ROWS_MAX:
            t0 = time.perf_counter()
            first_feed = feed({})
            result["first_feed_ms"] = (time.perf_counter() - t0) * 1000
            result["feed_events"] = int(first_feed.headers.get("X-TEC-Total", "0"))
            result["feed_bytes"] = first_feed.sent_bytes
            first_feed = None
            say(f"{self.size}: first feed (every VEVENT built) {result['first_feed_ms']:.0f} ms, "
                f"{result['feed_events']} events, {result['feed_bytes'] / 1e6:.1f} MB")
            feeds["feed: every event (ical=1)"] = lambda k: feed({})
        feeds.update({
            "feed: category + 30-day window (ical=1)": lambda k: feed({
                "categories": category_ids[k % len(category_ids)], "start_date": day(k % 365),
                "end_date": day(k % 365 + 30)}),
        })
        for name, request in feeds.items():
            row, _ = self.runner.measure(name, request)
            row["kind"], row["mode"] = "feed", "index"
            self.rows.append(row)

    # ----------------------------------------------------------------------- writes

    def writes(self, floors: dict) -> None:
        """Creates, then updates each followed by a list (timed apart); each write is a commit."""
        say(f"{self.size}: writes (each a commit)")
        content = self.work / "content"
        commits_before = int(run_git(content, "rev-list", "--count", "HEAD").strip())
        self.creates()
        self.updates(floors)
        self.series_writes(floors)
        self.concurrent_writers()
        commits_after = int(run_git(content, "rev-list", "--count", "HEAD").strip())
        self.result["write_commits"] = commits_after - commits_before
        self.result["writes_sent"] = (sum(r["n"] + WARMUP for r in self.rows if r["kind"] == "write")
                                      + (PROFILED_WRITES if self.cfg.get("profile") else 0)
                                      + sum(self.result[f"writers_{n}"]["writes"] for n in WRITERS))
        self.result["rss_end_mb"] = rss_mb()

    def creates(self) -> None:
        runner, meta, today = self.runner, self.meta, self.today
        category_ids, venue_ids = meta["category_ids"], meta["venue_ids"]
        organizer_ids, tag_ids = meta["organizer_ids"], meta["tag_ids"]

        def create(k: int):
            start = datetime.combine(today + timedelta(days=k % 700), datetime.min.time()) + timedelta(hours=18)
            return runner.post("/events", {
                "title": f"Benchmark Jazz Evening {k}", "status": "publish",
                "start_date": start.strftime("%Y-%m-%d %H:%M:%S"),
                "end_date": (start + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S"),
                "timezone": "Europe/Berlin",
                "description": "A benchmark event written through the API. " * 7,
                "categories": [category_ids[k % len(category_ids)]], "tags": [tag_ids[k % len(tag_ids)]],
                "venue": venue_ids[k % len(venue_ids)], "organizer": organizer_ids[k % len(organizer_ids)],
            })

        row, _ = runner.measure("write: create event (POST)", create, expect=201)
        row["kind"], row["mode"] = "write", "index"
        self.rows.append(row)

        # the index is behind by every create now; the next list catches up inline (<= 500 files)
        t0 = time.perf_counter()
        catch_up = runner.get("/events")
        self.result["list_after_creates_ms"] = (time.perf_counter() - t0) * 1000
        self.result["list_after_creates_status"] = catch_up.status_code
        say(f"{self.size}: first list after {row['n'] + WARMUP} creates (index catch-up): "
            f"{self.result['list_after_creates_ms']:.0f} ms")

    def updates(self, floors: dict) -> None:
        runner = self.runner
        list_after: list[float] = []
        update_targets = self.picks[-(self.repeat + WARMUP + 1):]

        def update(k: int):
            target = update_targets[k % len(update_targets)][0]
            return runner.post(f"/events/{target}", {
                "title": f"Updated Event {k}", "description": f"Updated by the benchmark, round {k}. " * 8})

        def list_after_update(k: int):
            # the default list right after each update, timed apart: it brings the index up to that commit
            t1 = time.perf_counter()
            runner.get("/events")
            list_after.append((time.perf_counter() - t1) * 1000)

        row, _ = runner.measure("write: update event (POST to id)", update, expect=200, after=list_after_update)
        row["kind"], row["mode"] = "write", "index"
        self.rows.append(row)
        if self.cfg.get("profile"):
            # where a write's time goes (each profiled request is one more commit)
            self.result.setdefault("profiles", []).append(profile_requests(
                "write: update event (POST to id), without the list after it", PROFILED_WRITES,
                lambda k: runner.post(f"/events/{update_targets[k % len(update_targets)][0]}",
                                      {"title": f"Profiled Update {k}"}), self.size))
        after = {"name": "list: default, right after a write", **summary(list_after[WARMUP:]), "kind": "list",
                 "mode": "index", "errors": [], "floor_of": "list: default, first page"}
        after["floor_p50_ms"] = floors.get("list: default, first page", {}).get("p50_ms")
        self.rows.append(after)
        say(f"  {after['name']}: p50 {after['p50_ms']:.2f} ms, p95 {after['p95_ms']:.2f} ms (n={after['n']})")

    def series_writes(self, floors: dict) -> None:
        """With ``--series``: updates of series files (``recurrence_scope`` all, the default for a
        series id) and edits of one occurrence (``recurrence_scope=this``: an exception in the
        series' file), each a commit against the same git floor; and the default list right after
        each occurrence edit (the generation derived from the edited series' occurrences)."""
        ids = self.meta.get("series_ids") or []
        if not ids:
            return
        runner = self.runner
        count = min(len(ids) // 2, self.repeat + WARMUP + 1)
        updated, edited = ids[:count], ids[-count:]

        def update(k: int):
            return runner.post(f"/events/{updated[k % count]}", {
                "title": f"Updated Series {k}", "description": f"Series updated by the benchmark, round {k}. " * 8})

        row, _ = runner.measure("write: update series file (POST to series id)", update, expect=200)
        row["kind"], row["mode"], row["series_write"] = "write", "index", True
        self.rows.append(row)
        occurrences = []
        for sid in edited:   # an occurrence after the first of each series (not timed)
            listed = runner.get(f"/events/{sid}/occurrences", {"per_page": 3}).get_json()["events"]
            occurrences += [e["id"] for e in listed if e["id"] != sid][:1]
        list_after: list[float] = []

        def edit(k: int):
            return runner.post(f"/events/{occurrences[k % len(occurrences)]}", {
                "title": f"Moved Occurrence {k}", "recurrence_scope": "this"})

        def list_after_edit(k: int):
            t1 = time.perf_counter()
            runner.get("/events")
            list_after.append((time.perf_counter() - t1) * 1000)

        row, _ = runner.measure("write: one occurrence (recurrence_scope=this)", edit, expect=200,
                                after=list_after_edit)
        row["kind"], row["mode"], row["series_write"] = "write", "index", True
        self.rows.append(row)
        after = {"name": "list: default, right after an occurrence edit", **summary(list_after[WARMUP:]),
                 "kind": "list", "mode": "index", "errors": [], "floor_of": "list: default, first page",
                 "floor_p50_ms": floors.get("list: default, first page", {}).get("p50_ms")}
        self.rows.append(after)
        say(f"  {after['name']}: p50 {after['p50_ms']:.2f} ms, p95 {after['p95_ms']:.2f} ms (n={after['n']})")

    def concurrent_writers(self) -> None:
        """writers_N: N threads, each with its own client, updating distinct events back to back;
        writes/s over all of them (each write is a real commit). The runs are cut into
        WRITER_SLICES slices alternated between the writer counts (1, 4, 1, 4, ...): this
        machine's speed moves within seconds, and one 4 s run each gave ratios from 0.6 to 1.8
        for the same code; alternated, every count sees the same speeds."""
        app = self.client.application
        targets = [pick[0] for pick in self.picks]
        auth = self.runner.auth
        say(f"{self.size}: 1 and 4 concurrent writers, {WRITER_SLICES} alternated slices each")
        totals = {count: {"writes": 0, "seconds": 0.0, "failed": []} for count in WRITERS}
        seconds = min(WRITER_SECONDS, self.budget) / WRITER_SLICES
        for part in range(WRITER_SLICES):
            for count in WRITERS:
                done, failed = [0] * count, totals[count]["failed"]
                start = time.perf_counter()

                def writer(j: int) -> None:
                    client, k = app.test_client(), 0
                    while k < WRITER_MIN_WRITES or time.perf_counter() - start < seconds:
                        target = targets[(j + (k * WRITER_SLICES + part) * count) % len(targets)]
                        response = client.post(f"{API}/events/{target}", headers=auth,
                                               json={"title": f"Writer {count}.{j} slice {part} round {k}"})
                        if response.status_code == 200:
                            done[j] += 1
                        elif len(failed) < 3:
                            failed.append(f"{response.status_code}: {response.get_data(as_text=True)[:200]}")
                        k += 1

                threads = [threading.Thread(target=writer, args=(j,)) for j in range(count)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                totals[count]["seconds"] += time.perf_counter() - start
                totals[count]["writes"] += sum(done)
        for count in WRITERS:
            total = totals[count]
            row = {"writers": count, "writes": total["writes"], "seconds": total["seconds"],
                   "writes_per_s": total["writes"] / total["seconds"], "errors": total["failed"],
                   "slices": WRITER_SLICES}
            self.result[f"writers_{count}"] = row
            say(f"  writers_{count}: {row['writes_per_s']:.1f} writes/s ({row['writes']} writes in {row['seconds']:.1f} s)"
                + (f"  ERRORS {total['failed']}" if total["failed"] else ""))

    def git_floor(self) -> dict:
        """The floor of a write: git add + git commit of one event file (modified) in this repository."""
        say(f"{self.size}: floor: git add + git commit of one file in this repository")
        content = self.work / "content"
        # event files in any layout (month folders or the top of events/)
        paths = [p.relative_to(content).as_posix() for p in sorted((content / "events").rglob("*.md"))[:self.repeat + 10]]
        samples = []
        started = time.perf_counter()
        for k in range(self.repeat + WARMUP):
            path = paths[k % len(paths)]
            with open(content / path, "a", encoding="utf-8") as handle:
                handle.write(f"\nEdited by hand, round {k}.\n")
            t0 = time.perf_counter()
            run_git(content, "add", "--", path)
            run_git(content, "commit", "-q", "-m", f"Edit {path}")
            if k >= WARMUP:
                samples.append((time.perf_counter() - t0) * 1000)
            if time.perf_counter() - started > self.budget and len(samples) >= MIN_SAMPLES:
                break
        git_floor = {"name": "floor: git add + git commit (one file)", **summary(samples)}
        say(f"  {git_floor['name']}: p50 {git_floor['p50_ms']:.1f} ms (n={git_floor['n']})")
        return git_floor

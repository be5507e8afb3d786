"""The build phase (its own process): generate the calendar, import it as one commit, measure the
git floor for that commit, load a snapshot, rebuild the search index."""
from __future__ import annotations

import gc
import json
import shutil
import threading
import time
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

from benchmarks.common import ADMIN_LOGIN, ADMIN_PASSWORD, SITE_TZ, peak_rss_mb, rss_mb, run_git, say
from benchmarks.synthetic import build_calendar

PROGRESS_SECONDS = 15   # a long step says how far it is at most this often
# Above this size the initial commit's git floor is not measured (at 1,000,000 events it writes a
# second million files and `git add -A`s them: ~10 min, ~8 GB written, for a figure no goal uses),
# and the generated files are committed as they are (``GitStore.commit_new_files``, the one
# fast-import commit the importer ends in) instead of through the importer: the same files, without
# the 2.3 GB JSON, its parse and the importer's planning and dumping again (~20 min on the shared
# machine at 1,000,000 events, for an import time no goal uses there).
BULK_FLOOR_MAX = 200_000


def _every(seconds: float, size: int, what: str):
    """A progress callback (done, total) that prints at most every ``seconds`` and at the end."""
    last = [time.monotonic()]

    def progress(*args):
        *stage, done, total = args
        if time.monotonic() - last[0] > seconds or done == total:
            last[0] = time.monotonic()
            say(f"{size}: {' '.join([what, *map(str, stage)])} {done}/{total}")
    return progress


def phase_build(cfg: dict) -> dict:
    """Generate, commit as one commit, floor-commit with git, load a snapshot, rebuild the index."""
    from calendar_service.auth.accounts import Accounts

    work = Path(cfg["work"])
    size, today = cfg["size"], date.fromisoformat(cfg["today"])
    result: dict = {"problems": []}

    say(f"{size}: generating the calendar")
    t0 = time.perf_counter()
    direct = size > BULK_FLOOR_MAX and not cfg.get("series")
    files, meta = build_calendar(size, cfg["seed"], today, cfg.get("series", 0), api=not direct)
    result["generate_s"] = time.perf_counter() - t0
    say(f"{size}: {meta['files']} files, {meta['bytes'] / 1e6:.1f} MB in {result['generate_s']:.1f} s")

    if direct:
        store = _commit_generated(work, size, files, result)
        files = None   # ~1 GB at 1,000,000 events
    else:
        store = _import(work, size + meta["series"], meta.pop("api_events"), result)
    if meta["series"]:
        _commit_series(work, files, meta, result)
    if size <= BULK_FLOOR_MAX:
        _floor_bulk_commit(work, files, size, result)
    else:
        say(f"{size}: floor of the initial commit not measured (above {BULK_FLOOR_MAX:,} events)")
    del files
    gc.collect()
    snapshot = _load_snapshot(work, store, size, result)
    _reindex(work, snapshot, size, result)
    store.close()

    Accounts(work / "users.yaml").add(ADMIN_LOGIN, "administrator", email="bench@example.org", name="Bench Admin",
                                      password=ADMIN_PASSWORD)
    result["peak_rss_mb"] = peak_rss_mb()
    result["meta"] = meta
    return result


def _commit_series(work: Path, files: dict, meta: dict, result: dict) -> None:
    """Write the series' files (``recurrence`` included) over their imported copies, one git commit."""
    content = work / "content"
    paths = [p for p, raw in files.items() if p.startswith("events/") and b"\nrecurrence:" in raw]
    for path in paths:
        (content / path).write_bytes(files[path])
    t0 = time.perf_counter()
    run_git(content, "add", "--", *paths)
    run_git(content, "-c", "user.name=Bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m",
            f"{len(paths)} weekly series")
    result["series_commit_s"] = time.perf_counter() - t0
    say(f"{len(paths)} series committed in {result['series_commit_s']:.1f} s")


def _import(work: Path, size: int, items: list, result: dict):
    """Import the API's JSON through the importer as one commit into a fresh repository; returns the store."""
    from calendar_service.cli import importer
    from calendar_service.storage.store import GitStore

    source = work / "import.json"
    # the same text as json.dumps({"events": items}), one event at a time: at 1,000,000 events
    # the whole text is 2.3 GB, held twice (str, then its encoding) on top of the events
    with source.open("w", encoding="utf-8") as out:
        out.write('{"events": [')
        for n, item in enumerate(items):
            out.write((", " if n else "") + json.dumps(item))
        out.write("]}")
    result["import_json_mb"] = source.stat().st_size / 1e6
    del items
    gc.collect()
    store = GitStore(work / "content", "main")
    store.init()
    say(f"{size}: importing {source} ({result['import_json_mb']:.1f} MB) through the importer")
    t0 = time.perf_counter()
    imported = importer.import_events(store, importer.load(source), ZoneInfo(SITE_TZ), author=("Bench", "bench@localhost"),
                                      source="synthetic calendar", progress=_every(PROGRESS_SECONDS, size, "import"))
    result["commit_s"] = time.perf_counter() - t0
    result["import_created"] = imported.created
    result["import_remapped"] = len(imported.remapped)
    if imported.remapped or imported.created["events"] != size:
        raise RuntimeError(f"the import changed ids or lost events: {imported.summary()}")
    commit = store.head()
    result["commit"] = commit
    say(f"{size}: committed {commit[:12]} in {result['commit_s']:.1f} s")
    status = run_git(work / "content", "status", "--porcelain", "--untracked-files=no")
    result["worktree_clean_after_commit"] = status.strip() == ""
    objects = dict(line.split(": ", 1) for line in run_git(work / "content", "count-objects", "-v").splitlines())
    result["loose_objects"] = int(objects.get("count", 0))
    result["loose_kib"] = int(objects.get("size", 0))
    return store


def _commit_generated(work: Path, size: int, files: dict, result: dict):
    """The generated files as one commit of a fresh repository (above BULK_FLOOR_MAX); returns the store."""
    from calendar_service.storage.store import GitStore

    store = GitStore(work / "content", "main")
    store.init()
    say(f"{size}: committing the {len(files):,} generated files as one commit (not through the importer)")
    t0 = time.perf_counter()
    with store.write_lock():
        commit = store.commit_new_files(files, f"Import {size} events from synthetic calendar", ("Bench", "bench@localhost"),
                                        store.head(), progress=_every(PROGRESS_SECONDS, size, "commit writing"))
    result["commit_s"] = time.perf_counter() - t0
    result["commit_direct"] = True
    result["commit"] = commit
    say(f"{size}: committed {commit[:12]} in {result['commit_s']:.1f} s")
    status = run_git(work / "content", "status", "--porcelain", "--untracked-files=no")
    result["worktree_clean_after_commit"] = status.strip() == ""
    result["loose_objects"] = int(dict(line.split(": ", 1) for line in run_git(
        work / "content", "count-objects", "-v").splitlines()).get("count", 0))
    return store


def _floor_bulk_commit(work: Path, files: dict, size: int, result: dict) -> None:
    """The floor of the initial commit: the same files written, `git add -A`, `git commit`."""
    scratch = work / "floor-bulk"
    say(f"{size}: floor: write files + git add -A + git commit in a scratch repository")
    t0 = time.perf_counter()
    run_git(scratch.parent, "init", "-q", "-b", "main", str(scratch))
    for path, content in files.items():
        target = scratch / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    result["floor_bulk_write_s"] = time.perf_counter() - t0
    run_git(scratch, "add", "-A")
    run_git(scratch, "commit", "-q", "-m", "bulk")
    result["floor_bulk_commit_s"] = time.perf_counter() - t0
    say(f"{size}: floor bulk commit {result['floor_bulk_commit_s']:.1f} s")
    shutil.rmtree(scratch, ignore_errors=True)


def _load_snapshot(work: Path, store, size: int, result: dict):
    from calendar_service.http.own_text import OwnTexts
    from calendar_service.storage.catalog import Catalog

    say(f"{size}: loading the snapshot (Catalog.current)")
    t0 = time.perf_counter()
    # with the records cache the service uses (index folder) and the texts the web app's service
    # keeps with it (``http.own_text``): the serve phase is a restart
    catalog = Catalog(store, work / "index" / "records.cache")
    catalog.kept_texts = OwnTexts(ZoneInfo(SITE_TZ))
    snapshot = catalog.current()
    result["snapshot_s"] = time.perf_counter() - t0
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            thread.join()
    result["records_cache_s"] = time.perf_counter() - t0 - result["snapshot_s"]
    result["snapshot_problems"] = len(snapshot.problems)
    result["problem_samples"] = [str(p) for p in snapshot.problems[:5]]
    result["rss_after_snapshot_mb"] = rss_mb()
    say(f"{size}: snapshot in {result['snapshot_s']:.1f} s, {len(snapshot.problems)} problems, "
        f"RSS {result['rss_after_snapshot_mb']:.0f} MB; records cache and kept texts written in "
        f"{result['records_cache_s']:.1f} s more")
    return snapshot


def _reindex(work: Path, snapshot, size: int, result: dict) -> None:
    from calendar_service.index.search import SearchIndex

    say(f"{size}: full reindex (SearchIndex.rebuild_now)")
    index = SearchIndex(work / "index", ZoneInfo(SITE_TZ))
    t0 = time.perf_counter()
    indexed = index.rebuild_now(snapshot, _every(PROGRESS_SECONDS, size, "indexed"))
    result["reindex_s"] = time.perf_counter() - t0
    result["reindex_docs"] = indexed
    result["reindex_docs_per_s"] = indexed / result["reindex_s"] if result["reindex_s"] else None
    result["index_mb"] = sum(f.stat().st_size for f in (work / "index").rglob("*") if f.is_file()) / 1e6
    say(f"{size}: reindexed {indexed} events in {result['reindex_s']:.1f} s "
        f"({result['reindex_docs_per_s']:.0f}/s), index {result['index_mb']:.1f} MB")


def served_calendar(work: Path, size: int, seed: int = 20261123) -> dict:
    """A calendar of ``size`` events to serve over HTTP in ``work`` (content repository, index, a users
    file with the benchmark's administrator), built once: a second call reads what the first kept.
    Returns the ids and words requests need (``category_ids``, ``tag_ids``, ``venue_ids``,
    ``listed``: (id, slug) pairs, ``search_words``)."""
    from calendar_service.auth.accounts import Accounts

    meta_file = work / "meta.json"
    if meta_file.exists():
        return json.loads(meta_file.read_text())
    work.mkdir(parents=True, exist_ok=True)
    say(f"building a calendar of {size} events in {work}")
    files, meta = build_calendar(size, seed, date.today())
    del files
    result: dict = {}
    store = _import(work, size, meta.pop("api_events"), result)
    snapshot = _load_snapshot(work, store, size, result)
    _reindex(work, snapshot, size, result)
    store.close()
    (work / "import.json").unlink(missing_ok=True)
    Accounts(work / "users.yaml").add(ADMIN_LOGIN, "administrator", email="bench@example.org", name="Bench Admin",
                                      password=ADMIN_PASSWORD)
    keep = {k: meta[k] for k in ("category_ids", "tag_ids", "venue_ids", "listed", "search_words")}
    meta_file.write_text(json.dumps(keep))
    return keep

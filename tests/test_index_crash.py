"""A process killed (SIGKILL) while it rebuilds the Whoosh index, then a restart.

A full rebuild writes a new generation beside the one in use and switches to it in one atomic
step (``index/generations.py``). Two tests:

- a real server (gunicorn) is killed while its background rebuild writes, and started again:
  it serves every event, rebuilds, and leaves one generation and no build directory;
- a rebuild process is killed right after each of the filesystem steps of the switch (the
  rename of the build, the new link, the rename of a pre-generation directory, the link's
  rename, the state), from both layouts. Every restart lists every event from an index that
  opens as it is: no full rebuild, and the generation in use is the old or the new one.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from whoosh import index as whoosh_index

from conftest import API
from servers import ROOT, Server

WINDOW = "start_date=2029-01-01&end_date=2031-12-31&per_page=50"


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def add_events(repo, count: int, first: int = 5000) -> set[int]:
    files = {}
    for n in range(count):
        eid = first + n
        meta = {"id": eid, "title": f"Concert {eid} jazz", "slug": f"event-{eid}", "status": "publish", "author": 1,
                "date_utc": "2020-01-01 00:00:00", "modified_utc": "2020-01-01 00:00:00", "timezone": "UTC",
                "start_date": f"2030-{1 + n % 12:02d}-{1 + n % 28:02d} 10:00:00",
                "end_date": f"2030-{1 + n % 12:02d}-{1 + n % 28:02d} 11:00:00", "all_day": False}
        files[f"events/event-{eid}.md"] = "---\n" + yaml.safe_dump(meta, sort_keys=False) + f"---\nText {eid}\n"
    repo.commit_files(files, "Add events by hand")
    return {first + n for n in range(count)}


def index_ids(index_dir: Path) -> set[int]:
    """The ids of the live documents of the index on disk, opened as it is."""
    with whoosh_index.open_dir(str(index_dir / "whoosh")).reader() as reader:
        rids = reader.column_reader("rid")
        return {int(rids[d]) for d in reader.all_doc_ids()}


def state(index_dir: Path) -> dict:
    return json.loads((index_dir / "STATE.json").read_text())


def listed_ids(get) -> set[int]:
    """Every event id of the 2029-2031 list, page by page (``get(path)`` gives the JSON body)."""
    ids: set[int] = set()
    page = 1
    while True:
        body = get(f"/events?{WINDOW}&page={page}")
        ids.update(e["id"] for e in body["events"])
        if page >= body["total_pages"]:
            return ids
        page += 1


def wait_for(condition, timeout: float = 60.0, what: str = "", interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)


def start_in_background(server: Server) -> threading.Thread:
    """Start ``server`` without waiting for it to answer (a test that kills it while it starts)."""
    def start() -> None:
        with contextlib.suppress(RuntimeError):   # "server exited": the test killed it first
            server.start()
    thread = threading.Thread(target=start)
    thread.start()
    return thread


def index_ready(index_dir: Path, head: str) -> bool:
    try:
        current = state(index_dir)
    except (FileNotFoundError, ValueError):
        return False
    from calendar_service.index.schema import SCHEMA_VERSION
    return current.get("commit") == head and current.get("schema") == SCHEMA_VERSION


def test_a_server_killed_while_rebuilding_starts_again_on_a_consistent_index(paths, repo):
    content, index_dir = paths["content_dir"], paths["index_dir"]
    server = Server(paths, "gunicorn", workers=1)
    try:
        server.start()          # an empty calendar: makes the repository
        server.kill()
        expected = add_events(repo, 3000)   # more than a request indexes inline: a background rebuild
        head = git(content, "rev-parse", "HEAD").strip()
        server.start()
        server.request("GET", "/events")
        wait_for(lambda: index_ready(index_dir, head), what="the first index")
        old_generation = os.readlink(index_dir / "whoosh")
        server.kill()
        for attempt in range(3):
            # an index of another schema version (an upgrade): the next start rebuilds it in the
            # background from its first moments (3,000 events take ~0.7 s: the server may answer
            # only after that, so the build directory is watched while the server starts)
            (index_dir / "STATE.json").write_text(json.dumps({**state(index_dir), "schema": 0}))
            starting = start_in_background(server)
            wait_for(lambda: any(p.name.startswith("build-") and any(p.iterdir()) for p in index_dir.iterdir()),
                     what="the rebuild to write its build directory", interval=0.002)
            server.kill()           # SIGKILL, mid-rebuild
            starting.join(30)
            if os.readlink(index_dir / "whoosh") == old_generation:
                break
            # the rebuild finished between the poll that saw it and the kill (a busy machine): again
            old_generation = os.readlink(index_dir / "whoosh")
        assert os.readlink(index_dir / "whoosh") == old_generation   # the old generation is untouched
        assert index_ids(index_dir) == expected
        assert [p.name for p in index_dir.iterdir() if p.name.startswith("build-")]   # what the kill left

        server.start()
        status, body, _ = server.request("GET", f"/events?{WINDOW}")
        assert status == 200 and body["total"] == len(expected)
        assert listed_ids(lambda path: server.request("GET", path)[1]) == expected
        wait_for(lambda: index_ready(index_dir, head), what="the rebuild after the restart")
        generation = os.readlink(index_dir / "whoosh")
        assert generation != old_generation and index_ids(index_dir) == expected
        left = sorted(p.name for p in index_dir.iterdir() if p.is_dir() and not p.is_symlink())
        assert left == [generation], left   # no build directory, no older generation
        assert "Traceback" not in server.stderr(), server.stderr()[-3000:]
    finally:
        server.kill()


# A rebuild process that kills itself right after its ``kill_at``-th filesystem step of the switch.
REBUILD = r"""
import os, signal, sys, threading
from pathlib import Path
from zoneinfo import ZoneInfo
from calendar_service.index.search import SearchIndex
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.store import GitStore

content, index_dir, cache, kill_at = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
snapshot = Catalog(GitStore(content, "main"), cache).current()
for thread in threading.enumerate():
    if thread.name == "calendar-records-cache":
        thread.join()
steps = []

def killing(name, call):
    def step(*args, **kwargs):
        result = call(*args, **kwargs)
        steps.append(name)
        print(name, *[Path(a).name for a in args], flush=True)
        if len(steps) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return step

os.replace = killing("replace", os.replace)
os.symlink = killing("symlink", os.symlink)
SearchIndex(index_dir, ZoneInfo("UTC")).rebuild_now(snapshot)
print("finished", flush=True)
"""


def rebuild_killed_at(content: Path, index_dir: Path, cache: Path, kill_at: int) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", REBUILD, str(content), str(index_dir), str(cache), str(kill_at)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr[-3000:]
    return proc.stdout.split("\n")


def pre_generation_layout(index_dir: Path) -> None:
    """Make ``whoosh`` a real directory, as an index written before generations was."""
    link = index_dir / "whoosh"
    target = index_dir / os.readlink(link)
    link.unlink()
    os.replace(target, link)


@pytest.mark.parametrize("legacy", [False, True], ids=["generations", "pre-generation directory"])
def test_a_rebuild_killed_at_any_step_of_the_switch_leaves_a_usable_index(make_app, paths, repo, tmp_path, legacy):
    from calendar_service.index.search import SearchIndex

    content, index_dir = paths["content_dir"], paths["index_dir"]
    app = make_app()
    expected = add_events(repo, 40)
    client = app.test_client()
    # (a read may commit: the head is read after it)
    wait_for(lambda: client.get(API + "/events").status_code == 200 and index_ready(index_dir, repo.head()), what="the index")
    head = repo.head()
    steps = 5 if legacy else 4   # the build's rename, the link, [the old directory's rename,] the link's rename, the state
    seen = set()
    for kill_at in range(1, steps + 1):
        if legacy and (index_dir / "whoosh").is_symlink():
            pre_generation_layout(index_dir)
        out = rebuild_killed_at(content, index_dir, tmp_path / f"cache-{kill_at}", kill_at)
        assert "finished" not in out, out
        seen.add(" ".join(out[kill_at - 1].split()[:2]))
        # the restart: a new service on the same directories lists every event, from the index as it is
        in_use = os.readlink(index_dir / "whoosh") if (index_dir / "whoosh").is_symlink() else None
        fresh = make_app().test_client()
        assert listed_ids(lambda path: fresh.get(API + path).get_json()) == expected
        wait_for(lambda: (index_dir / "whoosh").exists(), what="the index directory to be put back")
        assert index_ready(index_dir, head) and index_ids(index_dir) == expected
        index = SearchIndex(index_dir, __import__("zoneinfo").ZoneInfo("UTC"))
        with index._writer_lock(True):   # a repair in the background (if any) has finished
            pass
        now = os.readlink(index_dir / "whoosh") if (index_dir / "whoosh").is_symlink() else None
        assert now == in_use, (kill_at, in_use, now)   # no full rebuild: the generation the kill left
        assert index_ids(index_dir) == expected
    assert len(seen) == steps, seen   # the kills hit every step


def test_every_full_rebuild_logs_its_reason(make_app, paths, repo, caplog):
    import logging

    from calendar_service.index.schema import SCHEMA_VERSION

    caplog.set_level(logging.INFO, logger="calendar_service.index.search")
    index_dir = paths["index_dir"]
    make_app()
    add_events(repo, 3)
    (index_dir / "STATE.json").write_text(json.dumps({**state(index_dir), "schema": 0}))
    client = make_app().test_client()
    wait_for(lambda: client.get(API + "/events").status_code == 200 and index_ready(index_dir, repo.head()), what="the index")
    reasons = [r.getMessage() for r in caplog.records if "rebuilding the whole search index" in r.getMessage()]
    assert any(m.endswith(": no index state (a new index)") for m in reasons), reasons
    assert any(m.endswith(f": index schema 0 (this code's is {SCHEMA_VERSION})") for m in reasons), reasons

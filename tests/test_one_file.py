"""One file can only hurt itself: a battery of broken and hostile files, pushed one at a time.

An editor's clone pushes to a bare remote served by ``git daemon``; the service follows it by
the signed webhook. Each case pushes one bad file (a change to an existing event, or a new file),
then checks that every other route answers correctly and quickly, that the affected record is
served as its last good version (or, new, is never served), that the changes feed announces no
deletion, that memory stays bounded, and that the next push (the repair) is followed without a
restart.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from calendar_service import create_app
from conftest import Client, Git
from servers import git_daemon
from test_remote import SECRET, signature

EDITOR = ["-c", "user.name=Editor", "-c", "user.email=editor@example.org"]
TARGET = "events/2027/05/target.md"
TARGET_ID = 10
NEW = "events/2027/05/newcomer.md"

BASE = {
    "venues/hall.yaml": "id: 2\nvenue: Hall\ncity: Berlin\n",
    "organizers/crew.yaml": "id: 3\norganizer: Crew\n",
    "categories/music.yaml": "id: 4\nname: Music\n",
    "tags/free.yaml": "id: 5\nname: Free\n",
    TARGET: ("---\ntitle: Target\nid: 10\nstatus: publish\nstart_date: '2027-05-01 10:00:00'\n"
             "end_date: '2027-05-01 11:00:00'\ntimezone: UTC\nvenue: [hall]\norganizer: [crew]\n"
             "categories: [music]\ntags: [free]\ncost: '5'\n---\nThe target's description.\n"),
    "events/2027/05/other.md": ("---\ntitle: Other\nid: 11\nstatus: publish\nstart_date: '2027-05-02 10:00:00'\n"
                                "end_date: '2027-05-02 11:00:00'\ntimezone: UTC\nvenue: [hall]\n"
                                "categories: [music]\n---\nAnother event.\n"),
    "events/2027/05/weekly.md": ("---\ntitle: Weekly\nid: 12\nstatus: publish\nstart_date: '2027-05-02 10:00:00'\n"
                                 "end_date: '2027-05-02 11:00:00'\ntimezone: UTC\nrecurrence:\n"
                                 "- RRULE:FREQ=WEEKLY;BYDAY=SU;COUNT=5\n---\nEvery Sunday.\n"),
}
OTHER_EVENT_TITLES = {"Other", "Weekly"}


def _front(extra: str, start: str = "'2027-05-01 10:00:00'", id_line: str = "id: 10\n") -> str:
    return (f"---\ntitle: Target broken\n{id_line}status: publish\nstart_date: {start}\n"
            f"end_date: '2027-05-01 11:00:00'\ntimezone: UTC\n{extra}---\nBody.\n")


def _deep_flow(depth: int) -> str:
    return _front("extra: " + "[" * depth + "]" * depth + "\n")


def _deep_block(depth: int) -> str:
    lines = "".join("  " * i + "-\n" for i in range(depth))
    return _front("extra:\n" + lines)


def _many_keys(count: int) -> str:
    return _front("".join(f"key{i}: {i}\n" for i in range(count)))


# (name, content as bytes): each breaks the file (or makes it costly) in its own way
BROKEN: list[tuple[str, bytes]] = [
    ("yaml-syntax", _front("cost: [unclosed\n").encode()),
    ("duplicate-key", _front("cost: '5'\ncost: '7'\n").encode()),
    ("conflict-markers", ("---\n<<<<<<< HEAD\ntitle: Ours\n=======\ntitle: Theirs\n>>>>>>> branch\nid: 10\n"
                          "start_date: '2027-05-01 10:00:00'\nend_date: '2027-05-01 11:00:00'\n---\n").encode()),
    ("recurrence-typo", _front("recurrence:\n- RRULE:FREQ=WEEKLY;BYDAY=SUNDAY\n").encode()),
    ("until-year-9999", _front("recurrence:\n- RRULE:FREQ=DAILY;UNTIL=99991231T235959Z\n").encode()),
    ("count-huge", _front("recurrence:\n- RRULE:FREQ=DAILY;COUNT=99999999999\n").encode()),
    ("interval-huge", _front("recurrence:\n- RRULE:FREQ=YEARLY;INTERVAL=99999999999\n").encode()),
    ("hourly-every-minute", _front("recurrence:\n- RRULE:FREQ=HOURLY;BYMINUTE="
                                   + ",".join(str(m) for m in range(60)) + "\n").encode()),
    ("never-matching", _front("recurrence:\n- RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30\n").encode()),
    ("start-year-9999", _front("", start="'9999-12-31 23:00:00'").encode()),
    ("deep-flow", _deep_flow(10_000).encode()),
    ("deep-block", _deep_block(3_000).encode()),
    ("many-keys", _many_keys(20_000).encode()),
    ("huge-id", _front("", id_line="id: 100000000000000000000000000\n").encode()),
    ("negative-id", _front("", id_line="id: -5\n").encode()),
    ("zero-id", _front("", id_line="id: 0\n").encode()),
    ("float-id", _front("", id_line="id: 1.0e+30\n").encode()),
    ("big-file", _front("", ).encode() + b"x" * 3_000_000 + b"\n"),
    ("long-title", _front("").replace("title: Target broken", "title: " + "y" * 900_000).encode()),
    ("not-utf8", _front("cost: '\xff'\n").encode("latin-1")),
    ("nul-byte", _front("cost: '5'\n").encode() + b"\x00\n"),
    ("not-a-mapping", b"---\n- just\n- a list\n---\n"),
    ("alias-bomb", _front("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n").encode()),
    ("bad-timezone", _front("").replace("timezone: UTC", "timezone: Mars/Olympus").encode()),
    ("end-before-start", _front("").replace("end_date: '2027-05-01 11:00:00'",
                                            "end_date: '2026-05-01 11:00:00'").encode()),
    ("bad-date", _front("", start="'2027-02-30 10:00:00'").encode()),
    ("year-zero-date", _front("", start="'0000-01-01 10:00:00'").encode()),
    ("unclosed-front-matter", b"---\ntitle: Target broken\nid: 10\n"),
]
# the cases whose file is still one the service may serve as the new version (a valid file)
MAY_SERVE_NEW = {"until-year-9999", "count-huge", "interval-huge"}

MEMORY_GROWTH_BOUND = 400 * 1024 * 1024   # bytes of resident memory one bad file may leave behind
SLOW = 5.0   # seconds: no route may take this long after a bad push


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


class Battery:
    """The remote, the editor's clone and the service following it."""

    def __init__(self, root: Path, users_template: Path):
        self.root = root
        self.bare = root / "served" / "remote.git"
        self.bare.parent.mkdir()
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True)
        self.clone = root / "clone"
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.clone)], check=True)
        self.git = Git(self.clone)
        self.git("remote", "add", "origin", str(self.bare))
        for path, text in BASE.items():
            self.write(path, text.encode())
        self.push("the calendar")
        users = root / "users.yaml"
        shutil.copy(users_template, users)
        self.users = users

    def start(self, url: str) -> None:
        config = {"content_dir": self.root / "content", "index_dir": self.root / "index", "users_file": self.users,
                  "seed_sample": False, "site_timezone": "UTC", "git_remote": url, "pull_interval": 0,
                  "webhook_secret": SECRET}
        self.app = create_app(config)
        self.service = self.app.extensions["calendar"]
        self.admin = Client(self.app.test_client(), "administrator")
        self.anon = Client(self.app.test_client(), None)

    def write(self, path: str, data: bytes) -> None:
        file = self.clone / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)

    def remove(self, path: str) -> None:
        (self.clone / path).unlink()

    def push(self, message: str) -> None:
        self.git("add", "-A")
        subprocess.run(["git", "-C", str(self.clone), *EDITOR, "commit", "-q", "--allow-empty", "-m", message],
                       check=True, capture_output=True)
        if Git(self.bare)("branch", "--list", "main").strip():
            # the service commits too (API writes, ids): the editor pulls before pushing
            subprocess.run(["git", "-C", str(self.clone), *EDITOR, "pull", "-q", "--rebase", "origin", "main"],
                           check=True, capture_output=True)
        self.git("push", "-q", "origin", "main")

    def catch_up(self) -> None:
        """Bring the clone to the remote's head (the service commits too: ids, API writes)."""
        subprocess.run(["git", "-C", str(self.clone), "rebase", "--abort"], capture_output=True)
        self.git("fetch", "-q", "origin")
        self.git("reset", "-q", "--hard", "origin/main")

    def restore(self) -> None:
        """Put the calendar back as it was (after a case that failed half-way)."""
        self.catch_up()
        for path, text in BASE.items():
            self.write(path, text.encode())
        if (self.clone / NEW).exists():
            self.remove(NEW)
        if self.git("status", "--porcelain").strip():
            self.push("restore the calendar")
            self.synced()

    def hook(self):
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": "sha256=" + signature(body)}
        return self.app.test_client().post("/calendar/events/v1/hooks/git", data=body, headers=headers)

    def synced(self) -> None:
        """Send the webhook and wait until the service's branch is at the remote's head."""
        started = time.monotonic()
        r = self.hook()
        assert r.status_code < 500, (r.status_code, r.get_data(as_text=True)[:500])
        remote_head = Git(self.bare)("rev-parse", "main").strip()
        deadline = time.monotonic() + 20
        while self.service.branch_head() != remote_head and time.monotonic() < deadline:
            time.sleep(0.05)
        assert time.monotonic() - started < SLOW * 2, "the pull of one bad file took too long"


@pytest.fixture(scope="module")
def battery(tmp_path_factory, users_template):
    root = tmp_path_factory.mktemp("battery")
    made = Battery(root, users_template)
    with git_daemon(made.bare.parent) as url:
        made.start(f"{url}/remote.git")
        made.synced()
        assert made.anon.get(f"/events/{TARGET_ID}").status_code == 200
        yield made
        made.service.close()


@pytest.fixture
def b(battery):
    """The battery, restored after the case whatever happened in it."""
    yield battery
    battery.restore()


def _timed(client: Client, path: str, **kw):
    started = time.monotonic()
    r = client.get(path, **kw)
    elapsed = time.monotonic() - started
    assert r.status_code < 500, (path, r.status_code, r.get_data(as_text=True)[:500])
    assert elapsed < SLOW, f"{path} took {elapsed:.1f} s"
    return r


def _everyone_else_is_fine(b: Battery, token: str) -> None:
    """Every route answers quickly and correctly for the records the bad file does not hold."""
    listed = _timed(b.anon, "/events?start_date=2027-01-01&end_date=2027-12-31&per_page=50")
    assert listed.status_code == 200
    titles = {e["title"] for e in listed.get_json()["events"]}
    assert OTHER_EVENT_TITLES <= titles, titles
    assert _timed(b.anon, "/events/11").get_json()["title"] == "Other"
    assert _timed(b.anon, "/events/12").status_code == 200
    for path, key, title in (("/venues", "venues", "Hall"), ("/organizers", "organizers", "Crew"),
                             ("/categories?hide_empty=0", "categories", "Music"), ("/tags?hide_empty=0", "tags", "Free")):
        r = _timed(b.anon, path)
        assert r.status_code == 200, (path, r.get_json())
        names = {item.get("venue") or item.get("organizer") or item.get("name") for item in r.get_json()[key]}
        assert title in names, (path, names)
    assert _timed(b.anon, "/venues/2").status_code == 200
    assert _timed(b.anon, "/events?search=Other&start_date=2027-01-01").status_code == 200
    assert _timed(b.anon, "/events?categories=music&start_date=2027-01-01").status_code == 200
    ical = _timed(b.anon, "/events?ical=1&start_date=2027-01-01")
    assert ical.status_code == 200 and b"BEGIN:VCALENDAR" in ical.data
    assert _timed(b.anon, "/doc").status_code == 200
    status = _timed(b.admin, "/status")
    assert status.status_code == 200, status.get_json()
    ready = b.app.test_client().get("/readyz")   # outside the namespace
    assert ready.status_code == 200, ready.get_json()
    changes = _timed(b.anon, f"/changes?since={token}")
    assert changes.status_code == 200, changes.get_json()
    deleted = [c for c in changes.get_json()["changes"] if c["action"] == "deleted"]
    assert not deleted, f"nobody deleted anything: {deleted}"
    # a write elsewhere still works
    created = b.admin.post("/events", json={"title": "Written meanwhile", "start_date": "2027-06-01 10:00:00",
                                            "end_date": "2027-06-01 11:00:00"})
    assert created.status_code == 201, created.get_json()
    assert b.admin.delete(f"/events/{created.get_json()['id']}?force=true").status_code == 200


@pytest.mark.parametrize("name,content", BROKEN, ids=[name for name, _ in BROKEN])
def test_a_broken_change_to_an_existing_event_hurts_only_that_event(b, name, content):
    token = b.anon.get("/changes").get_json()["next_token"]
    rss_before = _rss()
    b.write(TARGET, content)
    b.push(f"break the target: {name}")
    b.synced()
    target = _timed(b.anon, f"/events/{TARGET_ID}")
    if name not in MAY_SERVE_NEW:
        assert target.status_code == 200, (name, target.get_json())
        assert target.get_json()["title"] == "Target", "the last good version is served"
        status = b.admin.get("/status").get_data(as_text=True)
        assert TARGET in status, "operators see which file broke"
    _everyone_else_is_fine(b, token)
    assert _rss() - rss_before < MEMORY_GROWTH_BOUND
    # the repair is followed without a restart
    b.write(TARGET, BASE[TARGET].encode())
    b.push(f"repair the target after {name}")
    b.synced()
    repaired = _timed(b.anon, f"/events/{TARGET_ID}")
    assert repaired.status_code == 200 and repaired.get_json()["title"] == "Target"
    _everyone_else_is_fine(b, token)


@pytest.mark.parametrize("name,content", BROKEN, ids=[name for name, _ in BROKEN])
def test_a_broken_new_file_is_never_served_and_hurts_nobody(b, name, content):
    token = b.anon.get("/changes").get_json()["next_token"]
    newcomer = content.replace(b"id: 10\n", b"").replace(b"Target broken", b"Newcomer")
    b.write(NEW, newcomer)
    b.push(f"a new broken file: {name}")
    b.synced()
    listed = _timed(b.anon, "/events?start_date=2027-01-01&end_date=2027-12-31&per_page=50")
    titles = {e["title"] for e in listed.get_json()["events"]}
    if name not in MAY_SERVE_NEW:
        assert "Newcomer" not in titles
        assert NEW in b.admin.get("/status").get_data(as_text=True), "operators see the file that never parsed"
    assert "Target" in titles
    _everyone_else_is_fine(b, token)
    b.catch_up()   # the service may have given the file an id meanwhile
    b.remove(NEW)
    b.push(f"remove the new file after {name}")
    b.synced()
    assert _timed(b.anon, f"/events/{TARGET_ID}").status_code == 200


def test_a_removed_file_is_deleted_once_and_comes_back(b):
    """Deleting a file still deletes its record (the feed says so once), and re-adding it restores it."""
    token = b.anon.get("/changes").get_json()["next_token"]
    b.remove("events/2027/05/other.md")
    b.push("remove other")
    b.synced()
    assert b.anon.get("/events/11").status_code == 404
    changes = b.anon.get(f"/changes?since={token}").get_json()["changes"]
    assert {"type": "events", "id": 11, "action": "deleted"} in changes
    b.write("events/2027/05/other.md", BASE["events/2027/05/other.md"].encode())
    b.push("restore other")
    b.synced()
    assert b.anon.get("/events/11").get_json()["title"] == "Other"

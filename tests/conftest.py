"""Shared fixtures: a fresh content repository (real git) and app per test, and signed-in clients.

Nothing is mocked: each test gets its own git repository in a temporary directory, the real
Flask app built by the factory, and a users file with one account per role.
"""
from __future__ import annotations

import base64
import pickle
import re
import shutil
import subprocess
import threading
import time
import weakref
import zlib
from array import array
from pathlib import Path

import pytest
import yaml
from argon2 import PasswordHasher

from calendar_service import create_app
from calendar_service.auth.accounts import ROLES, Accounts
from postgres import own_postgres, postgres_server, state_url  # noqa: F401 (fixtures: a real PostgreSQL)

API = "/calendar/events/v1"
PASSWORDS = {role: f"{role}-secret-pass" for role in ROLES}


@pytest.fixture(scope="session")
def users_template(tmp_path_factory) -> Path:
    """A users file with one account per role.

    Argon2 is slow by design (~0.1 s a check) and every test builds a new app, so the stored
    hashes are re-made at Argon2's lowest cost: the real accounts code still verifies every
    request, only faster.
    """
    path = tmp_path_factory.mktemp("accounts") / "users.yaml"
    accounts = Accounts(path)
    for role in ROLES:
        accounts.add(role, role, email=f"{role}@example.org", name=role.capitalize(), password=PASSWORDS[role])
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    for entry in raw["users"]:
        for password in entry["passwords"]:
            password["hash"] = cheap.hash(PASSWORDS[entry["login"]])
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """An app built without a state directory gets this test's own: the default (``state`` in
    the working directory) would be shared by every test, and the failed attempts the limits
    count there would carry over from one test to the next."""
    monkeypatch.setenv("CALENDAR_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def paths(tmp_path, users_template) -> dict:
    users = tmp_path / "users.yaml"
    shutil.copy(users_template, users)
    return {"content_dir": tmp_path / "content", "index_dir": tmp_path / "index", "users_file": users,
            "state_dir": tmp_path / "state"}


@pytest.fixture
def make_app(paths):
    """Build an app on this test's repository; extra settings by keyword."""
    def build(**overrides):
        config = {**paths, "seed_sample": False, "site_timezone": "UTC", **overrides}
        app = create_app(config)
        _BUILT.add(app.extensions["calendar"])
        return app
    return build


# the services make_app built (kept while their app lives): their follower threads write to the
# index directory in the background, so ``remove_index`` waits for them first
_BUILT: "weakref.WeakSet" = weakref.WeakSet()
INDEX_THREADS = ("calendar-index", "calendar-records-cache")   # calendar-index-follow, -repair too


def remove_index(index_dir: Path, timeout: float = 60.0) -> None:
    """Delete the index directory (derived data) once no live service of the test writes to it:
    every follower at the branch head, no index or records-cache thread running."""
    for service in list(_BUILT):
        if not service._closed.is_set():
            followed(service, timeout)
    deadline = time.monotonic() + timeout
    while any(t.name.startswith(INDEX_THREADS) for t in threading.enumerate()):
        assert time.monotonic() < deadline, "an index thread kept running"
        time.sleep(0.02)
    shutil.rmtree(index_dir)


def followed(app_or_service, timeout: float = 20.0) -> None:
    """Wait until the follower thread of the service (of an app) has brought everything to the branch
    head (ids given to files that lack them, the search index's generation): what a request finds at
    most a moment after an editor's commit, since requests never do that work themselves."""
    service = getattr(app_or_service, "extensions", {}).get("calendar", app_or_service)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        service.follower.nudge()
        if service.follower.followed == service.store.head() and not service.follower.behind():
            return
        time.sleep(0.02)
    raise AssertionError("the follower did not reach the branch head")


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def repo(paths) -> "Git":
    return Git(paths["content_dir"])


def flat(paths) -> list[str]:
    """``paths`` with the month folders of events left out (``events/2026/11/a.md`` ->
    ``events/a.md``), for tests about which files a write touched rather than where events are filed."""
    return [re.sub(r"(^|\s)events/\d{4}/\d{2}/", r"\1events/", p) for p in paths]


class Git:
    """Runs git in the content repository, for assertions about commits and files."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def __call__(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.root), *args], check=True, capture_output=True,
                              text=True).stdout

    def count(self) -> int:
        out = subprocess.run(["git", "-C", str(self.root), "rev-list", "--count", "HEAD"], capture_output=True, text=True)
        return int(out.stdout.strip()) if out.returncode == 0 else 0

    def head(self) -> str:
        return self("rev-parse", "HEAD").strip()

    def last_author(self) -> str:
        return self("log", "-1", "--format=%an <%ae>").strip()

    def last_message(self) -> str:
        return self("log", "-1", "--format=%B").strip()

    def status(self) -> str:
        return self("status", "--porcelain")

    def files(self) -> list[str]:
        return sorted(self("ls-files").split())

    def path_of(self, slug: str, folder: str = "events") -> str:
        """The path of the one file named ``slug`` in ``folder`` or its month folders (the API
        files a new event under ``events/YYYY/MM/``); fails unless exactly one is there."""
        found = sorted(p.relative_to(self.root).as_posix() for p in (self.root / folder).rglob(f"{slug}.*"))
        assert len(found) == 1, f"{slug} in {folder}: {found}"
        return found[0]

    def path_at(self, slug: str, rev: str = "HEAD", folder: str = "events") -> str:
        """The path of the one file named ``slug`` in ``folder`` (any depth) committed at ``rev``."""
        names = self("ls-tree", "-r", "--name-only", rev, "--", folder).split()
        found = [n for n in names if n.rsplit("/", 1)[-1].rsplit(".", 1)[0] == slug]
        assert len(found) == 1, f"{slug} in {folder} at {rev}: {found}"
        return found[0]

    def commit_files(self, files: dict, message: str = "Edit by hand", allow_empty: bool = False) -> None:
        """Write (text or bytes) or delete (None) several files and commit them as one editor
        commit, outside the API."""
        for path, content in files.items():
            target = self.root / path
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        self("add", "-A")
        self("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q",
             *(["--allow-empty"] if allow_empty else []), "-m", message)

    def commit_file(self, path: str, content: str, message: str = "Edit by hand") -> None:
        """Write and commit a file as an editor would, outside the API."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        self("add", path)
        self("-c", "user.name=Editor", "-c", "user.email=editor@example.org", "commit", "-q", "-m", message)


class Client:
    """A test client that signs in as one role (or nobody)."""

    def __init__(self, flask_client, role: str | None):
        self.c = flask_client
        self.headers = {}
        if role:
            token = base64.b64encode(f"{role}:{PASSWORDS[role]}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"

    def _call(self, method, path, **kwargs):
        headers = {**self.headers, **kwargs.pop("headers", {})}
        url = path if path.startswith("/") and not path.startswith(API + "/") and path != API else path
        if not url.startswith(API) and not url.startswith("/it/"):
            url = API + url
        return getattr(self.c, method)(url, headers=headers, **kwargs)

    def get(self, path, **kw):
        return self._call("get", path, **kw)

    def head(self, path, **kw):
        return self._call("head", path, **kw)

    def post(self, path, **kw):
        return self._call("post", path, **kw)

    def put(self, path, **kw):
        return self._call("put", path, **kw)

    def patch(self, path, **kw):
        return self._call("patch", path, **kw)

    def delete(self, path, **kw):
        return self._call("delete", path, **kw)


@pytest.fixture
def as_role(app):
    """``as_role("editor")`` -> a client signed in with that role; ``as_role(None)`` -> anonymous."""
    flask_client = app.test_client()
    return lambda role: Client(flask_client, role)


@pytest.fixture
def admin(as_role):
    return as_role("administrator")


@pytest.fixture
def anon(as_role):
    return as_role(None)


@pytest.fixture
def factory(admin):
    """Create records through the API (as administrator) and return their JSON."""
    class Factory:
        counter = 0

        def _unique(self, prefix):
            Factory.counter += 1
            return f"{prefix} {Factory.counter}"

        def event(self, **fields):
            body = {"title": self._unique("Event"), "start_date": "tomorrow 10am", "end_date": "tomorrow 12pm", **fields}
            r = admin.post("/events", json=body)
            assert r.status_code == 201, r.get_json()
            return r.get_json()

        def venue(self, **fields):
            r = admin.post("/venues", json={"venue": self._unique("Venue"), **fields})
            assert r.status_code == 201, r.get_json()
            return r.get_json()

        def organizer(self, **fields):
            r = admin.post("/organizers", json={"organizer": self._unique("Organizer"), **fields})
            assert r.status_code == 201, r.get_json()
            return r.get_json()

        def category(self, **fields):
            r = admin.post("/categories", json={"name": self._unique("Category"), **fields})
            assert r.status_code == 201, r.get_json()
            return r.get_json()

        def tag(self, **fields):
            r = admin.post("/tags", json={"name": self._unique("Tag"), **fields})
            assert r.status_code == 201, r.get_json()
            return r.get_json()

    return Factory()


@pytest.fixture
def world(factory):
    """Two records of each post type (one for the id route, one for the slug route) and one of each term."""
    return {
        "events": [factory.event(), factory.event()],
        "venues": [factory.venue(), factory.venue()],
        "organizers": [factory.organizer(), factory.organizer()],
        "categories": [factory.category()],
        "tags": [factory.tag()],
    }


def cached_entry(entries: dict, path: str) -> tuple:
    """(blob, packed data or None, problems, id, slug, record blob) of ``path`` in the records
    cache's ``entries`` (as ``pickle.loads`` of its file gives them: the files by column)."""
    files = entries["files"]
    index = files["paths"].index(path)
    ends = array("Q", files["ends"])
    data = files["packed"][ends[index - 1] if index else 0:ends[index]] if files["present"][index] else None
    return (files["blobs"][index], data, files["problems"].get(index, ()), files["ids"][index], files["slugs"][index],
            files["record_blobs"].get(index))


def cached_paths(entries: dict) -> list:
    return list(entries["files"]["paths"])


def put_cached_entry(entries: dict, path: str, entry: tuple) -> None:
    """Write ``entry`` (as ``cached_entry`` gives it) for ``path`` in ``entries``."""
    files = entries["files"]
    count = len(files["paths"])
    rows = [entry if p == path else cached_entry(entries, p) for p in files["paths"]]
    blob, data, problems, rid, slug, record_blob = zip(*rows) if rows else ((),) * 6
    files["blobs"], files["ids"], files["slugs"] = list(blob), list(rid), list(slug)
    files["present"] = bytes(d is not None for d in data)
    files["packed"] = b"".join(d for d in data if d is not None)
    ends, total = array("Q"), 0
    for d in data:
        total += len(d) if d is not None else 0
        ends.append(total)
    files["ends"] = ends.tobytes()
    files["problems"] = {i: p for i, p in enumerate(problems) if p}
    files["record_blobs"] = {i: b for i, b in enumerate(record_blob) if b is not None}
    assert len(files["paths"]) == count


def cached_data(entries: dict, path: str) -> dict:
    """The data the records cache (as ``pickle.loads`` of its file gives it) holds for ``path``:
    each record is a pickle packed by zlib against the cache's dictionary."""
    return pickle.loads(zlib.decompressobj(zdict=entries["dictionary"]).decompress(cached_entry(entries, path)[1]))


def pack_cached(entries: dict, raw: bytes) -> bytes:
    """``raw`` packed as the records cache packs a record's pickle."""
    deflate = zlib.compressobj(6, zdict=entries["dictionary"])
    return deflate.compress(raw) + deflate.flush()


def set_cached(entries: dict, path: str, **changes) -> None:
    """Change values of ``path``'s record in the records cache's ``entries`` (to tell, after a
    start, a value taken from the cache from one read from git)."""
    entry = cached_entry(entries, path)
    data = {**cached_data(entries, path), **changes}
    put_cached_entry(entries, path, (entry[0], pack_cached(entries, pickle.dumps(data)), *entry[2:]))

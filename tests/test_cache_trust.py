"""What a start takes from the records cache, and what it must not.

The records cache (``CALENDAR_INDEX_DIR/records.cache``) is derived data. A record is made from
one of its entries only when the entry is of the file git has now (same blob), the cache was
written by this code (same version) and the file is one the cache writer wrote (a plain-data
pickle of the expected shapes). Anything else is ignored, with a log line when the file is
broken or tampered with, and the start reads the files from git: the answers are those of a
start without any cache. A record's data is packed (a zlib stream against the cache's
dictionary) and read when first used: data that does not read back as the record its entry
names is logged and that file is read from git. Each test first checks that a marker put only in the cache does show
when the cache is usable, so that it can tell a used entry from an ignored one.
"""
from __future__ import annotations

import logging
import os
import pickle
import threading

import pytest

from conftest import Client, cached_data, cached_entry, cached_paths, pack_cached, put_cached_entry, remove_index, set_cached

EVENTS = "/events?per_page=50&status=publish,draft,private"
MARK = "Only in the cache"


def _wait_for_cache() -> None:
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            thread.join(30)


def _titles(app) -> dict:
    r = Client(app.test_client(), "administrator").get(EVENTS)
    assert r.status_code == 200, r.get_json()
    return {e["id"]: e["title"] for e in r.get_json()["events"]}


def _answers(app) -> dict:
    client = Client(app.test_client(), "administrator")
    out = {}
    for route in (EVENTS, "/venues?per_page=50", "/categories?per_page=50"):
        r = client.get(route)
        assert r.status_code == 200, (route, r.get_json())
        out[route] = r.get_json()
    return out


@pytest.fixture
def cached(paths, make_app, factory, small_cache):
    """A repository of a few events (a category and a venue named), its records cache written
    for the head, and what a start without any cache answers."""
    category = factory.category()
    venue = factory.venue()
    ids = [factory.event(categories=[category["id"]], venue=venue["id"])["id"] for _ in range(3)]
    remove_index(paths["index_dir"])
    fresh = _answers(make_app())
    _wait_for_cache()
    cache = paths["index_dir"] / "records.cache"
    entries = pickle.loads(cache.read_bytes())
    by_id = {entry[3]: path for path, entry in ((path, cached_entry(entries, path)) for path in cached_paths(entries))
             if path.startswith("events/") and entry[1] is not None}
    return {"cache": cache, "entries": entries, "fresh": fresh, "ids": ids, "path_of": by_id}


@pytest.fixture
def small_cache(monkeypatch):
    from calendar_service.storage import catalog
    monkeypatch.setattr(catalog, "CACHE_MIN_FILES", 1)
    return catalog


def _write(cache, content) -> None:
    """Put ``content`` (bytes, or what to pickle) in the cache file, once no start is still writing it."""
    _wait_for_cache()
    cache.write_bytes(content if isinstance(content, bytes) else pickle.dumps(content))


def _with_data(entries: dict, path: str, data) -> None:
    """Replace the data of ``path``'s entry (packed as the cache writer packs it)."""
    entry = cached_entry(entries, path)
    put_cached_entry(entries, path, (entry[0], pack_cached(entries, pickle.dumps(data)), *entry[2:]))


def _mark(entries: dict, path: str) -> None:
    set_cached(entries, path, title=MARK)


def test_an_entry_an_editor_changed_after_the_caches_commit_is_read_from_git(cached, make_app, repo):
    edited, kept = (cached["path_of"][i] for i in cached["ids"][:2])
    entries = cached["entries"]
    _mark(entries, edited)
    _mark(entries, kept)
    _write(cached["cache"], entries)
    repo.commit_file(edited, repo("show", f"HEAD:{edited}").replace("title: ", "title: Edited by hand ", 1))
    titles = _titles(make_app())
    edited_id, kept_id = cached["ids"][:2]
    assert titles[kept_id] == MARK             # the cache is used: its commit is an ancestor of the head
    assert titles[edited_id].startswith("Edited by hand ")   # but not for the file changed since

    # a cache whose commit this repository does not have (another repository's, or history
    # rewritten): entries are taken by path and blob, so the edited file is still read from git
    entries["commit"] = "0" * 40
    _write(cached["cache"], entries)
    titles = _titles(make_app())
    assert titles[kept_id] == MARK
    assert titles[edited_id].startswith("Edited by hand ")


def test_a_cache_of_another_blob_at_the_same_path_is_not_used(cached, make_app):
    entries = cached["entries"]
    path = cached["path_of"][cached["ids"][0]]
    _mark(entries, path)
    entries["commit"] = "0" * 40
    blob, *rest = cached_entry(entries, path)
    put_cached_entry(entries, path, ("1" * 40, *rest))   # a file of that name, another content
    _write(cached["cache"], entries)
    assert MARK not in _titles(make_app()).values()
    assert _answers(make_app()) == cached["fresh"]


def test_a_cache_written_by_other_code_is_ignored(cached, make_app):
    entries = cached["entries"]
    _mark(entries, cached["path_of"][cached["ids"][0]])
    _write(cached["cache"], entries)
    assert MARK in _titles(make_app()).values()     # the same version: used as it is
    entries["version"] = "0" * 40
    _write(cached["cache"], entries)
    assert _answers(make_app()) == cached["fresh"]


class _Planted:
    """Pickles as a call of ``os.mkdir``: what a hostile cache file could make an unpickler run."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return os.mkdir, (str(self.target),)


def _broken_shapes(entries: dict, path: str, target):
    """(what was done, the cache's content with it done): right version, wrong shapes."""
    def copy():
        return pickle.loads(pickle.dumps(entries))

    def data_as(value):
        out = copy()
        _with_data(out, path, value(cached_data(out, path)))
        return out

    def entry_as(position, value):
        out = copy()
        entry = list(cached_entry(out, path))
        entry[position] = value
        put_cached_entry(out, path, tuple(entry))
        return out

    def column_as(name, value):
        out = copy()
        out["files"][name] = value(out["files"][name])
        return out

    yield "data not a mapping", data_as(lambda data: list(data.items()))
    yield "data of another id", data_as(lambda data: {**data, "id": str(data["id"])})
    yield "data without a slug", data_as(lambda data: {k: v for k, v in data.items() if k != "slug"})
    yield "an id that is not an integer", entry_as(3, str(cached_entry(entries, path)[3]))
    yield "a slug that is not a string", entry_as(4, None)
    yield "data that is not zlib", entry_as(1, b"not a zlib stream")
    yield "data that is not a pickle", entry_as(1, pack_cached(entries, b"not a pickle"))
    yield "data that inflates beyond a record's size", entry_as(1, pack_cached(entries, b" " * (17 << 20)))
    yield "data naming a class outside the allow-list", entry_as(1, pack_cached(entries, pickle.dumps(_Planted(target))))
    yield "packed data that is text", column_as("packed", lambda packed: packed.decode("latin-1"))
    yield "packed data cut short", column_as("packed", lambda packed: packed[:-1])
    yield "a record outside the folders of records", column_as("paths", lambda paths: [
        "zz/" + p if p == path else p for p in paths])
    yield "a dictionary that is not bytes", {**copy(), "dictionary": "text"}
    yield "a column shorter than the others", column_as("slugs", lambda slugs: slugs[:-1])
    yield "files not in path order", column_as("paths", lambda paths: paths[::-1])
    problems = copy()
    blob, data, _, *rest = cached_entry(problems, path)
    put_cached_entry(problems, path, (blob, data, (("one", "part"),), *rest))
    yield "a problem of two parts", problems
    refs = copy()
    refs["derived"]["refs"] = {key: sorted(ids) for key, ids in refs["derived"]["refs"].items()}
    yield "reference sets as lists", refs
    dates = copy()
    dates["dates"]["changed"] = dates["dates"]["changed"][:-8]
    yield "a file dates column shorter than the files'", dates
    dates = copy()
    dates["dates"]["once"] = b"\x02" + dates["dates"]["once"][1:]
    yield "file dates of other values", dates
    dates = copy()
    dates["dates"]["emails"] = [1, *dates["dates"]["emails"][1:]]
    yield "an e-mail that is not text", dates
    dates = copy()
    dates["dates"]["email_of"] = b"\xff\xff\xff\x7f" + dates["dates"]["email_of"][4:]
    yield "an e-mail past the e-mails", dates
    dates = copy()
    dates["dates"]["extra"] = {path: (1, 2, "a@example.org", True)}
    yield "file dates given twice", dates
    dates = copy()
    dates["dates"]["extra"] = {"events/elsewhere.md": ("1", 2, "a@example.org", True)}
    yield "file dates of other types", dates
    dates = copy()
    dates["dates"] = {path: (1, 2, "a@example.org", True)}
    yield "file dates by path (an older layout)", dates
    claims = copy()
    claims["claims"] = {"events/broken.md": "12"}
    yield "a claimed id that is not an integer", claims


def test_a_tampered_or_broken_cache_is_ignored_with_a_log_line(cached, make_app, tmp_path, caplog):
    cache, entries, fresh = cached["cache"], cached["entries"], cached["fresh"]
    path = cached["path_of"][cached["ids"][0]]
    _mark(entries, path)
    _write(cache, entries)
    assert MARK in _titles(make_app()).values()     # the untampered file is used

    planted = tmp_path / "planted"
    cases = [("a class outside the allow-list", pickle.dumps({**entries, "claims": _Planted(planted)})),
             ("cut short", pickle.dumps(entries)[:-1000]),
             ("not a pickle", b"\x00" * 64)]
    cases += [(what, pickle.dumps(content)) for what, content in _broken_shapes(entries, path, planted)]
    for what, raw in cases:
        _write(cache, raw)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="calendar_service.storage.catalog"):
            answers = _answers(make_app())
        assert answers == fresh, what
        assert any("records cache" in r.getMessage() for r in caplog.records), what
        assert not planted.exists(), what


def test_a_protected_venue_stays_blanked_in_events_after_a_start_from_the_cache(cached, make_app, repo, paths):
    """The cache keeps whether any venue or organizer is protected (a start would otherwise make
    every one of their dicts to find out): a venue protected after the cache's commit, or
    protected in the cache's own commit, is still blanked inside the events that name it."""
    venue_path = next(path for path in cached_paths(cached["entries"]) if path.startswith("venues/"))
    repo.commit_file(venue_path, repo("show", f"HEAD:{venue_path}") + "password: venue-pass\n", "Protect the venue")

    def venues_seen_by_anonymous(app) -> list:
        # each event is read with the venue's password first: what is kept of an answer for one
        # caller must not be given to another when a venue it embeds is protected
        client, seen = app.test_client(), []
        for rid in cached["ids"]:
            unlocked = client.get(f"/calendar/events/v1/events/{rid}?password=venue-pass").get_json()
            assert unlocked["venue"]["venue"], unlocked
            r = client.get(f"/calendar/events/v1/events/{rid}")
            assert r.status_code == 200, r.get_json()
            seen.append(r.get_json()["venue"])
        return seen

    # the cache is of the commit before: caught up from there, the changed venue read again
    seen = venues_seen_by_anonymous(make_app())
    assert len(seen) == 3 and all(venue["venue"] == [] for venue in seen), seen
    # a cache of this very commit (written by a start without one) says so itself
    _wait_for_cache()
    cached["cache"].unlink()
    make_app()
    _wait_for_cache()
    assert pickle.loads(cached["cache"].read_bytes())["derived"]["protected_links"] is True
    seen = venues_seen_by_anonymous(make_app())
    assert len(seen) == 3 and all(venue["venue"] == [] for venue in seen), seen
    # written while nothing was protected, the cache says no: then nothing is blanked
    entries = cached["entries"]
    assert entries["derived"]["protected_links"] is False

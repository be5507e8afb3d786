"""The serving master loads the records once and its workers start from them
(``http.serving.on_starting``, ``service.build.preload``, ``Catalog.adopt``)."""
from __future__ import annotations

import re

import pytest
from whoosh import index as whoosh_index

from calendar_service.config import Settings
from calendar_service.http import serving
from calendar_service.index.view import whoosh_generation
from calendar_service.service import build
from conftest import PASSWORDS, followed
from servers import Server

ADMIN = ("administrator", PASSWORDS["administrator"])
EDITOR_EVENT = """---
title: Added by an editor
start_date: '2030-03-04 10:00:00'
end_date: '2030-03-04 11:00:00'
status: publish
---
Written in git before the workers started.
"""


@pytest.fixture
def preloaded(monkeypatch):
    """This process's preloaded catalogs, emptied for the test."""
    monkeypatch.setattr(build, "_preloaded", {})
    return build._preloaded


def settings_of(paths) -> Settings:
    return Settings.from_env(**paths, seed_sample=False, site_timezone="UTC")


def test_a_worker_starts_from_the_masters_records_and_follows_the_branch(make_app, factory, repo, paths, preloaded):
    made = [factory.event(title=f"Loaded {n}") for n in range(3)]
    files = build.preload(settings_of(paths))
    assert files == len(repo.files())
    loaded, base = preloaded[paths["content_dir"].resolve()]
    at_preload = loaded.current_commit
    assert base is not None and base.commit == at_preload
    assert at_preload == repo.head()
    # an editor's commit lands between the master's load and the worker's start
    (paths["content_dir"] / "events" / "added-by-an-editor.md").write_text(EDITOR_EVENT, encoding="utf-8")
    repo("add", "-A")
    repo("commit", "-q", "-m", "An editor's event")

    app = make_app()
    service = app.extensions["calendar"]
    # the worker's catalog took the master's snapshot and points its objects at its own store
    assert loaded.store is service.store
    # (the editor's file has no id: a follower commits one, so compare once the followers are there)
    followed(app)
    assert service.catalog.current().commit == repo.head() != at_preload
    client = app.test_client()
    titles = {e["title"] for e in client.get("/calendar/events/v1/events?start_date=2000-01-01&end_date=2031-01-01&per_page=50").get_json()["events"]}
    assert titles >= {e["title"] for e in made} | {"Added by an editor"}
    # the master's index base was of the commit before the editor's: the worker read its own
    assert service.index._view.base is not base
    # a write from the worker is one commit on the branch, as always
    before = repo.count()
    created = factory.event(title="After the start")
    assert repo.count() == before + 1
    assert client.get(f"/calendar/events/v1/events/{created['id']}").get_json()["title"] == "After the start"


def test_a_catalog_that_loaded_already_does_not_adopt(make_app, factory, paths, preloaded):
    factory.event(title="One")
    build.preload(settings_of(paths))
    loaded, _base = preloaded[paths["content_dir"].resolve()]
    app = make_app()
    service = app.extensions["calendar"]
    assert service.catalog.adopt(loaded) is False   # it adopted at its start; never twice


def test_a_worker_serves_the_index_base_the_master_read(make_app, factory, paths, preloaded):
    made = {factory.event(title=f"Indexed {n}")["id"] for n in range(3)}
    build.preload(settings_of(paths))
    loaded, base = preloaded[paths["content_dir"].resolve()]
    assert base is not None and base.commit == loaded.current_commit
    with pytest.raises(Exception):
        base.searcher.doc_count()   # the master's handles are closed: a fork must not share them
    app = make_app()
    service = app.extensions["calendar"]
    assert service.index._view.base is base   # the columns the master read, not a copy
    listed = app.test_client().get("/calendar/events/v1/events?start_date=2000-01-01&end_date=2031-01-01&search=Indexed")
    assert {e["id"] for e in listed.get_json()["events"]} == made   # searched through the worker's own handles


def test_an_index_base_of_another_whoosh_generation_is_not_served(factory, paths, preloaded):
    factory.event(title="Before the rebuild")
    build.preload(settings_of(paths))
    loaded, base = preloaded[paths["content_dir"].resolve()]
    # the index is rebuilt between the master's read and the worker's start: its docnums may differ
    index = build._index(settings_of(paths))
    index.rebuild_now(loaded.current())
    ix = whoosh_index.open_dir(str(index.whoosh_dir))
    assert whoosh_generation(ix) != base.source
    assert base.reopen(ix) is False


def test_without_a_repository_nothing_is_preloaded(tmp_path, paths, preloaded):
    assert build.preload(settings_of({**paths, "content_dir": tmp_path / "nowhere"})) == 0
    assert preloaded == {}
    assert not (tmp_path / "nowhere").exists()   # the first worker creates it, never the master


def test_on_starting_loads_and_freezes(make_app, factory, paths, preloaded, monkeypatch):
    factory.event(title="Frozen")
    for name, value in {"content_dir": paths["content_dir"], "index_dir": paths["index_dir"],
                        "users_file": paths["users_file"], "seed_sample": "false"}.items():
        monkeypatch.setenv(f"CALENDAR_{name.upper()}", str(value))
    import gc
    try:
        assert serving.on_starting() >= 1
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_gunicorn_workers_serve_what_the_master_loaded(make_app, factory, paths):
    made = {factory.event(title=f"Served {n}")["id"] for n in range(4)}
    server = Server(paths, "gunicorn", workers=2, log_level="info")
    try:
        server.start()
        assert re.search(r"loaded \d+ files for the workers", server.stderr())
        status, created, _ = server.request("POST", "/events", {"title": "Through a worker", "start_date": "2030-05-01 10:00",
                                                                "end_date": "2030-05-01 11:00"}, ADMIN)
        assert status == 201
        # every connection (spread over both workers) lists the loaded events and the new one
        for _ in range(8):
            status, listed, _ = server.request("GET", "/events?start_date=2000-01-01&end_date=2031-01-01&per_page=50")
            assert status == 200
            assert {e["id"] for e in listed["events"]} >= made | {created["id"]}
    finally:
        server.kill()


def test_a_repository_the_master_cannot_read_leaves_the_loading_to_the_workers(factory, repo, paths, preloaded):
    factory.event(title="Kept")
    branch = settings_of(paths).branch   # the branch names a commit git does not have
    (paths["content_dir"] / ".git" / "refs" / "heads" / branch).write_text("1" * 40 + "\n", encoding="utf-8")
    assert build.preload(settings_of(paths)) == 0   # logged, never raised: gunicorn starts all the same
    assert preloaded == {}


def test_the_master_reads_the_records_with_the_operators_recurrence_limits(factory, paths, preloaded, monkeypatch):
    from calendar_service.domain.recurrence import limits
    from calendar_service.storage.records_cache import cache_version
    monkeypatch.setattr(limits, "_max_occurrences", limits.max_occurrences())   # restored after the test
    monkeypatch.setattr(limits, "_horizon_months", limits.horizon_months())
    factory.event(title="Limited")
    settings = Settings.from_env(**paths, seed_sample=False, site_timezone="UTC", max_occurrences=321,
                                 recurrence_horizon=7)
    build.preload(settings)
    # the limits the workers read with: the records cache the master writes and reads is theirs
    assert (limits.max_occurrences(), limits.horizon_months()) == (321, 7)
    assert "max_occurrences=321" in cache_version() and "horizon=7" in cache_version()

"""The index's uses of Whoosh's internals (``index/whoosh_internals.py``): installed when the index
is opened, only on the Whoosh they were written for, and the lists answer the same without them."""
from __future__ import annotations

import logging
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from whoosh import index as whoosh_index
from whoosh import util, writing
from whoosh.codec import whoosh3
from whoosh.filedb import compound, structfile

from calendar_service.index import building, whoosh_internals
from calendar_service.index.schema import make_schema
from calendar_service.index.whoosh_internals import FEATURES, NAMING_MODULES, POSTING_BLOCKS, SegmentPart
from calendar_service.index.writer import open_rebuild_writer, open_writer
from conftest import Client, Git
from tests.test_event_filters import Content, at, settle, utc_today
from tests.test_index_whoosh import _index_content, _random_docs

ROOT = Path(__file__).resolve().parents[1]
DAY = utc_today()
JAZZ = 1                      # the first category's id
KEPT = "events/event-1002.md"   # an event the edits leave as it is
WORDS = ["river", "jazz", "market", "lantern", "orchard", "harbour", "meadow"]
QUERIES = [{}, {"per_page": 50}, {"per_page": 50, "page": 4}, {"categories": "jazz", "per_page": 50},
           {"categories": "folk"}, {"tags": "outdoor", "per_page": 50}, {"featured": "true"}, {"search": "night"},
           {"search": "lant"}, {"search": "river night", "per_page": 50},
           {"start_date": at(DAY + timedelta(days=10)), "end_date": at(DAY + timedelta(days=40)), "per_page": 50},
           {"starts_before": at(DAY + timedelta(days=30)), "ends_after": at(DAY + timedelta(days=20)),
            "strict_dates": "true", "per_page": 50}]


@pytest.fixture
def fresh_whoosh():
    """Whoosh as it is and no decision made, as in a new process; installed again afterwards
    (what opening an index leaves)."""
    whoosh_internals.uninstall()
    yield
    whoosh_internals.uninstall()
    whoosh_internals.install()


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == whoosh_internals.__name__ and r.levelno == logging.WARNING]


def _calendar(repo) -> Content:
    """300 events: more of one category than a Whoosh block holds, words, tags, flags, drafts."""
    c = Content(repo)
    jazz, folk, outdoor = c.category("Jazz"), c.category("Folk"), c.tag("Outdoor")
    assert jazz == JAZZ
    for n in range(300):
        first = DAY + timedelta(days=n % 90 - 5)
        c.event(at(first, 8 + n % 12), at(first + timedelta(days=n % 3), 21), title=f"{WORDS[n % 7]} night {n}",
                description=f"{WORDS[(n * 3) % 7]} and {WORDS[(n + 2) % 7]}", categories=[jazz] if n % 3 else [folk],
                tags=[outdoor] if n % 5 == 0 else [], featured=n % 7 == 0, status="draft" if n % 11 == 0 else "publish")
    c.commit()
    return c


def _edit(c: Content) -> None:
    """Changes the index on disk takes as deletions in its segment: events moved, retitled, removed."""
    for eid in list(c.events)[::15]:
        meta = c.events[eid]
        c.event(meta["start_date"], meta["end_date"], title=f"moved lantern night {eid}", id=eid, slug=meta["slug"],
                featured=True)
    for eid in list(c.events)[7::40]:
        c.remove(eid)
    c.commit("Edit by hand")


def _answers(app, repo) -> dict:
    """Ids and totals of every query of QUERIES, for a visitor and an administrator, from the index."""
    svc = app.extensions["calendar"]
    out = {}
    for role in (None, "administrator"):
        client = Client(app.test_client(), role)
        settle(svc, client, repo)
        for n, params in enumerate(QUERIES + [{"status": "draft", "per_page": 50}] * (role is not None)):
            r = client.get("/events", query_string=params)
            assert r.status_code == 200, r.get_json()
            assert svc.index._view is not None and svc.index._view.commit == repo.head()   # from the index
            body = r.get_json()
            out[(role, n)] = ([e["id"] for e in body["events"]], body["total"])
    assert sum(total for _ids, total in out.values()) > 1000   # the queries do select events
    return out


def _wait_for_disk(app, repo) -> None:
    index = app.extensions["calendar"].index
    deadline = time.monotonic() + 20
    while (index.state() or {}).get("commit") != repo.head():
        assert time.monotonic() < deadline, "the index on disk did not follow the branch"
        time.sleep(0.02)


def _lists(make_app, content_dir: Path, index_dir: Path) -> list[dict]:
    """The answers of a calendar's lists, from an index a rebuild wrote (the app starts on the
    calendar), after changes it applied, and read again from the disk by a new app."""
    make_app(content_dir=content_dir, index_dir=index_dir.with_name(index_dir.name + "-empty"))   # makes the repository
    repo = Git(content_dir)
    c = _calendar(repo)
    app = make_app(content_dir=content_dir, index_dir=index_dir)
    answers = [_answers(app, repo)]
    _edit(c)
    answers.append(_answers(app, repo))
    _wait_for_disk(app, repo)
    answers.append(_answers(make_app(content_dir=content_dir, index_dir=index_dir), repo))
    return answers


def _leaves(index_dir: Path):
    ix = whoosh_index.open_dir(str(index_dir / "whoosh"))
    reader = ix.reader()
    return ix, reader, [leaf for leaf, _offset in reader.leaf_readers()]


def _segment_part(ix, leaf):
    """A part of ``leaf``'s compound segment file, opened as Whoosh's segment readers open it."""
    storage = leaf.segment().open_compound_file(ix.storage)
    return storage.open_file(storage.list()[0])


def test_the_pinned_whoosh_is_the_one_the_internals_were_written_for():
    pin = re.search(r"^Whoosh==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert whoosh_internals.WRITTEN_FOR == pin.group(1) == whoosh_internals.installed_version()
    assert whoosh_internals.problems(whoosh_internals.WRITTEN_FOR) == {}


def test_opening_the_index_installs_every_use_once(fresh_whoosh, make_app, tmp_path, caplog):
    assert compound.BufferFile is structfile.BufferFile and not any(map(whoosh_internals.in_use, FEATURES))
    with caplog.at_level(logging.WARNING):
        make_app(content_dir=tmp_path / "calendar", index_dir=tmp_path / "first")
        assert all(whoosh_internals.in_use(feature) for feature in FEATURES)
        assert compound.BufferFile is SegmentPart
        assert all(module.random_name is whoosh_internals.file_name for module in NAMING_MODULES)
        whoosh_internals.uninstall()
        _lists(make_app, tmp_path / "calendar", tmp_path / "index")
        assert whoosh_internals.install() is True   # a second install: nothing more
        assert whoosh_internals.install(version="2.7.3") is True   # decided already
    assert _warnings(caplog) == []
    assert compound.BufferFile is SegmentPart and all(map(whoosh_internals.in_use, FEATURES))
    # the uses apply to the index the service wrote: its segment parts are read in place, its
    # numeric columns, deletions and block postings by the faster paths
    ix, reader, leaves = _leaves(tmp_path / "index")
    with reader:
        assert all(type(_segment_part(ix, leaf)) is SegmentPart for leaf in leaves)
        assert any(leaf.has_deletions() for leaf in leaves)
        for leaf in leaves:
            count = leaf.doc_count_all()
            assert whoosh_internals.column_values(leaf.column_reader("start", translate=False), count) == \
                [leaf.column_reader("start")[d] for d in range(count)]
            if leaf.has_deletions():
                assert whoosh_internals.deleted_docs(leaf) == set(range(count)) - set(leaf.all_doc_ids())
        big = max(leaves, key=lambda leaf: leaf.doc_count_all())
        blocks = whoosh_internals.posting_blocks(big.postings("categories", f"#{JAZZ}"))
        assert blocks is not None and len([d for block in blocks for d in block]) > 128
        # the rebuild kept few-posting terms inline in their term table rows (the bulk writer's way)
        assert big.term_info("path", KEPT).is_inlined()


def test_on_another_whoosh_nothing_is_installed_and_lists_answer_the_same(fresh_whoosh, make_app, tmp_path, caplog):
    expected = _lists(make_app, tmp_path / "calendar", tmp_path / "index")
    assert whoosh_internals.install() is True and compound.BufferFile is SegmentPart
    whoosh_internals.uninstall()
    with caplog.at_level(logging.WARNING):
        assert whoosh_internals.install(version="2.7.3") is False
        assert whoosh_internals.install() is False   # decided once: a second install is a no-op
        assert not any(map(whoosh_internals.in_use, FEATURES))
        assert compound.BufferFile is structfile.BufferFile
        assert all(module.random_name is util.random_name for module in NAMING_MODULES)
        assert _lists(make_app, tmp_path / "other", tmp_path / "index-other") == expected
    assert len(_warnings(caplog)) == 1 and "Whoosh 2.7.3 is installed, not 2.7.4" in _warnings(caplog)[0]
    ix, reader, leaves = _leaves(tmp_path / "index-other")
    with reader:
        assert any(leaf.has_deletions() for leaf in leaves)
        assert all(type(_segment_part(ix, leaf)) is structfile.BufferFile for leaf in leaves)
        # Whoosh's own writer rebuilt it: a one-posting term is in a block of its own, not inline
        big = max(leaves, key=lambda leaf: leaf.doc_count_all())
        assert not big.term_info("path", KEPT).is_inlined()
        assert whoosh_internals.posting_blocks(big.postings("categories", f"#{JAZZ}")) is None
        assert all(whoosh_internals.deleted_docs(leaf) is None for leaf in leaves)


def test_on_another_whoosh_a_rebuild_is_whoosh_s_own_writer_in_one_process(fresh_whoosh, tmp_path, monkeypatch):
    monkeypatch.setattr(building, "MIN_EVENTS", 10)
    monkeypatch.setattr(building, "_cores", lambda: 2)
    docs = _random_docs()
    (tmp_path / "whoosh").mkdir()
    plain = writing.SegmentWriter(whoosh_index.create_in(str(tmp_path / "whoosh"), make_schema()))
    for doc in docs:
        plain.add_document(**doc)
    plain.commit()
    assert whoosh_internals.install(version="2.8.0") is False
    (tmp_path / "probe").mkdir()
    probe = whoosh_index.create_in(str(tmp_path / "probe"), make_schema())
    for opener in (open_rebuild_writer, open_writer):
        writer = opener(probe)
        assert type(writer) is writing.SegmentWriter   # Whoosh's own
        writer.cancel()
    building.build(tmp_path / "one", make_schema(), docs, dict, open_rebuild_writer)
    assert len(whoosh_index.open_dir(str(tmp_path / "one"))._segments()) == 1   # no child, one segment
    assert _index_content(tmp_path / "one") == _index_content(tmp_path / "whoosh")


def test_a_missing_internal_turns_off_only_its_own_use(fresh_whoosh, tmp_path, caplog, monkeypatch):
    """On the pinned version too: a use whose expected method is missing is not used, the
    warning names it, and the others are."""
    monkeypatch.delattr(whoosh3.W3LeafMatcher, "_next_block")
    with caplog.at_level(logging.WARNING):
        assert whoosh_internals.install() is False
    assert [f for f in FEATURES if not whoosh_internals.in_use(f)] == [POSTING_BLOCKS]
    assert compound.BufferFile is SegmentPart
    assert len(_warnings(caplog)) == 1 and "W3LeafMatcher._next_block is missing" in _warnings(caplog)[0]
    ix = whoosh_index.create_in(str(tmp_path), make_schema())
    writer = open_rebuild_writer(ix)
    for doc in _random_docs()[:300]:
        writer.add_document(**doc)
    writer.commit()
    with ix.reader() as reader:
        leaf = reader.leaf_readers()[0][0]
        assert whoosh_internals.posting_blocks(leaf.postings("text", "jazz")) is None
        assert whoosh_internals.column_values(leaf.column_reader("rid", translate=False), 300) == list(range(1, 301))

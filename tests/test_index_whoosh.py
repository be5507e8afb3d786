"""The index's Whoosh speed fix stays inside our own writers: importing the service changes nothing in Whoosh."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_service_leaves_whoosh_unpatched(tmp_path):
    # a fresh interpreter: this test process has imported everything already
    script = textwrap.dedent("""
        from whoosh.codec import whoosh3
        from whoosh.codec import base
        from whoosh.filedb import compound
        original = whoosh3.W3PerDocReader.__dict__["_cached_reader"]
        buffer_file = compound.BufferFile
        from whoosh import util, writing
        from whoosh.filedb import filestore
        naming = (base, filestore, compound, writing)
        import calendar_service
        import calendar_service.index.search
        from calendar_service.http.app import create_app
        assert whoosh3.W3PerDocReader.__dict__["_cached_reader"] is original, "whoosh was patched at import"
        assert compound.BufferFile is buffer_file, "whoosh's segment files were replaced at import"
        assert all(module.random_name is util.random_name for module in naming), "whoosh's file names were replaced at import"
        print("untouched")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "untouched"


def test_segment_names_do_not_repeat_when_random_is_reseeded(tmp_path):
    """Whoosh names segments with the global ``random``; once the index is opened its names come
    from ``secrets``, so a library or test that seeds ``random`` cannot make a name repeat."""
    import random

    from whoosh import fields, index as whoosh_index

    from calendar_service.index import whoosh_internals

    whoosh_internals.install()
    ix = whoosh_index.create_in(str(tmp_path), fields.Schema(key=fields.ID(stored=True)))
    names = []
    for key in ("one", "two"):
        random.seed(15)
        writer = ix.writer()
        writer.add_document(key=key)
        writer.commit(merge=False)
        names.append({segment.segment_id() for segment in ix._segments()})
    assert len(names[1]) == 2 and names[0] < names[1], names
    with ix.searcher() as searcher:
        assert sorted(doc["key"] for doc in searcher.all_stored_fields()) == ["one", "two"]


def test_our_writers_remember_missing_columns(tmp_path):
    """The segment a writer reads back answers a column it lacks without asking the disk again."""
    from whoosh import fields, index as whoosh_index
    from whoosh.codec import whoosh3

    from calendar_service.index import whoosh_internals
    from calendar_service.index.whoosh_internals import RememberingPerDocReader
    from calendar_service.index.writer import open_writer

    whoosh_internals.install()   # what opening the search index does
    ix = whoosh_index.create_in(str(tmp_path), fields.Schema(key=fields.ID(stored=True)))
    writer = open_writer(ix)
    writer.add_document(key="one")
    writer.perdocwriter.close()
    reader = writer.per_document_reader()
    assert type(reader) is RememberingPerDocReader
    assert reader._cached_reader(whoosh3._lenfield("key"), whoosh3.LENGTHS_COLUMN) is None
    assert reader._readers[whoosh3._lenfield("key")] is None  # remembered: a second ask does not look at the disk
    reader.close()
    writer.cancel()
    # whoosh's own writer is not changed
    plain = ix.writer()
    plain.add_document(key="two")
    plain.perdocwriter.close()
    assert type(plain.per_document_reader()) is whoosh3.W3PerDocReader
    plain.cancel()


def _index_content(directory: Path) -> dict:
    """Everything a reader can see of an index: per field every term with its postings
    (docnum, weight, value bytes) and term statistics, stored fields, column values, counts."""
    from whoosh import index as whoosh_index

    ix = whoosh_index.open_dir(str(directory))
    with ix.reader() as reader:
        content: dict = {"docs": reader.doc_count_all(), "stored": list(reader.all_stored_fields())}
        for name, field in ix.schema.items():
            if field.column_type:
                column = reader.column_reader(name)
                content[("column", name)] = [column[d] for d in range(reader.doc_count_all())]
            if not field.indexed:
                continue
            for term in reader.lexicon(name):
                info = reader.term_info(name, term)
                matcher = reader.postings(name, term)
                postings = []
                while matcher.is_active():
                    postings.append((matcher.id(), matcher.weight(), matcher.value()))
                    matcher.next()
                content[(name, term)] = (info.weight(), info.doc_frequency(), info.max_weight(), info.min_id(),
                                         info.max_id(), postings)
    return content


def _random_docs() -> list[dict]:
    """700 documents of our schema: repeated and blank keywords, a term in more documents than a
    block holds, terms with few postings, missing fields."""
    import random

    rng = random.Random(7)
    words = ["jazz", "café", "night", "über", "a", "b1", "concert"] + [f"w{i}" for i in range(60)]
    docs = []
    for n in range(700):   # "jazz" is in most documents: more than one 128-posting block
        doc = {"path": f"events/e{n}.md", "rid": n + 1, "rid_key": str(n + 1), "status": rng.choice(["publish", "draft"]),
               "author": str(rng.randint(0, 3)), "start": rng.randint(0, 10**9), "end": rng.randint(0, 10**9),
               "pub": rng.randint(0, 10**9),
               "text": " ".join(rng.sample(words, rng.randint(0, 12)) + (["jazz"] if n % 3 else []))}
        if n % 4:
            doc["categories"] = ",".join(rng.choice(["c1", "c2", " c3 ", "c1", ""]) for _ in range(rng.randint(1, 4)))
        if n % 5 == 0:
            doc["flags"] = "featured,sticky,featured"
        if n % 7 == 0:
            doc["parent"] = str(rng.randint(1, 9))
        if n % 50 == 0:   # terms with few postings (kept inline by the rebuild writer), one counted twice
            doc["text"] += f" rare{n % 150} rare{n % 150}"
            doc["tags"] = f"t{n % 100},t{n % 100}"
        docs.append(doc)
    return docs


def test_the_rebuild_writer_writes_what_whoosh_writes(tmp_path):
    """A full rebuild's writer gives the index Whoosh's own add_document and commit give:
    every term, posting, weight, value, stored field and column, for every field of our schema
    (repeated and blank keywords, a term in more documents than a block holds, missing fields)."""

    from whoosh import index as whoosh_index

    from calendar_service.index import whoosh_internals
    from calendar_service.index.schema import make_schema
    from calendar_service.index.writer import BulkSegmentWriter, open_rebuild_writer, open_writer

    whoosh_internals.install()   # what opening the search index does
    docs = _random_docs()
    built = {}
    for name, opener in (("whoosh", open_writer), ("rebuild", open_rebuild_writer)):
        (tmp_path / name).mkdir()
        ix = whoosh_index.create_in(str(tmp_path / name), make_schema())
        writer = opener(ix, limitmb=64)
        assert (type(writer) is BulkSegmentWriter) == (name == "rebuild")
        for doc in docs:
            writer.add_document(**doc)
        writer.commit()
        built[name] = _index_content(tmp_path / name)
    assert built["rebuild"][("flags", b"featured")][-1][0][1:] == (2.0, b"\x00\x00\x00\x02")   # counted twice
    assert len(built["rebuild"][("text", b"jazz")][-1]) > 128
    assert built["rebuild"][("tags", b"t0")][-1] == [(0, 2.0, b"\x00\x00\x00\x02"), (100, 2.0, b"\x00\x00\x00\x02"),
                                                    (200, 2.0, b"\x00\x00\x00\x02"), (300, 2.0, b"\x00\x00\x00\x02"),
                                                    (400, 2.0, b"\x00\x00\x00\x02"), (500, 2.0, b"\x00\x00\x00\x02"),
                                                    (600, 2.0, b"\x00\x00\x00\x02")]
    assert built["rebuild"] == built["whoosh"]
    # what lists read: every term's docnums, decoded a block at a time (Whoosh's 128-posting
    # blocks, and the rebuild's longer ones), are the postings' ids
    from calendar_service.index.view import posting_ids
    for name in ("whoosh", "rebuild"):
        with whoosh_index.open_dir(str(tmp_path / name)).reader() as reader:
            terms = [(key, content) for key, content in built[name].items() if isinstance(key, tuple)
                     and key[0] != "column" and isinstance(key[1], bytes)]
            assert len(terms) > 100
            for (field, term), content in terms:
                assert posting_ids(reader, field, term.decode("utf-8")) == [p[0] for p in content[-1]], (name, term)
    # the few-posting terms really are inline in the rebuild (and in blocks in Whoosh's own index)
    for name, inlined in (("rebuild", True), ("whoosh", False)):
        with whoosh_index.open_dir(str(tmp_path / name)).reader() as reader:
            for field, term in (("path", "events/e3.md"), ("tags", "t0"), ("text", "rare50"), ("text", "jazz")):
                assert reader.term_info(field, term).is_inlined() == (inlined and term != "jazz"), (name, term)


def test_search_words_of_a_document_are_the_analysed_words():
    """The rebuild analyses each distinct word once: the same set as analysing every word."""
    from calendar_service.domain.queries import analyse, analysed_set

    for text in ("Running runs RAN the a I x2 3.14 foo.bar e-mail O'Neil", "İstanbul Straße café ÉCOLE école",
                 "Jazz jazz JAZZ nights night " * 5, ""):
        assert analysed_set(text) == set(analyse(text))
    assert analysed_set("Jazz jazz nights") == {"jazz", "night"}


def test_a_rebuild_in_two_processes_reads_as_one_writer_s(tmp_path, monkeypatch):
    """A full rebuild split between a forked child (the first half, its own segment) and this
    process gives the index one Whoosh writer gives, read back term by term and posting by
    posting (two segments instead of one); when the child fails, its half is indexed here."""
    import os

    from whoosh import index as whoosh_index

    from calendar_service.index import building, whoosh_internals
    from calendar_service.index.schema import make_schema
    from calendar_service.index.writer import open_rebuild_writer, open_writer

    whoosh_internals.install()   # what opening the search index does
    monkeypatch.setattr(building, "MIN_EVENTS", 10)
    monkeypatch.setattr(building, "_cores", lambda: 2)
    docs = _random_docs()
    parent = os.getpid()
    (tmp_path / "whoosh").mkdir()
    ix = whoosh_index.create_in(str(tmp_path / "whoosh"), make_schema())
    writer = open_writer(ix)
    for doc in docs:
        writer.add_document(**doc)
    writer.commit()
    expected = _index_content(tmp_path / "whoosh")

    building.build(tmp_path / "two", make_schema(), docs, dict, open_rebuild_writer)
    assert len(whoosh_index.open_dir(str(tmp_path / "two"))._segments()) == 2
    assert _index_content(tmp_path / "two") == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two", "whoosh"]   # no scratch index left

    def failing(doc):   # the child fails half way through its half
        if os.getpid() != parent and doc["rid"] > 100:
            raise RuntimeError("child failure")
        return dict(doc)

    building.build(tmp_path / "fallback", make_schema(), docs, failing, open_rebuild_writer)
    got = _index_content(tmp_path / "fallback")
    fallback = whoosh_index.open_dir(str(tmp_path / "fallback"))
    assert len(fallback._segments()) == 2   # this half's segment, then the failed child's half
    # nothing but the table of contents, the two segments' files and Whoosh's lock file
    kept = {name for segment in fallback._segments() for name in os.listdir(tmp_path / "fallback")
            if name.startswith(segment.segment_id())}
    assert set(os.listdir(tmp_path / "fallback")) - kept == {f"_MAIN_{fallback.latest_generation()}.toc", "MAIN_WRITELOCK"}

    def by_rid(content):   # each term's postings by the document's id (docnums differ: halves swapped)
        rid = content[("column", "rid")]
        return {key: sorted((rid[p[0]], p[1], p[2]) for p in value[-1]) for key, value in content.items()
                if isinstance(key, tuple) and key[0] != "column"}

    assert got[("column", "rid")] == [d["rid"] for d in docs[350:] + docs[:350]]
    assert by_rid(got) == by_rid(expected)

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
        original = whoosh3.W3PerDocReader.__dict__["_cached_reader"]
        import calendar_service
        import calendar_service.index.search
        from calendar_service.http.app import create_app
        assert whoosh3.W3PerDocReader.__dict__["_cached_reader"] is original, "whoosh was patched at import"
        print("untouched")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "untouched"


def test_our_writers_remember_missing_columns(tmp_path):
    """The segment a writer reads back answers a column it lacks without asking the disk again."""
    from whoosh import fields, index as whoosh_index
    from whoosh.codec import whoosh3

    from calendar_service.index.writer import RememberingPerDocReader, open_writer

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

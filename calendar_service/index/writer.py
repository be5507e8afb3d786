"""Whoosh's segment writer with one speed fix, used only by this service's index.

Writing a segment asks, for every posting, for the length column of its field; for the
fields without one (ids, keywords) Whoosh 2.7.4's ``W3PerDocReader._cached_reader`` answers
with a ``stat`` each time: three quarters of a full reindex went there. A segment's files
never change once written, so remembering "no such column" is safe.

The fix is a subclass applied to the per-document readers our writers open (the new
segment read back, and the segments merged into it); Whoosh itself is left unchanged for
any other code in the process, and nothing of ours is stored in the index files.
"""
from __future__ import annotations

from whoosh import writing
from whoosh.codec import whoosh3


class RememberingPerDocReader(whoosh3.W3PerDocReader):
    """A W3PerDocReader that also remembers a column a segment does not have."""

    def _cached_reader(self, fieldname, column):
        if fieldname in self._readers:
            return self._readers[fieldname]
        reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
        self._readers[fieldname] = reader
        return reader


def _remembering(perdoc):
    """``perdoc`` itself, made a RememberingPerDocReader when it is a plain W3PerDocReader."""
    if type(perdoc) is whoosh3.W3PerDocReader:
        perdoc.__class__ = RememberingPerDocReader  # adds no state: only the one method differs
    return perdoc


class SegmentWriter(writing.SegmentWriter):
    """``ix.writer(**kwargs)`` of a one-process index, reading segments with RememberingPerDocReader."""

    def per_document_reader(self):
        return _remembering(super().per_document_reader())

    def add_reader(self, reader):
        for leaf, _offset in reader.leaf_readers():
            perdoc = getattr(leaf, "_perdoc", None)
            if perdoc is not None:
                _remembering(perdoc)
        super().add_reader(reader)


def open_writer(ix, **kwargs) -> SegmentWriter:
    """A writer on ``ix`` (Whoosh's ``ix.writer(**kwargs)`` with the fix above)."""
    return SegmentWriter(ix, **kwargs)

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

from array import array

from whoosh import formats, writing
from whoosh.analysis import CompositeAnalyzer, IDTokenizer, RegexTokenizer, StripFilter
from whoosh.codec import whoosh3
from whoosh.system import pack_uint


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


# ----------------------------------------------------------------------------- a full rebuild

def _splitter(analyzer):
    """The words ``analyzer`` makes of a text, as a plain function; None for an analyzer other
    than the three this schema uses (an ID's, a comma-separated keyword's, a space-separated one)."""
    if isinstance(analyzer, IDTokenizer):
        return lambda value: [value]
    parts = list(analyzer.items) if isinstance(analyzer, CompositeAnalyzer) else [analyzer]
    if not isinstance(parts[0], RegexTokenizer) or parts[0].gaps:
        return None
    findall = parts[0].expression.findall
    if len(parts) == 1:
        return findall
    if len(parts) == 2 and type(parts[1]) is StripFilter:
        return lambda value: [word.strip() for word in findall(value)]
    return None


class BulkSegmentWriter(SegmentWriter):
    """The writer of a full rebuild into a new, empty index, writing the segment Whoosh's own
    ``add_document`` and ``commit`` write (same terms, postings, weights, values, stored fields
    and columns) with less Python per posting.

    Whoosh pools every posting as a tuple, sorts them all, then feeds them one call at a time to
    the postings writer, asking the (absent) length column of each: nine tenths of a reindex.
    Here a document's words are appended to a list of docnums per field and term, and at commit
    each term's list is cut into Whoosh's blocks and written through the codec's own block
    writer. Only untokenised IDs and regex-split keywords (formats Existence and Frequency, not
    scorable, without vectors or spelling, no boosts) are handled: ``open_rebuild_writer``
    gives a plain writer for any other schema.
    """

    def __init__(self, ix, **kwargs):
        super().__init__(ix, **kwargs)
        self._postings: dict[str, dict[bytes, list]] = {}
        # field name -> (field, words of a value or None, counted (Frequency), stored, column, postings)
        self._plan = {}
        for name, field in self.schema.items():
            postings = self._postings[name] = {} if field.indexed else None
            self._plan[name] = (field, _splitter(field.analyzer) if field.indexed else None,
                                type(field.format) is formats.Frequency, field.stored, field.column_type, postings)

    @staticmethod
    def handles(schema) -> bool:
        """Whether every field of ``schema`` is one this writer writes as Whoosh would."""
        for field in schema:
            if field.indexed and (_splitter(field.analyzer) is None or field.scorable or field.vector
                                  or field.separate_spelling()
                                  or type(field.format) not in (formats.Existence, formats.Frequency)):
                return False
        return True

    def add_document(self, **fields):
        self._check_state()
        perdoc, docnum, plan = self.perdocwriter, self.docnum, self._plan
        if not plan.keys() >= fields.keys():
            raise ValueError(f"fields the rebuild writer does not know (boosts and stored variants included): "
                             f"{sorted(fields.keys() - plan.keys())}")
        perdoc.start_doc(docnum)
        for name in sorted(fields):
            value = fields[name]
            if value is None:
                continue
            field, split, counted, stored, column, postings = plan[name]
            if split is not None:
                if not isinstance(value, str):
                    raise ValueError(f"{name}: the rebuild writer indexes text values only, got {value!r}")
                words = split(value)
                if counted and len(words) > 1 and len(set(words)) < len(words):
                    counts: dict[str, int] = {}
                    for word in words:
                        counts[word] = counts.get(word, 0) + 1
                    for word, n in counts.items():
                        postings.setdefault(word.encode("utf-8"), []).append((docnum, n))
                else:
                    for word in (words if len(words) == 1 else dict.fromkeys(words)):
                        postings.setdefault(word.encode("utf-8"), []).append(docnum)
            if stored:
                perdoc.add_field(name, field, value, 0)
            if column:
                perdoc.add_column_value(name, column, field.to_column_value(value))
        perdoc.finish_doc()
        self._added = True
        self.docnum += 1

    def _flush_segment(self):
        self.perdocwriter.close()
        writer = self.fieldwriter
        for name in sorted(self._postings):
            terms = self._postings[name]
            if not terms:  # None: not indexed
                continue
            field = self.schema[name]
            boost, counted = field.format.field_boost, self._plan[name][2]
            writer.start_field(name, field)
            block = writer._postwriter
            limit = block._blocklimit
            for btext in sorted(terms):
                writer.start_term(btext)
                entries = terms[btext]
                for first in range(0, len(entries), limit):
                    if first:
                        block._write_block()
                    chunk = entries[first:first + limit]
                    ids = [e if type(e) is int else e[0] for e in chunk]
                    freqs = [1 if type(e) is int else e[1] for e in chunk]
                    block._ids = array("I", ids)
                    block._weights = array("f", [f * boost for f in freqs])
                    block._maxweight = max(block._weights)
                    block._values = [pack_uint(f) for f in freqs] if counted else []
                writer.finish_term()
            writer.finish_field()
        writer.close()
        self._postings = {}


def open_rebuild_writer(ix, **kwargs) -> SegmentWriter:
    """The writer of a full rebuild into the new, empty index ``ix``."""
    return BulkSegmentWriter(ix, **kwargs) if BulkSegmentWriter.handles(ix.schema) else open_writer(ix, **kwargs)

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

import struct
from array import array
from collections import defaultdict
from pickle import dumps

from whoosh import columns, formats, writing
from whoosh.analysis import CompositeAnalyzer, IDTokenizer, RegexTokenizer, StripFilter
from whoosh.codec import whoosh3
from whoosh.system import pack_uint, pack_ushort

# A term with at most this many postings keeps them in its row of the term table (Whoosh's
# "inlined" terminfo, which every Whoosh reader reads) instead of a compressed block of its own
# in the postings file: ids and paths are one posting each, most of a rebuild's terms.
INLINE_POSTINGS = 8
# Postings per block of a rebuilt segment (Whoosh writes 128): a reader decodes a block with a
# few Python calls of its own, so fewer, longer blocks make a term's whole posting list (what
# lists and search read) cheaper to decode; every Whoosh reader reads blocks of any length.
BLOCK_POSTINGS = 4096
_TERMINFO = whoosh3.W3TermInfo._struct


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
    writer. A term with at most INLINE_POSTINGS postings is written inline in its term table
    row instead (Whoosh's own inlined terminfo: what a reader decodes is the same). Numeric
    columns are gathered per field and packed at commit in one call, as Whoosh would have
    written them value by value. Only untokenised IDs and regex-split keywords (formats
    Existence and Frequency, not scorable, without vectors or spelling, no boosts) are handled:
    ``open_rebuild_writer`` gives a plain writer for any other schema.
    """

    def __init__(self, ix, **kwargs):
        super().__init__(ix, **kwargs)
        self._postings: dict[str, dict[str, list]] = {}
        # field name -> (field, words of a value or None, counted (Frequency), stored, column, postings)
        self._plan = {}
        # numeric column -> {docnum: value}, written at commit (other columns are added per document)
        self._numeric: dict[str, dict[int, int]] = {}
        for name, field in self.schema.items():
            # term (text; encoded once at commit) -> docnums, or (docnum, count) for a repeated word
            postings = self._postings[name] = defaultdict(list) if field.indexed else None
            column = field.column_type
            if type(column) is columns.NumericColumn:
                column = self._numeric.setdefault(name, {})
            self._plan[name] = (field, _splitter(field.analyzer) if field.indexed else None,
                                type(field.format) is formats.Frequency, field.stored, column, postings)

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
                        postings[word].append((docnum, n))
                elif len(words) == 1:
                    postings[words[0]].append(docnum)
                else:
                    for word in dict.fromkeys(words):
                        postings[word].append(docnum)
            if stored:
                perdoc.add_field(name, field, value, 0)
            if type(column) is dict:
                column[docnum] = field.to_column_value(value)
            elif column:
                perdoc.add_column_value(name, column, field.to_column_value(value))
        perdoc.finish_doc()
        self._added = True
        self.docnum += 1

    def _write_numeric_columns(self):
        """Each numeric column as Whoosh writes it value by value: a big-endian value per document
        up to the last one that is not the default (a gap is filled with the default)."""
        perdoc = self.perdocwriter
        for name, values in self._numeric.items():
            if not values:
                continue   # no document had the field: Whoosh makes no column
            column = self.schema[name].column_type
            perdoc._create_column(name, column)
            out = perdoc._get_column(name)
            default = out._default
            count = max((d for d, v in values.items() if v != default), default=-1) + 1
            row = [values.get(d, default) for d in range(count)]
            out._dbfile.write(struct.pack(f"!{count}{column._typecode}", *row))
            out._count = count
        self._numeric = {name: {} for name in self._numeric}

    def _flush_segment(self):
        self._write_numeric_columns()
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
            limit = max(block._blocklimit, BLOCK_POSTINGS)
            table, key = writer._tindex, pack_ushort(writer._fieldid)
            for btext, entries in sorted((text.encode("utf-8"), entries) for text, entries in terms.items()):
                if len(entries) <= INLINE_POSTINGS:
                    table.add(key + btext, _inline_terminfo(entries, boost, counted))
                    continue
                writer.start_term(btext)
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


def _inline_terminfo(entries: list, boost: float, counted: bool) -> bytes:
    """The term table row of a term whose postings (docnum, or (docnum, count)) are kept inline:
    ``W3TermInfo.to_bytes`` of a terminfo made by ``add_block`` and ``set_inlined`` of one block
    (no lengths: the fields are not scorable). Values are the frequency bytes of a counted field,
    None for an Existence field (what Whoosh's block reader gives for it)."""
    ids = tuple(e if type(e) is int else e[0] for e in entries)
    freqs = [1 if type(e) is int else e[1] for e in entries]
    weights = tuple(array("f", [f * boost for f in freqs]))
    values = tuple(pack_uint(f) for f in freqs) if counted else (None,) * len(ids)
    head = _TERMINFO.pack(True, sum(weights), len(ids), 0, 0, max(weights), ids[0], ids[-1])
    return head + dumps((ids, weights, values), 2)


def open_rebuild_writer(ix, **kwargs) -> SegmentWriter:
    """The writer of a full rebuild into the new, empty index ``ix``."""
    return BulkSegmentWriter(ix, **kwargs) if BulkSegmentWriter.handles(ix.schema) else open_writer(ix, **kwargs)

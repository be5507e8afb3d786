"""The index's segment writers: Whoosh's own, with the speed fixes of ``whoosh_internals``
where they are used, and a full rebuild's bulk writer.

``open_writer`` gives the writer of every sync: Whoosh's segment writer whose per-document
readers remember that a segment has no column of a field (``REMEMBERED_COLUMNS``); Whoosh itself
is left unchanged for any other code in the process, and nothing of ours is stored in the index
files. ``open_rebuild_writer`` gives ``BulkSegmentWriter`` for a full rebuild into a new, empty
index (``BULK_WRITING``). Where ``whoosh_internals`` does not use a feature, Whoosh's own writer
(``ix.writer()``) does the work, with the same index as the result.
"""
from __future__ import annotations

from collections import defaultdict

from whoosh import columns, formats
from whoosh.analysis import CompositeAnalyzer, IDTokenizer, RegexTokenizer, StripFilter

from calendar_service.index import term_sets, whoosh_internals
from calendar_service.index.whoosh_internals import BULK_WRITING, REMEMBERED_COLUMNS

# A term with at most this many postings keeps them in its row of the term table (Whoosh's
# "inlined" terminfo, which every Whoosh reader reads) instead of a compressed block of its own
# in the postings file: ids and paths are one posting each, most of a rebuild's terms.
INLINE_POSTINGS = 8
# Postings per block of a rebuilt segment (Whoosh writes 128): a reader decodes a block with a
# few Python calls of its own, so fewer, longer blocks make a term's whole posting list (what
# lists and search read) cheaper to decode; every Whoosh reader reads blocks of any length.
BLOCK_POSTINGS = 4096


def open_writer(ix, **kwargs):
    """A writer on ``ix``: Whoosh's ``ix.writer(**kwargs)``, remembering missing columns when
    ``REMEMBERED_COLUMNS`` is used."""
    if whoosh_internals.in_use(REMEMBERED_COLUMNS):
        return whoosh_internals.SegmentWriter(ix, **kwargs)
    return ix.writer(**kwargs)


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


class BulkSegmentWriter(whoosh_internals.SegmentWriter):
    """The writer of a full rebuild into a new, empty index, writing the segment Whoosh's own
    ``add_document`` and ``commit`` write (same terms, postings, weights, values, stored fields
    and columns) with less Python per posting.

    Whoosh pools every posting as a tuple, sorts them all, then feeds them one call at a time to
    the postings writer, asking the (absent) length column of each: most of a reindex.
    Here a document's words are appended to a list of docnums per field and term, and at commit
    each term's list is cut into Whoosh's blocks and written through the codec's own block
    writer. A term with at most INLINE_POSTINGS postings is written inline in its term table
    row instead (Whoosh's own inlined terminfo: what a reader decodes is the same). Numeric
    columns are gathered per field and packed at commit in one call, as Whoosh would have
    written them value by value. Beside the segment, the sets of its frequent terms
    (``term_sets``), which a reader takes without decoding postings. Only untokenised IDs and regex-split keywords (formats
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
        self.check_open()
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
        self.document_added()

    def write_segment(self) -> None:
        """The segment of the documents added, as Whoosh's commit would write it
        (``whoosh_internals.write_numeric_columns`` and ``write_postings``)."""
        whoosh_internals.write_numeric_columns(self, self._numeric)
        self._numeric = {name: {} for name in self._numeric}
        self.perdocwriter.close()
        counted = {name: plan[2] for name, plan in self._plan.items()}
        whoosh_internals.write_postings(self, self._postings, counted, BLOCK_POSTINGS, INLINE_POSTINGS)
        term_sets.write(self.get_segment(), self.storage, self._postings)
        self._postings = {}


def open_rebuild_writer(ix, **kwargs):
    """The writer of a full rebuild into the new, empty index ``ix``."""
    if whoosh_internals.in_use(BULK_WRITING) and BulkSegmentWriter.handles(ix.schema):
        return BulkSegmentWriter(ix, **kwargs)
    return open_writer(ix, **kwargs)

"""What the index holds: the Whoosh schema, and the document of one event file.

One Whoosh document per event file, holding what the list filters need: UTC start and end
as epoch seconds (computed from each event's own time zone when the file is indexed), the
publication date, status, author, flags, the raw references to categories, tags, venues
and organizers (ids and, where editors wrote them, slugs), and the analysed text of title,
excerpt and description.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from whoosh import columns, fields
from whoosh.analysis import SpaceSeparatedTokenizer

from calendar_service.domain import dates, occurrences
from calendar_service.domain.queries import analysed_set, event_text, word_string
from calendar_service.domain.record import Record
from calendar_service.domain.recurrence import occurrences as expand
from calendar_service.domain.recurrence.record import series_of
from calendar_service.domain.snapshot import ref_term

# Raised whenever the schema, the meaning of a field or the way segments are written changes: an
# index of another version is rebuilt (5: no stored fields; a rebuild keeps few-posting terms inline;
# 6: a rebuild's segments keep their frequent terms' sets, ``term_sets``).
SCHEMA_VERSION = 6
# Whoosh's typecode for a column of signed 64-bit integers (ids and epoch seconds).
INT64 = "q"
UNIX = datetime(1970, 1, 1)
# The event flags the lists filter on, stored as keywords of the ``flags`` field.
FLAGS = ("featured", "hide_from_listings", "sticky")
# The flag of a series' document: the lists show its occurrences, expanded when a base is read.
SERIES_FLAG = "recurring"
# The publication date of an event file that has none.
NO_DATE = "1970-01-01 00:00:00"
# Reference fields: index field -> the event field listing the records (ids or slugs).
REFERENCE_FIELDS = ("categories", "tags", "venue", "organizer")


def make_schema() -> fields.Schema:
    keyword = dict(commas=True, scorable=False, lowercase=False)
    return fields.Schema(
        # nothing is stored: the id of a path's document is read from the ``rid`` column (``rid_of_path``)
        path=fields.ID(unique=True),
        # columns only: lists read them once per generation, nothing searches them as terms
        rid=fields.COLUMN(columns.NumericColumn(INT64)),
        rid_key=fields.ID(),
        status=fields.ID(),
        author=fields.ID(),
        start=fields.COLUMN(columns.NumericColumn(INT64)),
        end=fields.COLUMN(columns.NumericColumn(INT64)),
        pub=fields.COLUMN(columns.NumericColumn(INT64)),
        flags=fields.KEYWORD(**keyword),
        parent=fields.ID(),
        categories=fields.KEYWORD(**keyword),
        tags=fields.KEYWORD(**keyword),
        venue=fields.KEYWORD(**keyword),
        organizer=fields.KEYWORD(**keyword),
        # words analysed by queries.analyse (the same words the scanning path matches), as a set
        # of keywords: lists never score, so no per-document length column (writing it and
        # reading it back per posting was a large part of a full reindex)
        text=fields.KEYWORD(analyzer=SpaceSeparatedTokenizer(), scorable=False),
    )


def rid_of_path(searcher, path: str) -> int | None:
    """The id of the live document of the file at ``path`` in ``searcher``'s index, if any."""
    docnum = searcher.document_number(path=path)
    return None if docnum is None else int(searcher.reader().column_reader("rid")[docnum])


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def event_document(record: Record, site_tz) -> dict:
    """The index document of one event."""
    data = record.data
    tz = dates.zone(data.get("timezone"), site_tz)
    instants = getattr(record, "instants", None)   # an occurrence's (see occurrences.OccurrenceRecord)
    if instants is not None:
        start, end = instants
    else:
        start, end = dates.event_span(data["start_date"], data["end_date"], tz)
    pub = dates.read_local(data.get("date_utc") or NO_DATE, timezone.utc)
    flags = [name for name in FLAGS if data.get(name)]
    if data.get("recurrence") and not isinstance(record, occurrences.OccurrenceRecord):
        flags.append(SERIES_FLAG)
    doc = {
        "path": record.path,
        "rid": record.id,
        "rid_key": str(record.id),
        "status": record.status,
        "author": str(data.get("author") or 0),
        "start": _epoch(start),
        "end": _epoch(end),
        "pub": _epoch(pub),
        "flags": ",".join(flags) or None,
        "parent": str(data["post_parent"]) if data.get("post_parent") else None,
        # the scanning path's words when it has them; not kept on the record otherwise (memory)
        "text": (record.remembered("words") or word_string(analysed_set(event_text(record))))[1:],
    }
    for key in REFERENCE_FIELDS:
        # a comma separates keywords: a reference holding one cannot be a term
        refs = [ref_term(r) for r in data.get(key) or [] if str(r) and "," not in str(r)]
        doc[key] = ",".join(refs) or None
    return {k: v for k, v in doc.items() if v is not None}


def event_documents(record: Record, site_tz, until) -> list[dict]:
    """The documents the lists match one by one for an event changed since the base was read:
    the event's, or one per occurrence of a series up to ``until`` (each with ``owner``, the id
    of the file's record). A series' plain occurrences share its document but for their id,
    times and parent (one analysis of the file, not one per occurrence: a long series' edit
    costs little more than a single event's)."""
    if not record.data.get("recurrence"):
        return [event_document(record, site_tz)]
    entries = occurrence_entries(record, site_tz, until)
    if not entries:
        return []
    shared = event_document(record, site_tz)
    flags = [f for f in shared.pop("flags", "").split(",") if f and f != SERIES_FLAG]
    if flags:
        shared["flags"] = ",".join(flags)
    shared.pop("parent", None)
    shared["owner"] = record.id
    out = []
    for served, start, end, parent, doc in entries:
        if doc is None:
            doc = {**shared, "rid": served, "rid_key": str(served), "start": start, "end": end}
            if parent is not None:
                doc["parent"] = parent
        else:
            doc["owner"] = record.id
        out.append(doc)
    return out


def occurrence_entries(record: Record, site_tz, until) -> list[tuple]:
    """The occurrences of the series ``record`` up to ``until`` as a base reads them:
    (served id, start, end as epoch seconds, parent term, document or None). Only an occurrence
    whose exception changes more than its times has a document of its own; the others match
    as the series' document does."""
    try:
        series = series_of(record, site_tz)
    except Exception:   # an invalid series is reported by the loader; it lists nothing
        return []
    if series is None:
        return []
    sid = record.id
    own_parent = record.data.get("post_parent")
    own_parent, parent = (str(own_parent) if own_parent else None), str(sid)
    served_of = occurrences.served_ids(series, sid)
    second = timedelta(seconds=1)
    out = []
    for occ in expand(series, horizon_end=until):
        served = served_of(occ.original_start)
        doc = None
        if occ.overrides and occurrences.needs_document(occ):
            doc = event_document(occurrences.occurrence_record(record, series, occ), site_tz)
        out.append((served, (occ.utc_start - UNIX) // second, (occ.utc_end - UNIX) // second,
                    own_parent if served == sid else parent, doc))
    return out

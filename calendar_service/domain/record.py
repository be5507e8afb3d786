"""One record in memory: what a file of the content repository holds, as the service serves it.

A record parsed from its file holds its data as a dict. A record restored from the catalog's
cache is *packed*: its file's data stays as the cache's bytes until first used, and only the
most recently used packed records hold their dict at once (``RECENT``). The values git history
fills in (dates, author) are applied when a record's data is made.
"""
from __future__ import annotations

import threading
from collections import deque
from datetime import datetime, timezone

from calendar_service.domain import dates
from calendar_service.domain.resources import Resource


class Record:
    """One record as loaded from its file at some commit.

    ``parse`` compacts its data (see ``compact``). A record restored from the catalog's cache is
    *packed*: it holds its file's data as the cache's bytes and ``source`` (the catalog's), which
    makes the dict on first use (history dates filled in). Unless it is *held*, at most
    ``RECENT.size`` packed records hold their dict at once; the others drop it and make it again
    when asked (the dicts take many times the memory of the packed bytes). The catalog holds
    venues, organizers and terms (few, and their lists read them all); events are forgotten. Its
    id and slug are kept beside it: the snapshot's maps are built without making any dict.
    """

    __slots__ = ("resource", "path", "blob", "id", "slug", "_data", "_filled", "_packed", "_facts", "_source",
                 "_remembered", "_held")

    def __init__(self, resource: Resource, data: dict, path: str, blob: str = "", filled: dict | None = None):
        self.resource, self.path, self.blob = resource, path, blob
        self._data, self._filled = data, filled
        self.id, self.slug = data.get("id"), data.get("slug")
        self._packed = self._facts = self._source = self._remembered = None
        self._held = True

    @classmethod
    def packed(cls, resource: Resource, path: str, blob: str, rid, slug: str, packed: bytes, facts, source,
               held: bool = False) -> "Record":
        """A record whose data is made from ``packed`` by ``source.unpack(record)`` when first
        used (``facts``: its file's git dates, filled in then); ``held``: kept once made, never
        forgotten."""
        record = cls.__new__(cls)
        record.resource, record.path, record.blob, record.id, record.slug = resource, path, blob, rid, slug
        record._data = record._filled = None
        record._packed, record._facts, record._source = packed, facts, source
        record._remembered = None
        record._held = held
        return record

    @property
    def data(self) -> dict:
        data = self._data
        if data is None:
            data = self._unpack()
        return data

    @property
    def unpacked(self) -> bool:
        """Whether ``data`` is at hand (made, or never packed): asking for it costs nothing."""
        return self._data is not None or self._packed is None

    @property
    def filled(self) -> dict | None:
        """Keys whose values came from git history, not from the file: key -> the file's value
        (None: absent)."""
        if self._data is None and self._packed is not None:
            self._unpack()
        return self._filled

    @filled.setter
    def filled(self, value: dict | None) -> None:
        self._filled = value

    @property
    def packed_data(self) -> bytes | None:
        """The bytes a packed record was made from (its file's data), None for a parsed one."""
        packed = self._packed
        if packed is None or type(packed) is bytes:
            return packed
        return self._source.packed_at(packed)   # its position in the column of a cache file

    @property
    def cache_row(self) -> tuple | None:
        """(the column of the records cache this record was restored from, its row), or None."""
        packed = self._packed
        return (self._source, packed) if type(packed) is int else None

    def kept_text(self, context: str) -> str | None:
        """The text a maker of ``context`` made of this record when the records cache it was
        restored from was written (``storage.record_texts``), while it still holds; else None."""
        packed = self._packed
        if type(packed) is not int:
            return None
        return self._source.text_at(packed, self._facts, context)

    def _unpack(self) -> dict:
        data, filled = self._source.unpack(self)
        self._filled = filled
        self._data = data
        if not self._held:
            RECENT.add(self)
        return data

    @property
    def history(self):
        """A packed record's file dates (changed, added, e-mail, once), or None. A record
        restored from the records cache holds its row of the cache's dates instead (an int),
        read from its source when asked (a start makes no tuple per record)."""
        facts = self._facts
        if type(facts) is int:
            return self._source.facts_at(facts)
        return facts

    def set_history(self, facts) -> None:
        """Give a packed record its file's git dates (its dict is made again with them)."""
        self._facts = facts
        self._data = self._filled = self._remembered = None

    def forget(self) -> None:
        """Drop the dict of a packed record (made again when next used); nothing for others."""
        if not self._held:
            self._data = self._remembered = None

    def remembered(self, name: str):
        """A value a caller derived from the data and kept with ``remember`` (None if none): it
        is forgotten with the data."""
        kept = self._remembered
        return kept.get(name) if kept is not None else None

    def remember(self, name: str, value) -> None:
        kept = self._remembered
        if kept is None:
            kept = self._remembered = {}
        kept[name] = value

    def file_data(self) -> dict:
        """``data`` as the file holds it (without the values taken from git history)."""
        data = self.data
        filled = self._filled
        if not filled:
            return data
        out = {k: v for k, v in data.items() if k not in filled}
        out.update({k: v for k, v in filled.items() if v is not None})
        return out

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return (self.resource, self.path, self.blob, self.data, self.filled) == \
            (other.resource, other.path, other.blob, other.data, other.filled)

    __hash__ = None   # compared by value, as before: never a set member or a key

    def __repr__(self) -> str:
        return f"Record({self.resource.name}, {self.path!r}, id={self.id!r}, blob={self.blob[:12]!r})"

    @property
    def status(self) -> str:
        return self.data.get("status") or "publish"

    @property
    def title(self) -> str:
        return self.data.get(self.resource.title_key) or ""


def packed_records(resource: Resource, paths, blobs, ids, slugs, packed, facts, source, held: bool) -> list[Record]:
    """``Record.packed`` of each entry of these columns (one loop without a call per record: a
    start restores every record of the cache); ``packed``: bytes, or positions in ``source``
    (a column of packed records with ``packed_at(position)``); ``facts``: each file's git dates,
    or its row in ``source``'s dates (see ``Record.history``)."""
    new = Record.__new__
    made = []
    append = made.append
    for path, blob, rid, slug, data, fact in zip(paths, blobs, ids, slugs, packed, facts):
        record = new(Record)
        record.resource = resource
        record.path = path
        record.blob = blob
        record.id = rid
        record.slug = slug
        record._data = record._filled = record._remembered = None
        record._packed = data
        record._facts = fact
        record._source = source
        record._held = held
        append(record)
    return made


class RecentRecords:
    """The packed records whose dicts are held, oldest first: adding one beyond ``size`` makes
    the oldest forget its dict (a record used again is made again, quickly). Records are added
    when their dict is made, so one made twice in a while is counted twice: harmless."""

    def __init__(self, size: int):
        self.size = size
        self._queue: deque = deque()
        self._lock = threading.Lock()

    def add(self, record: Record) -> None:
        with self._lock:
            self._queue.append(record)
            while len(self._queue) > self.size:
                self._queue.popleft().forget()

    def resize(self, size: int) -> None:
        """Hold at most ``size`` dicts from now on (those beyond it forgotten now)."""
        with self._lock:
            self.size = size
            while len(self._queue) > self.size:
                self._queue.popleft().forget()

    def clear(self) -> None:
        with self._lock:
            while self._queue:
                self._queue.popleft().forget()

    def __len__(self) -> int:
        return len(self._queue)


# packed records holding their dict at once: a page of 50 events names a few hundred
# records, and pages already presented are served from the snapshot's memo without them; a
# full iCalendar feed walks through every event of its window (each made once per feed)
RECENT_RECORDS = 1000
RECENT = RecentRecords(RECENT_RECORDS)


# A file's ``modified_utc`` this much older than the commit that last changed the file was not
# written by that commit (the API stamps a record moments before it commits it).
STAMP_TOLERANCE = 10


def apply_history(record: Record, changed: int, added: int, email: str, once: bool, author_of=None) -> None:
    """Complete a post's dates and author from git history (see ``fill_history``); a packed
    record keeps the dates and has them filled in when its dict is made."""
    if record.resource.kind != "post":
        return
    if record.packed_data is not None:
        record.set_history((changed, added, email, once))
        return
    filled = fill_history(record.data, changed, added, email, once, author_of)
    if filled:
        record.filled = filled


def fill_history(data: dict, changed: int, added: int, email: str, once: bool, author_of=None) -> dict | None:
    """Complete a post's ``data`` from git history (epoch seconds, committer time): ``changed`` the
    commit that last changed its file, ``added``/``email`` the one that added it (``once``: they
    are the same commit). Kept from the file: ``date_utc``, ``author``, and a ``modified_utc``
    written by the commit that last changed the file (it added the file, or the value is not older
    than the commit by more than STAMP_TOLERANCE); otherwise ``modified_utc`` is that commit's
    date. A missing ``date_utc`` is the adding commit's date, a missing author ``author_of(email)``
    (an account id, or None to leave it out). Returns what it filled (key -> the file's value,
    None: absent), or None."""
    filled = {}
    if not data.get("date_utc") and added:
        filled["date_utc"] = data.get("date_utc")
        data["date_utc"] = dates.fmt(datetime.fromtimestamp(added, timezone.utc))
    stamp = data.get("modified_utc")
    if changed and (not stamp or (not once and _epoch(stamp) < changed - STAMP_TOLERANCE)):
        filled["modified_utc"] = stamp
        data["modified_utc"] = dates.fmt(datetime.fromtimestamp(changed, timezone.utc))
    if not data.get("author") and email and author_of is not None:
        author = author_of(email)
        if author:
            filled["author"] = data.get("author")
            data["author"] = author
    return filled or None


def _epoch(stamp: str) -> int:
    try:
        return int(dates.read_local(stamp, timezone.utc).timestamp())
    except ValueError:
        return 0

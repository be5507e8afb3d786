"""Texts made once per record and kept beside the records cache: an event's own JSON text, and
the list text of a venue or organizer.

What a listed event shows is the same for every caller, host and commit, but for the records it
embeds (its categories, tags, venues and organizers: their text changes with them, and the
caller decides which it may see) and its author (an account's id: the accounts file may change
it). That *own text* (the event's list text with the stand-in URLs spelled neutrally,
``urls.neutral``, and a hole where each of those five values goes) is made by ``OwnTexts``
whenever the catalog writes the records cache (``storage.record_texts``); a list page that
presents an event for the first time fills the holes (``KeptTextPresenting.kept_own_text``, a
base of the presenter) instead of building the event, which was most of such a page's time, and
embeds a venue or organizer presented for the first time as its kept text. An event's kept text
starts with a line of its *facts*, what such a page reads of its data besides (its links,
password, stored lineage and an author its file names): the page never unpacks the event.

A kept text is used only by code that would make the same one: its ``context`` names this
module's version, a digest of the source of every module of the package that presenting imports
(found by following its imports: an upgrade that changes any of them, even a comment, retires
the kept texts, which the service then writes again), the JSON encoder's version and the site's
time zone. Each event's text is checked when it is made: filled with the values it was cut
from, it must give back the text it was cut from.
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import orjson

from calendar_service.domain.resources import EVENTS
from calendar_service.http.json_text import RawJSON, to_json
from calendar_service.http.urls import NEUTRAL_TOKEN, STAND_IN, TOKEN, StandInText, neutral

VERSION = 2
# what a list page reads of an event's data besides its own text (``KeptTextPresenting.written``)
FACT_KEYS = ("venue", "organizer", "categories", "tags", "global_id_lineage", "password")
KEPT_EVENTS_REMEMBERED = 100   # events a presenter remembers the kept text of (a page's worth is enough)
HOLE = "\x01"   # JSON text never holds it unescaped
HOLES = ("author", "categories", "tags", "venue", "organizer")   # in the order an event's keys come
# the records kept whole (resource -> the presenter's method): their list text, as an event embeds it
WHOLE = {"venues": "venue", "organizers": "organizer"}
# where the code deciding a kept text starts: it and every module of the package it imports count
CODE_ROOTS = ("calendar_service.http.presenters", "calendar_service.http.own_text")
_PACKAGE = Path(__file__).resolve().parent.parent
_FROM = re.compile(rb"^[ \t]*from[ \t]+(calendar_service[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+(calendar_service[\w.]*)", re.M)


def _module_path(name: str) -> Path | None:
    relative = Path(*name.split(".")[1:])
    for candidate in (_PACKAGE / relative / "__init__.py", (_PACKAGE / relative).with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def code_sources() -> dict[str, bytes]:
    """The source of ``CODE_ROOTS`` and of every module of the package they import, by name,
    followed through the import lines (read as text: ~6 ms, where parsing them took ~130)."""
    sources: dict[str, bytes] = {}
    pending = list(CODE_ROOTS)
    while pending:
        name = pending.pop()
        if name in sources:
            continue
        path = _module_path(name)
        sources[name] = source = path.read_bytes() if path is not None else b""
        for found in _FROM.finditer(source):
            module = found.group(1).decode()
            pending.append(module)   # and each name it imports, which may be a module
            pending.extend(f"{module}.{word.decode()}" for word in re.findall(rb"\w+", found.group(2)) if word != b"as")
        pending.extend(found.group(1).decode() for found in _IMPORT.finditer(source))
    return {name: source for name, source in sources.items() if source}


@functools.cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for name, source in sorted(code_sources().items()):
        digest.update(name.encode() + b"\0" + source + b"\0")
    return digest.hexdigest()[:20]


@functools.lru_cache(maxsize=8)
def context(site_tz) -> str:
    """What kept own texts must have been made with to be used by this code in a site of ``site_tz``."""
    zone = getattr(site_tz, "key", None) or str(site_tz)
    return f"own-text-{VERSION};code={_code_digest()};orjson={orjson.__version__};tz={zone}"


def _joined(parts: list[str], values: list[str]) -> str:
    out = [parts[0]] * (2 * len(parts) - 1)
    out[0::2] = parts
    out[1::2] = values
    return "".join(out)


def cut(built: dict) -> str | None:
    """The own text of an event's list object ``built`` (built with the stand-in URLs, its
    embedded records as text), or None when its keys are not where this module expects them."""
    holed = dict(built)
    values = []
    for key in HOLES:
        values.append(to_json(holed[key]))
        holed[key] = RawJSON(HOLE)
    parts = to_json(holed).split(HOLE)
    if len(parts) != len(HOLES) + 1 or _joined(parts, values) != to_json(built):
        return None
    return neutral(HOLE.join(parts))


def _with_facts(record, own: str) -> str | None:
    """An event's kept text: what a list page reads of its data (``FACT_KEYS``, and its author
    when the file names it) as JSON on the first line, its own text after; None when a value
    would not come back from JSON as it is."""
    data = record.data
    written = {key: data.get(key) for key in FACT_KEYS}
    if record.file_data().get("author"):   # else git history's, which follows the accounts file: read per use
        written["author"] = data["author"]
    facts = to_json({"id": record.id, "written": written})
    if orjson.loads(facts)["written"] != written or "\n" in facts:
        return None
    return facts + "\n" + own


def filled(own: str, values: list[str]) -> StandInText | None:
    """The presented text of a kept ``own`` text with ``values`` (JSON text, stand-in URLs
    spelled neutrally) in its holes, in the order of ``HOLES``; None when ``own`` has other holes."""
    parts = own.split(HOLE)
    if len(parts) != len(HOLES) + 1:
        return None
    return StandInText(_joined(parts, values), NEUTRAL_TOKEN)


class OwnTexts:
    """The records cache's maker of kept texts (see ``storage.record_texts``), as a service in
    ``site_tz`` presents them: the own text of every event but a password-protected or recurring
    one, and the list text of every venue and organizer but a protected one or one whose author
    comes from git history."""

    def __init__(self, site_tz):
        self.site_tz = site_tz
        self.context = context(site_tz)

    def maker(self, snapshot):
        """The function making the kept text of each record of ``snapshot`` (or None)."""
        from calendar_service.http.presenters import Presenter   # (which imports this module)

        builder = Presenter(snapshot, STAND_IN, self.site_tz).text_builder()

        def make(record) -> str | None:
            data = record.data
            if data.get("password"):
                return None
            if record.resource is EVENTS:
                own = None if data.get("recurrence") else cut(builder.event(record))
                return None if own is None else _with_facts(record, own)
            method = WHOLE.get(record.resource.name)
            if method is not None and "author" not in (record.filled or ()):   # (see ``Presenter._kept_embed``)
                return neutral(to_json(getattr(builder, method)(record)))
            return None
        return make


class KeptTextPresenting:
    """What a presenter (``http.presenters.Presenter``, a text builder) does with kept texts:
    an event's list text filled from its own text, a venue's or organizer's list text taken
    whole. Uses the presenter's links and embedded texts (``_embed``)."""

    def kept_own_text(self, record) -> StandInText | None:
        """A text builder's list text of event ``record`` from its own text kept with the records
        cache, its author and the records it embeds for this caller put in; None
        without one (the event is built)."""
        kept = self.kept_event(record) if record.resource is EVENTS else None
        if kept is None:
            return None
        links = self.links(record)
        embedded = [[self._neutral_embed(self.embedded_term, t) for t in links["categories"]],
                    [self._neutral_embed(self.embedded_term, t) for t in links["tags"]],
                    [self._neutral_embed(self.venue, v, False) for v in links["venue"]],
                    [self._neutral_embed(self.organizer, o, False) for o in links["organizer"]]]
        if None in embedded[0] or None in embedded[1] or None in embedded[2] or None in embedded[3]:
            return None   # (a protected record: never here, as such an event is built per caller)
        venues = embedded[2]
        listed = ["[" + ",".join(found) + "]" for found in embedded]
        if len(venues) == 1:
            listed[2] = venues[0]
        written = self.written(record)
        author = written["author"] if "author" in written else record.data.get("author")
        return filled(kept[1], [neutral(to_json(str(author or 0))), *listed])

    def kept_event(self, record) -> tuple[dict, str] | None:
        """(facts, own text) of event ``record`` kept with the records cache for this site, or
        None; remembered by the presenter (and its text builder) for the record."""
        found = self._kept_events.get(id(record))
        if found is not None and found[0] is record:
            return found[1]
        kept = None
        text = self._kept(record)
        if text is not None:
            head, newline, own = text.partition("\n")
            if newline:
                kept = orjson.loads(head)["written"], own
        if len(self._kept_events) >= KEPT_EVENTS_REMEMBERED:
            self._kept_events.clear()
        self._kept_events[id(record)] = (record, kept)
        return kept

    def written(self, record) -> dict:
        """What a list page reads of ``record``'s data (``FACT_KEYS``, and its author when its
        file names it): the event's kept facts when ``kept_event`` found them and its data is not
        at hand (a list page presenting it for the first time then never unpacks it), else its data."""
        if not record.unpacked:
            found = self._kept_events.get(id(record))
            if found is not None and found[0] is record and found[1] is not None:
                return found[1][0]
        return record.data

    def _neutral_embed(self, build, record, *args) -> str | None:
        """``_embed(build, record, *args)``'s text with the stand-ins spelled neutrally; None when
        it is not text (a protected record). Spelled per use (~0.3 us): kept beside the embedded
        text for the commit, it took memo room from the presented texts."""
        raw = self._embed(build, record, *args)
        return neutral(raw.text) if type(raw) is RawJSON else None

    def _kept(self, record) -> str | None:
        """``record``'s kept text for this presenter's site, when it is one of that record."""
        kept = record.kept_text(context(self.site_tz))
        return kept if kept is not None and kept.startswith(f'{{"id":{record.id},') else None

    def _kept_embed(self, build, record, args: tuple) -> str | None:
        """The list text of a venue or organizer kept with the records cache, with this
        process's stand-ins; None for other texts, or without one."""
        if args != (False,) or WHOLE.get(record.resource.name) != build.__name__ \
                or "author" in (record.filled or ()):
            return None   # (an author taken from git history depends on the accounts file)
        kept = self._kept(record)
        return kept.replace(NEUTRAL_TOKEN, TOKEN) if kept is not None else None

"""The JSON shapes of the original API (events, venues, organizers, terms), built from records.

Key order, key presence and value types follow the original exactly: events always carry
every key; venues and organizers drop empty values; terms come in two flavours (as served
by the term endpoints, and as embedded in an event).
"""
from __future__ import annotations

import json
from datetime import timezone

from calendar_service.domain.faults import FAULTS
from calendar_service.http import json_ld, occurrence_json, own_text
from calendar_service.http.json_text import RawJSON, to_json
from calendar_service.http.urls import STAND_IN, StandInText, Urls, with_urls
from calendar_service.http.occurrence_json import event_times
from calendar_service.http.series_json import recurrence_block
from calendar_service.domain import dates, permissions, record_files
from calendar_service.domain import text
from calendar_service.domain.snapshot import Snapshot
from calendar_service.domain.record import Record
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, VENUES


def listed_json(presenter, records) -> list:
    """The JSON text of each of ``records`` for a list, as ``RawJSON``; a record whose text cannot
    be made is left out (reported in ``FAULTS``), the list answers with the others."""
    out = []
    for record in records:
        text = FAULTS.guard(record, "its JSON", lambda: presenter.present_json(record))
        if text is not None:
            out.append(RawJSON(text))
    return out


REFS_REMEMBERED = 100   # records a presenter remembers the embedded records of
LINK_KEYS = ("venue", "organizer", "categories", "tags")


def _shows_stored_lineage(presenter: "Presenter", record: Record) -> bool:
    """Whether the presented ``record`` may hold a global_id_lineage beyond its own global_id:
    it or a venue or organizer it embeds has one stored (terms have no global id). Read from
    the records: scanning the text took as long as building an event's dates."""
    if presenter.written(record).get("global_id_lineage"):
        return True
    if record.resource is not EVENTS:
        return False
    links = presenter.links(record)
    return any(r.data.get("global_id_lineage") for r in links["venue"]) or \
        any(r.data.get("global_id_lineage") for r in links["organizer"])


def _image(value):
    """The original's image object of a URL (False without one)."""
    if not value:
        return False
    url = str(value)
    ext = url.rsplit("?", 1)[0].rsplit(".", 1)[-1].lower() if "." in url.rsplit("/", 1)[-1] else ""
    image = {"url": url}
    if ext:
        image["extension"] = ext
    return image


def _custom_fields(value) -> dict | list:
    """Custom fields as the original lists them: key -> label and value, the empty ones left out."""
    if not isinstance(value, dict):
        return []
    fields = {}
    for key, item in value.items():
        if isinstance(item, dict):
            label, val = item.get("label", key), item.get("value")
        else:
            label, val = key, item
        if val not in (None, ""):
            fields[str(key)] = {"label": str(label), "value": val if isinstance(val, str) else str(val)}
    return fields or []


# What a password-protected record shows to someone without its password (as WordPress blanks it).
# Only keys present are replaced, also inside embedded objects.
_BLANKED = {
    "description": "", "excerpt": "", "image": False, "all_day": None, "cost": "",
    "cost_details": {"currency_symbol": "", "currency_position": "", "currency_code": "", "values": []},
    "website": "", "show_map": None, "show_map_link": None, "hide_from_listings": None, "sticky": None,
    "featured": None, "categories": [], "tags": [], "venue": [], "organizer": [], "ticketed": None,
    "is_virtual": None, "virtual_url": "", "virtual_video_source": "",
    "attendance": {"total_attendees": None, "checked_in": None, "not_checked_in": None},
    "custom_fields": [], "email": "", "phone": "", "geo_lat": 0, "geo_lng": 0, "stateprovince": "", "zip": "",
    "province": "", "country": "", "city": "", "address": "",
}


def blank_protected(obj):
    """A copy of ``obj`` with the protected fields replaced, recursively."""
    if isinstance(obj, list):
        return [blank_protected(item) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for key, value in obj.items():
        if key in _BLANKED:
            replacement = _BLANKED[key]
            out[key] = dict(replacement) if isinstance(replacement, dict) else (
                list(replacement) if isinstance(replacement, list) else replacement)
        elif isinstance(value, (dict, list)) and key != "json_ld":
            out[key] = blank_protected(value)
        else:
            out[key] = value
    return out


def _all_unlocked(record) -> bool:
    return True


class Presenter(own_text.KeptTextPresenting):
    """Turns records of one snapshot into API objects.

    ``unlocked(record)`` says whether the caller may see a password-protected record in
    full (it gave the password, or may edit the record); others get it blanked. ``user`` is
    the caller: an event embeds only the venues and organizers it may see
    (``permissions.can_use``: never a draft or private one it could not read, never a
    trashed one); without a user, only published ones.
    """

    def __init__(self, snapshot: Snapshot, urls: Urls, site_tz, unlocked=_all_unlocked, user=None):
        self.snapshot = snapshot
        self.urls = urls
        self.site_tz = site_tz
        self.unlocked = unlocked
        self.user = user
        self.viewer = permissions.viewer(user)
        self._refs: dict = {}   # id of a record -> (the record, its links): asked several times per event
        # whether an event embeds its venues, organizers and terms as JSON text built once per
        # commit (``_embed``): only where the event's text is all that is wanted (``_lasting_entry``)
        self.embed_text = False
        self._embedded: dict = {}   # ``_embed``'s key -> (the record, its text) for this presenter's caller
        self._kept_events: dict = {}   # id of an event -> (the event, its kept facts and own text or None)
        self._builder: Presenter | None = None

    def refs(self, record: Record, key: str) -> list[Record]:
        """The records an event's ``key`` names that the caller may see embedded."""
        return self.links(record)[key]

    def links(self, record: Record) -> dict[str, list[Record]]:
        """``refs(record, key)`` of every key an event links by (venue, organizer, categories,
        tags), resolved together once per record: presenting an event asks for each several
        times."""
        found = self._refs.get(id(record))
        if found is not None and found[0] is record:
            return found[1]
        user, resolve, written = self.user, self.snapshot.refs_written, self.written(record)
        links = {key: [r for r in resolve(key, written.get(key)) if permissions.can_use(user, r)] for key in LINK_KEYS}
        if len(self._refs) >= REFS_REMEMBERED:   # a feed presents thousands of events: a page's worth is enough
            self._refs.clear()
        self._refs[id(record)] = (record, links)
        return links

    def text_builder(self) -> "Presenter":
        """The presenter building this one's remembered texts: the same caller and snapshot (the
        same links), stand-in URLs, embedded records as text. One per presenter (a page asks for
        each of its events)."""
        builder = self._builder
        if builder is None:
            builder = self._builder = Presenter(self.snapshot, STAND_IN, self.site_tz, self.unlocked, self.user)
            builder._refs, builder._embedded, builder._kept_events = self._refs, self._embedded, self._kept_events
            builder.embed_text = True
        return builder

    def _guard(self, record: Record, obj: dict) -> dict:
        if record.data.get("password") and not self.unlocked(record):
            guarded = blank_protected({k: v for k, v in obj.items() if k != "json_ld"})
            if "json_ld" in obj:
                guarded["json_ld"] = {k: v for k, v in obj["json_ld"].items()
                                      if k in ("@context", "@type", "name", "url", "startDate", "endDate")}
            return guarded
        return obj

    # ------------------------------------------------------------------------- shared

    def _post_dates(self, data: dict) -> dict:
        out = {}
        local = None
        for key in ("date", "modified"):
            utc = data.get(f"{key}_utc") or data.get("date_utc") or "1970-01-01 00:00:00"
            if local is None or utc != out["date_utc"]:   # a record never modified: converted once
                local = dates.fmt(dates.read_local(utc, timezone.utc).astimezone(self.site_tz))
            out[key] = local
            out[f"{key}_utc"] = utc
        return out

    def _global_ids(self, record: Record) -> dict:
        gid = self.urls.global_id(record.id)
        lineage = [gid] + [x for x in record.data.get("global_id_lineage") or [] if x != gid]
        return {"global_id": gid, "global_id_lineage": lineage}

    def present(self, record: Record, single: bool = False) -> dict:
        """The API object of any record (a new object: the caller may change it)."""
        if self.involves_password(record):
            return self._build(record, single)
        return json.loads(self.present_json(record, single))

    def present_json(self, record: Record, single: bool = False) -> str:
        """The JSON text of ``present(record, single)``.

        The text is remembered for the snapshot's commit (content is immutable per commit), once
        for every host: built with stand-in URLs (``urls.STAND_IN``), kept cut where they stand
        (``urls.StandInText``), the caller's put in by one join. One compact text per record and
        viewer, not a tree of objects per host. Records that involve a password are built for each call: what they show depends
        on the caller.
        """
        entry = self._entry(record, single)
        if entry is None:
            return to_json(self._build(record, single))
        text, lineage = entry
        if lineage:   # a stored lineage entry may equal the global_id at these URLs: listed once
            return to_json(with_urls(json.loads(text.stand_in()), self.urls))
        return text.with_urls(self.urls)

    def tag_text(self, record: Record, single: bool = False) -> str:
        """What an ETag of ``present_json(record, single)`` hashes: its text as remembered, the
        same for every host (``urls.neutral``); the text itself when a password is involved."""
        entry = self._entry(record, single)
        return self.present_json(record, single) if entry is None else entry[0].neutral()

    def _entry(self, record: Record, single: bool) -> tuple[StandInText, bool] | None:
        """(text with stand-in URLs, lineage to deduplicate) of ``record`` for this viewer, or None
        when a password is involved."""
        # an occurrence listed under its series' id is not the series (domain.occurrences)
        key = ("present", record.resource.name, record.id, single, self.viewer,
               getattr(record, "original_start", None))
        entry = self.snapshot.memo.get(key, False)
        if entry is False:
            entry = None
            if not single and key[-1] is None and record.resource is EVENTS and not record.unpacked:
                self.kept_event(record)   # its facts then answer what follows without unpacking it
            if not self.involves_password(record):
                entry = _lasting_entry(self, key, record, single)
            self.snapshot.memo.put(key, entry, len(entry[0]) if entry else 0)
        return entry

    def present_written(self, record: Record) -> dict:
        """The answer of a write: the object a following single read of the same id gives (a
        series with its ``recurrence`` block, an occurrence with its ``post_parent``), but
        ``json_ld``, which the original answers on single reads only."""
        if record.resource is EVENTS and record.data.get("recurrence"):
            return self.event(record, series_block=True)
        return self.present(record)

    def _build(self, record: Record, single: bool) -> dict:
        resource = record.resource
        if resource is EVENTS:
            return self.event(record, single)
        if resource is VENUES:
            return self.venue(record, single)
        if resource is ORGANIZERS:
            return self.organizer(record, single)
        return self.term(record)

    def involves_password(self, record: Record) -> bool:
        """Whether ``record`` or a record it embeds is password-protected (what it shows then
        depends on the caller's password)."""
        if self.written(record).get("password"):
            return True
        if record.resource is EVENTS and self.snapshot.any_protected_link():
            return any(r.data.get("password") for key in ("venue", "organizer") for r in self.refs(record, key))
        return False

    # ------------------------------------------------------------------------- events

    def event_zone(self, record: Record):
        return dates.zone(record.data.get("timezone"), self.site_tz)

    def event(self, record: Record, single: bool = False, series_block: bool = False) -> dict:
        data = record.data
        tz = self.event_zone(record)
        times, start, end = event_times(data, tz, getattr(record, "instants", None))
        cost_text, cost = text.cost_details(data.get("cost"), data.get("currency_symbol") or "",
                                            data.get("currency_position") or "", data.get("currency_code") or "")
        permalink = self.urls.permalink(EVENTS, record.slug)
        links = self.links(record)
        venues = [self._embed(self.venue, v, single) for v in links["venue"]]
        out = {
            "id": record.id,
            **self._global_ids(record),
            "author": str(data.get("author") or 0),
            "status": record.status,
            **self._post_dates(data),
            "url": permalink,
            "rest_url": self.urls.rest("events", record.id),
            "title": record.title.strip(),
            "description": text.autop(data.get("description")),
            "excerpt": text.autop(data.get("excerpt")),
            "slug": record.slug,
            "image": _image(data.get("image")),
            "all_day": bool(data.get("all_day")),
            **times,   # start_date ... timezone_abbr
            "cost": cost_text,
            "cost_details": cost,
            "website": permalink if data.get("website") is None else str(data.get("website")),
            "show_map": data.get("show_map", True) is not False,
            "show_map_link": data.get("show_map_link", True) is not False,
            "hide_from_listings": bool(data.get("hide_from_listings")),
            "sticky": bool(data.get("sticky")),
            "featured": bool(data.get("featured")),
            "categories": [self._embed(self.embedded_term, t) for t in links["categories"]],
            "tags": [self._embed(self.embedded_term, t) for t in links["tags"]],
            "venue": venues[0] if len(venues) == 1 else venues,
            "organizer": [self._embed(self.organizer, o, single) for o in links["organizer"]],
            "custom_fields": _custom_fields(data.get("custom_fields")),
        }
        if (single or series_block) and data.get("recurrence"):
            out["recurrence"] = recurrence_block(record, self.site_tz, out["rest_url"])
        if getattr(record, "series_id", 0) and record.id != record.series_id:
            out["post_parent"] = record.series_id   # an occurrence of a recurring series (domain.occurrences)
        if single:
            # a protected venue or organizer the caller has not unlocked is blanked where the
            # event embeds it, and left out of its schema.org description (the original put
            # its address, phone and e-mail there)
            out["json_ld"] = json_ld.event_ld(
                out, start, end, [self._embed(json_ld.venue_ld, v, self.urls) for v in self._shown(record, "venue")],
                [self._embed(json_ld.organizer_ld, o, self.urls) for o in self._shown(record, "organizer")])
        return self._guard(record, out)

    def _shown(self, record: Record, key: str) -> list[Record]:
        """The linked records of ``key`` whose own fields the caller may see."""
        return [r for r in self.refs(record, key) if not r.data.get("password") or self.unlocked(r)]

    def _embed(self, build, record: Record, *args):
        """``build(record, *args)``, the object an event embeds; with ``embed_text``, its JSON
        text instead, built once per commit (many events embed the same venue, organizer or
        term: building and encoding them was a large part of building an event). Not for a password-protected
        record (what it shows depends on the caller): an event embedding one is never kept."""
        if not self.embed_text or record.data.get("password"):
            return build(record, *args)
        key = ("embed", build.__name__, record.resource.name, record.id, *args)
        found = self._embedded.get(key)   # a page's events share venues and terms: asked here first
        if found is not None and found[0] is record:
            return found[1]
        text = self.snapshot.memo.get(key)
        if text is None:
            text = self._kept_embed(build, record, args) or to_json(build(record, *args))
            self.snapshot.memo.put(key, text, len(text))
        raw = RawJSON(text)
        if len(self._embedded) >= REFS_REMEMBERED:
            self._embedded.clear()
        self._embedded[key] = (record, raw)
        return raw

    # ------------------------------------------------------------------------- venues, organizers

    def venue(self, record: Record, single: bool = False) -> dict:
        data = record.data
        out = {
            "id": record.id,
            "author": str(data.get("author") or 0),
            "status": record.status,
            **self._post_dates(data),
            "url": self.urls.permalink(VENUES, record.slug),
            "venue": record.title,
            "description": text.autop(data.get("description")),
            "excerpt": text.autop(data.get("excerpt")),
            "slug": record.slug,
            "image": _image(data.get("image")),
        }
        for key in ("address", "city", "country", "province", "state", "zip", "phone", "website"):
            out[key] = "" if data.get(key) is None else str(data[key])
        region = data.get(record_files.region_key(data))  # written once, as state or province
        out["stateprovince"] = "" if region is None else str(region)
        if data.get("geo_lat") is not None and data.get("geo_lng") is not None:
            out["geo_lat"] = data["geo_lat"]
            out["geo_lng"] = data["geo_lng"]
        if single:
            out["json_ld"] = self._embed(json_ld.venue_ld, record, self.urls)   # the text an event's json_ld embeds
        out = {k: v for k, v in out.items() if v not in ("", "0", False, None, [], {})}
        out["show_map"] = data.get("show_map", True) is not False
        out["show_map_link"] = data.get("show_map_link", True) is not False
        out.update(self._global_ids(record))
        return self._guard(record, out)

    def organizer(self, record: Record, single: bool = False) -> dict:
        data = record.data
        out = {
            "id": record.id,
            "author": str(data.get("author") or 0),
            "status": record.status,
            **self._post_dates(data),
            "url": self.urls.permalink(ORGANIZERS, record.slug),
            "organizer": record.title,
            "description": text.autop(data.get("description")),
            "excerpt": text.autop(data.get("excerpt")),
            "slug": record.slug,
            "image": _image(data.get("image")),
            "phone": data.get("phone"),
            "website": data.get("website"),
            "email": data.get("email"),
        }
        if single:
            out["json_ld"] = self._embed(json_ld.organizer_ld, record, self.urls)
        out.update(self._global_ids(record))
        return self._guard(record, {k: v for k, v in out.items() if v not in ("", "0", False, None, [], {})})

    # ------------------------------------------------------------------------- terms

    def term_count(self, record: Record) -> int:
        key = "categories" if record.resource is CATEGORIES else "tags"
        return self.snapshot.published_count(key, record)

    def _term_urls(self, record: Record) -> dict:
        name = record.resource.name
        urls = {"self": self.urls.rest(name, record.id), "collection": self.urls.rest(name)}
        parent = self.snapshot.parent_id(record) if record.resource is CATEGORIES else 0
        if parent:
            urls["up"] = self.urls.rest(name, parent)
        return urls

    def term(self, record: Record) -> dict:
        """A term as the category and tag endpoints serve it."""
        data = record.data
        out = {
            "id": record.id,
            "count": self.term_count(record),
            "description": data.get("description") or "",
            "name": record.title,
            "slug": record.slug,
            "taxonomy": record.resource.taxonomy,
        }
        if record.resource is CATEGORIES:
            out["parent"] = self.snapshot.parent_id(record)
        out["meta"] = []
        out["url"] = self.urls.permalink(record.resource, record.slug)
        out["urls"] = self._term_urls(record)
        return out

    def embedded_term(self, record: Record) -> dict:
        """A term as embedded in an event (WordPress' raw term record)."""
        data = record.data
        return {
            "name": record.title,
            "slug": record.slug,
            "term_group": 0,
            "term_taxonomy_id": record.id,
            "taxonomy": record.resource.taxonomy,
            "description": data.get("description") or "",
            "parent": self.snapshot.parent_id(record) if record.resource is CATEGORIES else 0,
            "count": self.term_count(record),
            "filter": "raw",
            "id": record.id,
            "urls": self._term_urls(record),
        }


def _basis(presenter: "Presenter", record: Record) -> tuple:
    """What ``presenter``'s presented ``record`` shows: the record, the records it embeds for its caller
    (with how many of each kind) and the counts and parents of the terms among them."""
    parts: list = [record]
    if record.resource is EVENTS:
        links = presenter.links(record)
        for key in LINK_KEYS:
            found = links[key]
            parts.append(len(found))
            parts.extend(found)
            if key in ("categories", "tags"):
                for term in found:
                    parts.append(presenter.term_count(term))
                    parts.append(presenter.snapshot.parent_id(term) if term.resource is CATEGORIES else 0)
    elif record.resource.kind == "term":
        parts.append(presenter.term_count(record))
        parts.append(presenter.snapshot.parent_id(record) if record.resource is CATEGORIES else 0)
    return tuple(parts)


def _lasting_entry(presenter: "Presenter", key: tuple, record: Record, single: bool) -> tuple[StandInText, bool]:
    """The (text, lineage) entry of ``present_json``, taken from an earlier commit's when the
    record and everything its text shows of other records are still the same (after a write,
    the events a page lists mostly are): the records themselves (a changed file is a new
    record), the embedded terms' counts and parents."""
    if key[-1] is None and not single:   # an event's own text kept with the records cache: its links put in
        builder = presenter.text_builder()
        text = builder.kept_own_text(record)
        if text is not None:   # (cheaper than the check of ``lasting``: never kept there)
            return text, _shows_stored_lineage(builder, record)
    basis = _basis(presenter, record) if key[-1] is None else None   # an occurrence is made per request
    lasting = presenter.snapshot.lasting
    if basis is not None:
        found = lasting.get(key)
        if found is not None and len(found[0]) == len(basis) and all(
                a is b or (type(a) is int and a == b) for a, b in zip(found[0], basis)):
            return found[1]
    builder = presenter.text_builder()
    if occurrence_json.templated(record, single):   # its series' shared text, its own ids and dates put in
        found = occurrence_json.entry(presenter.snapshot.memo, presenter.viewer, record,
                                      lambda: builder._build(record, single), to_json,
                                      lambda: _shows_stored_lineage(builder, record),
                                      STAND_IN, builder.event_zone(record))
        if found is not None:
            return StandInText(found[0]), found[1]
    text = StandInText(to_json(builder._build(record, single)))
    entry = (text, _shows_stored_lineage(builder, record))
    if basis is not None:
        lasting.put(key, (basis, entry), len(entry[0]))
    return entry

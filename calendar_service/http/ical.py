"""iCalendar (RFC 5545) representations of events: VEVENTs written as text, line by line.

A presenter like ``presenters.Presenter``, but of records into VEVENTs: the HTTP layer
selects the events exactly as for the JSON list (or the single read) and hands the records
here. The same visibility rules apply: a password-protected event the caller has not
unlocked shows only its title, times and link (as the JSON list blanks it), and a
protected venue or organizer is left out.

Mapping (docs/api.md, "iCalendar feeds"): UID ``<id>@<site host>``, stable for the event's life;
DTSTAMP and LAST-MODIFIED the record's ``modified_utc`` (there is no METHOD, so DTSTAMP is
when the information was last revised, RFC 5545 3.8.7.2, which also keeps the output of a
commit byte-for-byte stable; the catalog takes it from git when a commit changed the file
without stamping it); SEQUENCE the seconds from 2000-01-01 UTC to that time, so it grows
with every change and is the same on every replica; events in an IANA zone carry TZID and one VTIMEZONE per zone
used, covering the events' dates; events in ``UTC`` or a ``UTC+5`` offset are written in
UTC; all-day events are VALUE=DATE with the exclusive end day.

A recurring series (``series_of``) is one VEVENT with DTSTART/DTEND of its first occurrence and
its RRULE, RDATE and EXDATE (``recurrence.to_ical_lines``), followed by one VEVENT per exception
with the same UID, its RECURRENCE-ID, its own times and the fields it overrides. Its times name
its zone with TZID even for a fixed ``UTC+5`` offset (written in UTC, BYDAY would be expanded on
UTC days), with a VTIMEZONE of that one offset (docs/api.md).

The VEVENTs are written as text (``ical_text``: the escaping, parameters, dates and folding
``icalendar`` would write, in its order of properties), not assembled as ``icalendar``
components, which cost most of a feed's time; the calendar's own lines and the VTIMEZONEs (a
few per feed) are still ``icalendar``'s. A feed writes each venue's, organizer's and
category's lines once, and is streamed in pieces of about ``CHUNK_BYTES``.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta, timezone
import unicodedata
from functools import lru_cache
from zoneinfo import ZoneInfo

from icalendar import Calendar, Timezone, TimezoneStandard, vDuration

from calendar_service.domain import dates, permissions, record_files, recurrence
from calendar_service.domain import text
from calendar_service.domain.faults import FAULTS
from calendar_service.domain.recurrence.record import RecurrenceError, series_of
from calendar_service.domain.snapshot import Snapshot
from calendar_service.http import ical_text
from calendar_service.http.ical_cache import VEVENTS, Spool
from calendar_service.http.urls import Urls
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS, ORGANIZERS

log = logging.getLogger(__name__)

MEDIA_TYPE = "text/calendar"
PRODID = "-//Calendar Service//Calendar Events REST API v1//EN"
REFRESH = timedelta(hours=1)  # a hint to subscribers (REFRESH-INTERVAL, X-PUBLISHED-TTL)

# post status -> VEVENT STATUS; scheduled (future) posts are not public yet
STATUS = {"publish": "CONFIRMED", "private": "CONFIRMED", "future": "TENTATIVE", "draft": "TENTATIVE",
          "pending": "TENTATIVE", "trash": "CANCELLED"}
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu", "GMT",
              "Etc/GMT", "Etc/GMT0", "Etc/GMT+0", "Etc/GMT-0", "Etc/Greenwich", "Greenwich", "GMT0", "GMT+0", "GMT-0"}
_END = b"END:VCALENDAR\r\n"
CHUNK_BYTES = 65536   # a streamed feed's pieces: VEVENTs are joined up to this size


def _utc(text_value) -> datetime | None:
    """A stored UTC ``YYYY-MM-DD HH:MM:SS`` as an aware datetime; None when empty or unreadable."""
    try:
        return dates.read_local(text_value, timezone.utc) if text_value else None
    except ValueError:
        return None


SEQUENCE_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_UNSEEN = object()


def sequence(modified: datetime) -> int:
    """The SEQUENCE of an event last modified at ``modified``: seconds since 2000-01-01 UTC (0
    before), which only grows as the event changes and fits RFC 5545's integer until 2068."""
    return max(0, int((modified - SEQUENCE_EPOCH).total_seconds()))


def tzid_zone(tz) -> ZoneInfo | None:
    """The zone to name with TZID, or None when times are better written in UTC (UTC itself,
    fixed ``UTC+5`` offsets, which have no IANA identifier)."""
    if isinstance(tz, ZoneInfo) and tz.key not in _UTC_NAMES:
        return tz
    return None


@lru_cache(maxsize=256)
def _vtimezone(key: str, first: date, last: date) -> bytes:
    """The VTIMEZONE of zone ``key`` with its transitions between ``first`` and ``last``: an IANA
    zone, or a fixed offset such as ``UTC+5`` (which a series names with TZID, see
    ``recurrence.tzid``), described by one STANDARD observance valid from 1970 on."""
    tz = dates.zone(key, timezone.utc)
    if isinstance(tz, ZoneInfo):
        return Timezone.from_tzinfo(tz, tzid=key, first_date=first, last_date=last).to_ical()
    offset = tz.utcoffset(None)
    vtz = Timezone()
    vtz.add("tzid", key)
    standard = TimezoneStandard()
    standard.add("dtstart", datetime(1970, 1, 1))
    standard.add("tzoffsetfrom", offset)
    standard.add("tzoffsetto", offset)
    standard.add("tzname", key)
    vtz.add_component(standard)
    return vtz.to_ical()


def _quoted_tzid(series, lines: list[str]) -> list[str]:
    """``lines`` with the series' TZID parameter quoted when its name holds a colon, semicolon or
    comma (a ``UTC-3:30`` offset), as RFC 5545's parameter values must be."""
    key = recurrence.tzid(series.tz)
    if key is None or not any(c in key for c in ':;,'):
        return lines
    return [line.replace(f";TZID={key}:", f';TZID="{key}":', 1) for line in lines]


_EPOCH_STAMP = ("19700101T000000Z", 0)   # an event with neither time stored (SEQUENCE 0 before 2000)


class IcalPresenter:
    """Turns event records of one snapshot into VEVENTs and calendars.

    ``unlocked(record)`` says whether the caller may see a password-protected record in
    full, as for the JSON presenter; ``user`` is the caller: only the venues, organizers
    and categories it may see embedded (``permissions.can_use``) are written.
    """

    def __init__(self, snapshot: Snapshot, urls: Urls, site_tz, unlocked, user=None):
        self.snapshot = snapshot
        self.urls = urls
        self.site_tz = site_tz
        self.unlocked = unlocked
        self.user = user
        self._host_path = urls.host_path
        self._written: dict[int, tuple[Record, object]] = {}   # id -> (a linked record, its lines)
        self._usable: dict[int, tuple[Record, bool]] = {}      # id -> (a linked record, may it be embedded)
        self._zone_of: dict[str | None, object] = {}           # an event's ``timezone`` -> its tzinfo
        self._stamps: dict[str, tuple[str, int] | None] = {}   # a stored UTC time -> (its value, SEQUENCE)

    def refs(self, record: Record, key: str) -> list[Record]:
        """The records an event's ``key`` names that the caller may see embedded."""
        out = []
        for linked in self.snapshot.refs(record, key):
            kept = self._usable.get(id(linked))
            if kept is None or kept[0] is not linked:
                kept = self._usable[id(linked)] = (linked, permissions.can_use(self.user, linked))
            if kept[1]:
                out.append(linked)
        return out

    def links(self, record: Record) -> tuple[list[Record], list[Record], list[Record]]:
        """The categories, venues and organizers of an event the caller may see embedded."""
        return self.refs(record, "categories"), self.refs(record, "venue"), self.refs(record, "organizer")

    def _lines_of(self, linked: Record, write):
        """``write(linked)``, once per linked record (a venue, an organizer, a category) in a feed."""
        kept = self._written.get(id(linked))
        if kept is not None and kept[0] is linked:
            return kept[1]
        lines = write(linked)
        self._written[id(linked)] = (linked, lines)
        return lines

    # ------------------------------------------------------------------------- calendar

    def calendar_name(self) -> str:
        return f"Events - {self.urls.host_path}"

    def _shell(self) -> tuple[bytes, bytes]:
        """The calendar's opening lines (its properties) and its closing line."""
        cal = Calendar()
        cal.add("prodid", PRODID)
        cal.add("version", "2.0")
        cal.add("calscale", "GREGORIAN")
        cal.add("x-wr-calname", self.calendar_name())
        cal.add("name", self.calendar_name())
        cal.add("x-wr-caldesc", f"Events of {self.urls.site}")
        cal.add("x-wr-timezone", getattr(self.site_tz, "key", None) or str(self.site_tz))
        cal.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
        cal.add("x-published-ttl", vDuration(REFRESH))
        whole = cal.to_ical()
        return whole[:-len(_END)], _END

    def feed(self, events: Iterable[Record]) -> Iterator[bytes]:
        """The VCALENDAR of ``events`` (in the given order) as chunks of bytes, to stream.

        VTIMEZONEs come first, one per zone used, covering the events' dates; then one
        VEVENT per event. An event that cannot be written is logged and left out, so the
        calendar stays well-formed once streaming has begun.

        One pass over the events: each one's data is made once (a feed's events are more than
        the records that hold their data at once, ``record.RECENT``), its zone noted and its
        VEVENT written to a ``Spool`` (memory, then a temporary file) until every zone is known;
        then the VTIMEZONEs and the spooled VEVENTs in pieces. The calendar's head (which depends
        on no event) is sent first, at once.
        """
        head, tail = self._shell()
        spans: dict[str, tuple[date, date]] = {}
        spool = Spool()
        cache, context = VEVENTS, (self.urls, self.site_tz)
        kept: list = []
        kept_bytes, block = 0, cache.block_bytes()
        yield head   # at once: the client knows the calendar is coming
        try:
            for record in events:
                span = self._zone_span(record)
                if span is not None:
                    key, first, last = span
                    if key in spans:
                        first, last = min(first, spans[key][0]), max(last, spans[key][1])
                    spans[key] = (first, last)
                try:
                    vevent = self.vevent(record, kept)
                except Exception as exc:   # logged once per version of the record, listed by /status
                    FAULTS.report(record, "its VEVENT", exc)
                    continue
                spool.write(vevent)
                if kept and kept[-1][2] is vevent:
                    kept_bytes += len(vevent)
                    if kept_bytes >= block:   # kept a block at a time
                        cache.put_many(context, kept)
                        kept, kept_bytes = [], 0
            cache.put_many(context, kept)
            # a little margin so the transitions around the events are described too
            zones = b"".join([_vtimezone(key, a.replace(month=1, day=1), date(b.year + 1, 1, 1))
                              for key, (a, b) in sorted(spans.items())])
            last = zones   # (never an empty piece: a server may take it for the end of the body)
            for piece in spool.pieces(CHUNK_BYTES):
                if last:
                    yield last
                last = piece
            yield last + tail
        finally:
            spool.close()

    def _zone_span(self, record: Record) -> tuple[str, date, date] | None:
        """The zone an event uses (an IANA zone; for a series also a fixed offset, which it names
        with TZID) with the first and last day it must cover, or None. A series covers its first
        occurrence to its last one or, when open-ended, the recurrence horizon."""
        try:
            series = self.series(record)
            if series is not None:
                if series.all_day or recurrence.tzid(series.tz) is None:
                    return None
                return (recurrence.tzid(series.tz), *self._series_span(record, series))
            zone = tzid_zone(self.event_zone(record))
            data = record.data
            if zone is None or data.get("all_day"):
                return None
            return zone.key, date.fromisoformat(str(data["start_date"])[:10]), date.fromisoformat(str(data["end_date"])[:10])
        except Exception:
            return None  # its VEVENT fails too, and is left out (see feed)

    def _series_span(self, record: Record, series) -> tuple[date, date]:
        """The first and last local day of a series' occurrences up to the default horizon (kept on
        the record for the day: the horizon moves daily)."""
        today = datetime.now(timezone.utc).date()
        kept = record.remembered("ical_span")
        if kept is not None and kept[0] == today:
            return kept[1]
        horizon = recurrence.horizon_end(datetime.now(timezone.utc), recurrence.DEFAULT_HORIZON_MONTHS)
        first = last = series.start.date()
        for occ in recurrence.occurrences(series, horizon_end=horizon):
            first, last = min(first, occ.start.date()), max(last, occ.end.date())
        record.remember("ical_span", (today, (first, last)))
        return first, last

    # ------------------------------------------------------------------------- events

    def event_zone(self, record: Record):
        name = record.data.get("timezone")
        if not isinstance(name, str):
            return dates.zone(name, self.site_tz)
        zone = self._zone_of.get(name)
        if zone is None:
            zone = self._zone_of[name] = dates.zone(name, self.site_tz)   # (an unknown one raises each time)
        return zone

    def series(self, record: Record):
        """The series of a recurring event record, or None (a single event). A file whose
        recurrence cannot be read is written as the single event it stores (its first occurrence)."""
        try:
            return series_of(record, self.site_tz)
        except RecurrenceError:
            return None

    def exceptions(self, record: Record, series) -> list[tuple[datetime, Record]]:
        """The exceptions of a series as (original start, the event record with that occurrence's
        overridden fields)."""
        out = []
        for original, overrides in sorted(series.exceptions.items()):
            data = {**record.data, **overrides}
            for key in ("categories", "tags", "venue", "organizer"):
                if key in overrides and not isinstance(data[key], (list, tuple)):
                    data[key] = [] if data[key] is None else [data[key]]   # a lone slug or id
            out.append((original, Record(record.resource, data, record.path)))
        return out

    def vevent(self, record: Record, kept: list | None = None) -> bytes:
        """The VEVENT of an event record, as bytes; for a series, its VEVENT (RRULE, EXDATE,
        RDATE) followed by one VEVENT per exception (same UID, its RECURRENCE-ID).

        Kept in ``ical_cache.VEVENTS`` (compressed, bounded in bytes) with the referenced venues,
        organizers and categories it was built from: it is reused while the record and those are
        the same objects. Not kept when a password is involved, since what those show depends on
        the caller. With ``kept``, what is to be kept is added to it, as (record, refs, vevent), for
        the caller to keep (``VeventCache.put_many``).
        """
        series = self.series(record)
        exceptions = self.exceptions(record, series) if series is not None else []
        links = self.links(record)
        refs = tuple([*links[0], *links[1], *links[2]])
        if exceptions:
            refs += tuple(r for _, e in exceptions for group in self.links(e) for r in group)
        context = (self.urls, self.site_tz)
        cached = VEVENTS.get(record, context, refs)
        if cached is not None:
            return cached
        if series is None:
            out = _vevent(self.event_lines(record, links=links)).encode("utf-8")
        else:
            out = self._series_vevents(record, series, exceptions, links)
        if not record.data.get("password") and not any(r.data.get("password") for r in refs):
            if kept is None:
                VEVENTS.put(record, context, refs, out)
            else:
                kept.append((record, refs, out))
        return out

    def _series_vevents(self, record: Record, series, exceptions: list[tuple[datetime, Record]], links) -> bytes:
        """A series as iCalendar: DTSTART/DTEND of its first occurrence with its RRULE, RDATE and
        EXDATE lines (``recurrence.to_ical_lines``), then each exception as a VEVENT with the same
        UID, its RECURRENCE-ID, its own times and the fields it overrides. The series' lines come
        first, then the event's (in icalendar's order)."""
        lines = recurrence.to_ical_lines(series)
        times = [lines.dtstart] + ([lines.dtend] if series.all_day or series.duration > timedelta(0) else [])
        out = [_vevent(_quoted_tzid(series, times + lines.lines()[2:]) + self.event_lines(record, times=False, links=links))]
        for original, overridden in exceptions:
            occ = recurrence.occurrence_at(series, original)
            if occ is None:
                continue  # a checked file names occurrences only
            out.append(_vevent(_quoted_tzid(series, [lines.recurrence_ids[original], *_occurrence_times(series, occ)])
                               + self.event_lines(overridden, times=False)))
        return "".join(out).encode("utf-8")

    def uid(self, record: Record) -> str:
        return f"{record.id}@{self._host_path}"

    def event_lines(self, record: Record, times: bool = True, links=None) -> list[str]:
        """The content lines (unfolded) of an event record's VEVENT, without DTSTART/DTEND when not
        ``times``, in icalendar's order of properties (``ical_text.ORDER``, then by name); ``links``:
        its ``links`` when known."""
        data = record.data
        status = record.status
        open_ = not data.get("password") or self.unlocked(record)
        stamp, number = self._stamp(data.get("modified_utc")) or self._stamp(data.get("date_utc")) or _EPOCH_STAMP
        lines = [f"SUMMARY:{ical_text.text(record.title.strip())}"]
        if times:
            self._time_lines(lines, record)
        lines += (f"DTSTAMP:{stamp}", f"UID:{ical_text.text(self.uid(record))}", f"SEQUENCE:{number}")
        # the others by name: CATEGORIES CLASS CONTACT CREATED DESCRIPTION GEO LAST-MODIFIED
        # LOCATION ORGANIZER STATUS URL
        organizer = place = contacts = description = None
        if open_:
            categories, venues, organizers = links or self.links(record)
            if categories:
                lines.append("CATEGORIES:" + ",".join([self._lines_of(t, _category) for t in categories]))
            organizer, contacts = self._organizer_lines(organizers)
            description = text.plain_text(data.get("description") or data.get("excerpt"))
            place = self._place_lines(venues)
        lines.append("CLASS:" + ("PRIVATE" if status == "private" else ("PUBLIC" if open_ else "CONFIDENTIAL")))
        if contacts:
            lines += contacts
        created = self._stamp(data.get("date_utc"))
        if created is not None:
            lines.append(f"CREATED:{created[0]}")
        if description:
            lines.append(f"DESCRIPTION:{ical_text.text(description)}")
        location, geo = place or (None, None)
        if geo is not None:
            lines.append(geo)
        lines.append(f"LAST-MODIFIED:{stamp}")
        if location is not None:
            lines.append(location)
        if organizer is not None:
            lines.append(organizer)
        lines.append("STATUS:" + STATUS.get(status, "CONFIRMED"))
        lines.append("URL:" + self.urls.permalink(EVENTS, record.slug))
        return lines

    def _stamp(self, stored) -> tuple[str, int] | None:
        """A stored UTC time as a DATE-TIME value and its SEQUENCE number; None when empty or
        unreadable (many events share a few: made once per feed)."""
        if not isinstance(stored, str):
            moment = _utc(stored)
            return None if moment is None else (ical_text.utc(moment), sequence(moment))
        found = self._stamps.get(stored, _UNSEEN)
        if found is _UNSEEN:
            moment = _utc(stored)
            found = self._stamps[stored] = None if moment is None else (ical_text.utc(moment), sequence(moment))
        return found

    def _time_lines(self, lines: list[str], record: Record) -> None:
        """DTSTART and DTEND (none for a zero-length event) of a single event, added to ``lines``."""
        data = record.data
        start_text, end_text = str(data["start_date"]), str(data["end_date"])
        if data.get("all_day"):
            first = date.fromisoformat(start_text[:10])
            last = date.fromisoformat(end_text[:10])
            # stored ends are the last day at 23:59:59; an end at midnight already is the next day
            after = last if end_text[11:] == "00:00:00" and last > first else last + timedelta(days=1)
            lines.append(f"DTSTART;VALUE=DATE:{ical_text.day(first)}")
            lines.append(f"DTEND;VALUE=DATE:{ical_text.day(max(after, first + timedelta(days=1)))}")
            return
        tz = self.event_zone(record)
        instants = getattr(record, "instants", None)   # an occurrence's: its end may be in a repeated hour
        if instants is None:
            start, end = dates.event_span(start_text, end_text, tz)
        else:
            start, end = (moment.astimezone(tz) for moment in instants)
        # a local time a client would read as another instant (the second 01:30 of a night the
        # clocks go back) is written in UTC
        # (only a time with fold=1 can be read otherwise)
        if tzid_zone(tz) is None or any(m.fold and m.replace(fold=0).astimezone(timezone.utc) != m.astimezone(timezone.utc)
                                         for m in (start, end)):
            start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
        lines.append(ical_text.moment("DTSTART", start))
        if end.astimezone(timezone.utc) > start.astimezone(timezone.utc):
            lines.append(ical_text.moment("DTEND", end))  # RFC 5545: DTEND must be later; a zero-length event has none

    def _open(self, record: Record) -> bool:
        return not record.data.get("password") or self.unlocked(record)

    def _place_lines(self, venues: list[Record]) -> tuple[str, str | None] | None:
        """The LOCATION line of an event's first venue the caller may see, and its GEO line (or None)."""
        for venue in venues:
            if self._open(venue):
                return self._lines_of(venue, _place)
        return None

    def _organizer_lines(self, organizers: list[Record]) -> tuple[str | None, list[str]]:
        """RFC 5545 allows one ORGANIZER: the first organizer. The others become CONTACTs
        (ATTENDEE would make clients treat a published event as a meeting invitation).
        The ORGANIZER line (or None) and the CONTACT lines."""
        first, contacts = None, []
        for organizer in organizers:
            if not self._open(organizer):
                continue
            as_organizer, as_contact = self._lines_of(organizer, self._organizer)
            if first is None:
                first = as_organizer
            else:
                contacts.append(as_contact)
        return first, contacts

    def _organizer(self, organizer: Record) -> tuple[str, str]:
        """An organizer's ORGANIZER line (as an event's first organizer) and CONTACT line (as another)."""
        data = organizer.data
        email = str(data.get("email") or "").strip()
        if not (email.isascii() and email.isprintable() and " " not in email) and \
                any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in email):
            email = ""  # an address edited by hand with a line break: never break the event
        address = f"mailto:{email}" if email else self.urls.permalink(ORGANIZERS, organizer.slug)
        details = [organizer.title, email, str(data.get("phone") or "").strip()]
        return (f"ORGANIZER;CN={ical_text.cn(organizer.title)}:{address}",
                "CONTACT:" + ical_text.text(", ".join(d for d in details if d)))


def _category(category: Record) -> str:
    return ical_text.text(category.title)


def _place(venue_record: Record) -> tuple[str, str | None]:
    """A venue's LOCATION line and GEO line (None without coordinates)."""
    venue = venue_record.data
    region = venue.get(record_files.region_key(venue))
    parts = [venue_record.title, venue.get("address"), venue.get("city"), region, venue.get("zip"), venue.get("country")]
    parts = [str(p).strip() for p in parts if p not in (None, "") and str(p).strip()]
    location = "LOCATION:" + ical_text.text(", ".join(dict.fromkeys(parts)))
    geo = None
    if venue.get("geo_lat") is not None and venue.get("geo_lng") is not None:
        geo = f"GEO:{float(venue['geo_lat'])};{float(venue['geo_lng'])}"
    return location, geo


def _vevent(lines: list[str]) -> str:
    """One VEVENT of content ``lines`` (unfolded), folded."""
    return "BEGIN:VEVENT\r\n" + ical_text.content(lines) + "END:VEVENT\r\n"


def _occurrence_times(series, occ) -> list[str]:
    """DTSTART (and DTEND unless zero-length) of an occurrence, in the forms of the series' lines:
    dates for an all-day series (DTEND the day after the last day), else its zone's TZID, or UTC."""
    # fold=0 is how a client reads a local time; replace() would keep the fold of the second 01:30
    start, end = occ.start.replace(tzinfo=None, fold=0), occ.end.replace(tzinfo=None, fold=0)
    if series.all_day:
        first, last = start.date(), end.date()
        after = last if end.time() == datetime.min.time() and last > first else last + timedelta(days=1)
        after = max(after, first + timedelta(days=1))
        return [f"DTSTART;VALUE=DATE:{first:%Y%m%d}", f"DTEND;VALUE=DATE:{after:%Y%m%d}"]
    key = recurrence.tzid(series.tz)
    stamp = []
    for name, local, utc in (("DTSTART", start, occ.utc_start), ("DTEND", end, occ.utc_end)):
        # a local time a client would read as another instant (the second 01:30 of a night the
        # clocks go back: an end kept in elapsed time can fall there) is written in UTC
        if key is None or local.replace(tzinfo=series.tz).astimezone(timezone.utc).replace(tzinfo=None) != utc:
            stamp.append(f"{name}:{utc:%Y%m%dT%H%M%SZ}")
        else:
            stamp.append(f"{name};TZID={key}:{local:%Y%m%dT%H%M%S}")
    return stamp if occ.utc_end > occ.utc_start else stamp[:1]

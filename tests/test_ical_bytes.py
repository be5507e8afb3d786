"""The bytes of iCalendar feeds, pinned: a varied calendar's feeds compared byte for byte with
files kept in ``tests/samples/ical/``.

The feeds are written as text, line by line (``http/ical_text.py``); the pinned files were
written by the earlier builder, which assembled ``icalendar`` components, so this is the check
that both write the same bytes: all-day and timed events in several zones (with their VTIMEZONEs,
a night the clocks go back), fixed offsets, recurring series with EXDATE, RDATE and exceptions,
venues, organizers and categories (escaping of ``,;\\`` and line breaks, quoting of parameters,
non-ASCII text, long folded lines), password-protected events, venues and organizers, drafts and
private events as an editor sees them, single reads and pages. Every feed is also parsed back.

The dates are fixed and every feed names its window, so the files do not age. To write them again
after an intended change of the output: ``CALENDAR_WRITE_ICAL_SAMPLES=1 python3 -m pytest
tests/test_ical_bytes.py`` (then review the diff).
"""
from __future__ import annotations

import os
from pathlib import Path

import icalendar
import pytest

from calendar_service.domain import record_files
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, VENUES

SAMPLES = Path(__file__).parent / "samples" / "ical"
WRITE = os.environ.get("CALENDAR_WRITE_ICAL_SAMPLES") == "1"
STAMPS = {"date_utc": "2026-02-03 04:05:06", "modified_utc": "2026-03-04 05:06:07"}
LONG_TEXT = ("Une soirée à l'opéra: «Carmen», acte I; acte II\\III, puis dîner — réservation conseillée. "
             "Ünïcödé façade 😀 " * 4)
HTML = ("<p>Bring <b>snacks</b> &amp; friends, chairs; and a \\ backslash.</p>\n"
        "<ul><li>doors 7pm</li><li>no dogs</li></ul>\r\n<p>Line\nbreaks\r\nof all kinds</p>")


class Calendar:
    """Record files written by hand (fixed ids and dates) and committed at once."""

    def __init__(self, repo):
        self.repo = repo
        self.files: dict[str, bytes] = {}

    def put(self, resource, data: dict) -> int:
        self.files[record_files.path_for(resource, data["slug"])] = record_files.dump(resource, data)
        return data["id"]

    def category(self, tid: int, name: str) -> int:
        return self.put(CATEGORIES, {"id": tid, "name": name, "slug": f"category-{tid}"})

    def venue(self, vid: int, name: str, **fields) -> int:
        return self.put(VENUES, {"id": vid, "venue": name, "slug": f"venue-{vid}", "status": "publish",
                                 **STAMPS, **fields})

    def organizer(self, oid: int, name: str, **fields) -> int:
        return self.put(ORGANIZERS, {"id": oid, "organizer": name, "slug": f"organizer-{oid}", "status": "publish",
                                     **STAMPS, **fields})

    def event(self, eid: int, start: str, end: str, tz: str | None = "UTC", **fields) -> int:
        data = {"id": eid, "title": f"Event {eid}", "slug": f"event-{eid}", "status": "publish", "author": 1,
                **STAMPS, "start_date": start, "end_date": end, **fields}
        if tz is not None:
            data["timezone"] = tz
        return self.put(EVENTS, data)

    def commit(self) -> None:
        self.repo.commit_files(self.files, "Add")
        self.files = {}


@pytest.fixture
def app(make_app):
    return make_app(site_timezone="America/Chicago")


@pytest.fixture
def calendar(repo, app):
    c = Calendar(repo)
    music, jazz, odd = c.category(1, "Music"), c.category(2, "Jazz, Blues; Soul"), c.category(3, "Fête\\Été")
    hall = c.venue(11, "Riverside Hall", address="12 Quay Street", city="Springfield", stateprovince="IL",
                   zip="62701", country="United States", geo_lat=39.799, geo_lng=-89.644)
    bare = c.venue(12, "Back Room")
    secret = c.venue(13, "Hidden Loft", address="1 Secret Way", password="loft")
    odd_venue = c.venue(14, "Salle «Pleyel», 2ᵉ étage; côté cour", address="252 rue du Faubourg Saint-Honoré",
                        city="Paris", zip="75008", country="France", geo_lat=48.8769, geo_lng=2.3007)
    alice = c.organizer(21, "Alice Arts", email="alice@example.org", phone="555-0100")
    bob = c.organizer(22, "Bob Noemail")
    quoted = c.organizer(23, 'Zoë "Zed" O\'Neil: Tours, Talks; ^Co', email="zoe@example.org", phone="+33 1 23")
    broken = c.organizer(24, "Broken Address", email="bro ken@example.org")
    hidden = c.organizer(25, "Hidden Host", email="hidden@example.org", password="host")
    long_name = c.organizer(26, "The Very Long Named Philharmonic Society of Greater Springfield and Its Surroundings",
                            email="philharmonic-society-of-greater-springfield@example.org")
    c.event(101, "2027-03-03 09:00:00", "2027-03-03 10:00:00", "UTC", categories=[music], venue=[hall],
            organizer=[alice], description=HTML, title="Plain UTC")
    # the night the clocks go back in Paris (2027-10-31): an end at the second 02:30 is written in UTC
    c.event(102, "2027-10-30 22:00:00", "2027-10-31 02:30:00", "Europe/Paris", categories=[music, jazz],
            venue=[bare], organizer=[bob, alice, quoted])
    c.event(103, "2027-03-13 23:00:00", "2027-03-14 04:00:00", "America/New_York", venue=[hall])
    c.event(104, "2027-03-03 19:00:00", "2027-03-03 21:00:00", "Asia/Tokyo", categories=[jazz, odd],
            title="Tokyo, night; \\ jazz", excerpt="<p>Only an excerpt</p>")
    c.event(105, "2027-03-03 08:00:00", "2027-03-03 09:30:00", "UTC+5:30", organizer=[broken])
    c.event(106, "2027-03-04 18:00:00", "2027-03-04 19:00:00", None, title=LONG_TEXT, description=LONG_TEXT,
            venue=[odd_venue], organizer=[long_name, hidden])
    c.event(107, "2027-03-03 00:00:00", "2027-03-03 23:59:59", "Europe/Paris", all_day=True)
    c.event(108, "2027-03-05 00:00:00", "2027-03-07 23:59:59", "America/New_York", all_day=True, categories=[music])
    c.event(109, "2027-03-08 00:00:00", "2027-03-09 00:00:00", "Europe/Paris", all_day=True)
    c.event(110, "2027-03-03 12:00:00", "2027-03-03 12:00:00", "Europe/Berlin")
    c.event(111, "2027-03-03 15:00:00", "2027-03-03 16:00:00", "Europe/Paris", password="s3cret", description=HTML,
            venue=[hall], organizer=[alice], categories=[music])
    c.event(112, "2027-03-03 17:00:00", "2027-03-03 18:00:00", "UTC", venue=[secret], organizer=[hidden, alice])
    c.event(113, "2027-03-03 11:00:00", "2027-03-03 12:00:00", "UTC", status="draft", title="A draft")
    c.event(114, "2027-03-03 11:30:00", "2027-03-03 12:30:00", "Australia/Sydney", status="private",
            title="Private")
    c.event(115, "2027-03-03 11:00:00", "2027-03-03 12:00:00", "UTC", hide_from_listings=True)
    c.event(116, "2027-03-03 13:00:00", "2027-03-03 14:00:00", "America/Argentina/Buenos_Aires",
            title="  Padded title  ", description="Tab\there, line\nbreak, ;semicolon, \\back")
    # recurring series
    c.event(201, "2027-01-05 19:00:00", "2027-01-05 21:00:00", "Europe/Berlin", title="Choir rehearsal",
            recurrence=["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270629T170000Z",
                        "EXDATE;TZID=Europe/Berlin:20270119T190000,20270126T190000",
                        "RDATE;TZID=Europe/Berlin:20270102T110000"],
            exceptions={"2027-02-02 19:00:00": {"title": "Choir rehearsal with the orchestra",
                                                "start_date": "2027-02-02 18:00:00",
                                                "end_date": "2027-02-02 22:00:00", "venue": ["venue-11"]},
                        "2027-02-09 19:00:00": {"description": "<p>Bring <i>scores</i>, pencils</p>",
                                                "categories": "category-2", "organizer": ["organizer-23"]}},
            venue=[bare], categories=[music])
    c.event(202, "2027-01-01 00:00:00", "2027-01-02 23:59:59", "Australia/Sydney", all_day=True,
            title="Market", recurrence=["RRULE:FREQ=MONTHLY;BYMONTHDAY=1;UNTIL=20271201",
                                        "EXDATE;VALUE=DATE:20270301", "RDATE;VALUE=DATE:20270315"],
            exceptions={"2027-02-01": {"title": "Moved market", "start_date": "2027-02-03"},
                        "2027-04-01": {"title": "Market with music"}})
    c.event(203, "2027-03-01 10:00:00", "2027-03-01 11:00:00", "UTC+5", title="Offset series",
            recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO,TH;COUNT=10"])
    c.event(204, "2027-03-01 10:00:00", "2027-03-01 11:00:00", "UTC-3:30", title="Quoted zone series",
            recurrence=["RRULE:FREQ=DAILY;COUNT=3"],
            exceptions={"2027-03-02 10:00:00": {"start_date": "2027-03-02 12:00:00",
                                                "end_date": "2027-03-02 13:00:00"}})
    c.event(205, "2027-10-31 01:30:00", "2027-10-31 02:00:00", "Europe/Paris", title="Hourly over the change",
            recurrence=["RRULE:FREQ=HOURLY;COUNT=4"])
    c.event(206, "2027-03-02 19:00:00", "2027-03-02 21:00:00", "America/New_York", title="Secret series",
            password="pw", description="<p>Hidden</p>", recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"],
            exceptions={"2027-03-09 19:00:00": {"venue": ["venue-11"], "description": "<p>Secret plans</p>"}})
    c.event(207, "2027-03-02 09:00:00", "2027-03-02 09:00:00", "UTC", title="Zero-length series",
            recurrence=["RRULE:FREQ=DAILY;COUNT=2"])
    c.commit()


WINDOW = {"start_date": "2027-01-01", "end_date": "2027-12-31"}
FEEDS = {
    "anon-window": ("anon", "/events", {**WINDOW, "ical": 1}),
    "admin-window": ("admin", "/events", {**WINDOW, "ical": 1, "status": "publish,private,draft"}),
    "anon-page": ("anon", "/events", {**WINDOW, "ical": 1, "per_page": 5, "page": 2}),
    "anon-category": ("anon", "/events", {**WINDOW, "ical": 1, "categories": 1}),
    "anon-single": ("anon", "/events/102", {"ical": 1}),
    "anon-single-series": ("anon", "/events/201", {"ical": 1}),
    "anon-single-protected": ("anon", "/events/111", {"ical": 1, "password": "s3cret"}),
}


def lines(ics: bytes) -> list[bytes]:
    """The unfolded content lines of a calendar, sorted within each component (icalendar writes
    the properties of what it parsed in its own order, and the parts of a rule)."""
    stack: list[list[bytes]] = [[]]
    for line in ics.replace(b"\r\n ", b"").split(b"\r\n"):
        if line.startswith(b"BEGIN:"):
            stack.append([line])
        elif line.startswith(b"END:"):
            done = stack.pop()
            stack[-1].append(b"\n".join([done[0], *sorted(done[1:]), line]))
        elif line.startswith(b"RRULE:"):
            stack[-1].append(b"RRULE:" + b";".join(sorted(line[6:].split(b";"))))
        else:
            stack[-1].append(line)
    return stack[0]


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_feeds_keep_their_bytes(calendar, request, name):
    who, path, params = FEEDS[name]
    client = request.getfixturevalue(who)
    for _ in range(2):   # the second time from what the first one kept
        r = client.get(path, query_string=params)
        assert r.status_code == 200, r.data[:500]
        assert r.headers["Content-Type"] == "text/calendar; charset=utf-8"
        expected = SAMPLES / f"{name}.ics"
        if WRITE:
            SAMPLES.mkdir(parents=True, exist_ok=True)
            expected.write_bytes(r.data)
        assert r.data == expected.read_bytes()
        parsed = icalendar.Calendar.from_ical(r.data)
        assert lines(parsed.to_ical()) == lines(r.data)   # parsed back to the same components
    assert parsed.walk("VEVENT")


def test_feeds_spooled_to_a_temporary_file_keep_their_bytes(calendar, anon, monkeypatch, caplog):
    """A feed's VEVENTs wait in a spool while its VTIMEZONEs are found: past its memory, in a
    temporary file; when that cannot be made, in memory. The bytes are the same either way."""
    from calendar_service.http import ical_cache
    who, path, params = FEEDS["anon-window"]
    expected = (SAMPLES / "anon-window.ics").read_bytes()
    made = []
    real = ical_cache.tempfile.TemporaryFile

    def counted(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ical_cache, "SPOOL_MEMORY", 1000)
    monkeypatch.setattr(ical_cache.tempfile, "TemporaryFile", counted)
    assert anon.get(path, query_string=params).data == expected and made

    def failing(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ical_cache.tempfile, "TemporaryFile", failing)
    assert anon.get(path, query_string=params).data == expected
    assert "the rest of the feed is held in memory" in caplog.text


def test_a_spool_gives_back_what_was_written_in_order_and_in_pieces():
    from calendar_service.http.ical_cache import Spool
    parts = [bytes([65 + n % 26]) * (n * 7 % 500 + 1) for n in range(300)]
    spool = Spool(memory=2_000)
    for part in parts:
        spool.write(part)
    pieces = list(spool.pieces(4_096))
    spool.close()
    assert b"".join(pieces) == b"".join(parts)
    assert len(pieces) > 1 and all(len(p) <= 4_096 + 500 for p in pieces)


def test_the_head_of_a_feed_is_sent_before_its_events_are_written(calendar, anon, monkeypatch):
    """The VTIMEZONEs wait for every event, but the calendar's own lines go at once."""
    from calendar_service.http import ical, ical_cache
    cache = ical_cache.VeventCache()
    monkeypatch.setattr(ical, "VEVENTS", cache)
    who, path, params = FEEDS["anon-window"]
    r = anon.get(path, query_string=params, buffered=False)
    chunks = iter(r.response)
    first = next(chunks)
    assert first.startswith(b"BEGIN:VCALENDAR\r\n") and b"BEGIN:" not in first[len(b"BEGIN:VCALENDAR"):]
    assert len(cache) == 0   # no VEVENT written yet
    body = first + b"".join(chunks)
    r.close()
    assert body == (SAMPLES / "anon-window.ics").read_bytes() and len(cache) > 0

"""iCalendar feeds (docs/api.md): GET /events and single events as text/calendar.

Every feed is parsed back by the ``icalendar`` package and checked against the JSON of the
same query; the big round trip is also read by ``vobject``, an independent parser that
computes instants from our VTIMEZONE components rather than from zoneinfo, so wrong DST
rules would show. Records are written as an editor would (files, one commit).
"""
from __future__ import annotations

import warnings
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import icalendar
import pytest
import vobject

from calendar_service.domain import record_files
from calendar_service.domain import text
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, VENUES

warnings.filterwarnings("ignore", category=DeprecationWarning)

UTC = timezone.utc
SITE_TZ = "America/Chicago"
TODAY = datetime.now(UTC).date()
HTML = "<p>Bring <b>snacks</b> &amp; friends.</p>\n<ul><li>doors 7pm</li><li>no dogs</li></ul>"


def next_transition(zone: str, after: date) -> date:
    """The first day after ``after`` on which ``zone`` changes its UTC offset."""
    tz = ZoneInfo(zone)
    day = after
    offset = datetime.combine(day, time(12), tz).utcoffset()
    for _ in range(800):
        day += timedelta(days=1)
        now = datetime.combine(day, time(12), tz).utcoffset()
        if now != offset:
            return day
    raise AssertionError(f"{zone} has no transition")


def local(day: date, hour: int, minute: int = 0) -> str:
    return f"{day.isoformat()} {hour:02d}:{minute:02d}:00"


class HandWritten:
    """Record files written by hand and committed at once."""

    def __init__(self, repo):
        self.repo = repo
        self.files: dict[str, bytes] = {}
        self.next_post, self.next_term = 100, 0

    def _post(self) -> int:
        self.next_post += 1
        return self.next_post

    def put(self, resource, data: dict) -> int:
        self.files[record_files.path_for(resource, data["slug"])] = record_files.dump(resource, data)
        return data["id"]

    def category(self, name: str) -> int:
        self.next_term += 1
        return self.put(CATEGORIES, {"id": self.next_term, "name": name, "slug": name.lower().replace(" ", "-")})

    def venue(self, name: str, **fields) -> int:
        vid = self._post()
        return self.put(VENUES, {"id": vid, "venue": name, "slug": f"venue-{vid}", "status": "publish",
                                 "date_utc": "2026-01-01 00:00:00", "modified_utc": "2026-01-01 00:00:00", **fields})

    def organizer(self, name: str, **fields) -> int:
        oid = self._post()
        return self.put(ORGANIZERS, {"id": oid, "organizer": name, "slug": f"organizer-{oid}", "status": "publish",
                                     "date_utc": "2026-01-01 00:00:00", "modified_utc": "2026-01-01 00:00:00",
                                     **fields})

    def event(self, start: str, end: str, tz: str | None = "UTC", **fields) -> int:
        eid = self._post()
        data = {"id": eid, "title": fields.pop("title", f"Event {eid}"), "slug": f"event-{eid}",
                "status": "publish", "author": 1, "date_utc": "2026-02-03 04:05:06",
                "modified_utc": "2026-03-04 05:06:07", "start_date": start, "end_date": end, **fields}
        if tz is not None:
            data["timezone"] = tz
        return self.put(EVENTS, data)

    def commit(self) -> None:
        self.repo.commit_files(self.files, "Add")
        self.files = {}


@pytest.fixture
def app(make_app):
    return make_app(site_timezone=SITE_TZ)


@pytest.fixture
def by_hand(repo, app):
    return HandWritten(repo)


def parse(r) -> icalendar.Calendar:
    assert r.status_code == 200, r.data[:500]
    assert r.headers["Content-Type"] == "text/calendar; charset=utf-8"
    assert r.headers["Vary"] == "Accept"
    return icalendar.Calendar.from_ical(r.data)


def uid_ids(cal) -> list[int]:
    return [int(str(e["UID"]).split("@")[0]) for e in cal.walk("VEVENT")]


def everything(client, params: dict) -> list[dict]:
    """Every event of a JSON list query, following the pages."""
    out, page = [], 1
    while True:
        r = client.get("/events", query_string={**params, "per_page": 50, "page": page})
        if r.status_code == 404 and page > 1:
            return out
        assert r.status_code == 200, r.get_json()
        out += r.get_json()["events"]
        if "next_rest_url" not in r.get_json():
            return out
        page += 1


def instant(value) -> datetime | date:
    return value.astimezone(UTC) if isinstance(value, datetime) else value


def utc_of(json_value: str) -> datetime:
    return datetime.strptime(json_value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def check_times(vevent, event: dict) -> None:
    """DTSTART/DTEND of a VEVENT are the JSON event's instants (or days, for all-day events)."""
    start = vevent["DTSTART"].dt
    end = vevent["DTEND"].dt if "DTEND" in vevent else start
    if event["all_day"]:
        assert type(start) is date and type(end) is date
        assert start == date.fromisoformat(event["start_date"][:10])
        assert end == date.fromisoformat(event["end_date"][:10]) + timedelta(days=1)  # exclusive
        return
    assert instant(start) == utc_of(event["utc_start_date"]), (event["id"], start)
    assert instant(end) == utc_of(event["utc_end_date"]), (event["id"], end)
    zone = event["timezone"] or SITE_TZ
    if zone not in ("UTC",) and not zone.startswith("UTC"):
        assert vevent["DTSTART"].params["TZID"] == zone
        assert start.tzinfo.key == zone
    else:
        assert start.utcoffset() == timedelta(0) and "TZID" not in vevent["DTSTART"].params


# ============================================================================= the big round trip


@pytest.fixture
def calendar(by_hand):
    """Events in several zones (two DST transitions), all-day, venues, organizers, a password."""
    w = by_hand
    music, jazz = w.category("Music"), w.category("Jazz")
    hall = w.venue("Riverside Hall", address="12 Quay Street", city="Springfield", stateprovince="IL", zip="62701",
                   country="United States", geo_lat=39.799, geo_lng=-89.644)
    bare = w.venue("Back Room")
    secret_venue = w.venue("Hidden Loft", address="1 Secret Way", password="loft")
    alice = w.organizer("Alice Arts", email="alice@example.org", phone="555-0100")
    bob = w.organizer("Bob Noemail")
    paris_dst = next_transition("Europe/Paris", TODAY + timedelta(days=2))
    ny_dst = next_transition("America/New_York", TODAY + timedelta(days=2))
    d = TODAY + timedelta(days=3)
    ev = {
        "utc": w.event(local(d, 9), local(d, 10), "UTC", categories=[music], venue=[hall], organizer=[alice],
                       description=HTML, title="Plain UTC"),
        "paris_dst": w.event(local(paris_dst - timedelta(days=1), 22), local(paris_dst, 5), "Europe/Paris",
                             categories=[music, jazz], venue=[bare], organizer=[bob, alice]),
        "ny_dst": w.event(local(ny_dst - timedelta(days=1), 23), local(ny_dst, 4), "America/New_York",
                          venue=[hall]),
        "tokyo": w.event(local(d, 19), local(d, 21), "Asia/Tokyo", categories=[jazz]),
        "offset": w.event(local(d, 8), local(d, 9, 30), "UTC+5:30"),
        "site_zone": w.event(local(d + timedelta(days=1), 18), local(d + timedelta(days=1), 19), None),
        "all_day": w.event(local(d, 0), f"{d.isoformat()} 23:59:59", "Europe/Paris", all_day=True),
        "multi_day": w.event(local(d + timedelta(days=2), 0), f"{(d + timedelta(days=4)).isoformat()} 23:59:59",
                             "America/New_York", all_day=True, categories=[music]),
        "instant": w.event(local(d, 12), local(d, 12), "Europe/Berlin"),
        "protected": w.event(local(d, 15), local(d, 16), "Europe/Paris", password="s3cret", description=HTML,
                             venue=[hall], organizer=[alice], categories=[music]),
        "protected_venue": w.event(local(d, 17), local(d, 18), "UTC", venue=[secret_venue]),
    }
    w.event(local(d, 11), local(d, 12), "UTC", hide_from_listings=True)
    w.event(local(d, 11), local(d, 12), "UTC", status="draft", title="A draft")
    w.commit()
    return ev


def test_feed_is_the_json_list_as_vevents(calendar, anon):
    events = everything(anon, {})
    by_id = {e["id"]: e for e in events}
    cal = parse(anon.get("/events", query_string={"ical": "1"}))
    vevents = cal.walk("VEVENT")
    assert uid_ids(cal) == [e["id"] for e in events] and len(events) == 11
    for vevent in vevents:
        event = by_id[int(str(vevent["UID"]).split("@")[0])]
        assert str(vevent["UID"]) == f"{event['id']}@localhost"
        assert str(vevent["SUMMARY"]) == event["title"]
        assert str(vevent["URL"]) == event["url"]
        assert vevent["DTSTAMP"].dt == datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
        assert vevent["LAST-MODIFIED"].dt == datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
        assert vevent["CREATED"].dt == datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)
        assert str(vevent["STATUS"]) == "CONFIRMED"
        check_times(vevent, event)
        cats = [str(c) for c in vevent["CATEGORIES"].cats] if "CATEGORIES" in vevent else []
        assert cats == [c["name"] for c in event["categories"]]
    # every TZID used has its VTIMEZONE, and no other
    tzids = {str(v["DTSTART"].params["TZID"]) for v in vevents if "TZID" in v["DTSTART"].params}
    assert {str(t["TZID"]) for t in cal.walk("VTIMEZONE")} == tzids
    assert tzids == {"Europe/Paris", "America/New_York", "Asia/Tokyo", "America/Chicago", "Europe/Berlin"}
    assert str(cal["X-WR-TIMEZONE"]) == SITE_TZ
    assert str(cal["VERSION"]) == "2.0" and str(cal["PRODID"]).startswith("-//")
    assert "X-WR-CALNAME" in cal and "REFRESH-INTERVAL" in cal
    assert cal["X-PUBLISHED-TTL"] == "PT1H"


def test_feed_places_people_and_text(calendar, anon):
    cal = parse(anon.get("/events", query_string={"ical": "1"}))
    by_id = {int(str(e["UID"]).split("@")[0]): e for e in cal.walk("VEVENT")}
    utc = by_id[calendar["utc"]]
    assert str(utc["LOCATION"]) == "Riverside Hall, 12 Quay Street, Springfield, IL, 62701, United States"
    assert (utc["GEO"].latitude, utc["GEO"].longitude) == (39.799, -89.644)
    assert str(utc["ORGANIZER"]) == "mailto:alice@example.org"
    assert utc["ORGANIZER"].params["CN"] == "Alice Arts"
    assert str(utc["DESCRIPTION"]) == "Bring snacks & friends.\n\n- doors 7pm\n- no dogs"
    assert str(utc["CLASS"]) == "PUBLIC"
    two = by_id[calendar["paris_dst"]]
    assert str(two["LOCATION"]) == "Back Room" and "GEO" not in two
    # one ORGANIZER (RFC 5545); the second organizer is a CONTACT
    assert two["ORGANIZER"].params["CN"] == "Bob Noemail"
    assert str(two["ORGANIZER"]).startswith("http://localhost/organizer/")
    assert str(two["CONTACT"]) == "Alice Arts, alice@example.org, 555-0100"
    bare = by_id[calendar["tokyo"]]
    assert not {"LOCATION", "GEO", "ORGANIZER", "DESCRIPTION"} & set(bare)


def test_password_protected_events_are_blanked_as_in_json(calendar, anon, admin):
    json_event = next(e for e in everything(anon, {}) if e["id"] == calendar["protected"])
    assert json_event["description"] == "" and json_event["venue"] == [] and json_event["organizer"] == []
    cal = parse(anon.get("/events", query_string={"ical": "1"}))
    by_id = {int(str(e["UID"]).split("@")[0]): e for e in cal.walk("VEVENT")}
    hidden = by_id[calendar["protected"]]
    assert not {"DESCRIPTION", "LOCATION", "GEO", "ORGANIZER", "CATEGORIES"} & set(hidden)
    assert str(hidden["CLASS"]) == "CONFIDENTIAL" and str(hidden["SUMMARY"]) and "DTSTART" in hidden
    # a protected venue shows nothing of itself (JSON blanks its name and address too)
    assert "LOCATION" not in by_id[calendar["protected_venue"]]
    # an editor of the event sees it in full, as in JSON
    full = {int(str(e["UID"]).split("@")[0]): e for e in parse(admin.get("/events", query_string={"ical": "1"})).walk("VEVENT")}
    assert str(full[calendar["protected"]]["DESCRIPTION"]).startswith("Bring snacks")
    assert str(full[calendar["protected"]]["LOCATION"]).startswith("Riverside Hall")
    assert str(full[calendar["protected_venue"]]["LOCATION"]) == "Hidden Loft, 1 Secret Way"


def test_an_independent_parser_reads_the_same_instants(calendar, anon):
    """vobject builds each zone from our VTIMEZONE (not zoneinfo): DST rules must be right."""
    events = {e["id"]: e for e in everything(anon, {})}
    r = anon.get("/events", query_string={"ical": "1"})
    # vobject keeps the first definition of each TZID for the process (else falls back to pytz):
    # forget them, so that this calendar's VTIMEZONEs are the ones used
    vobject.icalendar.__dict__["__tzidMap"].clear()
    cal = vobject.readOne(r.data.decode("utf-8"), validate=True)
    zones = {type(vobject.icalendar.getTzid(t.tzid.value, False)).__name__ for t in cal.vtimezone_list}
    assert zones == {"_tzicalvtz"}  # dateutil's reading of our VTIMEZONE text
    seen = []
    for vevent in cal.vevent_list:
        event = events[int(vevent.uid.value.split("@")[0])]
        seen.append(event["id"])
        start = vevent.dtstart.value
        end = vevent.dtend.value if hasattr(vevent, "dtend") else start
        if event["all_day"]:
            assert (start, end) == (date.fromisoformat(event["start_date"][:10]),
                                    date.fromisoformat(event["end_date"][:10]) + timedelta(days=1))
            continue
        assert start.astimezone(UTC) == utc_of(event["utc_start_date"]), (event["id"], start)
        assert end.astimezone(UTC) == utc_of(event["utc_end_date"]), (event["id"], end)
    assert seen == list(events)
    # the DST events really straddle a change of offset
    paris = events[calendar["paris_dst"]]
    assert utc_of(paris["utc_end_date"]) - utc_of(paris["utc_start_date"]) in (timedelta(hours=6), timedelta(hours=8))


def test_zero_length_events_have_no_dtend(calendar, anon):
    cal = parse(anon.get("/events", query_string={"ical": "1"}))
    instant_event = next(e for e in cal.walk("VEVENT") if str(e["UID"]).startswith(f"{calendar['instant']}@"))
    assert "DTEND" not in instant_event  # RFC 5545: DTEND must be later than DTSTART


def test_feed_follows_changes_to_events_and_what_they_refer_to(calendar, anon, admin):
    """VEVENTs are reused across commits only while the event and its venue, organizers and
    categories are the same records."""
    def vevent(eid):
        cal = parse(anon.get("/events", query_string={"ical": "1"}))
        return next(e for e in cal.walk("VEVENT") if str(e["UID"]) == f"{eid}@localhost")

    eid = calendar["utc"]
    before = vevent(eid)
    assert str(before["LOCATION"]).startswith("Riverside Hall") and vevent(eid).to_ical() == before.to_ical()
    venue = anon.get(f"/events/{eid}").get_json()["venue"]["id"]
    assert admin.post(f"/venues/{venue}", json={"venue": "Quayside Hall"}).status_code == 200
    assert str(vevent(eid)["LOCATION"]).startswith("Quayside Hall")
    music = anon.get("/categories", query_string={"slug": "music"}).get_json()["categories"][0]["id"]
    assert admin.post(f"/categories/{music}", json={"name": "Live Music"}).status_code == 200
    assert [str(c) for c in vevent(eid)["CATEGORIES"].cats] == ["Live Music"]
    organizer = anon.get(f"/events/{eid}").get_json()["organizer"][0]["id"]
    assert admin.post(f"/organizers/{organizer}", json={"email": "arts@example.org"}).status_code == 200
    assert str(vevent(eid)["ORGANIZER"]) == "mailto:arts@example.org"
    assert admin.post(f"/events/{eid}", json={"title": "Renamed"}).status_code == 200
    after = vevent(eid)
    assert str(after["SUMMARY"]) == "Renamed" and after["LAST-MODIFIED"].dt > before["LAST-MODIFIED"].dt


# ============================================================================= the same selection


@pytest.fixture
def many(by_hand):
    """45 events over 90 days: categories, venues, organizers, words and flags vary."""
    w = by_hand
    cats = [w.category(name) for name in ("Music", "Sports", "Family")]
    venues = [w.venue(f"Venue {n}") for n in range(3)]
    organizers = [w.organizer(f"Organizer {n}") for n in range(2)]
    zones = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", None]
    for n in range(45):
        day = TODAY + timedelta(days=2 * n + 1)
        w.event(local(day, 8 + n % 10), local(day, 10 + n % 10), zones[n % 5],
                title=("Jazz concert" if n % 4 == 0 else "Morning run") + f" {n}",
                categories=[cats[n % 3]], venue=[venues[n % 3]], organizer=[organizers[n % 2]],
                featured=n % 6 == 0, status="publish" if n % 9 else "draft")
    w.commit()
    return {"categories": cats, "venues": venues, "organizers": organizers}


QUERIES = [
    {},
    {"categories": "music"},
    {"search": "jazz"},
    {"featured": "true"},
    {"start_date": (TODAY + timedelta(days=10)).isoformat(), "end_date": (TODAY + timedelta(days=40)).isoformat()},
    {"starts_after": (TODAY + timedelta(days=50)).isoformat()},
    {"search": "run", "categories": "sports,family"},
]


@pytest.mark.parametrize("params", QUERIES)
def test_filters_select_the_same_events(many, anon, params):
    expected = [e["id"] for e in everything(anon, params)]
    cal = parse(anon.get("/events", query_string={**params, "ical": "1"}))
    assert uid_ids(cal) == expected and expected


def test_linked_filters_and_statuses_for_an_editor(many, as_role):
    editor = as_role("editor")
    for params in ({"venue": many["venues"][1]}, {"organizer": many["organizers"][0]},
                   {"status": "draft"}, {}):
        expected = [e["id"] for e in everything(editor, params)]
        r = editor.get("/events", query_string=params, headers={"Accept": "text/calendar"})
        assert uid_ids(parse(r)) == expected and expected, params
    drafts = parse(editor.get("/events", query_string={"status": "draft", "ical": "1"})).walk("VEVENT")
    assert {str(e["STATUS"]) for e in drafts} == {"TENTATIVE"}


def test_a_feed_has_every_event_not_one_page(many, anon):
    r = anon.get("/events", query_string={"ical": "1"})
    events = parse(r).walk("VEVENT")
    assert len(events) == 40 > 30  # 45 less the 5 drafts; the original stops at 30
    assert r.headers["X-TEC-Total"] == "40" and r.headers["X-TEC-TotalPages"] == "1"
    assert "Link" not in r.headers


def test_explicit_page_or_per_page_give_the_json_page(many, anon):
    ids = [e["id"] for e in everything(anon, {})]
    r = anon.get("/events", query_string={"ical": "1", "per_page": 10, "page": 2})
    assert uid_ids(parse(r)) == ids[10:20]
    assert r.headers["X-TEC-Total"] == "40" and r.headers["X-TEC-TotalPages"] == "4"
    following, previous = r.headers["Link"].split(", ")
    assert following.endswith('ical=1&page=3>; rel="next"') and previous.endswith('ical=1>; rel="prev"')
    assert uid_ids(parse(anon.get("/events", query_string={"ical": "1", "page": 2}))) == ids[10:20]
    assert uid_ids(parse(anon.get("/events", query_string={"ical": "1", "per_page": 7}))) == ids[:7]


def test_an_empty_feed_is_a_calendar(app, anon):
    cal = parse(anon.get("/events", query_string={"ical": "1"}))
    assert cal.walk("VEVENT") == [] and cal.walk("VTIMEZONE") == []


# ============================================================================= negotiation, singles, errors


@pytest.mark.parametrize("accept, ical", [
    (None, False),
    ("*/*", False),
    ("application/json", False),
    ("text/calendar", True),
    ("text/calendar, */*;q=0.5", True),
    ("text/calendar, */*", True),                 # more specific at equal quality
    ("text/calendar, application/json", False),   # a tie stays JSON
    ("application/json;q=0.5, text/calendar", True),
    ("text/calendar;q=0.2, application/json;q=0.9", False),
    ("text/*", True),                             # JSON is not acceptable at all
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),
])
def test_content_negotiation(by_hand, anon, accept, ical):
    by_hand.event(local(TODAY + timedelta(days=2), 9), local(TODAY + timedelta(days=2), 10))
    by_hand.commit()
    r = anon.get("/events", headers={"Accept": accept} if accept else {})
    assert r.status_code == 200
    assert r.mimetype == ("text/calendar" if ical else "application/json")
    assert r.headers["Vary"] == "Accept"
    if ical:
        assert r.headers["Content-Disposition"] == 'attachment; filename="events.ics"'
        assert len(parse(r).walk("VEVENT")) == 1


def test_cors_keeps_vary_accept(make_app):
    client = make_app(site_timezone=SITE_TZ, cors_origins=("*",)).test_client()
    r = client.get("/calendar/events/v1/events?ical=1", headers={"Origin": "https://app.example"})
    assert r.status_code == 200 and {v.strip() for v in r.headers["Vary"].split(",")} == {"Accept", "Origin"}


def test_the_ical_argument_wins_over_accept(by_hand, anon):
    by_hand.event(local(TODAY + timedelta(days=2), 9), local(TODAY + timedelta(days=2), 10))
    by_hand.commit()
    assert anon.get("/events?ical=1", headers={"Accept": "application/json"}).mimetype == "text/calendar"
    assert anon.get("/events?ical=true").mimetype == "text/calendar"
    assert anon.get("/events?ical=0", headers={"Accept": "text/calendar"}).mimetype == "application/json"
    body = anon.get("/events?ical=0").get_json()
    assert body["total"] == 1


def test_single_event(calendar, anon):
    eid = calendar["utc"]
    json_event = anon.get(f"/events/{eid}").get_json()
    for r in (anon.get(f"/events/{eid}?ical=1"), anon.get(f"/events/{eid}", headers={"Accept": "text/calendar"}),
              anon.get(f"/events/by-slug/event-{eid}", headers={"Accept": "text/calendar"}),
              anon.get(f"/events/by-slug/event-{eid}?ical=1")):
        cal = parse(r)
        assert r.headers["Content-Disposition"] == f'attachment; filename="event-{eid}.ics"'
        (vevent,) = cal.walk("VEVENT")
        assert str(vevent["UID"]) == f"{eid}@localhost"
        check_times(vevent, json_event)
        assert str(vevent["LOCATION"]).startswith("Riverside Hall")
    assert anon.get(f"/events/{eid}").mimetype == "application/json"
    # a single event in a zone gets its VTIMEZONE
    cal = parse(anon.get(f"/events/{calendar['paris_dst']}?ical=1"))
    assert [str(t["TZID"]) for t in cal.walk("VTIMEZONE")] == ["Europe/Paris"]
    assert {c.name for c in cal.walk("VTIMEZONE")[0].subcomponents} == {"STANDARD", "DAYLIGHT"}


def test_single_protected_event_keeps_the_access_rules(calendar, anon):
    eid = calendar["protected"]
    for r in (anon.get(f"/events/{eid}?ical=1"), anon.get(f"/events/by-slug/event-{eid}?ical=1"),
              anon.get(f"/events/{eid}?password=wrong", headers={"Accept": "text/calendar"})):
        assert r.status_code == 403 and r.mimetype == "application/json"
        assert r.get_json()["code"] == "event-password-protected"
    (vevent,) = parse(anon.get(f"/events/{eid}?ical=1&password=s3cret")).walk("VEVENT")
    assert str(vevent["DESCRIPTION"]).startswith("Bring snacks") and str(vevent["CLASS"]) == "PUBLIC"


def test_errors_stay_json_envelopes(calendar, anon, admin):
    calendar_accept = {"Accept": "text/calendar"}
    cases = [
        (anon.get("/events?start_date=not-a-date", headers=calendar_accept), 400, "rest_invalid_param"),
        (anon.get("/events?categories=no-such-category&ical=1"), 400, "rest_invalid_param"),
        (anon.get("/events?ical=maybe"), 400, "rest_invalid_param"),
        (anon.get("/events?ical=1&page=99"), 404, "event-archive-page-not-found"),
        (anon.get("/events/99999", headers=calendar_accept), 404, "rest-event-not-found"),
        (anon.get("/events/by-slug/nothing-here?ical=1"), 404, None),
        (anon.get("/events?status=draft&ical=1"), 400, "rest_invalid_param"),
    ]
    admin.delete(f"/events/{calendar['tokyo']}")
    cases.append((anon.get(f"/events/{calendar['tokyo']}?ical=1"), 403, "event-no-longer-available"))
    draft = anon.get("/events", query_string={"ical": "1"})
    assert "A draft" not in draft.data.decode()
    for r, status, code in cases:
        assert r.mimetype == "application/json", r.data[:200]
        body = r.get_json()
        assert set(body) == {"code", "message", "data"} and body["data"]["status"] == r.status_code
        assert r.status_code == status or code is None, body
        if code:
            assert body["code"] == code


def test_ical_is_an_argument_of_the_event_reads(anon):
    routes = anon.get("").get_json()["routes"]
    for path in ("/calendar/events/v1/events", r"/calendar/events/v1/events/(?P<id>\d+)",
                 "/calendar/events/v1/events/by-slug/(?P<slug>[^/]+)"):
        get = next(e for e in routes[path]["endpoints"] if "GET" in e["methods"])
        assert "text/calendar" in get["args"]["ical"]["description"], path
        others = [e for e in routes[path]["endpoints"] if "GET" not in e["methods"]]
        assert all("ical" not in (e["args"] or {}) for e in others), path
    assert "ical" not in str(routes["/calendar/events/v1/venues"])


def test_plain_text_of_descriptions():
    assert text.plain_text(HTML) == "Bring snacks & friends.\n\n- doors 7pm\n- no dogs"
    assert text.plain_text("One<br />two<script>x()</script>\n\n\n\nthree&nbsp;four") == "One\ntwo\n\nthree four"
    assert text.plain_text(None) == ""

"""An occurrence keeps its length in elapsed time across a DST change (RFC 5545 3.8.5.3): the
start follows the local wall clock (a skipped time is read with the offset before the gap, so
02:30 becomes 03:30), the end is the start plus the series' length. Checked against an
independent expander (python-dateutil's rrule in the series' zone plus an exact timedelta)
through the HTTP API: the JSON list, each occurrence read on its own, and the iCalendar feed
(its DTSTART/DTEND and RRULE, expanded by dateutil)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import icalendar
from dateutil.rrule import rrulestr

from calendar_service.domain import dates
from calendar_service.domain.recurrence import split_occurrence_id
from calendar_service.domain.resources import EVENTS
from test_recurrence_ical import Files, feed, series

UTC = timezone.utc

# id -> (zone, RRULE, first local start, first local end); each crosses a DST change
CASES = {
    1: ("America/New_York", "RRULE:FREQ=WEEKLY;COUNT=5", "2027-02-28 02:30:00", "2027-02-28 03:30:00"),   # 03-14 gap
    2: ("America/New_York", "RRULE:FREQ=DAILY;COUNT=6", "2027-11-04 01:30:00", "2027-11-04 02:00:00"),    # 11-07 overlap
    3: ("America/New_York", "RRULE:FREQ=DAILY;COUNT=4", "2027-03-12 23:30:00", "2027-03-13 03:00:00"),    # spans the gap
    4: ("Australia/Lord_Howe", "RRULE:FREQ=DAILY;COUNT=6", "2027-09-30 02:10:00", "2027-09-30 03:10:00"),  # 10-03 gap
    5: ("Australia/Lord_Howe", "RRULE:FREQ=DAILY;COUNT=6", "2027-04-01 01:40:00", "2027-04-01 02:10:00"),  # 04-04 overlap
    6: ("Australia/Lord_Howe", "RRULE:FREQ=WEEKLY;COUNT=3", "2027-09-26 01:00:00", "2027-09-26 04:00:00"),  # spans it
}


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def independent(zone: str, rule: str, start: str, end: str) -> list[tuple[str, str]]:
    """(UTC start, UTC end) of every occurrence: dateutil's rrule on the local wall clock, each
    start read as zoneinfo reads it (fold=0), plus the exact length."""
    first, last = datetime.fromisoformat(start), datetime.fromisoformat(end)
    tz = ZoneInfo(zone)
    found = []
    for moment in rrulestr(rule.split(":", 1)[1], dtstart=first.replace(tzinfo=tz)):
        begin = moment.astimezone(UTC)
        found.append((utc_text(begin), utc_text(begin + (last - first))))
    return found


def test_occurrences_keep_their_elapsed_length_across_dst(repo, app, anon):
    files = Files(repo)
    for sid, (zone, rule, start, end) in CASES.items():
        files.series(sid, series([rule], start, end, zone))
    files.commit()
    expected = {sid: independent(*case) for sid, case in CASES.items()}
    # the New York weekly series is an hour long on the day 02:30 does not exist: 03:30-04:30 EDT
    assert expected[1][2] == ("2027-03-14 07:30:00", "2027-03-14 08:30:00")
    # the daily 01:30-02:00 one is 30 minutes on the night 01:00-02:00 repeats, not 90
    assert expected[2][3] == ("2027-11-07 05:30:00", "2027-11-07 06:00:00")
    r = anon.get("/events", query_string={"start_date": "2027-01-01", "end_date": "2027-12-31", "per_page": 50})
    assert r.status_code == 200, r.get_json()
    listed: dict[int, list] = {}
    for event in r.get_json()["events"]:
        sid = event["id"] if event["id"] in CASES else split_occurrence_id(event["id"])[0]
        listed.setdefault(sid, []).append(event)
    for sid, (zone, *_rest) in CASES.items():
        events = sorted(listed[sid], key=lambda e: e["utc_start_date"])
        assert [(e["utc_start_date"], e["utc_end_date"]) for e in events] == expected[sid], sid
        tz = ZoneInfo(zone)
        for event, (start, end) in zip(events, expected[sid]):
            # presented in the event's zone
            shown = [datetime.fromisoformat(t).replace(tzinfo=UTC).astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")
                     for t in (start, end)]
            assert [event["start_date"], event["end_date"]] == shown, (sid, event["id"])
            # the same when the occurrence is read on its own
            one = anon.get(f"/events/{event['id']}")
            assert one.status_code == 200, one.get_json()
            body = one.get_json()
            assert (body["utc_start_date"], body["utc_end_date"], body["start_date"], body["end_date"]) == \
                (start, end, *shown), (sid, event["id"])
    # the iCalendar feed: DTSTART/DTEND of each series and its RRULE give the same occurrences
    calendar = icalendar.Calendar.from_ical(feed(anon, "2027-01-01", "2027-12-31"))
    for vevent in calendar.walk("VEVENT"):
        sid = int(str(vevent["UID"]).split("@")[0])
        if sid not in CASES or "RECURRENCE-ID" in vevent:
            continue
        start, end = vevent["DTSTART"].dt, vevent["DTEND"].dt
        zone = CASES[sid][0]
        assert str(start.tzinfo) == zone and utc_text(start) == expected[sid][0][0]
        rule = "RRULE:" + vevent["RRULE"].to_ical().decode()
        assert independent(zone, rule, dates.fmt(start.replace(tzinfo=None)), dates.fmt(end.replace(tzinfo=None))) \
            == expected[sid], sid


def test_a_single_event_at_a_skipped_time_moves_past_the_gap_and_keeps_its_length(repo, app, anon, admin):
    """Written 02:30-03:30 on the night New York skips 02:00-03:00 (a file, or an API write):
    the file keeps what was written; it is served 03:30-04:30 EDT, an hour long, like RFC 5545
    reads a DTSTART in a gap."""
    files = Files(repo)
    files.put(EVENTS, {"id": 40, "title": "In the gap", "slug": "in-the-gap", "status": "publish", "author": 1,
                       "start_date": "2027-03-14 02:30:00", "end_date": "2027-03-14 03:30:00",
                       "timezone": "America/New_York"})
    files.commit()
    made = admin.post("/events", json={"title": "Posted in the gap", "start_date": "2027-03-14 02:30:00",
                                       "end_date": "2027-03-14 03:30:00", "timezone": "America/New_York"})
    assert made.status_code == 201, made.get_json()
    for ident in (40, made.get_json()["id"]):
        body = anon.get(f"/events/{ident}").get_json()
        assert (body["start_date"], body["end_date"]) == ("2027-03-14 03:30:00", "2027-03-14 04:30:00"), body
        assert (body["utc_start_date"], body["utc_end_date"]) == ("2027-03-14 07:30:00", "2027-03-14 08:30:00")
    listed = anon.get("/events", query_string={"start_date": "2027-03-14", "end_date": "2027-03-14"}).get_json()
    assert sorted((e["utc_start_date"], e["utc_end_date"]) for e in listed["events"]) == \
        [("2027-03-14 07:30:00", "2027-03-14 08:30:00")] * 2
    ics = icalendar.Calendar.from_ical(feed(anon, "2027-03-14", "2027-03-14"))
    for vevent in ics.walk("VEVENT"):
        assert vevent["DTEND"].dt.astimezone(UTC) - vevent["DTSTART"].dt.astimezone(UTC) == timedelta(hours=1)
    # the files keep the times as written
    for path in repo("ls-files", "--", "events").split():
        assert "2027-03-14 02:30:00" in repo("show", f"HEAD:{path}")

"""The DST fixed cases against the served JSON list: for series on the nights clocks
change (Europe/Berlin, America/New_York, Australia/Sydney, Australia/Adelaide, Australia/Lord_Howe
whose clocks move by 30 minutes, Asia/Kolkata and a fixed UTC-3:30 zone, all-day series, UNTIL
exactly on an occurrence and one second before one, COUNT with an EXDATE'd instance, an exception
moved across midnight), the JSON event list, read page after page through the real app, gives
exactly the occurrences ``recurring-ical-events`` expands from the served iCalendar feed for the
same window: the same local start, the end that start plus the series' length in elapsed time
(RFC 5545 3.8.5.3; the expander adds it on the local clock), and the id each occurrence's
RECURRENCE-ID names (the series id for the first occurrence, else its occurrence id). The ids
are the same after a restart on a new index."""
from __future__ import annotations

from collections import Counter
from datetime import date, datetime, time, timedelta, timezone

import icalendar
import pytest
import recurring_ical_events

from calendar_service.domain import dates
from calendar_service.domain.recurrence import occurrence_id, split_occurrence_id
from conftest import Client
from test_recurrence_ical import Files, feed, series, window

UTC = timezone.utc

# (zone, the Sunday its clocks change (or a Sunday), a local time that night that is skipped or repeated)
CASES = [
    ("Europe/Berlin", date(2026, 3, 29), "02:30"), ("Europe/Berlin", date(2026, 10, 25), "02:30"),
    ("America/New_York", date(2026, 3, 8), "02:30"), ("America/New_York", date(2026, 11, 1), "01:30"),
    ("Australia/Sydney", date(2026, 4, 5), "02:30"), ("Australia/Sydney", date(2026, 10, 4), "02:30"),
    ("Australia/Lord_Howe", date(2026, 4, 5), "01:45"), ("Australia/Lord_Howe", date(2026, 10, 4), "02:15"),
    ("Australia/Adelaide", date(2026, 10, 4), "02:30"), ("Asia/Kolkata", date(2026, 3, 29), "02:30"),
    ("UTC-3:30", date(2026, 10, 25), "00:15"),
]


def at(day: date, hhmm: str) -> datetime:
    return datetime.combine(day, time.fromisoformat(hhmm))


def last_sunday(day: date) -> date:
    """The last Sunday of ``day``'s month."""
    last = (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - 6) % 7)


def utc_stamp(local: datetime, tz, seconds: int = 0) -> str:
    """A local time's instant as an UNTIL value (``seconds`` later)."""
    return (local.replace(tzinfo=tz).astimezone(UTC) + timedelta(seconds=seconds)).strftime("%Y%m%dT%H%M%SZ")


def make_series(zone: str, sunday: date, tricky: str) -> dict[int, tuple]:
    """Six series around ``sunday``: id -> (recurrence lines, start, end, all_day, exceptions)."""
    tz = dates.zone(zone, UTC)
    last_sunday_before = last_sunday(sunday.replace(day=1) - timedelta(days=1))   # of the month before
    second = last_sunday(sunday)                                                  # of this month
    wed = sunday - timedelta(days=4)
    tzid = f'"{zone}"' if ":" in zone else zone   # (RFC 5545 quotes a parameter value holding a colon)
    moved = at(sunday - timedelta(days=1), "23:30")
    return {
        # the skipped or repeated time, every day
        1: (["RRULE:FREQ=DAILY;COUNT=10"], at(sunday - timedelta(days=4), tricky), timedelta(hours=1), False, None),
        # UNTIL exactly on an occurrence: it is the last one (inclusive)
        2: ([f"RRULE:FREQ=WEEKLY;BYDAY=WE,SU;UNTIL={utc_stamp(at(sunday + timedelta(days=14), '19:00'), tz)}"],
            at(wed - timedelta(days=7), "19:00"), timedelta(hours=2, minutes=30), False, None),
        # UNTIL one second before an occurrence: that one is not
        3: ([f"RRULE:FREQ=WEEKLY;BYDAY=SU;UNTIL={utc_stamp(at(sunday + timedelta(days=21), '09:00'), tz, -1)}"],
            at(sunday - timedelta(days=14), "09:00"), timedelta(minutes=45), False, None),
        # COUNT counts the EXDATE'd instance
        4: (["RRULE:FREQ=MONTHLY;BYDAY=-1SU;COUNT=4", f"EXDATE;TZID={tzid}:{at(second, tricky):%Y%m%dT%H%M%S}"],
            at(last_sunday_before, tricky), timedelta(hours=3), False, None),
        # an exception moved across midnight into the night of the change, retitled
        5: (["RRULE:FREQ=DAILY;COUNT=8"], at(sunday - timedelta(days=3), "23:30"), timedelta(hours=1), False,
            {dates.fmt(moved): {"title": "Moved", "start_date": dates.fmt(moved + timedelta(hours=1, minutes=15))}}),
        # all-day: weekly by COUNT with a day moved (a bare-date key), daily until a date
        6: (["RRULE:FREQ=WEEKLY;BYDAY=SU;COUNT=4"], at(sunday - timedelta(days=7), "00:00"),
            timedelta(hours=23, minutes=59, seconds=59), True,
            {sunday.isoformat(): {"title": "Moved day", "start_date": (sunday + timedelta(days=1)).isoformat()}}),
        7: ([f"RRULE:FREQ=DAILY;UNTIL={sunday + timedelta(days=2):%Y%m%d}"], at(sunday - timedelta(days=2), "00:00"),
            timedelta(hours=23, minutes=59, seconds=59), True, None),
    }


def local(moment: datetime, tz) -> datetime:
    """An aware time as naive local time in ``tz``, through its UTC instant."""
    return moment.astimezone(UTC).astimezone(tz).replace(tzinfo=None)


def feed_occurrences(ics: bytes, ws: datetime, we: datetime, made: dict[int, object]) -> list[tuple]:
    """(id, local start, local end) of each occurrence ``recurring-ical-events`` expands from the
    feed that the list window [ws, we] holds; the id from the UID and the RECURRENCE-ID."""
    out = []
    for event in recurring_ical_events.of(icalendar.Calendar.from_ical(ics)).between(ws - timedelta(days=3),
                                                                                     we + timedelta(days=3)):
        sid = int(str(event["UID"]).split("@")[0])
        s = made[sid]
        start, end = event["DTSTART"].dt, event["DTEND"].dt
        rid = event["RECURRENCE-ID"].dt if "RECURRENCE-ID" in event else start
        if isinstance(start, datetime):   # (through UTC: a time in a skipped hour is read as its instant)
            # the end is the start plus the series' length in elapsed time (RFC 5545 3.8.5.3; the
            # expander adds it on the local clock, which shortens or stretches one at a DST change)
            local_start, local_end = (local(start, s.tz), local(start.astimezone(UTC) + s.duration, s.tz))
            original = rid.replace(tzinfo=None)   # the RECURRENCE-ID as written: the original local start
        else:
            local_start = datetime.combine(start, time())
            local_end = datetime.combine(end - timedelta(days=1), time(23, 59, 59))
            original = datetime.combine(rid, time())
        instants = (local_start.replace(tzinfo=s.tz), local_end.replace(tzinfo=s.tz))
        if instants[0] >= ws and instants[1] <= we:
            ident = sid if original == s.start else occurrence_id(sid, original)
            out.append((ident, dates.fmt(local_start), dates.fmt(local_end)))
    return sorted(out)


def json_occurrences(client, start: str, end: str, per_page: int = 7) -> list[tuple]:
    """(id, start_date, end_date) of every event of the JSON list, page after page."""
    events, page, total = [], 1, None
    while True:
        r = client.get("/events", query_string={"start_date": start, "end_date": end, "per_page": per_page,
                                                "page": page})
        if r.status_code == 404 and total == 0:
            break
        assert r.status_code == 200, r.get_json()
        body = r.get_json()
        total = body["total"]
        events += body["events"]
        if page >= body["total_pages"]:
            break
        page += 1
    assert len(events) == (total or 0) and len({e["id"] for e in events}) == len(events)
    return sorted((e["id"], e["start_date"], e["end_date"]) for e in events)


@pytest.mark.parametrize("zone, sunday, tricky", CASES)
def test_the_json_list_gives_what_a_client_expands_from_the_feed(repo, app, anon, make_app, paths,
                                                                 zone, sunday, tricky):
    files = Files(repo)
    made = {}
    for sid, (lines, start, duration, all_day, exceptions) in make_series(zone, sunday, tricky).items():
        made[sid] = series(lines, dates.fmt(start), dates.fmt(start + duration), zone, all_day, exceptions)
        files.series(sid, made[sid], exceptions)
    files.commit()
    windows = [(sunday - timedelta(days=40), sunday + timedelta(days=40)),   # every occurrence
               (sunday - timedelta(days=1), sunday + timedelta(days=1))]     # cutting series in the middle
    listed = {}
    for first, last in windows:
        start, end = first.isoformat(), last.isoformat()
        ws, we = window(start, end)
        expected = feed_occurrences(feed(anon, start, end), ws, we, made)
        listed[start] = json_occurrences(anon, start, end)
        assert listed[start] == expected, (zone, start, end)
    everything = listed[windows[0][0].isoformat()]
    per_series = Counter(ident if ident in made else split_occurrence_id(ident)[0] for ident, *_ in everything)
    # 10 daily; 8 until the last (inclusive); 5 until a second before; COUNT=4 less its EXDATE, in the
    # window 1 or 2; 8 daily with one moved; 4 all-day weekly; 5 all-day daily until a date
    assert {k: v for k, v in per_series.items() if k != 4} == {1: 10, 2: 8, 3: 5, 5: 8, 6: 4, 7: 5}
    assert per_series[4] in (1, 2)
    # each first occurrence is listed under its series id, the others under their occurrence ids
    assert sorted(ident for ident, *_ in everything if ident in made) == sorted(made)
    # the same ids after a restart on a new index (a full reindex)
    again = make_app(index_dir=paths["index_dir"].with_name("index-again"))
    for first, last in windows:
        start, end = first.isoformat(), last.isoformat()
        assert json_occurrences(Client(again.test_client(), None), start, end) == listed[start]


def test_a_fixed_zone_named_with_a_colon_is_quoted_in_the_lines_written(repo, admin, anon, paths):
    """``TZID="UTC-3:30"``: RFC 5545 quotes a parameter value holding a colon, when reading the
    file and when a scoped write adds an EXDATE."""
    files = Files(repo)
    s = series(['RRULE:FREQ=DAILY;COUNT=5', 'EXDATE;TZID="UTC-3:30":20261027T001500'], "2026-10-25 00:15:00",
               "2026-10-25 01:15:00", "UTC-3:30")
    files.series(1, s)
    files.commit()
    assert sorted(s.exdates) == [datetime(2026, 10, 27, 0, 15)]
    gone = occurrence_id(1, datetime(2026, 10, 28, 0, 15))
    r = admin.delete(f"/events/{gone}")
    assert r.status_code == 200, r.get_json()
    text = (paths["content_dir"] / "events" / "series-1.md").read_text()
    assert 'EXDATE;TZID="UTC-3:30":20261027T001500,20261028T001500' in text
    assert anon.get(f"/events/{gone}").status_code == 404
    listed = json_occurrences(anon, "2026-10-24", "2026-11-01")
    assert [start for _, start, _ in listed] == ["2026-10-25 00:15:00", "2026-10-26 00:15:00", "2026-10-29 00:15:00"]

"""Exception keys written as a bare date: ``exceptions:`` of a series file are keyed by
an occurrence's original start. An all-day series keys them by its day (``2030-09-10``, also
unquoted, which YAML reads as a date); a timed series may name by a bare date the one
occurrence starting on that local day, and a date on which no or several occurrences start is
a problem at its line. The same key works in ``validate``, the loader, the API's reads and
writes, the iCalendar feed's RECURRENCE-ID and the importer. Real files, git and app."""
from __future__ import annotations

from datetime import date, datetime

import icalendar
import pytest

from calendar_service.cli.commands import main
from calendar_service.domain import dates
from calendar_service.domain import recurrence as rec
from calendar_service.domain.recurrence import occurrence_id
from test_import import import_items
from test_recurrence_files import front

TIMED = """---
id: {id}
title: Choir
start_date: '2030-09-03 19:00:00'
end_date: '2030-09-03 21:00:00'
timezone: Europe/Berlin
recurrence:
{lines}
exceptions:
{exceptions}
---
Weekly.
"""
ALL_DAY = """---
id: {id}
title: Market
start_date: '2030-09-03 00:00:00'
end_date: '2030-09-03 23:59:59'
all_day: true
timezone: Australia/Sydney
recurrence:
- RRULE:FREQ=WEEKLY;COUNT=6
exceptions:
{exceptions}
---
Weekly market.
"""
BERLIN = dates.zone("Europe/Berlin", None)


@pytest.fixture
def app(make_app):
    """The app, its recurrence horizon far enough for lists to show 2030."""
    return make_app(recurrence_horizon=120)


def parse(lines, exceptions, start="2030-09-03 19:00:00", end="2030-09-03 21:00:00", all_day=False):
    return rec.parse_recurrence(lines, exceptions, start, end, BERLIN, all_day)


# ----------------------------------------------------------------------------- the domain


def test_a_bare_date_names_the_one_occurrence_of_that_day():
    s = parse(["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10", "RDATE;TZID=Europe/Berlin:20300912T100000"],
              {"2030-09-10": {"title": "Special"}, date(2030, 9, 12): {"title": "Added"},
               "2030-09-17 19:00:00": {"title": "Full key"}})
    assert s.exceptions == {datetime(2030, 9, 10, 19): {"title": "Special"},
                            datetime(2030, 9, 12, 10): {"title": "Added"},
                            datetime(2030, 9, 17, 19): {"title": "Full key"}}
    assert rec.to_ical_lines(s).recurrence_ids[datetime(2030, 9, 10, 19)].startswith(
        "RECURRENCE-ID;TZID=Europe/Berlin:20300910T190000")


@pytest.mark.parametrize("lines, key, message", [
    (["RRULE:FREQ=DAILY;BYHOUR=9,19;COUNT=10"], "2030-09-04",
     "2 occurrences start on 2030-09-04 (09:00, 19:00): name one by its start, such as '2030-09-04 09:00:00'"),
    (["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10", "RDATE;TZID=Europe/Berlin:20300910T080000"], "2030-09-10",
     "2 occurrences start on 2030-09-10 (08:00, 19:00)"),
])
def test_a_bare_date_naming_several_occurrences_is_a_problem(lines, key, message):
    with pytest.raises(rec.RecurrenceError) as err:
        parse(lines, {key: {"title": "x"}})
    assert [(p.field, p.index) for p in err.value.problems] == [("exceptions", key)]
    assert err.value.problems[0].message.startswith(message)


@pytest.mark.parametrize("lines, key, message", [
    (["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"], "2030-09-11",
     "no occurrence of the series starts on 2030-09-11 (a date names the one occurrence starting that day)"),
    (["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"], "2030-12-31", "no occurrence of the series starts on 2030-12-31"),
    (["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10", "EXDATE;TZID=Europe/Berlin:20300910T190000"], "2030-09-10",
     "this occurrence is removed by an EXDATE"),
])
def test_a_bare_date_naming_no_occurrence_is_a_warning_and_ignored(lines, key, message):
    s = parse(lines, {key: {"title": "x"}})
    assert s.exceptions == {}
    assert [(p.field, p.index, p.severity) for p in s.warnings] == [("exceptions", key, "warning")]
    assert s.warnings[0].message.startswith(message) and "the exception is ignored" in s.warnings[0].message


def test_a_bare_date_and_a_full_key_of_the_same_occurrence_are_listed_twice():
    with pytest.raises(rec.RecurrenceError, match="listed twice"):
        parse(["RRULE:FREQ=WEEKLY;COUNT=4"], {"2030-09-10 19:00:00": {"title": "a"}, "2030-09-10": {"title": "b"}})


def test_all_day_keys_and_times_may_be_bare_dates():
    s = parse(["RRULE:FREQ=WEEKLY;COUNT=6"], {date(2030, 9, 10): {"start_date": date(2030, 9, 11),
                                                                  "end_date": date(2030, 9, 12)},
                                              "2030-09-17": {"start_date": "2030-09-18"}},
              "2030-09-03 00:00:00", "2030-09-03 23:59:59", all_day=True)
    moved = {o.original_start.date(): (dates.fmt(o.start.replace(tzinfo=None)), dates.fmt(o.end.replace(tzinfo=None)))
             for o in rec.occurrences(s) if o.overrides}
    assert moved == {date(2030, 9, 10): ("2030-09-11 00:00:00", "2030-09-12 23:59:59"),
                     date(2030, 9, 17): ("2030-09-18 00:00:00", "2030-09-18 23:59:59")}


# ----------------------------------------------------------------------------- files, validate and the API


def test_validate_reports_a_bare_date_that_names_no_or_several_occurrences_at_its_line(tmp_path, capsys):
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)
    (root / "events" / "good.md").write_text(TIMED.format(
        id=1, lines="- RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10", exceptions="  2030-09-10:\n    title: Special"))
    (root / "events" / "market.md").write_text(ALL_DAY.format(
        id=2, exceptions="  2030-09-10:\n    start_date: 2030-09-11\n    end_date: 2030-09-12\n"
                         "  '2030-09-17':\n    title: Music"))
    (root / "events" / "bad.md").write_text(TIMED.format(
        id=3, lines="- RRULE:FREQ=DAILY;BYHOUR=9,19;COUNT=10",
        exceptions="  '2030-09-04 09:00:00':\n    title: Fine\n  2030-09-05:\n    title: Which one?\n"
                   "  '2030-09-30':\n    title: None that day"))
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    bad = root / "events" / "bad.md"
    assert f"{bad}:12: 'exceptions' '2030-09-05': 2 occurrences start on 2030-09-05 (09:00, 19:00): name one " \
           "by its start, such as '2030-09-05 09:00:00'" in out
    assert f"{bad}:14: warning: 'exceptions' '2030-09-30': no occurrence of the series starts on 2030-09-30 " \
           "(a date names the one occurrence starting that day); the exception is ignored" in out
    assert not any("good.md" in line or "market.md" in line for line in out)
    assert len([line for line in out if "bad.md" in line]) == 2


def test_bare_date_keys_through_the_api_the_feed_and_a_scoped_write(admin, anon, repo, paths):
    repo.commit_file("events/choir.md", TIMED.format(
        id=1, lines="- RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10",
        exceptions="  2030-09-10:\n    title: With the orchestra\n    start_date: '2030-09-10 18:00:00'"))
    repo.commit_file("events/market.md", ALL_DAY.format(
        id=2, exceptions="  2030-09-10:\n    title: Market with music\n    start_date: 2030-09-11\n"
                         "    end_date: 2030-09-12"))
    # the occurrence is read under the id of its original start, with its exception
    special = anon.get(f"/events/{occurrence_id(1, datetime(2030, 9, 10, 19))}")
    assert special.status_code == 200, special.get_json()
    assert (special.get_json()["title"], special.get_json()["start_date"]) == ("With the orchestra",
                                                                               "2030-09-10 18:00:00")
    market = anon.get(f"/events/{occurrence_id(2, datetime(2030, 9, 10))}").get_json()
    assert (market["title"], market["start_date"], market["end_date"]) == (
        "Market with music", "2030-09-11 00:00:00", "2030-09-12 23:59:59")
    # the recurrence block keys each exception by its original start in full (an all-day one by its day)
    assert list(anon.get("/events/1").get_json()["recurrence"]["exceptions"]) == ["2030-09-10 19:00:00"]
    assert anon.get("/events/2").get_json()["recurrence"]["exceptions"] == {
        "2030-09-10": {"title": "Market with music", "start_date": "2030-09-11 00:00:00",
                       "end_date": "2030-09-12 23:59:59"}}
    listed = anon.get("/events", query_string={"start_date": "2030-09-09", "end_date": "2030-09-13"}).get_json()
    assert [(e["title"], e["start_date"]) for e in listed["events"]] == [   # Sydney's midnight is 14:00 UTC
        ("Market with music", "2030-09-11 00:00:00"), ("With the orchestra", "2030-09-10 18:00:00")]
    # the feed's RECURRENCE-ID names the original start
    ics = anon.get("/events", query_string={"ical": 1, "start_date": "2030-09-01", "end_date": "2030-12-31"}).data
    ids = {str(e["UID"]).split("@")[0]: e["RECURRENCE-ID"] for e in icalendar.Calendar.from_ical(ics).walk("VEVENT")
           if "RECURRENCE-ID" in e}
    assert ids["1"].to_ical() == b"20300910T190000" and ids["1"].params["TZID"] == "Europe/Berlin"
    assert ids["2"].to_ical() == b"20300910"
    # a scoped write keeps the exception (its key written in full) and adds the new one
    r = admin.put(f"/events/{occurrence_id(1, datetime(2030, 9, 17, 19))}", json={"title": "Later"})
    assert r.status_code == 200, r.get_json()
    assert front(paths["content_dir"] / "events" / "choir.md")["exceptions"] == {
        "2030-09-10 19:00:00": {"title": "With the orchestra", "start_date": "2030-09-10 18:00:00"},
        "2030-09-17 19:00:00": {"title": "Later"}}
    r = admin.put(f"/events/{occurrence_id(2, datetime(2030, 9, 17))}", json={"title": "Later market"})
    assert r.status_code == 200, r.get_json()
    assert front(paths["content_dir"] / "events" / "market.md")["exceptions"] == {
        "2030-09-10": {"title": "Market with music", "start_date": "2030-09-11 00:00:00",
                       "end_date": "2030-09-12 23:59:59"},
        "2030-09-17": {"title": "Later market"}}
    # a file whose bare date names two occurrences is skipped, never served half-read
    repo.commit_file("events/twice.md", TIMED.format(id=3, lines="- RRULE:FREQ=DAILY;BYHOUR=9,19;COUNT=10",
                                                     exceptions="  2030-09-04:\n    title: Which one?"))
    assert anon.get("/events/3").status_code == 404
    skipped = admin.get("/status").get_json()["skipped"]
    assert [s["path"] for s in skipped] == ["events/twice.md"] and "2 occurrences start on 2030-09-04" in str(skipped)


def test_the_importer_takes_bare_date_keys(paths, make_app, repo):
    make_app()
    base = {"start_date": "2030-09-03 19:00:00", "end_date": "2030-09-03 21:00:00", "timezone": "Europe/Berlin",
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"]}
    import_items(paths, [{**base, "title": "Imported choir", "exceptions": {"2030-09-10": {"title": "Special"}}}])
    assert front(paths["content_dir"] / "events" / "imported-choir.md")["exceptions"] == {
        "2030-09-10": {"title": "Special"}}
    count = repo.count()
    with pytest.raises(Exception, match="no occurrence of the series starts on 2030-09-11"):
        import_items(paths, [{**base, "title": "Bad", "exceptions": {"2030-09-11": {"title": "x"}}}])
    assert repo.count() == count

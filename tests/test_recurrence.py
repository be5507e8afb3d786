"""Recurring series (domain/recurrence.py): reading, expansion across time zones, ids, edit
scopes, iCalendar lines and repeat phrases; a hypothesis cross-check against the independent
``recurring-ical-events`` package over random rules."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import icalendar
from dateutil import rrule as du
import pytest
import recurring_ical_events
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from calendar_service.domain import dates
from calendar_service.domain import recurrence as rec

UTC = timezone.utc
BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")
SYDNEY, KOLKATA = ZoneInfo("Australia/Sydney"), ZoneInfo("Asia/Kolkata")


def series(lines, start="2026-09-01 19:00:00", end="2026-09-01 21:00:00", tz=BERLIN, all_day=False,
           exceptions=None):
    return rec.parse_recurrence(lines, exceptions, start, end, tz, all_day)


def local(occs):
    return [dates.fmt(o.start) for o in occs]


def utc(y, m, d, h=0, mi=0):
    return datetime(y, m, d, h, mi, tzinfo=UTC)


def problems(lines, exceptions=None, **kw):
    with pytest.raises(rec.RecurrenceError) as caught:
        series(lines, exceptions=exceptions, **kw)
    return [(p.field, p.index, p.message) for p in caught.value.problems]


# --- reading -----------------------------------------------------------------------------------

def test_a_weekly_series_reads_with_its_exdate_rdate_and_exception():
    s = series(["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270630T170000Z",
                "EXDATE;TZID=Europe/Berlin:20261229T190000",
                "RDATE;TZID=Europe/Berlin:20261230T190000"],
               exceptions={"2027-01-05 19:00:00": {"title": "New year rehearsal", "venue": [12]}})
    assert s.rule.freq == "WEEKLY" and s.rule.byday == ((0, 1),)
    assert s.rule.until == utc(2027, 6, 30, 17)
    assert s.exdates == {datetime(2026, 12, 29, 19)}
    assert s.rdates == (datetime(2026, 12, 30, 19),)
    assert s.exceptions == {datetime(2027, 1, 5, 19): {"title": "New year rehearsal", "venue": [12]}}
    assert s.duration == timedelta(hours=2)


@pytest.mark.parametrize("line, message", [
    ("FOO:BAR", "unknown property FOO"),
    ("RRULE:FREQ=WEEKLY;BYDAY=XX", "BYDAY value 'XX' is not a weekday"),
    ("RRULE:FREQ=WEEKLY;FOO=1", "unknown RRULE part FOO"),
    ("RRULE:FREQ=WEEKLY;INTERVAL=0", "INTERVAL=0 must be a whole number"),
    ("RRULE:FREQ=MINUTELY", "FREQ=MINUTELY is refused: occurrence ids have minute resolution"),
    ("RRULE:FREQ=SECONDLY", "FREQ=SECONDLY is refused"),
    ("RRULE:FREQ=WEEKLY;COUNT=3;UNTIL=20270101T000000Z", "COUNT and UNTIL may not both be given"),
    ("RRULE:FREQ=WEEKLY;UNTIL=20270101", "must be a UTC date-time"),
    ("RRULE:FREQ=WEEKLY;UNTIL=20270101T000000", "must be in UTC, ending in Z"),
    ("RRULE:FREQ=WEEKLY;BYDAY=2TU", "BYDAY ordinals such as 2TU need FREQ=MONTHLY or YEARLY"),
    ("RRULE:FREQ=WEEKLY;BYMONTHDAY=3", "BYMONTHDAY may not be used with FREQ=WEEKLY"),
    ("RRULE:FREQ=WEEKLY;BYSECOND=5", "BYSECOND is refused"),
    ("RRULE:INTERVAL=2", "RRULE needs FREQ"),
    ("EXRULE:FREQ=WEEKLY", "EXRULE is deprecated"),
    ("EXDATE;TZID=Mars/Olympus:20261229T190000", "unknown TZID 'Mars/Olympus'"),
    ("EXDATE;VALUE=DATE:20261229", "the series has times"),
    ("EXDATE;TZID=Europe/Berlin:20261229T200000", "EXDATE 2026-12-29 20:00:00 is not an occurrence"),
    ("RDATE;VALUE=PERIOD:20261229T190000Z/PT1H", "VALUE=PERIOD is not supported"),
    ("RDATE:2026-12-29", "is not a date-time YYYYMMDDTHHMMSS"),
])
def test_each_problem_names_its_line_and_what_is_wrong(line, message):
    found = problems(["RRULE:FREQ=WEEKLY;BYDAY=TU", line] if not line.startswith("RRULE") else [line])
    index = 0 if line.startswith("RRULE") else 1
    assert any(f == "recurrence" and i == index and message in m for f, i, m in found), found


def test_an_all_day_series_needs_date_values():
    assert any("must be a date such as 20270630" in m for _, _, m in problems(
        ["RRULE:FREQ=WEEKLY;UNTIL=20270630T000000Z"], start="2026-09-01 00:00:00",
        end="2026-09-01 23:59:59", all_day=True))
    assert any("an all-day series lists dates" in m for _, _, m in problems(
        ["RRULE:FREQ=WEEKLY", "EXDATE:20260908T000000Z"], start="2026-09-01 00:00:00",
        end="2026-09-01 23:59:59", all_day=True))


def test_every_problem_is_reported_at_once():
    found = problems(["RRULE:FREQ=WEEKLY", "RRULE:FREQ=DAILY", "NOPE:1"],
                     exceptions={"2026-09-02 19:00:00": {"title": "x"}})
    assert [(f, i) for f, i, _ in found] == [("recurrence", 1), ("recurrence", 2)]
    assert "one RRULE" in found[0][2] and "unknown property NOPE" in found[1][2]


def test_the_first_occurrence_must_match_the_rule():
    found = problems(["RRULE:FREQ=WEEKLY;BYDAY=WE"])     # 2026-09-01 is a Tuesday
    assert found == [("start_date", None, "the first occurrence must match the RRULE "
                                          "(RFC 5545: DTSTART should be synchronized with the rule)")]


@pytest.mark.parametrize("key, changes, message", [
    ("2026-09-08 19:00", {"title": "x"}, "the key must be an occurrence's original start"),
    ("2026-09-08 19:00:00", {"cancelled": True}, "add an EXDATE line"),
    ("2026-09-08 19:00:00", {"timezone": "UTC"}, "timezone belongs to the whole series"),
    ("2026-09-08 19:00:00", {"colour": "red"}, "unknown event field colour"),
    ("2026-09-08 19:00:00", {"start_date": "tomorrow"}, "start_date must be a local time"),
    ("2026-09-08 19:00:00", {"start_date": "2026-09-08 20:00:00", "end_date": "2026-09-08 19:30:00"},
     "end_date is before start_date"),
])
def test_exception_problems_name_their_key(key, changes, message):
    found = problems(["RRULE:FREQ=WEEKLY", "EXDATE;TZID=Europe/Berlin:20260915T190000"], exceptions={key: changes})
    assert any(f == "exceptions" and i == key and message in m for f, i, m in found), found


@pytest.mark.parametrize("key, message", [
    ("2026-09-02 19:00:00", "not an occurrence of the series (any more): the exception is ignored"),
    ("2026-09-15 19:00:00", "removed by an EXDATE (any more): the exception is ignored"),
])
def test_an_exception_of_no_occurrence_is_a_warning_and_ignored(key, message):
    s = series(["RRULE:FREQ=WEEKLY", "EXDATE;TZID=Europe/Berlin:20260915T190000"],
               exceptions={key: {"title": "x"}, "2026-09-08 19:00:00": {"title": "kept"}})
    assert list(s.exceptions) == [datetime(2026, 9, 8, 19)]
    assert [(p.field, p.index, p.severity) for p in s.warnings] == [("exceptions", key, "warning")]
    assert message in s.warnings[0].message


def test_yaml_dates_as_exception_keys_are_read():
    s = series(["RRULE:FREQ=WEEKLY"], start="2026-09-01 00:00:00", end="2026-09-01 23:59:59", all_day=True,
               exceptions={date(2026, 9, 8): {"title": "x"}, "2026-09-15": {"start_date": "2026-09-16"}})
    assert set(s.exceptions) == {datetime(2026, 9, 8), datetime(2026, 9, 15)}
    assert s.exceptions[datetime(2026, 9, 15)] == {"start_date": "2026-09-16 00:00:00"}


def test_recurrence_problems_returns_a_list():
    assert rec.recurrence_problems(["RRULE:FREQ=WEEKLY"], None, "2026-09-01 19:00:00", "2026-09-01 21:00:00",
                                   BERLIN, False) == []
    assert rec.recurrence_problems("RRULE:FREQ=WEEKLY", None, "2026-09-01 19:00:00", "2026-09-01 21:00:00",
                                   BERLIN, False)[0].field == "recurrence"


# --- expansion -------------------------------------------------------------------------------

@pytest.mark.parametrize("tz, start, expected_offsets", [
    # a weekly 19:00 stays 19:00 local across both changes
    (BERLIN, "2026-03-17 19:00:00", ["+0100", "+0100", "+0200", "+0200"]),
    (BERLIN, "2026-10-13 19:00:00", ["+0200", "+0200", "+0100", "+0100"]),
    (NEW_YORK, "2026-02-24 19:00:00", ["-0500", "-0500", "-0400", "-0400"]),
    (NEW_YORK, "2026-10-20 19:00:00", ["-0400", "-0400", "-0500", "-0500"]),
    (SYDNEY, "2026-03-24 19:00:00", ["+1100", "+1100", "+1000", "+1000"]),   # southern autumn
    (SYDNEY, "2026-09-22 19:00:00", ["+1000", "+1000", "+1100", "+1100"]),   # southern spring
    (KOLKATA, "2026-03-17 19:00:00", ["+0530", "+0530", "+0530", "+0530"]),  # no DST
])
def test_a_weekly_evening_keeps_its_local_time_across_dst(tz, start, expected_offsets):
    end = start[:11] + "21:00:00"
    occs = list(rec.occurrences(series(["RRULE:FREQ=WEEKLY;COUNT=4"], start=start, end=end, tz=tz)))
    assert [o.start.strftime("%H:%M") for o in occs] == ["19:00"] * 4
    assert [o.end.strftime("%H:%M") for o in occs] == ["21:00"] * 4
    assert [o.start.strftime("%z") for o in occs] == expected_offsets
    assert [o.end_utc - o.start_utc for o in occs] == [timedelta(hours=2)] * 4


def test_a_local_time_in_the_spring_gap_moves_forward_and_an_ambiguous_one_is_the_first():
    s = series(["RRULE:FREQ=WEEKLY;COUNT=3"], start="2026-03-22 02:30:00", end="2026-03-22 03:00:00")
    occs = list(rec.occurrences(s))
    # 2026-03-29 02:30 does not exist in Berlin: RFC 5545 reads it with the offset before the gap
    assert occs[1].start_utc == utc(2026, 3, 29, 1, 30) and dates.fmt(occs[1].start) == "2026-03-29 03:30:00"
    assert occs[1].original_start == datetime(2026, 3, 29, 2, 30)
    s = series(["RRULE:FREQ=WEEKLY;COUNT=2"], start="2026-10-18 02:30:00", end="2026-10-18 03:00:00")
    autumn = list(rec.occurrences(s))[1]
    assert autumn.start_utc == utc(2026, 10, 25, 0, 30)   # 02:30 CEST, the first of the two


def test_an_all_day_series_stays_on_its_dates():
    s = series(["RRULE:FREQ=WEEKLY;BYDAY=SU;UNTIL=20261108", "EXDATE;VALUE=DATE:20261101"],
               start="2026-10-18 00:00:00", end="2026-10-19 23:59:59", tz=NEW_YORK, all_day=True)
    occs = list(rec.occurrences(s))
    assert local(occs) == ["2026-10-18 00:00:00", "2026-10-25 00:00:00", "2026-11-08 00:00:00"]
    assert [dates.fmt(o.end) for o in occs] == ["2026-10-19 23:59:59", "2026-10-26 23:59:59", "2026-11-09 23:59:59"]


def test_until_is_inclusive_and_compared_as_an_instant():
    # UNTIL exactly at the 19:00 CEST occurrence of 2027-06-29 (17:00 UTC) keeps it
    s = series(["RRULE:FREQ=WEEKLY;UNTIL=20270629T170000Z"], start="2027-06-01 19:00:00", end="2027-06-01 20:00:00")
    assert local(rec.occurrences(s))[-1] == "2027-06-29 19:00:00"
    s = series(["RRULE:FREQ=WEEKLY;UNTIL=20270629T165959Z"], start="2027-06-01 19:00:00", end="2027-06-01 20:00:00")
    assert local(rec.occurrences(s))[-1] == "2027-06-22 19:00:00"


def test_count_counts_excluded_occurrences_and_not_added_ones():
    s = series(["RRULE:FREQ=DAILY;COUNT=5", "EXDATE;TZID=Europe/Berlin:20260902T190000",
                "RDATE;TZID=Europe/Berlin:20261001T100000"])
    assert local(rec.occurrences(s)) == ["2026-09-01 19:00:00", "2026-09-03 19:00:00", "2026-09-04 19:00:00",
                                         "2026-09-05 19:00:00", "2026-10-01 10:00:00"]


def test_monthly_and_yearly_rules_go_through_the_general_path():
    s = series(["RRULE:FREQ=MONTHLY;BYDAY=-1FR;COUNT=4"], start="2026-09-25 18:00:00", end="2026-09-25 19:00:00")
    assert local(rec.occurrences(s)) == ["2026-09-25 18:00:00", "2026-10-30 18:00:00", "2026-11-27 18:00:00",
                                         "2026-12-25 18:00:00"]
    s = series(["RRULE:FREQ=MONTHLY;BYMONTHDAY=31;COUNT=3"], start="2026-08-31 18:00:00", end="2026-08-31 19:00:00")
    assert local(rec.occurrences(s)) == ["2026-08-31 18:00:00", "2026-10-31 18:00:00", "2026-12-31 18:00:00"]
    s = series(["RRULE:FREQ=YEARLY;UNTIL=20290301"], start="2028-02-29 00:00:00", end="2028-02-29 23:59:59",
               all_day=True)
    assert local(rec.occurrences(s)) == ["2028-02-29 00:00:00"]


def test_the_window_has_the_event_lists_meaning():
    s = series(["RRULE:FREQ=DAILY;COUNT=10"])   # 19:00-21:00 CEST = 17:00-19:00 UTC
    between = lambda **kw: local(rec.occurrences(s, **kw))  # noqa: E731
    assert between(window_start=utc(2026, 9, 3, 17), window_end=utc(2026, 9, 5, 19)) == [
        "2026-09-03 19:00:00", "2026-09-04 19:00:00", "2026-09-05 19:00:00"]
    # start >= window_start, end <= window_end: an occurrence running over either edge is out
    assert between(window_start=utc(2026, 9, 3, 17, 1), window_end=utc(2026, 9, 5, 18, 59)) == [
        "2026-09-04 19:00:00"]
    assert between(starts_after=utc(2026, 9, 8, 17)) == ["2026-09-09 19:00:00", "2026-09-10 19:00:00"]
    assert between(starts_before=utc(2026, 9, 2, 17, 1)) == ["2026-09-01 19:00:00", "2026-09-02 19:00:00"]
    assert between(ends_after=utc(2026, 9, 9, 19)) == ["2026-09-10 19:00:00"]
    assert between(ends_before=utc(2026, 9, 1, 19, 1)) == ["2026-09-01 19:00:00"]


def test_an_exception_moves_its_occurrence_in_and_out_of_the_window():
    s = series(["RRULE:FREQ=WEEKLY"], exceptions={
        "2026-09-08 19:00:00": {"start_date": "2026-09-20 10:00:00", "end_date": "2026-09-20 12:00:00"},
        "2026-09-29 19:00:00": {"start_date": "2026-09-02 19:00:00", "title": "Early"}})
    window = dict(window_start=utc(2026, 9, 1), window_end=utc(2026, 9, 21))
    occs = list(rec.occurrences(s, **window))
    assert local(occs) == ["2026-09-01 19:00:00", "2026-09-02 19:00:00", "2026-09-15 19:00:00",
                           "2026-09-20 10:00:00"]
    assert occs[1].original_start == datetime(2026, 9, 29, 19) and occs[1].overrides["title"] == "Early"
    assert dates.fmt(occs[1].end) == "2026-09-02 21:00:00"   # a new start alone keeps the duration
    later = local(rec.occurrences(s, window_start=utc(2026, 9, 21), window_end=utc(2026, 10, 7)))
    assert later == ["2026-09-22 19:00:00", "2026-10-06 19:00:00"]


def test_open_ended_rules_stop_at_the_horizon_and_rdates_do_not():
    s = series(["RRULE:FREQ=WEEKLY", "RDATE;TZID=Europe/Berlin:20300101T190000"])
    horizon = rec.horizon_end(datetime(2026, 9, 1, 12, tzinfo=UTC), 24)
    assert horizon == utc(2028, 9, 2)
    occs = list(rec.occurrences(s, horizon_end=horizon))
    assert local(occs)[-2:] == ["2028-08-29 19:00:00", "2030-01-01 19:00:00"]
    assert len(occs) == 105 + 1
    with pytest.raises(ValueError):
        list(rec.occurrences(s))
    assert rec.horizon_end(datetime(2026, 9, 1, 23, 59, tzinfo=UTC)) == horizon   # moves once a day


def test_weekly_rules_with_interval_and_wkst_follow_rfc_5545():
    # RFC 5545's own example: every other week on TU, SU with WKST=MO vs WKST=SU
    def days(wkst):
        s = series([f"RRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST={wkst}"], start="1997-08-05 09:00:00",
                   end="1997-08-05 10:00:00", tz=NEW_YORK)
        return [o.start.day for o in rec.occurrences(s)]
    assert days("MO") == [5, 10, 19, 24]
    assert days("SU") == [5, 17, 19, 31]


def test_expanding_a_window_far_from_the_start_is_the_same_as_expanding_everything():
    s = series(["RRULE:FREQ=DAILY;INTERVAL=3;BYDAY=MO,WE,FR;UNTIL=20300101T000000Z"], start="2026-09-02 19:00:00",
               end="2026-09-02 20:00:00")
    everything = list(rec.occurrences(s))
    window = (utc(2028, 3, 1), utc(2028, 6, 1))
    assert list(rec.occurrences(s, *window)) == [o for o in everything if window[0] <= o.start_utc
                                                 and o.end_utc <= window[1]]


def test_occurrence_at_finds_an_occurrence_by_its_original_start():
    s = series(["RRULE:FREQ=WEEKLY"], exceptions={"2026-09-08 19:00:00": {"title": "x"}})
    assert rec.occurrence_at(s, datetime(2026, 9, 8, 19)).overrides == {"title": "x"}
    assert rec.occurrence_at(s, datetime(2030, 9, 3, 19)).start_utc == utc(2030, 9, 3, 17)
    assert rec.occurrence_at(s, datetime(2026, 9, 9, 19)) is None


# --- ids -------------------------------------------------------------------------------------

@pytest.mark.parametrize("series_id, original", [
    (1, datetime(1970, 1, 1)), (17, datetime(2026, 9, 1, 19)), (rec.MAX_SERIES_ID, rec.LAST_ORIGINAL_START),
    (12345, datetime(2026, 12, 31, 23, 59)),
])
def test_occurrence_ids_round_trip_and_stay_exact_in_javascript(series_id, original):
    value = rec.occurrence_id(series_id, original)
    assert 2 ** 52 <= value < 2 ** 53
    assert rec.split_occurrence_id(value) == (series_id, original)


def test_ordinary_ids_are_no_occurrence_ids_and_limits_are_refused():
    assert rec.split_occurrence_id(42) is None
    assert rec.split_occurrence_id(2 ** 53) is None
    assert rec.split_occurrence_id(2 ** 52 + 5) is None   # series 0 does not exist
    for bad in ((0, datetime(2026, 1, 1)), (2 ** 26, datetime(2026, 1, 1)), (1, datetime(1969, 12, 31)),
                (1, datetime(2098, 1, 1))):
        with pytest.raises(ValueError):
            rec.occurrence_id(*bad)
    assert rec.occurrence_id(3, date(2026, 9, 1)) == rec.occurrence_id(3, datetime(2026, 9, 1))


@given(st.integers(1, rec.MAX_SERIES_ID), st.datetimes(datetime(1970, 1, 1), rec.LAST_ORIGINAL_START))
@settings(max_examples=100, deadline=None)
def test_occurrence_ids_round_trip_to_the_minute(series_id, original):
    original = original.replace(second=0, microsecond=0)
    assert rec.split_occurrence_id(rec.occurrence_id(series_id, original)) == (series_id, original)


def test_the_first_occurrence_is_served_under_the_series_id():
    s = series(["RRULE:FREQ=WEEKLY"])
    assert rec.served_id(s, 7, datetime(2026, 9, 1, 19)) == 7
    assert rec.served_id(s, 7, datetime(2026, 9, 8, 19)) == rec.occurrence_id(7, datetime(2026, 9, 8, 19))


def test_minutes_and_whole_years_bound_recurring_starts():
    assert any("whole minute" in m for _, _, m in problems(["RRULE:FREQ=WEEKLY"], start="2026-09-01 19:00:30",
                                                           end="2026-09-01 21:00:00"))
    assert any("between 1970 and 2097" in m for _, _, m in problems(["RRULE:FREQ=WEEKLY"], start="1969-09-02 19:00:00",
                                                                    end="1969-09-02 21:00:00"))


# --- scopes ----------------------------------------------------------------------------------

def reparse(s, values, start=None, end=None):
    return rec.parse_recurrence(values["recurrence"], values.get("exceptions"),
                                values.get("start_date", start or dates.fmt(s.start)),
                                values.get("end_date", end or dates.fmt(s.end)), s.tz, s.all_day)


def test_this_occurrence_changed_becomes_an_exception_and_deleted_an_exdate():
    s = series(["RRULE:FREQ=WEEKLY;COUNT=5", "EXDATE;TZID=Europe/Berlin:20260908T190000"],
               exceptions={"2026-09-15 19:00:00": {"title": "Old"}})
    values = rec.apply_this(s, datetime(2026, 9, 22, 19), {"title": "Guest conductor", "excerpt": "x"})
    assert values["exceptions"] == {"2026-09-15 19:00:00": {"title": "Old"},
                                    "2026-09-22 19:00:00": {"title": "Guest conductor", "excerpt": "x"}}
    assert values["recurrence"] == list(s.lines)
    values = rec.apply_this(s, datetime(2026, 9, 15, 19), delete=True)
    assert values == {"recurrence": ["RRULE:FREQ=WEEKLY;COUNT=5",
                                     "EXDATE;TZID=Europe/Berlin:20260908T190000,20260915T190000"],
                      "exceptions": None}
    assert local(rec.occurrences(reparse(s, values))) == ["2026-09-01 19:00:00", "2026-09-22 19:00:00",
                                                          "2026-09-29 19:00:00"]
    values = rec.apply_this(s, datetime(2026, 9, 15, 19), {"title": None})
    assert values["exceptions"] is None   # no override left
    with pytest.raises(ValueError):
        rec.apply_this(s, datetime(2026, 9, 8, 19), {"title": "x"})      # excluded already
    with pytest.raises(ValueError):
        rec.apply_this(s, datetime(2026, 9, 22, 19), {"status": "draft"})


def test_deleting_an_added_date_strikes_its_rdate():
    s = series(["RRULE:FREQ=WEEKLY;COUNT=2", "RDATE;TZID=Europe/Berlin:20261001T100000,20261002T100000"])
    values = rec.apply_this(s, datetime(2026, 10, 1, 10), delete=True)
    assert values["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=2", "RDATE;TZID=Europe/Berlin:20261002T100000"]


def test_following_splits_a_count_rule_into_until_and_the_rest_of_the_count():
    s = series(["RRULE:FREQ=WEEKLY;COUNT=6", "EXDATE;TZID=Europe/Berlin:20260908T190000,20261006T190000"],
               exceptions={"2026-09-15 19:00:00": {"title": "A"}, "2026-09-29 19:00:00": {"title": "B"}})
    before = local(rec.occurrences(s))
    old, new = rec.apply_following(s, datetime(2026, 9, 22, 19), {"title": "New term"})
    assert old == {"recurrence": ["RRULE:FREQ=WEEKLY;UNTIL=20260922T165959Z",
                                  "EXDATE;TZID=Europe/Berlin:20260908T190000"],
                   "exceptions": {"2026-09-15 19:00:00": {"title": "A"}}}
    assert new == {"title": "New term", "start_date": "2026-09-22 19:00:00", "end_date": "2026-09-22 21:00:00",
                   "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3", "EXDATE;TZID=Europe/Berlin:20261006T190000"],
                   "exceptions": {"2026-09-29 19:00:00": {"title": "B"}}}
    first, second = reparse(s, old), reparse(s, new)
    assert local(rec.occurrences(first)) + local(rec.occurrences(second)) == before


def test_following_with_a_new_time_shifts_the_rest_and_all_day_until_is_a_date():
    s = series(["RRULE:FREQ=WEEKLY;UNTIL=20261027T180000Z"], exceptions={"2026-10-20 19:00:00": {"title": "x"}})
    old, new = rec.apply_following(s, datetime(2026, 10, 6, 19), {"start_date": "2026-10-06 18:30:00"})
    assert new["start_date"] == "2026-10-06 18:30:00" and new["end_date"] == "2026-10-06 20:30:00"
    # UNTIL moves with the occurrences (still the 27th, now 18:30 CET = 17:30 UTC)
    assert new["recurrence"] == ["RRULE:FREQ=WEEKLY;UNTIL=20261027T173000Z"]
    assert new["exceptions"] == {"2026-10-20 18:30:00": {"title": "x"}}
    assert local(rec.occurrences(reparse(s, new)))[-1] == "2026-10-27 18:30:00"
    d = series(["RRULE:FREQ=DAILY;COUNT=10"], start="2026-09-01 00:00:00", end="2026-09-01 23:59:59", all_day=True)
    old, new = rec.apply_following(d, datetime(2026, 9, 4))
    assert old["recurrence"] == ["RRULE:FREQ=DAILY;UNTIL=20260903"]
    assert new["recurrence"] == ["RRULE:FREQ=DAILY;COUNT=7"] and new["start_date"] == "2026-09-04 00:00:00"
    old, gone = rec.apply_following(d, datetime(2026, 9, 4), delete=True)
    assert gone is None and len(list(rec.occurrences(reparse(d, old)))) == 3
    with pytest.raises(ValueError):
        rec.apply_following(d, datetime(2026, 9, 1))   # the first occurrence: that is "all"


def test_all_moves_every_occurrence_by_the_shift_of_the_one_edited():
    s = series(["RRULE:FREQ=WEEKLY;UNTIL=20261027T180000Z", "EXDATE;TZID=Europe/Berlin:20261013T190000"],
               exceptions={"2026-10-20 19:00:00": {"title": "x"}})
    values = rec.apply_all(s, datetime(2026, 10, 6, 19), {"start_date": "2026-10-06 20:00:00", "title": "Later"})
    assert values["title"] == "Later"
    assert values["start_date"] == "2026-09-01 20:00:00" and values["end_date"] == "2026-09-01 22:00:00"
    assert values["recurrence"] == ["RRULE:FREQ=WEEKLY;UNTIL=20261027T190000Z",
                                    "EXDATE;TZID=Europe/Berlin:20261013T200000"]
    assert values["exceptions"] == {"2026-10-20 20:00:00": {"title": "x"}}
    moved = reparse(s, values)
    assert [t[11:] for t in local(rec.occurrences(moved))] == ["20:00:00"] * 8
    same = rec.apply_all(s, None, {"title": "Only the title"})
    assert same["recurrence"] == list(s.lines) and same["start_date"] == "2026-09-01 19:00:00"


def test_a_new_rule_for_all_drops_exceptions_that_no_longer_occur():
    s = series(["RRULE:FREQ=WEEKLY", "EXDATE;TZID=Europe/Berlin:20260915T190000"],
               exceptions={"2026-09-08 19:00:00": {"title": "x"}, "2026-09-29 19:00:00": {"title": "y"}})
    values = rec.apply_all(s, None, {"recurrence": ["RRULE:FREQ=WEEKLY;INTERVAL=2"]})
    assert values["recurrence"] == ["RRULE:FREQ=WEEKLY;INTERVAL=2", "EXDATE;TZID=Europe/Berlin:20260915T190000"]
    assert values["exceptions"] == {"2026-09-29 19:00:00": {"title": "y"}}
    values = rec.apply_all(s, None, {"recurrence": ["RRULE:FREQ=WEEKLY;INTERVAL=3"]})
    assert values["recurrence"] == ["RRULE:FREQ=WEEKLY;INTERVAL=3"]   # 09-15 is no occurrence any more
    assert values["exceptions"] is None


# --- iCalendar and phrases -------------------------------------------------------------------

def test_ical_lines_name_the_zone_and_the_exceptions():
    s = series(["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270630T170000Z", "EXDATE:20261229T180000Z"],
               exceptions={"2027-01-05 19:00:00": {"title": "x"}})
    lines = rec.to_ical_lines(s)
    assert lines.dtstart == "DTSTART;TZID=Europe/Berlin:20260901T190000"
    assert lines.dtend == "DTEND;TZID=Europe/Berlin:20260901T210000"
    assert lines.rrule == "RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270630T170000Z"
    assert lines.exdate == ["EXDATE;TZID=Europe/Berlin:20261229T190000"]
    assert lines.recurrence_ids == {datetime(2027, 1, 5, 19): "RECURRENCE-ID;TZID=Europe/Berlin:20270105T190000"}
    d = series(["RRULE:FREQ=YEARLY", "RDATE;VALUE=DATE:20270704"], start="2026-07-04 00:00:00",
               end="2026-07-05 23:59:59", all_day=True, tz=UTC)
    lines = rec.to_ical_lines(d)
    assert (lines.dtstart, lines.dtend, lines.rdate) == ("DTSTART;VALUE=DATE:20260704", "DTEND;VALUE=DATE:20260706",
                                                         ["RDATE;VALUE=DATE:20270704"])
    u = series(["RRULE:FREQ=DAILY;COUNT=2"], tz=ZoneInfo("UTC"))
    assert rec.to_ical_lines(u).dtstart == "DTSTART:20260901T190000Z"


def test_the_ical_lines_with_recurrence_ids_expand_like_the_series():
    s = series(["RRULE:FREQ=WEEKLY;BYDAY=TU,TH;COUNT=8", "EXDATE;TZID=Europe/Berlin:20261020T190000",
                "RDATE;TZID=Europe/Berlin:20261101T110000"], start="2026-10-13 19:00:00", end="2026-10-13 21:00:00",
               exceptions={"2026-10-22 19:00:00": {"start_date": "2026-10-23 18:00:00", "end_date": "2026-10-23 23:00:00"}})
    lines = rec.to_ical_lines(s)
    extra = []
    for original, rid in lines.recurrence_ids.items():
        occ = rec.occurrence_at(s, original)
        extra.append([rid, f"DTSTART:{occ.start_utc:%Y%m%dT%H%M%SZ}", f"DTEND:{occ.end_utc:%Y%m%dT%H%M%SZ}"])
    assert expand_ical(lines.lines(), extra) == [(o.start_utc, o.end_utc) for o in rec.occurrences(s)]


@pytest.mark.parametrize("phrase, lines", [
    ("every tuesday until 2027-06-30", ["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270701T035959Z"]),   # the end of the local day
    ("every 2 weeks", ["RRULE:FREQ=WEEKLY;INTERVAL=2"]),
    ("every other day 10 times", ["RRULE:FREQ=DAILY;INTERVAL=2;COUNT=10"]),
    ("every monday, wednesday and friday", ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR"]),
    ("every weekday", ["RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"]),
    ("on the first monday of the month", ["RRULE:FREQ=MONTHLY;BYDAY=1MO"]),
    ("every 3 months on the last friday", ["RRULE:FREQ=MONTHLY;INTERVAL=3;BYDAY=-1FR"]),
    ("Every Year", ["RRULE:FREQ=YEARLY"]),
    ("monthly", ["RRULE:FREQ=MONTHLY"]),
    ("FREQ=WEEKLY;BYDAY=TU", ["RRULE:FREQ=WEEKLY;BYDAY=TU"]),
    ("RRULE:FREQ=DAILY;COUNT=3", ["RRULE:FREQ=DAILY;COUNT=3"]),
])
def test_repeat_phrases(phrase, lines):
    assert rec.parse_repeat_phrase(phrase, tz=NEW_YORK) == lines


def test_a_repeat_phrase_must_fit_the_events_start():
    tuesday = datetime(2026, 9, 1, 19)
    assert rec.parse_repeat_phrase("every tuesday", tuesday, BERLIN) == ["RRULE:FREQ=WEEKLY;BYDAY=TU"]
    with pytest.raises(ValueError, match="the first occurrence must match the RRULE"):
        rec.parse_repeat_phrase("every wednesday", tuesday, BERLIN)
    with pytest.raises(ValueError, match="must be a date such as"):
        rec.parse_repeat_phrase("FREQ=DAILY;UNTIL=20270101T000000Z", datetime(2026, 9, 1), all_day=True)


def test_repeat_phrases_until_an_all_day_date_and_mistakes():
    assert rec.parse_repeat_phrase("every day until 2027-01-31", all_day=True) == ["RRULE:FREQ=DAILY;UNTIL=20270131"]
    for bad in ("every blue moon", "every tuesday until June", "on the ninth monday", "sometimes",
                "every day until 2027-01-01 3 times", "FREQ=MINUTELY"):
        with pytest.raises(ValueError):
            rec.parse_repeat_phrase(bad)


# --- cross-check with recurring-ical-events --------------------------------------------------

def expand_ical(lines: list[str], extra_events: list[list[str]] = ()) -> list[tuple]:
    """(start, end) of every occurrence recurring-ical-events finds in a VEVENT of ``lines``
    (plus VEVENTs of ``extra_events`` with the same UID), as UTC instants or, for dates, dates."""
    body = ["BEGIN:VEVENT", "UID:series@test", "DTSTAMP:20260101T000000Z", *lines, "END:VEVENT"]
    for more in extra_events:
        body += ["BEGIN:VEVENT", "UID:series@test", "DTSTAMP:20260101T000000Z", *more, "END:VEVENT"]
    text = "\r\n".join(["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", *body, "END:VCALENDAR", ""])
    found = []
    # up to the last original start an occurrence id can name (the service lists none after it)
    for event in recurring_ical_events.of(icalendar.Calendar.from_ical(text)).between(date(1970, 1, 1),
                                                                                       date(2097, 8, 5)):
        start, end = event["DTSTART"].dt, event["DTEND"].dt
        if isinstance(start, datetime):
            # the length in elapsed time (RFC 5545 3.8.5.3): the expander adds DTEND - DTSTART on
            # the local clock (end - start of one zone is that wall-clock span)
            start, end = start.astimezone(UTC), start.astimezone(UTC) + (end - start)
        found.append((start, end))
    return sorted(found)


def ours(s) -> list[tuple]:
    if s.all_day:
        return sorted((o.start.date(), o.end.date() + timedelta(days=1)) for o in rec.occurrences(s))
    return sorted((o.start_utc, o.end_utc) for o in rec.occurrences(s))


ZONES = ["Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "America/Santiago", "UTC"]


@st.composite
def random_series(draw):
    zone = ZoneInfo(draw(st.sampled_from(ZONES)))
    all_day = draw(st.booleans())
    freq = draw(st.sampled_from(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    parts = [f"FREQ={freq}"]
    interval = draw(st.integers(1, 3))
    if interval > 1:
        parts.append(f"INTERVAL={interval}")
    weekdays = st.lists(st.sampled_from(rec.WEEKDAYS), min_size=1, max_size=3, unique=True)
    if freq in ("DAILY", "WEEKLY") and draw(st.booleans()):
        parts.append("BYDAY=" + ",".join(draw(weekdays)))
        if freq == "WEEKLY" and draw(st.booleans()):
            parts.append("WKST=" + draw(st.sampled_from(["MO", "SU"])))
    elif freq == "MONTHLY":
        kind = draw(st.sampled_from(["none", "ordinal", "plain", "monthday"]))
        if kind == "ordinal":
            parts.append(f"BYDAY={draw(st.sampled_from([1, 2, 3, 4, -1, -2]))}{draw(st.sampled_from(rec.WEEKDAYS))}")
        elif kind == "plain":
            parts.append("BYDAY=" + ",".join(draw(weekdays)))
        elif kind == "monthday":
            days = draw(st.lists(st.sampled_from([1, 2, 10, 15, 28, 29, 31, -1]), min_size=1, max_size=2, unique=True))
            parts.append("BYMONTHDAY=" + ",".join(map(str, days)))
    elif freq == "YEARLY" and draw(st.booleans()):
        parts.append(f"BYMONTH={draw(st.integers(1, 12))}")
        if draw(st.booleans()):
            parts.append(f"BYDAY={draw(st.sampled_from([1, 2, -1]))}{draw(st.sampled_from(rec.WEEKDAYS))}")
    day = draw(st.dates(date(2024, 1, 1), date(2028, 12, 31)))
    clock = timedelta(hours=draw(st.integers(0, 23)), minutes=draw(st.sampled_from([0, 15, 30, 45])))
    candidate = datetime.combine(day, datetime.min.time()) + (timedelta(0) if all_day else clock)
    # DTSTART must be an occurrence of the rule: take the rule's first instance from the candidate
    first = du.rrulestr(";".join(parts), dtstart=candidate).after(candidate, inc=True)
    assume(first is not None)
    if draw(st.booleans()):
        parts.append(f"COUNT={draw(st.integers(1, 25))}")
    else:
        last = first + timedelta(days=draw(st.integers(0, 900)), hours=draw(st.integers(0, 23)))
        if all_day:
            parts.append(f"UNTIL={last:%Y%m%d}")
        else:
            parts.append(f"UNTIL={last.replace(tzinfo=zone).astimezone(UTC):%Y%m%dT%H%M%SZ}")
    if all_day:
        start, end = dates.fmt(first), dates.fmt(first + timedelta(days=draw(st.integers(0, 3)), hours=23,
                                                                   minutes=59, seconds=59))
    else:
        start, end = dates.fmt(first), dates.fmt(first + timedelta(minutes=draw(st.integers(0, 3 * 24 * 60))))
    lines = ["RRULE:" + ";".join(parts)]
    plain = rec.parse_recurrence(lines, None, start, end, zone, all_day)
    instances = [o.original_start for o in rec.occurrences(plain)]
    assume(len(instances) <= 400)
    excluded = draw(st.lists(st.sampled_from(instances), max_size=3, unique=True))
    if excluded:
        if all_day:
            lines.append("EXDATE;VALUE=DATE:" + ",".join(f"{d:%Y%m%d}" for d in excluded))
        elif draw(st.booleans()) or rec.tzid(zone) is None:
            lines.append("EXDATE:" + ",".join(f"{d.replace(tzinfo=zone).astimezone(UTC):%Y%m%dT%H%M%SZ}"
                                              for d in excluded))
        else:
            lines.append(f"EXDATE;TZID={zone.key}:" + ",".join(f"{d:%Y%m%dT%H%M%S}" for d in excluded))
    added = draw(st.lists(st.datetimes(datetime(2024, 1, 1), datetime(2030, 12, 31)), max_size=2))
    added = [a.replace(second=0, microsecond=0) if not all_day else datetime.combine(a.date(), datetime.min.time())
             for a in added]
    if added:
        if all_day:
            lines.append("RDATE;VALUE=DATE:" + ",".join(f"{d:%Y%m%d}" for d in added))
        elif rec.tzid(zone) is None:
            lines.append("RDATE:" + ",".join(f"{d:%Y%m%dT%H%M%S}Z" for d in added))
        else:
            lines.append(f"RDATE;TZID={zone.key}:" + ",".join(f"{d:%Y%m%dT%H%M%S}" for d in added))
    return rec.parse_recurrence(lines, None, start, end, zone, all_day)


def ical_of(s) -> list[str]:
    """DTSTART/DTEND and the series' own lines as written (not our rendering of them)."""
    lines = rec.to_ical_lines(s)
    return [lines.dtstart, lines.dtend, *s.lines]


@given(random_series())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_expansion_matches_recurring_ical_events(s):
    assert ours(s) == expand_ical(ical_of(s))


@pytest.mark.parametrize("zone, start", [
    ("Europe/Berlin", "2026-03-01 02:30:00"), ("Europe/Berlin", "2026-10-04 02:30:00"),
    ("America/New_York", "2026-03-01 02:30:00"), ("America/New_York", "2026-11-01 01:30:00"),
    ("Australia/Sydney", "2026-04-05 02:30:00"), ("Australia/Sydney", "2026-10-04 02:30:00"),
    ("Asia/Kolkata", "2026-03-01 02:30:00"), ("America/Santiago", "2026-04-04 23:30:00"),
])
def test_dst_nights_match_recurring_ical_events(zone, start):
    # weekly and daily series whose start falls into a gap or a repeated hour on some weeks
    for rule in ("RRULE:FREQ=WEEKLY;COUNT=12", "RRULE:FREQ=DAILY;COUNT=60"):
        end = dates.fmt(dates.read_local(start, UTC).replace(tzinfo=None) + timedelta(hours=1, minutes=30))
        s = series([rule], start=start, end=end, tz=ZoneInfo(zone))
        assert ours(s) == expand_ical(ical_of(s))


def test_a_fixed_offset_zone_names_itself_in_the_lines_it_writes():
    plus5 = dates.zone("UTC+5", UTC)
    s = series(["RRULE:FREQ=WEEKLY;COUNT=3"], tz=plus5)
    values = rec.apply_this(s, datetime(2026, 9, 8, 19), delete=True)
    assert values["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=3", "EXDATE;TZID=UTC+5:20260908T190000"]
    again = reparse(s, values)
    assert [o.start_utc for o in rec.occurrences(again)] == [utc(2026, 9, 1, 14), utc(2026, 9, 15, 14)]
    assert rec.to_ical_lines(again).dtstart == "DTSTART;TZID=UTC+5:20260901T190000"


def test_the_example_series_of_the_editors_guide_is_a_valid_series():
    import re
    from pathlib import Path

    import frontmatter

    text = (Path(__file__).parent.parent / "docs" / "editing.md").read_text(encoding="utf-8")
    example = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "recurrence:" in block)
    data = frontmatter.loads(example).metadata
    s = rec.parse_recurrence(data["recurrence"], data["exceptions"], data["start_date"], data["end_date"],
                             ZoneInfo(data["timezone"]), bool(data.get("all_day")))
    occs = list(rec.occurrences(s))
    assert len(occs) == 44 - 2 + 1     # 44 Tuesdays 2026-09-01..2027-06-29, two EXDATEs, one RDATE
    moved = [o for o in occs if o.overrides]
    assert [(dates.fmt(o.start), dates.fmt(o.end)) for o in moved] == [("2027-01-05 18:00:00", "2027-01-05 22:00:00")]
    assert local(occs)[-1] == "2027-06-29 19:00:00"


bound = st.one_of(st.none(), st.datetimes(datetime(2023, 6, 1), datetime(2031, 6, 1)).map(
    lambda d: d.replace(tzinfo=UTC)))


@given(random_series(), bound, bound, bound, bound, bound, bound, bound)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_a_window_gives_exactly_the_occurrences_inside_it(s, ws, we, sa, sb, ea, eb, horizon):
    # the expansion only generates the stretch a window needs and checks its edges: it must agree
    # with filtering the whole series one occurrence at a time
    def inside(o):
        start, end = o.start_utc, o.end_utc
        return not ((ws and start < ws) or (we and end > we) or (sa and not start > sa) or (sb and not start < sb)
                    or (ea and not end > ea) or (eb and not end < eb)
                    or (horizon and o.start_utc > horizon and o.original_start not in s.rdates))
    expected = [o for o in rec.occurrences(s) if inside(o)]
    got = list(rec.occurrences(s, ws, we, horizon, starts_after=sa, starts_before=sb, ends_after=ea, ends_before=eb))
    assert got == expected


def test_series_of_reads_a_record_once_per_blob():
    from calendar_service.domain.record import Record
    from calendar_service.domain.recurrence.record import is_recurring, series_of
    from calendar_service.domain.resources import EVENTS
    data = {"id": 41, "start_date": "2026-09-01 19:00:00", "end_date": "2026-09-01 21:00:00",
            "timezone": "Europe/Berlin", "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=3"]}
    record = Record(EVENTS, data, "events/choir.md", "b1")
    series = series_of(record, ZoneInfo("UTC"))
    assert is_recurring(record) and series_of(record, ZoneInfo("UTC")) is series
    assert [o.start.hour for o in rec.occurrences(series)] == [19, 19, 19]
    assert series_of(Record(EVENTS, dict(data, recurrence=None), "events/one.md", "b2"), ZoneInfo("UTC")) is None
    with pytest.raises(rec.RecurrenceError):
        series_of(Record(EVENTS, dict(data, recurrence=["RRULE:FREQ=SECONDLY"]), "events/bad.md", "b3"), ZoneInfo("UTC"))

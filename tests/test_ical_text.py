"""The text writers of iCalendar values (http/ical_text.py) against ``icalendar`` itself: on
drawn values, each writes what icalendar writes for the same property, so a feed written as text
is what the components would have written (tests/test_ical_bytes.py pins whole feeds)."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given, settings, strategies as st
from icalendar import Event, vCalAddress, vText

from calendar_service.http import ical_fold, ical_text

# text with what escaping, quoting and folding care about, and the rest of Unicode
SPECIAL = st.sampled_from(list("\\;,:\"'^\n\r \t’") + ["\r\n", "\\N", "\\n", "é", "😀", "€", "\x00", "\x1f"])
TEXT = st.lists(st.one_of(SPECIAL, st.text(max_size=8)), max_size=40).map("".join)


def icalendar_lines(event: Event) -> list[str]:
    """The unfolded content lines icalendar writes for ``event``, BEGIN and END left out."""
    return event.to_ical().decode("utf-8").replace("\r\n ", "").split("\r\n")[1:-2]


@pytest.fixture(autouse=True, scope="module")
def folding():
    ical_fold.install()   # as the app does


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_text_is_escaped_as_icalendar_escapes_it(value):
    assert ical_text.text(value) == vText(value).to_ical().decode("utf-8")
    event = Event()
    event.add("summary", value)
    event.add("categories", [value, value + ","])
    assert [f"SUMMARY:{ical_text.text(value)}",
            f"CATEGORIES:{ical_text.text(value)},{ical_text.text(value + ',')}"] == icalendar_lines(event)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_common_name_is_quoted_as_icalendar_quotes_it(name):
    event = Event()
    address = vCalAddress("mailto:a@example.org")
    address.params["CN"] = vText(name)
    event.add("organizer", address)
    assert icalendar_lines(event) == [f"ORGANIZER;CN={ical_text.cn(name)}:mailto:a@example.org"]


ZONES = sorted(available_timezones())


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ZONES), st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
       st.dates(min_value=date(1, 1, 1)))
def test_times_and_days_are_written_as_icalendar_writes_them(key, moment, day):
    """Every zone (icalendar writes some, equivalent to UTC, with ``Z``), years before 1000 too."""
    moment = moment.replace(microsecond=0)
    local = moment.replace(tzinfo=ZoneInfo(key))
    utc = moment.replace(tzinfo=timezone.utc)
    event = Event()
    event.add("dtstart", local)
    event.add("dtend", utc)
    event.add("dtstamp", utc)
    event.add("recurrence-id", day)
    assert icalendar_lines(event) == [ical_text.moment("DTSTART", local), ical_text.moment("DTEND", utc),
                                      f"DTSTAMP:{ical_text.utc(utc)}", f"RECURRENCE-ID;VALUE=DATE:{ical_text.day(day)}"]


def test_zones_icalendar_holds_equivalent_to_utc_are_written_with_z():
    noon = datetime(2027, 3, 3, 12, tzinfo=ZoneInfo("Africa/Abidjan"))
    assert ical_text.moment("DTSTART", noon) == "DTSTART:20270303T120000Z"
    assert ical_text.moment("DTSTART", noon.astimezone(ZoneInfo("Europe/Paris"))) \
        == "DTSTART;TZID=Europe/Paris:20270303T130000"
    assert ical_text.moment("DTEND", datetime(2027, 3, 3, 12, tzinfo=timezone(timedelta(0)))) == "DTEND:20270303T120000Z"


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=5))
def test_lines_are_folded_as_icalendar_folds_them(values):
    event = Event()
    for value in values:
        event.add("description", value * 7)
    lines = [f"DESCRIPTION:{ical_text.text(value * 7)}" for value in values]
    assert ("BEGIN:VEVENT\r\n" + ical_text.content(lines) + "END:VEVENT\r\n").encode("utf-8") == event.to_ical()


HTML_BITS = st.sampled_from(["<p>", "</p>", "<br/>", "<li>", "</li>", "&amp;", "&nbsp;", "\xa0", "  ", "\t", "\n",
                             "\n\n\n", "\r\n", "\r", " \n", "\u2003", "\x85", "<script>x</script>", "<", "&"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(HTML_BITS, st.text(max_size=10)), max_size=20).map("".join))
def test_plain_text_that_needs_no_change_is_taken_as_it_is(value):
    """Descriptions stored as plain text (as the importer stores them) skip the markup rules:
    the same text as through them."""
    from calendar_service.domain import text
    assert text.plain_text(value) == text._marked_up_text(value)

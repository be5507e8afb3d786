"""Recurring events: one event file holds a whole series (docs/decisions.md has the design).

A series is an event whose front matter carries ``recurrence:``, a list of RFC 5545 lines in
the shape Google Calendar's API uses (``RRULE:FREQ=WEEKLY;BYDAY=TU``, ``EXDATE;TZID=...:...``,
``RDATE...``), with the event's own ``start_date``/``end_date``/``timezone``/``all_day`` as the
first occurrence (DTSTART/DTEND), and ``exceptions:``, a map from an occurrence's original local
start to the fields that occurrence overrides. This module reads and checks those values
(``parse_recurrence``), expands a series into occurrences (``occurrences``), names occurrences
with integer ids (``occurrence_id``), rewrites a series for an edit of one occurrence, the
following ones or all of them (``apply_this``, ``apply_following``, ``apply_all``), and maps a
series to iCalendar (``to_ical_lines``) and from a phrase (``parse_repeat_phrase``).

Recurrence is wall-clock time in the series' zone: a weekly 19:00 Europe/Berlin event stays at
19:00 local across daylight-saving changes. A local time that does not exist (in a spring-forward
gap) is moved forward by the gap, an ambiguous one (in a fall-back hour) is the first of the two
(RFC 5545 section 3.3.5). Pure functions: no I/O.
"""
from calendar_service.domain.recurrence.expand import (
    DEFAULT_HORIZON_MONTHS, horizon_end, occurrence_at, occurrences)
from calendar_service.domain.recurrence.ical import IcalLines, to_ical_lines
from calendar_service.domain.recurrence.ids import (
    ID_BASE, LAST_ORIGINAL_START, MAX_SERIES_ID, occurrence_id, served_id, split_occurrence_id)
from calendar_service.domain.recurrence.lines import (
    EPOCH, FREQS, WEEKDAYS, SeriesProblem, RecurrenceError, Rule, tzid)
from calendar_service.domain.recurrence.phrases import parse_repeat_phrase
from calendar_service.domain.recurrence.scopes import apply_all, apply_following, apply_this
from calendar_service.domain.recurrence.series import (
    OVERRIDABLE, SERIES_ONLY, Occurrence, Series, parse_recurrence, recurrence_problems)

__all__ = [
    "DEFAULT_HORIZON_MONTHS", "EPOCH", "FREQS", "ID_BASE", "LAST_ORIGINAL_START", "MAX_SERIES_ID", "OVERRIDABLE",
    "SERIES_ONLY", "WEEKDAYS", "IcalLines", "Occurrence", "SeriesProblem", "RecurrenceError", "Rule", "Series",
    "apply_all", "apply_following", "apply_this", "horizon_end", "occurrence_at", "occurrence_id", "occurrences",
    "parse_recurrence", "parse_repeat_phrase", "recurrence_problems", "served_id", "split_occurrence_id",
    "to_ical_lines", "tzid",
]

"""A series as iCalendar properties: one VEVENT with RRULE/EXDATE/RDATE, plus one VEVENT per
exception with its RECURRENCE-ID (as CalDAV clients expect)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, timezone

from calendar_service.domain.recurrence.lines import date_line, tzid
from calendar_service.domain.recurrence.series import Series

UTC = timezone.utc


@dataclass(frozen=True)
class IcalLines:
    """A series' properties for its VEVENT (content lines, ``NAME;PARAMS:VALUE``): ``dtstart``,
    ``dtend``, ``rrule`` (or None), ``exdate`` and ``rdate`` lines, and for each exception the
    ``RECURRENCE-ID`` line of its own VEVENT, by original start."""

    dtstart: str
    dtend: str
    rrule: str | None
    exdate: list[str] = field(default_factory=list)
    rdate: list[str] = field(default_factory=list)
    recurrence_ids: dict[datetime, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [self.dtstart, self.dtend] + ([self.rrule] if self.rrule else []) + self.rdate + self.exdate


def to_ical_lines(series: Series) -> IcalLines:
    """The RFC 5545 properties of ``series``: DTSTART/DTEND of the first occurrence (all-day: dates,
    DTEND the day after the last day), the RRULE as written, EXDATE/RDATE in the series' zone, and
    the RECURRENCE-ID of each exception."""
    def stamp(name: str, moment: datetime, end: bool = False) -> str:
        if series.all_day:
            day = moment.date() + (timedelta(days=1) if end else timedelta(0))
            return f"{name};VALUE=DATE:{day:%Y%m%d}"
        key = tzid(series.tz)
        if key is None:
            return f"{name}:{moment.replace(tzinfo=series.tz).astimezone(UTC):%Y%m%dT%H%M%SZ}"
        return f"{name};TZID={key}:{moment:%Y%m%dT%H%M%S}"

    end = series.end
    if series.all_day:
        end = datetime.combine(max(series.end.date(), series.start.date()), time())
    rrule = series.rule.text() if series.rule else None
    exdate = [date_line(series, "EXDATE", sorted(series.exdates))] if series.exdates else []
    rdate = [date_line(series, "RDATE", list(series.rdates))] if series.rdates else []
    return IcalLines(stamp("DTSTART", series.start), stamp("DTEND", end, end=True), rrule, exdate, rdate,
                     {k: stamp("RECURRENCE-ID", k) for k in sorted(series.exceptions)})

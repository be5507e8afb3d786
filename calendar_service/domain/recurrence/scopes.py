"""Edits of a series: one occurrence (``apply_this``), this and the following ones
(``apply_following``: the series is split in two files) or all of them (``apply_all``). Each
returns front-matter values for the write path, which commits them in one commit."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

from calendar_service.domain import dates
from calendar_service.domain.recurrence.limits import LAST_INSTANT
from calendar_service.domain.recurrence.lines import (
    LINE, Rule, date_form, date_line, line_kind, local_naive, naive, read_dates, show)
from calendar_service.domain.recurrence.series import (
    OVERRIDABLE, SERIES_ONLY, Series, override_time, parse_recurrence)

UTC = timezone.utc


def apply_this(series: Series, original_start: datetime, changes: Mapping | None = None,
               delete: bool = False) -> dict:
    """Front-matter values (``recurrence``, ``exceptions``; None = remove the key) that change or,
    with ``delete``, remove the one occurrence originally starting at ``original_start``.

    ``changes`` are event fields for that occurrence (a value of None drops an override). A
    removed occurrence becomes an EXDATE (an RDATE is struck instead) and loses its exception.
    Raises ValueError when the series has no such occurrence or a change may not be made to one.
    """
    original = _require_occurrence(series, original_start)
    exceptions = dict(series.exceptions)
    lines = list(series.lines)
    if delete:
        exceptions.pop(original, None)
        if original in series.rdates and not series.engine.is_rule_instance(original):
            lines = _date_lines(series, [l for l in lines if line_kind(l) != "RDATE"],
                                exdates=None, rdates=[d for d in series.rdates if d != original])
        else:
            lines = _add_exdate(series, lines, original)
    else:
        overrides = dict(exceptions.get(original, {}))
        for name, value in _check_changes(series, changes or {}).items():
            if value is None:
                overrides.pop(name, None)
            else:
                overrides[name] = value
        if overrides:
            exceptions[original] = overrides
        else:
            exceptions.pop(original, None)
    return {"recurrence": lines, "exceptions": _write_exceptions(series, exceptions)}


def apply_following(series: Series, original_start: datetime, changes: Mapping | None = None,
                    delete: bool = False) -> tuple[dict, dict | None]:
    """Splits the series at the occurrence originally starting at ``original_start``.

    Returns (values for the series' own file, values for a new series file or None with
    ``delete``). The old rule ends just before the split (UNTIL in the value type of its DTSTART;
    COUNT becomes UNTIL); the new series starts at the split occurrence (moved by the wall-clock
    shift ``changes`` give its start) with the rest of the count or the old UNTIL (shifted too).
    EXDATEs, RDATEs and exceptions go to the side of the split they belong to. The new values hold
    ``start_date``, ``end_date``, ``recurrence``, ``exceptions`` and the other changed fields; a
    new ``recurrence`` in ``changes`` replaces the new series' rule lines (exceptions and EXDATEs
    that are no occurrences of it are dropped).
    Raises ValueError for the first occurrence (that is the whole series: use ``apply_all``).
    """
    original = _require_occurrence(series, original_start)
    if original <= series.start:
        raise ValueError("the first occurrence starts the series: change all occurrences instead")
    engine = series.engine
    if series.rule is not None and not engine.is_rule_instance(original):
        raise ValueError("a series splits at an occurrence of its rule, not at an added date (RDATE)")
    rule = series.rule
    old_rule = new_rule = None
    if rule is not None:
        last = engine.last_instance_before(original)
        if series.all_day:
            until_value = (original.date() - timedelta(days=1)).strftime("%Y%m%d")
        else:
            until_value = (original.replace(tzinfo=series.tz).astimezone(UTC) - timedelta(seconds=1)
                           ).strftime("%Y%m%dT%H%M%SZ")
        old_rule = rule.with_parts(COUNT=None, UNTIL=until_value) if last is not None else None
        new_rule = rule
        if rule.count is not None:
            remaining = rule.count - engine.count_before(original)
            new_rule = rule.with_parts(COUNT=str(max(remaining, 1)))
    before = {"exdates": [d for d in series.exdates if d < original],
              "rdates": [d for d in series.rdates if d < original],
              "exceptions": {k: v for k, v in series.exceptions.items() if k < original}}
    old_lines = _rebuild(series, old_rule, before["exdates"], before["rdates"])
    old_values = {"recurrence": old_lines or None, "exceptions": _write_exceptions(series, before["exceptions"])}
    if not old_lines:   # nothing repeats before the split: the old event is its first occurrence alone
        old_values["exceptions"] = None
    if delete:
        return old_values, None
    changes = dict(changes or {})
    new_start, new_end, shift = _shifted_bounds(series, original, changes)
    after_ex = [d + shift for d in series.exdates if d >= original]
    after_rd = [d + shift for d in series.rdates if d >= original]
    after_exc = {k + shift: v for k, v in series.exceptions.items() if k >= original}
    if new_rule is not None and new_rule.until is not None and shift:
        new_rule = new_rule.with_parts(UNTIL=_shift_until(series, new_rule.until, shift))
    values = {k: v for k, v in _check_changes(series, changes, whole=True).items()
              if k not in ("start_date", "end_date", "recurrence")}
    lines = _rebuild(series, new_rule, after_ex, after_rd)
    if "recurrence" in changes:
        lines = [str(l) for l in changes["recurrence"] if line_kind(str(l)) == "RRULE"] + \
            [l for l in lines if line_kind(l) != "RRULE"]
    new_values = {**values, "start_date": dates.fmt(new_start), "end_date": dates.fmt(new_end)}
    new_values.update(_consistent(series, lines, after_exc, new_start, new_end))
    return old_values, new_values


def apply_all(series: Series, original_start: datetime | None = None, changes: Mapping | None = None) -> dict:
    """Front-matter values changing every occurrence: the other changed fields as given, and, when
    ``changes`` move the start or end of the occurrence originally at ``original_start`` (the first
    one when None), the series' ``start_date``/``end_date`` shifted by the same wall-clock amount,
    with its EXDATEs, RDATEs, exception keys and UNTIL shifted alike. A new ``recurrence`` replaces
    the rule lines (EXDATEs and exceptions that are no occurrences of it are dropped).
    """
    original = series.start if original_start is None else _require_occurrence(series, original_start)
    changes = dict(changes or {})
    new_start, new_end, shift = _shifted_bounds(series, original, changes)
    new_start, new_end = series.start + shift, series.start + shift + (new_end - new_start)
    rule = series.rule
    if rule is not None and rule.until is not None and shift:
        rule = rule.with_parts(UNTIL=_shift_until(series, rule.until, shift))
    lines = _rebuild(series, rule, [d + shift for d in series.exdates], [d + shift for d in series.rdates])
    if "recurrence" in changes:
        lines = [str(l) for l in changes["recurrence"] if line_kind(str(l)) == "RRULE"] + \
            [l for l in lines if line_kind(l) != "RRULE"]
    elif not shift:
        lines = list(series.lines)    # untouched: keep the lines as written
    exceptions = {k + shift: v for k, v in series.exceptions.items()}
    values = {k: v for k, v in _check_changes(series, changes, whole=True).items()
              if k not in ("start_date", "end_date", "recurrence")}
    values.update({"start_date": dates.fmt(new_start), "end_date": dates.fmt(new_end)})
    values.update(_consistent(series, lines, exceptions, new_start, new_end))
    return values


def _require_occurrence(series: Series, original_start) -> datetime:
    original = naive(original_start)
    if not series.is_occurrence(original):
        raise ValueError(f"{show(original, series.all_day)} is not an occurrence of the series")
    return original


def _check_changes(series: Series, changes: Mapping, whole: bool = False) -> dict:
    """``changes`` checked: fields of one occurrence (``OVERRIDABLE``), or with ``whole`` any
    field but those that would need the series rewritten (its zone, all-day flag, id, exceptions).
    Times are normalized. Raises ValueError naming the field."""
    out = {}
    refused = {"id", "timezone", "all_day", "exceptions"} if whole else SERIES_ONLY - {"recurrence"}
    for name, value in changes.items():
        if name in refused:
            raise ValueError(f"{name} belongs to the whole series" if not whole else
                             f"{name} cannot be changed together with the occurrences' times")
        if name not in OVERRIDABLE and name != "recurrence" and not whole:
            raise ValueError(f"unknown event field {name}")
        if name in ("start_date", "end_date") and value is not None:
            text = override_time(value, name, series.all_day)
            if text is None:
                raise ValueError(f"{name} must be a local time YYYY-MM-DD HH:MM:SS from 1900 to 2200")
            value = text
        out[name] = value
    return out


def _shifted_bounds(series: Series, original: datetime, changes: Mapping) -> tuple[datetime, datetime, timedelta]:
    """The new start and end of the occurrence at ``original`` and the wall-clock shift of its start."""
    def read(name: str) -> datetime:
        text = override_time(changes[name], name, series.all_day)
        if text is None:
            raise ValueError(f"{name} must be a local time YYYY-MM-DD HH:MM:SS from 1900 to 2200")
        return dates.read_local(text, UTC).replace(tzinfo=None)

    start = original
    if changes.get("start_date") is not None:
        start = read("start_date")
    end = start + series.duration
    if changes.get("end_date") is not None:
        end = read("end_date")
    if end < start:
        raise ValueError("the end is before the start")
    shift = start - original
    if series.all_day and shift % timedelta(days=1):
        raise ValueError("an all-day series moves by whole days")
    return start, end, shift


def _shift_until(series: Series, until, shift: timedelta) -> str:
    if (until if isinstance(until, datetime) else datetime.combine(until, datetime.min.time(), UTC)) \
            >= LAST_INSTANT.replace(tzinfo=UTC):
        return dict(series.rule.parts)["UNTIL"]   # beyond every occurrence: kept as written
    if isinstance(until, datetime):
        local = local_naive(until, series.tz) + shift
        return local.replace(tzinfo=series.tz).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return (until + shift).strftime("%Y%m%d")


def _consistent(series: Series, lines: list[str], exceptions: dict, start: datetime, end: datetime) -> dict:
    """``recurrence``/``exceptions`` values for a series of ``lines`` starting at ``start``, without
    the EXDATEs and exceptions that are no occurrences of it (any more). Raises RecurrenceError
    when the lines are wrong (a new rule the first occurrence does not match, for instance)."""
    first, last = dates.fmt(start), dates.fmt(end)
    others = [line for line in lines if line_kind(line) != "EXDATE"]
    base = parse_recurrence(others, None, first, last, series.tz, series.all_day)
    excluded = set()
    for line in lines:
        if line_kind(line) == "EXDATE":
            match = LINE.match(line.strip())
            excluded.update(read_dates("EXDATE", match.group(2), match.group(3).strip(), 0, [], series.tz,
                                       series.all_day))
    kept = sorted(d for d in excluded if base.is_occurrence(d))
    if len(kept) != len(excluded):
        lines = others + ([date_line(series, "EXDATE", kept)] if kept else [])
    written = _write_exceptions(series, {k: v for k, v in exceptions.items()
                                         if k not in excluded and base.is_occurrence(k)})
    parse_recurrence(lines, written, first, last, series.tz, series.all_day)   # the result is a valid series
    return {"recurrence": lines, "exceptions": written}


def _rebuild(series: Series, rule: Rule | None, exdates, rdates) -> list[str]:
    lines = [rule.text()] if rule is not None else []
    return _date_lines(series, lines, exdates, rdates)


def _date_lines(series: Series, lines: list[str], exdates, rdates) -> list[str]:
    """``lines`` plus EXDATE/RDATE lines for the values given (None: keep the existing lines of that kind)."""
    out = list(lines)
    for name, values in (("RDATE", rdates), ("EXDATE", exdates)):
        if values is None:
            out += [l for l in series.lines if line_kind(l) == name and l not in out]
        elif values:
            out.append(date_line(series, name, sorted(set(values))))
    return out


def _add_exdate(series: Series, lines: list[str], original: datetime) -> list[str]:
    prefix, fmt = date_form(series, "EXDATE")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].upper().startswith(prefix.upper()):
            lines[i] = lines[i] + "," + fmt(original)
            return lines
    return lines + [prefix + fmt(original)]


def _write_exceptions(series: Series, exceptions: Mapping[datetime, dict]) -> dict | None:
    if not exceptions:
        return None
    return {show(k, series.all_day): dict(v) for k, v in sorted(exceptions.items())}

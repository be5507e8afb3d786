"""Writes to recurring events: ``recurrence`` on creates and updates, and updates and deletes of
occurrences with a scope (``this``, ``following``, ``all``; docs/decisions.md "Edit scopes").

Each write plans the series' file (and, for ``following``, the new series' file) in one
``WritePlan``, so the service commits it as one commit authored by the caller. The fields a
request changes are worked out by applying its arguments with the ordinary rules
(``WritePlanner._apply``) to the occurrence as it is, then compared: only what differs is written,
as an exception (``this``), into the split-off series (``following``) or into the whole series
(``all``) through ``recurrence.apply_*``.
"""
from __future__ import annotations

from datetime import datetime

from calendar_service.auth.accounts import User
from calendar_service.domain import dates, permissions, text
from calendar_service.domain.record import Record
from calendar_service.domain.recurrence import (
    SERIES_ONLY, RecurrenceError, Series, apply_all, apply_following, apply_this, occurrence_at,
    recurrence_problems, split_occurrence_id)
from calendar_service.domain.recurrence.lines import show
from calendar_service.domain.recurrence.record import series_of
from calendar_service.domain.resources import EVENTS
from calendar_service.domain.snapshot import Snapshot
from calendar_service.service import errors

SCOPES = ("this", "following", "all")
# keys of the series' file that no occurrence shows as its own
_SERIES_KEYS = ("recurrence", "exceptions")


def find_occurrence(snapshot: Snapshot, ident: int, site_tz, visible=None) -> tuple[Record, datetime] | None:
    """(series record, original local start) of an occurrence id that names an occurrence of an
    event series at ``snapshot``, else None (an ordinary id, or no such occurrence). A series
    ``visible(record)`` denies is not expanded and answers None, as an unknown id does."""
    split = split_occurrence_id(ident)
    if split is None:
        return None
    series_id, original = split
    record = snapshot.get(EVENTS, series_id)
    if record is None or (visible is not None and not visible(record)):
        return None
    try:
        series = series_of(record, site_tz)
    except RecurrenceError:
        return None
    if series is None or not series.is_occurrence(original) or original == series.start:
        return None  # the first occurrence is served under the series id only
    return record, original


def occurrence_data(record: Record, series: Series, original: datetime) -> dict:
    """``record``'s data with the times and overrides of its occurrence at ``original`` (without
    the series' own ``recurrence`` and ``exceptions``)."""
    occurrence = occurrence_at(series, original)
    if occurrence is None:
        raise errors.plugin_error("rest-event-not-found", id=record.id)
    data = {k: v for k, v in record.data.items() if k not in _SERIES_KEYS}
    data.update({k: v for k, v in occurrence.overrides.items() if k not in ("start_date", "end_date")})
    data["start_date"] = dates.fmt(occurrence.start.replace(tzinfo=None))
    data["end_date"] = dates.fmt(occurrence.end.replace(tzinfo=None))
    return data


def check_series(data: dict, site_tz) -> None:
    """400 ``rest_invalid_param`` naming ``recurrence`` (or ``exceptions``) when the event ``data``
    would be an invalid series; nothing when it is a single event or a valid series."""
    if not data.get("recurrence"):
        return
    tz = dates.zone(data.get("timezone"), site_tz)
    found = [p for p in recurrence_problems(data["recurrence"], data.get("exceptions"), data.get("start_date"),
                                            data.get("end_date"), tz, bool(data.get("all_day")))
             if p.severity == "error"]   # an exception naming no occurrence is ignored (a warning)
    if found:
        raise errors.invalid_param("exceptions" if all(p.field == "exceptions" for p in found) else "recurrence",
                                   "; ".join(str(p) for p in found) + ".")


def apply_recurrence(data: dict, lines, site_tz) -> None:
    """``recurrence`` given to a create or an update of a single event or a whole series (None:
    not given): the file's lines become ``lines``; none makes the event single again (its
    exceptions go too). Then the event must be a valid series or a single event (``check_series``)."""
    if lines is not None:
        set_recurrence(data, lines)
    check_series(data, site_tz)


def set_recurrence(data: dict, lines) -> None:
    if not lines:
        data["recurrence"] = data["exceptions"] = None
    else:
        data["recurrence"] = list(lines)


def drop_stale_exceptions(data: dict, site_tz) -> None:
    """Remove the exceptions of occurrences the series in ``data`` does not have (any more),
    after its lines changed (EXDATEs that name none are left for ``check_series`` to refuse)."""
    exceptions = data.get("exceptions")
    if not data.get("recurrence") or not exceptions:
        return
    tz = dates.zone(data.get("timezone"), site_tz)
    probe = {"recurrence": data["recurrence"], "start_date": data["start_date"], "end_date": data["end_date"]}
    if recurrence_problems(probe["recurrence"], None, probe["start_date"], probe["end_date"], tz,
                           bool(data.get("all_day"))):
        return  # the lines themselves are wrong: check_series says so
    kept = {}
    for key, changes in exceptions.items():
        if not recurrence_problems(probe["recurrence"], {key: changes}, probe["start_date"], probe["end_date"],
                                   tz, bool(data.get("all_day"))):
            kept[key] = changes
    data["exceptions"] = kept or None


class SeriesPlanner:
    """Plans scoped writes of series (the ``build(plan)`` functions the service commits)."""

    def __init__(self, planner):
        self.planner = planner  # writes.WritePlanner: the ordinary rules of fields

    @property
    def site_tz(self):
        return self.planner.site_tz

    def _current(self, plan, record: Record) -> tuple[Record, Series]:
        current = plan.snapshot.get(EVENTS, record.id)
        if current is None:
            raise errors.conflict(f"event {record.id} was removed meanwhile")
        series = series_of(current, self.site_tz)
        if series is None:
            raise errors.conflict(f"event {record.id} is no recurring event any more")
        return current, series

    def _changes(self, plan, current: Record, series: Series, original: datetime, args: dict, user: User):
        """The fields the arguments change in the occurrence at ``original``, in file form."""
        before = occurrence_data(current, series, original)
        fields = {k: v for k, v in args.items() if k not in ("recurrence", "recurrence_scope")}
        after = self.planner._apply(plan, EVENTS, dict(before), fields, user, creating=False)
        relevant = set(fields) | {"start_date", "end_date"}
        if "date" in fields:
            relevant.add("date_utc")
        old, new = plan.slug_refs(EVENTS, before), plan.slug_refs(EVENTS, after)
        changed = {k: new.get(k) for k in relevant if k in new or k in old
                   if new.get(k) != old.get(k) and k not in ("id", "modified_utc")}
        return changed

    def plan(self, record: Record, original: datetime, scope: str, args: dict | None, user: User):
        """The build of an update (``args``) or a delete (None), once ``user`` may make it."""
        if not (permissions.can_edit if args is not None else permissions.can_delete)(user, record):
            raise errors.forbidden(user is not None)
        return self.update(record, original, scope, args, user) if args is not None else self.delete(record, original, scope)

    def update(self, record: Record, original: datetime, scope: str, args: dict, user: User):
        """The build of an update of the occurrence of ``record``'s series at ``original``."""
        def build(plan):
            current, series = self._current(plan, record)
            where = original
            mode = "all" if scope == "following" and where == series.start else scope
            changed = self._changes(plan, current, series, where, args, user)
            now = dates.fmt(dates.utc_now())
            label = f'event {current.id} "{current.title}"'
            if mode == "this":
                refused = sorted(k for k in changed if k in SERIES_ONLY) + ["recurrence"] * ("recurrence" in args)
                if refused:
                    raise errors.invalid_param(refused[0], f"{refused[0]} belongs to the whole series: "
                                                           "use recurrence_scope=all (or following).")
                values = self._scoped(apply_this, series, where, changed)
                data = {**current.data, **values, "modified_utc": now}
                plan.put(EVENTS, data, old_path=current.path)
                return f"Update occurrence {show(where, series.all_day)} of {label}", (EVENTS, current.id)
            if mode == "following":
                if "recurrence" in args:
                    changed["recurrence"] = args["recurrence"]
                    if not args["recurrence"]:
                        raise errors.invalid_param("recurrence", "The following occurrences become a new series: "
                                                                 "give its recurrence, or use recurrence_scope=all.")
                old_values, new_values = self._scoped(apply_following, series, where, changed)
                plan.put(EVENTS, {**current.data, **old_values, "modified_utc": now}, old_path=current.path)
                new_id = self._split_off(plan, current, new_values, now)
                return (f"Split {label} at {show(where, series.all_day)} into event {new_id}", (EVENTS, new_id))
            # all
            if ("timezone" in changed or "all_day" in changed) and where == series.start:
                data = self.planner._apply(plan, EVENTS, dict(current.data),
                                          {k: v for k, v in args.items() if k != "recurrence"}, user, creating=False)
            else:
                data = {**current.data, **self._scoped(apply_all, series, where, changed), "modified_utc": now}
            if "recurrence" in args:
                set_recurrence(data, args["recurrence"])
                drop_stale_exceptions(data, self.site_tz)
            check_series(data, self.site_tz)
            plan.put(EVENTS, data, old_path=current.path)
            return f"Update all occurrences of {label}", (EVENTS, current.id)
        return build

    def delete(self, record: Record, original: datetime, scope: str):
        """The build of a delete of the occurrence (``this``) or the occurrences from it on
        (``following``) of ``record``'s series; ``all`` is the ordinary delete of the series."""
        def build(plan):
            current, series = self._current(plan, record)
            label = f'event {current.id} "{current.title}"'
            now = dates.fmt(dates.utc_now())
            if scope == "this":
                values = self._scoped(apply_this, series, original, None, delete=True)
                message = f"Remove occurrence {show(original, series.all_day)} of {label}"
            else:
                values, _ = self._scoped(apply_following, series, original, None, delete=True)
                message = f"End {label} before {show(original, series.all_day)}"
            plan.put(EVENTS, {**current.data, **values, "modified_utc": now}, old_path=current.path)
            return message, (EVENTS, current.id)
        return build

    @staticmethod
    def _scoped(apply, series: Series, original: datetime, changes, **kwargs):
        """``apply(series, original, changes)``, its refusals as 400s naming the parameter."""
        try:
            return apply(series, original, changes, **kwargs)
        except RecurrenceError as exc:
            raise errors.invalid_param("recurrence", "; ".join(str(p) for p in exc.problems
                                                              if p.severity == "error") + ".") from None
        except ValueError as exc:
            raise errors.invalid_param("recurrence_scope", f"{exc}.") from None

    def _split_off(self, plan, current: Record, values: dict, now: str) -> int:
        """Plan the new series a ``following`` edit splits off: the old file's fields with
        ``values``, its own id, a slug of its own (from its title) and a file named by it."""
        data = {k: v for k, v in current.data.items() if k not in ("id", "slug", "exceptions", "recurrence")}
        data.update(values)
        data["id"] = plan.new_id(EVENTS)
        wanted = text.slugify(values.get("slug") or data["title"]) or f"event-{data['id']}"
        data["slug"] = plan.unique_slug(EVENTS, wanted, data["id"])
        data["date_utc"] = data["modified_utc"] = now
        plan.put(EVENTS, data)
        return data["id"]

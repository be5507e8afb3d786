"""The trash: listing trashed events, venues and organizers, and deleting them for good.

Trashing is an update (status ``trash``, see ``writes.WritePlanner.delete``); emptying the trash
removes the files in one commit, and git history keeps every one of them.
"""
from __future__ import annotations

from datetime import timedelta

from calendar_service.domain import dates
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS, ORGANIZERS, VENUES
from calendar_service.service.writes import REFERENCE_KEYS, WritePlan, unlink
from calendar_service.domain.snapshot import Snapshot

TRASHABLE = (EVENTS, VENUES, ORGANIZERS)


def trashed(snapshot: Snapshot, resources=None, older_than_days: float | None = None) -> list[Record]:
    """The trashed records of ``resources`` (default: all that have a trash), optionally only
    those last modified more than ``older_than_days`` days ago."""
    cutoff = None
    if older_than_days is not None:
        cutoff = dates.fmt(dates.utc_now() - timedelta(days=older_than_days))
    found = []
    for resource in resources or TRASHABLE:
        for record in snapshot.all(resource):
            if record.status != "trash":
                continue
            if cutoff is not None and (record.data.get("modified_utc") or "") > cutoff:
                continue
            found.append(record)
    return sorted(found, key=lambda r: (r.resource.name, r.id))


def removing(record: Record):
    """The build that deletes ``record``'s file for good, in the trash or not, unlinking it from
    the events that name it as ``emptying`` does."""
    return emptying([record], [], trashed_only=False)


def emptying(records: list[Record], removed: list[Record], trashed_only: bool = True):
    """The build (see ``writes.WritePlanner``) that deletes the files of trashed ``records`` for good.

    Only records still in the trash at the branch head are removed (one restored meanwhile
    is kept); ``removed`` receives them. Events whose ``post_parent`` names a removed event
    lose that link; events naming a removed venue or organizer lose that reference (trashing
    left them in place so that a restore links them again).
    """
    wanted = {(r.resource.name, r.id) for r in records}

    def build(plan: WritePlan):
        removed.clear()
        for resource_name, record_id in sorted(wanted):
            current = plan.snapshot.by_id[resource_name].get(record_id)
            if current is None or (trashed_only and current.status != "trash"):
                continue
            plan.remove(current)
            removed.append(current)
            plan.notes.append(f'Delete {current.resource.singular} {current.id} "{current.title}" for good')
        if not removed:
            return None
        for record in removed:
            if record.resource is not EVENTS:
                unlink(plan, REFERENCE_KEYS[record.resource.name], record)
        gone = {r.id for r in removed if r.resource is EVENTS}
        for event in plan.snapshot.all(EVENTS):
            if event.data.get("post_parent") in gone and (EVENTS.name, event.id) not in wanted:
                data = dict(plan.records.get((EVENTS.name, event.id)) or event.data)
                data["post_parent"] = None
                plan.put(EVENTS, data, old_path=event.path)
                plan.notes.append(f"Unlink event {event.id} from its removed parent")
        if not trashed_only:
            return plan.notes[0], None
        return f"Empty the trash: {len(removed)} record(s)", None

    return build

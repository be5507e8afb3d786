"""Filing the events of the older layout (files at the top of ``events/``) in the month folders
new events go to (``events/YYYY/MM/``), in one commit: until then a write still rewrites the
tree of every file left at the top. File names and contents are kept byte for byte."""
from __future__ import annotations

from typing import Callable

from calendar_service.domain import permissions, record_files
from calendar_service.domain.record import Record
from calendar_service.domain.resources import EVENTS
from calendar_service.service.writes import WritePlan


def file_by_month(service, user) -> list[tuple[Record, str]]:
    """Move the event files at the top of ``events/`` into their month folders, in one commit
    authored by ``user`` (an editor or administrator); returns (record, new path) of each."""
    moved: list = []
    service.command_write(filing(service.store.read_blobs, moved), user, permissions.can_move_every_file)
    return moved


def filing(read_blobs: Callable[[list], dict], moved: list[tuple[Record, str]]):
    """The build (see ``writes.WritePlanner``) that moves every readable event file at the top of
    ``events/`` to the folder of its start month, keeping its name; ``moved`` receives (record,
    new path). A file whose new path is taken stays where it is (said in the commit message)."""
    def build(plan: WritePlan):
        moved.clear()
        taken, targets = [], set()
        for event in plan.snapshot.all(EVENTS):
            folder, _, name = event.path.rpartition("/")
            if folder != EVENTS.folder:
                continue   # filed already: its data is not even unpacked
            target = f"{record_files.folder_for(EVENTS, event.data)}/{name}"
            if target == event.path:
                continue   # no readable start date: it stays at the top
            if target in plan.snapshot.files or target in targets:
                taken.append(f"{event.path} stays: {target} exists")
                continue
            targets.add(target)
            moved.append((event, target))
        if not moved:
            return None
        contents = read_blobs([event.blob for event, _ in moved])
        for event, target in moved:
            plan.changes[event.path] = None
            plan.changes[target] = contents[event.blob]
        plan.notes.extend(taken)
        return f"File {len(moved)} event(s) by the month they start (events/YYYY/MM/)", None

    return build

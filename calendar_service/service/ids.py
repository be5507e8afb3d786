"""Ids the service gives: to files that have none, and to a file whose id an older file holds.

Editors (and ``new``) do not have to invent ids: a file without ``id`` is given one, and a
file that claims an id another file entered history with first (a copied file, an id picked
on a branch while the API handed the same one out) is given a fresh one, so an id never
names two records and the record that had it keeps it. The change is a commit of its own,
authored by the service's committer, touching only the ``id:`` line of those files.

The plan depends only on the commit (its files and, for duplicates, the order in which the
files entered the branch's history), so replicas that plan it at once make the same commit:
the one whose push the remote refuses catches up and finds nothing left to do.
"""
from __future__ import annotations

import logging

from calendar_service.domain import records
from calendar_service.domain.snapshot import Snapshot

log = logging.getLogger(__name__)

SUBJECT = "Give ids to files without one or with one an older file holds"


def plan(snapshot: Snapshot, raw: dict[str, bytes]) -> tuple[dict[str, bytes], list[str]]:
    """(path -> new content, one line per file saying why) for ``snapshot``; ``raw`` holds the
    current content of the files involved, by path. Files get ids in path order, from one
    above the highest of their id space."""
    next_ids: dict[str, int] = {}
    changes: dict[str, bytes] = {}
    lines: list[str] = []
    targets = [(record, None) for record in snapshot.unassigned] + list(snapshot.displaced)
    for record, holder in sorted(targets, key=lambda pair: pair[0].path):
        space = record.resource.id_space
        if space not in next_ids:
            next_ids[space] = snapshot.next_id(record.resource)
        new_id = next_ids[space]
        next_ids[space] += 1
        content = records.with_id(record.resource, raw[record.path], new_id)
        parsed, _ = records.parse(record.path, content)
        if parsed is None or parsed.id != new_id:  # cannot happen for a file that parsed; never write worse
            log.warning("%s: could not set its id to %d without changing more; left as it is", record.path, new_id)
            continue
        changes[record.path] = content
        why = "had no id" if holder is None else f"had id {record.id}, which {holder.path} holds since before"
        lines.append(f"{record.path}: {why}; now id {new_id}")
    return changes, lines

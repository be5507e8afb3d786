"""Ids and slugs the service gives: to files that have no id, and to a file whose id or slug
an older file holds.

Editors (and ``new``) do not have to invent ids: a file without ``id`` is given one, and a
file that claims an id another file entered history with first (a copied file, an id picked
on a branch while the API handed the same one out) is given a fresh one, so an id never
names two records and the record that had it keeps it. A file whose slug an older file holds
is given its file name as slug (or the next free one). The change is a commit of its own,
authored by the service's committer, touching only the ``id:`` or ``slug:`` line of those files.

The plan depends only on the commit (its files and, for duplicates, the order in which the
files entered the branch's history), so replicas that plan it at once make the same commit:
the one whose push the remote refuses catches up and finds nothing left to do.
"""
from __future__ import annotations

import logging

from calendar_service.domain import records, text
from calendar_service.domain.snapshot import Snapshot

log = logging.getLogger(__name__)

SUBJECT = "Give ids and slugs to files that lack them or share them with an older file"


def targets(snapshot: Snapshot) -> list[str]:
    """The paths of the files the plan of ``snapshot`` changes."""
    return sorted({r.path for r in snapshot.unassigned}
                  | {r.path for r, _ in snapshot.displaced + snapshot.reslugged})


def plan(snapshot: Snapshot, raw: dict[str, bytes]) -> tuple[dict[str, bytes], list[str]]:
    """(path -> new content, one line per file saying why) for ``snapshot``; ``raw`` holds the
    current content of the files involved, by path. Files get ids in path order, from one
    above the highest of their id space."""
    next_ids: dict[str, int] = {}
    changes: dict[str, bytes] = {}
    lines: list[str] = []
    for record, holder in sorted([(r, None) for r in snapshot.unassigned] + snapshot.displaced,
                                 key=lambda pair: pair[0].path):
        space = record.resource.id_space
        if space not in next_ids:
            next_ids[space] = snapshot.next_id(record.resource)
        new_id = next_ids[space]
        next_ids[space] += 1
        content = records.with_key(record.resource, raw[record.path], "id", new_id)
        if _check(record, content, "id", new_id):
            changes[record.path] = content
            why = "had no id" if holder is None else f"had id {record.id}, which {holder.path} holds since before"
            lines.append(f"{record.path}: {why}; now id {new_id}")
    planned: dict[str, set] = {}
    for record, holder in snapshot.reslugged:
        used = planned.setdefault(record.resource.name, set())
        stem = record.path.rsplit("/", 1)[1].rsplit(".", 1)[0]
        new_slug = text.unique_slug(stem if records.is_safe_slug(stem) else record.resource.singular,
                                    lambda slug: slug in used or snapshot.get_slug(record.resource, slug) is not None
                                    or records.path_for(record.resource, slug) in snapshot.files
                                    and records.path_for(record.resource, slug) != record.path)
        used.add(new_slug)
        content = records.with_key(record.resource, changes.get(record.path, raw[record.path]), "slug", new_slug)
        if _check(record, content, "slug", new_slug):
            changes[record.path] = content
            lines.append(f"{record.path}: had slug {record.slug!r}, which {holder.path} holds since before; "
                         f"now slug {new_slug!r}")
    return changes, lines


def _check(record, content: bytes, key: str, value) -> bool:
    """Whether ``content`` reads with ``key`` set to ``value`` (never write a file worse)."""
    parsed, _ = records.parse(record.path, content)
    if parsed is None or parsed.data.get(key) != value:  # not expected for a file that parsed
        log.warning("%s: could not set its %s to %s without changing more; left as it is", record.path, key, value)
        return False
    return True

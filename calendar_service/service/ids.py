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

from calendar_service.domain import record_files, text
from calendar_service.domain.snapshot import Snapshot
from calendar_service.service.errors import ServiceError
from calendar_service.storage.store import BranchMoved, PushRejected, StoreError

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
        content = record_files.with_key(record.resource, raw[record.path], "id", new_id)
        if _check(record, content, "id", new_id):
            changes[record.path] = content
            why = "had no id" if holder is None else f"had id {record.id}, which {holder.path} holds since before"
            lines.append(f"{record.path}: {why}; now id {new_id}")
    planned: dict[str, set] = {}
    for record, holder in snapshot.reslugged:
        used = planned.setdefault(record.resource.name, set())
        stem = record_files.file_stem(record.path)
        new_slug = text.unique_slug(stem if record_files.is_safe_slug(stem) else record.resource.singular,
                                    lambda slug: slug in used or snapshot.get_slug(record.resource, slug) is not None
                                    or _beside(record, slug) in snapshot.files and _beside(record, slug) != record.path)
        used.add(new_slug)
        content = record_files.with_key(record.resource, changes.get(record.path, raw[record.path]), "slug", new_slug)
        if _check(record, content, "slug", new_slug):
            changes[record.path] = content
            lines.append(f"{record.path}: had slug {record.slug!r}, which {holder.path} holds since before; "
                         f"now slug {new_slug!r}")
    return changes, lines


def _beside(record, slug: str) -> str:
    """The path a file named ``slug`` would have in the folder of ``record``'s file."""
    return f"{record.path.rsplit('/', 1)[0]}/{slug}{record.resource.extension}"


def _check(record, content: bytes, key: str, value) -> bool:
    """Whether ``content`` reads with ``key`` set to ``value`` (never write a file worse)."""
    parsed, _ = record_files.parse(record.path, content)
    if parsed is None or parsed.data.get(key) != value:  # not expected for a file that parsed
        log.warning("%s: could not set its %s to %s without changing more; left as it is", record.path, key, value)
        return False
    return True


class IdGiver:
    """Gives ids (and slugs) at the branch head in a commit of the service's own, through the
    normal write path (under the write lock, pushed with the same retries as any write)."""

    def __init__(self, store, catalog, sync, write_lock, attempts: int):
        self.store = store
        self.catalog = catalog
        self.sync = sync
        self._write_lock = write_lock
        self._attempts = attempts
        self.tried: str | None = None  # the last head ids were given (or tried) for

    def assign(self) -> str | None:
        """Commit ids (and slugs) for the files at the branch head that have none or one an older
        file holds (see ``ids``), as the service's committer, pushed like any write. Returns the commit, or
        None when there was nothing to do or it could not be made (logged: reads go on, the
        files keep being reported and it is tried again at the next head)."""
        author = self.store.committer
        for attempt in range(self._attempts):
            with self._write_lock():
                snapshot = self.catalog.current()
                self.tried = snapshot.commit
                if not snapshot.needs_ids:
                    return None
                paths = targets(snapshot)
                blobs = {path: snapshot.files[path][0] for path in paths}
                contents = self.store.read_blobs(set(blobs.values()))
                changes, lines = plan(snapshot, {path: contents[blob] for path, blob in blobs.items()})
                for record, holder in snapshot.displaced:
                    log.warning("%s: id %s is also in %s, which entered the history first; giving this file "
                                "a new id", record.path, record.id, holder.path)
                for record, holder in snapshot.reslugged:
                    log.warning("%s: slug %r is also the slug of %s, which entered the history first; giving this "
                                "file another slug", record.path, record.slug, holder.path)
                if not changes:
                    return None
                try:
                    commit = self.store.commit(changes, SUBJECT + "\n\n" + "\n".join(lines), author,
                                               snapshot.commit, push=self.sync.push_writes)
                except BranchMoved:
                    continue
                except PushRejected:
                    try:
                        self.sync.catch_up(snapshot.commit, changes)  # the plan is recomputed on the new head
                    except ServiceError as error:
                        log.warning("could not give ids (%s); not served until then: %s; trying again at the next "
                                    "head", error, ", ".join(paths))
                        return None
                    continue
                except StoreError as exc:
                    log.warning("could not give ids (%s); not served until then: %s; trying again at the next "
                                "head", exc, ", ".join(paths))
                    return None
                for line in lines:
                    log.info("%s", line)
                self.tried = commit
                return commit
        log.warning("could not give ids: the branch kept moving; trying again at the next head")
        return None

"""Last known good: a file that stops parsing keeps serving the newest earlier version of it that
parsed, found in the branch's first-parent history (so replicas agree), within bounds on the
files looked up, the versions tried and the commits read per new head."""
from __future__ import annotations

import logging

from calendar_service.domain import file_limits, record_files
from calendar_service.domain.record import apply_history
from calendar_service.domain.record_files import FileProblem
from calendar_service.domain.snapshot import Snapshot, Stale
from calendar_service.storage.history import FileDates
from calendar_service.storage.store import GitStore, StoreError

log = logging.getLogger(__name__)

# How far a start or a new head looks back for the last version of a broken file that parsed
# (defaults of the settings that say so)
LAST_GOOD_FILES = 1000      # broken files looked up per new head (the others: previous snapshot's record, or none)
LAST_GOOD_VERSIONS = 20     # versions of one file tried, newest first
LAST_GOOD_COMMITS = 10_000  # commits of the branch's first-parent history read per look-up
LOGGED_LAST_GOOD = 20       # files named in the log per new head; the rest are counted


def read_file(path: str, raw: bytes | None) -> tuple:
    """(record or None, problems) of one file's bytes, or of a blob git could not give (``raw``
    None: unreadable). ``record_files.parse`` never raises: whatever fails is that file's problem."""
    if raw is None:
        return None, [FileProblem(path, 1, "unreadable")]
    return record_files.parse(path, raw)


class LastGood:
    """Looks up and serves the last good versions of the files of a new head that do not parse."""

    def __init__(self, store: GitStore, author_of, files: int = LAST_GOOD_FILES, versions: int = LAST_GOOD_VERSIONS,
                 commits: int = LAST_GOOD_COMMITS):
        self.store = store
        self.author_of = author_of
        self.files, self.versions, self.commits = files, versions, commits

    def keep(self, previous: Snapshot, head: str, broken: dict, files, file_dates, stale: dict,
                   claims: dict) -> set[str]:
        """Serve the last good version of each of ``broken`` (path -> its problems: changed files
        at ``head`` that do not parse): ``files[path]`` becomes (the broken blob, the record of the
        newest version on the branch's first-parent history that parsed, the problems) and
        ``stale[path]`` says so. The look-up depends only on the commit graph (replicas agree):
        one ``git log`` of the broken paths, at most ``versions`` versions of a file
        tried, ``commits`` commits read, ``files`` files looked up. A file
        with no version that parsed since it was (last) added is not served. Beyond those bounds
        a file keeps the record ``previous`` served at its path, if any. Returns the paths now
        served as a last good version."""
        looked = sorted(broken)[:max(0, self.files)]
        if len(broken) > len(looked):
            log.warning("%d files do not parse: only %d were looked up in git history for their last good version",
                        len(broken), len(looked))
        try:
            versions = self.store.path_versions(head, looked, self.commits) if looked else {}
        except StoreError as exc:
            log.warning("could not read the history of the files that do not parse (%s)", exc)
            versions = {}
        tries: dict = {}
        settled: set[str] = set()   # paths whose look-up reached the version that added the file
        for path in looked:
            tried = []
            for version in versions.get(path, [])[:max(1, self.versions)]:
                if version.blob is None:   # deleted there: nothing older is this file
                    settled.add(path)
                    break
                tried.append(version)
                if version.status == "A":
                    settled.add(path)
                    break
            tries[path] = tried
        contents: dict = {}   # an older version over the size limit is not read: it did not parse either
        for _, batch in self.store.read_files({v.blob for path, tried in tries.items() for v in tried
                                               if v.blob != files[path][0]}, file_limits.LIMITS.file_bytes):
            contents.update(batch)
        served: set[str] = set()
        for path in sorted(broken):
            blob, _, problems = files[path]
            first = next(p for p in problems if p.severity == "error")
            old = previous.files.get(path)
            old_record = old[1] if old is not None else None
            if old_record is not None and old_record.path != path:
                old_record = None
            found = self._good_version(path, blob, tries.get(path), contents, old_record, file_dates.get(path))
            if found is not None:
                record, good, breaking, facts = found
                if facts is None:   # the record ``previous`` served: its dates as they were
                    facts = previous.file_dates.get(path)
                else:
                    apply_history(record, *facts, author_of=self.author_of)
                where = Stale(path, first.line, first.message, breaking or head, good.commit)
            elif old_record is not None and path not in settled:
                # not looked up, or the look-up ran out of versions or commits: what was served stays
                record, facts = old_record, previous.file_dates.get(path)
                before = previous.stale.get(path)
                where = Stale(path, first.line, first.message, before.broken if before else head,
                              before.served if before else previous.commit)
            else:
                continue   # never parsed (since it was added): not served
            files[path] = (blob, record, problems)
            if facts is not None:
                file_dates[path] = FileDates(*facts)
            stale[path] = where
            claims.pop(path, None)
            served.add(path)
            if len(served) <= LOGGED_LAST_GOOD:
                log.warning("%s: serving its last good version (commit %s)", where, where.served[:12])
        if len(served) > LOGGED_LAST_GOOD:
            log.warning("%d more files are served as their last good version (see /status)",
                        len(served) - LOGGED_LAST_GOOD)
        return served

    @staticmethod
    def _good_version(path: str, blob: str, tried, contents: dict, old_record, dates):
        """(record, its version, the commit that broke the file, its dates or None when it is
        ``old_record``) of the newest of ``tried`` (the file's versions, newest first) that parses
        with an id, or None. ``dates``: the file's dates at the head (when and by whom it was added)."""
        breaking = None
        for version in tried or ():
            if version.blob == blob:
                breaking = version.commit
                continue
            if old_record is not None and old_record.path == path and old_record.blob == version.blob:
                return old_record, version, breaking, None
            record, _ = read_file(path, contents.get(version.blob))
            if record is None or record.id is None:
                breaking = version.commit
                continue
            record.blob = version.blob
            once = version.status == "A"
            added, email = (version.when, version.email) if once or dates is None else (dates[1], dates[2])
            return record, version, breaking, (version.when, added, email, once)
        return None

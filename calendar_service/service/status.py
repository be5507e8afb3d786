"""The status view for operators: the branch, the remote and its last pull, a refused commit,
the search index, and the files skipped or waiting for an id at the head."""
from __future__ import annotations

import itertools
from datetime import datetime, timezone

from calendar_service.domain.faults import FAULTS

FAULTS_LISTED = 100  # the newest record failures listed by /status


def view(settings, store, snapshot, index, has_remote: bool, follower=None) -> dict:
    """What operators need to know: the branch head, the remote (without credentials), the last
    pull and a refused commit, the search index's commit, the head the follower thread reached
    (``sync.HeadFollower``; the index and ids follow new heads there, not in requests) and why its
    last step failed, the problems of files skipped or read with warnings at the head (path, line,
    message), and the files served as their last good version (``stale``, the first
    ``CALENDAR_STATUS_FILES_SHOWN``, with ``stale_count``)."""
    refused = store.refused
    last = store.last_pull
    health = store.pull_health
    problems = snapshot.problems
    indexed = (index.state() or {}).get("commit") if index is not None else None
    return {
        "head": snapshot.commit,
        "branch": settings.branch,
        "remote": {
            "url": store.remote_display if has_remote else None,
            "branch": settings.git_remote_branch if has_remote else None,
            # the last attempt to reach the remote (the periodic look at its head, a pull, the webhook)
            "last_pull": None if last is None else {"time": _time(last["time"]), "result": last["result"],
                                                     "error": last.get("error")},
            "last_successful_pull": None if health["last_success"] is None else {
                "time": _time(health["last_success"]["time"]), "head": health["last_success"]["head"]},
            "failing_since": None if health["failing_since"] is None else _time(health["failing_since"]),
            "consecutive_failures": health["failures"],
            "refused": None if refused is None else {"commit": refused.commit, "path": refused.path,
                                                     "reason": refused.reason},
        },
        "index": {"commit": indexed, "behind": index is not None and indexed != snapshot.commit},
        "follower": None if follower is None else {"commit": follower.followed, "failing": follower.failing},
        # the first problems by path (``CALENDAR_STATUS_FILES_SHOWN``), and how many there are in all
        "skipped": [{"path": p.path, "line": p.line, "message": p.message, "severity": p.severity}
                    for p in itertools.islice(problems, settings.status_files_shown)],
        "skipped_total": len(problems),
        "skipped_files": len({p.path for p in problems if p.severity == "error"}),
        # files that no longer parse, whose record is served as the last version that did
        "stale": stale_view(snapshot, settings.status_files_shown),
        "stale_count": len(snapshot.stale),
        # what could not be derived from one record in this process (left out of lists, feeds, the index)
        "record_failures": FAULTS.listed(FAULTS_LISTED),
        "record_failures_count": FAULTS.count,
        # files not served until the service's id commit lands (see ``ids``)
        "waiting_for_id": sorted({r.path for r in snapshot.unassigned}
                                 | {r.path for r, _ in snapshot.displaced + snapshot.reslugged}),
    }


def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stale_view(snapshot, limit: int) -> list[dict]:
    """The first ``limit`` files (by path) served as their last good version: where the file
    breaks, the commit that broke it and the commit whose version is served."""
    return [{"path": found.path, "line": found.line, "message": found.message, "broken_by": found.broken,
             "served_commit": found.served}
            for found in (snapshot.stale[path] for path in sorted(snapshot.stale)[:limit])]

"""The status view for operators: the branch, the remote and its last pull, a refused commit,
the search index, and the files skipped or waiting for an id at the head."""
from __future__ import annotations

from datetime import datetime, timezone


def view(settings, store, snapshot, index, has_remote: bool, follower=None) -> dict:
    """What operators need to know: the branch head, the remote (without credentials), the last
    pull and a refused commit, the search index's commit, the head the follower thread reached
    (``sync.HeadFollower``; the index and ids follow new heads there, not in requests) and why its
    last step failed, and the problems of files skipped or read with warnings at the head (path,
    line, message)."""
    refused = store.refused
    last = store.last_pull
    indexed = (index.state() or {}).get("commit") if index is not None else None
    return {
        "head": snapshot.commit,
        "branch": settings.branch,
        "remote": {
            "url": store.remote_display if has_remote else None,
            "branch": settings.git_remote_branch if has_remote else None,
            "last_pull": None if last is None else {
                "time": datetime.fromtimestamp(last["time"], timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "result": last["result"]},
            "refused": None if refused is None else {"commit": refused.commit, "path": refused.path,
                                                     "reason": refused.reason},
        },
        "index": {"commit": indexed, "behind": index is not None and indexed != snapshot.commit},
        "follower": None if follower is None else {"commit": follower.followed, "failing": follower.failing},
        "skipped": [{"path": p.path, "line": p.line, "message": p.message, "severity": p.severity}
                    for p in snapshot.problems],
        # files not served until the service's id commit lands (see ``ids``)
        "waiting_for_id": sorted({r.path for r in snapshot.unassigned}
                                 | {r.path for r, _ in snapshot.displaced + snapshot.reslugged}),
    }

"""History routes: a record's revisions, a past version, and the change feed."""
from __future__ import annotations

from calendar_service.http.call import Call
from calendar_service.http.handlers.records import target
from calendar_service.http.presenters import Presenter


def handle_revisions(call: Call):
    record = target(call)
    return {"revisions": call.service.revisions(record, call.snapshot)}, 200


def handle_revision(call: Call):
    record = target(call)
    past, old = call.service.revision_at(record, call.args["commit"])
    presenter = Presenter(past, call.urls, call.service.site_tz, call.unlocked, call.user)
    return presenter.present(old, single=True), 200


def handle_changes(call: Call):
    changes, token = call.service.changes(call.args.get("since"), call.user)
    if changes is None:
        return {"next_token": token}, 200
    return {"changes": changes, "next_token": token}, 200

"""History routes: a record's revisions, a past version, and the change feed."""
from __future__ import annotations

from flask import request

from calendar_service.domain.resources import EVENTS
from calendar_service.http.call import Call
from calendar_service.http.handlers.records import target
from calendar_service.http.presenters import Presenter


def history_target(call: Call):
    """The record whose file history a revisions route answers: an occurrence's series (a series
    is one file: every occurrence shares its history), else the record the id names."""
    record = target(call)
    series_id = getattr(record, "series_id", 0)
    if series_id and series_id != record.id:
        return call.snapshot.get(EVENTS, series_id) or record
    return record


def handle_revisions(call: Call):
    record = history_target(call)
    return {"revisions": call.service.revisions(record, call.snapshot)}, 200


def handle_revision(call: Call):
    record = history_target(call)
    past, old = call.service.revision_at(record, call.args["commit"])
    presenter = Presenter(past, call.urls, call.service.site_tz, call.unlocked, call.user)
    return presenter.present(old, single=True), 200


def handle_changes(call: Call):
    client = call.service.accounts.limits.client(request)
    changes, token = call.service.changes(call.args.get("since"), call.user, client)
    if changes is None:
        return {"next_token": token}, 200
    return {"changes": changes, "next_token": token}, 200

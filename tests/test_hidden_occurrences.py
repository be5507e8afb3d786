"""Occurrence ids of series the caller may not see answer exactly as ids naming nothing.

An occurrence id encodes its series id and its start to the minute: if a hidden (private,
draft, pending) series' occurrence ids answered differently from unknown ids, probing the
quarter hours of a week would give away when the hidden series meets. Through the real app.
"""
from __future__ import annotations

from datetime import datetime

import pytest

from calendar_service.domain.recurrence import occurrence_id

START = datetime(2030, 9, 3, 19, 0)     # Tuesdays 19:00, Europe/Berlin
SECOND = datetime(2030, 9, 10, 19, 0)   # its second occurrence (the first is served under the series id)
VARYING = {"Date", "Content-Length"}


def _series(admin, status: str) -> int:
    r = admin.post("/events", json={"title": f"Board {status}", "status": status, "start_date": "2030-09-03 19:00",
                                    "end_date": "2030-09-03 20:00", "timezone": "Europe/Berlin",
                                    "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU"]})
    assert r.status_code == 201, r.get_json()
    assert r.get_json()["status"] == status
    return r.get_json()["id"]


def _answer(client, method: str, ident: int) -> tuple:
    r = getattr(client, method)(f"/events/{ident}", **({"json": {"title": "x"}} if method == "put" else {}))
    body = r.get_json(silent=True)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        body["message"] = body["message"].replace(str(ident), "<id>")  # the message echoes the id asked for
    headers = {k: v for k, v in r.headers.items() if k not in VARYING}
    return r.status_code, body, headers


@pytest.mark.parametrize("status", ["private", "draft", "pending"])
def test_a_hidden_series_occurrence_answers_as_an_unknown_id(admin, as_role, status):
    sid = _series(admin, status)
    hidden = occurrence_id(sid, SECOND)
    unknown = occurrence_id(sid + 1000, SECOND)           # a series id never used
    off_rule = occurrence_id(sid, datetime(2030, 9, 11, 19, 0))  # the series' id, but not one of its times
    assert admin.get(f"/events/{hidden}").status_code == 200
    assert admin.get(f"/events/{hidden}").get_json()["post_parent"] == sid
    roles = [None, "subscriber"] + (["contributor"] if status != "pending" else [])
    for role in roles:
        client = as_role(role)
        for method in ("get", "head"):
            expected = _answer(client, method, unknown)
            assert expected[0] == 404, (role, expected)
            assert _answer(client, method, hidden) == expected, (role, method)
            assert _answer(client, method, off_rule) == expected, (role, method)
    # a signed-in user who may not read it gets the same as for an unknown id on writes too
    subscriber = as_role("subscriber")
    assert _answer(subscriber, "put", hidden) == _answer(subscriber, "put", unknown)
    assert _answer(as_role(None), "put", hidden) == _answer(as_role(None), "put", unknown)


def test_a_published_series_occurrence_is_still_read_by_anyone(admin, anon):
    sid = _series(admin, "publish")
    r = anon.get(f"/events/{occurrence_id(sid, SECOND)}")
    assert r.status_code == 200 and r.get_json()["post_parent"] == sid


def test_a_contributor_reads_the_occurrences_of_its_own_draft_series(as_role):
    contributor = as_role("contributor")
    sid = _series(contributor, "draft")
    r = contributor.get(f"/events/{occurrence_id(sid, SECOND)}")
    assert r.status_code == 200, r.get_json()
    assert as_role("author").get(f"/events/{occurrence_id(sid, SECOND)}").status_code == 404

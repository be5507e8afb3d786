"""Recurring events: what the API answers about a series' history and its writes.

Revisions asked by an occurrence id are the series file's (a series is one file), and the
answer of every write to a series or an occurrence is what a following single read of the
same id gives (but ``json_ld``, which the original answers on single reads only). Through the
real app and real git repositories."""
from __future__ import annotations

from datetime import datetime

from calendar_service.domain.recurrence import occurrence_id
from test_recurrence_files import create_series, occ


def read(client, ident: int) -> dict:
    """A single read without ``json_ld`` (what a write answers besides)."""
    r = client.get(f"/events/{ident}")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert "json_ld" in body
    del body["json_ld"]
    return body


def written(r, status: int = 200) -> dict:
    assert r.status_code == status, r.get_json()
    body = r.get_json()
    assert "json_ld" not in body
    return body


# ----------------------------------------------------------------------------- revisions


def test_revisions_by_an_occurrence_id_are_the_series_files(admin, as_role, repo):
    series = create_series(admin)
    sid = series["id"]
    assert written(admin.put(f"/events/{occ(sid, 10)}", json={"title": "With the orchestra"}))["id"] == occ(sid, 10)
    # a new slug renames the file: the history follows it, for the series id and its occurrences alike
    assert written(admin.put(f"/events/{sid}", json={"slug": "choir-renamed"}))["slug"] == "choir-renamed"
    assert "events/2030/09/choir-renamed.md" in repo.files()
    by_series = admin.get(f"/events/{sid}/revisions").get_json()["revisions"]
    assert [r["message"].splitlines()[0] for r in by_series] == [
        'Update all occurrences of event 1 "Choir"',
        'Update occurrence 2030-09-10 19:00:00 of event 1 "Choir"',
        'Create event 1 "Choir"']
    for ident in (occ(sid, 10), occ(sid, 17)):
        r = admin.get(f"/events/{ident}/revisions")
        assert r.status_code == 200, r.get_json()
        assert r.get_json()["revisions"] == by_series
        # a single revision by an occurrence id is the series as it was at that commit
        for revision in by_series:
            one = admin.get(f"/events/{ident}/revisions/{revision['commit']}")
            assert one.status_code == 200, one.get_json()
            assert one.get_json() == admin.get(f"/events/{sid}/revisions/{revision['commit']}").get_json()
    first = admin.get(f"/events/{occ(sid, 17)}/revisions/{by_series[-1]['commit']}").get_json()
    assert first["id"] == sid and first["slug"] == "choir" and first["recurrence"]["exceptions"] == {}
    # an id that names no occurrence is a 404, as an unknown id; the route stays for editors only
    assert admin.get(f"/events/{occ(sid, 11)}/revisions").status_code == 404
    assert admin.get(f"/events/{occ(sid, 11)}/revisions/{by_series[0]['commit']}").status_code == 404
    assert as_role(None).get(f"/events/{occ(sid, 10)}/revisions").status_code == 401
    assert as_role("author").get(f"/events/{occ(sid, 10)}/revisions").status_code == 403


# ----------------------------------------------------------------------------- write answers


def test_write_answers_are_what_a_following_read_gives(admin):
    created = written(admin.post("/events", json={
        "title": "Choir", "start_date": "2030-09-03 19:00", "end_date": "2030-09-03 21:00",
        "timezone": "Europe/Berlin", "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"]}), 201)
    sid = created["id"]
    assert created["recurrence"]["rules"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"]
    assert created == read(admin, sid)
    # the whole series (its id: scope all)
    whole = written(admin.put(f"/events/{sid}", json={"title": "Choir rehearsal"}))
    assert whole["recurrence"]["occurrences"].endswith(f"/events/{sid}/occurrences") and whole == read(admin, sid)
    # one occurrence: the occurrence with its post_parent
    one = written(admin.put(f"/events/{occ(sid, 10)}", json={"title": "With the orchestra"}))
    assert one["post_parent"] == sid and "recurrence" not in one
    assert one == read(admin, occ(sid, 10))
    # the first occurrence by the series id (scope this): the series id reads the series
    first = written(admin.put(f"/events/{sid}", json={"recurrence_scope": "this", "title": "First night"}))
    assert first["recurrence"]["exceptions"]["2030-09-03 19:00:00"] == {"title": "First night"}
    assert first == read(admin, sid)
    # all from an occurrence, moving every time: the occurrence under its new id
    moved = written(admin.put(f"/events/{occ(sid, 17)}", json={"recurrence_scope": "all",
                                                              "start_date": "2030-09-17 18:30"}))
    assert moved["id"] == occurrence_id(sid, datetime(2030, 9, 17, 18, 30)) and moved["post_parent"] == sid
    assert moved == read(admin, moved["id"])
    # following: the new series, with its own block
    split = written(admin.put(f"/events/{moved['id']}", json={"recurrence_scope": "following",
                                                              "title": "Late choir"}))
    assert split["id"] != sid and split["recurrence"]["rules"]
    assert split == read(admin, split["id"])
    # recurrence removed: a single event again, without a block
    single = written(admin.put(f"/events/{split['id']}", json={"recurrence": []}))
    assert "recurrence" not in single and single == read(admin, split["id"])
    # a delete of one occurrence answers it as it was
    before = read(admin, occurrence_id(sid, datetime(2030, 9, 10, 18, 30)))
    assert written(admin.delete(f"/events/{before['id']}")) == before
    # the trashed series carries its block too
    block = read(admin, sid)["recurrence"]
    trashed = written(admin.delete(f"/events/{sid}"))
    assert trashed["status"] == "trash" and trashed["recurrence"] == block

"""Listed occurrences are presented from their series' template (http/occurrence_json.py): the
lists must be the same bytes as with every occurrence built whole.

Real app, real git repository, real Whoosh index and the scanning fallback.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from calendar_service.http import occurrence_json
from calendar_service.http.occurrence_json import Template, event_times
from calendar_service.http.json_text import to_json
from tests.conftest import Client
from tests.test_event_filters import Content, settle


def _pages(client: Client, y: int) -> list[bytes]:
    """Every page of a list of the test's calendar, as the response bodies."""
    out = []
    for page in (1, 2, 3):
        r = client.get("/events", query_string={"start_date": f"{y}-03-01", "end_date": f"{y}-06-30",
                                                "per_page": 20, "page": page})
        assert r.status_code == 200, r.get_json()
        out.append(r.data)
    return out


@pytest.mark.parametrize("mode", ["index", "scan"])
def test_listed_occurrences_are_the_bytes_of_occurrences_built_whole(make_app, repo, monkeypatch, mode):
    y = datetime.now(timezone.utc).year + 1
    first = make_app()   # makes the repository
    c = Content(repo)
    cat, tag = c.category("Choirs"), c.tag("Evening")
    venue, organizer = c.venue("Hall", 52.5, 13.4), c.organizer("Ann")
    draft_venue = c.venue("Back room", status="draft")
    sid = c.event(f"{y}-03-03 19:00:00", f"{y}-03-03 21:00:00", tz="Europe/Berlin", title="Choir \"é\" <b>",
                  description="Sing\n\nloud", cost="5", categories=[cat], tags=[tag], venue=[venue, draft_venue],
                  organizer=[organizer], recurrence=["RRULE:FREQ=WEEKLY;COUNT=12"],
                  exceptions={f"{y}-03-17 19:00:00": {"start_date": f"{y}-03-18 20:00:00",
                                                      "end_date": f"{y}-03-18 22:30:00"},
                              f"{y}-03-24 19:00:00": {"title": "Guest choir"}})
    c.event(f"{y}-03-04 10:00:00", f"{y}-03-04 11:00:00", title="Between",
            recurrence=["RRULE:FREQ=DAILY;COUNT=40"], tz="America/New_York")
    c.event(f"{y}-03-05 10:00:00", f"{y}-03-05 11:00:00", title="Once")
    c.commit()

    def serve(app):
        if mode == "scan":
            app.extensions["calendar"].index = None
        anonymous, admin = Client(app.test_client(), None), Client(app.test_client(), "administrator")
        if mode == "index":
            settle(app.extensions["calendar"], anonymous, repo)
        return _pages(anonymous, y) + _pages(admin, y)

    templated = serve(first)
    listed = [e for page in templated[:3] for e in json.loads(page)["events"]]
    assert len(listed) == 12 + 40 + 1
    assert {e["timezone_abbr"] for e in listed} >= {"CET", "CEST", "EST", "EDT"}   # DST in both zones
    assert {e["start_date"][11:] for e in listed if e.get("post_parent", e["id"]) == sid} >= {"19:00:00", "20:00:00"}
    assert b"Back room" not in templated[0] and b"Back room" in templated[3]   # per viewer
    monkeypatch.setattr(occurrence_json, "templated", lambda record, single: False)
    assert serve(make_app()) == templated


def test_a_template_gives_back_the_text_it_was_cut_from_and_refuses_other_shapes():
    class Urls:
        def global_id(self, rid):
            return f"h?id={rid}"

        def rest(self, *parts):
            return "/".join(["r", *map(str, parts)])

    class Occurrence:
        id, series_id = 7, 5
        data = {"start_date": "2030-01-01 10:00:00", "end_date": "2030-01-01 11:00:00", "timezone": ""}

    built = {"id": 7, "global_id": "h?id=7", "global_id_lineage": ["h?id=7"], "author": "1",
             "rest_url": "r/events/7", "title": "T", **event_times(Occurrence.data, timezone.utc)[0],
             "cost": "", "post_parent": 5}
    template = Template.cut(built, to_json)
    assert template.text(Occurrence(), Urls(), timezone.utc) == to_json(built)
    moved = {"author": "1", **{k: v for k, v in built.items() if k != "author"}}
    assert Template.cut(moved, to_json) is None
    parent_first = {"post_parent": 5, **built}
    assert Template.cut(parent_first, to_json) is None

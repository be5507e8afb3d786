"""The JSON text of responses (``json_text.to_json``, written by orjson): the same text the
standard encoder writes (compact, UTF-8 characters as they are), so clients, ETags and the
original's byte-for-byte samples see no change; what orjson refuses is written by the standard
encoder, and what neither writes is refused as before.

Real app, real git repository, real Whoosh index.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from calendar_service.http.json_text import RawJSON, to_json

HOSTILE = 'Quote " back\\slash /slash <b>&amp;</b> \u2028 \u00e9 \U0001f3b7 tab\t nl\n ctl\x01 del\x7f'


def _standard(body: bytes) -> str:
    return json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":"))


def test_served_json_is_the_standard_encoders_text(factory, admin, anon):
    venue = factory.venue(venue=f"Hall {HOSTILE}", address=HOSTILE, phone="+49 30 1234")
    organizer = factory.organizer(organizer=f"Ann {HOSTILE}", email="ann@example.org")
    category = factory.category(name=f"Jazz {HOSTILE}", description=HOSTILE)
    tag = factory.tag(name=f"Late {HOSTILE}")
    event = factory.event(title=f"Night {HOSTILE}", description=f"<p>{HOSTILE}</p>", cost="€6.50",
                          venue=venue["id"], organizer=[organizer["id"]], categories=[category["id"]],
                          tags=[tag["id"]])
    bodies = []
    for client in (admin, anon):
        for path in ("/events", f"/events/{event['id']}", "/venues", f"/venues/{venue['id']}", "/organizers",
                     f"/organizers/{organizer['id']}", "/categories", f"/categories/{category['id']}", "/tags",
                     f"/tags/{tag['id']}", "/events/999999"):
            r = client.get(path)
            assert r.status_code in (200, 404), (path, r.get_json())
            bodies.append((path, r.data))
    listed = json.loads(bodies[0][1])["events"]
    assert [e["title"] for e in listed] == [f"Night {HOSTILE}"]
    assert listed[0]["venue"]["address"] == HOSTILE and listed[0]["cost_details"]["values"] == ["6.5"]
    for path, body in bodies:
        assert body.decode("utf-8") == _standard(body), path


def test_what_the_fast_encoder_refuses_is_written_by_the_standard_one():
    # integers past 64 bits and keys that are not text: orjson refuses both, the standard encoder
    # writes them (as the responses wrote them before)
    assert to_json({"n": 2 ** 70, 3: [RawJSON('{"a":1}')], "s": "é"}) == \
        '{"n":1180591620717411303424,"3":[{"a":1}],"s":"é"}'
    assert to_json([RawJSON('"x"'), {"k": RawJSON("[1,2]")}]) == '["x",{"k":[1,2]}]'


@pytest.mark.parametrize("value", [datetime(2026, 1, 1, tzinfo=timezone.utc), object(), {1, 2}])
def test_values_json_has_no_text_for_are_refused(value):
    # a datetime is not turned into text on the way out (a presenter must format it itself)
    with pytest.raises(TypeError):
        to_json({"at": value})

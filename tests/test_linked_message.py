"""A link to a venue that another replica just deleted gets one answer, whether this replica
has already pulled the delete or not: 400 ``rest_invalid_param`` naming the id (the plugin's
code for a linked id that is not a venue), never ``could-not-create-venue``."""
from __future__ import annotations

from test_remote import bare, instances, remote_url  # noqa: F401  (fixtures)
from test_replicas import daemon  # noqa: F401  (fixture)


def _venue(inst, name: str) -> int:
    r = inst.admin.post("/venues", json={"venue": name})
    assert r.status_code == 201, r.get_json()
    return r.get_json()["id"]


def test_a_link_to_a_deleted_venue_has_one_message_on_both_replicas(daemon, instances):  # noqa: F811
    url, _ = daemon
    ahead, behind = instances("ahead", url), instances("behind", url)
    venue = _venue(ahead, "Old Hall")
    assert behind.hook().get_json()["moved"] is True
    assert behind.admin.get(f"/venues/{venue}").status_code == 200
    # the venue is deleted for good on one replica; the other has not pulled yet
    r = ahead.admin.delete(f"/venues/{venue}?force=true")
    assert r.status_code == 200, r.get_json()
    body = {"title": "Linked", "start_date": "tomorrow 10am", "end_date": "tomorrow 11am", "venue": venue}
    up_to_date = ahead.admin.post("/events", json=body)
    lagging = behind.admin.post("/events", json=body)
    expected = {"code": "rest_invalid_param", "message": "Invalid parameter(s): venue",
                "data": {"status": 400, "params": {"venue": f"'{venue}' is not the id of a venue"}}}
    for r in (up_to_date, lagging):
        assert r.status_code == 400, r.get_json()
        got = r.get_json()
        assert {"code": got["code"], "message": got["message"],
                "data": {"status": got["data"]["status"], "params": got["data"]["params"]}} == expected
    # nothing was written by either
    assert ahead.admin.get("/events?search=Linked").get_json()["events"] == []
    assert behind.hook().status_code == 200
    assert behind.admin.get("/events?search=Linked").get_json()["events"] == []

"""The query strings of a list's page links: the text ``urllib.parse.urlencode`` gives."""
from __future__ import annotations

import random
from urllib.parse import urlencode


def test_the_links_query_is_urlencodes_text_for_any_parameter():
    from calendar_service.http.handlers.paging import _urlencode

    alphabet = [chr(code) for code in range(0, 260)] + list("é€😀\u2028 :/?&=+%#[]")
    rng = random.Random(7)
    for _ in range(3000):
        pairs = [("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))),
                  "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))) for _ in range(rng.randint(0, 5))]
        assert _urlencode(pairs) == urlencode(pairs), pairs
    dates = [("page", "2"), ("per_page", "10"), ("start_date", "2026-11-27 00:00:00"), ("status", "publish")]
    assert _urlencode(dates) == "page=2&per_page=10&start_date=2026-11-27+00%3A00%3A00&status=publish"


def test_a_page_links_to_its_neighbours_with_the_request_s_parameters(anon, factory):
    for k in range(3):
        factory.event(title=f"Linked {k}", start_date=f"2027-01-0{k + 1} 10:00:00", end_date=f"2027-01-0{k + 1} 11:00:00")
    r = anon.get("/events", query_string={"per_page": 1, "page": 2, "start_date": "2027-01-01 00:00",
                                          "end_date": "2027-12-31",
                                          "search": "Linked"})
    body = r.get_json()
    assert r.status_code == 200 and body["total"] == 3, body
    query = "per_page=1&start_date=2027-01-01+00%3A00%3A00&end_date=2027-12-31+23%3A59%3A59"
    assert body["next_rest_url"].endswith(f"/events/?{query}&search=Linked&status=publish&page=3")
    assert body["previous_rest_url"].endswith(f"/events/?{query}&search=Linked&status=publish")
    assert body["rest_url"].endswith(f"/events/?page=2&{query}&search=Linked&status=publish")

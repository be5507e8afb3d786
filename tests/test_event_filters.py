"""GET /events: every filter alone and combined, ordering, pagination, and the search index
that answers the lists.

Nothing is mocked: each test has its own git repository, the real app and the real Whoosh
index (see conftest.py). Records are mostly written as files and committed in one go, as an
editor working outside the API would (the format is the one the API writes), which keeps
the tests fast and gives full control over ids, publication dates and time zones.

Most filter tests run twice (``cal`` fixture): once answered by the search index (the test
waits until the index reflects the branch head, and every list request asserts it was
answered from the index) and once with the index switched off, so by scanning. The last
test checks the two paths agree on a few hundred random queries.

Expected values are the original plugin's. The rules they check: an event matches start_date
when it starts at or after it and end_date when it ends at or before it (so it lies inside the
window); starts_before / starts_after / ends_before / ends_after are strict; without
strict_dates, start_date means the start of its day and the other bounds the end of theirs;
the default window runs from yesterday 00:00 (site time) for 24 months, and a relative bound
drops the defaults. search needs every word in title, excerpt or description; categories,
tags, venue and organizer match any of the listed ids or slugs; include ignores dates and
orders by publication date then id; hidden events never appear in lists. Lists are ordered by
start, then publication date, then id.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo

import pytest
import yaml
from dateutil.relativedelta import relativedelta

from conftest import API, Client, followed, remove_index

BASE = "http://localhost" + API
FMT = "%Y-%m-%d %H:%M:%S"
MAIN = Path(__file__).resolve().parents[1]

PAGE_NOT_FOUND = {"code": "event-archive-page-not-found",
                  "message": "The requested event archive page does not exist", "data": {"status": 404}}


# ============================================================================= helpers


def utc_today() -> date:
    return datetime.now(timezone.utc).date()


def at(day: date, hour: int = 0, minute: int = 0, second: int = 0) -> str:
    return datetime(day.year, day.month, day.day, hour, minute, second).strftime(FMT)


def ts(day: date, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=timezone.utc).timestamp())


def query_of(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


def local_path(url: str) -> str:
    """A link of a response as a path the test client can request."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == "http://localhost", url
    return parts.path + ("?" + parts.query if parts.query else "")


def ids(body: dict) -> list[int]:
    return [e["id"] for e in body["events"]]


def dump_event(meta: dict, description: str = "") -> str:
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n" + \
        (description + "\n" if description else "")


def hand_commit(repo, files: dict, message: str = "Edit by hand") -> None:
    """Write (content) or delete (None) several files and commit them as one editor commit."""
    repo.commit_files(files, message)


class Content:
    """Record files as an editor writes them (same keys and format as the API's files).

    Posts (events, venues, organizers) share one id space, categories and tags another, as in
    the API. Nothing is written until ``commit``: one commit for everything pending.
    """

    def __init__(self, repo, first_post: int = 1000):
        self.repo = repo
        self.pending: dict[str, str | None] = {}
        self.post_id = first_post
        self.term_id = 0
        self.events: dict[int, dict] = {}     # id -> front matter
        self.paths: dict[int, str] = {}

    def _next_post(self) -> int:
        self.post_id += 1
        return self.post_id

    def _term(self, folder: str, name: str, slug: str | None) -> int:
        self.term_id += 1
        slug = slug or name.lower().replace(" ", "-")
        self.pending[f"{folder}/{slug}.yaml"] = yaml.safe_dump({"id": self.term_id, "name": name, "slug": slug},
                                                               sort_keys=False)
        return self.term_id

    def category(self, name: str, slug: str | None = None) -> int:
        return self._term("categories", name, slug)

    def tag(self, name: str, slug: str | None = None) -> int:
        return self._term("tags", name, slug)

    def venue(self, name: str, lat: float | None = None, lng: float | None = None, status: str = "publish") -> int:
        vid = self._next_post()
        meta = {"id": vid, "venue": name, "slug": f"venue-{vid}", "status": status, "author": 1,
                "date_utc": "2020-01-01 00:00:00", "modified_utc": "2020-01-01 00:00:00",
                "show_map": True, "show_map_link": True}
        if lat is not None:
            meta["geo_lat"] = lat
        if lng is not None:
            meta["geo_lng"] = lng
        self.pending[f"venues/venue-{vid}.yaml"] = yaml.safe_dump(meta, sort_keys=False)
        return vid

    def organizer(self, name: str, status: str = "publish") -> int:
        oid = self._next_post()
        meta = {"id": oid, "organizer": name, "slug": f"organizer-{oid}", "status": status, "author": 1,
                "date_utc": "2020-01-01 00:00:00", "modified_utc": "2020-01-01 00:00:00"}
        self.pending[f"organizers/organizer-{oid}.yaml"] = yaml.safe_dump(meta, sort_keys=False)
        return oid

    def event(self, start: str, end: str | None = None, *, title: str | None = None, tz: str | None = "UTC",
              status: str = "publish", pub: str = "2020-01-01 00:00:00", description: str = "",
              id: int | None = None, slug: str | None = None, author: int = 1, **extra) -> int:
        eid = id if id is not None else self._next_post()
        slug = slug or f"event-{eid}"
        meta = {"id": eid, "title": title or f"Event {eid}", "slug": slug, "status": status, "author": author,
                "date_utc": pub, "modified_utc": pub, "start_date": start, "end_date": end or start}
        if tz is not None:
            meta["timezone"] = tz
        meta["all_day"] = False
        for key, value in extra.items():
            if value is not None:
                meta[key] = value
        path = f"events/{slug}.md"
        self.pending[path] = dump_event(meta, description)
        self.events[eid] = meta
        self.paths[eid] = path
        return eid

    def remove(self, eid: int) -> None:
        self.pending[self.paths.pop(eid)] = None
        del self.events[eid]

    def commit(self, message: str = "Add by hand") -> None:
        hand_commit(self.repo, self.pending, message)
        self.pending = {}


def settle(svc, client: Client, repo, timeout: float = 20.0) -> None:
    """Make list requests until the search index reflects the branch head and answers lists (the
    follower thread first gives ids to files that lack them and brings the index along)."""
    followed(svc, timeout)
    deadline = time.monotonic() + timeout
    while True:
        r = client.get("/events")
        assert r.status_code == 200, r.get_json()
        head = repo.head()  # read after the request: a read may commit ids the service gives
        state = svc.index.state() or {}
        view = svc.index._view
        if state.get("commit") == head and view is not None and view.commit == head:
            return
        assert time.monotonic() < deadline, f"the index did not catch up with {head}: {state}"
        time.sleep(0.02)


class Cal:
    """One app on the test's repository, answering lists from the index or by scanning."""

    def __init__(self, app, repo, mode: str):
        self.app = app
        self.svc = app.extensions["calendar"]
        self.repo = repo
        self.mode = mode
        self.content = Content(repo)
        self.flask = app.test_client()
        self._clients: dict = {}
        if mode == "scan":
            self.svc.index = None

    def client(self, role: str | None = None) -> Client:
        if role not in self._clients:
            self._clients[role] = Client(self.flask, role)
        return self._clients[role]

    def commit(self, message: str = "Add by hand") -> None:
        self.content.commit(message)
        self.ready()

    def ready(self) -> None:
        followed(self.svc)   # ids given to files that lack them
        if self.mode == "index":
            settle(self.svc, self.client(), self.repo)

    def get(self, params=None, role: str | None = None, path: str = "/events"):
        r = self.client(role).get(path, query_string=params or {})
        if self.mode == "index":
            view = self.svc.index._view
            head = self.svc.snapshot().commit
            assert view is not None and view.commit == head, "the list was not answered by an up-to-date index"
        return r

    def list(self, params=None, role: str | None = None) -> dict:
        r = self.get(params, role)
        assert r.status_code == 200, (params, r.get_json())
        body = r.get_json()
        assert r.headers["X-TEC-Total"] == str(body["total"])
        assert r.headers["X-TEC-TotalPages"] == str(body["total_pages"])
        return body

    def ids(self, params=None, role: str | None = None) -> list[int]:
        return ids(self.list(params, role))

    def bad(self, params, role: str | None = None, param: str | None = None) -> dict:
        r = self.get(params, role)
        body = r.get_json()
        assert r.status_code == 400, (params, body)
        assert body["code"] == "rest_invalid_param", body
        if param is not None:
            assert param in body["data"]["params"], body
        return body


@pytest.fixture(params=["index", "scan"])
def cal(request, app, repo) -> Cal:
    return Cal(app, repo, request.param)


def assert_empty(body: dict) -> None:
    assert body["events"] == []
    assert (body["total"], body["total_pages"]) == (0, 0)
    assert "next_rest_url" not in body and "previous_rest_url" not in body


# ============================================================================= the date window


def test_default_window_runs_from_yesterday_to_24_months_ahead(cal):
    c, d = cal.content, utc_today()
    horizon = (datetime.now(timezone.utc) + relativedelta(months=24)).date()
    yesterday_first = c.event(at(d - timedelta(days=1), 0, 0), at(d - timedelta(days=1), 1, 0))
    before_yesterday = c.event(at(d - timedelta(days=2), 23, 0), at(d - timedelta(days=2), 23, 59, 59))
    started_before = c.event(at(d - timedelta(days=2), 22), at(d, 1))          # starts outside the window
    today_evening = c.event(at(d, 20), at(d, 21))
    last_day = c.event(at(horizon, 10), at(horizon, 23, 59, 59))
    ends_too_late = c.event(at(horizon, 22), at(horizon + timedelta(days=1), 0, 30))
    after_horizon = c.event(at(horizon + timedelta(days=1), 9), at(horizon + timedelta(days=1), 10))
    cal.commit()
    body = cal.list()
    assert ids(body) == [yesterday_first, today_evening, last_day]
    assert (body["total"], body["total_pages"]) == (3, 1)
    assert query_of(body["rest_url"]) == [
        ("page", "1"), ("per_page", "10"), ("start_date", at(d - timedelta(days=1))),
        ("end_date", at(horizon, 23, 59, 59)), ("status", "publish")]
    assert body["rest_url"].startswith(BASE + "/events/?")
    assert {before_yesterday, started_before, ends_too_late, after_horizon}.isdisjoint(ids(body))


def test_inclusive_whole_days_versus_strict_dates(cal):
    c = cal.content
    e1 = c.event("2018-01-01 16:00:00", "2018-01-01 16:30:00")
    e2 = c.event("2018-01-01 20:00:00", "2018-01-01 20:30:00")
    c.event("2017-12-31 23:00:00", "2017-12-31 23:30:00")
    c.event("2018-01-02 00:00:00", "2018-01-02 00:30:00")
    cal.commit()
    window = {"start_date": "2018-01-01 15:00:00", "end_date": "2018-01-01 18:00:00"}
    inclusive = cal.list(window)
    assert ids(inclusive) == [e1, e2]
    assert ("start_date", "2018-01-01 00:00:00") in query_of(inclusive["rest_url"])
    assert ("end_date", "2018-01-01 23:59:59") in query_of(inclusive["rest_url"])
    for value in ("false", "no", "off", "whatever"):        # any other non-empty string: inclusive
        assert cal.ids({**window, "strict_dates": value}) == [e1, e2], value
    for value in ("true", "TRUE", "1", "yes", "on"):
        strict = cal.list({**window, "strict_dates": value})
        assert ids(strict) == [e1], value
        assert ("start_date", "2018-01-01 15:00:00") in query_of(strict["rest_url"])
        assert ("end_date", "2018-01-01 18:00:00") in query_of(strict["rest_url"])
    for value in ("", "0"):                                  # PHP-empty values are refused
        cal.bad({**window, "strict_dates": value}, param="strict_dates")


def test_unix_timestamps_weekly_events(cal):
    c, d = cal.content, utc_today()
    weeks = [c.event(at(d + timedelta(weeks=w), 10), at(d + timedelta(weeks=w), 12)) for w in range(1, 11)]
    cal.commit()
    week5 = d + timedelta(weeks=5)
    # start_date at the start time of week 5: the whole day counts -> weeks 5..10
    assert cal.ids({"start_date": ts(week5, 10)}) == weeks[4:]
    # even a timestamp late on that day keeps week 5 (inclusive whole days)
    assert cal.ids({"start_date": ts(week5, 23, 30)}) == weeks[4:]
    # strict: one second after week 5's start excludes it
    assert cal.ids({"start_date": ts(week5, 10, 0, 1), "strict_dates": "true"}) == weeks[5:]
    # end_date at the end time of week 5 (7200 s after its start) -> weeks 1..5
    assert cal.ids({"end_date": ts(week5, 10) + 7200}) == weeks[:5]
    assert cal.ids({"end_date": ts(week5, 11, 59, 59), "strict_dates": "1"}) == weeks[:4]
    # events every 7 days, +10 days .. +30 days -> 3
    assert cal.ids({"start_date": ts(d + timedelta(days=10), 12), "end_date": ts(d + timedelta(days=30), 12)}) \
        == weeks[1:4]
    body = cal.list({"start_date": ts(week5, 10)})
    assert ("start_date", at(week5)) in query_of(body["rest_url"])


@pytest.mark.parametrize("param", ["start_date", "end_date", "starts_before", "starts_after", "ends_before",
                                   "ends_after"])
def test_unparsable_dates_are_400(app, repo, param):
    cal = Cal(app, repo, "scan")
    for value in ("before my birthday", "after my birthday", "2018-13-45", "[]"):
        cal.bad({param: value}, param=param)


@pytest.fixture
def spread(cal):
    """Events around new year 2030 (Archive_EventTest relative-dates case, with the same answers)."""
    c = cal.content
    e = {
        "e5": c.event("2029-12-29 10:00:00", "2030-01-01 12:00:00"),
        "e4": c.event("2029-12-30 10:00:00", "2030-01-01 10:00:00"),
        "e6": c.event("2029-12-31 18:00:00", "2029-12-31 20:00:00"),
        "e1": c.event("2030-01-01 09:00:00", "2030-01-01 10:00:00"),
        "e2": c.event("2030-01-01 12:00:00", "2030-01-02 10:00:00"),
        "e3": c.event("2030-01-02 11:00:00", "2030-01-02 12:00:00"),
        "e7": c.event("2030-01-03 09:00:00", "2030-01-03 10:00:00"),
    }
    cal.commit()
    return e


def names(e: dict, found: list[int]) -> list[str]:
    by_id = {v: k for k, v in e.items()}
    return [by_id.get(i, str(i)) for i in found]


def test_relative_dates_select_overlapping_multi_day_events(cal, spread):
    e = spread
    q = lambda **p: names(e, cal.ids(p))  # noqa: E731
    assert q(ends_after="2029-12-31", starts_before="2030-01-02") == ["e5", "e4", "e1", "e2", "e3"]
    assert q(ends_after="2029-12-31", starts_before="2030-01-02", start_date="2029-12-30",
             end_date="2030-01-02") == ["e4", "e1", "e2", "e3"]
    # strict comparisons are strict: ending exactly at ends_after or starting exactly at starts_before is out
    assert q(ends_after="2029-12-31 20:00:00", starts_before="2030-01-02 11:00:00", strict_dates="true") == \
        ["e5", "e4", "e1", "e2"]
    # inclusive mode moves every relative value to 23:59:59 of its day, the *_after ones too
    assert q(starts_after="2030-01-01") == ["e3", "e7"]
    assert q(starts_after="2030-01-01", strict_dates="true") == ["e1", "e2", "e3", "e7"]
    assert q(ends_before="2030-01-01") == ["e5", "e4", "e6", "e1"]
    assert q(ends_before="2030-01-01 10:00:00", strict_dates="true") == ["e6"]
    assert q(ends_after="2030-01-02") == ["e7"]
    assert q(starts_before="2029-12-30") == ["e5", "e4"]
    assert q(starts_before="2029-12-30", strict_dates="true") == ["e5"]


def test_an_event_must_lie_inside_start_date_and_end_date(cal, spread):
    e = spread
    q = lambda **p: names(e, cal.ids(p))  # noqa: E731
    assert q(start_date="2030-01-01", end_date="2030-01-01") == ["e1"]         # e2 ends the next day
    assert q(start_date="2030-01-01", end_date="2030-01-02") == ["e1", "e2", "e3"]
    assert q(start_date="2029-12-29", end_date="2030-01-01") == ["e5", "e4", "e6", "e1"]
    assert q(start_date="2029-12-29", end_date="2030-01-03") == ["e5", "e4", "e6", "e1", "e2", "e3", "e7"]
    assert q(start_date="2030-01-04", end_date="2030-01-10") == []


def test_relative_dates_drop_the_default_window_and_are_echoed(cal):
    c, d = cal.content, utc_today()
    long_ago = c.event(at(d - timedelta(days=730), 10), at(d - timedelta(days=730), 11))
    soon = c.event(at(d + timedelta(days=3), 10), at(d + timedelta(days=3), 11))
    far = c.event(at(d + timedelta(days=30 * 31), 10), at(d + timedelta(days=30 * 31), 11))   # beyond 24 months
    cal.commit()
    assert cal.ids() == [soon]
    assert cal.ids({"starts_before": at(d - timedelta(days=700))}) == [long_ago]
    assert cal.ids({"ends_after": at(d)}) == [soon, far]
    assert cal.ids({"ends_after": at(d - timedelta(days=800)), "starts_before": at(d + timedelta(days=5))}) == \
        [long_ago, soon]
    # explicit start_date/end_date are kept and AND-ed with the relative ones
    assert cal.ids({"ends_after": at(d), "end_date": at(d + timedelta(days=10))}) == [soon]
    assert cal.ids({"starts_before": at(d + timedelta(days=5)), "start_date": at(d)}) == [soon]
    body = cal.list({"starts_before": "2030-01-02 08:00:00", "ends_after": "2029-12-31 08:00:00"})
    keys = [k for k, _ in query_of(body["rest_url"])]
    assert "start_date" not in keys and "end_date" not in keys
    assert ("starts_before", "2030-01-02 23:59:59") in query_of(body["rest_url"])
    assert ("ends_after", "2029-12-31 23:59:59") in query_of(body["rest_url"])
    assert keys.index("starts_before") < keys.index("ends_after")
    strict = cal.list({"starts_before": "2030-01-02 08:00:00", "strict_dates": "true"})
    assert ("starts_before", "2030-01-02 08:00:00") in query_of(strict["rest_url"])


def test_events_with_their_own_time_zone_are_compared_by_utc_instant(cal):
    c = cal.content
    auckland = c.event("2030-01-02 08:00:00", "2030-01-02 09:00:00", tz="Pacific/Auckland")   # 01-01 19:00 UTC
    los_angeles = c.event("2030-01-01 20:00:00", "2030-01-01 21:00:00", tz="America/Los_Angeles")  # 01-02 04:00
    utc = c.event("2030-01-01 23:30:00", "2030-01-01 23:45:00", tz="UTC")
    kolkata = c.event("2030-01-02 03:00:00", "2030-01-02 03:30:00", tz="UTC+5:30")   # 01-01 21:30 UTC
    no_zone = c.event("2030-01-01 22:00:00", "2030-01-01 22:10:00", tz=None)         # the site's zone (UTC)
    cal.commit()
    assert cal.ids({"start_date": "2030-01-01", "end_date": "2030-01-01"}) == [auckland, kolkata, no_zone, utc]
    assert cal.ids({"start_date": "2030-01-02", "end_date": "2030-01-02"}) == [los_angeles]
    assert cal.ids({"start_date": "2029-12-31", "end_date": "2030-01-03"}) == \
        [auckland, kolkata, no_zone, utc, los_angeles]
    assert cal.ids({"start_date": "2030-01-01 19:30:00", "end_date": "2030-01-02 04:30:00",
                    "strict_dates": "true"}) == [kolkata, no_zone, utc]
    assert cal.ids({"starts_after": "2030-01-01 23:30:00", "strict_dates": "true"}) == [los_angeles]
    assert cal.ids({"ends_before": "2030-01-01 20:00:00", "strict_dates": "true"}) == []
    assert cal.ids({"ends_before": "2030-01-01 20:00:01", "strict_dates": "true"}) == [auckland]


@pytest.mark.parametrize("mode", ["index", "scan"])
def test_window_bounds_are_read_in_the_site_time_zone(make_app, repo, mode):
    cal = Cal(make_app(site_timezone="America/New_York"), repo, mode)
    c = cal.content
    late_utc = c.event("2030-01-01 03:00:00", "2030-01-01 03:30:00", tz="UTC")      # 2029-12-31 22:00 in NY
    early_utc = c.event("2030-01-01 06:00:00", "2030-01-01 06:30:00", tz="UTC")     # 2030-01-01 01:00 in NY
    site_zone = c.event("2030-01-01 23:30:00", "2030-01-01 23:45:00", tz=None)      # New York wall clock
    next_day = c.event("2030-01-02 05:30:00", "2030-01-02 06:00:00", tz="UTC")      # 01-02 00:30 in NY
    cal.commit()
    body = cal.list({"start_date": "2030-01-01", "end_date": "2030-01-01"})
    assert ids(body) == [early_utc, site_zone]
    assert ("start_date", "2030-01-01 00:00:00") in query_of(body["rest_url"])
    assert cal.ids({"start_date": "2029-12-31", "end_date": "2029-12-31"}) == [late_utc]
    assert cal.ids({"start_date": "2030-01-02", "end_date": "2030-01-02"}) == [next_day]
    # a value with an offset is an instant
    assert cal.ids({"start_date": "2030-01-01T05:00:00+00:00", "end_date": "2030-01-02T05:00:00+00:00",
                    "strict_dates": "true"}) == [early_utc, site_zone]


# ============================================================================= search


def test_search_every_word_in_title_excerpt_or_description(cal):
    c, d = cal.content, utc_today()
    day = lambda n: at(d + timedelta(days=n), 10)  # noqa: E731
    foo = [c.event(day(1), title="Foo"), c.event(day(2), title="foo")]
    foo_bar = [c.event(day(3), title="Foo Bar"), c.event(day(4), title="bar  foo")]
    bar = [c.event(day(5), title="Bar"), c.event(day(6), title="BAR")]
    in_excerpt = c.event(day(7), title="Other", excerpt="a FOO in the excerpt")
    in_body = c.event(day(8), title="Another", description="Something about foo and bar here")
    zork = c.event(day(9), title="Nothing", description="zork")
    c.event(day(10), title="Foo hidden", hide_from_listings=True)
    draft = c.event(day(11), title="Foo draft", status="draft")
    cal.commit()
    assert cal.ids({"search": "foo"}) == foo + foo_bar + [in_excerpt, in_body]
    assert cal.ids({"search": "bar"}) == foo_bar + bar + [in_body]
    assert cal.ids({"search": "foo bar"}) == foo_bar + [in_body]
    assert cal.ids({"search": "BAR FOO"}) == foo_bar + [in_body]
    assert cal.ids({"search": "foo zork"}) == []
    assert cal.ids({"search": "zork"}) == [zork]
    assert cal.ids({"search": "foo"}, role="editor") == foo + foo_bar + [in_excerpt, in_body, draft]
    body = cal.list({"search": "foo bar"})
    assert ("search", "foo bar") in query_of(body["rest_url"])
    assert body["total"] == 3
    for value in ("", "0"):
        cal.bad({"search": value}, param="search")


# ============================================================================= categories and tags


@pytest.mark.parametrize("kind", ["categories", "tags"])
def test_categories_and_tags_by_id_and_slug(cal, kind):
    c, d = cal.content, utc_today()
    make = c.category if kind == "categories" else c.tag
    t1, t2, empty = make("Term One", "term-one"), make("Term Two", "term-two"), make("Unused", "unused")
    day = iter(range(1, 100))
    nxt = lambda: at(d + timedelta(days=next(day)), 10)  # noqa: E731
    in_t1 = [c.event(nxt(), **{kind: [t1]}) for _ in range(3)]
    by_slug = c.event(nxt(), **{kind: ["term-one"]})           # an editor may write the slug
    in_t2 = [c.event(nxt(), **{kind: [t2]}) for _ in range(2)]
    both = c.event(nxt(), **{kind: [t2, t1]})
    draft = c.event(nxt(), **{kind: [t1]}, status="draft")
    c.event(nxt(), **{kind: [t1]}, hide_from_listings=True)
    others = [c.event(nxt()) for _ in range(3)]
    cal.commit()
    t1_events = in_t1 + [by_slug, both]
    t12 = sorted(t1_events + in_t2)
    for value in (t1, str(t1), "term-one", " term-one ", [t1], ["term-one"]):
        param = {f"{kind}[]": value} if isinstance(value, list) else {kind: value}
        assert cal.ids(param) == t1_events, value
    for value in (f"{t1},{t2}", f"term-one, {t2}", "term-two,term-one", [str(t1), "term-two"]):
        param = {f"{kind}[]": value} if isinstance(value, list) else {kind: value}
        assert cal.ids(param) == t12, value
    body = cal.list({kind: t1, "per_page": 3, "page": 2})
    assert ids(body) == t1_events[3:]
    assert (body["total"], body["total_pages"]) == (5, 2)
    assert_empty(cal.list({kind: "unused"}))
    r = cal.get({kind: empty})
    assert (r.headers["X-TEC-Total"], r.headers["X-TEC-TotalPages"]) == ("0", "0")
    assert cal.ids({kind: t1}, role="editor") == sorted(t1_events + [draft])
    assert cal.ids() == sorted(t12 + others)
    for value in ("no-such-term", "999999", f"{t1},no-such-term", ["term-one", "nope"]):
        param = {f"{kind}[]": value} if isinstance(value, list) else {kind: value}
        cal.bad(param, param=kind)


# ============================================================================= venue and organizer


@pytest.mark.parametrize("kind", ["venue", "organizer"])
def test_venues_and_organizers_are_ored(cal, kind):
    c, d = cal.content, utc_today()
    make = c.venue if kind == "venue" else c.organizer
    other = c.organizer if kind == "venue" else c.venue
    l1, l2, l3, l4 = (make(f"Linked {n}") for n in range(1, 5))
    stranger = other("Other kind")
    day = iter(range(1, 100))
    nxt = lambda: at(d + timedelta(days=next(day)), 10)  # noqa: E731
    of = {n: [c.event(nxt(), **{kind: [link]}) for _ in range(3)] for n, link in ((1, l1), (2, l2), (3, l3))}
    shared = c.event(nxt(), **{kind: [l1, l2]})
    drafts = [c.event(nxt(), **{kind: [l4]}, status="draft") for _ in range(3)]
    [c.event(nxt()) for _ in range(3)]
    cal.commit()
    first = of[1] + [shared]
    assert cal.ids({kind: l1}) == first
    assert cal.ids({f"{kind}[]": [l1]}) == first
    assert cal.ids({kind: f"{l1},{l2}"}) == of[1] + of[2] + [shared]
    assert cal.ids({f"{kind}[]": [l1, l2, l3]}) == of[1] + of[2] + of[3] + [shared]
    assert cal.ids({kind: f"{l1}, {l2},{l3},{l4}", "per_page": 20}) == of[1] + of[2] + of[3] + [shared]
    # the drafts at the fourth: nothing for visitors, all three for editors
    assert_empty(cal.list({kind: l4}))
    assert cal.ids({kind: l4}, role="editor") == drafts
    assert cal.ids({kind: f"{l1},{l4}"}, role="editor") == first + drafts
    body = cal.list({kind: f"{l2},{l1}"})
    assert (kind, f"{l1},{l2}") in query_of(body["rest_url"])
    for value in ("foo", "23", "999999", str(stranger), f"{l1},foo", f"{l1},0", "-1"):
        cal.bad({kind: value}, param=kind)


def test_venue_and_organizer_and_terms_are_anded(cal):
    c, d = cal.content, utc_today()
    v, o, cat = c.venue("Hall"), c.organizer("Crew"), c.category("Music", "music")
    match = c.event(at(d + timedelta(days=1), 10), venue=[v], organizer=[o], categories=[cat])
    c.event(at(d + timedelta(days=2), 10), venue=[v], organizer=[o])
    c.event(at(d + timedelta(days=3), 10), venue=[v], categories=[cat])
    c.event(at(d + timedelta(days=4), 10), organizer=[o], categories=[cat])
    cal.commit()
    assert cal.ids({"venue": v, "organizer": o, "categories": "music"}) == [match]
    assert len(cal.ids({"venue": v})) == 3
    assert len(cal.ids({"organizer": o, "categories": cat})) == 2


# ============================================================================= featured, status


def test_featured_true_false_and_absent(cal):
    c, d = cal.content, utc_today()
    day = iter(range(1, 100))
    nxt = lambda: at(d + timedelta(days=next(day)), 10)  # noqa: E731
    featured = [c.event(nxt(), featured=True) for _ in range(3)]
    plain = [c.event(nxt()) for _ in range(2)] + [c.event(nxt(), featured=False)]
    featured_drafts = [c.event(nxt(), featured=True, status="draft") for _ in range(3)]
    c.event(nxt(), featured=True, hide_from_listings=True)
    cal.commit()
    for value in ("true", "1", "TRUE"):
        assert cal.ids({"featured": value}) == featured, value
    for value in ("false", "0"):
        assert cal.ids({"featured": value}) == plain, value
    assert cal.ids() == sorted(featured + plain)
    assert cal.ids({"featured": "true"}, role="editor") == featured + featured_drafts
    assert cal.ids({"featured": "false"}, role="editor") == plain
    assert ("featured", "1") in query_of(cal.list({"featured": "true"})["rest_url"])
    assert ("featured", "0") in query_of(cal.list({"featured": "false"})["rest_url"])
    cal.bad({"featured": "sometimes"}, param="featured")


def test_featured_true_without_featured_events_is_empty(cal):
    c, d = cal.content, utc_today()
    for n in range(3):
        c.event(at(d + timedelta(days=n + 1), 10))
    cal.commit()
    body = cal.list({"featured": "true"})
    assert_empty(body)


def test_status_rules(cal):
    c, d = cal.content, utc_today()
    day = iter(range(1, 100))
    nxt = lambda: at(d + timedelta(days=next(day)), 10)  # noqa: E731
    published = [c.event(nxt()) for _ in range(3)]
    drafts = [c.event(nxt(), status="draft") for _ in range(3)]
    pending = [c.event(nxt(), status="pending") for _ in range(3)]
    private_admin = c.event(nxt(), status="private", author=1)
    private_author = c.event(nxt(), status="private", author=3)     # the "author" account is user 3
    future = c.event(nxt(), status="future")
    trashed = c.event(nxt(), status="trash")
    cal.commit()
    everything = published + drafts + pending + [private_admin, private_author, future]
    for role in (None, "subscriber"):
        assert cal.ids(role=role) == published, role
        assert cal.ids({"status": "publish"}, role=role) == published, role
        for value in ("publish, draft", "draft", "private", "foo"):
            cal.bad({"status": value}, role=role, param="status")
        cal.bad({"status[]": ["publish", "draft"]}, role=role, param="status")
    for role in ("editor", "administrator"):
        body = cal.list({"per_page": 20}, role=role)
        assert ids(body) == everything, role
        assert ("status", "publish,future,draft,pending,private") in query_of(body["rest_url"])
    assert cal.ids({"status": "publish"}, role="editor") == published
    assert cal.ids({"status": "publish, draft"}, role="editor") == published + drafts
    assert cal.ids({"status[]": ["publish", "draft", "pending"]}, role="editor") == published + drafts + pending
    assert cal.ids({"status": "trash"}, role="editor") == [trashed]
    assert cal.ids({"status": "private"}, role="editor") == [private_admin, private_author]
    assert cal.ids({"status": "draft,pending"}, role="editor") == drafts + pending
    # authors cannot read others' private events: only their own are listed
    assert cal.ids({"per_page": 20}, role="author") == \
        published + drafts + pending + [private_author, future]
    for value in ("foo", "foo, bar", "foo, bar, publish", "any"):
        cal.bad({"status": value}, role="editor", param="status")


# ============================================================================= include, post_parent


def test_include_ignores_the_date_window_and_orders_by_publication(cal):
    c, d = cal.content, utc_today()
    past = c.event(at(d - timedelta(days=730), 10), pub="2019-05-01 00:00:00")
    later = c.event(at(d + timedelta(days=3), 10), pub="2018-01-01 00:00:00")
    beyond = c.event(at(d + timedelta(days=1000), 10), pub="2019-05-01 00:00:00")   # same pub as past: by id
    draft = c.event(at(d + timedelta(days=4), 10), pub="2017-01-01 00:00:00", status="draft")
    hidden = c.event(at(d + timedelta(days=5), 10), pub="2016-01-01 00:00:00", hide_from_listings=True)
    not_included = c.event(at(d + timedelta(days=6), 10))
    cal.commit()
    every = f"{beyond},{hidden},{past},{draft},{later}"
    body = cal.list({"include": every})
    assert ids(body) == [later, past, beyond]
    assert (body["total"], body["total_pages"]) == (3, 1)
    assert ("include", every) in query_of(body["rest_url"])
    assert cal.ids({"include": every}, role="editor") == [draft, later, past, beyond]
    assert cal.ids({"include[]": [past, later]}) == [later, past]
    assert cal.ids({"include": f"{past}", "start_date": "2099-01-01", "end_date": "2099-01-02"}) == [past]
    assert cal.ids({"include": f"{past},{later}", "starts_after": "2099-01-01"}) == [later, past]
    assert cal.ids({"include": "999999"}) == []                    # ids need not exist
    assert cal.ids({"include": f"{past},{later}", "per_page": 1, "page": 2}) == [past]
    assert not_included not in cal.ids({"include": every})
    for value in ("foo-bar,23", "foo-bar,23,89", "0", "-1", "1.5"):
        cal.bad({"include": value}, param="include")
    cal.bad({"include[]": ["foo-bar", "23", "89"]}, param="include")


def test_post_parent(cal):
    c, d = cal.content, utc_today()
    parent = c.event(at(d + timedelta(days=1), 10), title="Series")
    other = c.event(at(d + timedelta(days=2), 10), title="Other series")
    child2 = c.event(at(d + timedelta(days=9), 10), post_parent=parent)
    child1 = c.event(at(d + timedelta(days=8), 10), post_parent=parent)
    c.event(at(d + timedelta(days=3), 10), post_parent=other)
    draft_child = c.event(at(d + timedelta(days=10), 10), post_parent=parent, status="draft")
    venue = c.venue("Not an event")
    cal.commit()
    body = cal.list({"post_parent": parent})
    assert ids(body) == [child1, child2]
    assert (body["total"], body["total_pages"]) == (2, 1)
    anon = cal.client()
    for item in body["events"]:
        single = anon.get(f"/events/{item['id']}").get_json()
        single.pop("json_ld", None)
        assert item == single
    assert ("post_parent", str(parent)) in query_of(body["rest_url"])
    assert cal.ids({"post_parent": parent}, role="editor") == [child1, child2, draft_child]
    assert cal.ids({"post_parent": child1}) == []
    for value in ("foo-bar", "23", "999999", str(venue), "0"):
        cal.bad({"post_parent": value}, param="post_parent")


# ============================================================================= ticketed, geoloc, hidden


def test_ticketed(cal):
    c, d = cal.content, utc_today()
    every = [c.event(at(d + timedelta(days=n), 10)) for n in range(1, 4)]
    cal.commit()
    assert_empty(cal.list({"ticketed": "true"}))
    assert cal.ids({"ticketed": "false"}) == every
    assert cal.ids({"ticketed": "0"}) == every
    assert ("ticketed", "0") in query_of(cal.list({"ticketed": "false"})["rest_url"])
    cal.bad({"ticketed": "maybe"}, param="ticketed")


def test_geoloc(app, repo):
    cal = Cal(app, repo, "index")   # geo queries are always answered by scanning
    c, d = cal.content, utc_today()
    near, far, unknown = c.venue("Near", 10.0, 10.0), c.venue("Far", 50.0, 50.0), c.venue("Unknown")
    half = c.venue("Half", 5.0, None)
    at_near = c.event(at(d + timedelta(days=1), 10), venue=[near])
    at_far = c.event(at(d + timedelta(days=2), 10), venue=[far])
    at_unknown = c.event(at(d + timedelta(days=3), 10), venue=[unknown])
    at_half = c.event(at(d + timedelta(days=4), 10), venue=[half])
    nowhere = c.event(at(d + timedelta(days=5), 10))
    cal.commit()
    client = cal.client()
    get = lambda p: client.get("/events", query_string=p)  # noqa: E731
    assert ids(get({"geoloc": "true"}).get_json()) == [at_near, at_far]
    assert ids(get({"geoloc": "false"}).get_json()) == [at_unknown, at_half, nowhere]
    assert ids(get({"geoloc_lat": "49", "geoloc_lng": "49.5"}).get_json()) == [at_far, at_near]
    assert ids(get({"geoloc_lat": "9", "geoloc_lng": "9"}).get_json()) == [at_near, at_far]
    for params, missing in (({"geoloc_lat": "10"}, "geoloc_lng"), ({"geoloc_lng": "10"}, "geoloc_lat")):
        r = get(params)
        assert (r.status_code, r.get_json()["code"]) == (400, "rest_invalid_param")
        assert missing in r.get_json()["data"]["params"]
    for params in ({"geoloc_lat": "91", "geoloc_lng": "0"}, {"geoloc_lat": "0", "geoloc_lng": "-181"},
                   {"geoloc_lat": "north", "geoloc_lng": "0"}, {"geoloc": "maybe"}):
        r = get(params)
        assert (r.status_code, r.get_json()["code"]) == (400, "rest_invalid_param"), params


def test_hidden_events_are_never_listed(cal):
    c, d = cal.content, utc_today()
    v, o, cat, tag = c.venue("Hall"), c.organizer("Crew"), c.category("Music", "music"), c.tag("Loud", "loud")
    full = dict(venue=[v], organizer=[o], categories=[cat], tags=[tag], featured=True, title="Secret gala")
    shown = c.event(at(d + timedelta(days=1), 10), **full)
    hidden = c.event(at(d + timedelta(days=2), 10), hide_from_listings=True, **full)
    hidden_draft = c.event(at(d + timedelta(days=3), 10), hide_from_listings=True, status="draft", **full)
    cal.commit()
    for role in (None, "editor", "administrator"):
        for params in ({}, {"venue": v}, {"organizer": o}, {"categories": cat}, {"tags": tag},
                       {"featured": "true"}, {"search": "gala"}, {"include": f"{hidden},{hidden_draft},{shown}"},
                       {"ends_after": "2000-01-01"}, {"status": "publish,draft"} if role else {}):
            body = cal.list(params, role=role)
            assert ids(body) == [shown], (role, params)
            assert body["total"] == 1
    assert cal.client().get(f"/events/{hidden}").status_code == 200      # still readable on its own


# ============================================================================= ordering


def test_order_is_start_then_publication_then_id(cal):
    c, d = cal.content, utc_today()
    day1, day2 = d + timedelta(days=1), d + timedelta(days=2)
    # slugs chosen so that file order disagrees with the expected order
    late = c.event(at(day2, 9), slug="a-late", pub="2010-01-01 00:00:00")
    pub_new = c.event(at(day1, 9), slug="b-pub-new", pub="2021-06-01 00:00:00")
    pub_old = c.event(at(day1, 9), slug="c-pub-old", pub="2021-01-01 00:00:00")
    tie_high = c.event(at(day1, 9), slug="d-tie-high", pub="2021-03-01 00:00:00", id=5000)
    tie_low = c.event(at(day1, 9), slug="e-tie-low", pub="2021-03-01 00:00:00", id=4000)
    # the same instant (09:00 UTC) written as Paris wall-clock time
    nine = datetime(day1.year, day1.month, day1.day, 9, tzinfo=timezone.utc)
    paris = c.event(nine.astimezone(ZoneInfo("Europe/Paris")).strftime(FMT), slug="f-paris", tz="Europe/Paris",
                    pub="2021-02-01 00:00:00")
    early = c.event(at(day1, 8, 59, 59), slug="g-early", pub="2030-01-01 00:00:00")
    cal.commit()
    expected = [early, pub_old, paris, tie_low, tie_high, pub_new, late]
    assert cal.ids() == expected
    assert cal.ids({"per_page": 3, "page": 2}) == expected[3:6]
    assert cal.ids({"search": "event"}) == expected


# ============================================================================= pagination


def many(cal: Cal, count: int, start_day: int = 1) -> list[int]:
    d = utc_today()
    made = [cal.content.event(at(d + timedelta(days=start_day + n // 3), 8 + n % 3)) for n in range(count)]
    cal.commit(f"Add {count} events")
    return made


def test_per_page_is_capped_at_50_and_pages_past_the_end_are_404(cal):
    made = many(cal, 51)
    body = cal.list({"per_page": 100})
    assert ids(body) == made[:50]
    assert (body["total"], body["total_pages"]) == (51, 2)
    assert ("per_page", "50") in query_of(body["rest_url"])
    assert dict(query_of(body["next_rest_url"]))["page"] == "2"
    assert "previous_rest_url" not in body
    second = cal.list({"per_page": 100, "page": 2})
    assert ids(second) == made[50:]
    assert "next_rest_url" not in second
    assert "page" not in dict(query_of(second["previous_rest_url"]))
    assert ids(cal.list({"per_page": 50})) == made[:50]
    assert len(ids(cal.list({"per_page": 51}))) == 50
    r = cal.get({"per_page": 100, "page": 3})
    assert (r.status_code, r.get_json()) == (404, PAGE_NOT_FOUND)
    r = cal.get({"page": 7})
    assert (r.status_code, r.get_json()) == (404, PAGE_NOT_FOUND)
    assert len(ids(cal.list({"page": 6}))) == 1
    for key in ("page", "per_page"):
        for value in ("foo", "-1", "0", "foo bar", "1.5"):
            cal.bad({key: value}, param=key)


def test_following_next_rest_url_walks_every_page(cal):
    made = many(cal, 51)
    body = cal.list()
    seen, pages = [], 0
    while True:
        pages += 1
        seen += ids(body)
        assert (body["total"], body["total_pages"]) == (51, 6)
        if "next_rest_url" not in body:
            break
        assert dict(query_of(body["next_rest_url"]))["page"] == str(pages + 1)
        r = cal.client().get(local_path(body["next_rest_url"]))
        assert r.status_code == 200, r.get_json()
        link = r.headers["Link"]
        assert 'rel="prev"' in link
        body = r.get_json()
        assert "previous_rest_url" in body
    assert pages == 6
    assert seen == made
    # and back: previous_rest_url of page 2 is the archive root (no page)
    second = cal.list({"page": 2})
    prev = second["previous_rest_url"]
    assert "page" not in dict(query_of(prev))
    assert ids(cal.client().get(local_path(prev)).get_json()) == made[:10]
    third = cal.list({"page": 3})
    assert dict(query_of(third["previous_rest_url"]))["page"] == "2"


def test_empty_first_page_is_200(cal):
    c, d = cal.content, utc_today()
    c.venue("A venue")
    c.event(at(d - timedelta(days=5), 10))                         # outside the default window
    c.event(at(d + timedelta(days=5), 10), status="draft")
    c.event(at(d + timedelta(days=5), 10), hide_from_listings=True)
    cal.commit()
    r = cal.get()
    assert r.status_code == 200
    assert_empty(r.get_json())
    assert (r.headers["X-TEC-Total"], r.headers["X-TEC-TotalPages"]) == ("0", "0")
    assert "Link" not in r.headers
    r = cal.get({"page": 2})
    assert (r.status_code, r.get_json()) == (404, PAGE_NOT_FOUND)


def test_no_events_at_all(app, repo):
    cal = Cal(app, repo, "scan")
    r = cal.get()
    assert (r.status_code, r.headers["X-TEC-Total"], r.headers["X-TEC-TotalPages"]) == (200, "0", "0")
    assert_empty(r.get_json())
    assert repo.count() == 0                                          # listing writes nothing


def test_totals_and_total_pages(cal):
    made = many(cal, 10)
    for count, per_page, pages in ((9, 3, 3), (10, 3, 4), (1, 3, 1), (3, 3, 1)):
        body = cal.list({"include": ",".join(map(str, made[:count])), "per_page": per_page})
        assert (body["total"], body["total_pages"]) == (count, pages), (count, per_page)
        assert ids(body) == made[:min(count, per_page)]
        assert ("next_rest_url" in body) == (pages > 1)


@pytest.fixture
def filtered(cal):
    """Five events matching a request with many filters, and one near-miss per filter."""
    c = cal.content
    v1, v2, v3 = c.venue("V1"), c.venue("V2"), c.venue("V3")
    o1, o2 = c.organizer("O1"), c.organizer("O2")
    cat, other_cat = c.category("Gala Nights", "gala-nights"), c.category("Other", "other")
    tag, other_tag = c.tag("Black Tie", "black-tie"), c.tag("Casual", "casual")
    good = dict(title="Winter Gala", venue=[v1], organizer=[o1], categories=[cat], tags=[tag], featured=True)
    day = lambda n, h, m=0: f"2030-01-0{n} {h:02d}:{m:02d}:00"  # noqa: E731
    match = [
        c.event(day(1, 10), day(1, 11), **good),
        c.event(day(1, 12), day(1, 13), **{**good, "venue": [v2]}),
        c.event(day(2, 10), day(2, 11), **{**good, "status": "draft"}),
        c.event(day(3, 10), day(3, 11), **{**good, "categories": [other_cat, cat], "tags": ["black-tie"]}),
        c.event(day(4, 10), day(4, 17, 59), **good),
    ]
    misses = {
        "before strict start": c.event(day(1, 8), day(1, 8, 30), **good),
        "after strict end": c.event(day(4, 19), day(4, 19, 30), **good),
        "search": c.event(day(1, 10), day(1, 11), **{**good, "title": "Winter Party"}),
        "categories": c.event(day(2, 11), day(2, 12), **{**good, "categories": [other_cat]}),
        "tags": c.event(day(2, 12), day(2, 13), **{**good, "tags": [other_tag]}),
        "venue": c.event(day(2, 13), day(2, 14), **{**good, "venue": [v3]}),
        "organizer": c.event(day(3, 11), day(3, 12), **{**good, "organizer": [o2]}),
        "featured": c.event(day(3, 12), day(3, 13), **{**good, "featured": False}),
        "status": c.event(day(3, 13), day(3, 14), **{**good, "status": "pending"}),
    }
    cal.commit()
    params = {"start_date": "2030-01-01 09:00:00", "end_date": "2030-01-04 18:00:00", "strict_dates": "true",
              "search": "gala", "categories": "gala-nights", "tags": str(tag), "venue": f"{v1},{v2}",
              "organizer": str(o1), "featured": "true", "status": "publish,draft", "per_page": 2}
    return params, match, misses


def test_next_rest_url_keeps_every_filter(cal, filtered):
    params, match, misses = filtered
    first = cal.list(params, role="editor")
    assert ids(first) == match[:2]
    assert (first["total"], first["total_pages"]) == (5, 3)
    echoed = dict(query_of(first["next_rest_url"]))
    for key in ("start_date", "end_date", "strict_dates", "search", "categories", "tags", "venue", "organizer",
                "featured", "status", "per_page"):
        assert key in echoed, key
    editor = cal.client("editor")
    r2 = editor.get(local_path(first["next_rest_url"]))
    assert r2.status_code == 200, r2.get_json()
    second = r2.get_json()
    assert ids(second) == match[2:4]
    assert (second["total"], second["total_pages"]) == (5, 3)
    assert second["events"] == cal.list({**params, "page": 2}, role="editor")["events"]
    third = editor.get(local_path(second["next_rest_url"])).get_json()
    assert ids(third) == match[4:]
    assert "next_rest_url" not in third
    # previous links keep the filters as well; the one to page 1 has no page
    back = editor.get(local_path(third["previous_rest_url"])).get_json()
    assert ids(back) == match[2:4]
    assert "page" not in dict(query_of(second["previous_rest_url"]))
    root = editor.get(local_path(second["previous_rest_url"])).get_json()
    assert ids(root) == match[:2] and root["total"] == 5
    # each filter matters: without it the near-miss appears
    assert misses["before strict start"] in cal.ids({**params, "strict_dates": "false", "per_page": 50},
                                                    role="editor")


def test_next_rest_url_keeps_relative_dates_include_and_parent(cal):
    c = cal.content
    parent = c.event("2029-06-01 10:00:00")
    kids = [c.event(f"2030-01-0{n} 10:00:00", f"2030-01-0{n} 11:00:00", post_parent=parent, title="Kid")
            for n in range(1, 6)]
    c.event("2030-01-02 12:00:00", post_parent=parent, title="Adult")
    c.event("2030-01-09 10:00:00", post_parent=parent, title="Kid")
    cal.commit()
    client = cal.client()
    params = {"starts_after": "2029-12-31", "ends_before": "2030-01-05 10:30:00", "strict_dates": "yes",
              "post_parent": parent, "search": "kid", "per_page": 1}
    body, seen = cal.list(params), []
    while True:
        seen += ids(body)
        assert body["total"] == 4
        if "next_rest_url" not in body:
            break
        body = client.get(local_path(body["next_rest_url"])).get_json()
    assert seen == kids[:4]
    params = {"include": ",".join(map(str, reversed(kids))), "per_page": 2, "featured": "false"}
    first = cal.list(params)
    second = client.get(local_path(first["next_rest_url"])).get_json()
    third = client.get(local_path(second["next_rest_url"])).get_json()
    assert ids(first) + ids(second) + ids(third) == kids       # same publication date: by id


def test_next_rest_url_of_a_request_with_strict_dates_false(cal):
    many(cal, 3)
    first = cal.list({"strict_dates": "false", "per_page": 1})
    r = cal.client().get(local_path(first["next_rest_url"]))
    assert r.status_code == 200, r.get_json()
    assert ids(r.get_json()) == ids(cal.list({"strict_dates": "false", "per_page": 1, "page": 2}))


# ============================================================================= the index: lifecycle


def wait_for(predicate, timeout: float = 20.0, step: float = 0.02):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


def test_index_follows_api_writes(app, repo, admin, anon):
    svc = app.extensions["calendar"]
    d = utc_today()
    first = admin.post("/events", json={"title": "First", "start_date": at(d + timedelta(days=1), 10),
                                        "end_date": at(d + timedelta(days=1), 11)}).get_json()
    settle(svc, anon, repo)

    def listed(params=None) -> list[int]:
        followed(svc)   # the follower thread brings the index to the write's commit
        r = anon.get("/events", query_string=params or {})
        assert r.status_code == 200
        assert svc.index._view is not None and svc.index._view.commit == repo.head()    # answered by the index
        wait_for(lambda: svc.index.state()["commit"] == repo.head())       # the index on disk follows
        return ids(r.get_json())

    assert listed() == [first["id"]]
    second = admin.post("/events", json={"title": "Second concert", "start_date": at(d + timedelta(days=2), 10),
                                         "end_date": at(d + timedelta(days=2), 11), "featured": True}).get_json()
    assert listed() == [first["id"], second["id"]]
    assert listed({"search": "concert"}) == [second["id"]]
    r = admin.post(f"/events/{first['id']}", json={"start_date": at(d + timedelta(days=3), 10),
                                                   "end_date": at(d + timedelta(days=3), 11), "title": "Moved"})
    assert r.status_code == 200
    assert listed() == [second["id"], first["id"]]
    assert listed({"search": "first"}) == []
    assert listed({"search": "moved"}) == [first["id"]]
    r = admin.post(f"/events/{first['id']}", json={"slug": "renamed-file"})      # the file is renamed
    assert r.status_code == 200
    assert listed({"search": "moved"}) == [first["id"]]
    assert admin.delete(f"/events/{second['id']}").status_code == 200          # trashed
    assert listed() == [first["id"]]
    assert listed({"featured": "true"}) == []
    cat = admin.post("/categories", json={"name": "Rock"}).get_json()
    admin.post(f"/events/{first['id']}", json={"categories": [cat["id"]]})
    assert listed({"categories": cat["id"]}) == [first["id"]]
    assert admin.delete(f"/categories/{cat['id']}").status_code == 200          # unlinked from the event
    cat2 = admin.post("/categories", json={"name": "Pop"}).get_json()
    assert listed({"categories": cat2["id"]}) == []


@pytest.mark.parametrize("case", ["first write to a new repository", "restart after deleting the index"])
def test_a_small_repository_without_an_index_is_indexed_without_a_request(make_app, repo, paths, case):
    app = make_app()
    svc = app.extensions["calendar"]
    anon = Client(app.test_client(), None)
    content = Content(repo)
    d = utc_today()
    made = [content.event(at(d + timedelta(days=1 + n), 10)) for n in range(40)]
    content.commit()
    if case == "restart after deleting the index":
        settle(svc, anon, repo)
        remove_index(paths["index_dir"])
        app = make_app()
        svc = app.extensions["calendar"]
        anon = Client(app.test_client(), None)
    r = anon.get("/events", query_string={"per_page": 50})
    assert ids(r.get_json()) == made   # by the index, or by scanning while the follower thread builds it
    followed(app)
    assert svc.index._view is not None and svc.index._view.commit == repo.head()
    assert (svc.index.state() or {}).get("commit") == repo.head()


def test_index_of_a_calendar_without_events_answers_lists(app, repo):
    svc = app.extensions["calendar"]
    anon = Client(app.test_client(), None)
    content = Content(repo)
    content.venue("Only a venue")
    content.commit("No events")
    for _ in range(20):
        assert_empty(anon.get("/events").get_json())
        if (svc.index.state() or {}).get("commit") == repo.head() and svc.index._view is not None:
            break
        time.sleep(0.05)
    assert svc.index._view is not None and svc.index._view.commit == repo.head()
    repairs = [t for t in threading.enumerate() if t.name == "calendar-index-repair"]
    assert repairs == []


def test_commits_outside_the_api_are_picked_up_without_restart(cal_index):
    cal = cal_index
    c, d = cal.content, utc_today()
    a = c.event(at(d + timedelta(days=1), 10), title="Alpha")
    b = c.event(at(d + timedelta(days=2), 10), title="Bravo")
    cal.commit()
    assert cal.ids() == [a, b]
    # add
    x = c.event(at(d + timedelta(days=3), 10), title="Xray")
    c.commit("Add one")
    assert cal.ids() == [a, b, x]
    wait_for(lambda: cal.svc.index.state()["commit"] == cal.repo.head())
    # edit: move the first event last, retitle the second
    c.event(at(d + timedelta(days=4), 10), title="Alpha", id=a, slug=f"event-{a}")
    c.event(at(d + timedelta(days=2), 10), title="Charlie", id=b, slug=f"event-{b}")
    c.commit("Edit two")
    assert cal.ids() == [b, x, a]
    assert cal.ids({"search": "bravo"}) == []
    assert cal.ids({"search": "charlie"}) == [b]
    # delete
    c.remove(x)
    c.commit("Delete one")
    assert cal.ids() == [b, a]
    assert cal.ids({"include": str(x)}) == []
    # rename a file (git mv): same event, new path
    cal.repo("mv", f"events/event-{b}.md", "events/charlie.md")
    text = (cal.repo.root / "events/charlie.md").read_text().replace(f"slug: event-{b}", "slug: charlie")
    (cal.repo.root / "events/charlie.md").write_text(text)
    hand_commit(cal.repo, {}, "Rename")
    assert cal.ids() == [b, a]
    assert cal.client().get(f"/events/{b}").get_json()["slug"] == "charlie"
    # a broken file keeps its last good version listed; fixing it serves the new one
    hand_commit(cal.repo, {f"events/event-{a}.md": "---\nid: [unclosed\n---\n"}, "Break")
    assert cal.ids() == [b, a]
    c.event(at(d + timedelta(days=4), 10), title="Alpha", id=a, slug=f"event-{a}")
    c.commit("Fix")
    assert cal.ids() == [b, a]
    wait_for(lambda: cal.svc.index.state()["commit"] == cal.repo.head())


@pytest.fixture
def cal_index(app, repo) -> Cal:
    return Cal(app, repo, "index")


def test_deleted_index_is_rebuilt_when_the_app_starts(make_app, repo, paths):
    cal = Cal(make_app(), repo, "index")
    made = many(cal, 12)
    remove_index(paths["index_dir"])
    app = make_app()
    svc = app.extensions["calendar"]
    anon = Client(app.test_client(), None)
    body = anon.get("/events", query_string={"per_page": 20}).get_json()       # right while it rebuilds
    assert ids(body) == made
    wait_for(lambda: (svc.index.state() or {}).get("commit") == repo.head())
    assert (paths["index_dir"] / "whoosh").is_dir()
    settle(svc, anon, repo)
    assert ids(anon.get("/events", query_string={"per_page": 20}).get_json()) == made
    assert ids(anon.get("/events", query_string={"search": f"event {made[3]}"}).get_json()) == [made[3]]


def _garbage(kind: str, data: bytes) -> bytes:
    rng = random.Random(len(data))
    half = len(data) // 2
    if kind == "random bytes":
        return bytes(rng.randrange(256) for _ in range(len(data)))
    if kind == "second half zeroed":
        return data[:half] + b"\0" * (len(data) - half)
    if kind == "truncated":
        return data[:half]
    if kind == "text":
        return (b"this is not a whoosh segment " * (len(data) // 29 + 1))[:len(data)]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind, which", [
    ("random bytes", "segments"), ("second half zeroed", "segments"), ("truncated", "segments"),
    ("text", "every file"),
])
def test_corrupt_index_is_recovered(make_app, repo, paths, kind, which):
    cal = Cal(make_app(), repo, "index")
    c, d = cal.content, utc_today()
    cat = c.category("Jazz", "jazz")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    made = [c.event(at(d + timedelta(days=n), 10), title=f"Show {words[n - 1]}", categories=[cat] if n % 2 else [],
                    featured=n % 3 == 0) for n in range(1, 9)]
    cal.commit()
    expected = {
        "all": made, "jazz": [e for n, e in enumerate(made, 1) if n % 2],
        "featured": [e for n, e in enumerate(made, 1) if n % 3 == 0], "search": [made[4]],
    }
    queries = {"all": {}, "jazz": {"categories": "jazz"}, "featured": {"featured": "true"},
               "search": {"search": "show echo"}}
    whoosh_dir = paths["index_dir"] / "whoosh"
    files = [f for f in whoosh_dir.iterdir() if f.is_file() and not f.name.endswith("LOCK")
             and (which == "every file" or f.suffix == ".seg")]
    assert files
    for f in files:
        f.write_bytes(_garbage(kind, f.read_bytes()))
    app = make_app()
    svc = app.extensions["calendar"]
    anon = Client(app.test_client(), None)
    for name, params in queries.items():
        r = anon.get("/events", query_string=params)
        assert r.status_code == 200, r.get_json()
        assert ids(r.get_json()) == expected[name], name
    settle(svc, anon, repo)                                              # repaired, answering again
    for name, params in queries.items():
        assert ids(anon.get("/events", query_string=params).get_json()) == expected[name], name
        assert svc.index._view.commit == repo.head()


def test_garbage_in_the_postings_is_detected_and_repaired(make_app, repo, paths):
    from whoosh.filedb.compound import CompoundStorage
    from whoosh.filedb.structfile import StructFile

    cal = Cal(make_app(), repo, "index")
    c, d = cal.content, utc_today()
    made = [c.event(at(d + timedelta(days=n), 10), title=f"Show {w}", featured=n % 2 == 0)
            for n, w in enumerate(["alpha", "bravo", "charlie", "delta"], 1)]
    cal.commit()
    for seg in (paths["index_dir"] / "whoosh").glob("*.seg"):
        with open(seg, "rb") as handle:
            directory = CompoundStorage(StructFile(handle), use_mmap=False)._dir
        postings = next(v for k, v in directory.items() if k.endswith(".pst"))
        data = bytearray(seg.read_bytes())
        start, length = postings["offset"], postings["length"]
        data[start:start + length] = (b"garbage " * (length // 8 + 1))[:length]
        seg.write_bytes(bytes(data))
    app = make_app()
    anon = Client(app.test_client(), None)
    deadline = time.monotonic() + 5
    while True:                         # answers must be right at once, and stay right
        lists = [anon.get("/events", query_string=q) for q in ({}, {"featured": "true"}, {"search": "charlie"})]
        found = [(r.status_code, ids(r.get_json()) if r.status_code == 200 else r.get_json()["code"])
                 for r in lists]
        assert found == [(200, made), (200, made[1::2]), (200, [made[2]])]
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)


def test_reindex_command_rebuilds_and_prints_the_count(make_app, repo, paths):
    cal = Cal(make_app(), repo, "index")
    made = many(cal, 7)
    cal.content.venue("Not an event")
    cal.commit()
    remove_index(paths["index_dir"])
    env = {**os.environ, "CALENDAR_CONTENT_DIR": str(paths["content_dir"]),
           "CALENDAR_INDEX_DIR": str(paths["index_dir"]), "CALENDAR_USERS_FILE": str(paths["users_file"]),
           "CALENDAR_TIMEZONE": "UTC", "PYTHONPATH": str(MAIN)}
    run = subprocess.run([sys.executable, "-m", "calendar_service", "reindex"], cwd=MAIN, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"indexed 7 events of commit {repo.head()[:12]}"), run.stdout
    state = json_state(paths["index_dir"])
    assert state["commit"] == repo.head()
    app = make_app()
    svc = app.extensions["calendar"]
    anon = Client(app.test_client(), None)
    assert ids(anon.get("/events").get_json()) == made
    assert svc.index._view is not None and svc.index._view.commit == repo.head()   # no rebuild needed
    missing = {**env, "CALENDAR_CONTENT_DIR": str(paths["content_dir"].parent / "nowhere")}
    run = subprocess.run([sys.executable, "-m", "calendar_service", "reindex"], cwd=MAIN, env=missing,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "no content repository" in run.stderr


def json_state(index_dir: Path) -> dict:
    import json
    return json.loads((index_dir / "STATE.json").read_text())


# ============================================================================= the index: bugs found


def scan_ids(app, params=None, role=None) -> list[int]:
    """The same request answered by scanning (the index switched off for one request)."""
    svc = app.extensions["calendar"]
    index, svc.index = svc.index, None
    try:
        return ids(Client(app.test_client(), role).get("/events", query_string=params or {}).get_json())
    finally:
        svc.index = index


def test_numeric_reference_is_not_matched_against_a_digit_slug(cal_index):
    """An integer in a file is an id, a string a slug: ``2025`` is the id 2025, ``'2025'`` the slug."""
    cal = cal_index
    c, d = cal.content, utc_today()
    year = c.tag("2025", "2025")
    tagged = c.event(at(d + timedelta(days=1), 10), tags=[year])
    by_slug = c.event(at(d + timedelta(days=2), 10), tags=["2025"])       # written quoted: the slug 2025
    dangling = c.event(at(d + timedelta(days=3), 10), tags=[2025])        # an integer: the id 2025, none has it
    cal.commit()
    assert cal.client().get(f"/events/{dangling}").get_json()["tags"] == []
    assert [t["id"] for t in cal.client().get(f"/events/{by_slug}").get_json()["tags"]] == [year]
    assert scan_ids(cal.app, {"tags": year}) == [tagged, by_slug]
    assert cal.ids({"tags": year}) == [tagged, by_slug]


def test_two_files_with_one_id_in_one_commit_are_both_listed(cal_index):
    """Added by the same commit, neither is older: the first by path keeps the id, the other is
    given the next one (a commit of the service) and listed too; removing the first later does
    not move the second back."""
    cal = cal_index
    c, d = cal.content, utc_today()
    c.event(at(d + timedelta(days=1), 10), id=3000, slug="a-first", title="First")
    c.event(at(d + timedelta(days=1), 12), id=3000, slug="b-second", title="Second")
    cal.commit()
    assert cal.ids() == [3000, 3001]
    assert cal.client().get("/events/3001").get_json()["title"] == "Second"
    hand_commit(cal.repo, {"events/a-first.md": None}, "Remove the first file")
    assert cal.client().get("/events/3000").status_code == 404
    assert cal.client().get("/events/3001").get_json()["title"] == "Second"
    assert scan_ids(cal.app) == [3001]
    assert cal.ids() == [3001]


def test_a_file_claiming_a_served_id_does_not_take_it_over(cal_index):
    """The file that entered history first keeps the id, even though the newcomer sorts first."""
    cal = cal_index
    c, d = cal.content, utc_today()
    c.event(at(d + timedelta(days=1), 12), id=3000, slug="b-second", title="Second")
    cal.commit()
    c.event(at(d + timedelta(days=1), 10), id=3000, slug="a-first", title="First")
    cal.commit("Add a file with the same id")
    body = cal.list()
    assert (ids(body), body["total"]) == ([3001, 3000], 2)
    assert cal.client().get("/events/3000").get_json()["title"] == "Second"


def test_changing_the_site_time_zone_reindexes_events_without_a_zone(make_app, repo):
    cal = Cal(make_app(), repo, "index")
    floating = cal.content.event("2030-02-01 10:00:00", "2030-02-01 11:00:00", tz=None)
    cal.content.event("2030-02-01 16:00:00", "2030-02-01 17:00:00", tz="UTC")
    cal.commit()
    window = {"start_date": "2030-02-01 09:30:00", "end_date": "2030-02-01 11:30:00", "strict_dates": "true"}
    assert cal.ids(window) == [floating]
    moved = Cal(make_app(site_timezone="America/New_York"), repo, "index")
    moved.ready()
    # 10:00 in New York is 15:00 UTC; the window is read in New York time too
    assert scan_ids(moved.app, window) == [floating]
    assert moved.ids(window) == [floating]
    assert moved.ids({**window, "start_date": "2030-02-01 04:30:00", "end_date": "2030-02-01 06:30:00"}) == []


def test_bounds_with_fractions_of_a_second(cal_index):
    cal = cal_index
    e = cal.content.event("2030-01-01 10:00:00", "2030-01-01 11:00:00")
    cal.commit()
    after = {"start_date": "2030-01-01 10:00:00.5", "end_date": "2030-01-02", "strict_dates": "true"}
    assert scan_ids(cal.app, after) == []
    stamp = ts(date(2030, 1, 1), 11)
    before = {"ends_before": f"{stamp}.5", "strict_dates": "true"}
    assert scan_ids(cal.app, before) == [e]
    assert (cal.ids(after), cal.ids(before)) == ([], [e])


# ============================================================================= index == scanning


WORDS = ["jazz", "rock", "festival", "night", "market", "yoga", "concert", "talk", "family", "garden", "film",
         "open", "air", "the", "kids", "wine"]
ZONES = [None, "UTC", "Europe/Paris", "America/New_York", "America/Los_Angeles", "Pacific/Auckland",
         "Asia/Kolkata", "Australia/Adelaide", "UTC+5:30", "UTC-3"]
STATUSES = ["publish"] * 6 + ["draft", "pending", "private", "future", "trash"]
PUBS = ["2019-01-01 00:00:00", "2020-06-15 12:00:00", "2021-03-03 03:03:03"]


def _zone(name: str | None):
    if name is None or name == "UTC":
        return timezone.utc
    if name.startswith("UTC"):
        hours, _, minutes = name[3:].partition(":")
        sign = -1 if hours.startswith("-") else 1
        return timezone(sign * timedelta(hours=abs(int(hours)), minutes=int(minutes or 0)))
    return ZoneInfo(name)


def _instants(c: Content) -> list[datetime]:
    """The UTC start and end instants of every event written so far."""
    out = []
    for meta in c.events.values():
        tz = _zone(meta.get("timezone"))
        for key in ("start_date", "end_date"):
            out.append(datetime.strptime(meta[key], FMT).replace(tzinfo=tz).astimezone(timezone.utc))
    return sorted(out)


def _random_event(rng: random.Random, c: Content, eid: int, today: date, terms: dict, parents: list[int]) -> None:
    tz = rng.choice(ZONES)
    day = today + timedelta(days=rng.randint(-760, 760))
    start = datetime(day.year, day.month, day.day, rng.choice([0, 0, 8, 9, 10, 12, 18, 20, 23]),
                     rng.choice([0, 0, 30, 59]))
    if c.events and rng.random() < 0.15:
        # the same instant as another event, written in this event's zone: ordered by publication, then id
        other = rng.choice(list(c.events.values()))
        instant = datetime.strptime(other["start_date"], FMT).replace(tzinfo=_zone(other.get("timezone")))
        start = instant.astimezone(_zone(tz)).replace(tzinfo=None)
    end = start + rng.choice([timedelta(0), timedelta(minutes=30), timedelta(hours=1), timedelta(hours=2),
                              timedelta(days=1), timedelta(days=3, hours=5)])
    if rng.random() < 0.1:
        end = end.replace(hour=23, minute=59, second=59)

    def refs(pool: list[tuple[int, str]], most: int) -> list:
        chosen = rng.sample(pool, rng.randint(0, most))
        return [slug if rng.random() < 0.3 and slug else tid for tid, slug in chosen]

    pub = rng.choice(PUBS) if rng.random() < 0.4 else \
        (datetime(2018, 1, 1) + timedelta(seconds=rng.randint(0, 8 * 365 * 86400))).strftime(FMT)
    words = lambda lo, hi: " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))  # noqa: E731
    c.event(start.strftime(FMT), end.strftime(FMT), id=eid, title=words(1, 3).title(), tz=tz,
            status=rng.choice(STATUSES), pub=pub, author=rng.choice([1, 2, 3, 4]),
            description=words(0, 6), excerpt=words(1, 4) if rng.random() < 0.4 else None,
            categories=refs(terms["categories"], 3) or None, tags=refs(terms["tags"], 2) or None,
            venue=[v for v, _ in rng.sample(terms["venues"], rng.choice([0, 0, 1, 1, 1, 2]))] or None,
            organizer=[o for o, _ in rng.sample(terms["organizers"], rng.randint(0, 3))] or None,
            featured=rng.random() < 0.25 or None, hide_from_listings=rng.random() < 0.07 or None,
            sticky=rng.random() < 0.1 or None,
            post_parent=rng.choice(parents) if parents and rng.random() < 0.1 else None)


def _random_date(rng: random.Random, today: date, instants: list[datetime]) -> str | int:
    kind = rng.random()
    if kind < 0.4:
        # exactly at (or one second around) an event's start or end: where < and <= differ
        moment = rng.choice(instants) + timedelta(seconds=rng.choice([0, 0, 0, -1, 1]))
        return int(moment.timestamp()) if rng.random() < 0.3 else moment.strftime(FMT)
    day = today + timedelta(days=rng.randint(-800, 800))
    kind = rng.random()
    if kind < 0.45:
        return day.isoformat()
    if kind < 0.8:
        return at(day, rng.choice([0, 9, 10, 12, 23]), rng.choice([0, 30, 59]), rng.choice([0, 59]))
    if kind < 0.95:
        return ts(day, rng.randint(0, 23), rng.choice([0, 30]))
    return rng.choice(["today", "tomorrow", "yesterday"])


def _random_query(rng: random.Random, today: date, terms: dict, event_ids: list[int], parents: list[int],
                  instants: list[datetime]):
    role = rng.choice([None, None, None, "editor", "author", "contributor"])
    p: dict = {}
    if rng.random() < 0.6:
        p["per_page"] = rng.choice([1, 2, 5, 10, 20, 50, 70])
    if rng.random() < 0.35:
        p["page"] = rng.choice([1, 2, 3])
    for key, chance in (("start_date", 0.3), ("end_date", 0.3), ("starts_before", 0.15), ("starts_after", 0.15),
                        ("ends_before", 0.15), ("ends_after", 0.15)):
        if rng.random() < chance:
            p[key] = _random_date(rng, today, instants)
    if rng.random() < 0.45:
        p["strict_dates"] = rng.choice(["true", "1", "false", "yes"])
    if rng.random() < 0.25:
        word = rng.choice(WORDS)
        p["search"] = rng.choice([word, word.upper(), word[:3], f"{word} {rng.choice(WORDS)}"])
    for key, pool, most in (("categories", terms["categories"], 3), ("tags", terms["tags"], 2),
                            ("venue", terms["venues"], 2), ("organizer", terms["organizers"], 2)):
        if rng.random() < 0.2:
            chosen = rng.sample(pool, rng.randint(1, most))
            p[key] = ",".join(str(slug if slug and rng.random() < 0.5 else tid) for tid, slug in chosen)
    if rng.random() < 0.2:
        p["featured"] = rng.choice(["true", "false"])
    if rng.random() < 0.1:
        p["include"] = ",".join(str(rng.choice(event_ids + [999999])) for _ in range(rng.randint(1, 12)))
    if rng.random() < 0.08:
        p["post_parent"] = rng.choice(parents)
    if rng.random() < 0.06:
        p["ticketed"] = rng.choice(["false", "false", "true"])
    if rng.random() < 0.03:
        p["geoloc"] = rng.choice(["true", "false"])
    if role and rng.random() < 0.3:
        p["status"] = ",".join(rng.sample(["publish", "draft", "pending", "private", "future", "trash"],
                                          rng.randint(1, 3)))
    return role, p


def _summary(r, params: dict) -> tuple:
    body = r.get_json()
    if r.status_code != 200:
        return r.status_code, body.get("code")
    links = [body["rest_url"], body.get("next_rest_url"), body.get("previous_rest_url")]
    if str(params.get("strict_dates", "")).lower() in ("true", "1", "yes") and "end_date" not in params:
        # the default end (now + 24 months) is then echoed to the second: it may tick between the two requests
        links = [url and [kv for kv in query_of(url) if kv[0] != "end_date"] for url in links]
    return (200, ids(body), body["total"], body["total_pages"], *links, r.headers["X-TEC-Total"],
            r.headers["X-TEC-TotalPages"])


def test_index_and_scanning_agree_on_random_queries(make_app, repo):
    rng = random.Random(1234)
    today = utc_today()
    indexed_app = make_app()
    c = Content(repo, first_post=0)
    terms = {
        "categories": [(c.category(f"Category {n}", f"cat-{n}"), f"cat-{n}") for n in range(8)],
        "tags": [(c.tag(f"Tag {n}", f"tag-{n}"), f"tag-{n}") for n in range(6)],
        "venues": [(c.venue(f"Venue {n}", *((rng.uniform(-60, 60), rng.uniform(-170, 170)) if n % 2 else (None, None))),
                    None) for n in range(6)],
        "organizers": [(c.organizer(f"Organizer {n}"), None) for n in range(6)],
    }
    # events may also point at a category that does not exist (never a valid filter value)
    event_terms = {**terms, "categories": terms["categories"] + [(99, None)]}
    event_ids = list(range(100, 400))
    parents = event_ids[:5]
    for eid in event_ids:
        _random_event(rng, c, eid, today, event_terms, parents if eid not in parents else [])
    c.commit("300 random events")

    anon = Client(indexed_app.test_client(), None)
    indexed = indexed_app.extensions["calendar"]
    settle(indexed, anon, repo)
    scanning_app = make_app()
    scanning_app.extensions["calendar"].index = None
    clients = {}

    def both(role, params):
        if role not in clients:
            clients[role] = (Client(indexed_app.test_client(), role), Client(scanning_app.test_client(), role))
        a, b = clients[role]
        return (_summary(a.get("/events", query_string=params), params),
                _summary(b.get("/events", query_string=params), params))

    def run(count: int) -> int:
        nonempty = 0
        instants = _instants(c)
        for n in range(count):
            role, params = _random_query(rng, today, terms, event_ids, parents, instants)
            via_index, via_scan = both(role, params)
            assert via_index == via_scan, (n, role, params)
            nonempty += via_index[0] == 200 and bool(via_index[1])
            assert indexed.index._view is not None and indexed.index._view.commit == repo.head()
        return nonempty

    def overlaps(count: int) -> int:
        """The overlap query CalDAV clients send (starts_before + ends_after, strict), alone or with
        other filters and pages; returns how many answers were not empty."""
        nonempty = 0
        for n in range(count):
            a, b = sorted(rng.sample(_instants(c), 2))
            params = {"starts_before": b.strftime(FMT), "ends_after": a.strftime(FMT), "strict_dates": "true",
                      "per_page": rng.choice([3, 50])}
            if n % 4 == 1:
                params["search"] = rng.choice(WORDS)
            elif n % 4 == 2:
                params["page"] = 2
            elif n % 4 == 3:
                params["featured"] = "false"
            via_index, via_scan = both(rng.choice([None, "editor"]), params)
            assert via_index == via_scan, params
            nonempty += bool(via_index[1])
        return nonempty

    assert run(200) > 80                  # the queries are not trivially empty
    assert overlaps(60) > 30

    # every date parameter exactly at (and one second around) event boundaries, strict and inclusive
    instants = rng.sample(_instants(c), 30)
    for n, moment in enumerate(instants):
        key = ["start_date", "end_date", "starts_before", "starts_after", "ends_before", "ends_after"][n % 6]
        for shift in (0, -1, 1):
            value = (moment + timedelta(seconds=shift)).strftime(FMT)
            for params in ({key: value, "strict_dates": "true", "per_page": 50},
                           {key: value, "per_page": 50, "status": "publish,draft,private"}):
                role = "editor" if "status" in params else None
                via_index, via_scan = both(role, params)
                assert via_index == via_scan, (role, params)

    # an incremental change (edits, deletions, additions in one commit) keeps the two in step
    for eid in rng.sample(event_ids, 40):
        _random_event(rng, c, eid, today, event_terms, parents if eid not in parents else [])
    for eid in rng.sample(event_ids[5:], 15):
        c.remove(eid)
        event_ids.remove(eid)
    for eid in range(400, 415):
        _random_event(rng, c, eid, today, event_terms, parents)
        event_ids.append(eid)
    c.commit("Edit, delete and add events")
    both(None, {})
    # answered at once by a generation derived from the previous one; the index on disk follows
    assert indexed.index._view.commit == repo.head() and indexed.index._view.extra
    wait_for(lambda: indexed.index.state()["commit"] == repo.head())
    assert run(80) > 25
    assert overlaps(30) > 15

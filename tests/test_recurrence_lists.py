"""Recurring series in the read side: lists (index and scanning), single occurrences, paging.

Real app, real git repository, real Whoosh index; each list test runs against the index and
against the scanning fallback.
"""
from __future__ import annotations

import random
from pathlib import Path
from datetime import date, datetime, timedelta, timezone

import pytest

from calendar_service.domain import occurrences
from calendar_service.domain.recurrence import occurrence_id, split_occurrence_id
from tests.conftest import Client, followed
from tests.test_event_filters import Cal, Content, settle

UTC = timezone.utc


@pytest.fixture(params=["index", "scan"])
def cal(request, app, repo) -> Cal:
    return Cal(app, repo, request.param)


def this_year() -> int:
    return datetime.now(UTC).year


def weekly(c: Content, start: str, end: str, tz: str = "Europe/Berlin", rule: str = "RRULE:FREQ=WEEKLY", **extra):
    return c.event(start, end, tz=tz, recurrence=[rule], **extra)


def test_a_weekly_berlin_series_stays_at_19_local_across_dst(cal):
    y = this_year() + 1
    sid = weekly(cal.content, f"{y}-03-03 19:00:00", f"{y}-03-03 21:00:00",
                 rule="RRULE:FREQ=WEEKLY;COUNT=10", title="Choir")
    cal.commit()
    body = cal.list({"start_date": f"{y}-03-01", "end_date": f"{y}-06-01"})
    events = body["events"]
    assert body["total"] == 10 and len(events) == 10
    assert [e["start_date"][11:] for e in events] == ["19:00:00"] * 10
    utc_hours = {e["utc_start_date"][11:13] for e in events}
    assert utc_hours == {"18", "17"}   # CET then CEST
    assert events[0]["id"] == sid
    for e in events[1:]:
        parts = split_occurrence_id(e["id"])
        assert parts is not None and parts[0] == sid
        assert e["rest_url"].endswith(f"/events/{e['id']}")
    ids = [e["id"] for e in events]
    assert ids[1] == occurrence_id(sid, datetime(y, 3, 10, 19, 0))


def test_all_day_series_and_window_filters_per_occurrence(cal):
    y = this_year() + 1
    sid = cal.content.event(f"{y}-05-01 00:00:00", f"{y}-05-01 23:59:59", tz="UTC", all_day=True,
                            recurrence=["RRULE:FREQ=DAILY;COUNT=5"])
    cal.content.events[sid]["all_day"] = True
    cal.content.pending[cal.content.paths[sid]] = cal.content.pending[cal.content.paths[sid]].replace(
        "all_day: false", "all_day: true")
    cal.commit()
    body = cal.list({"start_date": f"{y}-05-02", "end_date": f"{y}-05-03"})
    assert [e["start_date"] for e in body["events"]] == [f"{y}-05-02 00:00:00", f"{y}-05-03 00:00:00"]
    assert all(e["all_day"] for e in body["events"])
    assert body["total"] == 2


def test_exceptions_move_occurrences_in_and_out_and_override_fields(cal):
    y = this_year() + 1
    c = cal.content
    cat = c.category("Concerts")
    sid = c.event(f"{y}-01-05 10:00:00", f"{y}-01-05 11:00:00", tz="UTC", title="Reading group",
                  recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"],
                  exceptions={f"{y}-01-12 10:00:00": {"start_date": f"{y}-02-20 10:00:00",
                                                      "title": "Special reading", "categories": [cat]}})
    single = c.event(f"{y}-01-06 10:00:00", f"{y}-01-06 11:00:00", title="Other")
    cal.commit()
    january = cal.list({"start_date": f"{y}-01-01", "end_date": f"{y}-01-31"})
    assert [e["start_date"][:10] for e in january["events"]] == [f"{y}-01-05", f"{y}-01-06", f"{y}-01-19", f"{y}-01-26"]
    february = cal.list({"start_date": f"{y}-02-01", "end_date": f"{y}-02-28"})
    assert [e["title"] for e in february["events"]] == ["Special reading"]
    moved = february["events"][0]
    assert moved["id"] == occurrence_id(sid, datetime(y, 1, 12, 10, 0)) and moved["post_parent"] == sid
    assert cal.ids({"categories": str(cat), "start_date": f"{y}-01-01"}) == [moved["id"]]
    assert cal.ids({"search": "special", "start_date": f"{y}-01-01"}) == [moved["id"]]
    assert len(cal.ids({"search": "reading", "start_date": f"{y}-01-01"})) == 4
    parented = cal.ids({"post_parent": sid, "start_date": f"{y}-01-01"})
    assert len(parented) == 3 and sid not in parented and single not in parented


def test_totals_paging_and_the_occurrences_route(cal):
    y = this_year() + 1
    sid = cal.content.event(f"{y}-03-02 08:00:00", f"{y}-03-02 09:00:00", tz="UTC",
                            recurrence=["RRULE:FREQ=DAILY;COUNT=25"])
    other = cal.content.event(f"{y}-03-10 12:00:00", f"{y}-03-10 13:00:00")
    cal.commit()
    first = cal.list({"start_date": f"{y}-03-01", "end_date": f"{y}-04-30", "per_page": 10})
    assert first["total"] == 26 and first["total_pages"] == 3
    walked = []
    params = {"start_date": f"{y}-03-01", "end_date": f"{y}-04-30", "per_page": 10}
    for page in (1, 2, 3):
        walked += cal.ids({**params, "page": page})
    assert len(walked) == 26 == len(set(walked)) and other in walked
    r = cal.client().get(f"/events/{sid}/occurrences", query_string={"per_page": 10, "start_date": f"{y}-03-01"})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["total"] == 25 and body["total_pages"] == 3 and len(body["events"]) == 10
    assert body["events"][0]["id"] == sid and other not in [e["id"] for e in body["events"]]
    assert "page=2" in body["next_rest_url"] and f"/events/{sid}/occurrences" in body["rest_url"]
    assert r.headers["X-TEC-Total"] == "25"
    page3 = cal.client().get(f"/events/{sid}/occurrences", query_string={"per_page": 10, "page": 3,
                                                                        "start_date": f"{y}-03-01"}).get_json()
    assert len(page3["events"]) == 5
    alone = cal.client().get(f"/events/{other}/occurrences", query_string={"start_date": f"{y}-03-01"}).get_json()
    assert [e["id"] for e in alone["events"]] == [other]
    assert cal.client().get("/events/999999/occurrences").status_code == 404


def test_single_occurrence_reads_and_unknown_ids(cal):
    y = this_year() + 1
    sid = cal.content.event(f"{y}-03-02 08:00:00", f"{y}-03-02 09:00:00", tz="UTC", title="Daily",
                            recurrence=["RRULE:FREQ=DAILY;COUNT=3"], slug="daily")
    cal.commit()
    oid = occurrence_id(sid, datetime(y, 3, 3, 8, 0))
    r = cal.client().get(f"/events/{oid}")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["id"] == oid and body["start_date"] == f"{y}-03-03 08:00:00" and body["post_parent"] == sid
    assert r.headers["ETag"] != cal.client().get(f"/events/{sid}").headers["ETag"]
    assert cal.client().get(f"/events/{oid}", headers={"If-None-Match": r.headers["ETag"]}).status_code == 304
    unknown = cal.client().get(f"/events/{occurrence_id(sid, datetime(y, 3, 9, 8, 0))}")
    missing = cal.client().get("/events/999999")
    assert unknown.status_code == missing.status_code == 404
    assert unknown.get_json()["code"] == missing.get_json()["code"]
    first_as_occurrence = cal.client().get(f"/events/{occurrence_id(sid, datetime(y, 3, 2, 8, 0))}")
    assert first_as_occurrence.status_code == 404
    assert cal.client().get("/events/by-slug/daily").get_json()["id"] == sid


def test_a_drafts_occurrences_answer_as_unknown_ids(app, repo):
    cal = Cal(app, repo, "index")
    y = this_year() + 1
    sid = cal.content.event(f"{y}-03-02 08:00:00", f"{y}-03-02 09:00:00", tz="UTC", status="draft",
                            recurrence=["RRULE:FREQ=DAILY;COUNT=3"])
    cal.commit()
    oid = occurrence_id(sid, datetime(y, 3, 4, 8, 0))
    denied, series = cal.client().get(f"/events/{oid}"), cal.client().get(f"/events/{sid}")
    # the series id is the original's: 403; an occurrence id (it encodes a time) says nothing
    assert series.status_code == 403
    unknown = cal.client().get(f"/events/{occurrence_id(sid + 500, datetime(y, 3, 4, 8, 0))}")
    assert denied.status_code == unknown.status_code == 404
    assert denied.get_json()["code"] == unknown.get_json()["code"] == "rest-event-not-found"
    assert cal.client("administrator").get(f"/events/{oid}").status_code == 200


def test_ids_are_stable_across_restart_reindex_and_unrelated_edits(make_app, app, repo, paths):
    cal = Cal(app, repo, "index")
    y = this_year() + 1
    monday = date(y, 3, 2) + timedelta(days=-date(y, 3, 2).weekday())
    cal.content.event(f"{monday} 08:00:00", f"{monday} 09:00:00", tz="America/New_York",
                      recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO,TH;COUNT=8"])
    cal.commit()
    params = {"start_date": f"{y}-01-01", "end_date": f"{y}-12-31"}
    before = cal.ids(params)
    assert len(before) == 8
    cal.content.event(f"{y}-05-02 08:00:00", f"{y}-05-02 09:00:00")
    cal.commit("unrelated")
    assert [i for i in cal.ids(params) if i in before] == before
    restarted = make_app()
    svc = restarted.extensions["calendar"]
    svc.index.rebuild_now(svc.snapshot())
    again = Client(restarted.test_client(), None)
    settle(svc, again, repo)
    listed = [e["id"] for e in again.get("/events", query_string=params).get_json()["events"]]
    assert [i for i in listed if i in before] == before


def test_the_horizon_moves_daily_without_a_rewrite(app, repo, monkeypatch):
    cal = Cal(app, repo, "index")
    today = datetime.now(UTC).date()
    start = today - timedelta(days=3)
    cal.content.event(f"{start} 10:00:00", f"{start} 11:00:00", tz="UTC", recurrence=["RRULE:FREQ=DAILY"])
    cal.commit()
    far = {"start_date": str(today), "end_date": str(today + timedelta(days=2000))}
    count = cal.list(far)["total"]
    base = cal.svc.index._view.base
    later = datetime.now(UTC) + timedelta(days=5)
    monkeypatch.setattr(occurrences, "clock", lambda: later)
    cal.ready()
    assert cal.list(far)["total"] == count + 5   # answered by scanning while the base is of another day
    followed(cal.svc)   # that list woke the follower thread, which reads the base again
    assert cal.list(far)["total"] == count + 5
    assert cal.svc.index._view.base is not base and cal.svc.index._view.commit == repo.head()
    scan = Cal(app, repo, "scan")
    assert scan.list(far)["total"] == count + 5


def _random_series(rng: random.Random, c: Content, today: date, cat: int) -> None:
    day = today + timedelta(days=rng.randint(-30, 60))
    hour = rng.choice([0, 2, 9, 19, 23])
    tz = rng.choice(["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney"])
    rule = rng.choice(["RRULE:FREQ=DAILY;COUNT=9", "RRULE:FREQ=WEEKLY", "RRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=6",
                       "RRULE:FREQ=MONTHLY;COUNT=5", "RRULE:FREQ=DAILY;INTERVAL=3"])
    start = datetime(day.year, day.month, day.day, hour)
    exceptions = None
    if rng.random() < 0.5:
        gap = 1 if "DAILY;COUNT" in rule else 3 if "DAILY;INTERVAL" in rule else 14 if "INTERVAL=2" in rule else 7
        if "MONTHLY" not in rule:
            key = start + timedelta(days=gap)
            change = rng.choice([{"title": "Moved lecture"}, {"start_date": str(key + timedelta(days=40))},
                                 {"categories": [cat], "featured": True}, {"hide_from_listings": True}])
            exceptions = {key.strftime("%Y-%m-%d %H:%M:%S"): change}
    c.event(start.strftime("%Y-%m-%d %H:%M:%S"), (start + timedelta(hours=rng.choice([1, 3, 30]))).strftime(
        "%Y-%m-%d %H:%M:%S"), tz=tz, title=rng.choice(["Lecture", "Yoga class", "Choir"]),
        recurrence=[rule], exceptions=exceptions, featured=rng.random() < 0.3 or None,
        status=rng.choice(["publish", "publish", "draft"]))


def _random_calendar(rng, make_app, repo):
    """25 random series and 30 single events, served by an indexed app and a scanning one (the
    latter without an index): (service, content, category, today, anonymous clients indexed and
    scanning, administrator clients indexed and scanning)."""
    app = make_app()
    svc = app.extensions["calendar"]
    c = Content(repo)
    cat = c.category("Talks")
    today = datetime.now(UTC).date()
    for _ in range(25):
        _random_series(rng, c, today, cat)
    for n in range(30):
        day = today + timedelta(days=rng.randint(-20, 80))
        c.event(f"{day} {rng.randint(0, 23):02d}:00:00", f"{day} 23:30:00", title=rng.choice(["Lecture", "Talk"]),
                featured=rng.random() < 0.3 or None, categories=[cat] if rng.random() < 0.3 else None)
    c.commit()
    scanning = make_app()
    scanning.extensions["calendar"].index = None
    indexed, scanned = Client(app.test_client(), None), Client(scanning.test_client(), None)
    admin_i, admin_s = Client(app.test_client(), "administrator"), Client(scanning.test_client(), "administrator")
    settle(svc, indexed, repo)
    return svc, c, cat, today, indexed, scanned, admin_i, admin_s


def _random_filters(rng, today, cat) -> dict:
    """A random mix of the list's window, search, category and featured filters."""
    p = {}
    if rng.random() < 0.7:
        p["start_date"] = str(today + timedelta(days=rng.randint(-40, 60)))
    if rng.random() < 0.5:
        p["end_date"] = str(today + timedelta(days=rng.randint(0, 200)))
    if rng.random() < 0.3:
        p["starts_after"] = str(today + timedelta(days=rng.randint(-10, 30)))
    if rng.random() < 0.3:
        p["search"] = rng.choice(["lect", "moved", "yoga", "choir"])
    if rng.random() < 0.2:
        p["categories"] = str(cat)
    if rng.random() < 0.2:
        p["featured"] = rng.choice(["true", "false"])
    return p


def test_index_and_scanning_agree_with_series(make_app, repo):
    rng = random.Random(16)
    svc, c, cat, today, indexed, scanned, admin_i, admin_s = _random_calendar(rng, make_app, repo)

    def both(params, role=False):
        a, b = (admin_i, admin_s) if role else (indexed, scanned)
        ra, rb = a.get("/events", query_string=params), b.get("/events", query_string=params)
        assert ra.status_code == rb.status_code, params
        if ra.status_code != 200:
            return
        ja, jb = ra.get_json(), rb.get_json()
        assert [e["id"] for e in ja["events"]] == [e["id"] for e in jb["events"]], params
        assert ja["total"] == jb["total"], params
        assert ja["events"] == jb["events"], params

    for round_ in range(2):
        for _ in range(40):
            p = {"per_page": rng.choice([5, 20, 50]), "page": rng.choice([1, 1, 2])}
            p.update(_random_filters(rng, today, cat))
            both(p, role=rng.random() < 0.3)
        # an edit of one series derives a generation: its occurrences are matched one by one
        path = next(p for eid, p in c.paths.items() if c.events[eid].get("recurrence"))
        text = (repo.root / path).read_text().replace("title: ", "title: Renamed ", 1)
        c.pending[path] = text
        c.commit("edit a series")
        indexed.get("/events")


def _files_of_list(client: Client, params: dict) -> tuple[list[int], int]:
    """The ids of the files the JSON list (every page) shows, each once in the order of its first
    listed event or occurrence, and the list's total."""
    out, page = {}, 1
    while True:
        r = client.get("/events", query_string={**params, "page": page, "per_page": 50})
        if r.status_code != 200:
            return list(out), 0
        body = r.get_json()
        for e in body["events"]:
            split = split_occurrence_id(e["id"])
            out.setdefault(split[0] if split else e["id"], None)
        if page >= body["total_pages"]:
            return list(out), body["total"]
        page += 1


def _files_of_feed(client: Client, params: dict) -> tuple[list[int], int]:
    """The UIDs' ids of an unpaged feed in order (a series' exception VEVENTs share its UID) and X-TEC-Total."""
    r = client.get("/events", query_string={**params, "ical": 1})
    assert r.status_code == 200, r.data[:300]
    uids = [line.split(":", 1)[1].split("@")[0] for line in r.get_data(as_text=True).splitlines()
            if line.startswith("UID:")]
    return [int(u) for u in dict.fromkeys(uids)], int(r.headers["X-TEC-Total"])


def test_the_unpaged_feed_holds_each_file_the_list_shows_once_in_list_order(make_app, repo):
    """The unpaged feed asks the index (or the scanning fallback) for files, not occurrences: it
    must hold exactly the files of the JSON list's events and occurrences, each once, in the order
    of its first occurrence in the list (whatever the window and filters, an exception that
    retitles, moves, hides or features one occurrence included), with the list's total."""
    rng = random.Random(1616)
    svc, c, cat, today, indexed, scanned, admin_i, admin_s = _random_calendar(rng, make_app, repo)
    checked = 0
    for round_ in range(2):
        for _ in range(25):
            p = _random_filters(rng, today, cat)
            admin = rng.random() < 0.3
            expected = _files_of_list(admin_i if admin else indexed, p)
            if not expected[1]:
                continue
            checked += bool(expected[0])
            assert _files_of_feed(admin_i if admin else indexed, p) == expected, (round_, p)
            assert _files_of_feed(admin_s if admin else scanned, p) == expected, (round_, p)
        # an edit of one series: its occurrences are matched one by one beside the base
        path = next(p for eid, p in c.paths.items() if c.events[eid].get("recurrence"))
        c.pending[path] = (repo.root / path).read_text().replace("title: ", "title: Renamed ", 1)
        c.commit("edit a series")
        indexed.get("/events")
        assert svc.index._view is not None and svc.index._view.extra, "the edit is in a derived generation"
    assert checked > 20


def test_the_first_occurrence_is_listed_under_the_series_id_and_read_as_the_series(cal):
    y = this_year() + 1
    sid = cal.content.event(f"{y}-06-01 10:00:00", f"{y}-06-01 11:00:00", tz="UTC", title="Course",
                            recurrence=["RRULE:FREQ=DAILY;COUNT=2"],
                            exceptions={f"{y}-06-01 10:00:00": {"title": "Course: introduction"}})
    cal.commit()
    listed = cal.list({"start_date": f"{y}-06-01", "end_date": f"{y}-06-30"})["events"]
    assert [(e["id"], e["title"]) for e in listed] == [
        (sid, "Course: introduction"), (occurrence_id(sid, datetime(y, 6, 2, 10, 0)), "Course")]
    assert "post_parent" not in listed[0] and listed[1]["post_parent"] == sid
    assert cal.client().get(f"/events/{sid}").get_json()["title"] == "Course"


def test_edits_of_long_daily_series_derive_generations_without_a_full_reload(make_app, repo, paths):
    """A daily series without an end is ~730 occurrences over the 24-month horizon: a derived
    generation counts its edit as one changed file (``search.MAX_EXTRA`` counts files), so several
    such series edited, one of them again and again, keep being answered from generations derived
    from the same base, with the scanning fallback's results. The index writer lock is held by the
    test so that no background catch-up reads a new base meanwhile: every list must come from a
    generation derived in the request, never from a full reload (which would need the lock)."""
    import fcntl

    from calendar_service.index import search
    app = make_app()
    svc = app.extensions["calendar"]
    c = Content(repo)
    today = datetime.now(UTC).date()
    long_series = [c.event(f"{today} {9 + n:02d}:00:00", f"{today} {9 + n:02d}:45:00", title=f"Daily class {n}",
                           recurrence=["RRULE:FREQ=DAILY"]) for n in range(4)]
    for n in range(20):
        day = today + timedelta(days=n * 9)
        c.event(f"{day} 18:00:00", f"{day} 19:00:00", title=f"Evening talk {n}")
    c.commit()
    indexed = Client(app.test_client(), None)
    settle(svc, indexed, repo)
    scanning = make_app()
    scanning.extensions["calendar"].index = None
    scanned = Client(scanning.test_client(), None)
    base = svc.index._view.base
    occurrences_each = len(base.owned[long_series[0]])
    assert occurrences_each > 700
    edits = [0, 1, 2, 3, 0, 0, 2, 0]   # four distinct series (~3,000 occurrences), the first one four times
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    with open(Path(paths["index_dir"]) / "writer.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for round_, k in enumerate(edits):
                sid = long_series[k]
                path = c.paths[sid]
                c.pending[path] = (repo.root / path).read_text().replace(
                    f"title: {c.events[sid]['title']}", f"title: Renamed {words[round_]} class")
                c.events[sid]["title"] = f"Renamed {words[round_]} class"
                c.commit(f"edit series {sid}")
                for params in ({}, {"search": f"renamed {words[round_]}", "per_page": 50, "page": 3},
                               {"start_date": str(today + timedelta(days=300)), "per_page": 20}):
                    a, b = indexed.get("/events", query_string=params), scanned.get("/events", query_string=params)
                    assert a.status_code == b.status_code == 200, (round_, params)
                    ja, jb = a.get_json(), b.get_json()
                    assert (ja["total"], ja["events"]) == (jb["total"], jb["events"]), (round_, params)
                view = svc.index._view
                assert view.commit == repo.head(), f"round {round_}: the list did not come from a derived generation"
                assert view.base is base, f"round {round_}: the base was read again"
            assert len(view.extra) > search.MAX_EXTRA   # more occurrences than the old limit counted
            assert indexed.get("/events", query_string={"search": "renamed hotel"}).get_json()["total"] == occurrences_each
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    settle(svc, indexed, repo)

"""What one recurring event may cost: extreme dates never raise, a series produces at most
CALENDAR_MAX_OCCURRENCES occurrences in a horizon (counted as its rule produces them), a rule that
never matches is refused at once, and a typo or an orphaned exception is reported at its line.
Through the domain, the API (a contributor's POST), ``validate``, and a real remote over
``git daemon`` followed by the webhook."""
from __future__ import annotations

import subprocess
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from calendar_service.cli.commands import main
from calendar_service.domain import recurrence as rec
from calendar_service.domain.recurrence import limits
from conftest import followed
from test_remote import EDITOR, bare, editor_clone, instance, instances, remote, remote_url  # noqa: F401

BERLIN = ZoneInfo("Europe/Berlin")
EVERY_MINUTE = "RRULE:FREQ=HOURLY;BYMINUTE=" + ",".join(str(m) for m in range(60))
DAY_OF_MINUTES = ("RRULE:FREQ=DAILY;BYHOUR=" + ",".join(str(h) for h in range(24)) + ";BYMINUTE="
                  + ",".join(str(m) for m in range(60)))
NEVER = ["RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31",
         "RRULE:FREQ=DAILY;BYMONTH=4;BYMONTHDAY=31", "RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6",
         "RRULE:FREQ=YEARLY;BYWEEKNO=1;BYMONTH=6", "RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30;BYHOUR=1,2,3"]


@pytest.fixture(autouse=True)
def default_limits():
    limits.configure(limits.DEFAULT_MAX_OCCURRENCES, 24)
    yield
    limits.configure(limits.DEFAULT_MAX_OCCURRENCES, 24)


def parse(lines, start="2026-09-01 19:00:00", end="2026-09-01 21:00:00", tz=BERLIN, exceptions=None):
    return rec.parse_recurrence(lines, exceptions, start, end, tz, False)


def event(title, lines, start="2026-09-01 19:00:00", end="2026-09-01 21:00:00", extra="", id_line=""):
    items = "".join(f"- '{line}'\n" for line in lines)
    return (f"---\n{id_line}title: {title}\nstart_date: '{start}'\nend_date: '{end}'\ntimezone: Europe/Berlin\n"
            f"recurrence:\n{items}{extra}---\n")


# ----------------------------------------------------------------------------- extreme values


@pytest.mark.parametrize("lines, start, end, tz", [
    (["RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"], None, None, "America/New_York"),
    (["RRULE:FREQ=DAILY;UNTIL=99991231T000000Z"], None, None, "Pacific/Kiritimati"),
    (["RRULE:FREQ=WEEKLY;BYDAY=TU,FR;UNTIL=99991231T235959Z"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=MONTHLY;BYMONTHDAY=1,-1;UNTIL=99991231T235959Z"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=DAILY;UNTIL=00010101T000000Z"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=YEARLY;COUNT=100000"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=WEEKLY;INTERVAL=100000;COUNT=100000"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=DAILY;INTERVAL=100000;COUNT=100000"], None, None, "America/New_York"),
    (["RRULE:FREQ=DAILY;BYDAY=MO,TU;INTERVAL=99999;COUNT=100000"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=HOURLY;INTERVAL=100000"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=MONTHLY;INTERVAL=100000;COUNT=3"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=DAILY", "EXDATE:99991231T235959Z"], None, None, "America/New_York"),
    (["RRULE:FREQ=DAILY", "EXDATE;TZID=America/New_York:99991231T235959"], None, None, "Europe/Berlin"),
    (["RRULE:FREQ=DAILY", "EXDATE:00010101T000000Z"], None, None, "Pacific/Kiritimati"),
    (["RRULE:FREQ=DAILY", "RDATE:99991231T235959Z"], None, None, "America/New_York"),
    (["RRULE:FREQ=DAILY", "RDATE;TZID=Pacific/Kiritimati:00010101T000000"], None, None, "America/New_York"),
    (["RRULE:FREQ=DAILY"], "0001-01-01 00:00:00", "0001-01-01 01:00:00", "Pacific/Kiritimati"),
    (["RRULE:FREQ=DAILY"], "9999-12-31 00:00:00", "9999-12-31 23:59:59", "America/New_York"),
    (["RRULE:FREQ=DAILY"], None, "9999-12-31 23:59:59", "America/New_York"),
    (["RRULE:FREQ=DAILY;UNTIL=20970805T000000Z"], "2097-08-01 00:00:00", "2097-08-01 01:00:00", "Etc/GMT+12"),
])
def test_extreme_values_never_raise_anything_but_a_recurrence_error(lines, start, end, tz):
    horizon = rec.horizon_end(datetime(2026, 9, 1))
    try:
        series = parse(lines, start or "2026-09-01 19:00:00", end or "2026-09-01 21:00:00", ZoneInfo(tz))
    except rec.RecurrenceError as exc:
        assert exc.problems
        return
    found = list(rec.occurrences(series, horizon_end=horizon))
    assert rec.to_ical_lines(series).rrule == lines[0]
    assert series.is_occurrence(datetime(9999, 12, 31, 19)) is False
    assert series.is_occurrence(datetime(1, 1, 1)) is False
    assert all(o.utc_start <= horizon.replace(tzinfo=None) + (o.utc_end - o.utc_start) for o in found)


def test_an_until_in_year_9999_runs_to_the_horizon():
    series = parse(["RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"])
    horizon = rec.horizon_end(datetime(2026, 9, 1))
    found = list(rec.occurrences(series, horizon_end=horizon))
    assert found[0].original_start == datetime(2026, 9, 1, 19)
    assert len(found) == (horizon.date() - found[0].original_start.date()).days
    # an edit of this and the following occurrences keeps an UNTIL past every occurrence as written
    old, new = rec.apply_following(series, datetime(2026, 9, 10, 19), {"start_date": "2026-09-10 20:00:00"})
    assert new["recurrence"] == ["RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"]
    assert rec.apply_all(series, None, {"start_date": "2026-09-01 18:00:00"})["recurrence"] == [
        "RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"]


@pytest.mark.parametrize("changes", [{"start_date": "9999-12-31 23:00:00"}, {"end_date": "0001-01-01 00:00:00"}])
def test_exception_times_far_outside_any_occurrence_are_refused(changes):
    with pytest.raises(rec.RecurrenceError, match="must be a local time YYYY-MM-DD HH:MM:SS from 1900 to 2200"):
        parse(["RRULE:FREQ=DAILY"], tz=ZoneInfo("America/New_York"), exceptions={"2026-09-02 19:00:00": changes})


@pytest.mark.parametrize("apply", [rec.apply_following, rec.apply_all, rec.apply_this])
def test_a_scoped_edit_to_a_far_time_is_refused_naming_the_field(apply):
    series = parse(["RRULE:FREQ=DAILY"])
    with pytest.raises(ValueError, match="start_date must be a local time YYYY-MM-DD HH:MM:SS from 1900 to 2200"):
        apply(series, datetime(2026, 9, 5, 19), {"start_date": "2500-01-01 10:00:00"})


def test_a_repeat_phrase_until_year_9999_is_a_value_error():
    with pytest.raises(ValueError):
        rec.parse_repeat_phrase("every day until 9999-12-31", datetime(2026, 9, 1, 19), ZoneInfo("America/New_York"))


# ----------------------------------------------------------------------------- occurrences and CPU


@pytest.mark.parametrize("rule", [EVERY_MINUTE, DAY_OF_MINUTES, "RRULE:FREQ=HOURLY",
                                  "RRULE:FREQ=DAILY;BYHOUR=" + ",".join(str(h) for h in range(24))])
def test_a_rule_producing_more_than_the_limit_is_refused_quickly(rule):
    started = time.perf_counter()
    with pytest.raises(rec.RecurrenceError) as err:
        parse([rule], start="2026-09-01 00:00:00", end="2026-09-01 00:01:00")
    assert time.perf_counter() - started < 2
    assert [(p.field, p.index) for p in err.value.problems] == [("recurrence", 0)]
    assert "more than 10,000 occurrences in the 24 months from its start" in err.value.problems[0].message


def test_the_limit_is_the_setting_and_counts_rdates():
    parse(["RRULE:FREQ=DAILY;BYHOUR=9,19"], start="2026-09-01 09:00:00", end="2026-09-01 10:00:00")  # 1,460
    limits.configure(max_occurrences=100)
    with pytest.raises(rec.RecurrenceError, match="more than 100 occurrences"):
        parse(["RRULE:FREQ=WEEKLY;BYDAY=TU,FR"])
    parse(["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=99"])
    with pytest.raises(rec.RecurrenceError, match="more than 100 occurrences"):
        parse(["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=99", "RDATE:20260903T170000Z,20260904T170000Z"])


@pytest.mark.parametrize("rule", NEVER)
def test_a_rule_that_never_matches_is_refused_at_once(rule):
    started = time.perf_counter()
    with pytest.raises(rec.RecurrenceError, match="the first occurrence must match the RRULE"):
        parse([rule], start="2026-02-28 01:00:00", end="2026-02-28 02:00:00")
    assert time.perf_counter() - started < 0.5


def test_a_walk_beyond_the_step_budget_is_refused_not_spun(monkeypatch):
    monkeypatch.setattr(limits, "STEP_BUDGET", 1000)
    rule = "RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=19;BYMINUTE=0"
    with pytest.raises(rec.RecurrenceError, match="produces too rarely to be evaluated"):
        parse([rule, "EXDATE:20960229T180000Z"], start="2028-02-29 19:00:00", end="2028-02-29 20:00:00")
    series = parse([rule], start="2028-02-29 19:00:00", end="2028-02-29 20:00:00")
    assert series.is_occurrence(datetime(2096, 2, 29, 19)) is False     # too far to walk: no occurrence


# ----------------------------------------------------------------------------- the API


@pytest.fixture
def contributor(as_role):
    return as_role("contributor")


def test_the_api_takes_an_until_in_year_9999_and_every_route_answers(contributor, anon, admin):
    body = {"title": "Far", "start_date": "2027-09-03 19:00", "end_date": "2027-09-03 21:00",
            "recurrence": ["RRULE:FREQ=DAILY;UNTIL=99991231T000000Z"]}
    r = contributor.post("/events", json=body)
    assert r.status_code == 201, r.get_json()
    sid = r.get_json()["id"]
    for path in ("/events", f"/events/{sid}", f"/events/{sid}/occurrences", "/events?ical=1", "/venues",
                 "/status", "/changes"):
        answer = admin.get(path)
        assert answer.status_code == 200, (path, answer.get_json())
    listed = admin.get("/events", query_string={"start_date": "2027-09-01", "per_page": 50}).get_json()
    assert listed["total"] > 300


@pytest.mark.parametrize("rule", [EVERY_MINUTE, DAY_OF_MINUTES])
def test_the_api_refuses_a_rule_over_the_occurrence_limit_naming_recurrence(contributor, admin, rule):
    before = admin.get("/events").get_json()["total"]
    r = contributor.post("/events", json={"title": "Flood", "start_date": "2030-09-03 00:00",
                                          "end_date": "2030-09-03 00:01", "recurrence": [rule]})
    assert r.status_code == 400, r.get_json()
    body = r.get_json()
    assert body["code"] == "rest_invalid_param" and body["data"]["status"] == 400
    assert list(body["data"]["params"]) == ["recurrence"]
    assert "more than 10,000 occurrences" in body["data"]["params"]["recurrence"]
    assert admin.get("/events").get_json()["total"] == before


@pytest.mark.parametrize("rule", NEVER[:3])
def test_the_api_refuses_a_rule_that_never_matches_quickly(contributor, rule):
    started = time.perf_counter()
    r = contributor.post("/events", json={"title": "Never", "start_date": "2030-02-28 01:00",
                                          "end_date": "2030-02-28 02:00", "recurrence": [rule]})
    assert time.perf_counter() - started < 2
    assert r.status_code == 400 and list(r.get_json()["data"]["params"]) == ["recurrence"], r.get_json()


# ----------------------------------------------------------------------------- files and validate


def test_validate_names_the_line_of_a_typo_and_of_a_flood(tmp_path, capsys):
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)
    (root / "events" / "typo.md").write_text(event("Typo", ["RRULE:FREQ=WEEKLY;BYDAY=SUNDAY", "EXDATE:20300915T170000Z"],
                                                   start="2030-09-01 19:00:00", end="2030-09-01 21:00:00"))
    (root / "events" / "flood.md").write_text(event("Flood", ["EXDATE:20300902T170000Z", EVERY_MINUTE],
                                                    start="2030-09-01 19:00:00", end="2030-09-01 19:01:00"))
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{root / 'events' / 'typo.md'}:7: 'recurrence' item 1: BYDAY value 'SUNDAY' is not a weekday: write SU " \
           "(two letters: MO TU WE TH FR SA SU, with an optional ordinal such as 2TU or -1FR)" in out
    assert any(line.startswith(f"{root / 'events' / 'flood.md'}:8: 'recurrence' item 2: the series has more than "
                               "10,000 occurrences") for line in out), out


def test_an_exception_the_rule_no_longer_has_is_a_warning_and_the_series_is_served(tmp_path, capsys, repo, anon,
                                                                                   admin):
    moved = event("Choir", ["RRULE:FREQ=WEEKLY;BYDAY=SA;COUNT=10"], start="2027-09-04 19:00:00",
                  end="2027-09-04 21:00:00", id_line="id: 7\n",
                  extra="exceptions:\n  '2027-09-05 19:00:00':\n    title: Sunday special\n"
                        "  '2027-09-11 19:00:00':\n    title: Saturday special\n")
    repo.commit_file("events/choir.md", moved)
    listed = anon.get("/events", query_string={"start_date": "2027-09-01", "end_date": "2027-09-30"}).get_json()
    assert [e["title"] for e in listed["events"]] == ["Choir", "Saturday special", "Choir", "Choir"]
    assert [(s["path"], s["line"], s["severity"]) for s in admin.get("/status").get_json()["skipped"]] == [
        ("events/choir.md", 10, "warning")]
    root = tmp_path / "checked"
    (root / "events").mkdir(parents=True)
    (root / "events" / "choir.md").write_text(moved)
    assert main(["validate", str(root)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{root / 'events' / 'choir.md'}:10: warning: 'exceptions' '2027-09-05 19:00:00': not an occurrence of the "
        "series (any more): the exception is ignored; change its key or remove it"]
    assert main(["validate", "--allow-warnings", str(root)]) == 0


# ----------------------------------------------------------------------------- a pushed file


def test_a_pushed_file_with_an_extreme_until_or_a_flood_costs_only_itself(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    assert a.create("Before").status_code == 201
    editor = editor_clone(bare, tmp_path / "editor")
    (editor.root / "events").mkdir(exist_ok=True)
    (editor.root / "events" / "far.md").write_text(event("Far", ["RRULE:FREQ=DAILY;UNTIL=99991231T235959Z"],
                                                         start="2027-09-01 19:00:00", end="2027-09-01 21:00:00"))
    (editor.root / "events" / "flood.md").write_text(event("Flood", [EVERY_MINUTE], start="2030-09-01 19:00:00",
                                                           end="2030-09-01 19:01:00"))
    (editor.root / "events" / "never.md").write_text(event("Never", [NEVER[0]], start="2030-02-28 01:00:00",
                                                           end="2030-02-28 02:00:00"))
    editor(*EDITOR, "add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", "Hostile series")
    pushed = subprocess.run(["git", "-C", str(editor.root), "push", "-q", "origin", "HEAD:main"], capture_output=True,
                            text=True)
    assert pushed.returncode == 0, pushed.stderr
    started = time.perf_counter()
    assert a.hook().status_code == 200
    client = a.app.test_client()
    for path in ("/events", "/events?ical=1", "/venues", "/changes", "/status"):
        answer = a.admin.get(path)
        assert answer.status_code == 200, (path, answer.get_json())
    assert client.get("/readyz").status_code in (200, 503)
    assert time.perf_counter() - started < 20
    followed(a.app)   # the follower thread gives the new files ids (a read never does)
    titles = {e["title"] for e in a.admin.get("/events", query_string={"start_date": "2027-09-01",
                                                                      "per_page": 50}).get_json()["events"]}
    assert titles == {"Far"}
    skipped = {s["path"]: s for s in a.admin.get("/status").get_json()["skipped"]}
    assert skipped["events/flood.md"]["line"] == 7 and "more than 10,000" in skipped["events/flood.md"]["message"]
    assert "the first occurrence must match the RRULE" in skipped["events/never.md"]["message"]
    # removed again on the remote: the next pull recovers without a restart
    editor(*EDITOR, "pull", "-q", "--rebase", "origin", "main")   # the service gave the new files ids
    editor(*EDITOR, "rm", "-q", "events/far.md", "events/flood.md", "events/never.md")
    editor(*EDITOR, "commit", "-q", "-m", "Remove them")
    editor("push", "-q", "origin", "HEAD:main")
    assert a.hook().status_code == 200
    followed(a.app)
    assert [e["title"] for e in a.admin.get("/events").get_json()["events"]] == ["Before"]
    assert a.admin.get("/status").get_json()["skipped"] == []


def test_a_repeat_phrase_that_never_matches_is_refused_at_once():
    started = time.perf_counter()
    with pytest.raises(ValueError, match="first occurrence must match"):
        rec.parse_repeat_phrase("RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", datetime(2026, 2, 28, 1), BERLIN)
    assert time.perf_counter() - started < 0.5

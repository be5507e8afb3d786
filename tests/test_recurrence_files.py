"""Recurring events, the file and write side: ``recurrence``/``exceptions`` in event
files (``validate`` path:line, skipped when invalid), ``new event --repeat``, the API's
``recurrence`` on create and update, ``recurrence_scope`` on updates and deletes of occurrences
(each one commit authored by the caller, with its file result), the series' ``recurrence``
block, the horizon setting, the importer and the sample calendar. Everything through the real
app, real git repositories and the real command line."""
from __future__ import annotations

from datetime import date, datetime

import pytest
import yaml

from calendar_service.cli.commands import main
from calendar_service.config import Settings
from calendar_service.domain.recurrence import occurrence_id
from calendar_service.service import sample
from conftest import flat
from test_import import import_items

SERIES = """---
id: {id}
title: Choir rehearsal
start_date: '2030-09-03 19:00:00'
end_date: '2030-09-03 21:00:00'
timezone: Europe/Berlin
recurrence:
{lines}{extra}---
Weekly.
"""
RULE = "- RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10\n"


def front(path) -> dict:
    """The front matter of an event file: ``path``, or the file of that name in the month folders
    below ``path``'s folder (the API files an event under ``events/YYYY/MM/``)."""
    if not path.exists():
        found = list(path.parent.rglob(path.name))
        assert len(found) == 1, (path, found)
        path = found[0]
    return yaml.safe_load(path.read_text().split("---\n")[1])


def create_series(admin, **extra) -> dict:
    body = {"title": "Choir", "start_date": "2030-09-03 19:00", "end_date": "2030-09-03 21:00",
            "timezone": "Europe/Berlin", "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"], **extra}
    r = admin.post("/events", json=body)
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def occ(series_id: int, day: int, month: int = 9, hour: int = 19) -> int:
    return occurrence_id(series_id, datetime(2030, month, day, hour))


# ----------------------------------------------------------------------------- files and validate


def test_validate_reports_series_problems_at_their_lines(tmp_path, capsys):
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)
    (root / "events" / "good.md").write_text(SERIES.format(id=1, lines=RULE + "- EXDATE:20300910T190000\n", extra=""))
    (root / "events" / "bad.md").write_text(SERIES.format(
        id=2, lines=RULE + "- EXDATE;TZID=Europe/Berlin:20300911T190000\n",
        extra="exceptions:\n  '2030-09-17 19:00:00':\n    title: Fine\n  '2030-09-24 19:00:00':\n"
              "    cancelled: true\n"))
    (root / "events" / "exrule.md").write_text(SERIES.format(id=5, lines=RULE + "- EXRULE:FREQ=DAILY\n", extra=""))
    (root / "events" / "orphan.md").write_text(
        "---\nid: 3\ntitle: Alone\nstart_date: '2030-01-01 10:00:00'\nend_date: '2030-01-01 11:00:00'\n"
        "exceptions:\n  '2030-01-08 10:00:00': {title: x}\n---\n")
    (root / "venues").mkdir()
    (root / "venues" / "hall.yaml").write_text("id: 4\nvenue: Hall\nrecurrence: [RRULE:FREQ=DAILY]\n")
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    bad = str(root / "events" / "bad.md")
    assert f"{bad}:9: 'recurrence' item 2: EXDATE 2030-09-11 19:00:00 is not an occurrence of the series" in out
    assert any(line.startswith(f"{bad}:13: 'exceptions' '2030-09-24 19:00:00': to remove an occurrence")
               for line in out)
    assert not any(":11:" in line or ":12:" in line for line in out)  # the valid exception is no problem
    assert any(line.startswith(f"{root / 'events' / 'exrule.md'}:9: 'recurrence' item 2: EXRULE is deprecated")
               for line in out)
    assert f"{root / 'events' / 'orphan.md'}:6: 'exceptions' needs 'recurrence': only a recurring event has " \
           "exceptions" in out
    assert f"{root / 'venues' / 'hall.yaml'}:3: 'recurrence' belongs to events only (a recurring event)" in out
    assert not any("good.md" in line for line in out)


def test_an_invalid_series_file_is_skipped_never_served_half_read(admin, anon, repo, app):
    repo.commit_file("events/good.md", SERIES.format(id=1, lines=RULE, extra=""))
    repo.commit_file("events/bad.md", SERIES.format(id=2, lines="- RRULE:FREQ=SECONDLY\n", extra=""))
    assert anon.get("/events/1").status_code == 200
    assert anon.get("/events/2").status_code == 404
    skipped = admin.get("/status").get_json()["skipped"]
    assert [s["path"] for s in skipped] == ["events/bad.md"]
    assert "'recurrence' item 1" in str(skipped)


def test_new_event_repeat_writes_a_series_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CALENDAR_TIMEZONE", "Europe/Berlin")
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)   # a content repository (new refuses to write elsewhere)
    assert main(["new", "event", "--title", "Choir rehearsal", "--start", "2026-09-01 19:00", "--end",
                 "2026-09-01 21:00", "--repeat", "every tuesday until 2027-06-29", "--dir", str(root)]) == 0
    data = front(root / "events" / "choir-rehearsal.md")
    # until the end of that local day (Berlin, summer time: 21:59:59 UTC)
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20270629T215959Z"]
    assert "- RRULE:FREQ=WEEKLY" in (root / "events/2026/09/choir-rehearsal.md").read_text()  # one line per line
    assert main(["new", "event", "--title", "Raw", "--start", "2026-09-01 19:00", "--end", "2026-09-01 20:00",
                 "--repeat", "FREQ=MONTHLY;BYDAY=1TU", "--dir", str(root)]) == 0
    assert front(root / "events" / "raw.md")["recurrence"] == ["RRULE:FREQ=MONTHLY;BYDAY=1TU"]
    assert main(["validate", str(root)]) == 0
    capsys.readouterr()
    # a Wednesday is no Tuesday: refused, nothing written
    assert main(["new", "event", "--title", "Wrong", "--start", "2026-09-02 19:00", "--end", "2026-09-02 20:00",
                 "--repeat", "every tuesday", "--dir", str(root)]) == 2
    assert "--repeat" in capsys.readouterr().err and not (root / "events" / "wrong.md").exists()
    assert main(["new", "venue", "--title", "Hall", "--repeat", "daily", "--dir", str(root)]) == 2


def test_the_horizon_setting():
    assert Settings.from_env({}).recurrence_horizon == 24
    settings = Settings.from_env({"CALENDAR_RECURRENCE_HORIZON": "6"})
    assert settings.horizon_end(datetime(2030, 1, 15, 12, tzinfo=None)).isoformat() == "2030-07-16T00:00:00+00:00"
    for bad in ("0", "121", "soon"):
        with pytest.raises(ValueError, match="CALENDAR_RECURRENCE_HORIZON"):
            Settings.from_env({"CALENDAR_RECURRENCE_HORIZON": bad})


# ----------------------------------------------------------------------------- create and update


def test_create_with_recurrence_is_one_commit_by_the_caller(admin, anon, repo, paths):
    before = repo.count()
    series = create_series(admin)
    assert repo.count() == before + 1 and repo.last_author() == "Administrator <administrator@example.org>"
    data = front(paths["content_dir"] / "events" / "choir.md")
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"] and "exceptions" not in data
    block = anon.get(f"/events/{series['id']}").get_json()["recurrence"]
    assert block == {"rules": ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"], "exceptions": {},
                     "occurrences": f"http://localhost/calendar/events/v1/events/{series['id']}/occurrences"}
    # a form post gives the lines separated by newlines
    r = admin.post("/events", data={"title": "Form", "start_date": "2030-09-04 19:00", "end_date": "2030-09-04 20:00",
                                    "recurrence": "RRULE:FREQ=DAILY;COUNT=3\nEXDATE:20300905T190000"})
    assert r.status_code == 201, r.get_json()
    assert front(paths["content_dir"] / "events" / "form.md")["recurrence"] == [
        "RRULE:FREQ=DAILY;COUNT=3", "EXDATE:20300905T190000"]
    # a single event has no block
    single = admin.post("/events", json={"title": "Once", "start_date": "2030-01-01 10:00", "end_date": "2030-01-01 11:00"})
    assert "recurrence" not in anon.get(f"/events/{single.get_json()['id']}").get_json()


@pytest.mark.parametrize("lines, named", [
    (["RRULE:FREQ=WEEKLY;BYDAY=WE"], "first occurrence must match the RRULE"),
    (["RRULE:FREQ=SECONDLY"], "FREQ"),
    (["RRULE:FREQ=WEEKLY;COUNT=2;UNTIL=20301231T000000Z"], "COUNT"),
    (["EXRULE:FREQ=DAILY"], "EXRULE"),
    ([{"not": "a line"}], "list of RFC 5545 lines"),
])
def test_invalid_recurrence_is_a_400_naming_it_and_commits_nothing(admin, repo, lines, named):
    series = create_series(admin)
    before = repo.count()
    r = admin.post("/events", json={"title": "Bad", "start_date": "2030-09-03 19:00", "end_date": "2030-09-03 20:00",
                                    "recurrence": lines})
    assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param", r.get_json()
    assert named in r.get_json()["data"]["params"]["recurrence"]
    r = admin.put(f"/events/{series['id']}", json={"recurrence": lines})
    assert r.status_code == 400 and named in r.get_json()["data"]["params"]["recurrence"]
    assert repo.count() == before


def test_update_sets_replaces_and_removes_recurrence(admin, repo, paths):
    single = admin.post("/events", json={"title": "Club", "start_date": "2030-09-03 19:00",
                                         "end_date": "2030-09-03 20:00"}).get_json()
    path = paths["content_dir"] / "events" / "club.md"
    r = admin.put(f"/events/{single['id']}", json={"recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"]})
    assert r.status_code == 200, r.get_json()
    assert front(path)["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=4"]
    # an exception, then a new rule: the exception of an occurrence the rule still has is kept
    assert admin.put(f"/events/{occ(single['id'], 10)}", json={"title": "Special"}).status_code == 200
    r = admin.put(f"/events/{single['id']}", json={"recurrence": ["RRULE:FREQ=WEEKLY;COUNT=2"]})
    assert r.status_code == 200
    assert front(path)["exceptions"] == {"2030-09-10 19:00:00": {"title": "Special"}}
    r = admin.put(f"/events/{single['id']}", json={"recurrence": ["RRULE:FREQ=DAILY;INTERVAL=2;COUNT=5"]})
    assert r.status_code == 200 and "exceptions" not in front(path)  # the 10th is no occurrence any more
    before = repo.count()
    r = admin.put(f"/events/{single['id']}", json={"recurrence": None})
    assert r.status_code == 200 and repo.count() == before + 1
    assert "recurrence" not in front(path) and "recurrence" not in admin.get(f"/events/{single['id']}").get_json()


def test_updating_the_series_id_moves_every_occurrence(admin, paths):
    series = create_series(admin, recurrence=["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20301029T170000Z",
                                              "EXDATE:20300917T190000"])
    assert admin.put(f"/events/{occ(series['id'], 24)}", json={"title": "Special"}).status_code == 200
    r = admin.put(f"/events/{series['id']}", json={"start_date": "2030-09-03 20:00", "end_date": "2030-09-03 22:00"})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["start_date"] == "2030-09-03 20:00:00"
    data = front(paths["content_dir"] / "events" / "choir.md")
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20301029T180000Z",
                                  "EXDATE;TZID=Europe/Berlin:20300917T200000"]
    assert data["exceptions"] == {"2030-09-24 20:00:00": {"title": "Special"}}


# ----------------------------------------------------------------------------- scopes


def test_scope_this_writes_an_exception_in_one_commit(admin, as_role, repo, paths):
    series = create_series(admin)
    before = repo.count()
    editor = as_role("editor")
    r = editor.put(f"/events/{occ(series['id'], 10)}", json={"title": "With the orchestra",
                                                            "start_date": "2030-09-10 18:00"})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["id"] == occ(series["id"], 10) and body["title"] == "With the orchestra"
    assert body["start_date"] == "2030-09-10 18:00:00" and body["end_date"] == "2030-09-10 20:00:00"
    assert repo.count() == before + 1 and repo.last_author().startswith("Editor")
    assert flat(repo("show", "--name-only", "--format=", "HEAD").split()) == ["events/choir.md"]
    data = front(paths["content_dir"] / "events" / "choir.md")
    assert data["exceptions"] == {"2030-09-10 19:00:00": {"title": "With the orchestra",
                                                          "start_date": "2030-09-10 18:00:00"}}
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10"] and data["title"] == "Choir"
    # the ETag answered is the series'; a stale one is a 412 and commits nothing
    tag = r.headers["ETag"]
    assert admin.get(f"/events/{series['id']}").headers["ETag"] == tag
    stale = admin.put(f"/events/{occ(series['id'], 17)}", json={"title": "x"}, headers={"If-Match": '"old"'})
    assert stale.status_code == 412 and repo.count() == before + 1
    ok = admin.put(f"/events/{occ(series['id'], 17)}", json={"title": "Fresh"}, headers={"If-Match": tag})
    assert ok.status_code == 200 and repo.count() == before + 2
    # a field of the whole series is refused on one occurrence
    r = admin.put(f"/events/{occ(series['id'], 24)}", json={"status": "draft"})
    assert r.status_code == 400 and "status" in r.get_json()["data"]["params"]
    assert repo.count() == before + 2


def test_scope_this_delete_adds_an_exdate_and_answers_the_occurrence(admin, anon, repo, paths):
    series = create_series(admin)
    admin.put(f"/events/{occ(series['id'], 17)}", json={"title": "Doomed"})
    before = repo.count()
    r = admin.delete(f"/events/{occ(series['id'], 17)}")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["id"] == occ(series["id"], 17) and r.get_json()["title"] == "Doomed"
    assert repo.count() == before + 1
    data = front(paths["content_dir"] / "events" / "choir.md")
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10", "EXDATE;TZID=Europe/Berlin:20300917T190000"]
    assert "exceptions" not in data and data.get("status", "publish") == "publish"
    # it names no occurrence any more; nor do ids that never did
    for gone in (occ(series["id"], 17), occ(series["id"], 18), occ(series["id"], 17, hour=20), occ(999, 17)):
        assert admin.delete(f"/events/{gone}").status_code == 404
        assert admin.put(f"/events/{gone}", json={"title": "x"}).status_code == 404
    assert repo.count() == before + 1


def test_scope_following_splits_into_two_files_in_one_commit(admin, repo, paths):
    series = create_series(admin)
    admin.put(f"/events/{occ(series['id'], 24)}", json={"title": "Later special"})
    before = repo.count()
    r = admin.put(f"/events/{occ(series['id'], 17)}", json={"recurrence_scope": "following", "title": "Late choir",
                                                           "start_date": "2030-09-17 20:00"})
    assert r.status_code == 200, r.get_json()
    new = r.get_json()
    assert new["id"] not in (series["id"], occ(series["id"], 17)) and new["slug"] == "late-choir"
    assert new["start_date"] == "2030-09-17 20:00:00" and new["title"] == "Late choir"
    assert repo.count() == before + 1
    assert sorted(flat(repo("show", "--name-only", "--format=", "HEAD").split())) == ["events/choir.md", "events/late-choir.md"]
    old = front(paths["content_dir"] / "events" / "choir.md")
    assert old["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20300917T165959Z"] and "exceptions" not in old
    split = front(paths["content_dir"] / "events" / "late-choir.md")
    assert split["id"] == new["id"] and split["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=8"]
    assert split["exceptions"] == {"2030-09-24 20:00:00": {"title": "Later special"}}
    assert split["timezone"] == "Europe/Berlin"
    assert admin.get(f"/events/{new['id']}").get_json()["recurrence"]["rules"] == split["recurrence"]


def test_scope_following_delete_ends_the_series(admin, repo, paths):
    series = create_series(admin)
    before = repo.count()
    r = admin.delete(f"/events/{occ(series['id'], 24)}", query_string={"recurrence_scope": "following"})
    assert r.status_code == 200 and r.get_json()["id"] == occ(series["id"], 24)
    assert repo.count() == before + 1
    assert front(paths["content_dir"] / "events" / "choir.md")["recurrence"] == [
        "RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20300924T165959Z"]


def test_scope_all_from_an_occurrence_and_delete_all(admin, repo, paths):
    series = create_series(admin)
    before = repo.count()
    r = admin.put(f"/events/{occ(series['id'], 17)}", json={"recurrence_scope": "all", "title": "Choir (all)",
                                                           "start_date": "2030-09-17 18:30"})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["start_date"] == "2030-09-17 18:30:00" and r.get_json()["title"] == "Choir (all)"
    data = front(paths["content_dir"] / "events" / "choir.md")
    assert data["start_date"] == "2030-09-03 18:30:00" and data["title"] == "Choir (all)"
    assert repo.count() == before + 1
    # delete "all" from an occurrence id trashes the series (one commit)
    r = admin.delete(f"/events/{occurrence_id(series['id'], datetime(2030, 9, 24, 18, 30))}",
                     query_string={"recurrence_scope": "all"})
    assert r.status_code == 200 and r.get_json()["id"] == series["id"] and r.get_json()["status"] == "trash"
    assert repo.count() == before + 2


def test_occurrence_writes_need_the_series_permissions(admin, as_role, repo):
    series = create_series(admin)
    before = repo.count()
    contributor = as_role("contributor")
    assert contributor.put(f"/events/{occ(series['id'], 10)}", json={"title": "x"}).status_code == 403
    assert contributor.delete(f"/events/{occ(series['id'], 10)}").status_code == 403
    assert as_role(None).delete(f"/events/{occ(series['id'], 10)}").status_code == 401
    assert repo.count() == before


# ----------------------------------------------------------------------------- import and sample


def test_import_accepts_recurrence_and_keeps_pro_occurrences_separate(paths, make_app, repo):
    make_app()
    base = {"start_date": "2030-09-03 19:00:00", "end_date": "2030-09-03 21:00:00", "timezone": "Europe/Berlin"}
    series = {**base, "id": 7, "title": "Imported choir", "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"],
              "exceptions": {"2030-09-10 19:00:00": {"title": "Special"}}}
    block = {**base, "title": "From our JSON", "recurrence": {"rules": ["RRULE:FREQ=DAILY;COUNT=2"], "exceptions": {}}}
    # The Events Calendar Pro: each occurrence a separate event sharing post_parent
    pro = [{**base, "id": 20 + n, "title": "Pro rehearsal", "post_parent": 20 if n else 0,
            "start_date": f"2030-09-0{3 + n} 19:00:00", "end_date": f"2030-09-0{3 + n} 21:00:00"} for n in range(3)]
    ours = {**base, "id": occurrence_id(7, datetime(2030, 9, 17, 19)), "title": "An occurrence of ours"}
    import_items(paths, [series, block, *pro, ours])
    root = paths["content_dir"] / "events"
    assert front(root / "imported-choir.md")["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=3"]
    assert front(root / "imported-choir.md")["exceptions"] == {"2030-09-10 19:00:00": {"title": "Special"}}
    assert front(root / "from-our-json.md")["recurrence"] == ["RRULE:FREQ=DAILY;COUNT=2"]
    singles = [front(root / f"pro-rehearsal{s}.md") for s in ("", "-2", "-3")]
    assert [s["id"] for s in singles] == [20, 21, 22] and not any("recurrence" in s for s in singles)
    assert front(root / "an-occurrence-of-ours.md")["id"] < 2 ** 52  # an occurrence id is no record id
    # a wrong rule names the event and writes nothing
    count = repo.count()
    with pytest.raises(Exception, match="recurrence"):
        import_items(paths, [{**base, "title": "Bad", "recurrence": ["RRULE:FREQ=SECONDLY"]}])
    assert repo.count() == count


def test_the_sample_calendar_has_a_valid_series():
    files = sample.build(date(2030, 3, 28), "Europe/Berlin")   # DST starts on the 31st
    path = next(p for p in files if p.endswith("/choir-rehearsal.md"))
    data = front_bytes(files[path])
    assert data["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=FR;COUNT=12", "EXDATE:20300412T190000"]
    assert list(data["exceptions"]) == ["2030-04-26 19:00:00"]
    from calendar_service.domain import record_files
    record, problems = record_files.parse(path, files[path])
    assert record is not None and problems == []


def front_bytes(raw: bytes) -> dict:
    return yaml.safe_load(raw.decode().split("---\n")[1])


def test_a_change_to_a_series_is_reported_for_the_series_id(admin, anon, repo):
    series = create_series(admin)
    token = anon.get("/changes").get_json()["next_token"]
    tag = anon.get(f"/events/{series['id']}").headers["ETag"]
    assert admin.put(f"/events/{occ(series['id'], 10)}", json={"title": "Special"}).status_code == 200
    assert admin.delete(f"/events/{occ(series['id'], 17)}").status_code == 200
    body = anon.get(f"/changes?since={token}").get_json()
    assert [(c["type"], c["id"], c["action"]) for c in body["changes"]] == [("events", series["id"], "updated")]
    # the series' single read changed (its recurrence block), so its ETag did; its revisions list both writes
    assert anon.get(f"/events/{series['id']}").headers["ETag"] != tag
    assert len(admin.get(f"/events/{series['id']}/revisions").get_json()["revisions"]) == 3


def test_exception_fields_are_type_checked_like_the_event_fields(tmp_path, capsys):
    root = tmp_path / "content"
    (root / "events").mkdir(parents=True)
    (root / "events" / "typed.md").write_text(SERIES.format(
        id=1, lines=RULE, extra="exceptions:\n  '2030-09-10 19:00:00':\n    title: [not, text]\n"
                                "    featured: 'yes'\n"))
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out
    assert "typed.md:9: 'exceptions' '2030-09-10 19:00:00': 'title' must be a string" in out
    assert "featured" not in out  # 'yes' reads as true, as in the event's own fields

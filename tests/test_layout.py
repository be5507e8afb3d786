"""Where event files live: the service files a new event under ``events/YYYY/MM/`` (the year and
month it starts), so a commit rewrites a few small trees instead of one folder of every event.
Files at the top of ``events/`` (the older layout) are still read and stay where they are; an
event in a month folder follows its start to another month's folder. All through the real app,
git and index."""
from __future__ import annotations

from calendar_service.cli.commands import main as cli_main
from calendar_service.domain import record_files
from calendar_service.domain.resources import EVENTS, VENUES
from calendar_service.storage.recovery import WORKTREE_TEMP_PREFIX
from calendar_service.storage.writing import BULK_FILES

from test_access_control import _cli
from test_follow_git import event_file


def test_a_new_event_is_filed_by_the_month_it_starts_and_linked_records_stay_flat(admin, repo):
    r = admin.post("/events", json={"title": "Winter Gala", "start_date": "2031-02-14 19:00",
                                    "end_date": "2031-02-14 23:00", "venue": {"venue": "Opera House"}})
    assert r.status_code == 201, r.get_json()
    assert repo.files() == ["events/2031/02/winter-gala.md", "venues/opera-house.yaml"]
    # one commit; git sees three small trees (events, 2031, 02) and a venue
    assert repo("show", "--name-only", "--format=", "HEAD").split() == repo.files()
    assert admin.get("/events/by-slug/winter-gala").get_json()["id"] == r.get_json()["id"]


def test_a_changed_start_moves_the_file_to_its_month_in_one_commit_and_history_follows(admin, repo):
    event = admin.post("/events", json={"title": "Moving", "start_date": "2031-02-14 19:00",
                                        "end_date": "2031-02-14 21:00"}).get_json()
    count = repo.count()
    r = admin.post(f"/events/{event['id']}", json={"start_date": "2031-04-02 19:00", "end_date": "2031-04-02 21:00"})
    assert r.status_code == 200, r.get_json()
    assert repo.count() == count + 1 and repo.files() == ["events/2031/04/moving.md"]
    assert sorted(repo("show", "--name-only", "--no-renames", "--format=", "HEAD").split()) == [
        "events/2031/02/moving.md", "events/2031/04/moving.md"]
    assert repo.status() == "" and not (repo.root / "events/2031/02").exists()
    # a title change keeps it where it is; the revisions follow it across the move
    assert admin.post(f"/events/{event['id']}", json={"title": "Moved"}).status_code == 200
    assert repo.files() == ["events/2031/04/moving.md"]
    revisions = admin.get(f"/events/{event['id']}/revisions").get_json()["revisions"]
    assert len(revisions) == 3


def test_a_file_at_the_top_of_events_is_read_and_never_moved(app, admin, anon, repo):
    repo.commit_file("events/old-layout.md", event_file(40, "Old layout"))
    assert anon.get("/events/40").get_json()["title"] == "Old layout"
    # a new start and a new slug: renamed in place, not moved into a month folder
    r = admin.post("/events/40", json={"start_date": "2031-06-01 10:00", "end_date": "2031-06-01 11:00",
                                       "slug": "still-on-top"})
    assert r.status_code == 200, r.get_json()
    assert repo.files() == ["events/still-on-top.md"] and repo.status() == ""


def test_an_editor_file_in_a_month_folder_is_served_and_validate_says_when_it_is_misfiled(anon, repo, capsys):
    repo.commit_file("events/2030/05/by-hand.md", event_file(41, "By hand"))          # starts 2030-05-01
    repo.commit_file("events/2030/07/misfiled.md", event_file(42, "Misfiled"))        # starts 2030-05-01 too
    repo.commit_file("events/festival/nested.md", event_file(43, "Not a month folder"))
    assert anon.get("/events/41").get_json()["title"] == "By hand"
    assert anon.get("/events/42").get_json()["title"] == "Misfiled"
    assert anon.get("/events/43").status_code == 404
    assert cli_main(["validate", str(repo.root)]) == 1      # warnings, each at its file and line
    out = capsys.readouterr().out
    assert "events/2030/07/misfiled.md:5: warning: starts in another month than its folder says" in out
    assert "events/2030/05/" in out and "by-hand.md" not in out
    assert "events/festival/nested.md:1: warning: not read by the service (wrong folder or extension)" in out


def test_paths_from_dates_are_checked_like_any_other(repo):
    assert record_files.path_for(EVENTS, "gala", {"start_date": "2031-02-14 19:00:00"}) == "events/2031/02/gala.md"
    # a date that is not a date files at the top; venues are never filed by month
    assert record_files.path_for(EVENTS, "gala", {"start_date": "../../x"}) == "events/gala.md"
    assert record_files.path_for(EVENTS, "gala", {"start_date": "2031-13-01 10:00:00"}) == "events/gala.md"
    assert record_files.path_for(VENUES, "hall", {"start_date": "2031-02-14 19:00:00"}) == "venues/hall.yaml"
    assert record_files.resource_of_path("events/2031/02/gala.md") is EVENTS
    for path in ("events/2031/2/gala.md", "events/31/02/gala.md", "events/2031/02/x/gala.md", "venues/2031/02/hall.yaml",
                 "events/2031/gala.md"):
        assert record_files.resource_of_path(path) is None, path


def test_new_writes_into_the_month_folder_and_refuses_a_taken_slug(app, repo, capsys):
    repo.commit_file("events/jazz.md", event_file(50, "Jazz"))
    assert cli_main(["new", "event", "--title", "Jazz", "--start", "2030-08-01 20:00", "--end", "2030-08-01 22:00",
                     "--dir", str(repo.root)]) == 2
    assert "exists already with the slug 'jazz'" in capsys.readouterr().err
    assert cli_main(["new", "event", "--title", "Blues", "--start", "2030-08-01 20:00", "--end", "2030-08-01 22:00",
                     "--dir", str(repo.root)]) == 0
    assert (repo.root / "events/2030/08/blues.md").exists()


def test_file_by_month_moves_the_older_layout_in_one_commit_and_keeps_every_byte(paths, app, admin, anon, repo):
    hand = event_file(60, "Hand written", extra="featured: true\n# an editor's comment\n")
    repo.commit_files({"events/hand.md": hand, "events/second.html": event_file(61, "Second").replace(
                       "2030-05-01", "2030-06-01"), "events/2030/05/hand-2.md": event_file(62, "Filed already"),
                       "events/unreadable.md": "---\ntitle: [\n---\n"})
    assert anon.get("/events/60").status_code == 200
    refused = _cli(paths, "file-by-month", "--user", "author", "--yes")
    assert refused.returncode == 2 and "may not move every file" in refused.stderr
    before = repo.count()
    done = _cli(paths, "file-by-month", "--user", "editor", "--yes")
    assert done.returncode == 0, done.stderr
    assert "moved 2 event file(s)" in done.stdout
    assert repo.count() == before + 1 and repo.last_author() == "Editor <editor@example.org>"
    assert repo.files() == ["events/2030/05/hand-2.md", "events/2030/05/hand.md", "events/2030/06/second.html",
                            "events/unreadable.md"]   # names kept; a file the service cannot read stays
    assert (repo.root / "events/2030/05/hand.md").read_text() == hand and repo.status() == ""
    assert anon.get("/events/60").get_json()["title"] == "Hand written"
    assert [r["commit"] for r in admin.get("/events/60/revisions").get_json()["revisions"]][0] == repo.head()
    # nothing left to move: no commit
    again = _cli(paths, "file-by-month", "--user", "editor", "--yes")
    assert again.returncode == 0 and "nothing committed" in again.stdout and repo.count() == before + 1
    declined = _cli(paths, "file-by-month", "--user", "editor", input_text="n\n")
    assert declined.returncode == 1 and "nothing moved" in declined.stdout


def test_file_by_month_leaves_a_file_whose_place_is_taken_and_says_so(paths, app, repo):
    repo.commit_files({"events/clash.md": event_file(70, "Clash"), "events/moves.md": event_file(71, "Moves"),
                       "events/2030/05/clash.md": "---\ntitle: [\n---\n"})   # an editor's broken file is there
    done = _cli(paths, "file-by-month", "--user", "administrator", "--yes")
    assert done.returncode == 0, done.stderr
    assert "moved 1 event file(s)" in done.stdout
    assert repo.files() == ["events/2030/05/clash.md", "events/2030/05/moves.md", "events/clash.md"]
    assert (repo.root / "events/2030/05/clash.md").read_text() == "---\ntitle: [\n---\n"
    assert "events/clash.md stays: events/2030/05/clash.md exists" in repo.last_message()


def test_file_by_month_of_many_files_writes_each_whole_with_one_flush(paths, app, repo):
    # past BULK_FILES files the working tree is written without an fsync per file, then flushed once
    count = BULK_FILES + 16
    files = {f"events/many-{n}.md": event_file(100 + n, f"Many {n}").replace("2030-05-01", f"2030-{n % 12 + 1:02d}-01")
             for n in range(count)}
    repo.commit_files(files)
    done = _cli(paths, "file-by-month", "--user", "administrator", "--yes")
    assert done.returncode == 0, done.stderr
    assert f"moved {count} event file(s)" in done.stdout
    for n in range(count):
        assert (repo.root / f"events/2030/{n % 12 + 1:02d}/many-{n}.md").read_text() == files[f"events/many-{n}.md"]
    assert not [p for p in (repo.root / "events").rglob("*") if p.name.startswith(WORKTREE_TEMP_PREFIX)]
    assert repo.status() == "" and not list((repo.root / "events").glob("many-*"))

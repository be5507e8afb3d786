"""Dates and authors from git: a commit that changes a file without stamping it gives the record
its `modified` (JSON, iCal LAST-MODIFIED/DTSTAMP, a growing SEQUENCE); a hand-written file without
`date_utc` or `author` takes the date and the author (by e-mail) of the commit that added it."""
from __future__ import annotations

import os
import subprocess

import icalendar

from calendar_service.http.ical import sequence
from conftest import followed


def commit_at(repo, when: str, email: str, message: str) -> None:
    """Commit everything staged with plain git, author and committer dated ``when``."""
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(repo.root), "-c", "user.name=Someone", "-c", f"user.email={email}",
                    "commit", "-q", "-m", message], check=True, env=env)


def vevent(client, event_id: int):
    r = client.get(f"/events/{event_id}", query_string={"ical": "1"})
    assert r.status_code == 200
    return next(iter(icalendar.Calendar.from_ical(r.data).walk("VEVENT")))


def test_an_editor_commit_that_moves_an_event_gives_its_modified_and_a_higher_sequence(app, anon, factory, repo):
    event = factory.event(title="Jazz Night", start_date="2030-05-01 20:00", end_date="2030-05-01 23:00")
    before = anon.get(f"/events/{event['id']}").get_json()
    first = vevent(anon, event["id"])
    assert before["modified_utc"] == event["modified_utc"]  # the API's own stamp is kept

    path = repo.root / repo.path_of(event['slug'])
    path.write_text(path.read_text().replace("2030-05-01", "2030-05-08"))
    repo("add", "-A")
    commit_at(repo, "2031-03-04T05:06:07Z", "editor@example.org", "Move Jazz Night a week")

    after = anon.get(f"/events/{event['id']}").get_json()
    assert after["start_date"].startswith("2030-05-08")
    assert after["modified_utc"] == "2031-03-04 05:06:07"
    assert after["date_utc"] == before["date_utc"]  # the publication date stays
    second = vevent(anon, event["id"])
    assert second.decoded("LAST-MODIFIED").strftime("%Y-%m-%d %H:%M:%S") == "2031-03-04 05:06:07"
    assert second.decoded("DTSTAMP").strftime("%Y-%m-%d %H:%M:%S") == "2031-03-04 05:06:07"
    assert int(second["SEQUENCE"]) > int(first["SEQUENCE"])
    # the same from a cold start (another worker, a restart): one git log gives the same values
    again = app.test_client().get(f"/calendar/events/v1/events/{event['id']}")
    assert again.get_json()["modified_utc"] == after["modified_utc"]


def test_a_cold_start_reads_the_same_dates_as_a_running_service(make_app, repo, factory, anon):
    event = factory.event(title="Cold", start_date="2030-06-01 20:00", end_date="2030-06-01 23:00")
    path = repo.root / repo.path_of(event['slug'])
    path.write_text(path.read_text().replace("Cold", "Cold, edited"))
    repo("add", "-A")
    commit_at(repo, "2032-01-02T03:04:05Z", "nobody@example.net", "Edit")
    fresh = make_app().test_client().get(f"/calendar/events/v1/events/{event['id']}").get_json()
    assert fresh["title"] == "Cold, edited"
    assert fresh["modified_utc"] == "2032-01-02 03:04:05"


def test_a_hand_written_file_takes_the_adding_commits_date_and_author(app, anon, admin, repo):
    accounts = app.extensions["calendar"].accounts
    author = next(u for u in accounts.users() if u.email == "author@example.org")
    (repo.root / "events").mkdir(exist_ok=True)
    (repo.root / "events/by-hand.md").write_text(
        "---\ntitle: By hand\nstatus: publish\nstart_date: '2030-07-01 10:00:00'\n"
        "end_date: '2030-07-01 12:00:00'\n---\nWritten by hand.\n")
    (repo.root / "events/stranger.md").write_text(
        "---\ntitle: By a stranger\nstatus: publish\nstart_date: '2030-07-02 10:00:00'\n"
        "end_date: '2030-07-02 12:00:00'\n---\n")
    repo("add", "-A")
    commit_at(repo, "2030-02-03T04:05:06Z", "Author@Example.org", "Add an event by hand")
    followed(app)   # the follower thread gives both files ids
    listed = {e["title"]: e for e in anon.get("/events", query_string={"start_date": "2030-07-01", "end_date": "2030-07-31"}).get_json()["events"]}
    mine = listed["By hand"]
    assert mine["date_utc"] == "2030-02-03 04:05:06"
    assert mine["author"] == str(author.id)
    assert vevent(anon, mine["id"]).decoded("CREATED").strftime("%Y-%m-%d %H:%M:%S") == "2030-02-03 04:05:06"

    # a later edit by someone without an account: the edit dates `modified`, the adding commit
    # still gives the date and the author
    stranger = repo.root / "events/stranger.md"
    stranger.write_text(stranger.read_text().replace("title: By a stranger", "title: By a stranger, edited"))
    repo("add", "-A")
    commit_at(repo, "2030-02-04T00:00:00Z", "stranger@example.net", "Edit the stranger's event")
    listed = {e["title"]: e for e in anon.get("/events", query_string={"start_date": "2030-07-01", "end_date": "2030-07-31"}).get_json()["events"]}
    other = listed["By a stranger, edited"]
    assert other["date_utc"] == "2030-02-03 04:05:06"  # still the adding commit's, not the edit's
    assert other["modified_utc"] == "2030-02-04 00:00:00"
    assert other["author"] == str(author.id)

    # a file added by an e-mail no account has: no author is made up
    (repo.root / "events/unknown.md").write_text(
        "---\ntitle: Unknown\nstatus: publish\nstart_date: '2030-07-03 10:00:00'\n"
        "end_date: '2030-07-03 12:00:00'\n---\n")
    repo("add", "-A")
    commit_at(repo, "2030-02-05T00:00:00Z", "stranger@example.net", "Add an event nobody's account wrote")
    followed(app)
    listed = {e["title"]: e for e in anon.get("/events", query_string={"start_date": "2030-07-01", "end_date": "2030-07-31"}).get_json()["events"]}
    assert listed["Unknown"]["date_utc"] == "2030-02-05 00:00:00"
    assert listed["Unknown"]["author"] not in (str(author.id),)
    assert "author:" not in (repo.root / "events/unknown.md").read_text()

    # an API update of it keeps those values and stamps its own modification time
    r = admin.post(f"/events/{mine['id']}", json={"title": "By hand, via the API"})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["date_utc"] == "2030-02-03 04:05:06"
    assert r.get_json()["modified_utc"] != "2030-02-03 04:05:06"
    written = (repo.root / "events/by-hand.md").read_text()
    assert "date_utc: '2030-02-03 04:05:06'" in written and f"author: {author.id}" in written


def test_sequence_grows_with_the_modification_time():
    from datetime import datetime, timezone
    earlier = datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert sequence(earlier.replace(second=1)) == sequence(earlier) + 1
    assert sequence(datetime(1999, 1, 1, tzinfo=timezone.utc)) == 0

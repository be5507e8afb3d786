"""Event endpoints over HTTP: create, read, update, delete and the basics of the list.

Every test runs the real app on its own git repository (see conftest.py). Expected values
are the original plugin's: the event object's fields and their order, list pagination,
creating and updating (with linked venues and organizers), deleting to the trash and for
good, and the error codes; key orders are those of its recorded responses, copied inline.
"""
from __future__ import annotations

import base64
import contextlib
import shutil
from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo

import pytest
import yaml

from calendar_service import create_app
from conftest import API, Client, Git, flat

BASE = "http://localhost" + API

# Key order of an event object (samples/event_single.json); single GET appends json_ld.
EVENT_KEYS = [
    "id", "global_id", "global_id_lineage", "author", "status", "date", "date_utc", "modified", "modified_utc",
    "url", "rest_url", "title", "description", "excerpt", "slug", "image", "all_day", "start_date",
    "start_date_details", "end_date", "end_date_details", "utc_start_date", "utc_start_date_details", "utc_end_date",
    "utc_end_date_details", "timezone", "timezone_abbr", "cost", "cost_details", "website", "show_map",
    "show_map_link", "hide_from_listings", "sticky", "featured", "categories", "tags", "venue", "organizer",
    "custom_fields",
]
DETAIL_KEYS = ["year", "month", "day", "hour", "minutes", "seconds"]
COST_KEYS = ["currency_symbol", "currency_code", "currency_position", "values"]
# A term embedded in an event (WordPress' raw term record), as in the sample.
EMBEDDED_TERM_KEYS = ["name", "slug", "term_group", "term_taxonomy_id", "taxonomy", "description", "parent",
                      "count", "filter", "id", "urls"]
# The embedded venue and organizer of samples/create_event_1.json (empty values dropped).
VENUE_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "venue", "slug",
              "address", "city", "country", "state", "zip", "phone", "website", "stateprovince", "show_map",
              "show_map_link", "global_id", "global_id_lineage"]
ORGANIZER_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "organizer",
                  "slug", "phone", "website", "email", "global_id", "global_id_lineage"]
LIST_KEYS = ["events", "rest_url", "total", "total_pages"]

USERS = {  # conftest: one account per role, named after the role, ids in ROLES order
    "administrator": (1, "Administrator <administrator@example.org>"),
    "editor": (2, "Editor <editor@example.org>"),
    "author": (3, "Author <author@example.org>"),
    "contributor": (4, "Contributor <contributor@example.org>"),
    "subscriber": (5, "Subscriber <subscriber@example.org>"),
}

NOT_FOUND_999999 = {"code": "rest-event-not-found", "message": "Event with ID 999999 does not exist.",
                    "data": {"status": 404}}
FORBIDDEN_401 = {"code": "rest_forbidden", "message": "Sorry, you are not allowed to do that.",
                 "data": {"status": 401}}


# ----------------------------------------------------------------------------- helpers


def today(tz: str = "UTC") -> date:
    return datetime.now(ZoneInfo(tz)).date()


def stamp(day: date, hour: int = 0, minute: int = 0, second: int = 0) -> str:
    return datetime.combine(day, time(hour, minute, second)).strftime("%Y-%m-%d %H:%M:%S")


def to_utc(local: str, tz: str) -> str:
    moment = datetime.strptime(local, "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo(tz))
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def from_utc(utc: str, tz: str) -> str:
    moment = datetime.strptime(utc, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return moment.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M:%S")


def abbr(local: str, tz: str) -> str:
    return datetime.strptime(local, "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo(tz)).tzname()


def details(text: str) -> dict:
    return {"year": text[0:4], "month": text[5:7], "day": text[8:10], "hour": text[11:13],
            "minutes": text[14:16], "seconds": text[17:19]}


def next_weekday(day: date, weekday: int) -> date:
    """PHP's "next <weekday>": the first such day strictly after ``day``."""
    return day + timedelta(days=(weekday - day.weekday()) % 7 or 7)


def event_body(**fields) -> dict:
    d = today()
    return {"title": "Jazz Night", "start_date": stamp(d + timedelta(days=2), 19),
            "end_date": stamp(d + timedelta(days=2), 22), **fields}


def read_event_file(repo, slug: str, rev: str = "HEAD") -> tuple[dict, str, str]:
    """(front matter, body, raw text) of an event file as committed at ``rev``."""
    raw = repo("show", f"{rev}:{repo.path_at(slug, rev)}")
    assert raw.startswith("---\n"), raw
    _, front, body = raw.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert isinstance(meta, dict)
    return meta, body, raw


def front_keys(raw: str) -> list[str]:
    front = raw.split("---\n", 2)[1]
    return [line.split(":", 1)[0] for line in front.splitlines() if line and not line.startswith((" ", "-"))]


def changed_files(repo, rev: str = "HEAD") -> list[str]:
    return sorted(repo("show", "--name-only", "--no-renames", "--format=", rev).split())


def first_line(repo) -> str:
    return repo.last_message().splitlines()[0]


@contextlib.contextmanager
def unchanged(repo):
    """The block must not commit, move HEAD or leave anything in the working tree."""
    before = (repo.count(), repo.head() if repo.count() else None, repo.status())
    yield
    after = (repo.count(), repo.head() if repo.count() else None, repo.status())
    assert after == before


@contextlib.contextmanager
def one_commit(repo, who: str = "administrator"):
    """The block must make exactly one commit, authored by ``who``, and leave a clean tree."""
    before = repo.count()
    yield
    assert repo.count() == before + 1
    assert repo.last_author() == USERS[who][1]
    assert repo.status() == ""


def ids(listing: dict) -> list[int]:
    return [e["id"] for e in listing["events"]]


def query_of(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


@pytest.fixture
def site(make_app):
    """``site("America/New_York")`` -> an administrator client of an app with that site time zone."""
    def build(tz: str, role: str = "administrator") -> Client:
        return Client(make_app(site_timezone=tz).test_client(), role)
    return build


@pytest.fixture(scope="module")
def shared(tmp_path_factory, users_template):
    """One app for the many checks that must not write: the signed-in user's password is then
    verified once (Argon2 is slow by design) instead of once per test. Each test still asserts
    that its request left the repository untouched."""
    root = tmp_path_factory.mktemp("shared")
    users = root / "users.yaml"
    shutil.copy(users_template, users)
    app = create_app({"content_dir": root / "content", "index_dir": root / "index", "users_file": users,
                      "seed_sample": False, "site_timezone": "UTC"})
    flask_client = app.test_client()

    class Shared:
        admin = Client(flask_client, "administrator")
        anon = Client(flask_client, None)
        repo = Git(root / "content")
    return Shared


def hand_commit(repo, files: dict[str, str], message: str = "Add by hand") -> None:
    """Commit several files at once, as an editor working outside the API would."""
    repo.commit_files(files, message)


# ============================================================================= create: validation


@pytest.mark.parametrize("encoding", ["json", "form"])
@pytest.mark.parametrize("body, missing", [
    ({}, ["title", "start_date", "end_date"]),
    ({"start_date": "2030-01-01 10:00:00", "end_date": "2030-01-01 11:00:00"}, ["title"]),
    ({"title": "No dates"}, ["start_date", "end_date"]),
    ({"title": "No end", "start_date": "2030-01-01 10:00:00"}, ["end_date"]),
])
def test_create_missing_required_params_is_400_with_exact_envelope(shared, encoding, body, missing):
    repo = shared.repo
    with unchanged(repo):
        r = shared.admin.post("/events", **{encoding if encoding == "json" else "data": body})
    assert r.status_code == 400
    assert r.get_json() == {
        "code": "rest_missing_callback_param",
        "message": "Missing parameter(s): " + ", ".join(missing),
        "data": {"status": 400, "params": missing},
    }


@pytest.mark.parametrize("field, value", [
    ("title", ""),
    ("start_date", ""),
    ("start_date", "before my birthday"),
    ("end_date", "after my birthday"),
    ("author", 23),
    ("author", ""),
    ("author", "foo"),
    ("date", "foo"),
    ("date_utc", "foo"),
    ("website", "foo"),
    ("website", "example.com/no-scheme"),
    ("image", "foo bar"),
    ("image", "23"),
    ("description", ""),
    ("excerpt", ""),
    ("slug", ""),
    ("timezone", "Mars/Olympus_Mons"),
    ("status", "kinda_thinking_about_it"),
    ("all_day", "maybe"),
    ("featured", "perhaps"),
    ("hide_from_listings", "sometimes"),
    ("venue", 999999),
    ("venue", "foo"),
    ("venue", {"website": "http://example.com"}),
    ("organizer", 999999),
    ("organizer", [{"organizer": "Fine"}, {"website": "http://example.com"}]),
])
def test_create_invalid_value_is_400_rest_invalid_param(shared, field, value):
    with unchanged(shared.repo):
        r = shared.admin.post("/events", json=event_body(**{field: value}))
    assert r.status_code == 400, r.get_json()
    body = r.get_json()
    assert body["code"] == "rest_invalid_param"
    assert body["message"] == f"Invalid parameter(s): {field}"
    assert body["data"]["status"] == 400
    assert list(body["data"]["params"]) == [field]
    assert isinstance(body["data"]["params"][field], str) and body["data"]["params"][field]


def test_linked_id_of_the_wrong_type_is_rejected(admin, repo, factory):
    organizer = factory.organizer()
    venue = factory.venue()
    with unchanged(repo):
        r1 = admin.post("/events", json=event_body(venue=organizer["id"]))
        r2 = admin.post("/events", json=event_body(organizer=[venue["id"]]))
    assert (r1.status_code, r1.get_json()["code"], list(r1.get_json()["data"]["params"])) == \
        (400, "rest_invalid_param", ["venue"])
    assert (r2.status_code, r2.get_json()["code"], list(r2.get_json()["data"]["params"])) == \
        (400, "rest_invalid_param", ["organizer"])


def test_every_invalid_param_is_named_in_one_error(admin, repo):
    with unchanged(repo):
        r = admin.post("/events", json=event_body(title="", website="foo", author=23))
    body = r.get_json()
    assert r.status_code == 400
    assert body["code"] == "rest_invalid_param"
    assert set(body["data"]["params"]) == {"title", "website", "author"}
    assert body["message"].startswith("Invalid parameter(s): ")
    assert sorted(body["message"].split(": ", 1)[1].split(", ")) == ["author", "title", "website"]


def test_create_anonymous_is_401_with_exact_envelope(anon, repo):
    with unchanged(repo):
        r = anon.post("/events", json=event_body())
    assert r.status_code == 401
    assert r.get_json() == FORBIDDEN_401


def test_create_subscriber_is_403(as_role, repo):
    with unchanged(repo):
        r = as_role("subscriber").post("/events", json=event_body())
    assert r.status_code == 403
    assert r.get_json() == {"code": "rest_forbidden", "message": "Sorry, you are not allowed to do that.",
                            "data": {"status": 403}}


def test_create_validation_runs_before_permission(anon, repo):
    # WordPress checks required and invalid parameters before the permission callback
    with unchanged(repo):
        missing = anon.post("/events", json={"start_date": "tomorrow 9am", "end_date": "tomorrow 10am"})
        invalid = anon.post("/events", json=event_body(website="foo"))
    assert (missing.status_code, missing.get_json()["code"]) == (400, "rest_missing_callback_param")
    assert (invalid.status_code, invalid.get_json()["code"]) == (400, "rest_invalid_param")


def test_wrong_password_is_401_and_not_anonymous(app, repo):
    client = Client(app.test_client(), None)
    client.headers["Authorization"] = "Basic " + base64.b64encode(b"administrator:nope").decode()
    with unchanged(repo):
        r = client.post("/events", json=event_body())
    assert r.status_code == 401


def test_malformed_json_body_is_400(admin, repo):
    with unchanged(repo):
        r = admin.post("/events", data='{"title": "x",', headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.get_json()["code"] == "rest_invalid_json"


# ============================================================================= create: success


def test_create_json_event_response_file_and_commit(admin, repo):
    body = {
        "title": "Peer Concert", "description": "An evening concert.", "excerpt": "Concert",
        "start_date": "2030-12-05 19:00:00", "end_date": "2030-12-05 22:00:00", "timezone": "America/New_York",
        "website": "https://event.example.com", "featured": True,
    }
    with one_commit(repo):
        r = admin.post("/events", json=body)
    assert r.status_code == 201
    event = r.get_json()
    assert list(event) == EVENT_KEYS
    eid = event["id"]
    assert isinstance(eid, int) and eid > 0
    assert event["global_id"] == f"localhost?id={eid}"
    assert event["global_id_lineage"] == [f"localhost?id={eid}"]
    assert event["author"] == "1"
    assert event["status"] == "publish"
    assert event["url"] == "http://localhost/event/peer-concert/"
    assert event["rest_url"] == f"{BASE}/events/{eid}"
    assert event["title"] == "Peer Concert"
    assert event["description"] == "<p>An evening concert.</p>"
    assert event["excerpt"] == "<p>Concert</p>"
    assert event["slug"] == "peer-concert"
    assert event["image"] is False
    assert event["all_day"] is False
    assert event["start_date"] == "2030-12-05 19:00:00"
    assert event["end_date"] == "2030-12-05 22:00:00"
    assert event["utc_start_date"] == "2030-12-06 00:00:00"
    assert event["utc_end_date"] == "2030-12-06 03:00:00"
    assert event["timezone"] == "America/New_York"
    assert event["timezone_abbr"] == "EST"
    assert event["cost"] == ""
    assert event["cost_details"] == {"currency_symbol": "", "currency_code": "", "currency_position": "",
                                     "values": []}
    assert event["website"] == "https://event.example.com"
    assert event["featured"] is True
    assert (event["hide_from_listings"], event["sticky"]) == (False, False)
    assert (event["categories"], event["tags"], event["venue"], event["organizer"]) == ([], [], [], [])
    assert event["custom_fields"] == []
    # the commit
    assert first_line(repo) == f'Create event {eid} "Peer Concert"'
    assert flat(changed_files(repo)) == ["events/peer-concert.md"]
    assert flat(repo.files()) == ["events/peer-concert.md"]
    # the file: YAML front matter plus the description as the body
    meta, text, _ = read_event_file(repo, "peer-concert")
    assert text.strip() == "An evening concert."
    assert meta["id"] == eid
    assert meta["title"] == "Peer Concert"
    assert meta["slug"] == "peer-concert"
    assert meta["status"] == "publish"
    assert meta["author"] == 1
    assert str(meta["start_date"]) == "2030-12-05 19:00:00"
    assert str(meta["end_date"]) == "2030-12-05 22:00:00"
    assert meta["timezone"] == "America/New_York"
    assert meta["excerpt"] == "Concert"
    assert meta["website"] == "https://event.example.com"
    assert meta["featured"] is True
    assert "description" not in meta


def test_create_response_equals_a_later_get_minus_json_ld(admin, factory):
    created = factory.event(description="Body", excerpt="Short", cost="10")
    fetched = admin.get(f"/events/{created['id']}").get_json()
    assert list(fetched) == EVENT_KEYS + ["json_ld"]
    fetched.pop("json_ld")
    assert fetched == created


def test_create_with_form_body_and_php_style_keys(admin, repo, factory):
    c1, c2 = factory.category(), factory.category()
    t1 = factory.tag()
    d = today() + timedelta(days=3)
    form = {
        "title": "Form Event",
        "start_date": stamp(d, 9),
        "end_date": stamp(d, 11),
        "description": "Posted as a form",
        "all_day": "false",
        "featured": "1",
        "show_map": "true",
        "categories[]": [str(c1["id"]), str(c2["id"])],
        "tags[]": [str(t1["id"])],
        "cost[]": ["0$", "20$", "30$"],
        "venue[venue]": "Form Hall",
        "venue[city]": "Springfield",
        "venue[country]": "United States",
        "venue[state]": "IL",
        "organizer[0][organizer]": "Organizer A",
        "organizer[1][organizer]": "Organizer B",
    }
    with one_commit(repo):
        r = admin.post("/events", data=form)
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    assert event["title"] == "Form Event"
    assert event["description"] == "<p>Posted as a form</p>"
    assert event["start_date"] == stamp(d, 9)
    assert event["featured"] is True and event["show_map"] is True and event["all_day"] is False
    assert [c["id"] for c in event["categories"]] == [c1["id"], c2["id"]]
    assert [t["id"] for t in event["tags"]] == [t1["id"]]
    assert event["cost"] == "Free – 30$"
    assert event["cost_details"]["values"] == ["0", "20", "30"]
    assert isinstance(event["venue"], dict)
    assert (event["venue"]["venue"], event["venue"]["city"], event["venue"]["stateprovince"]) == \
        ("Form Hall", "Springfield", "IL")
    assert [o["organizer"] for o in event["organizer"]] == ["Organizer A", "Organizer B"]
    assert all(isinstance(o["id"], int) for o in event["organizer"])
    # venue, both organizers and the event: one commit
    assert flat(changed_files(repo)) == sorted(["events/form-event.md", "venues/form-hall.yaml",
                                          "organizers/organizer-a.yaml", "organizers/organizer-b.yaml"])


def test_form_body_scalar_organizer_object(admin):
    r = admin.post("/events", data={**event_body(), "organizer[0][organizer]": "Organizer A"})
    assert r.status_code == 201
    organizers = r.get_json()["organizer"]
    assert len(organizers) == 1
    assert organizers[0]["organizer"] == "Organizer A" and isinstance(organizers[0]["id"], int)


@pytest.mark.parametrize("tz, start, end, utc_start, utc_end, tz_abbr", [
    ("America/New_York", "2030-12-05 19:00:00", "2030-12-05 22:00:00", "2030-12-06 00:00:00",
     "2030-12-06 03:00:00", "EST"),
    ("America/New_York", "2030-07-05 19:00:00", "2030-07-05 22:00:00", "2030-07-05 23:00:00",
     "2030-07-06 02:00:00", "EDT"),
    ("Europe/Rome", "2030-07-01 16:00:00", "2030-07-01 17:00:00", "2030-07-01 14:00:00",
     "2030-07-01 15:00:00", "CEST"),
    ("Asia/Kolkata", "2030-01-10 09:00:00", "2030-01-10 10:00:00", "2030-01-10 03:30:00",
     "2030-01-10 04:30:00", "IST"),
    ("Australia/Sydney", "2030-01-01 08:00:00", "2030-01-01 09:00:00", "2029-12-31 21:00:00",
     "2029-12-31 22:00:00", "AEDT"),
    ("UTC", "2030-01-10 09:00:00", "2030-01-10 10:00:00", "2030-01-10 09:00:00", "2030-01-10 10:00:00", "UTC"),
    ("UTC+2", "2030-01-10 10:00:00", "2030-01-10 11:00:00", "2030-01-10 08:00:00", "2030-01-10 09:00:00",
     "UTC+2"),
    ("UTC-5.5", "2030-01-10 10:00:00", "2030-01-10 11:00:00", "2030-01-10 15:30:00",
     "2030-01-10 16:30:00", "UTC-5.5"),
])
def test_utc_dates_and_timezone_abbr(admin, tz, start, end, utc_start, utc_end, tz_abbr):
    r = admin.post("/events", json=event_body(start_date=start, end_date=end, timezone=tz))
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    assert (event["start_date"], event["end_date"]) == (start, end)
    assert (event["utc_start_date"], event["utc_end_date"]) == (utc_start, utc_end)
    assert event["timezone"] == tz
    assert event["timezone_abbr"] == tz_abbr
    for key in ("start_date", "end_date", "utc_start_date", "utc_end_date"):
        assert event[f"{key}_details"] == details(event[key])
        assert list(event[f"{key}_details"]) == DETAIL_KEYS


@pytest.mark.parametrize("tz", [None, "America/New_York", "UTC", "Asia/Hong_Kong", "Europe/Rome",
                                "Pacific/Kiritimati"])
def test_natural_language_dates_are_read_in_the_event_timezone(site, tz):
    client = site("Australia/Darwin")
    zone = tz or "Australia/Darwin"
    body = {"title": "Relative", "start_date": "tomorrow 9am", "end_date": "tomorrow 11am"}
    if tz:
        body["timezone"] = tz
    r = client.post("/events", json=body)
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    tomorrow = today(zone) + timedelta(days=1)
    assert event["timezone"] == zone
    assert event["start_date"] == stamp(tomorrow, 9)
    assert event["end_date"] == stamp(tomorrow, 11)
    assert event["utc_start_date"] == to_utc(stamp(tomorrow, 9), zone)
    assert event["utc_end_date"] == to_utc(stamp(tomorrow, 11), zone)
    assert event["timezone_abbr"] == abbr(stamp(tomorrow, 9), zone)


@pytest.mark.parametrize("start, end, expect", [
    ("next wednesday 4pm", "next wednesday 5pm",
     lambda d: (stamp(next_weekday(d, 2), 16), stamp(next_weekday(d, 2), 17))),
    ("tomorrow 4pm", "+3 days 5pm",
     lambda d: (stamp(d + timedelta(days=1), 16), stamp(d + timedelta(days=3), 17))),
    ("2018-01-01 4pm", "2018-01-01 5pm", lambda d: ("2018-01-01 16:00:00", "2018-01-01 17:00:00")),
    ("today 11:30", "today 13:45:10", lambda d: (stamp(d, 11, 30), stamp(d, 13, 45, 10))),
])
def test_natural_language_phrases(site, start, end, expect):
    client = site("America/New_York")
    r = client.post("/events", json={"title": "Phrase", "start_date": start, "end_date": end})
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    want_start, want_end = expect(today("America/New_York"))
    assert (event["start_date"], event["end_date"]) == (want_start, want_end)
    assert event["timezone"] == "America/New_York"
    assert event["utc_start_date"] == to_utc(want_start, "America/New_York")


@pytest.mark.parametrize("start, end, days", [
    ("tomorrow 9am", "tomorrow 11am", 0),
    ("tomorrow 9am", "+5 days 11am", 4),
])
def test_all_day_expands_to_whole_days(admin, start, end, days):
    r = admin.post("/events", json={"title": "All day", "start_date": start, "end_date": end, "all_day": True,
                                    "timezone": "America/New_York"})
    assert r.status_code == 201
    event = r.get_json()
    first = today("America/New_York") + timedelta(days=1)
    assert event["all_day"] is True
    assert event["start_date"] == stamp(first, 0, 0, 0)
    assert event["end_date"] == stamp(first + timedelta(days=days), 23, 59, 59)
    assert event["utc_start_date"] == to_utc(event["start_date"], "America/New_York")
    assert event["utc_end_date"] == to_utc(event["end_date"], "America/New_York")


def test_all_day_form_value_and_sample_times(admin):
    # samples/create_event_2.json: an all-day event on 2026-12-12 in New York
    r = admin.post("/events", data={"title": "Peer All Day Fair", "start_date": "2030-12-12 10:00:00",
                                    "end_date": "2030-12-12 12:00:00", "all_day": "true",
                                    "timezone": "America/New_York"})
    event = r.get_json()
    assert r.status_code == 201
    assert (event["start_date"], event["end_date"]) == ("2030-12-12 00:00:00", "2030-12-12 23:59:59")
    assert (event["utc_start_date"], event["utc_end_date"]) == ("2030-12-12 05:00:00", "2030-12-13 04:59:59")


def test_end_before_start_is_clamped_to_start(admin, repo):
    r = admin.post("/events", json=event_body(start_date="2030-03-03 15:00:00", end_date="2030-03-03 09:00:00"))
    assert r.status_code == 201
    event = r.get_json()
    assert event["end_date"] == event["start_date"] == "2030-03-03 15:00:00"
    assert event["utc_end_date"] == event["utc_start_date"]
    meta, _, _ = read_event_file(repo, event["slug"])
    assert str(meta["end_date"]) == "2030-03-03 15:00:00"


@pytest.mark.parametrize("cost, text, symbol, position, values", [
    ("20$", "20$", "$", "postfix", ["20"]),
    (["0$", "20$", "30$"], "Free – 30$", "$", "postfix", ["0", "20", "30"]),
    (["30$", "0$", "20$"], "Free – 30$", "$", "postfix", ["0", "20", "30"]),
    ("€15", "€15", "€", "prefix", ["15"]),
    ("15", "15", "", "", ["15"]),
    ("25,55", None, "", "", ["25.55"]),
    ("€6.50 - €8.50", None, "€", "prefix", ["6.5", "8.5"]),
])
def test_cost_formatting(admin, cost, text, symbol, position, values):
    r = admin.post("/events", json=event_body(cost=cost))
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    assert list(event["cost_details"]) == COST_KEYS
    assert event["cost_details"]["currency_symbol"] == symbol
    assert event["cost_details"]["currency_position"] == position
    assert event["cost_details"]["values"] == values
    assert all(isinstance(v, str) for v in event["cost_details"]["values"])
    if text is not None:
        assert event["cost"] == text


def test_a_remembered_cost_reads_as_a_fresh_one_and_is_never_shared():
    from calendar_service.domain import text
    for cost in ("$25", "25", 25, 25.0, True, None, "", "€6.50 - €8.50", "x" * 200):
        assert text.cost_details(cost) == text._cost_details(cost, "", "", "")
        assert text.cost_details(cost) == text.cost_details(cost)   # the second from the cache
    assert text.cost_details(True)[0] == "True" and text.cost_details(1)[0] == "1"   # typed
    first = text.cost_details("$25")
    first[1]["values"].append("99")
    first[1]["currency_symbol"] = "£"
    assert text.cost_details("$25") == ("$25", {"currency_symbol": "$", "currency_code": "",
                                                "currency_position": "prefix", "values": ["25"]})


def test_cost_list_from_form_body(admin):
    r = admin.post("/events", data={**event_body(), "cost[]": ["0$", "20$", "30$"]})
    assert r.status_code == 201
    assert r.get_json()["cost"] == "Free – 30$"
    assert r.get_json()["cost_details"] == {"currency_symbol": "$", "currency_code": "",
                                            "currency_position": "postfix", "values": ["0", "20", "30"]}


def test_website_defaults_to_the_permalink(admin, repo):
    event = admin.post("/events", json=event_body(title="No Site")).get_json()
    assert event["website"] == event["url"] == "http://localhost/event/no-site/"
    meta, _, _ = read_event_file(repo, "no-site")
    assert "website" not in meta  # nothing stored: the permalink follows slug changes
    given = admin.post("/events", json=event_body(website="http://example.com/x")).get_json()
    assert given["website"] == "http://example.com/x"
    empty = admin.post("/events", json=event_body(website="")).get_json()
    assert empty["website"] == ""


def test_presentation_flags_true_and_false(admin, repo):
    flags = ("show_map", "show_map_link", "hide_from_listings", "sticky", "featured")
    on = admin.post("/events", json=event_body(title="Flags On", **{f: True for f in flags})).get_json()
    off = admin.post("/events", data={**event_body(title="Flags Off"), **{f: "false" for f in flags}}).get_json()
    assert {f: on[f] for f in flags} == {f: True for f in flags}
    assert {f: off[f] for f in flags} == {f: False for f in flags}
    meta, _, _ = read_event_file(repo, "flags-on")
    assert {f: meta.get(f) for f in flags} == {f: True for f in flags}


@pytest.mark.parametrize("value", [True, "true", "1"])
def test_hide_from_listings_truthy_values(admin, value):
    r = admin.post("/events", json=event_body(hide_from_listings=value))
    assert r.status_code == 201
    assert r.get_json()["hide_from_listings"] is True


def test_author_flags_as_author_role(as_role):
    r = as_role("author").post("/events", json=event_body(featured=True, sticky=True))
    assert r.status_code == 201
    assert (r.get_json()["featured"], r.get_json()["sticky"], r.get_json()["author"]) == (True, True, "3")


def test_author_param_sets_the_author(admin, repo):
    r = admin.post("/events", json=event_body(title="Someone Elses", author=2))
    assert r.status_code == 201
    assert r.get_json()["author"] == "2"
    assert read_event_file(repo, "someone-elses")[0]["author"] == 2
    assert repo.last_author() == USERS["administrator"][1]  # the commit is still the signed-in user's


def test_date_is_read_in_site_timezone_and_date_utc_in_utc(site):
    client = site("America/New_York")
    tomorrow = today("America/New_York") + timedelta(days=1)
    local = client.post("/events", json=event_body(title="Dated", date="tomorrow 9am")).get_json()
    assert local["date"] == stamp(tomorrow, 9)
    assert local["date_utc"] == to_utc(stamp(tomorrow, 9), "America/New_York")
    utc_tomorrow = today("UTC") + timedelta(days=1)
    utc = client.post("/events", json=event_body(title="Dated UTC", date_utc="tomorrow 9am")).get_json()
    assert utc["date_utc"] == stamp(utc_tomorrow, 9)
    assert utc["date"] == from_utc(stamp(utc_tomorrow, 9), "America/New_York")  # shown in site time


def test_generated_fields_in_the_request_are_ignored(admin):
    sent = {
        "url": "http://evil.example/x", "rest_url": "http://evil.example/y", "id": 4242,
        "utc_start_date": "1999-01-01 00:00:00", "utc_end_date": "1999-01-01 01:00:00",
        "start_date_details": {"year": "1999"}, "end_date_details": {"year": "1999"},
        "utc_start_date_details": {"year": "1999"}, "utc_end_date_details": {"year": "1999"},
        "timezone_abbr": "XYZ", "cost_details": {"values": ["999"]}, "global_id": "evil?id=1",
    }
    r = admin.post("/events", json=event_body(title="Ignore Me", timezone="UTC", **sent))
    assert r.status_code == 201
    event = r.get_json()
    for key, value in sent.items():
        assert event[key] != value, key
    assert event["url"] == "http://localhost/event/ignore-me/"
    assert event["timezone_abbr"] == "UTC"


def test_same_title_gets_a_unique_slug_and_file(admin, repo):
    first = admin.post("/events", json=event_body(title="Twin")).get_json()
    second = admin.post("/events", json=event_body(title="Twin")).get_json()
    assert (first["slug"], second["slug"]) == ("twin", "twin-2")
    assert first["id"] != second["id"]
    assert flat(repo.files()) == ["events/twin-2.md", "events/twin.md"]
    assert read_event_file(repo, "twin")[0]["id"] == first["id"]


def test_explicit_slug_and_unicode_title(admin, repo):
    a = admin.post("/events", json=event_body(title="Café Olé!", slug="my-own-slug")).get_json()
    b = admin.post("/events", json=event_body(title="Café Olé!")).get_json()
    assert a["slug"] == "my-own-slug" and a["url"] == "http://localhost/event/my-own-slug/"
    assert a["title"] == "Café Olé!"
    assert b["slug"] == "cafe-ole"
    assert flat(repo.files()) == ["events/cafe-ole.md", "events/my-own-slug.md"]


def test_ids_are_shared_with_venues_and_organizers(factory):
    venue = factory.venue()
    event = factory.event()
    organizer = factory.organizer()
    assert len({venue["id"], event["id"], organizer["id"]}) == 3
    assert event["id"] > venue["id"] and organizer["id"] > event["id"]


# ----------------------------------------------------------------------------- status scale-back


@pytest.mark.parametrize("role, requested, expected", [
    ("administrator", None, "publish"),
    ("administrator", "publish", "publish"),
    ("administrator", "draft", "draft"),
    ("administrator", "pending", "pending"),
    ("editor", "publish", "publish"),
    ("editor", "future", "future"),
    ("author", "publish", "publish"),
    ("author", None, "publish"),
    ("contributor", "publish", "pending"),
    ("contributor", None, "draft"),
    ("contributor", "future", "pending"),
    ("contributor", "draft", "draft"),
    ("contributor", "pending", "pending"),
])
def test_status_scale_back_and_commit_author(as_role, repo, role, requested, expected):
    body = event_body(title=f"By {role}")
    if requested:
        body["status"] = requested
    with one_commit(repo, role):
        r = as_role(role).post("/events", json=body)
    assert r.status_code == 201, r.get_json()
    event = r.get_json()
    assert event["status"] == expected
    assert event["author"] == str(USERS[role][0])
    meta, _, _ = read_event_file(repo, event["slug"])
    assert (meta["status"], meta["author"]) == (expected, USERS[role][0])
    assert first_line(repo) == f'Create event {event["id"]} "By {role}"'


# ----------------------------------------------------------------------------- categories and tags


@pytest.fixture(params=["categories", "tags"])
def taxonomy(request):
    return request.param


def _make_term(factory, kind, **fields):
    return factory.category(**fields) if kind == "categories" else factory.tag(**fields)


TAXONOMY = {"categories": "tribe_events_cat", "tags": "post_tag"}


def test_terms_by_id_keep_the_given_order(admin, factory, taxonomy):
    t1 = _make_term(factory, taxonomy, name="Alpha")
    t2 = _make_term(factory, taxonomy, name="Beta")
    r = admin.post("/events", json=event_body(**{taxonomy: [t1["id"], t2["id"]]}))
    assert r.status_code == 201
    terms = r.get_json()[taxonomy]
    assert [t["id"] for t in terms] == [t1["id"], t2["id"]]
    assert [t["name"] for t in terms] == ["Alpha", "Beta"]
    assert all(t["taxonomy"] == TAXONOMY[taxonomy] for t in terms)
    assert all(list(t) == EMBEDDED_TERM_KEYS for t in terms)


def test_terms_by_new_names_are_created_in_the_same_commit(admin, repo, taxonomy):
    with one_commit(repo):
        r = admin.post("/events", json=event_body(title="Named", **{taxonomy: "Cat One, Cat Two"}))
    assert r.status_code == 201
    terms = r.get_json()[taxonomy]
    assert [(t["name"], t["slug"]) for t in terms] == [("Cat One", "cat-one"), ("Cat Two", "cat-two")]
    assert all(isinstance(t["id"], int) for t in terms)
    assert flat(changed_files(repo)) == sorted(["events/named.md", f"{taxonomy}/cat-one.yaml", f"{taxonomy}/cat-two.yaml"])
    listed = admin.get(f"/{taxonomy}", query_string={"hide_empty": "false"}).get_json()[taxonomy]
    assert sorted(t["id"] for t in listed) == sorted(t["id"] for t in terms)


def test_terms_mixed_ids_and_names(admin, factory, repo, taxonomy):
    existing = _make_term(factory, taxonomy, name="Existing")
    r = admin.post("/events", json=event_body(**{taxonomy: [existing["id"], "brand new"]}))
    terms = r.get_json()[taxonomy]
    assert r.status_code == 201
    assert len(terms) == 2
    assert terms[0]["id"] == existing["id"]
    assert terms[1]["name"] == "brand new" and terms[1]["id"] != existing["id"]


def test_terms_by_existing_name_reuse_the_term(admin, factory, repo, taxonomy):
    existing = _make_term(factory, taxonomy, name="Music")
    files = repo.files()
    r = admin.post("/events", json=event_body(title="Reuse", **{taxonomy: "music"}))
    assert [t["id"] for t in r.get_json()[taxonomy]] == [existing["id"]]
    assert flat(repo.files()) == sorted(files + ["events/reuse.md"])


@pytest.mark.parametrize("empty", ["", []])
def test_terms_empty_value_means_none(admin, taxonomy, empty):
    r = admin.post("/events", json=event_body(**{taxonomy: empty}))
    assert r.status_code == 201
    assert r.get_json()[taxonomy] == []


def test_terms_unknown_numeric_id_is_skipped(admin, factory, repo, taxonomy):
    existing = _make_term(factory, taxonomy)
    files = repo.files()
    r = admin.post("/events", json=event_body(title="Skip", **{taxonomy: [999999, existing["id"]]}))
    assert r.status_code == 201
    assert [t["id"] for t in r.get_json()[taxonomy]] == [existing["id"]]
    assert flat(repo.files()) == sorted(files + ["events/skip.md"])


def test_embedded_term_values(admin, factory):
    cat = factory.category(name="Music", description="Live music events")
    admin.post("/events", json=event_body(categories=[cat["id"]]))
    event = admin.post("/events", json=event_body(categories=[cat["id"]])).get_json()
    term = event["categories"][0]
    assert term == {
        "name": "Music", "slug": "music", "term_group": 0, "term_taxonomy_id": cat["id"],
        "taxonomy": "tribe_events_cat", "description": "Live music events", "parent": 0, "count": 2,
        "filter": "raw", "id": cat["id"],
        "urls": {"self": f"{BASE}/categories/{cat['id']}", "collection": f"{BASE}/categories"},
    }


# ----------------------------------------------------------------------------- venue and organizer


def test_venue_by_id(admin, factory):
    venue = factory.venue(venue="Peer Hall", city="Springfield")
    r = admin.post("/events", json=event_body(venue=venue["id"]))
    assert r.status_code == 201
    event = r.get_json()
    assert isinstance(event["venue"], dict)
    assert (event["venue"]["id"], event["venue"]["venue"], event["venue"]["city"]) == \
        (venue["id"], "Peer Hall", "Springfield")


@pytest.mark.parametrize("data, stateprovince", [
    ({"venue": "US Hall", "address": "1 Main St", "city": "Springfield", "country": "United States",
      "state": "IL", "province": "Ignored", "zip": "62701", "phone": "555-0100",
      "website": "https://venue.example.com"}, "IL"),
    ({"venue": "Salle Paris", "address": "100, Avenue du Temple", "city": "Paris", "country": "France",
      "state": "", "province": "Ile de France", "zip": "75003", "phone": "+33 1 00 00 00 00",
      "website": "https://fr.example.com"}, "Ile de France"),
    ({"venue": "Toronto Hall", "city": "Toronto", "country": "Canada", "state": "Nowhere", "province": "Ontario"},
     "Ontario"),
])
def test_venue_inline_object_is_created_with_derived_stateprovince(admin, repo, data, stateprovince):
    with one_commit(repo):
        r = admin.post("/events", json=event_body(title="With Venue", venue=data))
    assert r.status_code == 201, r.get_json()
    venue = r.get_json()["venue"]
    assert isinstance(venue, dict) and isinstance(venue["id"], int)
    for key, value in data.items():
        if value:
            assert venue[key] == value, key
        else:
            assert key not in venue, key  # empty values are dropped from venue objects
    assert venue["stateprovince"] == stateprovince
    slug = venue["slug"]
    assert flat(changed_files(repo)) == sorted(["events/with-venue.md", f"venues/{slug}.yaml"])
    assert admin.get(f"/venues/{venue['id']}").get_json()["venue"] == data["venue"]


def test_venue_inline_object_with_the_name_of_an_existing_venue_reuses_it(admin, factory, repo):
    existing = factory.venue(venue="Peer Hall")
    files = repo.files()
    r = admin.post("/events", json=event_body(title="Dup", venue={"venue": "peer hall"}))
    assert r.status_code == 201
    assert r.get_json()["venue"]["id"] == existing["id"]
    assert flat(repo.files()) == sorted(files + ["events/dup.md"])


def test_venue_form_object(admin):
    r = admin.post("/events", data={**event_body(), "venue[venue]": "Form Venue", "venue[country]": "France",
                                    "venue[province]": "Bretagne"})
    assert r.status_code == 201
    venue = r.get_json()["venue"]
    assert (venue["venue"], venue["province"], venue["stateprovince"]) == ("Form Venue", "Bretagne", "Bretagne")


@pytest.mark.parametrize("empty", ["", 0, [], "0"])
def test_venue_empty_value_means_none(admin, empty):
    r = admin.post("/events", json=event_body(venue=empty))
    assert r.status_code == 201
    assert r.get_json()["venue"] == []


def test_two_venues_are_a_list(admin, factory):
    v1, v2 = factory.venue(), factory.venue()
    r = admin.post("/events", json=event_body(venue=[v1["id"], v2["id"]]))
    venues = r.get_json()["venue"]
    assert isinstance(venues, list) and [v["id"] for v in venues] == [v1["id"], v2["id"]]


def test_organizer_ids_keep_the_given_order(admin, factory):
    o1, o2 = factory.organizer(), factory.organizer()
    single = admin.post("/events", json=event_body(organizer=o1["id"])).get_json()
    assert [o["id"] for o in single["organizer"]] == [o1["id"]]
    both = admin.post("/events", json=event_body(organizer=[o2["id"], o1["id"]])).get_json()
    assert [o["id"] for o in both["organizer"]] == [o2["id"], o1["id"]]
    csv = admin.post("/events", json=event_body(organizer=f"{o1['id']},{o2['id']}")).get_json()
    assert [o["id"] for o in csv["organizer"]] == [o1["id"], o2["id"]]
    form = admin.post("/events", data={**event_body(), "organizer[]": [str(o2["id"]), str(o1["id"])]}).get_json()
    assert [o["id"] for o in form["organizer"]] == [o2["id"], o1["id"]]


def test_organizer_objects_and_mixed_list(admin, factory, repo):
    o1, o2 = factory.organizer(), factory.organizer()
    with one_commit(repo):
        r = admin.post("/events", json=event_body(organizer=[
            {"organizer": "Organizer A", "email": "a@example.org"}, {"id": o1["id"]}, {"id": o2["id"]},
            {"organizer": "Organizer C", "phone": "555-0300"}]))
    assert r.status_code == 201
    organizers = r.get_json()["organizer"]
    assert len(organizers) == 4
    assert [o["organizer"] for o in organizers][0] == "Organizer A"
    assert organizers[0]["email"] == "a@example.org"
    assert [o["id"] for o in organizers][1:3] == [o1["id"], o2["id"]]
    assert organizers[3]["phone"] == "555-0300"
    assert "organizers/organizer-a.yaml" in changed_files(repo)
    assert "organizers/organizer-c.yaml" in changed_files(repo)


def test_identical_new_organizers_in_one_payload_are_created_once(admin, repo):
    r = admin.post("/events", json=event_body(organizer=[{"organizer": "Same Org"}, {"organizer": "Same Org"}]))
    assert r.status_code == 201
    organizers = r.get_json()["organizer"]
    assert [o["organizer"] for o in organizers] == ["Same Org"]
    assert [f for f in repo.files() if f.startswith("organizers/")] == ["organizers/same-org.yaml"]


@pytest.mark.parametrize("field, value", [
    ("venue", {"venue": "Bad Site Hall", "website": "foo"}),
    ("venue", {"venue": "Bad Status Hall", "status": "kinda_thinking_about_it"}),
    ("venue", {"venue": "Bad Author Hall", "author": 999}),
    ("venue", {"venue": "Bad Date Hall", "date": "foo"}),
    ("organizer", [{"organizer": "Bad Site Org", "website": "not a url"}]),
    ("organizer", [{"organizer": "Bad Date Org", "date_utc": "someday maybe"}]),
])
def test_new_linked_record_fields_are_validated(admin, repo, field, value):
    with unchanged(repo):
        r = admin.post("/events", json=event_body(**{field: value}))
    assert r.status_code == 400
    assert r.get_json()["code"] == "rest_invalid_param"
    assert list(r.get_json()["data"]["params"]) == [field]


# ============================================================================= response shape


@pytest.fixture
def sample_event(admin, factory):
    """An event built like the one of samples/event_single.json."""
    venue = factory.venue(venue="Peer Hall", address="1 Main St", city="Springfield", country="United States",
                          state="IL", zip="62701", phone="555-0100", website="https://venue.example.com")
    organizer = factory.organizer(organizer="Peer Org", phone="555-0200", website="https://org.example.com",
                                  email="org@example.com")
    category = factory.category(name="Music", description="Live music events")
    tag = factory.tag(name="outdoor", description="Outside events")
    r = admin.post("/events", json={
        "title": "Peer Concert", "description": "An evening concert.", "excerpt": "Concert",
        "start_date": "2030-12-05 19:00:00", "end_date": "2030-12-05 22:00:00", "timezone": "America/New_York",
        "cost": "$25", "website": "https://event.example.com", "featured": True,
        "categories": [category["id"]], "tags": [tag["id"]], "venue": venue["id"], "organizer": [organizer["id"]],
    })
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def _check_sample_values(event: dict) -> None:
    assert event["title"] == "Peer Concert"
    assert event["description"] == "<p>An evening concert.</p>"
    assert event["excerpt"] == "<p>Concert</p>"
    assert event["slug"] == "peer-concert"
    assert (event["start_date"], event["end_date"]) == ("2030-12-05 19:00:00", "2030-12-05 22:00:00")
    assert (event["utc_start_date"], event["utc_end_date"]) == ("2030-12-06 00:00:00", "2030-12-06 03:00:00")
    assert event["start_date_details"] == {"year": "2030", "month": "12", "day": "05", "hour": "19",
                                           "minutes": "00", "seconds": "00"}
    assert event["utc_end_date_details"] == {"year": "2030", "month": "12", "day": "06", "hour": "03",
                                             "minutes": "00", "seconds": "00"}
    assert (event["timezone"], event["timezone_abbr"]) == ("America/New_York", "EST")
    assert event["cost"] == "$25" and event["cost_details"]["values"] == ["25"]
    assert event["website"] == "https://event.example.com"
    assert (event["show_map"], event["show_map_link"], event["featured"]) == (False, False, True)
    assert [t["name"] for t in event["categories"]] == ["Music"]
    assert [t["name"] for t in event["tags"]] == ["outdoor"]
    assert event["tags"][0]["taxonomy"] == "post_tag"
    venue = event["venue"]
    assert {k: venue[k] for k in ("venue", "slug", "address", "city", "country", "state", "zip", "phone",
                                  "website", "stateprovince", "show_map", "show_map_link")} == {
        "venue": "Peer Hall", "slug": "peer-hall", "address": "1 Main St", "city": "Springfield",
        "country": "United States", "state": "IL", "zip": "62701", "phone": "555-0100",
        "website": "https://venue.example.com", "stateprovince": "IL", "show_map": True, "show_map_link": True}
    assert venue["url"] == "http://localhost/venue/peer-hall/"
    assert venue["author"] == "1"
    organizer = event["organizer"][0]
    assert {k: organizer[k] for k in ("organizer", "slug", "phone", "website", "email", "url")} == {
        "organizer": "Peer Org", "slug": "peer-org", "phone": "555-0200", "website": "https://org.example.com",
        "email": "org@example.com", "url": "http://localhost/organizer/peer-org/"}


def test_create_response_shape_matches_the_sample(sample_event):
    event = sample_event
    assert list(event) == EVENT_KEYS  # no json_ld on create
    _check_sample_values(event)
    assert list(event["venue"]) == VENUE_KEYS
    assert [list(o) for o in event["organizer"]] == [ORGANIZER_KEYS]
    for term in event["categories"] + event["tags"]:
        assert list(term) == EMBEDDED_TERM_KEYS
        assert list(term["urls"]) == ["self", "collection"]


def test_list_item_shape_matches_the_sample(anon, sample_event):
    listing = anon.get("/events", query_string={"start_date": "2030-12-01", "end_date": "2030-12-31"}).get_json()
    assert ids(listing) == [sample_event["id"]]
    item = listing["events"][0]
    assert list(item) == EVENT_KEYS  # no json_ld in lists
    assert list(item["venue"]) == VENUE_KEYS
    _check_sample_values(item)
    assert item == sample_event


def test_single_get_shape_matches_the_sample(anon, sample_event):
    event = anon.get(f"/events/{sample_event['id']}").get_json()
    assert list(event) == EVENT_KEYS + ["json_ld"]
    _check_sample_values(event)
    ld = event["json_ld"]
    assert (ld["@context"], ld["@type"], ld["name"]) == ("http://schema.org", "Event", "Peer Concert")
    assert ld["url"] == event["url"]
    assert (ld["startDate"], ld["endDate"]) == ("2030-12-05T19:00:00-05:00", "2030-12-05T22:00:00-05:00")
    assert ld["location"]["@type"] == "Place" and ld["location"]["name"] == "Peer Hall"
    assert ld["organizer"]["@type"] == "Person" and ld["organizer"]["name"] == "Peer Org"
    assert ld["offers"]["price"] == "25"


def test_single_get_embeds_json_ld_in_venue_and_organizer(anon, sample_event):
    event = anon.get(f"/events/{sample_event['id']}").get_json()
    venue_keys = VENUE_KEYS[:VENUE_KEYS.index("show_map")] + ["json_ld"] + VENUE_KEYS[VENUE_KEYS.index("show_map"):]
    organizer_keys = ORGANIZER_KEYS[:ORGANIZER_KEYS.index("global_id")] + ["json_ld"] + ORGANIZER_KEYS[
        ORGANIZER_KEYS.index("global_id"):]
    assert list(event["venue"]) == venue_keys
    assert list(event["organizer"][0]) == organizer_keys
    assert event["venue"]["json_ld"]["@type"] == "Place"
    assert event["organizer"][0]["json_ld"]["@type"] == "Person"


def test_value_types(factory, admin):
    event = factory.event(cost=["5", "10"], categories="Typed")
    fetched = admin.get(f"/events/{event['id']}").get_json()
    for e in (event, fetched):
        assert isinstance(e["id"], int)
        assert isinstance(e["author"], str) and e["author"] == "1"
        for key in ("date", "date_utc", "modified", "modified_utc", "start_date", "end_date", "utc_start_date",
                    "utc_end_date"):
            assert isinstance(e[key], str) and len(e[key]) == 19 and e[key][10] == " "
        for key in ("start_date_details", "end_date_details", "utc_start_date_details", "utc_end_date_details"):
            assert list(e[key]) == DETAIL_KEYS
            assert all(isinstance(v, str) for v in e[key].values())
            assert [len(v) for v in e[key].values()] == [4, 2, 2, 2, 2, 2]
        assert e["cost_details"]["values"] == ["5", "10"]
        for key in ("all_day", "show_map", "show_map_link", "hide_from_listings", "sticky", "featured"):
            assert isinstance(e[key], bool)
        assert e["image"] is False
        assert e["venue"] == [] and e["organizer"] == []
        assert isinstance(e["categories"][0]["id"], int) and isinstance(e["categories"][0]["count"], int)


def test_image_url_is_accepted(admin):
    r = admin.post("/events", json=event_body(image="https://cdn.example.com/pic.png"))
    assert r.status_code == 201
    image = r.get_json()["image"]
    assert image["url"] == "https://cdn.example.com/pic.png"
    assert image["extension"] == "png"


# ============================================================================= single GET


@pytest.mark.parametrize("event_id", [0, 999999])
def test_get_unknown_id_is_404(anon, factory, event_id):
    factory.event()
    r = anon.get(f"/events/{event_id}")
    assert r.status_code == 404
    body = r.get_json()
    assert body["code"] == "rest-event-not-found"
    assert "does not exist" in body["message"]
    assert body["message"] == f"Event with ID {event_id} does not exist."
    assert body["data"] == {"status": 404}
    if event_id == 999999:
        assert body == NOT_FOUND_999999


def test_get_id_of_a_venue_or_organizer_is_400_invalid_event_id(anon, factory):
    venue, organizer = factory.venue(), factory.organizer()
    for record in (venue, organizer):
        r = anon.get(f"/events/{record['id']}")
        assert r.status_code == 400
        assert r.get_json()["code"] == "rest-invalid-event-id"
        assert r.get_json()["data"]["status"] == 400


def test_get_by_slug_equals_get_by_id(anon, factory):
    event = factory.event(title="Slug Me")
    by_id = anon.get(f"/events/{event['id']}")
    by_slug = anon.get("/events/by-slug/slug-me")
    assert by_slug.status_code == by_id.status_code == 200
    assert by_slug.get_json() == by_id.get_json()
    assert by_slug.get_json()["id"] == event["id"]


@pytest.mark.parametrize("slug", ["no-such-event", "UPPER.case", "peer-hall"])
def test_get_unknown_slug_is_400(anon, factory, slug):
    factory.venue(venue="Peer Hall")  # a venue's slug is not an event's
    r = anon.get(f"/events/by-slug/{slug}")
    assert r.status_code == 400
    body = r.get_json()
    assert body["code"] == "rest_invalid_param"
    assert list(body["data"]["params"]) == ["slug"]


@pytest.mark.parametrize("path", ["/events/foo", "/events/12abc", "/events/by-slug/", "/events/1/extra"])
def test_non_matching_paths_are_rest_no_route(shared, path):
    r = shared.anon.get(path)
    assert r.status_code == 404
    assert r.get_json()["code"] == "rest_no_route"
    assert r.get_json()["data"]["status"] == 404


def test_draft_event_is_not_accessible_to_visitors(as_role, factory):
    event = factory.event(title="Secret Draft", status="draft")
    for role in (None, "subscriber"):
        client = as_role(role)
        for path in (f"/events/{event['id']}", "/events/by-slug/secret-draft"):
            r = client.get(path)
            assert r.status_code == 403, (role, path)
            assert r.get_json() == {"code": "event-not-accessible",
                                    "message": "The requested event is not accessible", "data": {"status": 403}}
    for role in ("administrator", "editor"):
        r = as_role(role).get(f"/events/{event['id']}")
        assert r.status_code == 200 and r.get_json()["status"] == "draft"


@pytest.mark.parametrize("status", ["pending", "private"])
def test_other_unpublished_statuses_are_not_accessible_anonymously(anon, admin, factory, status):
    event = factory.event(status=status)
    assert anon.get(f"/events/{event['id']}").get_json()["code"] == "event-not-accessible"
    assert admin.get(f"/events/{event['id']}").status_code == 200


def test_contributor_reads_own_draft_but_not_others(as_role, factory):
    contributor = as_role("contributor")
    own = contributor.post("/events", json=event_body(title="Mine")).get_json()
    assert own["status"] == "draft"
    others = factory.event(status="draft")
    assert contributor.get(f"/events/{own['id']}").status_code == 200
    assert contributor.get(f"/events/{others['id']}").status_code == 403


def test_trashed_event_is_no_longer_available(as_role, admin, factory):
    event = factory.event(title="Gone")
    assert admin.delete(f"/events/{event['id']}").status_code == 200
    for role in (None, "administrator"):
        for path in (f"/events/{event['id']}", "/events/by-slug/gone"):
            r = as_role(role).get(path)
            assert r.status_code == 403, (role, path)
            assert r.get_json() == {"code": "event-no-longer-available",
                                    "message": "This event is no longer available", "data": {"status": 403}}


def test_hidden_event_is_readable_by_id(anon, factory):
    event = factory.event(hide_from_listings=True)
    r = anon.get(f"/events/{event['id']}")
    assert r.status_code == 200 and r.get_json()["hide_from_listings"] is True


def test_hand_written_event_file_is_served(anon, repo, factory):
    factory.venue(venue="Hand Venue")
    repo.commit_file("events/by-hand.md", (
        "---\nid: 500\ntitle: By Hand\nstatus: publish\nstart_date: '2030-05-01 10:00:00'\n"
        "end_date: '2030-05-01 12:00:00'\ntimezone: Europe/Rome\nvenue: [hand-venue]\n---\nWritten *by hand*.\n"))
    r = anon.get("/events/by-slug/by-hand")
    assert r.status_code == 200
    event = r.get_json()
    assert (event["id"], event["title"], event["slug"]) == (500, "By Hand", "by-hand")
    assert event["description"] == "<p>Written *by hand*.</p>"
    assert event["utc_start_date"] == "2030-05-01 08:00:00"
    assert event["timezone_abbr"] == "CEST"
    assert event["venue"]["venue"] == "Hand Venue"
    assert anon.get("/events/500").get_json()["id"] == 500


def test_password_protected_event_single_get(as_role, admin, factory):
    event = factory.event(title="Locked", description="Secret body")
    r = admin.post(f"/events/{event['id']}", json={"password": "s3cret"})
    assert r.status_code == 200
    anon = as_role(None)
    for path in (f"/events/{event['id']}", "/events/by-slug/locked"):
        denied = anon.get(path)
        assert denied.status_code == 403
        assert denied.get_json() == {"code": "event-password-protected",
                                     "message": "The requested event is not accessible without a password",
                                     "data": {"status": 403}}
        assert anon.get(path, query_string={"password": "wrong"}).status_code == 403
        opened = anon.get(path, query_string={"password": "s3cret"})
        assert opened.status_code == 200 and opened.get_json()["description"] == "<p>Secret body</p>"
    assert admin.get(f"/events/{event['id']}").status_code == 200  # editors of the event need no password
    assert "password" not in admin.get(f"/events/{event['id']}").get_json()


def test_password_protected_event_is_blanked_in_lists(admin, anon, factory):
    venue = factory.venue()
    event = factory.event(title="Locked", description="Secret body", excerpt="Secret excerpt", cost="5$",
                          categories="Secret Cat", venue=venue["id"], website="https://secret.example.com")
    admin.post(f"/events/{event['id']}", json={"password": "s3cret"})
    item = anon.get("/events").get_json()["events"][0]
    assert (item["id"], item["title"], item["start_date"]) == (event["id"], "Locked", event["start_date"])
    assert (item["description"], item["excerpt"], item["cost"], item["website"]) == ("", "", "", "")
    assert item["cost_details"] == {"currency_symbol": "", "currency_position": "", "currency_code": "",
                                    "values": []}
    assert (item["categories"], item["tags"], item["venue"], item["organizer"]) == ([], [], [], [])
    assert (item["image"], item["all_day"], item["featured"], item["show_map"]) == (False, None, None, None)
    full = anon.get("/events", query_string={"password": "s3cret"}).get_json()["events"][0]
    assert full["description"] == "<p>Secret body</p>" and full["venue"]["id"] == venue["id"]


# ============================================================================= update


@pytest.fixture
def rich_event(factory):
    category = factory.category(name="Rich Cat")
    organizer = factory.organizer(organizer="Rich Org")
    venue = factory.venue(venue="Rich Hall")
    return factory.event(title="Rich Event", description="Original body", excerpt="Original excerpt",
                         start_date="2030-06-01 10:00:00", end_date="2030-06-01 12:00:00",
                         timezone="Europe/Rome", cost="20$", website="https://rich.example.com", featured=True,
                         sticky=True, all_day=False, categories=[category["id"]], tags="rich-tag",
                         venue=venue["id"], organizer=[organizer["id"]])


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_update_changes_only_the_given_fields(admin, repo, rich_event, method):
    before_meta, before_body, _ = read_event_file(repo, "rich-event")
    with one_commit(repo):
        r = getattr(admin, method)(f"/events/{rich_event['id']}", json={"title": "Renamed Event"})
    assert r.status_code == 200, r.get_json()
    updated = r.get_json()
    assert list(updated) == EVENT_KEYS
    assert updated["title"] == "Renamed Event"
    for key in EVENT_KEYS:
        if key not in ("title", "modified", "modified_utc"):
            assert updated[key] == rich_event[key], key
    after_meta, after_body, _ = read_event_file(repo, "rich-event")
    assert after_body == before_body
    changed = {k for k in set(before_meta) | set(after_meta) if before_meta.get(k) != after_meta.get(k)}
    assert changed <= {"title", "modified_utc"} and "title" in changed
    assert first_line(repo) == f'Update event {rich_event["id"]} "Renamed Event"'
    assert flat(changed_files(repo)) == ["events/rich-event.md"]


def test_update_diff_touches_only_changed_lines(admin, repo, rich_event):
    admin.post(f"/events/{rich_event['id']}", json={"cost": "30$"})
    diff = repo("diff", "-U0", "HEAD~1", "HEAD", "--", repo.path_at("rich-event"))
    touched = {line[1:].split(":", 1)[0] for line in diff.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))}
    assert touched <= {"cost", "modified_utc"} and "cost" in touched


def test_update_many_fields(admin, repo, rich_event, factory):
    other_org = factory.organizer(organizer="Other Org")
    r = admin.patch(f"/events/{rich_event['id']}", json={
        "description": "New body", "excerpt": "New excerpt", "start_date": "2030-06-02 18:00:00",
        "end_date": "2030-06-02 20:00:00", "cost": ["0$", "20$", "30$"], "website": "http://new.example.com",
        "featured": False, "categories": "", "organizer": [other_org["id"]], "venue": [],
    })
    assert r.status_code == 200, r.get_json()
    e = r.get_json()
    assert (e["description"], e["excerpt"]) == ("<p>New body</p>", "<p>New excerpt</p>")
    assert (e["start_date"], e["utc_start_date"]) == ("2030-06-02 18:00:00", "2030-06-02 16:00:00")
    assert e["cost"] == "Free – 30$"
    assert e["website"] == "http://new.example.com"
    assert e["featured"] is False and e["sticky"] is True  # untouched flag kept
    assert e["categories"] == [] and [t["name"] for t in e["tags"]] == ["rich-tag"]
    assert [o["id"] for o in e["organizer"]] == [other_org["id"]]
    assert e["venue"] == []
    meta, body, _ = read_event_file(repo, "rich-event")
    assert body.strip() == "New body"


def test_update_organizer_empty_list_removes_organizers(admin, rich_event):
    r = admin.post(f"/events/{rich_event['id']}", json={"organizer": []})
    assert r.status_code == 200
    assert r.get_json()["organizer"] == []
    assert r.get_json()["venue"]["venue"] == "Rich Hall"


def test_update_form_body(admin, rich_event):
    r = admin.post(f"/events/{rich_event['id']}", data={"title": "Form Update", "tags[]": ["a-tag", "b-tag"],
                                                        "all_day": "true"})
    assert r.status_code == 200
    e = r.get_json()
    assert e["title"] == "Form Update"
    assert [t["name"] for t in e["tags"]] == ["a-tag", "b-tag"]
    assert (e["all_day"], e["start_date"], e["end_date"]) == (True, "2030-06-01 00:00:00", "2030-06-01 23:59:59")


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_update_by_slug_changes_that_event(admin, repo, rich_event, method):
    with one_commit(repo):
        r = getattr(admin, method)("/events/by-slug/rich-event", json={"excerpt": f"Via {method}"})
    assert r.status_code == 200
    assert r.get_json()["excerpt"] == f"<p>Via {method}</p>"
    assert r.get_json()["id"] == rich_event["id"]
    assert first_line(repo) == f'Update event {rich_event["id"]} "Rich Event"'


def test_update_by_slug_keeps_slug_and_file(admin, repo, rich_event):
    r = admin.post("/events/by-slug/rich-event", json={"excerpt": "Via slug"})
    assert r.status_code == 200
    assert r.get_json()["slug"] == "rich-event"
    assert r.get_json()["url"] == "http://localhost/event/rich-event/"
    assert flat(changed_files(repo)) == ["events/rich-event.md"]
    assert "events/rich-event.md" in flat(repo.files())
    assert admin.patch("/events/by-slug/rich-event", json={"excerpt": "Again"}).status_code == 200


def test_update_timezone_reinterprets_natural_language_dates(site, repo):
    client = site("Australia/Darwin")
    body = {"title": "Moving", "start_date": "tomorrow 4pm", "end_date": "tomorrow 5pm", "timezone": "Asia/Tokyo"}
    created = client.post("/events", json=body).get_json()
    tokyo = today("Asia/Tokyo") + timedelta(days=1)
    assert created["start_date"] == stamp(tokyo, 16)
    r = client.post(f"/events/{created['id']}", json={**body, "timezone": "Europe/Paris"})
    assert r.status_code == 200
    e = r.get_json()
    paris = today("Europe/Paris") + timedelta(days=1)
    assert e["timezone"] == "Europe/Paris"
    assert (e["start_date"], e["end_date"]) == (stamp(paris, 16), stamp(paris, 17))
    assert e["utc_start_date"] == to_utc(stamp(paris, 16), "Europe/Paris")
    assert e["timezone_abbr"] == abbr(stamp(paris, 16), "Europe/Paris")
    assert read_event_file(repo, "moving")[0]["timezone"] == "Europe/Paris"


def test_update_timezone_alone_keeps_wall_clock_and_moves_utc(admin, rich_event):
    r = admin.post(f"/events/{rich_event['id']}", json={"timezone": "America/New_York"})
    e = r.get_json()
    assert (e["start_date"], e["utc_start_date"], e["timezone_abbr"]) == \
        ("2030-06-01 10:00:00", "2030-06-01 14:00:00", "EDT")


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_update_unknown_id_is_404_for_admin(admin, repo, factory, method):
    factory.event()
    with unchanged(repo):
        r = getattr(admin, method)("/events/999999", json={"title": "Nope"})
    assert r.status_code == 404
    assert r.get_json() == NOT_FOUND_999999


def test_update_venue_id_is_400_invalid_event_id(admin, repo, factory):
    venue = factory.venue()
    with unchanged(repo):
        r = admin.post(f"/events/{venue['id']}", json={"title": "Nope"})
    assert r.status_code == 400
    assert r.get_json()["code"] == "rest-invalid-event-id"


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_update_anonymous_is_401(anon, repo, factory, method):
    event = factory.event()
    with unchanged(repo):
        by_id = getattr(anon, method)(f"/events/{event['id']}", json={"title": "Hacked"})
        by_slug = getattr(anon, method)(f"/events/by-slug/{event['slug']}", json={"title": "Hacked"})
    assert (by_id.status_code, by_id.get_json()) == (401, FORBIDDEN_401)
    assert (by_slug.status_code, by_slug.get_json()) == (401, FORBIDDEN_401)


def test_update_permissions_per_role(as_role, repo, factory):
    admins = factory.event(title="Admins")
    contributor = as_role("contributor")
    own_draft = contributor.post("/events", json=event_body(title="Contrib Draft")).get_json()
    with unchanged(repo):
        assert as_role("subscriber").post(f"/events/{admins['id']}", json={"title": "x"}).status_code == 403
        assert contributor.post(f"/events/{admins['id']}", json={"title": "x"}).status_code == 403
        assert contributor.post("/events/by-slug/admins", json={"title": "x"}).status_code == 403
        assert as_role("author").post(f"/events/{admins['id']}", json={"title": "x"}).status_code == 403
    with one_commit(repo, "contributor"):
        r = contributor.post(f"/events/{own_draft['id']}", json={"title": "Contrib Draft 2"})
    assert r.status_code == 200 and r.get_json()["status"] == "draft"
    with one_commit(repo, "editor"):
        assert as_role("editor").put(f"/events/{admins['id']}", json={"title": "By Editor"}).status_code == 200
    # once an editor publishes the contributor's event, the contributor can no longer change it
    assert as_role("editor").post(f"/events/{own_draft['id']}", json={"status": "publish"}).get_json()["status"] \
        == "publish"
    with unchanged(repo):
        assert contributor.post(f"/events/{own_draft['id']}", json={"title": "x"}).status_code == 403
        assert contributor.delete(f"/events/{own_draft['id']}").status_code == 403
    author = as_role("author")
    own_published = author.post("/events", json=event_body(title="Authors")).get_json()
    assert own_published["status"] == "publish"
    with one_commit(repo, "author"):
        assert author.patch(f"/events/{own_published['id']}", json={"title": "Authors 2"}).status_code == 200


def test_update_scales_back_status_for_contributors(as_role, repo):
    contributor = as_role("contributor")
    own = contributor.post("/events", json=event_body(title="Wants Out")).get_json()
    r = contributor.post(f"/events/{own['id']}", json={"status": "publish"})
    assert r.status_code == 200
    assert r.get_json()["status"] == "pending"
    assert read_event_file(repo, "wants-out")[0]["status"] == "pending"


def test_update_without_status_keeps_the_status(admin, factory):
    draft = factory.event(status="draft")
    r = admin.post(f"/events/{draft['id']}", json={"title": "Still Draft"})
    assert r.get_json()["status"] == "draft"


def test_update_slug_renames_the_file_in_one_commit(admin, repo, rich_event):
    with one_commit(repo):
        r = admin.post(f"/events/{rich_event['id']}", json={"slug": "an-interesting-event"})
    assert r.status_code == 200
    e = r.get_json()
    assert e["slug"] == "an-interesting-event"
    assert e["url"] == "http://localhost/event/an-interesting-event/"
    assert e["website"] == "https://rich.example.com"
    files = flat(repo.files())
    assert "events/rich-event.md" not in files and "events/an-interesting-event.md" in files
    assert not list((repo.root / "events").rglob("rich-event.md"))
    assert flat(changed_files(repo)) == ["events/an-interesting-event.md", "events/rich-event.md"]
    meta, body, _ = read_event_file(repo, "an-interesting-event")
    assert (meta["id"], meta["slug"], body.strip()) == (rich_event["id"], "an-interesting-event", "Original body")
    assert admin.get("/events/by-slug/an-interesting-event").get_json()["id"] == rich_event["id"]
    assert admin.get("/events/by-slug/rich-event").status_code == 400


def test_update_slug_is_sanitized(admin, repo, factory):
    event = factory.event(title="Plain")
    r = admin.post(f"/events/{event['id']}", json={"slug": "My New Slug!"})
    assert (r.status_code, r.get_json()["slug"]) == (200, "my-new-slug")
    assert r.get_json()["website"] == r.get_json()["url"] == "http://localhost/event/my-new-slug/"
    assert flat(repo.files()) == ["events/my-new-slug.md"]


def test_update_slug_to_a_taken_slug_never_overwrites_the_other_event(admin, repo, factory):
    taken = factory.event(title="Taken")
    mover = factory.event(title="Mover")
    r = admin.post(f"/events/{mover['id']}", json={"slug": "taken"})
    assert r.status_code == 200
    assert r.get_json()["slug"] not in ("taken", "mover")
    assert r.get_json()["slug"].startswith("taken-")
    assert read_event_file(repo, "taken")[0]["id"] == taken["id"]
    assert admin.get(f"/events/{taken['id']}").get_json()["slug"] == "taken"


@pytest.mark.parametrize("field, value", [
    ("website", "foo"), ("author", 23), ("start_date", "whenever"), ("title", ""), ("venue", 999999),
    ("timezone", "Nowhere/City"),
])
def test_update_invalid_value_changes_nothing(admin, repo, rich_event, field, value):
    with unchanged(repo):
        r = admin.post(f"/events/{rich_event['id']}", json={field: value})
    assert r.status_code == 400
    assert r.get_json()["code"] == "rest_invalid_param"
    assert list(r.get_json()["data"]["params"]) == [field]
    assert admin.get(f"/events/{rich_event['id']}").get_json()["title"] == "Rich Event"


def test_update_author_and_date_utc(admin, rich_event):
    r = admin.post(f"/events/{rich_event['id']}", json={"author": 3, "date_utc": "2029-01-02 03:04:05"})
    assert r.status_code == 200
    assert (r.get_json()["author"], r.get_json()["date_utc"]) == ("3", "2029-01-02 03:04:05")


# ============================================================================= delete


def test_delete_trashes_the_event_in_one_commit(admin, repo, factory):
    event = factory.event(title="Trash Me")
    with one_commit(repo):
        r = admin.delete(f"/events/{event['id']}")
    assert r.status_code == 200
    body = r.get_json()
    assert list(body) == EVENT_KEYS
    assert (body["id"], body["status"], body["title"]) == (event["id"], "trash", "Trash Me")
    meta, _, _ = read_event_file(repo, "trash-me")
    assert meta["status"] == "trash" and meta["id"] == event["id"]
    assert flat(repo.files()) == ["events/trash-me.md"]  # trashed, not removed
    assert flat(changed_files(repo)) == ["events/trash-me.md"]
    assert str(event["id"]) in first_line(repo) and '"Trash Me"' in first_line(repo)


def test_delete_twice_is_410(admin, repo, factory):
    event = factory.event()
    admin.delete(f"/events/{event['id']}")
    with unchanged(repo):
        r = admin.delete(f"/events/{event['id']}")
    assert r.status_code == 410
    assert r.get_json()["code"] == "event-is-in-trash"
    assert r.get_json()["data"]["status"] == 410


def test_delete_unknown_id_is_404(admin, repo, factory):
    factory.event()
    with unchanged(repo):
        r = admin.delete("/events/999999")
    assert r.status_code == 404
    assert r.get_json() == NOT_FOUND_999999


def test_delete_anonymous_is_401(anon, repo, factory):
    event = factory.event()
    with unchanged(repo):
        existing = anon.delete(f"/events/{event['id']}")
        by_slug = anon.delete(f"/events/by-slug/{event['slug']}")
        unknown = anon.delete("/events/999999")
    assert (existing.status_code, existing.get_json()) == (401, FORBIDDEN_401)
    assert (by_slug.status_code, by_slug.get_json()) == (401, FORBIDDEN_401)
    assert unknown.status_code == 401
    assert anon.get(f"/events/{event['id']}").status_code == 200


def test_delete_permissions_per_role(as_role, repo, factory):
    admins = factory.event(title="Admins")
    contributor = as_role("contributor")
    own = contributor.post("/events", json=event_body(title="Own Draft")).get_json()
    with unchanged(repo):
        assert as_role("subscriber").delete(f"/events/{admins['id']}").status_code == 403
        assert contributor.delete(f"/events/{admins['id']}").status_code == 403
        assert contributor.delete("/events/by-slug/admins").status_code == 403
    with one_commit(repo, "contributor"):
        assert contributor.delete(f"/events/{own['id']}").status_code == 200
    with one_commit(repo, "editor"):
        assert as_role("editor").delete(f"/events/{admins['id']}").status_code == 200


def test_delete_by_slug(admin, repo, factory):
    event = factory.event(title="Slug Trash")
    with one_commit(repo):
        r = admin.delete("/events/by-slug/slug-trash")
    assert (r.status_code, r.get_json()["id"], r.get_json()["status"]) == (200, event["id"], "trash")
    assert admin.delete("/events/by-slug/slug-trash").status_code == 410


def test_delete_venue_id_through_events_is_400(admin, repo, factory):
    venue = factory.venue()
    with unchanged(repo):
        r = admin.delete(f"/events/{venue['id']}")
    assert (r.status_code, r.get_json()["code"]) == (400, "rest-invalid-event-id")


def test_trashed_event_leaves_lists(admin, factory):
    keep, gone = factory.event(), factory.event()
    admin.delete(f"/events/{gone['id']}")
    assert ids(admin.get("/events").get_json()) == [keep["id"]]


# ============================================================================= git details


def test_file_keys_are_in_a_stable_order(admin, repo, factory):
    venue = factory.venue()
    bodies = [
        dict(title="Order A", description="A", cost="5", featured=True, venue=venue["id"], categories="x",
             timezone="UTC", website="https://a.example.com", excerpt="E"),
        dict(website="https://b.example.com", excerpt="E", categories="x", venue=venue["id"], featured=True,
             cost="5", description="B", title="Order B", timezone="UTC"),
    ]
    for body in bodies:
        assert admin.post("/events", json=event_body(**body)).status_code == 201
    keys_a = front_keys(read_event_file(repo, "order-a")[2])
    keys_b = front_keys(read_event_file(repo, "order-b")[2])
    assert keys_a == keys_b
    assert keys_a[:4] == ["id", "title", "slug", "status"]
    assert keys_a.index("start_date") < keys_a.index("end_date") < keys_a.index("timezone")
    assert len(keys_a) == len(set(keys_a))
    admin.post(f"/events/{read_event_file(repo, 'order-a')[0]['id']}", json={"sticky": True, "title": "Order A2"})
    keys_after = front_keys(read_event_file(repo, "order-a")[2])
    assert [k for k in keys_after if k != "sticky"] == keys_a


def test_multiline_description_round_trips(admin, repo):
    text = "First paragraph.\n\nSecond paragraph\nwith a break.\n\n---\n\nAfter a rule: yes"
    r = admin.post("/events", json=event_body(title="Long", description=text))
    assert r.status_code == 201
    assert r.get_json()["description"].startswith("<p>First paragraph.</p>")
    meta, body, raw = read_event_file(repo, "long")
    assert "description" not in meta
    assert raw.split("---\n", 2)[2].rstrip("\n") == text
    assert admin.get("/events/by-slug/long").get_json()["description"] == r.get_json()["description"]


def test_yaml_hostile_values_are_quoted(admin, repo):
    title = 'Colon: "quoted" # not a comment'
    r = admin.post("/events", json=event_body(title=title, excerpt="yes", cost="no"))
    assert r.status_code == 201
    meta, _, _ = read_event_file(repo, r.get_json()["slug"])
    assert meta["title"] == title
    assert meta["excerpt"] == "yes"
    assert admin.get(f"/events/{r.get_json()['id']}").get_json()["title"] == title


def test_every_write_is_one_commit_with_a_clean_tree(admin, repo, factory):
    start = repo.count()
    heads = set()
    event = factory.event(title="Life")
    heads.add(repo.head())
    admin.patch(f"/events/{event['id']}", json={"title": "Life 2"})
    heads.add(repo.head())
    admin.delete(f"/events/{event['id']}")
    heads.add(repo.head())
    assert repo.count() == start + 3 and len(heads) == 3
    assert repo.status() == ""
    log = repo("log", "--format=%an <%ae>|%s", f"-{3}").splitlines()
    assert [line.split("|")[0] for line in log] == [USERS["administrator"][1]] * 3
    assert log[2].split("|")[1] == f'Create event {event["id"]} "Life"'
    assert log[1].split("|")[1] == f'Update event {event["id"]} "Life 2"'


# ============================================================================= list basics


def test_empty_list(anon):
    r = anon.get("/events")
    assert r.status_code == 200
    body = r.get_json()
    assert list(body) == LIST_KEYS
    assert (body["events"], body["total"], body["total_pages"]) == ([], 0, 0)
    assert (r.headers["X-TEC-Total"], r.headers["X-TEC-TotalPages"]) == ("0", "0")


def test_default_window(anon, factory):
    d = today()
    soon = factory.event(title="Tomorrow", start_date=stamp(d + timedelta(days=1), 10),
                         end_date=stamp(d + timedelta(days=1), 11))
    yesterday = factory.event(title="Yesterday", start_date=stamp(d - timedelta(days=1), 0, 30),
                              end_date=stamp(d - timedelta(days=1), 1))
    factory.event(title="Three Days Ago", start_date=stamp(d - timedelta(days=3), 10),
                  end_date=stamp(d - timedelta(days=3), 11))
    factory.event(title="Two Days Ago Late", start_date=stamp(d - timedelta(days=2), 23, 30),
                  end_date=stamp(d - timedelta(days=2), 23, 45))
    far = d + timedelta(days=365 * 2 + 40)
    factory.event(title="Too Far", start_date=stamp(far, 10), end_date=stamp(far, 11))
    near_end = d + timedelta(days=365 * 2 - 40)
    inside = factory.event(title="Within Two Years", start_date=stamp(near_end, 10), end_date=stamp(near_end, 11))
    body = anon.get("/events").get_json()
    assert ids(body) == [yesterday["id"], soon["id"], inside["id"]]
    assert body["total"] == 3
    query = dict(query_of(body["rest_url"]))
    assert query["start_date"] == stamp(d - timedelta(days=1), 0)
    assert query["end_date"].endswith("23:59:59")


def test_list_orders_by_start_date_then_creation(anon, factory):
    d = today()
    third = factory.event(start_date=stamp(d + timedelta(days=3), 9), end_date=stamp(d + timedelta(days=3), 10))
    first = factory.event(start_date=stamp(d + timedelta(days=1), 9), end_date=stamp(d + timedelta(days=1), 10))
    tie_a = factory.event(start_date=stamp(d + timedelta(days=2), 9), end_date=stamp(d + timedelta(days=2), 10))
    tie_b = factory.event(start_date=stamp(d + timedelta(days=2), 9), end_date=stamp(d + timedelta(days=2), 10))
    # the same instant in another zone sorts by the instant, not by the wall clock
    tokyo = factory.event(start_date=stamp(d + timedelta(days=2), 17), end_date=stamp(d + timedelta(days=2), 18),
                          timezone="Asia/Tokyo")  # 08:00 UTC
    assert ids(anon.get("/events").get_json()) == [first["id"], tokyo["id"], tie_a["id"], tie_b["id"], third["id"]]


def test_totals_headers_and_pages(anon, factory):
    made = [factory.event() for _ in range(5)]
    r = anon.get("/events", query_string={"per_page": 2})
    body = r.get_json()
    assert (body["total"], body["total_pages"]) == (5, 3)
    assert (r.headers["X-TEC-Total"], r.headers["X-TEC-TotalPages"]) == ("5", "3")
    assert len(body["events"]) == 2
    pages = [ids(anon.get("/events", query_string={"per_page": 2, "page": p}).get_json()) for p in (1, 2, 3)]
    assert pages == [[made[0]["id"], made[1]["id"]], [made[2]["id"], made[3]["id"]], [made[4]["id"]]]
    default = anon.get("/events").get_json()
    assert (len(default["events"]), default["total_pages"]) == (5, 1)


def test_per_page_default_is_10_and_cap_is_50(anon, repo):
    d = today() + timedelta(days=5)
    files = {}
    for n in range(1, 52):
        files[f"events/bulk-{n}.md"] = (
            f"---\nid: {n}\ntitle: Bulk {n}\nstatus: publish\nauthor: 1\n"
            f"start_date: '{stamp(d, 10)}'\nend_date: '{stamp(d, 11)}'\ntimezone: UTC\n---\n")
    hand_commit(repo, files)
    r = anon.get("/events", query_string={"per_page": 100})
    body = r.get_json()
    assert len(body["events"]) == 50
    assert (body["total"], body["total_pages"]) == (51, 2)
    assert r.headers["X-TEC-TotalPages"] == "2"
    assert ("per_page", "50") in query_of(body["rest_url"])
    default = anon.get("/events").get_json()
    assert (len(default["events"]), default["total_pages"]) == (10, 6)


def test_page_past_the_end_is_404(anon, factory):
    factory.event()
    r = anon.get("/events", query_string={"page": 2})
    assert r.status_code == 404
    assert r.get_json() == {"code": "event-archive-page-not-found",
                            "message": "The requested event archive page does not exist", "data": {"status": 404}}


def test_empty_first_page_is_200(anon):
    assert anon.get("/events", query_string={"page": 1}).status_code == 200


@pytest.mark.parametrize("param", ["page", "per_page"])
@pytest.mark.parametrize("value", ["0", "foo", "-1", "foo bar", "1.5"])
def test_bad_page_params_are_400(shared, param, value):
    r = shared.anon.get("/events", query_string={param: value})
    assert r.status_code == 400
    assert r.get_json() == {"code": "rest_invalid_param", "message": f"Invalid parameter(s): {param}",
                            "data": {"status": 400, "params": {param: "Invalid parameter."}, "details": []}}


def test_next_and_previous_urls(anon, factory):
    for _ in range(3):
        factory.event()
    p1 = anon.get("/events", query_string={"per_page": 1}).get_json()
    p2 = anon.get("/events", query_string={"per_page": 1, "page": 2}).get_json()
    p3 = anon.get("/events", query_string={"per_page": 1, "page": 3}).get_json()
    assert list(p1) == ["events", "rest_url", "next_rest_url", "total", "total_pages"]
    assert list(p2) == ["events", "rest_url", "next_rest_url", "previous_rest_url", "total", "total_pages"]
    assert list(p3) == ["events", "rest_url", "previous_rest_url", "total", "total_pages"]
    for body in (p1, p2, p3):
        assert body["rest_url"].startswith(f"{BASE}/events/?")
    assert dict(query_of(p2["rest_url"]))["page"] == "2"
    assert dict(query_of(p1["next_rest_url"]))["page"] == "2"
    assert dict(query_of(p2["next_rest_url"]))["page"] == "3"
    assert "page" not in dict(query_of(p2["previous_rest_url"]))  # previous page is 1: the archive root
    assert dict(query_of(p3["previous_rest_url"]))["page"] == "2"
    assert dict(query_of(p2["previous_rest_url"]))["per_page"] == "1"
    # following next_rest_url walks the pages
    path = urlsplit(p1["next_rest_url"])
    followed = anon.get(path.path + "?" + path.query).get_json()
    assert ids(followed) == ids(p2)


def test_next_url_has_page_appended_last(anon, factory):
    for _ in range(3):
        factory.event()
    p2 = anon.get("/events", query_string={"per_page": 1, "page": 2}).get_json()
    rest_keys = [k for k, _ in query_of(p2["rest_url"]) if k != "page"]
    assert [k for k, _ in query_of(p2["next_rest_url"])] == rest_keys + ["page"]
    assert [k for k, _ in query_of(p2["previous_rest_url"])] == rest_keys


def test_hidden_events_are_never_listed(as_role, factory):
    shown = factory.event()
    hidden = factory.event(hide_from_listings=True)
    for role in (None, "administrator", "editor"):
        body = as_role(role).get("/events").get_json()
        assert ids(body) == [shown["id"]], role
        assert body["total"] == 1
    assert ids(as_role(None).get("/events", query_string={"include": str(hidden["id"])}).get_json()) == []


def test_drafts_are_listed_for_editors_only(as_role, factory):
    published = factory.event(title="Public")
    draft = factory.event(title="Draft", status="draft")
    pending = factory.event(title="Pending", status="pending")
    for role in (None, "subscriber"):
        body = as_role(role).get("/events").get_json()
        assert (ids(body), body["total"]) == ([published["id"]], 1), role
    for role in ("administrator", "editor"):
        body = as_role(role).get("/events").get_json()
        assert sorted(ids(body)) == sorted([published["id"], draft["id"], pending["id"]]), role
        assert body["total"] == 3


def test_search(anon, factory):
    foo = factory.event(title="Foo")
    foo_bar = factory.event(title="Foo Bar")
    bar = factory.event(title="Bar")
    in_body = factory.event(title="Other", description="Something about FOO here")
    in_excerpt = factory.event(title="Another", excerpt="a bar excerpt")
    assert ids(anon.get("/events", query_string={"search": "foo"}).get_json()) == \
        [foo["id"], foo_bar["id"], in_body["id"]]
    assert ids(anon.get("/events", query_string={"search": "bar"}).get_json()) == \
        [foo_bar["id"], bar["id"], in_excerpt["id"]]
    assert ids(anon.get("/events", query_string={"search": "foo bar"}).get_json()) == [foo_bar["id"]]
    nothing = anon.get("/events", query_string={"search": "zork"}).get_json()
    assert (nothing["events"], nothing["total"]) == ([], 0)


def test_filter_by_categories_and_tags(anon, factory, taxonomy):
    t1 = _make_term(factory, taxonomy, name="First Term")
    t2 = _make_term(factory, taxonomy, name="Second Term")
    _make_term(factory, taxonomy, name="Unused Term")
    e1 = factory.event(**{taxonomy: [t1["id"]]})
    e2 = factory.event(**{taxonomy: [t2["id"]]})
    e12 = factory.event(**{taxonomy: [t1["id"], t2["id"]]})
    factory.event()

    def listed(value):
        r = anon.get(f"/events?{taxonomy}={value}") if isinstance(value, str) else \
            anon.get("/events", query_string={f"{taxonomy}[]": value})
        assert r.status_code == 200, r.get_json()
        return ids(r.get_json())

    assert listed(str(t1["id"])) == [e1["id"], e12["id"]]
    assert listed("first-term") == [e1["id"], e12["id"]]
    assert listed(f"{t1['id']},{t2['id']}") == [e1["id"], e2["id"], e12["id"]]
    assert listed(["first-term", str(t2["id"])]) == [e1["id"], e2["id"], e12["id"]]
    assert listed("unused-term") == []
    bad = anon.get(f"/events?{taxonomy}=no-such-term")
    assert (bad.status_code, bad.get_json()["code"], list(bad.get_json()["data"]["params"])) == \
        (400, "rest_invalid_param", [taxonomy])


def test_filter_by_venue_and_organizer(anon, factory):
    v1, v2 = factory.venue(), factory.venue()
    o1, o2 = factory.organizer(), factory.organizer()
    a = factory.event(venue=v1["id"], organizer=[o1["id"]])
    b = factory.event(venue=v2["id"], organizer=[o1["id"], o2["id"]])
    c = factory.event(organizer=[o2["id"]])
    factory.event()
    q = lambda **kw: ids(anon.get("/events", query_string=kw).get_json())  # noqa: E731
    assert q(venue=v1["id"]) == [a["id"]]
    assert q(venue=f"{v1['id']},{v2['id']}") == [a["id"], b["id"]]
    assert q(**{"venue[]": [v2["id"]]}) == [b["id"]]
    assert q(organizer=o1["id"]) == [a["id"], b["id"]]
    assert q(organizer=o2["id"]) == [b["id"], c["id"]]
    assert q(organizer=f"{o1['id']},{o2['id']}") == [a["id"], b["id"], c["id"]]
    assert q(venue=v2["id"], organizer=o2["id"]) == [b["id"]]  # different filters are AND-ed
    for params in ({"venue": "foo"}, {"venue": "999999"}, {"venue": o1["id"]}, {"organizer": v1["id"]},
                   {"organizer": "23"}):
        r = anon.get("/events", query_string=params)
        assert (r.status_code, r.get_json()["code"]) == (400, "rest_invalid_param"), params


def test_include_ignores_the_date_window(anon, factory):
    d = today()
    past = factory.event(title="Long Ago", start_date=stamp(d - timedelta(days=30), 9),
                         end_date=stamp(d - timedelta(days=30), 10))
    future = factory.event(title="Later")
    other = factory.event(title="Not Included")
    body = anon.get("/events", query_string={"include": f"{future['id']},{past['id']}"}).get_json()
    assert sorted(ids(body)) == sorted([past["id"], future["id"]])
    assert body["total"] == 2
    assert other["id"] not in ids(body)
    also = anon.get("/events", query_string={"include[]": [past["id"]], "start_date": "2099-01-01"}).get_json()
    assert ids(also) == [past["id"]]
    bad = anon.get("/events", query_string={"include": "foo-bar,23"})
    assert (bad.status_code, bad.get_json()["code"]) == (400, "rest_invalid_param")


def test_featured_filter(anon, factory):
    featured = [factory.event(featured=True) for _ in range(2)]
    plain = [factory.event() for _ in range(2)]
    q = lambda value: ids(anon.get("/events", query_string={"featured": value}).get_json())  # noqa: E731
    assert q("true") == [e["id"] for e in featured]
    assert q("1") == [e["id"] for e in featured]
    assert q("false") == [e["id"] for e in plain]
    assert len(ids(anon.get("/events").get_json())) == 4
    body = anon.get("/events", query_string={"featured": "true"}).get_json()
    assert ("featured", "1") in query_of(body["rest_url"])
    r = anon.get("/events", query_string={"featured": "sometimes"})
    assert (r.status_code, r.get_json()["code"]) == (400, "rest_invalid_param")


def test_head_is_served_like_get(anon, factory):
    factory.event()
    r = anon.head("/events")
    assert r.status_code == 200
    assert r.headers["X-TEC-Total"] == "1"

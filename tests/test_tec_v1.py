"""The original's newer API, ``tec/v1``, and the WordPress routes its clients check first
(``/wp-json/wp/v2/users/me``, ``/wp-json/wp/v2/settings``, the ``/wp-json/`` namespaces).

Replayed with the request patterns of the plugin makers' MCP server in the release that speaks
``tec/v1`` (github.com/the-events-calendar/mcp-server, ``src/api/client.ts``): every request
carries HTTP Basic with an application password, ``Content-Type: application/json`` and the
``X-TEC-EEA`` acknowledgement header; start-up reads ``/wp-json/``, then ``/wp/v2/users/me``
(a failure there stops it), then ``/wp/v2/settings``; lists are
``/wp-json/tec/v1/{events|venues|organizers}`` with filters as query parameters (arrays joined
by commas) and the answer read as a bare JSON array; get is ``.../{id}``; create is POST with
the JSON body, update PUT, delete DELETE (``?force=true`` for good). Its ``create`` tool copies
``title`` into ``venue``/``organizer`` for those types.
"""
from __future__ import annotations

import base64

import pytest

from calendar_service.http import docs, i18n
from conftest import API, PASSWORDS, followed

TEC = "/wp-json/tec/v1"
NATIVE = "/calendar/tec/v1"
EEA = ("I understand that this endpoint is experimental and may change in a future release without maintaining "
       "backward compatibility. I also understand that I am using this endpoint at my own risk, while support is "
       "not provided for it.")


def basic(role: str) -> str:
    return "Basic " + base64.b64encode(f"{role}:{PASSWORDS[role]}".encode()).decode()


def mcp(role: str | None = "administrator") -> dict:
    """The headers of the client's ``ApiClient.request``."""
    headers = {"Content-Type": "application/json", "X-TEC-EEA": EEA}
    if role:
        headers["Authorization"] = basic(role)
    return headers


@pytest.fixture
def compat(make_app):
    return make_app(wp_compat=True).test_client()


def test_users_me_answers_the_signed_in_account(compat):
    r = compat.get("/wp-json/wp/v2/users/me", headers=mcp("editor"))
    assert r.status_code == 200
    body = r.get_json()
    assert isinstance(body["id"], int) and body["id"] > 0
    assert body["slug"] == "editor" and body["name"]
    assert "roles" not in body   # WordPress shows roles and capabilities in the edit context only
    edit = compat.get("/wp-json/wp/v2/users/me?context=edit", headers=mcp("editor")).get_json()
    assert edit["id"] == body["id"] and edit["roles"] == ["editor"]
    caps = edit["capabilities"]
    assert caps["editor"] is True and caps["read"] is True and caps["edit_others_posts"] is True
    author = compat.get("/wp-json/wp/v2/users/me?context=edit", headers=mcp("author")).get_json()
    assert "edit_others_posts" not in author["capabilities"] and author["capabilities"]["publish_posts"]


def test_users_me_without_credentials_is_rest_not_logged_in(compat):
    r = compat.get("/wp-json/wp/v2/users/me", headers=mcp(None))
    assert r.status_code == 401
    assert r.get_json() == {"code": "rest_not_logged_in", "message": "You are not currently logged in.",
                            "data": {"status": 401}}
    wrong = compat.get("/wp-json/wp/v2/users/me", headers={"Authorization": "Basic " + base64.b64encode(
        b"editor:wrong wrong wrong").decode()})
    assert wrong.status_code == 401 and wrong.get_json()["code"] == "incorrect_password"


def test_settings_for_administrators_only(compat):
    r = compat.get("/wp-json/wp/v2/settings", headers=mcp("administrator"))
    assert r.status_code == 200
    assert r.get_json()["timezone"] == "UTC"
    editor = compat.get("/wp-json/wp/v2/settings", headers=mcp("editor"))
    assert editor.status_code == 403 and editor.get_json()["code"] == "rest_forbidden"
    anonymous = compat.get("/wp-json/wp/v2/settings")
    assert anonymous.status_code == 401 and anonymous.get_json()["code"] == "rest_forbidden"


def test_wp_json_lists_every_namespace(compat):
    body = compat.get("/wp-json/", headers=mcp()).get_json()
    assert body["namespaces"] == ["tribe/events/v1", "tec/v1", "wp/v2"]
    for route in ("/tribe/events/v1/events", "/tec/v1/events", "/tec/v1/venues/(?P<id>\\d+)", "/wp/v2/users/me",
                  "/wp/v2/settings"):
        assert route in body["routes"], route
    assert body["routes"]["/tec/v1/events"]["_links"]["self"][0]["href"] == "http://localhost/wp-json/tec/v1/events"


def test_wordpress_routes_are_unknown_without_compat(app):
    client = app.test_client()
    for path in ("/wp-json/wp/v2/users/me", "/wp-json/wp/v2/settings", TEC + "/events"):
        assert client.get(path, headers=mcp()).status_code == 404


# ----------------------------------------------------------------------------- tec/v1 events, venues, organizers


def test_client_create_get_list_update_delete_of_each_type(compat, repo):
    h = mcp()
    # create: the client's create tool copies `title` into `venue` / `organizer`
    venue = compat.post(TEC + "/venues", headers=h, json={"title": "Town Hall", "venue": "Town Hall",
                                                          "address": "1 Main St", "city": "Springfield",
                                                          "country": "US", "state_province": "Ohio"})
    assert venue.status_code == 201, venue.get_json()
    v = venue.get_json()
    assert v["type"] == "tribe_venue" and v["title"] == {"rendered": "Town Hall"} and v["city"] == "Springfield"
    assert v["state_province"] == "Ohio" and v["content"] == {"rendered": "", "protected": False}
    organizer = compat.post(TEC + "/organizers", headers=h, json={"title": "Ann", "organizer": "Ann",
                                                                  "email": "ann@example.org"})
    assert organizer.status_code == 201, organizer.get_json()
    o = organizer.get_json()
    commits = repo.count()
    event = compat.post(TEC + "/events", headers=h, json={
        "title": "Summer Music Festival", "content": "<p>Bands</p>", "status": "publish",
        "start_date": "2031-07-15 18:00:00", "end_date": "2031-07-15 23:00:00", "all_day": False,
        "timezone": "UTC", "venues": [v["id"]], "organizers": [o["id"]], "cost": "Free",
        "website": "https://example.com/fest", "featured": True})
    assert event.status_code == 201, event.get_json()
    assert repo.count() == commits + 1 and repo.last_author().startswith("Administrator")
    e = event.get_json()
    assert e["type"] == "tribe_events" and e["title"]["rendered"] == "Summer Music Festival"
    assert "Bands" in e["content"]["rendered"] and isinstance(e["author"], int)
    assert e["start_date"] == "2031-07-15 18:00:00" and e["end_date_utc"] == "2031-07-15 23:00:00"
    assert e["duration"] == 5 * 3600 and [x["id"] for x in e["venues"]] == [v["id"]]
    assert [x["id"] for x in e["organizers"]] == [o["id"]] and e["organizer_names"] == ["Ann"]
    assert e["venues"][0]["type"] == "tribe_venue" and e["venues"][0]["city"] == "Springfield"
    assert e["featured"] is True and e["cost"] == "Free"
    for key in ("date", "date_gmt", "modified", "modified_gmt", "link", "slug", "status"):
        assert e[key], key
    assert "T" in e["date"] and event.headers["ETag"]
    # get
    got = compat.get(f"{TEC}/events/{e['id']}", headers=h)
    assert got.status_code == 200 and got.get_json()["id"] == e["id"] and got.headers["ETag"]
    # list with the event tool's filters: a bare array and WordPress' paging headers
    listed = compat.get(f"{TEC}/events?per_page=10&start_date=2031-07-01&end_date=2031-07-31&venue={v['id']}"
                        f"&organizer={o['id']}&featured=true", headers=h)
    assert listed.status_code == 200, listed.get_json()
    assert [x["id"] for x in listed.get_json()] == [e["id"]]
    assert listed.headers["X-WP-Total"] == "1" and listed.headers["X-WP-TotalPages"] == "1"
    followed(compat.application)   # search reads the index, which follows the branch
    searched = compat.get(f"{TEC}/events?search=Festival&start_date=2031-01-01&end_date=2031-12-31", headers=h).get_json()
    assert [x["id"] for x in searched] == [e["id"]]
    assert [x["id"] for x in compat.get(TEC + "/venues?per_page=5", headers=h).get_json()] == [v["id"]]
    followed(compat.application)
    assert [x["id"] for x in compat.get(TEC + "/organizers?search=Ann", headers=h).get_json()] == [o["id"]]
    # update with PUT: one commit
    commits = repo.count()
    put = compat.put(f"{TEC}/events/{e['id']}", headers=h, json={"title": "Summer Festival", "cost": "10"})
    assert put.status_code == 200, put.get_json()
    assert put.get_json()["title"]["rendered"] == "Summer Festival" and repo.count() == commits + 1
    renamed = compat.put(f"{TEC}/venues/{v['id']}", headers=h, json={"title": "City Hall", "venue": "City Hall"})
    assert renamed.status_code == 200 and renamed.get_json()["title"]["rendered"] == "City Hall"
    # delete: to the trash, then for good
    trashed = compat.delete(f"{TEC}/events/{e['id']}", headers=h)
    assert trashed.status_code == 200 and trashed.get_json()["status"] == "trash"
    commits = repo.count()
    gone = compat.delete(f"{TEC}/organizers/{o['id']}?force=true", headers=h)
    assert gone.status_code == 200, gone.get_json()
    assert gone.get_json()["deleted"] is True and gone.get_json()["previous"]["id"] == o["id"]
    assert repo.count() == commits + 1
    # an unknown venue or organizer id is v1's 400 rest_invalid_param (a difference kept, see api.md)
    assert compat.get(f"{TEC}/organizers/{o['id']}", headers=h).get_json()["code"] == "rest_invalid_param"
    assert compat.delete(f"{TEC}/events/{e['id']}?force=true", headers=h).get_json()["deleted"] is True


def test_list_paging_headers_and_link(compat, factory):
    for n in range(3):
        factory.event(title=f"Paged {n}", start_date=f"2032-01-1{n} 09:00:00", end_date=f"2032-01-1{n} 10:00:00")
    r = compat.get(TEC + "/events?per_page=2&start_date=2032-01-01&end_date=2032-12-31", headers=mcp())
    assert len(r.get_json()) == 2
    assert r.headers["X-WP-Total"] == "3" and r.headers["X-WP-TotalPages"] == "2"
    assert r.headers["Link"].startswith("<http://localhost/wp-json/tec/v1/events/?") and 'rel="next"' in r.headers["Link"]
    native = compat.get(NATIVE + "/events?per_page=2&start_date=2032-01-01&end_date=2032-12-31&page=2", headers=mcp())
    assert len(native.get_json()) == 1 and "/calendar/tec/v1/events" in native.headers["Link"]


def test_native_prefix_is_served_without_compat(app):
    client = app.test_client()
    r = client.post(NATIVE + "/events", headers=mcp(), json={"title": "Native", "start_date": "2033-01-01 10:00:00",
                                                           "end_date": "2033-01-01 11:00:00"})
    assert r.status_code == 201, r.get_json()
    got = client.get(NATIVE + "/events?start_date=2033-01-01&end_date=2033-12-31", headers=mcp())
    assert got.get_json() and got.get_json()[0]["id"] == r.get_json()["id"], (got.get_json(), r.get_json()["status"])


def test_permissions_and_errors_are_v1s(compat, factory):
    event = factory.event(status="draft")
    hidden = compat.get(f"{TEC}/events/{event['id']}")
    assert hidden.status_code == 403 and hidden.get_json() == compat.get(f"{API}/events/{event['id']}").get_json()
    anon = compat.post(TEC + "/events", json={"title": "x", "start_date": "tomorrow", "end_date": "tomorrow"})
    assert anon.status_code == 401 and anon.get_json()["code"] == "rest_forbidden"
    sub = compat.post(TEC + "/events", headers=mcp("subscriber"),
                      json={"title": "x", "start_date": "tomorrow", "end_date": "tomorrow"})
    assert sub.status_code == 403
    missing = compat.get(TEC + "/events/999999", headers=mcp())
    assert missing.status_code == 404 and set(missing.get_json()) == {"code", "message", "data"}
    # no tickets plugin: the route does not exist, as on such a WordPress site
    tickets = compat.get(TEC + "/tickets", headers=mcp())
    assert tickets.status_code == 404 and tickets.get_json()["code"] == "rest_no_route"


def test_if_match_etag_guards_updates(compat, factory):
    event = factory.event()
    got = compat.get(f"{TEC}/events/{event['id']}", headers=mcp())
    stale = compat.put(f"{TEC}/events/{event['id']}", headers={**mcp(), "If-Match": '"nope"'}, json={"title": "A"})
    assert stale.status_code == 412
    ok = compat.put(f"{TEC}/events/{event['id']}", headers={**mcp(), "If-Match": got.headers["ETag"]},
                    json={"title": "B"})
    assert ok.status_code == 200


def test_event_input_names_utc_dates_duration_and_terms(compat, admin):
    cat = admin.post("/categories", json={"name": "Music"}).get_json()
    tag = admin.post("/tags", json={"name": "Outdoor"}).get_json()
    r = compat.post(TEC + "/events", headers=mcp(), json={
        "title": "UTC", "start_date_utc": "2031-03-01 09:00:00", "duration": 5400, "timezone": "Europe/Rome",
        "tribe_events_cat": [cat["id"]], "tags": [tag["id"]], "sticky": True})
    assert r.status_code == 201, r.get_json()
    e = r.get_json()
    assert e["start_date"] == "2031-03-01 10:00:00" and e["start_date_utc"] == "2031-03-01 09:00:00"
    assert e["end_date"] == "2031-03-01 11:30:00" and e["duration"] == 5400
    assert e["tribe_events_cat"] == [cat["id"]] and e["tags"] == [tag["id"]] and e["sticky"] is True


def test_written_through_tec_reads_back_identically_through_v1_and_the_reverse(compat, factory):
    h = mcp()
    venue = factory.venue()
    made = compat.post(TEC + "/events", headers=h, json={
        "title": "Round trip", "content": "Text", "start_date": "2031-05-01 10:00:00",
        "end_date": "2031-05-01 12:00:00", "venues": [venue["id"]], "cost": "5", "website": "https://x.example"}).get_json()
    v1 = compat.get(f"{API}/events/{made['id']}", headers=h).get_json()
    assert v1["title"] == made["title"]["rendered"] and v1["description"] == made["content"]["rendered"]
    assert (v1["start_date"], v1["end_date"], v1["cost"], v1["website"]) == (
        made["start_date"], made["end_date"], made["cost"], made["website"])
    assert v1["venue"]["id"] == venue["id"] and v1["author"] == str(made["author"])
    # the reverse: written through v1, read through tec/v1
    other = factory.event(title="Reverse", start_date="2031-06-01 08:00:00", end_date="2031-06-01 09:00:00",
                          venue=venue["id"], cost="7")
    tec = compat.get(f"{TEC}/events/{other['id']}", headers=h).get_json()
    assert tec["title"]["rendered"] == other["title"] and [x["id"] for x in tec["venues"]] == [venue["id"]]
    assert (tec["start_date"], tec["end_date"], tec["cost"], tec["status"], tec["slug"]) == (
        other["start_date"], other["end_date"], other["cost"], other["status"], other["slug"])
    assert compat.get(f"{TEC}/events/{other['id']}", headers=h).headers["ETag"] == \
        compat.get(f"{API}/events/{other['id']}", headers=h).headers["ETag"]


def test_event_list_dates_are_the_originals(compat, factory):
    past = factory.event(title="Past", start_date="2020-02-01 10:00:00", end_date="2020-02-01 11:00:00")
    later = factory.event(title="Later", start_date="2031-02-01 10:00:00", end_date="2031-02-03 11:00:00")
    draft = factory.event(title="Draft", status="draft", start_date="2031-02-01 10:00:00",
                          end_date="2031-02-01 11:00:00")
    h = mcp()
    # without dates every published event, past ones too (v1 shows a window around today)
    everything = compat.get(TEC + "/events", headers=h).get_json()
    assert [e["id"] for e in everything] == [past["id"], later["id"]]
    assert everything[0]["is_past"] is True and everything[1]["multiday"] is True
    # start_date: starting from that day on; end_date: ending by the end of that day
    assert [e["id"] for e in compat.get(TEC + "/events?start_date=2031-02-01", headers=h).get_json()] == [later["id"]]
    assert compat.get(TEC + "/events?start_date=2031-02-01&end_date=2031-02-02", headers=h).get_json() == []
    assert [e["id"] for e in compat.get(TEC + "/events?end_date=2020-02-01", headers=h).get_json()] == [past["id"]]
    # drafts only when asked for
    asked = compat.get(TEC + "/events?status=draft", headers=h).get_json()
    assert [e["id"] for e in asked] == [draft["id"]]
    bad = compat.get(TEC + "/events?start_date=not-a-date", headers=h)
    assert bad.status_code == 400 and bad.get_json()["code"] == "rest_invalid_param"


def test_the_read_tools_query_strings(compat, factory, admin):
    """``listPosts``: URLSearchParams of page, per_page, order, orderby, status, include, exclude,
    search, then the type's filters; arrays joined by commas, booleans as true/false."""
    venue = factory.venue(city="Springfield")
    organizer = factory.organizer(email="o@example.org")
    cat = admin.post("/categories", json={"name": "Jazz"}).get_json()
    event = factory.event(title="Filtered", start_date="2031-09-09 20:00:00", end_date="2031-09-09 22:00:00",
                          venue=venue["id"], organizer=[organizer["id"]], categories=[cat["id"]], featured=True)
    factory.event(title="Other", start_date="2031-09-10 20:00:00", end_date="2031-09-10 22:00:00")
    followed(compat.application)
    h = mcp()
    query = (f"page=1&per_page=5&order=asc&orderby=event_date&status=publish&include={event['id']}%2C999"
             f"&exclude=998&search=Filtered&start_date=2031-09-01&end_date=2031-09-30&venue={venue['id']}"
             f"&organizer={organizer['id']}&featured=true&categories={cat['id']}")
    r = compat.get(f"{TEC}/events?{query}", headers=h)
    assert r.status_code == 200, r.get_json()
    assert [e["id"] for e in r.get_json()] == [event["id"]]
    assert r.get_json()[0]["tribe_events_cat"] == [cat["id"]]
    # the venue and organizer tools' own filters are not parameters of the original's lists either:
    # they are ignored there as here
    venues = compat.get(f"{TEC}/venues?per_page=100&city=Springfield&country=US&zip=1&geo_lat=1.5&geo_lng=2&radius=5",
                        headers=h)
    assert venues.status_code == 200 and [v["id"] for v in venues.get_json()] == [venue["id"]]
    organizers = compat.get(f"{TEC}/organizers?email=o%40example.org&phone=1&website=x", headers=h)
    assert organizers.status_code == 200 and [o["id"] for o in organizers.get_json()] == [organizer["id"]]


@pytest.mark.parametrize("language", sorted(i18n.LANGUAGES))
def test_doc_describes_tec_v1_in_every_language(compat, language):
    doc = compat.get(f"{API}/doc?i18n_language={language}").get_json()
    (tag,) = [t for t in doc["tags"] if t["name"] == "tec/v1"]
    assert tag["description"] == i18n.gettext(docs.TEC_DESCRIPTION, language)
    assert "/calendar/tec/v1" in tag["description"] and "force=true" in tag["description"]
    if language != "en":
        assert tag["description"] != docs.TEC_DESCRIPTION


def test_namespace_index_names_the_prefix_it_was_asked_under(compat):
    native = compat.get(NATIVE).get_json()
    assert native["namespace"] == "calendar/tec/v1"
    assert list(native["routes"]) == ["/calendar/tec/v1", "/calendar/tec/v1/events", "/calendar/tec/v1/events/(?P<id>\\d+)",
                                      "/calendar/tec/v1/venues", "/calendar/tec/v1/venues/(?P<id>\\d+)",
                                      "/calendar/tec/v1/organizers", "/calendar/tec/v1/organizers/(?P<id>\\d+)"]
    wp = compat.get(TEC + "/").get_json()
    assert wp["namespace"] == "tec/v1" and "/tec/v1/events" in wp["routes"]
    delete = [e for e in wp["routes"]["/tec/v1/events/(?P<id>\\d+)"]["endpoints"] if "DELETE" in e["methods"]][0]
    assert delete["args"]["force"]["default"] is False

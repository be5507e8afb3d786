"""CALENDAR_WP_COMPAT: the original plugin's URL space (/wp-json/tribe/events/v1, /wp-json/),
replayed with the request patterns of real clients, and the fidelity points seen with them.

Clients replayed:
- the plugin makers' MCP server (github.com/the-events-calendar/mcp-server) in its releases
  before it moved to the newer ``tec/v1`` API: ``src/api/endpoints.ts`` builds
  ``{baseUrl}/wp-json/tribe/events/v1/{events|venues|organizers}[/{id}]``; ``src/api/client.ts``
  sends HTTP Basic with an application password and ``Content-Type: application/json`` on every
  request (GETs too), list filters as query parameters with arrays joined by commas, reads the
  list from the key named after the resource, creates with POST, updates with PUT, deletes
  with DELETE (``?force=true`` to delete for good); its later releases first read ``/wp-json/``.
- a plain feed adapter as site integrations write them (``urljoin(site, "/wp-json/tribe/events/v1/")``,
  ``events`` with ``start_date``/``end_date``/``per_page=50``, following ``next_rest_url``).
"""
from __future__ import annotations

import base64
import http.client
import json
from urllib.parse import urljoin, urlsplit

import pytest

from calendar_service.http import i18n
from conftest import API, PASSWORDS
from servers import Server

WP = "/wp-json/tribe/events/v1"
ADMIN = "Basic " + base64.b64encode(f"administrator:{PASSWORDS['administrator']}".encode()).decode()


@pytest.fixture
def compat(make_app):
    return make_app(wp_compat=True).test_client()


def mcp_headers(extra: dict | None = None) -> dict:
    # what the MCP server's ApiClient.request sends on every call
    return {"Authorization": ADMIN, "Content-Type": "application/json", **(extra or {})}


def urls_in(value) -> list[str]:
    """Every string in a JSON value that looks like an absolute URL."""
    if isinstance(value, str):
        return [value] if value.startswith(("http://", "https://")) else []
    if isinstance(value, dict):
        return [u for v in value.values() for u in urls_in(v)]
    if isinstance(value, list):
        return [u for v in value for u in urls_in(v)]
    return []


def rest_urls(value) -> list[str]:
    """The API URLs in a body (permalinks and other site URLs left out)."""
    return [u for u in urls_in(value) if "/events/v1" in u or "/wp-json" in u]


# ----------------------------------------------------------------------------- off by default


def test_off_by_default_the_wordpress_paths_are_unknown(app):
    client = app.test_client()
    for path in ("/wp-json/", "/wp-json", WP, WP + "/events", WP + "/doc"):
        r = client.get(path)
        assert r.status_code == 404, path
        assert r.get_json()["code"] == "rest_no_route"
    doc = client.get(API + "/doc").get_json()
    assert doc["servers"] == [{"url": "http://localhost/calendar/events/v1/"}]


# ----------------------------------------------------------------------------- discovery


def test_wp_json_root_is_wordpress_discovery_index(compat):
    r = compat.get("/wp-json/")
    assert r.status_code == 200
    body = r.get_json()
    assert list(body)[:6] == ["name", "description", "url", "home", "gmt_offset", "timezone_string"]
    assert body["url"] == body["home"] == "http://localhost"
    assert body["gmt_offset"] == 0 and body["timezone_string"] == "UTC"
    assert body["namespaces"] == ["tribe/events/v1", "tec/v1", "wp/v2"]   # see test_tec_v1 for the others
    assert body["authentication"] == []
    assert body["_links"] == {"help": [{"href": "https://developer.wordpress.org/rest-api/"}]}
    routes = body["routes"]
    assert routes["/"]["namespace"] == "" and routes["/"]["_links"]["self"][0]["href"] == "http://localhost/wp-json/"
    # every route of the namespace, exactly as the namespace index lists it
    index = compat.get(WP).get_json()
    assert {k: v for k, v in routes.items() if k.startswith("/tribe/")} == index["routes"]
    assert compat.get("/wp-json").get_json() == body
    assert compat.post("/wp-json/").get_json()["code"] == "rest_no_route"
    assert all(u.startswith("http://localhost/wp-json/") for u in rest_urls(body))


def test_namespace_index_under_the_compat_prefix_names_tribe_events_v1(compat):
    native = compat.get(API).get_json()
    wp = compat.get(WP).get_json()
    assert wp["namespace"] == "tribe/events/v1"
    assert list(wp["routes"]) == [k.replace("/calendar/events/v1", "/tribe/events/v1", 1) for k in native["routes"]]
    first = wp["routes"]["/tribe/events/v1"]
    assert first["namespace"] == "tribe/events/v1"
    assert first["endpoints"][0]["args"]["namespace"]["default"] == "tribe/events/v1"
    assert wp["routes"]["/tribe/events/v1/events"]["_links"]["self"][0]["href"] == "http://localhost" + WP + "/events"
    assert wp["_links"] == {"up": [{"href": "http://localhost/wp-json/"}]}
    assert native["namespace"] == "calendar/events/v1"  # asked after: the cache keeps the two apart
    assert not any("/wp-json" in u for u in rest_urls(native))


def test_namespace_match_is_case_insensitive_as_in_wordpress(compat, factory):
    event = factory.event()
    r = compat.get(f"/wp-json/Tribe/Events/V1/events/{event['id']}")
    assert r.status_code == 200
    assert r.get_json()["rest_url"] == f"http://localhost{WP}/events/{event['id']}"


def test_other_wp_json_routes_are_404(compat):
    for path in ("/wp-json/wp/v2/users", "/wp-json/wp/v2/posts", "/wp-json/tribe/tickets/v1/tickets",
                 "/wp-json/tec/v1/tickets",
                 "/wp-json/tribe/events/v2/events", "/wp-json/tribe/events/v1x"):
        r = compat.get(path, headers=mcp_headers())
        assert r.status_code == 404, path
        assert r.get_json()["code"] == "rest_no_route"


# ----------------------------------------------------------------------------- no URL leaks across prefixes


def test_every_url_follows_the_request_prefix_and_caches_never_leak(compat, factory):
    venue = factory.venue()
    organizer = factory.organizer()
    category = factory.category()
    tag = factory.tag()
    events = [factory.event(venue=venue["id"], organizer=[organizer["id"]], categories=[category["id"]],
                            tags=[tag["id"]]) for _ in range(3)]
    paths = ["", "/doc", "/events?per_page=1", "/events?per_page=1&page=2", f"/events/{events[0]['id']}",
             f"/events/by-slug/{events[1]['slug']}", "/venues", f"/venues/{venue['id']}",
             f"/venues/by-slug/{venue['slug']}", "/organizers", f"/organizers/{organizer['id']}",
             "/categories", f"/categories/{category['id']}", "/tags", f"/tags/{tag['id']}",
             f"/events/{events[0]['id']}/revisions", "/changes"]
    # alternate prefixes so every cache (presented objects, index, /doc) is filled by the other one first
    for round_ in range(2):
        for path in paths:
            for base, other in ((API, "/wp-json/"), (WP, "/calendar/events/v1")) if round_ == 0 else \
                    ((WP, "/calendar/events/v1"), (API, "/wp-json/")):
                r = compat.get(base + path, headers={"Authorization": ADMIN})
                assert r.status_code == 200, (base + path, r.get_json())
                body = r.get_json()
                if path == "/doc":  # the other prefix is listed on purpose, as a second server
                    assert body["servers"][0]["url"] == "http://localhost" + base + "/"
                    body = {**body, "servers": body["servers"][:1]}
                found = rest_urls(body) + [u for u in r.headers.get("Link", "").replace("<", " ").replace(">", " ").split()
                                            if u.startswith("http")]
                assert not [u for u in found if other in u], (base + path, found)
                if path.startswith("/events?"):
                    assert found and all(u.startswith("http://localhost" + base) for u in found)
    r = compat.get(WP + f"/events/{events[0]['id']}").get_json()
    assert r["rest_url"] == f"http://localhost{WP}/events/{events[0]['id']}"
    assert r["url"] == f"http://localhost/event/{events[0]['slug']}/"  # permalinks are the site's, not the API's
    assert r["venue"]["url"] == f"http://localhost/venue/{venue['slug']}/"


def test_writes_under_the_compat_prefix_answer_with_compat_urls(compat, repo):
    created = compat.post(WP + "/events", headers=mcp_headers(), data=json.dumps(
        {"title": "Compat Concert", "start_date": "2030-05-01 20:00:00", "end_date": "2030-05-01 22:00:00",
         "venue": {"venue": "Compat Hall"}}))
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert body["rest_url"] == f"http://localhost{WP}/events/{body['id']}"
    assert rest_urls(body) and all("/wp-json/tribe/events/v1/" in u for u in rest_urls(body))
    native = compat.get(f"{API}/events/{body['id']}").get_json()
    assert native["rest_url"] == f"http://localhost{API}/events/{body['id']}"
    assert "Compat Concert" in repo.last_message()


def test_etags_hold_across_prefixes(compat, factory):
    event = factory.event()
    native = compat.get(f"{API}/events/{event['id']}")
    wp = compat.get(f"{WP}/events/{event['id']}")
    assert native.headers["ETag"] == wp.headers["ETag"]  # a hash of the body at a fixed base, as for hosts
    assert native.get_json() != wp.get_json()
    again = compat.get(f"{WP}/events/{event['id']}", headers={"If-None-Match": native.headers["ETag"]})
    assert again.status_code == 304
    updated = compat.put(f"{WP}/events/{event['id']}", headers={**mcp_headers(), "If-Match": native.headers["ETag"]},
                         data=json.dumps({"title": "Renamed"}))
    assert updated.status_code == 200, updated.get_json()
    assert updated.get_json()["rest_url"].startswith("http://localhost" + WP)
    stale = compat.put(f"{API}/events/{event['id']}", headers={**mcp_headers(), "If-Match": native.headers["ETag"]},
                       data=json.dumps({"title": "Again"}))
    assert stale.status_code == 412


# ----------------------------------------------------------------------------- /doc and its UI


@pytest.mark.parametrize("language", list(i18n.LANGUAGES))
def test_doc_describes_both_prefixes_in_every_language(compat, language):
    native = compat.get(f"{API}/doc?i18n_language={language}").get_json()["servers"]
    wp = compat.get(f"{WP}/doc?i18n_language={language}").get_json()["servers"]
    assert [s["url"] for s in native] == ["http://localhost/calendar/events/v1/", f"http://localhost{WP}/"]
    assert [s["url"] for s in wp] == [f"http://localhost{WP}/", "http://localhost/calendar/events/v1/"]
    assert native[0]["description"] == wp[1]["description"] and native[1]["description"] == wp[0]["description"]
    from calendar_service.http.docs import SERVER_TEXT
    for server, text in zip(native, SERVER_TEXT.values()):
        assert server["description"] == i18n.gettext(text, language)
        if language != "en":
            assert server["description"] != text, language  # translated, not the English copy
    assert "CALENDAR_WP_COMPAT" in native[1]["description"] and "/wp-json/" in native[1]["description"]


def test_doc_ui_under_the_compat_prefix_reads_the_compat_doc(compat):
    page = compat.get(WP + "/doc/ui").get_data(as_text=True)
    assert f'data-url="{WP}/doc"' in page and f'src="{WP}/doc/ui/swagger-ui-bundle.js"' in page
    assert "/calendar/events/v1" not in page
    assert compat.get(WP + "/doc/ui/init.js").status_code == 200


# ----------------------------------------------------------------------------- the MCP server's requests


def test_mcp_server_request_patterns(compat, factory):
    category = factory.category()
    venue = factory.venue()
    for n in range(3):
        factory.event(title=f"MCP listed {n}", start_date=f"2030-03-0{n + 1} 10:00:00",
                      end_date=f"2030-03-0{n + 1} 12:00:00", categories=[category["id"]], venue=venue["id"])
    get = lambda path: compat.get(path, headers=mcp_headers())  # noqa: E731 (GETs carry the JSON content type)

    # listPosts('event', {start_date, end_date, categories: [id], per_page, page}); arrays joined by commas
    r = get(f"{WP}/events?start_date=2030-03-01&end_date=2030-03-31&categories={category['id']},{category['id']}"
            f"&per_page=2&page=1")
    assert r.status_code == 200, r.get_json()
    listed = r.get_json()
    assert [e["title"] for e in listed["events"]] == ["MCP listed 0", "MCP listed 1"]
    assert listed["total"] == 3 and listed["next_rest_url"].startswith(f"http://localhost{WP}/events/")
    # searchPosts: the same list with search=
    r = get(f"{WP}/events?search=listed&start_date=2030-03-01&end_date=2030-03-31")
    assert len(r.get_json()["events"]) == 3
    r = get(f"{WP}/venues?search={venue['venue'].split()[0]}&per_page=100")  # enforcePerPageLimit caps at 100
    assert r.status_code == 200 and venue["id"] in [v["id"] for v in r.get_json()["venues"]]

    # createPost / getPost / updatePost / deletePost for events, venues and organizers
    payloads = {
        "events": ({"title": "MCP Event", "start_date": "2030-04-01 10:00:00", "end_date": "2030-04-01 11:00:00",
                    "venue": [venue["id"]], "status": "publish"}, {"title": "MCP Event (moved)"}),
        "venues": ({"venue": "MCP Venue", "city": "Ghent", "country": "Belgium"}, {"city": "Bruges"}),
        "organizers": ({"organizer": "MCP Organizer", "email": "mcp@example.org"}, {"phone": "+32 9 000 00 00"}),
    }
    for resource, (create, update) in payloads.items():
        created = compat.post(f"{WP}/{resource}", headers=mcp_headers(), data=json.dumps(create))
        assert created.status_code == 201, (resource, created.get_json())
        item = created.get_json()
        assert item["rest_url" if resource == "events" else "id"]
        fetched = get(f"{WP}/{resource}/{item['id']}")
        assert fetched.status_code == 200 and fetched.get_json()["id"] == item["id"]
        changed = compat.put(f"{WP}/{resource}/{item['id']}", headers=mcp_headers(), data=json.dumps(update))
        assert changed.status_code == 200, (resource, changed.get_json())
        for key, value in update.items():
            assert changed.get_json()[key] == value
        trashed = compat.delete(f"{WP}/{resource}/{item['id']}", headers=mcp_headers())
        assert trashed.status_code == 200, (resource, trashed.get_json())
    # deletePost(..., force=true) adds ?force=true: the trash is emptied from the command line, so the
    # record goes to the trash all the same
    event = factory.event()
    r = compat.delete(f"{WP}/events/{event['id']}?force=true", headers=mcp_headers())
    assert r.status_code == 200 and r.get_json()["status"] == "trash"
    assert r.get_json()["rest_url"] == f"http://localhost{WP}/events/{event['id']}"

    # errors come back in WordPress' envelope, which ApiError.fromWPError reads (code, message, data.status)
    r = get(f"{WP}/events/999999")
    body = r.get_json()
    assert r.status_code == 404 and body["data"]["status"] == 404 and body["code"] and body["message"]
    bad = compat.post(f"{WP}/organizers", headers=mcp_headers(), data=json.dumps({"organizer": 12345}))
    assert bad.status_code == 400 and bad.get_json()["data"]["params"] == {"organizer": "Invalid parameter."}
    # the later releases' header acknowledging an experimental API changes nothing
    r = get(f"{WP}/events/{event['id']}")
    assert compat.get(f"{WP}/events/{event['id']}", headers=mcp_headers({"X-TEC-EEA": "I understand"})).get_json() \
        == r.get_json()


def test_mcp_site_info_reads_the_discovery_index(compat):
    # getSiteInfo: GET {baseUrl}/wp-json/ first (name, url, home, gmt_offset, timezone_string), then
    # /wp-json/wp/v2/users/me and /wp-json/wp/v2/settings (test_tec_v1 checks those)
    root = compat.get("/wp-json/", headers=mcp_headers()).get_json()
    assert {"name", "description", "url", "home", "gmt_offset", "timezone_string"} <= set(root)
    assert compat.get("/wp-json/wp/v2/users/me", headers=mcp_headers()).status_code == 200


# ----------------------------------------------------------------------------- a feed adapter


def test_feed_adapter_follows_next_rest_url(compat, factory):
    for n in range(7):
        factory.event(title=f"Feed {n}", start_date=f"2031-01-{n + 10} 09:00:00", end_date=f"2031-01-{n + 10} 10:00:00")
    site = "http://localhost"
    api_root = urljoin(site.rstrip("/") + "/", "/wp-json/tribe/events/v1/")
    url = urljoin(api_root, "events") + "?start_date=2031-01-01&end_date=2031-01-31&per_page=3"
    seen, pages = [], 0
    while url:
        parts = urlsplit(url)
        assert parts.netloc == "localhost" and parts.path.startswith(WP)
        r = compat.get(parts.path + ("?" + parts.query if parts.query else ""))
        assert r.status_code == 200, r.get_json()
        body = r.get_json()
        seen += [e["title"] for e in body["events"]]
        url = body.get("next_rest_url")
        pages += 1
        assert pages <= 5
    assert seen == [f"Feed {n}" for n in range(7)] and pages == 3
    # the same with the trailing slash the original's archive URLs carry
    assert compat.get(WP + "/events/?start_date=2031-01-01&end_date=2031-01-31").get_json()["total"] == 7


# ----------------------------------------------------------------------------- fidelity points


@pytest.mark.parametrize("resource", ["events", "venues", "organizers"])
@pytest.mark.parametrize("base", [API, WP])
def test_by_slug_with_an_encoded_newline_is_a_400_like_a_tab(compat, resource, base):
    tab = compat.get(f"{base}/{resource}/by-slug/abc%09")
    newline = compat.get(f"{base}/{resource}/by-slug/abc%0A")
    assert tab.status_code == newline.status_code == 400
    assert newline.get_json()["code"] == "rest_invalid_param"
    assert newline.get_json() == tab.get_json()
    for method in ("put", "delete"):
        r = getattr(compat, method)(f"{base}/{resource}/by-slug/abc%0A", headers=mcp_headers(), data="{}")
        assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param"


NON_STRINGS = [12345, 1.5, True, False, ["a"], {"name": "x"}]


@pytest.mark.parametrize("value", NON_STRINGS, ids=repr)
@pytest.mark.parametrize("resource,key", [("organizers", "organizer"), ("venues", "venue"), ("events", "title"),
                                           ("categories", "name"), ("tags", "name")])
def test_a_name_that_is_not_a_json_string_is_refused(as_role, repo, resource, key, value):
    admin = as_role("administrator")
    before = repo.count()
    body = {key: value}
    if resource == "events":
        body.update(start_date="2030-01-01 10:00:00", end_date="2030-01-01 11:00:00")
    r = admin.post(f"/{resource}", json=body)
    assert r.status_code == 400, r.get_json()
    error = r.get_json()
    assert error["code"] == "rest_invalid_param"
    assert error["message"] == f"Invalid parameter(s): {key}"
    assert error["data"]["params"] == {key: "Invalid parameter."}
    assert repo.count() == before


@pytest.mark.parametrize("value", NON_STRINGS, ids=repr)
def test_updates_and_nested_records_refuse_non_string_names_too(as_role, factory, repo, value):
    admin = as_role("administrator")
    organizer, venue = factory.organizer(), factory.venue()
    before = repo.count()
    for path, body in ((f"/organizers/{organizer['id']}", {"organizer": value}),
                       (f"/venues/{venue['id']}", {"venue": value}),
                       (f"/organizers/by-slug/{organizer['slug']}", {"organizer": value})):
        r = admin.put(path, json=body)
        assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param", (path, r.get_json())
    event = {"title": "Nested", "start_date": "2030-01-01 10:00:00", "end_date": "2030-01-01 11:00:00"}
    for key, nested in (("venue", {"venue": value}), ("organizer", [{"organizer": value}])):
        r = admin.post("/events", json={**event, key: nested})
        assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param", (key, r.get_json())
    assert repo.count() == before


def test_a_form_encoded_name_of_digits_is_still_a_name(as_role):
    admin = as_role("administrator")
    r = admin.post("/organizers", data={"organizer": "12345"})
    assert r.status_code == 201 and r.get_json()["organizer"] == "12345"
    r = admin.post("/venues", json={"venue": "12345"})
    assert r.status_code == 201 and r.get_json()["venue"] == "12345"


# ----------------------------------------------------------------------------- a real server


def test_a_real_server_serves_the_compat_prefix(paths):
    """gunicorn with CALENDAR_WP_COMPAT=1: the MCP server's first requests over real HTTP."""
    server = Server(paths, "gunicorn", workers=1, extra_env={"CALENDAR_WP_COMPAT": "1"})
    try:
        server.start()

        def call(method, path, body=None):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            try:
                conn.request(method, path, body=json.dumps(body) if body is not None else None,
                             headers=mcp_headers())
                response = conn.getresponse()
                return response.status, json.loads(response.read() or b"null"), response.getheader("Link")
            finally:
                conn.close()

        host = f"http://127.0.0.1:{server.port}"
        status, root, _ = call("GET", "/wp-json/")
        assert status == 200 and root["namespaces"] == ["tribe/events/v1", "tec/v1", "wp/v2"]
        status, created, _ = call("POST", WP + "/events", {"title": "Live", "start_date": "2030-02-01 10:00:00",
                                                           "end_date": "2030-02-01 11:00:00"})
        assert status == 201 and created["rest_url"] == f"{host}{WP}/events/{created['id']}"
        call("POST", WP + "/events", {"title": "Live 2", "start_date": "2030-02-02 10:00:00",
                                      "end_date": "2030-02-02 11:00:00"})
        status, listed, link = call("GET", WP + "/events?start_date=2030-02-01&end_date=2030-02-28&per_page=1")
        assert status == 200 and listed["next_rest_url"].startswith(f"{host}{WP}/events/")
        assert link.startswith(f"<{host}{WP}/events/")
        status, error, _ = call("GET", WP + "/events/by-slug/abc%0A")
        assert status == 400 and error["code"] == "rest_invalid_param"
        status, native, _ = call("GET", f"{API}/events/{created['id']}")
        assert status == 200 and native["rest_url"] == f"{host}{API}/events/{created['id']}"
    finally:
        server.kill()

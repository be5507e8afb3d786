"""Hostile input across every write route and every list route: wrong types in every field,
impossible dates, unknown ids, malformed and deeply nested JSON, wrong content types, bodies
over the limit, unicode, NUL and control characters, path-traversal slugs, huge and negative
numbers. Every request gets a 2xx (when the value is legitimately valid) or a 4xx with the
envelope; never a 500, never a commit on a 4xx, never a file outside the content folders.

The fields tried are read from the route table, so a new argument is covered without
editing this file.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from calendar_service.domain.record_files import is_safe_slug, resource_of_path
from calendar_service.domain.resources import RESOURCES
from calendar_service.http.arguments import create_args
from calendar_service.http.checks import NONEMPTY, STRING_OR_EMPTY
from calendar_service.http.routes import ROUTES
from conftest import API, Client

ENVELOPE_KEYS = {"code", "message", "data"}

# values of the wrong type (or impossible) for any field, sent one field at a time
TYPE_VALUES = [{}, [], ["x", {"y": [1]}], 1.5, -1, 0, 10**30, True, "", "\x00", "\ud800"]
# odd text, sent in every text field of a record at once (each one is a legitimate string)
TEXT_VALUES = ["   ", "\x07\x1b[31mred\x0b\x7f\u2028", "😀 émoji ✓ 日本語", "../../etc/passwd", "x" * 5000, None]
IMPOSSIBLE_DATES = ["2026-02-30", "99999-01-01", "", "   ", "2026-13-01", "0000-00-00 00:00:00", "24:61",
                    "tomorrow +99999999999 years", -(10**30), 10**30, 1e308, "@99999999999999999999"]
SLUGS = ["../../etc/passwd", "..%2f..%2fetc%2fpasswd", "a/b", ".git", "..", ".", "CON", "nul", "aux.md",
         "com1", "x" * 300, "%00", "evil\x00name", "ÉVÉNEMENT", "😀", " lead", "UPPER", "-dash-", "a\\b"]
LIST_VALUES = [str(10**30), "-1", "0", "1.5", "abc", "", "\x00", "😀"]


def assert_envelope(response, expect_status: int | None = None) -> dict:
    assert response.mimetype == "application/json", (response.status_code, response.headers.get("Content-Type"))
    body = json.loads(response.get_data(as_text=True))
    assert isinstance(body, dict) and ENVELOPE_KEYS <= set(body), body
    assert isinstance(body["code"], str) and body["code"] and isinstance(body["message"], str), body
    assert body["data"]["status"] == response.status_code, body
    if expect_status is not None:
        assert response.status_code == expect_status, body
    return body


class Checker:
    """Sends requests and checks each answer against the rules, counting commits."""

    def __init__(self, app, repo):
        self.client = Client(app.test_client(), "administrator")
        self.raw = app.test_client()
        self.repo = repo
        self.failures: list[str] = []
        self.seen = 0

    def head(self) -> str:
        # the ref file itself: a git process per request would double the test's time
        return (self.repo.root / ".git" / "refs" / "heads" / "main").read_text().strip()

    def send(self, method: str, path: str, label: str, **kwargs):
        head = self.head()
        response = getattr(self.client, method)(path, **kwargs)
        self.check(response, head, f"{method.upper()} {path} {label}")
        return response

    def check(self, response, head_before: str, label: str) -> None:
        self.seen += 1
        status = response.status_code
        try:
            if status >= 500:
                raise AssertionError(f"server error {status}: {response.get_data(as_text=True)[:200]}")
            if status >= 400:
                assert_envelope(response)
                assert self.head() == head_before, "a refused request made a commit"
            else:
                assert 200 <= status < 300, status
                json.loads(response.get_data(as_text=True))
        except (AssertionError, ValueError) as exc:
            self.failures.append(f"{label[:160]!r}: {str(exc)[:300]}")

    def done(self) -> None:
        assert not self.failures, f"{len(self.failures)} of {self.seen} requests misbehaved:\n" + \
            "\n".join(self.failures[:40])


def valid_body(resource: str, n: int) -> dict:
    return {
        "events": {"title": f"Hostile {n}", "start_date": "2030-01-01 10:00", "end_date": "2030-01-01 11:00"},
        "venues": {"venue": f"Hostile venue {n}"},
        "organizers": {"organizer": f"Hostile organizer {n}"},
        "categories": {"name": f"Hostile category {n}"},
        "tags": {"name": f"Hostile tag {n}"},
    }[resource]


def write_routes(world) -> list[tuple[str, str, str, tuple]]:
    """(resource, method, path, argument names) for every create and update route."""
    out = []
    for route in ROUTES:
        if route.resource is None:
            continue
        name = route.resource.name
        record = world[name][0]
        path = route.pattern.replace(r"(?P<id>\d+)", str(record["id"])).replace("(?P<slug>[^/]+)", record["slug"])
        for endpoint in route.endpoints:
            if endpoint.name in ("create", "update"):
                args = tuple(a.name for a in endpoint.args if a.location == "body")
                out.append((name, "post" if endpoint.name == "create" else "patch", path, args))
    return out


def assert_files_inside_content(repo) -> None:
    """Every committed and every working-tree file is a safe record file in a content folder."""
    committed = [p for p in repo("ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0") if p]
    for path in committed:
        folder, _, name = path.rpartition("/")
        assert resource_of_path(path) is not None and folder.split("/")[0] in RESOURCES, path
        stem = name.rsplit(".", 1)[0]
        assert is_safe_slug(stem), path
        assert stem.split(".")[0].lower() not in WINDOWS_RESERVED, path
    for dirpath, dirnames, filenames in os.walk(repo.root):
        rel = Path(dirpath).relative_to(repo.root)
        if rel.parts[:1] == (".git",):
            continue
        for filename in filenames:
            relative = (rel / filename).as_posix()
            assert relative in committed, f"stray file {relative}"
    outside = Path(repo.root).parent
    assert sorted(p.name for p in outside.iterdir()) == ["content", "index", "users.yaml"]


WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


# ----------------------------------------------------------------------------- every field of every write route


def test_wrong_types_in_every_field_of_every_write_route(app, repo, world):
    """Each (resource, field, value) is sent once, the routes of a resource taking turns
    (create, update by id, update by slug), so every route sees every field; a successful
    write costs a commit, so the table is not multiplied by the routes."""
    checker = Checker(app, repo)
    routes: dict[str, list] = {}
    for resource, method, path, args in write_routes(world):
        routes.setdefault(resource, []).append((method, path, set(args)))
    n = 0
    for resource, variants in routes.items():
        fields = sorted(set().union(*(args for _, _, args in variants)))
        turn = 0
        for arg in fields:
            for value in TYPE_VALUES:
                candidates = [v for v in variants if arg in v[2]]
                method, path, _ = candidates[turn % len(candidates)]
                turn += 1
                n += 1
                base = valid_body(resource, n) if method == "post" else {}
                checker.send(method, path, f"{arg}={value!r:.60}", json={**base, arg: value})
        text_fields = [a.name for a in create_args(RESOURCES[resource]) if a.type == "string" or a.check in (
            STRING_OR_EMPTY, NONEMPTY)]
        for i, value in enumerate(TEXT_VALUES):
            method, path, args = variants[i % len(variants)]
            n += 1
            base = valid_body(resource, n) if method == "post" else {}
            body = {**base, **{f: value for f in text_fields if f in args and f != "slug"}}
            if value is not None and method == "post":
                body[RESOURCES[resource].title_key] = f"{value} {n}"
            checker.send(method, path, f"all text={value!r:.60}", json=body)
    checker.done()
    assert checker.seen > 600
    assert_files_inside_content(repo)
    fsck(repo)


@pytest.mark.parametrize("key", ["start_date", "end_date", "date", "date_utc"])
def test_impossible_dates_are_400_and_leave_nothing(admin, repo, world, key):
    before = repo.count()
    for value in IMPOSSIBLE_DATES:
        body = {**valid_body("events", 0), key: value}
        response = admin.post("/events", json=body)
        if value in ("", "   ") and key in ("date", "date_utc"):
            assert response.status_code in (201, 400), response.get_json()  # empty publication date = now
            before = repo.count()
            continue
        assert_envelope(response, 400)
        assert repo.count() == before, value
        response = admin.patch(f"/events/{world['events'][0]['id']}", json={key: value})
        if value in ("", "   ") and key in ("start_date", "end_date"):
            assert_envelope(response, 400)
        elif response.status_code != 200:
            assert_envelope(response, 400)
        assert repo.count() == before, value


def test_unknown_ids_everywhere(admin, anon, repo, world):
    before = repo.count()
    huge = 10**30
    for resource in RESOURCES:
        for ident in (0, 999999, huge, -1):
            for client, method in ((anon, "get"), (admin, "patch"), (admin, "delete")):
                response = getattr(client, method)(f"/{resource}/{ident}", json={})
                assert 400 <= response.status_code < 500, (resource, ident, method)
                assert_envelope(response)
    for key in ("venue", "organizer", "categories", "tags"):
        for ident in (999999, huge, -5, "999999"):
            response = admin.post("/events", json={**valid_body("events", 1), key: [ident]})
            assert response.status_code < 500
            if response.status_code >= 400:
                assert_envelope(response)
    for key, value in (("author", 999999), ("author", huge), ("parent", 999999), ("parent", huge)):
        target = "/categories" if key == "parent" else "/venues"
        body = valid_body("categories" if key == "parent" else "venues", 7)
        assert_envelope(admin.post(target, json={**body, key: value}), 400)
    assert repo.count() <= before + 8  # unknown term ids are skipped (as the original), names make terms
    fsck(repo)


# ----------------------------------------------------------------------------- bodies


@pytest.mark.parametrize("resource", list(RESOURCES))
def test_malformed_bodies_and_content_types(app, repo, world, resource):
    checker = Checker(app, repo)
    record = world[resource][0]
    before = repo.count()
    paths = [f"/{resource}", f"/{resource}/{record['id']}"]
    if RESOURCES[resource].by_slug:
        paths.append(f"/{resource}/by-slug/{record['slug']}")
    bad_json = [b"{", b'{"a":', b"{'a': 1}", b"\xff\xfe\x00{", b'{"a": 1} {}', b"[" * 10000, b'{"a": NaN}',
                b'{"a": Infinity}', b'{"a": 1e99999}', b'{"\xc3\x28": 1}', b"\x00", b'"just a string"',
                b"null", b"{" * 100000, b'{"title": "x", "title": ' + b"[" * 200 + b"]" * 200 + b"}"]
    nested = "{" + '"a":{' * 40 + "}" * 40 + "}"
    for path in paths:
        for raw in bad_json:
            checker.send("post", path, f"json {raw[:20]!r}", data=raw, content_type="application/json")
        checker.send("post", path, "nested 40", data=nested, content_type="application/json")
        for ctype, raw in (("text/plain", "title=x"), ("application/xml", "<event><title>x</title></event>"),
                           ("text/html", "<h1>x</h1>"), ("application/octet-stream", b"\x00\x01\x02"),
                           ("", "garbage"), ("application/json; charset=latin-1", '{"title": "\xe9"}'),
                           ("multipart/form-data; boundary=zz", "--zz\r\nbroken"),
                           ("application/x-www-form-urlencoded", "title=%ZZ&x[[[]=1"),
                           ("application/x-www-form-urlencoded", "a" + "[x]" * 50 + "=1")):
            checker.send("post", path, f"content type {ctype}", data=raw, content_type=ctype)
    checker.done()
    # none of the refused bodies was a legitimate write except possibly form/plain ones that name
    # no valid fields on an update (a no-op update is a valid write)
    assert repo.count() - before <= len(paths) * 12
    assert_files_inside_content(repo)


def test_multipart_bodies_are_read_like_forms(admin, repo):
    response = admin.post("/events", data={"title": "Multipart ✓", "start_date": "2030-01-01 10:00",
                                           "end_date": "2030-01-01 11:00"}, content_type="multipart/form-data")
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["title"] == "Multipart ✓"


@pytest.mark.parametrize("limit", [200, 1000])
def test_bodies_over_a_small_configured_limit_are_413(make_app, repo, limit):
    app = make_app(max_body_bytes=limit)
    admin = Client(app.test_client(), "administrator")
    world_event = admin.post("/events", json={"title": "E", "start_date": "2030-01-01", "end_date": "2030-01-01"})
    assert world_event.status_code == 201
    ident = world_event.get_json()["id"]
    before = repo.count()
    big = "é" * limit  # two bytes each in UTF-8
    for resource, body in (("events", {"title": big}), ("venues", {"venue": big}), ("organizers", {"organizer": big}),
                           ("categories", {"name": big}), ("tags", {"name": big})):
        for path in (f"/{resource}", f"/{resource}/{ident}"):
            assert_envelope(admin.post(path, json=body), 413)
            assert_envelope(admin.post(path, data={"x": big}), 413)
            assert_envelope(admin.post(path, data=big.encode(), content_type="text/plain"), 413)
    assert repo.count() == before


def test_chunked_bodies_are_limited_on_a_real_server(paths, repo):
    """A chunked body has no Content-Length: it is read and refused whole (413), never cut at the
    limit and misread as malformed JSON; a small one is written."""
    import base64
    import http.client

    from conftest import PASSWORDS
    from servers import Server

    server = Server(paths, "gunicorn", workers=1, extra_env={"CALENDAR_MAX_BODY_BYTES": "300"})
    results = []
    try:
        server.start()
        for title in ("é" * 400, "Small chunked"):
            body = json.dumps({"title": title, "start_date": "2030-01-01", "end_date": "2030-01-01"}).encode()
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.putrequest("POST", API + "/events")
            token = base64.b64encode(f"administrator:{PASSWORDS['administrator']}".encode()).decode()
            conn.putheader("Authorization", f"Basic {token}")
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            half = len(body) // 2
            conn.send(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half, body[half:]))
            response = conn.getresponse()
            results.append((response.status, json.loads(response.read())))
            conn.close()
    finally:
        server.kill()
    (big_status, big), (small_status, small) = results
    assert big_status == 413 and big["code"] == "rest_request_too_large" and big["data"]["status"] == 413, big
    assert small_status == 201 and small["title"] == "Small chunked", small
    assert repo.count() == 1


# ----------------------------------------------------------------------------- text values


def test_unicode_and_emoji_round_trip(admin, anon, repo):
    title = "Fête 😀 naïve — 日本語 עברית 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"
    response = admin.post("/events", json={"title": title, "start_date": "2030-01-01 10:00",
                                           "end_date": "2030-01-01 11:00", "description": "<p>🎉 Ünïcödé</p>",
                                           "venue": {"venue": "Café ☕", "city": "Zürich"},
                                           "categories": ["Música 🎵"], "cost": "€ 5"})
    assert response.status_code == 201, response.get_json()
    event = response.get_json()
    assert event["title"] == title
    assert is_safe_slug(event["slug"]) and event["slug"].startswith("fete-naive")
    again = anon.get(f"/events/{event['id']}").get_json()
    assert again["title"] == title and "🎉 Ünïcödé" in again["description"]
    assert again["venue"]["venue"] == "Café ☕" and again["categories"][0]["name"] == "Música 🎵"
    assert_files_inside_content(repo)
    # a name without any ASCII letter still gets a safe file name
    for resource, body in (("venues", {"venue": "😀😀"}), ("tags", {"name": "日本語"}), ("categories", {"name": "🎵"})):
        response = admin.post(f"/{resource}", json=body)
        assert response.status_code == 201, response.get_json()
        assert is_safe_slug(response.get_json()["slug"])
    assert_files_inside_content(repo)


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "title\x00.md"])
def test_nul_bytes_are_refused_in_every_text_field(admin, repo, world, value):
    before = repo.count()
    for resource, key in (("events", "title"), ("events", "description"), ("events", "excerpt"),
                          ("venues", "venue"), ("venues", "address"), ("organizers", "organizer"),
                          ("organizers", "email"), ("categories", "name"), ("tags", "description"),
                          ("events", "slug"), ("events", "cost"), ("events", "website"),
                          ("events", "timezone"), ("venues", "phone")):
        response = admin.post(f"/{resource}", json={**valid_body(resource, 3), key: value})
        assert_envelope(response, 400)
        response = admin.patch(f"/{resource}/{world[resource][0]['id']}", json={key: value})
        assert_envelope(response, 400)
    assert repo.count() == before


def test_control_characters_never_break_a_file(admin, anon, repo):
    title = "Bell\x07 escape\x1b[31m tab\t cr\r lf\n vt\x0b ff\x0c del\x7f line\u2028sep"
    response = admin.post("/events", json={"title": title, "start_date": "2030-01-01 10:00",
                                           "end_date": "2030-01-01 11:00", "description": "a\r\nb\x1bc"})
    assert response.status_code in (201, 400), response.get_json()
    if response.status_code == 201:
        event = response.get_json()
        served = anon.get(f"/events/{event['id']}").get_json()
        assert served["id"] == event["id"]
        # the file reloads from git (a file the loader refuses would not be served)
        assert anon.get("/events", query_string={"include": event["id"]}).get_json()["total"] == 1
    assert_files_inside_content(repo)
    fsck(repo)


# ----------------------------------------------------------------------------- slugs


@pytest.mark.parametrize("resource", list(RESOURCES))
def test_path_traversal_and_reserved_slugs_never_name_a_file(admin, anon, repo, world, resource):
    checker = Checker(admin.c.application, repo)
    for n, slug in enumerate(SLUGS):
        if n % 2:
            checker.send("patch", f"/{resource}/{world[resource][0]['id']}", f"slug={slug!r}", json={"slug": slug})
        else:
            checker.send("post", f"/{resource}", f"slug={slug!r}", json={**valid_body(resource, 100 + n), "slug": slug})
        if RESOURCES[resource].by_slug:
            for path in (f"/{resource}/by-slug/{slug}", f"/{resource}/by-slug/{slug}/x"):
                for method in ("get", "patch", "delete"):
                    checker.send(method, path, "", json={})
    checker.done()
    assert_files_inside_content(repo)
    fsck(repo)


def test_raw_traversal_paths_are_no_route(app, repo):
    raw = app.test_client()
    head = repo.head() if repo.count() else None
    for path in ("/events/by-slug/..%2f..%2fetc%2fpasswd", "/events/by-slug/../../etc/passwd",
                 "/events/by-slug/%2e%2e", "/events/../../../etc/passwd", "/venues/by-slug/.git",
                 "/events/by-slug/%00", "/events/by-slug/" + "a" * 5000, "/events/1%00", "/events/%F0%9F%98%80"):
        for method in ("get", "post", "delete"):
            response = getattr(raw, method)(API + path, json={})
            assert 400 <= response.status_code < 500, (path, response.status_code)
            assert_envelope(response)
    assert (repo.head() if repo.count() else None) == head


def test_windows_reserved_names_get_another_file_name(admin, repo):
    for title in ("CON", "nul", "Aux", "com1", "LPT9", "prn"):
        response = admin.post("/venues", json={"venue": title})
        assert response.status_code == 201
        slug = response.get_json()["slug"]
        assert slug.lower() not in WINDOWS_RESERVED and is_safe_slug(slug), slug
        response = admin.post("/tags", json={"name": f"tag {title}", "slug": title})
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["slug"].lower() not in WINDOWS_RESERVED
    assert_files_inside_content(repo)


# ----------------------------------------------------------------------------- list routes


def test_list_routes_with_hostile_query_values(app, repo, world):
    checker = Checker(app, repo)
    for route in ROUTES:
        if route.resource is None:
            continue
        archive = route.endpoint_for("GET")
        if archive is None or archive.name != "archive":
            continue
        path = f"/{route.resource.name}"
        for arg in archive.args:
            for value in LIST_VALUES:
                checker.send("get", path, f"{arg.name}={value!r:.40}", query_string={arg.name: value})
            for query in (f"{arg.name}[]=1&{arg.name}[]=2", f"{arg.name}[a][b]=1", f"{arg.name}" + "[x]" * 20 + "=1"):
                checker.send("get", f"{path}?{query}", "")
    for query in ("page=" + "9" * 40, "per_page=" + "9" * 40, "page=-1", "per_page=-5", "page=1e3",
                  "per_page=1000000", "page=99999", "include=" + ",".join(["1"] * 5000)):
        for resource in RESOURCES:
            checker.send("get", f"/{resource}?{query}", "")
    checker.done()


def test_huge_per_page_is_capped_not_an_error(anon, factory):
    factory.event()
    response = anon.get("/events", query_string={"per_page": "50"})
    assert response.status_code == 200
    for value in ("10" + "0" * 30, "-1", "0"):
        assert_envelope(anon.get("/events", query_string={"per_page": value}), 400)
        assert_envelope(anon.get("/events", query_string={"page": value}), 400)


def fsck(repo) -> None:
    proc = subprocess.run(["git", "-C", str(repo.root), "fsck", "--full", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

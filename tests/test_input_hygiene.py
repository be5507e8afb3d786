"""Input hygiene: the Host header, caches that requests can fill, files that would not
read back, nested values stored raw, one slug rule, YAML aliases, e-mails that break iCal, log
redaction, commit subjects, numeric CLI options. Each test goes through the real stack."""
from __future__ import annotations

import gc
import json
import logging

import pytest
from werkzeug.test import EnvironBuilder, run_wsgi_app

from conftest import API


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# ------------------------------------------------------------------------- Host header

def test_unknown_hosts_are_400_and_local_names_answer(make_app, factory):
    factory.event(title="Hosted")
    client = make_app().test_client()
    for host in ("localhost", "localhost:5000", "127.0.0.1:8080", "[::1]:5000", "LOCALHOST"):
        r = client.get(API + "/events", headers={"Host": host})
        assert r.status_code == 200, (host, r.status_code)
    for host in ("evil.example", "localhost.evil.example", "h1.example:80", "bad host"):
        r = client.get(API + "/events", headers={"Host": host})
        assert r.status_code == 400, host
        assert r.get_json()["code"] == "rest_invalid_host"


def test_allowed_hosts_follow_djangos_convention(make_app):
    site = make_app(site_url="https://cal.example.org/sub").test_client()
    assert site.get(API + "/events", headers={"Host": "cal.example.org"}).status_code == 200
    assert site.get(API + "/events", headers={"Host": "other.example.org"}).status_code == 400
    domain = make_app(allowed_hosts=(".example.org",)).test_client()
    for host, status in (("example.org", 200), ("a.b.example.org:8443", 200), ("localhost", 400),
                         ("badexample.org", 400)):
        assert domain.get(API + "/events", headers={"Host": host}).status_code == status, host


def test_host_names_compare_as_djangos_do(make_app):
    """The answers werkzeug's host_is_trusted (Flask's TRUSTED_HOSTS) would not give: a trailing
    dot and case ignored, IPv6 literals compared whole, "*" still refusing a malformed Host, and
    an allowed name IDNA cannot encode never matching rather than failing every request."""
    cases = {(): (("Localhost.", 200), ("localhost.:5000", 200), ("[::1]:80", 200), ("[::2]", 400), ("[::2]:80", 400),
                  ("localhost:123456", 400)),
             ("*",): (("anything.example", 200), ("bad host", 400), ("localhost:123456", 400), ("[::]:", 400)),
             ("a..b", "localhost"): (("localhost", 200), ("other.example", 400))}
    for allowed, answers in cases.items():
        app = make_app(allowed_hosts=allowed)
        for host, status in answers:  # run directly: the test client cannot build a URL of some of these
            environ = EnvironBuilder(path=API + "/events").get_environ()
            environ["HTTP_HOST"] = host
            body, answered, _ = run_wsgi_app(app, environ, buffered=True)
            assert int(answered.split()[0]) == status, (allowed, host, answered)
            assert status == 200 or json.loads(b"".join(body))["code"] == "rest_invalid_host"


def test_a_foreign_host_is_refused_before_anything_else_on_every_path(make_app):
    client = make_app(max_body_bytes=1024).test_client()
    refused = {"code": "rest_invalid_host", "message": "The Host header names a host this service does not answer for.",
               "data": {"status": 400}}
    for method, path in (("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/nope"), ("GET", API + "/nope"),
                         ("OPTIONS", API + "/events"), ("POST", API + "/events"), ("POST", "/healthz")):
        r = client.open(path, method=method, headers={"Host": "evil.example"}, data=b"x" * 5000)  # over the body limit
        assert (r.status_code, r.get_json()) == (400, refused), (method, path)


def test_distinct_hosts_and_search_words_keep_memory_bounded(make_app, factory):
    for n in range(12):
        factory.event(title=f"Flood target {n}", description=f"<p>words number{n} alpha beta</p>")
    app = make_app(allowed_hosts=("*",))
    client = app.test_client()
    for n in range(300):  # warm up: every code path and allocator arena used once
        client.get(API + "/events", headers={"Host": f"warm{n}.example"})
        client.get(API + "/events", query_string={"search": f"warm{n}"})
    gc.collect()
    before = rss_mb()
    for n in range(10_000):
        r = client.get(API + "/events", headers={"Host": f"h{n}.example"})
        assert r.status_code == 200
        assert r.get_json()["events"][0]["url"].startswith(f"http://h{n}.example/")
    middle = rss_mb()
    for n in range(10_000):
        r = client.get(API + "/events", query_string={"search": f"w{n}x"})
        assert r.status_code in (200, 404) or r.status_code < 500
    gc.collect()
    after = rss_mb()
    print(f"RSS {before:.0f} MB, after 10,000 hosts {middle:.0f} MB, after 10,000 search words {after:.0f} MB")
    assert after - before < 50


# ------------------------------------------------------------------------- files that read back

def test_a_file_that_would_not_read_back_is_400_and_no_commit(as_role, repo, factory):
    contributor = as_role("contributor")
    before = repo.count()
    r = contributor.post(API + "/events", json={"title": "Old", "timezone": "Asia/Tokyo",
                                               "date": "1000-01-01 00:00:00",
                                               "start_date": "2026-05-01 10:00:00", "end_date": "2026-05-01 11:00:00"})
    assert r.status_code == 400, r.get_data(as_text=True)
    body = r.get_json()
    assert body["code"] == "rest_invalid_param" and "date" in body["data"]["params"]
    assert repo.count() == before and repo.status() == ""
    ok = contributor.post(API + "/events", json={"title": "Next", "start_date": "2026-05-01 10:00:00",
                                                "end_date": "2026-05-01 11:00:00"})
    assert ok.status_code == 201
    assert contributor.get(API + f"/events/{ok.get_json()['id']}").get_json()["title"] == "Next"


@pytest.mark.parametrize("status", [" publish", "publish\n", "PUBLISH"])
def test_nested_venue_and_organizer_values_are_normalized(admin, anon, repo, status):
    r = admin.post(API + "/events", json={
        "title": "Nested", "start_date": "2026-05-01 10:00:00", "end_date": "2026-05-01 11:00:00",
        "venue": {"venue": "  Nested Hall ", "status": status},
        "organizer": [{"organizer": "Nested Org", "status": status}]})
    if r.status_code == 400:  # refused like the top-level route: fine, as long as nothing was stored
        assert r.get_json()["code"] == "rest_invalid_param"
        return
    assert r.status_code == 201, r.get_data(as_text=True)
    event = r.get_json()
    venue_id, organizer_id = event["venue"]["id"], event["organizer"][0]["id"]
    assert anon.get(API + f"/venues/{venue_id}").get_json()["status"] == "publish"
    assert venue_id in [v["id"] for v in anon.get(API + "/venues").get_json()["venues"]]
    assert organizer_id in [o["id"] for o in anon.get(API + "/organizers").get_json()["organizers"]]
    text = (repo.root / "venues").joinpath(next(p.name for p in (repo.root / "venues").iterdir())).read_text()
    assert "status: publish\n" in text


# ------------------------------------------------------------------------- one slug rule

def test_new_and_import_clean_windows_device_names_like_the_api(paths, repo, admin, capsys):
    from zoneinfo import ZoneInfo

    from calendar_service.cli.commands import main
    from calendar_service.cli.importer import import_events
    from calendar_service.storage.store import GitStore

    api = admin.post(API + "/events", json={"title": "Lpt", "slug": "lpt1", "start_date": "2030-01-01 10:00:00",
                                            "end_date": "2030-01-01 11:00:00"}).get_json()
    content = paths["content_dir"]
    assert main(["new", "event", "--title", "Con", "--slug", "con", "--start", "2030-01-01",
                 "--end", "2030-01-01", "--dir", str(content)]) == 0
    assert main(["new", "organizer", "--title", "Aux", "--dir", str(content)]) == 0
    store = GitStore(content)
    try:
        import_events(store, [{"id": 900, "title": "Nul", "slug": "nul", "start_date": "2030-01-02 10:00:00",
                               "end_date": "2030-01-02 11:00:00", "organizer": [{"organizer": "Prn", "slug": "prn"}]}],
                      ZoneInfo("UTC"))
    finally:
        store.close()
    stems = {p.stem for folder in ("events", "organizers") for p in (content / folder).iterdir()}
    assert api["slug"] == "lpt1-1"
    assert not stems & {"con", "nul", "aux", "prn", "lpt1"}, stems


# ------------------------------------------------------------------------- e-mail, YAML aliases

def test_organizer_email_with_a_line_break_is_refused_and_never_hides_an_event(admin, anon, repo):
    r = admin.post(API + "/organizers", json={"organizer": "Broken Mail", "email": "a@example.org\nX-Evil: 1"})
    assert r.status_code == 400 and r.get_json()["code"] == "rest_invalid_param"
    nested = admin.post(API + "/events", json={"title": "Nested mail", "start_date": "2030-01-01 10:00:00",
                                               "end_date": "2030-01-01 11:00:00",
                                               "organizer": {"organizer": "N", "email": "n@example.org\r\n"}})
    assert nested.status_code in (201, 400)
    if nested.status_code == 201:
        assert nested.get_json()["organizer"][0]["email"] == "n@example.org"
    # a file edited by hand with such an address: the event stays in the feed
    organizer = admin.post(API + "/organizers", json={"organizer": "Hand Edited", "email": "h@example.org"}).get_json()
    path = repo.root / "organizers" / f"{organizer['slug']}.yaml"
    repo.commit_file(f"organizers/{organizer['slug']}.yaml",
                     path.read_text().replace("email: h@example.org", 'email: "h@example.org\\nX-Evil: 1"'))
    event = admin.post(API + "/events", json={"title": "Feed me", "start_date": "2030-01-02 10:00:00",
                                              "end_date": "2030-01-02 11:00:00",
                                              "organizer": [organizer["id"]]}).get_json()
    feed = anon.get(API + "/events", query_string={"ical": "1", "start_date": "2030-01-01", "end_date": "2030-12-31"}).get_data(as_text=True)
    assert "SUMMARY:Feed me" in feed
    assert "X-Evil" not in feed
    single = anon.get(API + f"/events/{event['id']}", query_string={"ical": "1"}).get_data(as_text=True)
    assert "SUMMARY:Feed me" in single


def test_yaml_anchors_and_aliases_are_refused_with_their_line(paths, repo, anon, make_app, capsys):
    from calendar_service.cli.commands import main

    lines = ["id: 5", "venue: Bomb", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 25)]
    repo.commit_file("venues/bomb.yaml", "\n".join(lines) + "\n")
    repo.commit_file("events/alias.md", "---\nid: 6\ntitle: Alias\nstart_date: 2030-01-01 10:00:00\n"
                                        "end_date: 2030-01-01 11:00:00\nextra: &x 1\n---\nbody\n")
    assert main(["validate", str(paths["content_dir"])]) == 1
    out = capsys.readouterr().out
    assert "venues/bomb.yaml:3: " in out and "events/alias.md:6: " in out and "alias" in out.lower()
    client = make_app().test_client()
    assert client.get(API + "/venues").status_code == 200
    assert client.get(API + "/events/6").status_code == 404


# ------------------------------------------------------------------------- commit subjects, CLI numbers

def test_commit_subjects_are_one_printable_line(admin, repo):
    title = "Gig\n\nSigned-off-by: Mallory <m@example.org>\x1b[31m red\r\u2028" + "x" * 500
    r = admin.post(API + "/events", json={"title": title, "start_date": "2030-01-01 10:00:00",
                                          "end_date": "2030-01-01 11:00:00",
                                          "tags": ["new\ntag\x1b[0m"]})
    assert r.status_code == 201, r.get_json()
    message = repo("log", "-1", "--format=%B")
    lines = message.splitlines()
    subject = lines[0]
    assert subject.startswith('Create event ') and "Signed-off-by: Mallory" in subject and len(subject) <= 120
    assert not any(line.startswith("Signed-off-by") for line in lines)
    assert "\x1b" not in message and "\r" not in message and "\u2028" not in message
    assert repo("log", "-1", "--format=%(trailers)").strip() == ""
    assert any(line.startswith('Create tag ') and "new tag" in line for line in lines)


@pytest.mark.parametrize("value", ["1e300", "nan", "inf", "-1", "abc"])
def test_numeric_cli_options_give_one_line_and_exit_2(paths, repo, value, capsys):
    from calendar_service.cli.commands import main

    with pytest.raises(SystemExit) as exited:
        main(["trash", "list", "--older-than", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "--older-than" in err, err


# ------------------------------------------------------------------------- log redaction

@pytest.mark.parametrize("query", ["password=ab'TAILSECRET", "password=ab%27TAILSECRET", "x=1&pass%77ord=a\"TAILSECRET",
                                   "PASSWORD=TAILSECRET&y=2", "token[]=a;TAILSECRET", "pwd=a=b=TAILSECRET"])
def test_secret_query_values_are_redacted_whole(make_app, query):
    from calendar_service.http.logs import RedactSecrets

    make_app()  # installs the filter on the access loggers
    access = logging.getLogger("werkzeug")
    assert any(isinstance(f, RedactSecrets) for f in access.filters)
    record = logging.LogRecord("werkzeug", logging.INFO, __file__, 1, '%s - - [x] "%s" %s -',
                               ("127.0.0.1", f"GET /calendar/events/v1/events/5?{query} HTTP/1.1", "403"), None)
    for f in access.filters:
        f.filter(record)
    line = record.getMessage()
    assert "TAILSECRET" not in line and "[redacted]" in line and line.endswith(' HTTP/1.1" 403 -'), line

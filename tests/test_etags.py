"""ETags on single reads, 304 on If-None-Match, 412 on a stale If-Match (checked under the
write lock against the head the write commits on), through HTTP."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import API

EDITOR = ("-c", "user.name=Editor", "-c", "user.email=editor@example.org")


def record_paths(factory) -> list[tuple[str, str | None]]:
    """(id path, by-slug path or None) for one record of each resource."""
    event, venue, organizer = factory.event(), factory.venue(), factory.organizer()
    category, tag = factory.category(), factory.tag()
    return [(f"/events/{event['id']}", f"/events/by-slug/{event['slug']}"),
            (f"/venues/{venue['id']}", f"/venues/by-slug/{venue['slug']}"),
            (f"/organizers/{organizer['id']}", f"/organizers/by-slug/{organizer['slug']}"),
            (f"/categories/{category['id']}", None), (f"/tags/{tag['id']}", None)]


def test_single_reads_carry_an_etag_and_answer_304(anon, factory):
    for by_id, by_slug in record_paths(factory):
        r = anon.get(by_id)
        tag = r.headers.get("ETag")
        assert r.status_code == 200 and tag and tag.startswith('"') and tag.endswith('"'), by_id
        if by_slug:
            assert anon.get(by_slug).headers["ETag"] == tag
        for header in (tag, f"W/{tag}", f'"nope", {tag}', "*"):
            cached = anon.get(by_id, headers={"If-None-Match": header})
            assert cached.status_code == 304 and cached.get_data() == b"" and cached.headers["ETag"] == tag, header
        assert anon.get(by_id, headers={"If-None-Match": '"other"'}).status_code == 200
        if by_slug:
            assert anon.get(by_slug, headers={"If-None-Match": tag}).status_code == 304


def test_a_tag_is_the_same_in_another_process(anon, factory, paths, tmp_path):
    """Bodies are cached with stand-in URLs that are random per process: a tag read from one
    worker or replica holds on another, so it must not hash them as they are."""
    venue, organizer = factory.venue(city="Lyon"), factory.organizer(email="o@example.org")
    event = factory.event(venue=venue["id"], organizer=[organizer["id"]])
    paths_read = [f"/events/{event['id']}", f"/venues/{venue['id']}", f"/organizers/{organizer['id']}"]
    here = {path: anon.get(path).headers["ETag"] for path in paths_read}
    other = {**{k: str(v) for k, v in paths.items()}, "index_dir": str(tmp_path / "index-2"),
             "state_dir": str(tmp_path / "state-2")}
    code = (f"import json; from calendar_service import create_app\n"
            f"app = create_app({{**json.loads({json.dumps(json.dumps(other))}), 'seed_sample': False, 'site_timezone': 'UTC'}})\n"
            f"client = app.test_client()\n"
            f"print(json.dumps({{p: client.get({API!r} + p).headers['ETag'] for p in {paths_read!r}}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == here


def test_the_etag_follows_the_body(admin, anon, factory):
    event = factory.event(venue={"venue": "Hall"}, organizer=[{"organizer": "Club"}], categories=["Rock"])
    path = f"/events/{event['id']}"
    first = anon.get(path).headers["ETag"]
    factory.venue()  # an unrelated write leaves it alone
    assert anon.get(path).headers["ETag"] == first
    changes = [(f"/venues/{event['venue']['id']}", {"venue": "Hall, renamed"}),
               (f"/organizers/{event['organizer'][0]['id']}", {"phone": "+1 555 0100"}),
               (f"/categories/{event['categories'][0]['id']}", {"description": "Loud"})]
    seen = {first}
    for target, body in changes:  # what the event embeds changed: so did its body and its tag
        assert admin.post(target, json=body).status_code == 200
        tag = anon.get(path).headers["ETag"]
        assert tag not in seen, target
        seen.add(tag)
    category = f"/categories/{event['categories'][0]['id']}"
    before = anon.get(category).headers["ETag"]
    factory.event(categories=[event["categories"][0]["id"]])  # the term's count changes
    assert anon.get(category).headers["ETag"] != before


def test_the_etag_depends_on_what_the_caller_sees(as_role, repo, factory):
    repo.commit_file("venues/locked.yaml", "id: 500\nvenue: Locked\naddress: 1 Secret Road\npassword: s3cret\n")
    anon, editor = as_role(None), as_role("editor")
    blanked = anon.get("/venues/500")
    full = editor.get("/venues/500")
    assert blanked.get_json()["address"] == "" and full.get_json()["address"] == "1 Secret Road"
    assert blanked.headers["ETag"] != full.headers["ETag"]
    assert anon.get("/venues/500", headers={"If-None-Match": full.headers["ETag"]}).status_code == 200


def test_a_stale_if_match_is_412_and_commits_nothing(admin, repo, factory):
    for by_id, by_slug in record_paths(factory):
        field = "title" if by_id.startswith("/events") else "venue" if by_id.startswith("/venues") else (
            "organizer" if by_id.startswith("/organizers") else "name")
        tag = admin.get(by_id).headers["ETag"]
        assert admin.post(by_id, json={field: f"Changed {by_id}"}).status_code == 200  # someone else's write
        count, head = repo.count(), repo.head()
        for path in (by_id, by_slug) if by_slug else (by_id,):
            for method in (admin.post, admin.put, admin.patch):
                r = method(path, json={field: "Lost update"}, headers={"If-Match": tag})
                assert r.status_code == 412, (path, r.get_json())
                assert r.get_json()["code"] == "rest_precondition_failed" and r.get_json()["data"]["status"] == 412
            r = admin.delete(path, headers={"If-Match": tag})
            assert r.status_code == 412, (path, r.get_json())
        assert repo.count() == count and repo.head() == head and repo.status() == ""
        fresh = admin.get(by_id).headers["ETag"]
        r = admin.post(by_id, json={field: f"Again {by_id}"}, headers={"If-Match": f'"x", {fresh}'})
        assert r.status_code == 200, r.get_json()
        assert admin.post(by_id, json={field: f"Star {by_id}"}, headers={"If-Match": "*"}).status_code == 200
        weak = admin.get(by_id).headers["ETag"]
        assert admin.post(by_id, json={field: "Weak"}, headers={"If-Match": f"W/{weak}"}).status_code == 412
        assert admin.delete(by_id, headers={"If-Match": admin.get(by_id).headers["ETag"]}).status_code == 200


def test_a_commit_made_in_git_makes_an_etag_stale(admin, repo, factory):
    event = factory.event(title="Original")
    tag = admin.get(f"/events/{event['id']}").headers["ETag"]
    path = repo.root / repo.path_of(event['slug'])
    path.write_text(path.read_text().replace("Original", "Edited in git"))
    repo("add", "-A")
    repo(*EDITOR, "commit", "-q", "-m", "Edit by hand")
    count = repo.count()
    assert admin.post(f"/events/{event['id']}", json={"excerpt": "x"}, headers={"If-Match": tag}).status_code == 412
    assert repo.count() == count and "Edited in git" in path.read_text()


def test_if_match_is_checked_against_the_head_the_write_commits_on(app, admin, repo, factory):
    """The head moves after the request read its snapshot but before the write takes the lock:
    the If-Match that was current for the request's snapshot is stale for the write: 412."""
    event = factory.event(title="Racing")
    path = f"/events/{event['id']}"
    tag = admin.get(path).headers["ETag"]
    store = app.extensions["calendar"].store
    result = {}

    def write():
        result["response"] = admin.post(path, json={"excerpt": "mine"}, headers={"If-Match": tag})

    with store.write_lock():
        worker = threading.Thread(target=write)
        worker.start()
        time.sleep(0.5)  # the request validates against the current head, then waits for the lock
        file = repo.root / repo.path_of(event['slug'])
        file.write_text(file.read_text().replace("Racing", "Edited meanwhile"))
        repo("add", "-A")
        repo(*EDITOR, "commit", "-q", "-m", "Edit meanwhile")
        head = repo.head()
    worker.join(30)
    assert result["response"].status_code == 412, result["response"].get_json()
    assert repo.head() == head


def test_only_well_formed_tags_match(admin, anon, factory):
    """An unquoted tag, a lower-case w/ and W/* match nothing (werkzeug's parse_etags takes them)."""
    path = f"/events/{factory.event()['id']}"
    tag = anon.get(path).headers["ETag"]
    for header in (tag.strip('"'), f"w/{tag}", "W/*"):
        assert anon.get(path, headers={"If-None-Match": header}).status_code == 200, header
        r = admin.post(path, json={"excerpt": "Not written"}, headers={"If-Match": header})
        assert (r.status_code, r.get_json()["code"]) == (412, "rest_precondition_failed"), header
    assert anon.get(path).headers["ETag"] == tag


@pytest.mark.parametrize("kind", ["events", "venues"])
def test_if_match_star_needs_the_record(admin, kind, factory):
    r = admin.post(f"/{kind}/99999", json={"title": "x", "venue": "x"}, headers={"If-Match": "*"})
    assert r.status_code in (400, 404)  # unknown ids answer as before; nothing is written

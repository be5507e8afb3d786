"""Texts kept with the records cache (``records.cache.texts``): an event's own list text, and the
list text of a venue or an organizer as an event embeds it.

The web app's service writes them whenever it writes the records cache; a start maps the file and
a list page fills an event's kept text with its author and the records it embeds for the caller,
instead of building the event. It must serve exactly what building gives, and a kept text is never
used for a record, a cache or a site it was not made for.
"""
from __future__ import annotations

import contextlib
import pickle
import threading
import time
from array import array

import pytest

from calendar_service.auth.accounts import Accounts
from calendar_service.domain.resources import EVENTS
from calendar_service.http.app import close_app
from calendar_service.storage import record_texts
from conftest import Client, remove_index, set_cached

ROUTES = ("/events?per_page=50&status=publish,draft,private&start_date=2020-01-01&end_date=2040-01-01",
          "/events?per_page=50&status=publish,draft,private", "/events?per_page=8&status=publish,draft,private&page=2",
          "/venues?per_page=50", "/organizers?per_page=50")
ANONYMOUS = ("/events?per_page=50", "/events?per_page=5&page=3")


@pytest.fixture
def small_cache(monkeypatch):
    from calendar_service.storage import catalog
    monkeypatch.setattr(catalog, "CACHE_MIN_FILES", 1)
    return catalog


def _wait_for_cache() -> None:
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            with contextlib.suppress(RuntimeError):   # listed while still starting: it is not writing yet
                thread.join(30)


def _lists(app) -> dict:
    """Every list of the calendar as an administrator and as the public sees it."""
    out = {}
    for role, routes in (("administrator", ROUTES), (None, ANONYMOUS)):
        client = Client(app.test_client(), role)
        for route in routes:
            r = client.get(route)
            assert r.status_code == 200, (route, r.get_json())
            out[role, route] = r.get_json()
    return out


def _titles(lists: dict) -> set:
    return {e["title"] for key, body in lists.items() if "events" in body for e in body["events"]} | \
        {v["venue"] for key, body in lists.items() if "events" in body for e in body["events"]
         for v in (e["venue"] if isinstance(e["venue"], list) else [e["venue"]]) if v}


def _rewrite_texts(index_dir, change) -> int:
    """Write the texts file of the cache in ``index_dir`` again with ``change(path, text)`` for
    each kept text (a stand-in for what only a kept text can show); returns how many changed."""
    cache = index_dir / "records.cache"
    entries = pickle.loads(cache.read_bytes())
    path = record_texts.texts_path(cache)
    kept = record_texts.RecordTexts.open(path, entries["texts_token"])
    assert kept is not None
    files = entries["files"]
    ends = array("Q")
    ends.frombytes(files["ends"])
    changed = 0
    with record_texts.TextsWriter(path, kept.token, kept.context, kept.dictionary) as writer:
        for index, file_path in enumerate(files["paths"]):
            row = record_texts.checksum(files["packed"][ends[index - 1] if index else 0:ends[index]])
            text = kept.text_at(index, row)
            if text is not None:
                new = change(file_path, text)
                changed += new != text
                text = new
            writer.add(writer.pack(text) if text else None, row)
        writer.finish()
    return changed


def _calendar(factory, repo) -> dict:
    """Events of every shape a list shows, their venues, organizers and terms; one written by hand
    by someone without an account (its author comes from git history)."""
    music, jazz = factory.category(), factory.category(name="Jazz")
    hall = factory.venue(venue="Marked Hall", address="1 Main St", city="Springfield", country="United States")
    club = factory.venue()
    host, band = factory.organizer(email="host@example.org"), factory.organizer()
    made = [
        factory.event(title="Marked Event", categories=[music["id"]], tags=["loud", "late"], venue=hall["id"],
                      organizer=[host["id"], band["id"]], cost="10 - 20", currency_symbol="$",
                      description="<p>First line</p>\n\nSecond paragraph with <b>bold</b> & ampersand"),
        factory.event(venue=[hall["id"], club["id"]], categories=[music["id"], jazz["id"]], all_day=True),
        factory.event(timezone="America/New_York", start_date="2031-03-09 01:30:00", end_date="2031-03-09 03:30:00",
                      organizer=[band["id"]], website="https://example.org/w"),
        factory.event(status="draft", venue=club["id"]),
        factory.event(status="private", tags=["late"]),
        factory.event(title="Ünïcode “quotes” \\ and / slashes", excerpt="Short", image="https://example.org/a.png"),
    ]
    for n in range(8):
        made.append(factory.event(categories=[jazz["id"]], venue=club["id"]))
    repo("-c", "user.name=Walk In", "-c", "user.email=walkin@example.org", "commit", "-q", "--allow-empty", "-m", "x")
    path = "events/by-hand.md"
    (repo.root / path).write_text("---\nid: 900\nslug: by-hand\ntitle: By Hand\nvenue: [" + str(hall["id"]) + "]\n"
                                  "start_date: 2031-01-01 10:00:00\nend_date: 2031-01-01 11:00:00\n---\nBody\n")
    repo("add", path)
    repo("-c", "user.name=Walk In", "-c", "user.email=walkin@example.org", "commit", "-q", "-m", "By hand")
    return {"hall": hall, "marked": made[0]}


def test_lists_from_kept_texts_are_the_lists_built_without_them(paths, make_app, factory, repo, small_cache):
    _calendar(factory, repo)
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    close_app(make_app())   # a start without a cache writes it, and the texts with it
    _wait_for_cache()
    texts = record_texts.texts_path(index_dir / "records.cache")
    assert texts.is_file()

    kept = _lists(make_app())
    texts.unlink()
    built = _lists(make_app())
    assert kept == built

    # the texts are what a start serves: a title only they hold shows (the cache keeps the same
    # records, so the texts are written again as they were)
    close_app(make_app())
    remove_index(index_dir)
    close_app(make_app())
    _wait_for_cache()
    changed = _rewrite_texts(index_dir, lambda path, text: text.replace('"Marked Event"', '"Only in the texts"')
                             .replace('"Marked Hall"', '"Hall only in the texts"'))
    assert changed == 2   # the event, and the venue it embeds
    shown = _titles(_lists(make_app()))
    assert {"Only in the texts", "Hall only in the texts"} <= shown and "Marked Event" not in shown


def test_a_kept_text_is_not_used_for_another_site_record_or_cache(paths, make_app, factory, repo, small_cache):
    made = _calendar(factory, repo)
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    close_app(make_app())
    _wait_for_cache()
    cache = index_dir / "records.cache"
    texts = record_texts.texts_path(cache)
    original = texts.read_bytes()
    assert _rewrite_texts(index_dir, lambda path, text: text.replace('"Marked Event"', '"Only in the texts"')) == 1
    marked = texts.read_bytes()

    def built(**settings) -> dict:
        texts.unlink()
        answers = _lists(make_app(**settings))
        texts.write_bytes(marked)
        return answers

    # another site time zone: the texts are of UTC's dates
    in_new_york = _lists(make_app(site_timezone="America/New_York"))
    assert "Only in the texts" not in _titles(in_new_york)
    assert in_new_york == built(site_timezone="America/New_York")

    # a damaged file: no damaged text is served, nothing fails (the texts are the true ones here)
    flipped = bytearray(original)
    for at in range(40, len(original) // 2, 50):   # bytes of the texts themselves
        flipped[at] ^= 0x5A
    for damaged in (original[:len(original) // 2], bytes(flipped), original[:200] + b"\xff" * 300 + original[500:],
                    b"garbage"):
        texts.write_bytes(damaged)
        assert _lists(make_app()) == built()
    texts.write_bytes(marked)

    # the cache's own bytes of the record changed (not the record the text was made from)
    entries = pickle.loads(cache.read_bytes())
    event_path = repo.path_at(made["marked"]["slug"])
    set_cached(entries, event_path, excerpt="Changed in the cache")
    cache.write_bytes(pickle.dumps(entries))
    answers = _lists(make_app())
    assert "Only in the texts" not in _titles(answers) and "Marked Event" in _titles(answers)

    # another cache (written again without texts, as a command does): the file is not its texts
    texts.write_bytes(original)
    remove_index(index_dir)
    from calendar_service.config import Settings
    from calendar_service.service.build import build_service
    service = build_service(Settings.from_env(**paths, seed_sample=False, site_timezone="UTC"))
    try:
        service.catalog.current()
        service.catalog.wait_for_cache()
    finally:
        service.close()
    texts.write_bytes(marked)
    assert pickle.loads(cache.read_bytes())["texts_token"] is None
    assert "Only in the texts" not in _titles(_lists(make_app()))


def test_a_list_page_reads_an_event_from_its_kept_text_without_unpacking_it(paths, make_app, factory, repo,
                                                                           small_cache):
    """What a list page reads of an event's data (its links, password, lineage, an author its file
    names) comes with its kept text: the page never unpacks the event, and the facts kept are the
    ones used (a venue only the kept facts name shows)."""
    made = _calendar(factory, repo)
    club = factory.venue(venue="Club only in the facts")
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    close_app(make_app())
    _wait_for_cache()
    hall = made["hall"]["slug"]

    def other_venue(path, text):
        facts, newline, own = text.partition("\n")
        if not newline or '"title":"Marked Event"' not in own:
            return text
        assert f'"venue":["{hall}"]' in facts and '"author":' in facts   # (an author its file names)
        return facts.replace(f'"venue":["{hall}"]', f'"venue":["{club["slug"]}"]') + newline + own
    assert _rewrite_texts(index_dir, other_venue) == 1
    app = make_app()
    answers = _lists(app)
    marked = [e for body in answers.values() if "events" in body for e in body["events"] if e["title"] == "Marked Event"]
    assert marked and all(e["venue"]["venue"] == "Club only in the facts" for e in marked)
    snapshot = app.extensions["calendar"].snapshot()
    listed = [r for r in snapshot.all(EVENTS) if r.id != 900]   # (its author follows the accounts file)
    assert listed and not any(r.unpacked for r in listed)


def test_an_event_shows_what_its_venue_and_terms_are_now_not_when_the_texts_were_kept(paths, make_app, factory,
                                                                                     repo, small_cache):
    """The holes of a kept text are filled with the embedded records of the commit served: an
    editor's change to a venue, and a new event in a category (its count), show in the events
    whose own texts were kept before."""
    made = _calendar(factory, repo)
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    close_app(make_app())
    _wait_for_cache()
    hall_path = repo.path_at(made["hall"]["slug"], folder="venues")
    repo.commit_file(hall_path, repo("show", f"HEAD:{hall_path}").replace("Marked Hall", "Renamed Hall"))
    factory.event(categories=[made["marked"]["categories"][0]["id"]])
    answers = _lists(make_app())
    assert "Renamed Hall" in _titles(answers) and "Marked Hall" not in _titles(answers)
    record_texts.texts_path(index_dir / "records.cache").unlink()
    assert _lists(make_app()) == answers


def test_an_author_taken_from_git_history_follows_the_accounts_file(paths, make_app, factory, repo, small_cache):
    _calendar(factory, repo)
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    close_app(make_app())
    _wait_for_cache()
    before = Client(make_app().test_client(), "administrator").get("/events/900").get_json()
    assert before["author"] == "0"   # nobody of that e-mail had an account

    walk_in, _ = Accounts(paths["users_file"]).add("walkin", "author", email="walkin@example.org", name="Walk In")
    after = _lists(make_app())
    authors = {e["id"]: e["author"] for body in after.values() if "events" in body for e in body["events"]}
    assert authors[900] == str(walk_in.id)
    record_texts.texts_path(index_dir / "records.cache").unlink()
    assert _lists(make_app()) == after


def test_a_start_from_a_cache_without_texts_writes_them_once_the_branch_is_quiet(paths, make_app, factory, repo,
                                                                                 small_cache, monkeypatch):
    monkeypatch.setattr(small_cache, "CACHE_QUIET_SECONDS", 0.3)
    _calendar(factory, repo)
    index_dir = paths["index_dir"]
    remove_index(index_dir)
    from calendar_service.config import Settings
    from calendar_service.service.build import build_service
    service = build_service(Settings.from_env(**paths, seed_sample=False, site_timezone="UTC"))   # (a command's)
    try:
        service.catalog.current()
        service.catalog.wait_for_cache()
    finally:
        service.close()
    cache = index_dir / "records.cache"
    texts = record_texts.texts_path(cache)
    assert cache.is_file() and not texts.exists()

    app = make_app(follow_interval=0.05)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not texts.exists():
        time.sleep(0.05)
    assert texts.exists(), "no texts were written for the cache"
    _wait_for_cache()
    token = pickle.loads(cache.read_bytes())["texts_token"]
    assert record_texts.RecordTexts.open(texts, token) is not None
    time.sleep(1)   # quiet again: written once, not again
    assert pickle.loads(cache.read_bytes())["texts_token"] == token
    assert _lists(make_app()) == _lists(app)


def test_the_context_of_kept_texts_covers_the_code_presenting_runs():
    """A kept text is used only by the code that made it: the context digests every module of
    the package presenting imports (followed through imports written on several lines, and in
    functions), not a list that could miss one."""
    from calendar_service.http import own_text
    read = own_text.code_sources()
    for module in ("calendar_service.http.presenters", "calendar_service.http.urls", "calendar_service.http.json_text",
                   "calendar_service.http.occurrence_json", "calendar_service.domain.text",
                   "calendar_service.domain.dates", "calendar_service.domain.record",
                   "calendar_service.domain.record_files", "calendar_service.domain.resources"):
        assert module in read, module
    assert all(name.startswith("calendar_service") and source for name, source in read.items())


def test_a_texts_write_that_does_not_finish_leaves_nothing_and_a_finished_one_reads_back(tmp_path):
    path = tmp_path / "records.cache.texts"
    writer = record_texts.TextsWriter(path, "token", "context", b"dictionary")
    with pytest.raises(RuntimeError), writer:
        writer.add(writer.pack('{"id":1}'), 7)
        raise RuntimeError("the maker failed")
    assert list(tmp_path.iterdir()) == []

    with record_texts.TextsWriter(path, "token", "context", b"dictionary") as writer:
        writer.add(writer.pack('{"id":1,"title":"One"}'), 7)
        writer.add(None, 8)
        writer.add(writer.pack('{"id":3}'), 9)
        writer.add((writer.pack('{"id":4,"title":"Four"}')[0], writer.pack('{"id":4,"title":"Fore"}')[1]), 10)
        writer.finish()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    kept = record_texts.RecordTexts.open(path, "token")
    assert (kept.context, len(kept)) == ("context", 4)
    assert [kept.text_at(0, 7), kept.text_at(1, 8), kept.text_at(2, 9)] == ['{"id":1,"title":"One"}', None, '{"id":3}']
    assert kept.text_at(3, 10) is None                         # a text that is not the one written
    assert kept.text_at(0, 8) is None                          # another record's checksum
    assert record_texts.RecordTexts.open(path, "another") is None   # another cache's texts
    nested = b"[" * 100_000 + b"]" * 100_000   # a header no writer writes, nested past the parser's depth
    path.write_bytes(record_texts.MAGIC + nested + len(nested).to_bytes(8, "little"))
    assert record_texts.RecordTexts.open(path, "token") is None

"""What keeps a worker's memory small: compact records, presented objects remembered as one JSON
text per record (whatever the host), and a memo bounded by bytes as well as entries."""
from __future__ import annotations

import json
import pickle
from pathlib import Path
from zoneinfo import ZoneInfo

from conftest import Client

from calendar_service.cli.importer import import_events
from calendar_service.domain import record_files
from calendar_service.domain.snapshot import Memo
from calendar_service.http.call import encode_json
from calendar_service.http.json_text import RawJSON
from calendar_service.http.urls import STAND_IN, TOKEN, StandInText, Urls, neutral, text_with_urls
from calendar_service.storage.store import GitStore

SAMPLES = Path(__file__).resolve().parent / "samples"


def test_the_memo_forgets_the_least_recently_used_entries_past_its_byte_budget():
    memo = Memo(size=100, budget=10_000)
    for n in range(5):
        memo.put(("text", n), "x" * 2_000, 2_000)
    assert len(memo) == 4 and memo.get(("text", 0)) is None   # 5 x (2,000 + the entry's own) > 10,000
    assert memo.get(("text", 1)) is not None                    # now the most recently used
    memo.put(("text", 5), "x" * 2_000, 2_000)
    assert memo.get(("text", 2)) is None and memo.get(("text", 1)) is not None
    memo.put(("text", 1), "short", 5)                           # replacing an entry frees its weight
    assert memo.weight == sum(w for _, w in memo._items.values()) and memo.weight < 10_000
    memo["plain"] = 1                                           # unweighed entries count a little
    assert memo.get("plain") == 1 and len(memo) == 5


def test_the_presented_text_a_worker_remembers_is_bounded_by_its_setting(app, make_app, factory):
    """``CALENDAR_PRESENTED_MEMO_BYTES`` bounds the memos of presented text of the snapshots,
    those made before the setting was read (as the serving master's are) as well as later ones."""
    for n in range(12):
        factory.event(description=f"Event {n}. " + "A long description of the event. " * 60)
    before = app.extensions["calendar"].catalog.current()   # made with the default
    served = make_app(presented_memo_bytes=12_000)
    client = Client(served.test_client(), "administrator")
    assert len(client.get("/events?per_page=50").get_json()["events"]) == 12
    snapshot = served.extensions["calendar"].catalog.current()
    for memo in (snapshot.memo, snapshot.lasting, before.memo):
        assert memo.budget == 12_000 and memo.weight <= 12_000
    assert snapshot.memo.weight > 0
    assert len(client.get("/events?per_page=50").get_json()["events"]) == 12   # all of them, again


def test_records_share_their_keys_and_short_strings():
    def event(n):
        return (f"---\nid: {n}\ntitle: Talk {n}\nslug: talk-{n}\nstatus: publish\ntimezone: Europe/Berlin\n"
                f"start_date: '2030-01-01 10:00:00'\nend_date: '2030-01-01 11:00:00'\ncategories: [music, jazz]\n"
                f"---\n{'A long description. ' * 10}\n").encode()
    first, _ = record_files.parse("events/talk-1.md", event(1))
    second, _ = record_files.parse("events/talk-2.md", event(2))
    assert list(first.data) == list(second.data) and list(first.data)[:3] == ["id", "title", "slug"]
    for key in ("status", "timezone", "start_date"):
        assert first.data[key] is second.data[key]
    assert first.data["categories"][1] is second.data["categories"][1]
    assert [k1 is k2 for k1, k2 in zip(first.data, second.data)] == [True] * len(first.data)
    assert first.data["description"] == second.data["description"]
    assert first.data["description"] is not second.data["description"]   # long text is not interned
    # the catalog's cache (pickle) keeps the sharing: records loaded from it are compact for free
    again = pickle.loads(pickle.dumps({"1": first.data, "2": second.data}))
    assert again["1"]["status"] is again["2"]["status"] and again["1"]["categories"][0] is again["2"]["categories"][0]


def test_raw_json_is_spliced_into_a_response_body_as_it_is():
    fragment = RawJSON('{"id":7,"title":"Caf\u00e9 \\"night\\""}')
    body = {"events": [fragment, RawJSON("[]")], "total": 2, "note": "raw-json-0"}
    text = encode_json(body)
    assert json.loads(text) == {"events": [{"id": 7, "title": 'Caf\u00e9 "night"'}, []], "total": 2,
                                "note": "raw-json-0"}
    assert encode_json(RawJSON('{"a":1}')) == '{"a":1}'
    # fragments go back in the order the encoder met them, nested or not, whatever they hold
    nested = {"a": [RawJSON("1"), {"b": RawJSON('"raw-json-x"')}], "c": RawJSON('{"d":[]}'), "e": "f"}
    assert encode_json(nested) == '{"a":[1,{"b":"raw-json-x"}],"c":{"d":[]},"e":"f"}'


def test_presented_records_are_right_for_every_host(paths, make_app):
    """One cached text per record, the caller's URLs put in; a stored lineage entry equal to the
    global id at this host is listed once."""
    store = GitStore(paths["content_dir"])
    import_events(store, json.loads((SAMPLES / "events_list.json").read_text())["events"], ZoneInfo("UTC"))
    store.close()
    client = make_app().test_client()
    api = "/calendar/events/v1/events"
    window = {"start_date": "2000-01-01", "end_date": "2100-01-01"}
    for _ in range(2):   # built, then from the memo
        for host, lineage in (("localhost", ["localhost?id=7"]), ("127.0.0.1", ["127.0.0.1?id=7", "localhost?id=7"]),
                              ("localhost:8080", ["localhost:8080?id=7", "localhost?id=7"])):
            single = client.get(f"{api}/7", base_url=f"http://{host}").get_json()
            listed = client.get(api, query_string=window, base_url=f"http://{host}").get_json()["events"][0]
            for event in (single, listed):
                assert event["global_id"] == lineage[0] and event["global_id_lineage"] == lineage
                assert event["rest_url"] == f"http://{host}/calendar/events/v1/events/7"
                assert event["venue"]["url"].startswith(f"http://{host}/")
            assert single["json_ld"]["url"].startswith(f"http://{host}/")


def test_the_callers_urls_replace_whole_stand_ins_wherever_they_stand():
    urls = Urls(rest_base="https://ex.org/blog/wp-json/tribe/events/v1", site="https://ex.org/blog")

    def shaped(u: Urls) -> str:
        return json.dumps({"rest_url": u.rest("events", 5), "url": u.site + "/event/x/", "global_id": u.global_id(5),
                           "glued": [u.site, u.host_path + u.rest_base, u.global_id(6) + u.site], "last": u.host_path},
                          ensure_ascii=False, separators=(",", ":"))
    assert text_with_urls(shaped(STAND_IN), urls) == shaped(urls)
    assert text_with_urls("no stand-in here", urls) == "no stand-in here"
    # a token no stand-in put there (it cannot come from content) is left as it is, the rest put in
    odd = shaped(STAND_IN) + f"bare-{TOKEN}.invalid"
    assert text_with_urls(odd, urls) == shaped(urls) + f"bare-{TOKEN}.invalid"


def test_a_remembered_text_is_kept_cut_where_the_stand_ins_stand_and_gives_what_replacing_gives():
    """``StandInText`` (what the presented-text memos keep) puts URLs in by one join: the same text
    as replacing every stand-in, for any host, the stand-in text and the tag's neutral text back."""
    sites = (Urls(rest_base="https://ex.org/blog/wp-json/tribe/events/v1", site="https://ex.org/blog"),
             Urls(rest_base="http://localhost:8080/calendar/events/v1", site="http://localhost:8080"),
             Urls(rest_base="https://d\u00e9j\u00e0.example/calendar/events/v1", site="https://d\u00e9j\u00e0.example"))

    def shaped(u: Urls) -> str:
        return json.dumps({"rest_url": u.rest("events", 5), "url": u.site + "/event/x/", "global_id": u.global_id(5),
                           "glued": [u.site, u.host_path + u.rest_base, u.global_id(6) + u.site], "last": u.host_path},
                          ensure_ascii=False, separators=(",", ":"))
    built = shaped(STAND_IN)
    odd = f"{TOKEN}{built}bare-{TOKEN}.invalid{TOKEN}"   # tokens no stand-in put there stay as they are
    for text in (built, built[:-1] + STAND_IN.site, STAND_IN.host_path + built, odd, "no stand-in here", ""):
        cut = StandInText(text)
        assert cut.stand_in() == text
        assert text is odd or cut.neutral() == neutral(text)
        for urls in sites:
            assert cut.with_urls(urls) == text_with_urls(text, urls)
        assert len(cut) >= len(text)   # weighed with its pieces
    assert StandInText(built).with_urls(sites[0]) == shaped(sites[0])
    assert len(StandInText(built).pieces) == built.count(TOKEN) + 1
    assert TOKEN not in StandInText(built).neutral()   # one tag on every worker and replica


def test_a_record_keeps_its_search_words_as_one_compact_string_matched_by_word_beginnings():
    from calendar_service.domain import queries
    raw = (b"---\nid: 9\ntitle: Jazz Night\nslug: jazz-night\nstatus: publish\n"
           b"start_date: '2030-01-01 20:00:00'\nend_date: '2030-01-01 23:00:00'\n---\n"
           b"Saxophones and a double bass, jazz until late.\n")
    record, _ = record_files.parse("events/jazz-night.md", raw)
    words = queries.event_tokens(record)
    assert isinstance(words, str) and words is queries.event_tokens(record)   # kept, not rebuilt
    assert words.split() == sorted(set(words.split())) and "jazz" in words.split()
    match = queries.text_matches
    assert match(["jazz"], words) and match(["saxophon"], words) and match(["sax", "bass"], words)
    assert not match(["azz"], words)          # inside a word: no match, as the index
    assert not match(["jazz", "trumpet"], words)
    assert [match(w, words) for w in (["jazz"], ["azz"], ["sax"])] == \
        [match(w, frozenset(words.split())) for w in (["jazz"], ["azz"], ["sax"])]
    assert queries.title_tokens(record).split() == ["jazz", "night"]


def test_an_embedded_venue_with_a_stored_lineage_is_right_for_every_host(admin, anon, repo, paths):
    """An event without a stored lineage of its own embeds a venue with one (an editor kept the
    venue's ids from another site): the event's cached text is put right for each host too."""
    venue = admin.post("/venues", json={"venue": "Old Hall"}).get_json()
    vid, path = venue["id"], repo.path_of(venue["slug"], "venues")
    text = (paths["content_dir"] / path).read_text(encoding="utf-8")
    stored = f"global_id_lineage: ['localhost?id={vid}', 'peer.example?id=3']\n"
    repo.commit_files({path: text.replace("\n", "\n" + stored, 1)}, "Keep the venue's ids from the old site")
    event = admin.post("/events", json={"title": "Concert", "start_date": "2030-05-01 20:00:00",
                                         "end_date": "2030-05-01 22:00:00", "venue": vid}).get_json()
    for _ in range(2):   # built, then from the memo
        for host in ("localhost", "127.0.0.1"):
            body = anon.get(f"/events/{event['id']}", base_url=f"http://{host}").get_json()
            assert body["global_id_lineage"] == [f"{host}?id={event['id']}"]
            assert body["venue"]["global_id_lineage"] == [f"{host}?id={vid}"] + (
                [] if host == "localhost" else [f"localhost?id={vid}"]) + ["peer.example?id=3"]

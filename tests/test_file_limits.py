"""Limits on what one content file may cost: nesting, keys, ids, size, one-line fields, and the
list of skipped files in /status. Each hostile file is pushed by an editor to a remote served
by ``git daemon`` and pulled through the webhook; afterwards every route still answers, the file
is a problem of its own at its line, and removing it again breaks nothing."""
from __future__ import annotations

import time

from conftest import followed
from test_remote import EDITOR, editor_clone, instance, instances, bare, remote_url  # noqa: F401  (fixtures)

EVENT = "---\ntitle: {title}\nstart_date: 2030-01-0{day} 10:00:00\nend_date: 2030-01-0{day} 11:00:00\n{extra}---\nBody\n"
ROUTES = ["/events", "/events?start_date=2000-01-01", "/venues", "/organizers", "/categories", "/tags",
          "/changes", "/doc", "/status", "/events?ical=1", "/events?per_page=50"]


def event(title: str, extra: str = "", day: int = 1) -> str:
    return EVENT.format(title=title, extra=extra, day=day)


def push(editor, files: dict, message: str = "push") -> None:
    """Commit ``files`` (path -> text, or None to delete) in the editor's clone and push them."""
    if editor("ls-remote", "origin", "main").strip():
        editor("pull", "-q", "--rebase", "origin", "main")
    for path, text in files.items():
        target = editor.root / path
        if text is None:
            editor("rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode() if isinstance(text, str) else text)
    editor("add", "-A")
    editor(*EDITOR, "commit", "-q", "-m", message)
    editor("push", "-q", "origin", "main")


def pulled(a) -> None:
    r = a.hook()
    assert r.status_code == 200, r.get_json()
    followed(a.app)   # the service's own id commit, if any, lands before the editor's next pull


def assert_routes_answer(a) -> None:
    """Every route under the namespace answers (no 500), and so do the probes."""
    for path in ROUTES:
        r = a.admin.get(path)
        assert r.status_code == 200, (path, r.status_code, r.get_data(as_text=True)[:300])
    client = a.app.test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code in (200, 503)
    assert a.create("Still writable").status_code == 201


def skipped(a) -> dict:
    """path -> messages of the problems /status lists."""
    found: dict = {}
    for p in a.admin.get("/status").get_json()["skipped"]:
        found.setdefault(p["path"], []).append((p["line"], p["message"]))
    return found


def served_titles(a) -> set:
    r = a.admin.get("/events?per_page=50&start_date=2000-01-01&end_date=2100-01-01&status=publish,draft")
    assert r.status_code == 200, r.get_json()
    return {e["title"] for e in r.get_json()["events"]}


def test_front_matter_nested_deep_is_a_problem_of_its_file(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    assert a.create("Kept").status_code == 201
    editor = editor_clone(bare, tmp_path / "editor")
    hostile = {
        "events/flow-list.md": event("Flow", "deep: " + "[" * 10000 + "]" * 10000 + "\n"),
        "events/flow-map.md": event("Map", "deep: " + "{a: " * 10000 + "1" + "}" * 10000 + "\n"),
        "events/block-list.md": event("Block", "deep:\n" + "- " * 3000 + "x\n"),
        "events/fine.md": event("Fine", "id: 5001\ndeep: [[[1]]]\n", day=2),
    }
    push(editor, hostile)
    pulled(a)
    assert_routes_answer(a)
    problems = skipped(a)
    for path, line in (("events/flow-list.md", 5), ("events/flow-map.md", 5), ("events/block-list.md", 6)):
        assert problems[path] == [(line, "lists and mappings nested more than 20 deep (CALENDAR_MAX_NESTING)")], path
    assert problems["events/fine.md"] == [(6, "unknown key 'deep'")]   # a warning: served
    assert {"Kept", "Fine"} <= served_titles(a) and not {"Flow", "Map", "Block"} & served_titles(a)
    push(editor, {path: None for path in hostile}, "remove them")
    pulled(a)
    assert_routes_answer(a)
    assert not set(skipped(a)) & set(hostile)


def test_an_unforeseen_failure_reading_a_file_is_its_own_problem(instance, bare, tmp_path):  # noqa: F811
    # with the nesting limit raised past Python's recursion limit, building the data fails in a
    # way nothing else catches: the file alone is skipped, at line 1, and the service goes on
    a = instance("a", max_nesting=100000)
    editor = editor_clone(bare, tmp_path / "editor")
    push(editor, {"events/deep.md": event("Deep", "deep: " + "[" * 10000 + "]" * 10000 + "\n"),
                  "events/fine.md": event("Fine", "id: 5001\n", day=2)})
    pulled(a)
    assert_routes_answer(a)
    assert skipped(a)["events/deep.md"] == [(1, "could not be read: RecursionError")]
    assert "Fine" in served_titles(a)


BAD_IDS = ["100000000000000000000000000", "-5", "0", "true", "1e3", "67108864", "4503599627370497"]


def test_ids_out_of_range_are_refused_at_their_line_and_removing_them_breaks_nothing(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    existing = a.create("Existing").get_json()
    editor = editor_clone(bare, tmp_path / "editor")
    files = {f"events/bad-{n}.md": event(f"Bad {n}", f"id: {value}\n") for n, value in enumerate(BAD_IDS)}
    files["events/same-id.md"] = event("Same id", f"id: {existing['id']}\n", day=2)
    push(editor, files)
    pulled(a)
    assert_routes_answer(a)
    problems = skipped(a)
    for n, value in enumerate(BAD_IDS):
        (line, message), = problems[f"events/bad-{n}.md"]
        assert line == 5 and message.startswith("'id' must be"), (value, message)
    titles = served_titles(a)
    assert "Existing" in titles and not any(t.startswith("Bad") for t in titles)
    assert a.admin.get(f"/events/{existing['id']}").get_json()["title"] == "Existing"
    push(editor, {path: None for path in files}, "remove them")
    pulled(a)
    assert_routes_answer(a)
    assert a.admin.get(f"/events/{existing['id']}").get_json()["title"] == "Existing"
    assert not set(skipped(a)) & set(files)
    for path in ("/events/100000000000000000000000000", "/events/-5", "/venues/100000000000000000000000000",
                 "/events?include=100000000000000000000000000", "/categories/100000000000000000000000000",
                 "/events/4503599627370497"):
        assert a.admin.get(path).status_code in (200, 400, 404), path


def test_a_file_over_the_size_limit_is_never_read(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    editor = editor_clone(bare, tmp_path / "editor")
    big = event("Big", "", day=3).replace("Body\n", "x" * (3 * 1024 * 1024) + "\n")
    push(editor, {"events/big.md": big, "events/fine.md": event("Fine", "id: 5001\n", day=2)})
    pulled(a)
    assert_routes_answer(a)
    assert skipped(a)["events/big.md"] == [
        (1, "the file is 3.0 MB, over the limit of 1.0 MB (CALENDAR_MAX_FILE_BYTES)")]
    assert "Fine" in served_titles(a) and "Big" not in served_titles(a)


def test_api_writes_over_a_limit_are_400_naming_the_field(app, admin):
    long_description = "word " * (1024 * 1024 // 5 + 10)
    r = admin.post("/events", json={"title": "Long", "start_date": "2030-01-01 10:00:00",
                                    "end_date": "2030-01-01 11:00:00", "description": long_description})
    assert r.status_code == 400, r.get_json()
    assert "description" in r.get_json()["data"]["params"], r.get_json()
    assert "CALENDAR_MAX_FILE_BYTES" in r.get_json()["data"]["params"]["description"]
    r = admin.post("/events", json={"title": "T" * 2001, "start_date": "2030-01-01 10:00:00",
                                    "end_date": "2030-01-01 11:00:00"})
    assert r.status_code == 400, r.get_json()
    assert "CALENDAR_MAX_STRING_LENGTH" in r.get_json()["data"]["params"]["title"]
    r = admin.post("/venues", json={"venue": "V", "website": "https://example.org/" + "a" * 2100})
    assert r.status_code == 400 and "website" in r.get_json()["data"]["params"], r.get_json()
    assert admin.post("/events", json={"title": "T" * 2000, "start_date": "2030-01-01 10:00:00",
                                       "end_date": "2030-01-01 11:00:00"}).status_code == 201


def test_a_mapping_of_many_keys_is_refused_quickly(instance, bare, tmp_path):  # noqa: F811
    a = instance("a")
    editor = editor_clone(bare, tmp_path / "editor")
    many = "".join(f"k{i}: {i}\n" for i in range(30000))
    unknown = "".join(f"extra_{i}: {i}\n" for i in range(900))   # under the limit: served, warnings bounded
    push(editor, {"events/many.md": event("Many", many), "events/unknown.md": event("Unknown", "id: 5001\n" + unknown, day=2)})
    started = time.monotonic()
    pulled(a)
    took = time.monotonic() - started
    assert took < 20, took   # the line of each key was one scan of the file per key: minutes
    assert_routes_answer(a)
    problems = skipped(a)
    assert problems["events/many.md"] == [(2, "a mapping of 30,003 keys, over the limit of 1,000 (CALENDAR_MAX_KEYS)")]
    assert "Unknown" in served_titles(a)
    assert len(problems["events/unknown.md"]) == 21 and problems["events/unknown.md"][-1] == (26, "880 more unknown keys")


def test_status_lists_a_bounded_list_of_skipped_files_with_their_count(instance, bare, tmp_path):  # noqa: F811
    a = instance("a", status_files_shown=50)
    editor = editor_clone(bare, tmp_path / "editor")
    push(editor, {f"events/broken-{n:04}.md": f"---\ntitle: [unclosed {n}\n---\n" for n in range(3000)})
    pulled(a)
    status = a.admin.get("/status").get_json()
    assert status["skipped_total"] == 3000, {k: v for k, v in status.items() if k != "skipped"}
    assert status["skipped_files"] == 3000
    assert len(status["skipped"]) == 50
    assert [p["path"] for p in status["skipped"]] == [f"events/broken-{n:04}.md" for n in range(50)]
    assert all(p["line"] == 3 and p["message"].startswith("YAML syntax error") for p in status["skipped"])
    assert_routes_answer(a)

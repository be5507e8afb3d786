"""A full snapshot build (one pass, no copies) gives the same maps as adding the records one
by one, as a snapshot derived from the previous one does; shared ids still go to the older file."""
from __future__ import annotations

from calendar_service.domain import record_files
from calendar_service.domain.resources import RESOURCES
from calendar_service.domain.snapshot import Snapshot


def _event(n: int, slug: str, status: str = "publish", **refs) -> tuple[str, bytes]:
    lines = ["---", f"id: {n}", f"slug: {slug}", f"title: Event {n}", f"status: {status}",
             "start_date: 2026-05-01 10:00:00", "end_date: 2026-05-01 11:00:00"]
    lines += [f"{key}: {value}" for key, value in refs.items()]
    return f"events/{slug}.md", ("\n".join(lines) + "\n---\nText\n").encode()


def _files(items) -> dict:
    files = {}
    for path, raw in items:
        record, problems = record_files.parse(path, raw)
        assert record is not None, problems
        files[path] = ("0" * 40, record, tuple(problems))
    return files


ITEMS = [
    ("categories/music.yaml", b"id: 1\nslug: music\nname: Music\n"),
    ("tags/free.yaml", b"id: 2\nslug: free\nname: Free\n"),
    ("venues/hall.yaml", b"id: 3\nslug: hall\nvenue: Hall\n"),
    _event(10, "a", categories="[1]", tags="[free, 2]", venue="[3]"),
    _event(11, "b", status="draft", categories="[music]", venue="[hall]"),
    _event(12, "c", status="private", tags="[2]"),
    _event(13, "d", categories="[1, music]", organizer="[99]"),
]


def test_full_build_matches_one_by_one():
    files = _files(ITEMS)
    full = Snapshot("c1", files)
    one_by_one = Snapshot("c1", files, Snapshot(None, {}), set(files))
    assert full.refs_index == one_by_one.refs_index
    assert full.published_refs == one_by_one.published_refs
    assert set(full.refs_index[("categories", "#1")]) == {10, 13}
    assert set(full.refs_index[("venue", "s:hall")]) == {11}
    assert ("venue", "s:hall") not in full.published_refs        # a draft's references are not counted
    assert set(full.published_refs[("tags", "#2")]) == {10}          # nor a private event's
    assert {n: r.path for n, r in full.ids["posts"].items()} == {n: r.path for n, r in one_by_one.ids["posts"].items()}
    assert list(full.by_id["events"]) == [10, 11, 12, 13]
    assert full.problems == []


def test_a_shared_id_still_goes_to_the_first_file():
    files = _files([*ITEMS, _event(10, "e")])   # a second file with id 10: events/a.md comes first by path
    snapshot = Snapshot("c1", files)
    assert snapshot.by_id["events"][10].path == "events/a.md"
    assert [record.path for record, _ in snapshot.displaced] == ["events/e.md"]
    assert any("id 10 is also in events/a.md" in p.message for p in snapshot.problems)


def test_a_derived_snapshot_shares_unchanged_maps_and_counts_what_changed():
    files = _files(ITEMS)
    first = Snapshot("c1", files)
    music, free = first.get_slug(RESOURCES["categories"], "music"), first.get_slug(RESOURCES["tags"], "free")
    assert (first.published_count("categories", music), first.published_count("tags", free)) == (2, 1)
    # event 13 leaves music; a new published event joins it; the tag's events are not touched
    path, raw = _event(13, "d", organizer="[99]")
    added_path, added_raw = _event(14, "e", categories="[music]")
    second_files = {**files, **_files([(path, raw), (added_path, added_raw)])}
    second = Snapshot("c2", second_files, first, {path, added_path})
    assert second.published_count("categories", music) == 2            # 10 and 14
    assert set(second.refs_index[("categories", "#1")]) == {10}
    assert set(second.refs_index[("categories", "s:music")]) == {11, 14}
    assert set(first.refs_index[("categories", "#1")]) == {10, 13}     # the first snapshot is unchanged
    assert second.published_refs[("tags", "#2")] is first.published_refs[("tags", "#2")]   # shared, not copied
    assert second.published_count("tags", free) == 1
    assert first.published_count("categories", music) == 2 and len(first.all(RESOURCES["events"])) == 4
    assert [e.id for e in second.events_referencing("categories", music)] == [10, 11, 14]
    fresh = Snapshot("c2", second_files)
    assert fresh.refs_index == second.refs_index and fresh.published_refs == second.published_refs


def test_a_record_the_maps_cannot_hold_never_stops_the_next_snapshot():
    # a record with an id past the bitmaps' range (parsing refuses one now; a cache or an older
    # parser let it in): removing it made every later snapshot raise, so every route failed
    files = _files(ITEMS)
    path, raw = _event(14, "huge")
    record, _ = record_files.parse(path, raw)
    record.id = record.data["id"] = 10**26
    first = Snapshot("c1", {**files, path: ("0" * 40, record, ())})
    assert first.get(RESOURCES["events"], 10**26) is record
    second = Snapshot("c2", files, first, {path})
    assert second.get(RESOURCES["events"], 10**26) is None
    assert second.get(RESOURCES["events"], 10) is not None and second.count(RESOURCES["events"]) == 4

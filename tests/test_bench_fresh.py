"""The benchmark's row of list pages of freshly presented events, against a bare Flask floor."""
from __future__ import annotations

from datetime import date, timedelta


def test_fresh_pages_are_never_presented_before_and_timed_against_a_bare_flask_app(app, factory):
    from benchmarks.fresh_list import FRESH_ROW, FreshPages
    from benchmarks.runner import Runner

    for k in range(25):
        day = (date.today() + timedelta(days=k + 2)).isoformat()
        factory.event(start_date=f"{day} 10:00:00", end_date=f"{day} 11:00:00")
    runner = Runner(app.test_client(), repeat=3, budget=30)
    runner.get("/events")                       # page 1 presented before the row
    fresh = FreshPages(runner, app.extensions["calendar"])
    assert fresh.total_pages == 3
    row, floor = fresh.measure(3, 30)
    # pages 3 and 2 are the warm-up, page 1 was presented before (not counted); then, no page
    # left, the memos are emptied before each request
    assert row["name"] == FRESH_ROW and row["n"] == 3 and not row["errors"]
    assert row["stale_pages"] == 1 and row["memo_cleared"] == 3
    assert row["fresh_events"] == 5 + 10 + 10   # pages 3, 2 and 1 again, after the memos were emptied
    assert floor["n"] == 3 and row["floor_p50_ms"] == floor["p50_ms"] > 0


def test_the_bare_floor_answers_the_same_bytes_and_content_type():
    from benchmarks.fresh_list import CONTENT_TYPE, bare_floor

    serve = bare_floor()
    body = '{"events":[{"title":"Caf\u00e9"}]}'.encode()
    answer = serve(body)
    assert answer.status_code == 200 and answer.get_data() == body
    assert answer.headers["Content-Type"] == CONTENT_TYPE == "application/json; charset=UTF-8"


def test_the_fresh_page_row_is_held_to_8x_its_floor_at_every_size():
    from benchmarks.fresh_list import FRESH_ROW
    from benchmarks.report import TARGETS, target_lines

    name = "list page of 10 freshly presented events, p50 (floor: bare Flask)"
    assert name in TARGETS
    for size, p50, verdict in ((10_000, 0.8, "met"), (100_000, 1.7, "NOT MET"), (1_000_000, 0.8, "met")):
        rows = [{"name": FRESH_ROW, "mode": "index", "p50_ms": p50, "floor_p50_ms": 0.1}]
        line = next(line for line in target_lines(size, {}, {"rows": rows}) if line.startswith(name))
        assert "<= 8x floor" in line and line.endswith("  " + verdict)
        assert f"{p50 / 0.1:.1f}x" in line

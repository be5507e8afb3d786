"""The row of list pages of freshly presented events, against a bare Flask floor.

Each request is ``GET /events?page=P&per_page=10`` (the default window) for a page no earlier
request of the run asked for: pages are taken from the last one backwards (the events furthest
in the future, which the windows of the other rows do not reach). Whether each listed event was
really presented for the first time is checked, outside the timing, against the presented-text
memos of the snapshot (``Snapshot.memo`` and ``Snapshot.lasting``); a page with an event
presented before is not counted. When no unasked page is left (small calendars), both memos are
emptied before each request instead, and the row says so.

The floor is a bare Flask app (its own ``Flask(__name__)``, one route, none of the service's
hooks or middleware) answering the same bytes with the same content type; it is timed
alternately with the row, on the body of the request just timed: request, floor, floor (the
second one timed, as ``Runner.measure_with_floor`` does).
"""
from __future__ import annotations

import json
import time

from flask import Flask, Response

from benchmarks.common import MIN_SAMPLES, WARMUP, say, summary

FRESH_ROW = "list: page of 10 freshly presented events"
PER_PAGE = 10
CONTENT_TYPE = "application/json; charset=UTF-8"


def bare_floor():
    """A function serving a given body through a bare Flask app (a route of its own, no hooks)."""
    app = Flask(__name__)
    held = [b""]

    @app.route("/bare")
    def bare():
        return Response(held[0], content_type=CONTENT_TYPE)

    client = app.test_client()

    def serve(body: bytes):
        held[0] = body
        return client.get("/bare")
    return serve


class FreshPages:
    """Requests of list pages whose events were never presented in this process."""

    def __init__(self, runner, service):
        self.runner = runner
        self.service = service
        probe = runner.get("/events", {"per_page": PER_PAGE})
        self.total_pages = max(1, int(probe.headers.get("X-TEC-TotalPages", "1")))
        self.pages = list(range(1, self.total_pages + 1))   # popped from the last one
        self.cleared = 0       # requests sent after emptying the memos (no unasked page left)
        self.stale = 0         # pages not counted: an event on them had been presented before
        self.fresh_events = 0  # events of the counted pages (each presented for the first time)

    def _presented(self) -> set:
        """Ids of the events the snapshot's memos hold a presented text of for an anonymous
        caller (``Presenter._entry``'s keys: "present", resource, id, single, viewer, ...)."""
        from calendar_service.domain import permissions
        anonymous = permissions.viewer(None)
        snapshot = self.service.snapshot()
        ids = set()
        for memo in (snapshot.memo, snapshot.lasting):
            with memo._lock:
                keys = list(memo._items)
            ids.update(key[2] for key in keys
                       if type(key) is tuple and key[:2] == ("present", "events") and key[4] == anonymous)
        return ids

    def _forget(self) -> None:
        from calendar_service.domain.snapshot import Memo
        snapshot = self.service.snapshot()
        snapshot.memo, snapshot.lasting = Memo(), Memo()

    def request(self, check: bool = True):
        """(the timed function, a check after it): the next page, sent by the timed function."""
        if self.pages:
            page = self.pages.pop()
            before = self._presented() if check else set()
        else:
            page = self.total_pages - self.cleared % self.total_pages
            self._forget()
            self.cleared += 1
            before = set()

        def send():
            return self.runner.get("/events", {"page": page, "per_page": PER_PAGE})

        def fresh(response) -> int | None:
            """How many events the page listed, each presented for the first time; None when
            one of them had been presented before."""
            ids = [event["id"] for event in json.loads(response.get_data())["events"]]
            if any(i in before for i in ids):
                self.stale += 1
                return None
            return len(ids)
        return send, fresh

    def measure(self, repeat: int, budget: float) -> tuple[dict, dict]:
        """The row and its bare floor, timed alternately."""
        floor = bare_floor()
        samples, floor_samples, errors = [], [], []
        body_bytes = []
        started = time.perf_counter()
        k = 0
        while len(samples) < repeat:
            send, fresh = self.request()
            t0 = time.perf_counter()
            response = send()
            elapsed = (time.perf_counter() - t0) * 1000
            if response.status_code != 200:
                if len(errors) < 3:
                    errors.append(f"{response.status_code}: {response.get_data(as_text=True)[:200]}")
                k += 1
                continue
            body = response.get_data()
            floor(body)
            t0 = time.perf_counter()
            answer = floor(body)
            floor_elapsed = (time.perf_counter() - t0) * 1000
            if answer.get_data() != body or answer.headers["Content-Type"] != response.headers["Content-Type"]:
                raise RuntimeError("the bare floor does not answer the same bytes and content type")
            listed = fresh(response)
            counted = listed is not None and k >= WARMUP
            k += 1
            if counted:
                self.fresh_events += listed
                samples.append(elapsed)
                floor_samples.append(floor_elapsed)
                body_bytes.append(len(body))
            if time.perf_counter() - started > budget and len(samples) >= MIN_SAMPLES:
                break
            if k > 3 * repeat + 10:   # pages keep being stale: say so rather than loop
                break
        row = {"name": FRESH_ROW, **summary(samples), "errors": errors, "kind": "list", "mode": "index",
               "fresh": True, "stopped_by_budget": len(samples) < repeat,
               "body_bytes": round(sum(body_bytes) / len(body_bytes)) if body_bytes else None,
               "fresh_events": self.fresh_events, "stale_pages": self.stale, "memo_cleared": self.cleared}
        floor_row = {"name": f"bare Flask floor for {FRESH_ROW}", **summary(floor_samples), "errors": [],
                     "stopped_by_budget": row["stopped_by_budget"], "body_bytes": row["body_bytes"]}
        row["floor_p50_ms"], row["floor_p95_ms"] = floor_row["p50_ms"], floor_row["p95_ms"]
        how = (f"memos emptied before {self.cleared} requests" if self.cleared else "pages no earlier request asked for")
        say(f"  {FRESH_ROW}: p50 {row['p50_ms']:.2f} ms, p95 {row['p95_ms']:.2f} ms (n={row['n']}; {how}; "
            f"{self.fresh_events} events presented for the first time, {self.stale} stale pages left out)"
            + (f"  ERRORS {errors}" if errors else ""))
        say(f"  bare Flask floor, alternated: p50 {floor_row['p50_ms']:.3f} ms "
            f"(ratio {row['p50_ms'] / floor_row['p50_ms']:.1f}x)")
        return row, floor_row

    def profiled(self, k: int):
        """A request for ``profile_requests``: the next unasked page (not checked: the check would
        be profiled with it)."""
        send, _ = self.request(check=False)
        return send()

"""Timing requests through the Flask test client, with a time budget per row."""
from __future__ import annotations

import base64
import time
from urllib.parse import urlencode

from benchmarks.common import ADMIN_LOGIN, ADMIN_PASSWORD, API, MIN_SAMPLES, WARMUP, say, summary

# warm-up requests are numbered from here, apart from the timed ones (0 .. repeat - 1)
WARMUP_OFFSET = 1000


class Runner:
    """Times requests through the test client, with a time budget per row."""

    def __init__(self, client, repeat: int, budget: float):
        self.client = client
        self.repeat = repeat
        self.budget = budget
        self.auth = {"Authorization": "Basic " + base64.b64encode(f"{ADMIN_LOGIN}:{ADMIN_PASSWORD}".encode()).decode()}

    def measure(self, name: str, request, expect: int = 200, warmup: int = WARMUP, after=None) -> dict:
        """``request(k)`` sends request number k (distinct k, distinct query) and returns the response;
        ``after(k)``, when given, runs after each request, outside the timing."""
        errors: list[str] = []
        for j in range(warmup):
            request(self.repeat + WARMUP_OFFSET + j)
            if after:
                after(self.repeat + WARMUP_OFFSET + j)
        samples: list[float] = []
        sample_body = None
        started = time.perf_counter()
        for k in range(self.repeat):
            t0 = time.perf_counter()
            response = request(k)
            samples.append((time.perf_counter() - t0) * 1000)
            if after:
                after(k)
            if response.status_code != expect:
                if len(errors) < 3:
                    errors.append(f"{response.status_code}: {response.get_data(as_text=True)[:200]}")
            elif sample_body is None:
                sample_body = response.get_data()
            if time.perf_counter() - started > self.budget and len(samples) >= MIN_SAMPLES:
                break
        row = {"name": name, **summary(samples), "errors": errors,
               "stopped_by_budget": len(samples) < self.repeat,
               "body_bytes": len(sample_body) if sample_body else None}
        say(f"  {name}: p50 {row['p50_ms']:.2f} ms, p95 {row['p95_ms']:.2f} ms (n={row['n']})"
            + (f"  ERRORS {errors}" if errors else ""))
        return row, sample_body

    def measure_with_floor(self, name: str, request, floor_for, warmup: int = WARMUP) -> tuple[dict, dict]:
        """``request(k)`` timed alternately with its floor (``floor_for(body)`` gives the request of
        an answer's body through a trivial route): request, floor, request, floor. This machine's
        speed moves within seconds, so a row and a floor timed one after the other could each
        land in another speed; alternated, both see the same. The floor is sent twice and timed
        the second time: right after a real request it ran up to twice as long (the caches that
        request left), and a floor is the trivial route at its best. Returns (row, floor row)."""
        first = request(self.repeat + WARMUP_OFFSET + warmup)   # a request of its own, never timed
        if first.status_code != 200:
            raise RuntimeError(f"{name}: {first.status_code} {first.get_data(as_text=True)[:200]}")
        floor = floor_for(first.get_data())
        floor_samples: list[float] = []

        def timed_floor(k: int) -> None:
            floor()
            t0 = time.perf_counter()
            floor()
            floor_samples.append((time.perf_counter() - t0) * 1000)

        row, _ = self.measure(name, request, warmup=warmup, after=timed_floor)
        samples = floor_samples[warmup:]   # the warm-up requests' floors are not counted
        floor_row = {"name": f"floor for {name}", **summary(samples), "errors": [],
                     "stopped_by_budget": row["stopped_by_budget"], "body_bytes": len(first.get_data())}
        say(f"  floor for {name}, alternated: p50 {floor_row['p50_ms']:.2f} ms (n={floor_row['n']})")
        return row, floor_row

    def get(self, path: str, params: dict | None = None, auth: bool = False, buffered: bool = True):
        url = API + path + ("?" + urlencode(params) if params else "")
        return self.client.get(url, headers=self.auth if auth else None, buffered=buffered)

    def post(self, path: str, body: dict):
        return self.client.post(API + path, json=body, headers=self.auth)

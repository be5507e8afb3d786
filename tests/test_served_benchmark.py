"""The served benchmark (``benchmarks/served.py``) in its short variant, end to end: a small
calendar built, gunicorn started with two workers, the reads, the memory of every serving
process, one and four writers over HTTP, the table, the JSON, and nothing left running."""
from __future__ import annotations

import json
import subprocess
import sys

from servers import ROOT


def test_the_quick_served_run_prints_every_row_and_writes_its_figures(tmp_path):
    out = tmp_path / "served.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.served", "--quick", "--json", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    for row in ("memory after the reads, PSS of master + workers (MiB)", "4 writers: writes/s, at least one writer's",
                "4 writers: p99 of a write (ms)"):
        assert row in run.stdout
    figures = json.loads(out.read_text())
    (only,) = figures["runs"]
    assert only["reads"]["failed"] == 0
    roles = [p["role"] for p in only["memory_after_reads"]["processes"]]
    assert roles[:3] == ["master", "worker", "worker"]
    assert 0 < only["pss_mib"] <= only["rss_mib"]
    for count in (1, 4):
        writers = only[f"writers_{count}"]
        assert writers["writes"] > 0 and not writers["errors"]
    # the gunicorn it started is gone
    master = only["memory_after_reads"]["processes"][0]["pid"]
    assert subprocess.run(["kill", "-0", str(master)], capture_output=True).returncode != 0


def test_the_memory_only_run_measures_the_serving_processes_without_writers(tmp_path):
    out = tmp_path / "served.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.served", "--quick", "--memory-only", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "memory after the reads, PSS of master + workers (MiB)" in run.stdout
    assert "writers:" not in run.stdout and "no writers" in run.stdout
    (only,) = json.loads(out.read_text())["runs"]
    assert only["reads"]["failed"] == 0 and 0 < only["pss_mib"] <= only["rss_mib"]
    assert "writers_1" not in only

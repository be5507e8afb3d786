"""`python -m calendar_service.bench` runs the benchmark (benchmarks/bench.py) from a checkout, and
says what to do where benchmarks/ is not importable (an installed wheel ships only the package)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(cwd)
    return subprocess.run([sys.executable, "-m", "calendar_service.bench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_alias_runs_the_benchmarks_own_command_line():
    done = _run(ROOT, "--help")
    assert done.returncode == 0, done.stderr
    assert "--sizes" in done.stdout and "--budget" in done.stdout and "--profile" in done.stdout


def test_without_the_benchmarks_folder_the_alias_says_why_and_fails(tmp_path):
    # what an installed wheel holds: the package alone
    shutil.copytree(ROOT / "calendar_service", tmp_path / "calendar_service",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = _run(tmp_path, "--sizes", "1000")
    assert done.returncode == 2
    assert "benchmarks/" in done.stderr and "checkout" in done.stderr
    assert "Traceback" not in done.stderr


def test_reuse_serves_the_kept_repository_without_building_it_again_rested_first(tmp_path):
    args = ("--sizes", "120", "--repeat", "5", "--budget", "0.5", "--keep", "--out", str(tmp_path / "out"))
    first = subprocess.run([sys.executable, "-m", "benchmarks.bench", *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    content = tmp_path / "out" / "work-120" / "content"
    root_commit = subprocess.run(["git", "-C", str(content), "rev-list", "--max-parents=0", "HEAD"],
                                 capture_output=True, text=True).stdout
    commits = int(subprocess.run(["git", "-C", str(content), "rev-list", "--count", "HEAD"],
                                 capture_output=True, text=True).stdout)
    # --rested: one start catches up with the first run's writes before the serve, and says so
    second = subprocess.run([sys.executable, "-m", "benchmarks.bench", *args, "--reuse", "--rested"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "reusing the build kept in" in second.stderr + second.stdout
    assert "120: rested: a start after the previous serve took" in second.stderr + second.stdout
    assert "start right after the previous serve's writes (--rested)" in second.stdout
    assert "targets for 10,000 events (this run: 120)" in second.stdout
    # the same repository, served again: its history goes on from the first run's writes
    assert subprocess.run(["git", "-C", str(content), "rev-list", "--max-parents=0", "HEAD"],
                          capture_output=True, text=True).stdout == root_commit
    assert int(subprocess.run(["git", "-C", str(content), "rev-list", "--count", "HEAD"],
                              capture_output=True, text=True).stdout) > commits

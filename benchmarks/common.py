"""What every part of the benchmark shares: settings, progress lines, memory figures, statistics, git."""
from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

API = "/calendar/events/v1"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
ADMIN_LOGIN = "bench-admin"
ADMIN_PASSWORD = "bench-admin-password-not-secret"
SITE_TZ = "UTC"
MIN_SAMPLES = 5   # a row stopped by its time budget still has at least this many samples
WARMUP = 2        # requests sent before a row's timing starts


def say(message: str) -> None:
    """Progress on standard error."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size now (VmRSS) of process ``pid`` (this one by default), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak_rss_mb() if pid == "self" else float("nan")


def child_pids(parent: int) -> list[int]:
    """The live child processes of ``parent``, from /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(entry))
    return sorted(pids)


def peak_rss_mb() -> float:
    """Peak resident set size of this process (ru_maxrss is in KB on Linux), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary(samples_ms: list[float]) -> dict:
    return {"n": len(samples_ms), "p50_ms": percentile(samples_ms, 0.5), "p95_ms": percentile(samples_ms, 0.95),
            "min_ms": min(samples_ms) if samples_ms else float("nan"),
            "max_ms": max(samples_ms) if samples_ms else float("nan"),
            "mean_ms": sum(samples_ms) / len(samples_ms) if samples_ms else float("nan")}


def git_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def run_git(root: Path, *args: str, check: bool = True) -> str:
    # gc.auto=0: an automatic `git gc` (thousands of loose objects here) would land in one sample at random
    proc = subprocess.run(["git", "-C", str(root), "-c", "gc.auto=0", "-c", "user.name=Bench",
                           "-c", "user.email=bench@localhost", *args], capture_output=True, env=git_env())
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")

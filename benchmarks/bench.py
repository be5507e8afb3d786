"""Benchmark: build a synthetic calendar of N events, then time the service against floors.

    python -m benchmarks.bench [--sizes 1000,10000] [--repeat 200] [--out DIR]
                                     [--budget SECONDS] [--seed N] [--profile] [--keep]

For each size the calendar is generated deterministically (``random.Random(seed)``, dates
relative to today) as the JSON The Events Calendar's API serves (linked records embedded)
and imported as ONE commit through the importer (``importer.import_events``) into a fresh
repository (above 200,000 events the generated files are committed as they are, and the serve
phase skips the scanning rows and the unpaged feed: see ``build.BULK_FLOOR_MAX`` and
``serve.FULL_ROWS_MAX``). Then, each phase in its own Python process so that memory figures are not
polluted by the previous phase:

- build process: generate the JSON, import it, load a ``Catalog`` snapshot, rebuild the
  search index (``SearchIndex.rebuild_now``);
- serve process: ``create_app`` on that repository with its up-to-date index (cold start,
  until the first list request returns), RSS after load, then requests through the Flask
  test client: reads with the index, the same list queries with ``service.index = None``
  (the scanning fallback), and writes (each one a real commit).

Floors measured in the same run: the same Flask app returning a precomputed copy of each
response body through a trivial route (same ``json_response``), ``git add`` + ``git commit``
of one event file in the same repository for writes, and ``git add -A`` + ``git commit`` of
the same files into a scratch repository for the initial commit.

A row stops early once it has used ``--budget`` seconds (and has at least a few samples):
the scanning fallback can take seconds per request at large sizes. ``n`` in the table says
how many samples a row has. Results go to ``--out`` (default ``./bench-results/``) as JSON.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path

from benchmarks.common import PACKAGE_ROOT, say
from benchmarks.report import table

# The parts: synthetic.py (the calendar), build.py and serve.py (the two phases), runner.py
# (timing requests), profiling.py (--profile), report.py (the table), common.py (shared helpers).


def environment() -> dict:
    from importlib import metadata
    versions = {}
    for name in ("Flask", "Whoosh", "GitPython", "PyYAML", "Werkzeug"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        code = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(PACKAGE_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        code, dirty = None, None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
            "packages": versions, "code_commit": code, "code_dirty": dirty}


def run_phase(phase: str, cfg: dict, work: Path) -> dict:
    """Run one phase in a fresh interpreter; it writes its result as JSON."""
    cfg_path, out_path = work / f"{phase}-config.json", work / f"{phase}-result.json"
    cfg_path.write_text(json.dumps(cfg, default=str))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench", "--phase", phase,
                           "--phase-config", str(cfg_path), "--phase-out", str(out_path)], env=env)
    if proc.returncode != 0 or not out_path.exists():
        raise RuntimeError(f"the {phase} phase failed (exit status {proc.returncode})")
    return json.loads(out_path.read_text())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated event counts (default 1000,10000)")
    parser.add_argument("--repeat", type=int, default=200, help="requests per row (default 200)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds a row may take before it stops early (at least 5 samples; default 60)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--series", type=int, default=0,
                        help="weekly recurring series added beside the events of each size (default 0; "
                             "1000 gives ~100,000 occurrences over the 24-month horizon)")
    parser.add_argument("--out", default="bench-results", help="directory for the JSON results")
    parser.add_argument("--keep", action="store_true", help="keep the repositories (under OUT/work-SIZE)")
    parser.add_argument("--profile", action="store_true", help="cProfile the slowest list request of each size")
    parser.add_argument("--phase", choices=("build", "rest", "serve"), help=argparse.SUPPRESS)
    parser.add_argument("--phase-config", help=argparse.SUPPRESS)
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: serve a size's repository a previous --keep run left in OUT/work-SIZE "
                             "instead of building it again (a 1,000,000-event build takes most of an hour)")
    parser.add_argument("--rested", action="store_true",
                        help="with --reuse: before the serve, leave the repository as a service leaves it once it "
                             "has rested after writes (one start catches up with the previous serve's commits and "
                             "writes the records cache; the index base is kept), so the cold start is that of a "
                             "rested repository")
    parser.add_argument("--phase-out", help=argparse.SUPPRESS)
    return parser


def _run_phase_here(options) -> int:
    """Inside a phase's own process: run it and write its result."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    cfg = json.loads(Path(options.phase_config).read_text())
    if options.phase == "build":
        from benchmarks.build import phase_build as phase
    elif options.phase == "rest":
        from benchmarks.serve import phase_rest as phase
    else:
        from benchmarks.serve import phase_serve as phase
    Path(options.phase_out).write_text(json.dumps(phase(cfg), default=str))
    return 0


def _run_size(size: int, options, today: date, out: Path) -> dict:
    """Both phases of one size in a working directory of their own."""
    work = out / f"work-{size}" if options.keep else Path(tempfile.mkdtemp(prefix=f"calendar-bench-{size}-"))
    built = work / "build-result.json"
    reuse = options.keep and options.reuse and built.exists()
    if options.keep and work.exists() and not reuse:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    say(f"== size {size}: working in {work}")
    started = time.perf_counter()
    cfg = {"work": str(work), "size": size, "seed": options.seed, "today": today.isoformat(),
           "repeat": options.repeat, "budget": options.budget, "profile": options.profile,
           "series": options.series}
    entry: dict = {"seed": options.seed}
    try:
        if reuse:   # the repository a previous run kept (its writes included): the serve phase only
            say(f"size {size}: reusing the build kept in {work}")
            entry["build"] = json.loads(built.read_text())
            if options.rested:
                entry["rest"] = run_phase("rest", cfg, work)
        else:
            entry["build"] = run_phase("build", cfg, work)
        entry["serve"] = run_phase("serve", {**cfg, "meta": entry["build"]["meta"]}, work)
    except Exception as exc:
        entry["error"] = str(exc)
        say(f"size {size}: {exc}")
    entry["wall_s"] = time.perf_counter() - started
    # the id and slug lists are large and only needed by the serve phase
    if "build" in entry:
        for key in ("listed", "search_words", "category_ids", "tag_ids", "venue_ids", "organizer_ids", "series_ids"):
            entry["build"]["meta"].pop(key, None)
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)
    return entry


def _size_text(size: int, entry: dict, out: Path, stamp: str) -> str:
    """The table of one size, with its profiles (also written to files of their own)."""
    text = table(entry) + f"\n(size {size} took {entry['wall_s']:.0f} s)"
    for n, prof in enumerate(entry.get("serve", {}).get("profiles", []), 1):
        text += f"\n\n-- cProfile: {prof['row']} ({prof['requests']} requests), top 15 by cumulative time --\n"
        text += prof["top15_cumulative"].strip()
        (out / f"profile-{stamp}-{size}-{n}.txt").write_text(prof["top15_cumulative"])
    return text


def main(argv=None) -> int:
    options = _parser().parse_args(argv)
    if options.phase:
        return _run_phase_here(options)

    sizes = [int(s.replace("_", "")) for s in options.sizes.split(",") if s.strip()]
    out = Path(options.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    today = datetime.now(timezone.utc).date()
    report = {"started": stamp, "today": today.isoformat(), "args": vars(options), "environment": environment(),
              "sizes": {}}
    json_path = out / f"bench-{stamp}.json"
    tables = []
    for size in sizes:
        entry = _run_size(size, options, today, out)
        report["sizes"][str(size)] = entry
        json_path.write_text(json.dumps(report, indent=1, default=str))
        if "build" in entry:
            tables.append(_size_text(size, entry, out, stamp))
            print(tables[-1] + "\n", flush=True)
    report["environment_at_end"] = environment()
    if report["environment_at_end"]["code_commit"] != report["environment"]["code_commit"]:
        say("WARNING: the service code changed (new commit) while the benchmark ran")
    json_path.write_text(json.dumps(report, indent=1, default=str))
    (out / f"bench-{stamp}.txt").write_text("\n\n".join(tables) + "\n")
    say(f"results: {json_path}")
    return 0 if all("error" not in e for e in report["sizes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

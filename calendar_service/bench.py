"""``python -m calendar_service.bench``: the benchmark, under the package's own name.

The benchmark itself is ``benchmarks/bench.py`` (``python -m benchmarks.bench`` runs the same
thing). It lives beside the package, not in it: a wheel ships only ``calendar_service``, so the
service never imports it and this module only hands its arguments on. From an installed wheel,
``benchmarks`` is not importable: run this from a checkout of the repository instead.
"""
from __future__ import annotations

import sys

HELP = ("python -m calendar_service.bench needs the benchmarks/ folder of a checkout of the repository "
        "(it is not part of an installed package): run it from the repository's top folder, or put "
        "that folder on PYTHONPATH.")


def main(argv=None) -> int:
    try:
        from benchmarks.bench import main as bench_main
    except ModuleNotFoundError as exc:
        if exc.name not in ("benchmarks", "benchmarks.bench"):
            raise
        print(HELP, file=sys.stderr)
        return 2
    return bench_main(argv)


if __name__ == "__main__":
    sys.exit(main())

"""Keep the base file (``base_file``) of the generation the index on disk is at, in a process of
its own, once writes have paused.

A start loads a base from its file only for the Whoosh generation the file was written for, and
every sync of the index on disk makes a new generation: without this, the first start after any
write reads the base from Whoosh (~2.7 s at a million events). Reading it in a serving process
would hold that process's interpreter for as long, so the process whose index follower brought
the index on disk to a commit starts this module as a child once the index has not changed for
``search.KEEP_BASE_QUIET_SECONDS``:

    python3 -m calendar_service.index.keep_base INDEX_DIR SITE_TIMEZONE [HORIZON_MONTHS]

It takes the index's writer lock (without waiting: a sync under way means writes came again,
and the next pause starts it again), reads the generation's base, which writes the file, and
exits. Nothing is written when the file is already there, or when the calendar has recurring
series (their bases are not kept). Exit status 0 when the file is kept, 1 when it is not (the
reason on standard error), 2 for wrong arguments.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from zoneinfo import ZoneInfo


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(OSError):   # below the serving processes, which share the cores
        os.nice(10)
    from calendar_service.index.search import SearchIndex
    index = SearchIndex(Path(argv[0]), ZoneInfo(argv[1]), int(argv[2]) if len(argv) == 3 else None)
    why = index.keep_base_on_disk()
    if why:
        print(f"the index base was not kept: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

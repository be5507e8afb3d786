"""Benchmark: the cost of one API update's file content, written whole or edited in place.

    python -m benchmarks.file_edit [--repeat N]

Times, for a typical event file an editor wrote (comments, blank lines, a flow list, a block
scalar, recurrence lines, an ``exceptions`` mapping, a body): the whole file dumped and read
back (what every update did before), the in-place edit with the edited file read back, and, when ``ruamel.yaml`` is installed, its round-trip loader and
dumper for the same change. Prints p50 per update in milliseconds and whether each way kept
the editor's lines.
"""
from __future__ import annotations

import argparse
import statistics
import time

from calendar_service.domain import file_edit, record_files
from calendar_service.domain.resources import EVENTS

PATH = "events/2030/05/spring-fair.md"
TEXT = """\
---
# Spring fair: keep the title short
title: Spring fair
id: 700
status: publish
author: 1

# times are local (Europe/Berlin)
start_date: 2030-05-01 10:00:00
end_date: '2030-05-01 12:00:00'
timezone: Europe/Berlin
excerpt: >
  A fair in spring,
  every week.
tags: [fair, spring]
venue:
  - main-hall
recurrence:
  - RRULE:FREQ=WEEKLY;COUNT=10   # ten weeks
  - EXDATE;TZID=Europe/Berlin:20300508T100000
exceptions:
  "2030-05-15 10:00:00":
    title: Spring fair (short)
    end_date: 2030-05-15 11:00:00
room: Hall B   # not read by the service, kept
website: "https://example.org/fair"
cost: '10'
---
The fair.

  An indented line.
"""


def _p50(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _kept(content: bytes) -> bool:
    """Whether every line of the editor's file but the title's is still there, in order."""
    wanted = [line for line in TEXT.split("\n") if not line.startswith("title:")]
    got = [line for line in content.decode().split("\n") if not line.startswith(("title:", "modified_utc:"))]
    return got == wanted


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2000)
    options = parser.parse_args(argv)
    raw = TEXT.encode()
    record, _ = record_files.parse(PATH, raw)
    new = {**record.data, "title": "Spring fair 2030", "modified_utc": "2030-01-01 10:00:00"}

    def whole():
        content = record_files.dump(EVENTS, new)
        return content, record_files.parse(PATH, content)[0]

    def in_place():
        return file_edit.edited(EVENTS, PATH, raw, record.data, new, lambda data: data)

    rows = [("whole file (dump + read back)", whole), ("in place (edit + read back)", in_place),
            ("  the edit alone", lambda: file_edit.update(EVENTS, raw, record.data, new, ("slug",)))]
    try:
        import io

        from ruamel.yaml import YAML
    except ImportError:
        YAML = None
    if YAML is not None:
        yaml = YAML()
        yaml.width = 1000

        def ruamel():
            head, body = TEXT[4:].split("\n---\n", 1)
            data = yaml.load(head)
            data["title"] = new["title"]
            data["modified_utc"] = new["modified_utc"]
            out = io.StringIO()
            yaml.dump(data, out)
            content = ("---\n" + out.getvalue() + "---\n" + body).encode()
            record_files.parse(PATH, content)
            return content

        rows.append(("ruamel.yaml round trip (+ read back)", ruamel))
    print(f"{'one update of a typical event file':<44} {'p50 ms':>8}  editor's lines kept")
    for name, run in rows:
        content = run()
        content = content[0] if isinstance(content, tuple) else content
        kept = _kept(content) if not name.startswith("  ") else ""
        print(f"{name:<44} {_p50(run, options.repeat):8.3f}  {kept}")


if __name__ == "__main__":
    main()

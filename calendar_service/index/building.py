"""The documents of a full rebuild, made in a second process while this one writes the segment.

Making an event's document (its dates, its analysed words) is about a third of a full
reindex; the rest (postings, columns, the segment) needs the writer. On a machine with two
cores or more, a forked child makes the documents and sends them in pickled batches through
a pipe, while this process adds them to the writer: the two halves overlap. The child shares
the snapshot with its parent (fork, copy on write), writes nothing but the pipe and exits with
``os._exit``; it logs nothing and takes no lock of the parent's.

A child that fails, dies or goes quiet for CHILD_TIMEOUT seconds is killed, and the documents
it did not send are made here: the rebuild's result never depends on the child.
"""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal

MIN_EVENTS = 2000        # fewer events: made in this process (a fork is not worth it)
BATCH = 256              # documents per pickled batch
CHILD_TIMEOUT = 30.0     # seconds without a batch before the child is given up


def _read(fd: int, size: int) -> bytes:
    """``size`` bytes from the pipe ``fd``; fewer (b"" or a part) at its end or after CHILD_TIMEOUT
    seconds without data."""
    parts, left = [], size
    while left:
        if not select.select([fd], [], [], CHILD_TIMEOUT)[0]:
            break
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # pragma: no cover - not Linux
        return os.cpu_count() or 1


def documents(records: list, make):
    """``make(record)`` of every record, in order (a generator), made in a child process when
    the machine has a second core and there are at least MIN_EVENTS records."""
    if len(records) < MIN_EVENTS or _cores() < 2 or not hasattr(os, "fork"):
        for record in records:
            yield make(record)
        return
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: make, send, exit (never return into the parent's code)
        code = 1
        try:
            gc.disable()   # a collection would touch (and so copy) every page of the shared snapshot
            os.close(read_fd)
            for first in range(0, len(records), BATCH):
                data = pickle.dumps([make(r) for r in records[first:first + BATCH]], pickle.HIGHEST_PROTOCOL)
                view = memoryview(len(data).to_bytes(8, "big") + data)
                while view:
                    view = view[os.write(write_fd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    sent = 0
    try:
        while sent < len(records):
            head = _read(read_fd, 8)
            size = int.from_bytes(head, "big") if len(head) == 8 else 0
            data = _read(read_fd, size) if size else b""
            if not size or len(data) < size:
                break   # the child died, failed or went quiet: give it up
            batch = pickle.loads(data)
            sent += len(batch)
            yield from batch
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            if sent < len(records):
                os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    for record in records[sent:]:
        yield make(record)

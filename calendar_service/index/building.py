"""A full rebuild written by two processes, one segment each.

Every part of a full reindex (making an event's document, its postings, the segment) costs per
event, and one Python process uses one core. On a machine with two cores or more, a forked
child indexes the first half of the events into a segment of its own (in a scratch index beside
the build) while this process indexes the second half and writes its segment; the child's
segment file is then moved into the build and listed before this process's segment in one commit. A reader sees the same
documents with the same document numbers as one writer would give (the halves are in order),
in two segments instead of one; later writes never merge segments this large.

The child shares the snapshot with its parent (fork, copy on write), disables gc (a collection
would copy every page it touches), writes only its scratch index and the pipe, and leaves with
``os._exit``; it logs nothing. A child that fails, dies or does not answer in time is killed and
this process indexes its half itself: the rebuild never depends on the child.

Writing two segments apart and committing them together takes three private steps of Whoosh's
writer (``whoosh_internals.finalize_segment`` and ``commit_segments``): where
``whoosh_internals`` does not use them (``TWO_PROCESS_BUILD``), one process writes every event.
"""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import shutil
import signal
import time
from pathlib import Path

from whoosh import index as whoosh_index

from calendar_service.index import whoosh_internals
from calendar_service.index.whoosh_internals import TWO_PROCESS_BUILD

MIN_EVENTS = 2000        # fewer events: one process (a fork is not worth it)
MIN_WAIT_SECONDS = 60    # the child is waited for at least this long after this process's half, or 3x its time


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _add(writer, records, make, progress, every: int, scale: float) -> None:
    for n, record in enumerate(records, 1):
        document = make(record)
        if document is not None:   # None: the record's document could not be made (reported by ``make``)
            writer.add_document(**document)
        if progress and (n % every == 0 or n == len(records)):
            progress(round(n * scale), round(len(records) * scale))


def build(build_dir: Path, schema, records: list, make, open_writer, progress=None, every: int = 500) -> None:
    """Create the Whoosh index of ``make(record)`` for every record at ``build_dir`` (committed; a
    record whose ``make`` gives None is left out),
    with ``open_writer(ix)`` as the writer; in two processes when worth it (see above).
    ``progress(done, total)`` is called every ``every`` documents."""
    build_dir.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(build_dir), schema)
    if (len(records) < MIN_EVENTS or _cores() < 2 or not hasattr(os, "fork")
            or not whoosh_internals.in_use(TWO_PROCESS_BUILD)):
        writer = open_writer(ix)
        _add(writer, records, make, progress, every, 1.0)
        writer.commit()
        return
    half = len(records) // 2
    scratch = build_dir.parent / f"{build_dir.name}-part"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: index the first half, send its segment, exit (never return)
        code = 1
        try:
            gc.disable()
            os.close(read_fd)
            part = open_writer(whoosh_index.create_in(str(scratch), schema))
            for record in records[:half]:
                document = make(record)
                if document is not None:
                    part.add_document(**document)
            view = memoryview(pickle.dumps(whoosh_internals.finalize_segment(part)))
            while view:
                view = view[os.write(write_fd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    segment = None
    try:
        started = time.monotonic()
        writer = open_writer(ix)
        _add(writer, records[half:], make, progress, every, len(records) / (len(records) - half))
        # this half's segment is written while the child writes its own, not after it
        own = whoosh_internals.finalize_segment(writer)
        wait = max(MIN_WAIT_SECONDS, 3 * (time.monotonic() - started))
        segment = _receive(read_fd, wait)
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            if segment is None:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):   # reaped already by a SIGCHLD handler of the host
            _, status = os.waitpid(pid, 0)
            if status:
                segment = None
    if segment is None:   # the child failed: its half is indexed here, in a segment after this process's
        writer.cancel()   # (releases the index's lock; the finished segment's files stay)
        rest = open_writer(ix)
        _add(rest, records[:half], make, None, every, 1.0)
        whoosh_internals.commit_segments(rest, [own, whoosh_internals.finalize_segment(rest)])
    else:
        name = segment.segment_id()
        for path in scratch.iterdir():
            if path.name.startswith(name):
                os.replace(path, build_dir / path.name)
        whoosh_internals.commit_segments(writer, [segment, own])
    shutil.rmtree(scratch, ignore_errors=True)


def _receive(fd: int, timeout: float):
    """The segment the child sends through ``fd`` (unpickled), or None if it sends nothing
    whole within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    parts = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        parts.append(chunk)
    try:
        return pickle.loads(b"".join(parts)) if parts else None
    except Exception:
        return None

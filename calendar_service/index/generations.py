"""Index generations on disk, switched in one atomic step.

A full rebuild writes a new Whoosh directory beside the one in use and then makes it the
index. ``whoosh`` is a symbolic link to the generation in use (``gen-<time>-<pid>``); the
switch renames a new link over it, which is one atomic step: a process killed at any moment
leaves ``whoosh`` naming either the old generation or the new one, both complete, never
nothing and never a half-written directory (a killed build leaves only its own ``build-<pid>``
directory, removed by the next rebuild).

An index made before generations has ``whoosh`` as a real directory. Its first switch renames
it to ``gen-legacy`` and then puts the link in its place; a process killed between the two
leaves no ``whoosh``, which ``recover`` (run by every writer when it takes the writer lock)
undoes by renaming ``gen-legacy`` back (and ``old-<pid>``, what the code before generations
left when killed between its two renames).

The record of what the index reflects (``STATE.json``) is written after the switch: a process
killed between the two leaves a new generation with the old state, whose changes since the
old commit are applied again on the next sync (applying a change is idempotent), or a full
rebuild when the state is unusable.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from pathlib import Path

log = logging.getLogger(__name__)

LINK = "whoosh"
LEGACY = "gen-legacy"


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover(directory: Path) -> bool:
    """Undo a switch from a real ``whoosh`` directory killed half way; True when something was put back.
    Call with the writer lock held."""
    link = directory / LINK
    if os.path.lexists(link):
        return False
    # gen-legacy: this module's first switch; old-<pid>: the two renames of the code before it
    for legacy in [directory / LEGACY, *sorted(directory.glob("old-*"))]:
        if legacy.is_dir():
            os.replace(legacy, link)
            _sync_dir(directory)
            return True
    return False


def switch(directory: Path, build_dir: Path) -> Path:
    """Make the complete Whoosh directory ``build_dir`` the index in one atomic step; returns the
    generation's directory. Older generations are removed (a reader still holding one keeps
    its open files). Call with the writer lock held."""
    for stale in directory.glob(f"{LINK}.link-*"):
        stale.unlink()
    generation = directory / f"gen-{time.time_ns()}-{os.getpid()}"
    os.replace(build_dir, generation)
    link = directory / LINK
    new_link = directory / f"{LINK}.link-{os.getpid()}"
    os.symlink(generation.name, new_link)
    if link.is_dir() and not link.is_symlink():   # an index from before generations
        os.replace(link, directory / LEGACY)        # (``recover`` puts it back if killed here)
    os.replace(new_link, link)
    _sync_dir(directory)
    remove_unused(directory)
    return generation


def remove_unused(directory: Path, keep_builds: bool = False) -> None:
    """Remove every generation the link does not name, and (unless ``keep_builds``) builds left by
    killed rebuilds. Call with the writer lock held."""
    link = directory / LINK
    current = os.readlink(link) if link.is_symlink() else None
    for path in directory.iterdir():
        name = path.name
        if name.startswith("gen-") and name != current and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif not keep_builds and name.startswith(("build-", "old-")) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def writer_lock(directory: Path, blocking: bool):
    """The index's writer lock (one writer at a time across processes; yields False when
    ``blocking`` is false and another holds it). Taking it undoes an interrupted switch."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "writer.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            if recover(directory):
                log.warning("the search index's previous generation was put back (a switch was interrupted)")
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

"""Moving a branch in process, the way git does it, made durable.

``update_ref`` is ``git update-ref -m REASON REF NEW OLD`` without a git process: git's lock
protocol (``REF.lock`` created exclusively, written, renamed over ``REF``), a compare-and-swap
against the current value (the loose ref, else ``packed-refs``) and a line appended to the
branch's reflog. Unlike ``git update-ref`` with git's default ``core.fsync``, the new ref is
flushed to disk (file and folder) before it returns: an acknowledged write survives a power cut.

A ref git itself would treat specially (a symbolic ref, a value that is not an object id) is
``Unusual``: the caller falls back to ``git update-ref``.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from calendar_service.storage.gitcmd import SHA, SHA_LENGTH, ZERO
from calendar_service.storage.objects import fsync_folder

REF_FILE_MODE = 0o644


class RefLocked(Exception):
    """``REF.lock`` exists: another process is moving the ref (or a killed one left the lock)."""


class RefMoved(Exception):
    """The ref is not at the expected value; nothing was changed."""


class Unusual(Exception):
    """A ref this module does not handle (symbolic, garbled): let git do it."""


def read_ref(git_dir: Path, ref: str) -> str | None:
    """The object id ``ref`` points at (loose ref, else packed-refs), None when it does not exist.
    Raises Unusual for a symbolic or garbled loose ref."""
    try:
        value = (git_dir / ref).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        value = None
    if value is not None:
        if not SHA.match(value):
            raise Unusual(ref)
        return value
    try:
        for line in (git_dir / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref) and SHA.match(line[:SHA_LENGTH]):
                return line[:SHA_LENGTH]
    except FileNotFoundError:
        pass
    return None


def update_ref(git_dir: Path, ref: str, new: str, old: str | None, steps: list[tuple[str, str]]) -> None:
    """Move ``ref`` from ``old`` (None: it must not exist) to ``new``, durably, and append one
    reflog line per step: ``steps`` are (commit, ``ident\\tmessage``), oldest first, the last one
    ``new``; a group of commits published by one move gets a line each, as if each had moved
    the branch (the ids ``OLD NEW`` of each line are added here).

    Raises RefLocked (nothing changed), RefMoved (nothing changed) or Unusual (nothing changed).
    """
    target = git_dir / ref
    lock = target.with_name(target.name + ".lock")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, REF_FILE_MODE)
    except FileExistsError:
        raise RefLocked(ref) from None
    renamed = False
    try:
        try:
            current = read_ref(git_dir, ref)
            if current != old:
                raise RefMoved(ref)
            os.write(fd, (new + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        lines, previous = [], old or ZERO
        for commit, line in steps:
            lines.append(f"{previous} {commit} {line}\n")
            previous = commit
        _append_reflog(git_dir, ref, "".join(lines))
        os.replace(lock, target)
        renamed = True
        fsync_folder(target.parent)
    finally:
        if not renamed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)


def _append_reflog(git_dir: Path, ref: str, line: str) -> None:
    """Append ``line`` to ``ref``'s reflog, as git does for branches (``core.logAllRefUpdates``,
    on by default in a repository with a working tree). Not flushed: git does not either."""
    log = git_dir / "logs" / ref
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line)

"""Readers of git's machine output, one per format: ``ls-tree -z``, raw ``diff-tree``/``log``
entries (``--raw -z``), ``log`` with our record separator, and ``cat-file --batch``."""
from __future__ import annotations

from typing import NamedTuple

from calendar_service.storage.gitcmd import ZERO

# the separators of our ``git log --format``: a record starts with \x01, its fields end with NUL
LOG_RECORD = b"\x01"
LOG_FORMAT = "--format=%x01%H%x00%P%x00%an%x00%ae%x00%aI%x00%B"
LOG_FIELDS = 6  # commit, parents, author name, author e-mail, author date, message


class LsEntry(NamedTuple):
    """One entry of ``git ls-tree``."""

    path: str
    mode: int
    kind: str   # "blob", "tree" or "commit" (a submodule)
    sha: str


class RawChange(NamedTuple):
    """One changed path of a raw diff (``diff-tree --raw`` or ``log --raw``)."""

    path: str
    old_mode: int
    new_mode: int
    old_sha: str | None   # None: the path did not exist before
    new_sha: str | None   # None: the path was deleted
    status: str           # A, M, D, T...


def _path(raw: bytes) -> str:
    """A path as git wrote it; bytes that are not UTF-8 survive as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def ls_tree(out: bytes) -> list[LsEntry]:
    """The entries of ``git ls-tree -z`` output (``mode kind sha\\tpath`` records)."""
    found = []
    for entry in out.split(b"\0"):
        if entry:
            meta, _, path = entry.partition(b"\t")
            mode, kind, sha = meta.split()
            found.append(LsEntry(_path(path), int(mode, 8), kind.decode(), sha.decode()))
    return found


def raw_changes(parts: list[bytes], start: int = 0) -> list[RawChange]:
    """The changes in NUL-split ``--raw -z`` output from ``parts[start]`` on: each is a
    ``:old_mode new_mode old_sha new_sha status`` part followed by a path part; other parts
    (a log's separators) are skipped."""
    found = []
    i = start
    while i < len(parts) - 1:
        meta = parts[i].strip().decode("ascii", "replace")
        if not meta.startswith(":"):
            i += 1
            continue
        if meta.startswith("::"):   # a merge's combined line: a mode and a blob per parent, then the result's
            fields = meta.lstrip(":").split()
            count = (len(fields) - 1) // 2
            modes, shas = fields[:count], fields[count:2 * count]
            status = "A" if all(s == ZERO for s in shas[:-1]) else "D" if shas[-1] == ZERO else "M"
            old_mode, new_mode, old_sha, new_sha = modes[0], modes[-1], shas[0], shas[-1]
        else:
            old_mode, new_mode, old_sha, new_sha, status = meta[1:].split()
        found.append(RawChange(_path(parts[i + 1]), int(old_mode, 8), int(new_mode, 8),
                               None if old_sha == ZERO else old_sha, None if new_sha == ZERO else new_sha,
                               status[0]))
        i += 2
    return found


def log_entries(out: bytes) -> list[dict]:
    """The commits of ``git log -z --raw LOG_FORMAT`` output, as dicts with ``commit``,
    ``parents``, ``author`` (name, email), ``date``, ``message`` and ``changes`` (status, path, old blob
    or None, new blob or None)."""
    commits = []
    for chunk in out.split(LOG_RECORD)[1:]:
        parts = chunk.split(b"\0")
        sha, parents, name, email, date, body = (p.decode("utf-8", "replace") for p in parts[:LOG_FIELDS])
        changes = [(c.status, c.path, c.old_sha, c.new_sha) for c in raw_changes(parts, LOG_FIELDS)]
        commits.append({"commit": sha, "parents": parents.split(), "author": {"name": name, "email": email},
                        "date": date, "message": body.strip(), "changes": changes})
    return commits


def cat_file_batch(out: bytes, shas: list[str]) -> dict[str, bytes]:
    """The objects in ``git cat-file --batch`` output for the requested ``shas`` (in order):
    sha -> content; missing ones left out."""
    blobs: dict[str, bytes] = {}
    pos = 0
    for sha in shas:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        blobs[sha] = out[pos:pos + size]
        pos += size + 1  # the content is followed by a newline
    return blobs


def cat_file_batch_check(out: bytes) -> dict[str, int]:
    """sha -> size of the blobs of ``git cat-file --batch-check`` output (``sha kind size`` lines;
    other objects and missing ones left out)."""
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == b"blob":
            found[parts[0].decode("ascii")] = int(parts[2])
    return found

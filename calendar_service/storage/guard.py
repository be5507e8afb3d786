"""The checks a commit from the remote passes before the branch moves to it.

git itself refuses the worst trees while they are fetched (``fetch.fsckObjects`` with the
path checks as errors, see ``FSCK_OPTIONS``), so their objects never enter the repository.
The tree of the commit the branch would move to is then walked from the current head's tree
(only the subtrees that differ) and every path is checked with the domain's one path rule
(``domain.paths``): plain files under the content folders or ordinary repository files.
"""
from __future__ import annotations

import subprocess
from typing import Callable

from calendar_service.domain.paths import component_problem, path_problem

TREE_MODE = 0o40000
SHA_BYTES = 20
# git's fsck message ids for tree entries that could reach outside the checkout: errors in a fetch
FSCK_MESSAGES = ("hasDotgit", "hasDotdot", "hasDot", "fullPathname", "emptyName", "zeroPaddedFilemode",
                 "badFilemode", "duplicateEntries", "treeNotSorted", "gitmodulesSymlink", "gitmodulesPath",
                 "gitmodulesUrl", "gitmodulesName", "gitattributesSymlink", "gitignoreSymlink",
                 "gitmodulesUpdate", "mailmapSymlink")
FSCK_OPTIONS = ("-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true",
                *(part for msg in FSCK_MESSAGES for part in ("-c", f"fetch.fsck.{msg}=error")))


# modes as git writes them; anything else (zero-padded, group-writable, unknown) is malformed
CANONICAL_MODES = (b"100644", b"100755", b"40000", b"120000", b"160000")


def tree_entries(raw: bytes) -> dict[bytes, tuple[int, bytes]]:
    """The entries of a raw tree object: name -> (mode, binary id). Names are taken as written."""
    return {name: (int(mode, 8), sha) for mode, name, sha in tree_list(raw)}


def tree_list(raw: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """The entries of a raw tree object in their written order: (mode as written, name, binary id).
    Raises ValueError when the object is not a tree."""
    found = []
    pos, end = 0, len(raw)
    while pos < end:
        nul = raw.index(b"\0", pos)
        mode, space, name = raw[pos:nul].partition(b" ")
        sha = raw[nul + 1:nul + 1 + SHA_BYTES]
        if not space or not mode.isdigit() or len(sha) != SHA_BYTES:
            raise ValueError("not a tree object")
        found.append((mode, name, sha))
        pos = nul + 1 + SHA_BYTES
    return found


def entry_problems(entries: list[tuple[bytes, bytes, bytes]]) -> dict[bytes, str]:
    """The entries of one tree that git's object checks refuse for the tree's form, by name:
    a malformed mode, a name holding '/', a name written twice, entries out of git's order."""
    problems: dict[bytes, str] = {}
    seen: set[bytes] = set()
    previous = None
    for mode, name, _ in entries:
        if mode not in CANONICAL_MODES:
            problems.setdefault(name, f"a malformed mode {mode.decode('ascii', 'replace')!r} "
                                      "(git writes 100644, 100755, 40000, 120000 or 160000)")
        if b"/" in name:
            problems.setdefault(name, "a '/' inside one name")
        if name in seen:
            problems.setdefault(name, "a name written twice in one folder")
        seen.add(name)
        key = name + (b"/" if mode.lstrip(b"0") == b"40000" else b"")
        if previous is not None and key < previous:
            problems.setdefault(name, "folder entries out of git's order")
        previous = key
    return problems


def first_problem(new_tree: bytes, old_tree: bytes | None, read: Callable[[bytes], bytes]) -> tuple[str, str] | None:
    """The first path of ``new_tree`` (binary id) that is new or changed against ``old_tree``
    (None: check every path) and that the repository may not hold: (path, reason), or None.
    ``read`` gives the raw content of a tree by binary id (raising when it is not a tree)."""
    def walk(tree: bytes, old: bytes | None, prefix: str):
        listed = tree_list(read(tree))
        malformed = entry_problems(listed)
        before = tree_entries(read(old)) if old else {}
        for raw_mode, name, sha in listed:
            mode = int(raw_mode, 8)
            text = name.decode("utf-8", "surrogateescape")
            path = prefix + text
            if name in malformed:
                return path, malformed[name]
            if before.get(name) == (mode, sha):
                continue  # unchanged since the current head (checked when it came)
            if mode == TREE_MODE:
                problem = component_problem(text)
                if problem:
                    return path, problem
                old_entry = before.get(name)
                try:
                    found = walk(sha, old_entry[1] if old_entry and old_entry[0] == TREE_MODE else None, path + "/")
                except (ValueError, LookupError, OSError, subprocess.CalledProcessError):
                    # deeper failures come back as paths: only reading ``sha`` itself raises here
                    return path, "its mode says folder (40000) but it points at an object that is not a tree"
                if found:
                    return found
                continue
            problem = path_problem(path, mode)
            if problem:
                return path, problem
        return None

    return walk(new_tree, old_tree, "")


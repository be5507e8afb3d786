"""The checks a commit from the remote passes before the branch moves to it.

git itself refuses the worst trees while they are fetched (``fetch.fsckObjects`` with the
path checks as errors, see ``FSCK_OPTIONS``), so their objects never enter the repository.
The tree of the commit the branch would move to is then walked from the current head's tree
(only the subtrees that differ) and every path is checked with the domain's one path rule
(``domain.paths``): plain files under the content folders or ordinary repository files.
"""
from __future__ import annotations

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


def tree_entries(raw: bytes) -> dict[bytes, tuple[int, bytes]]:
    """The entries of a raw tree object: name -> (mode, binary id). Names are taken as written."""
    found = {}
    pos, end = 0, len(raw)
    while pos < end:
        nul = raw.index(b"\0", pos)
        mode, _, name = raw[pos:nul].partition(b" ")
        found[name] = (int(mode, 8), raw[nul + 1:nul + 1 + SHA_BYTES])
        pos = nul + 1 + SHA_BYTES
    return found


def first_problem(new_tree: bytes, old_tree: bytes | None, read: Callable[[bytes], bytes]) -> tuple[str, str] | None:
    """The first path of ``new_tree`` (binary id) that is new or changed against ``old_tree``
    (None: check every path) and that the repository may not hold: (path, reason), or None.
    ``read`` gives the raw content of a tree by binary id."""
    def walk(tree: bytes, old: bytes | None, prefix: str):
        entries = tree_entries(read(tree))
        before = tree_entries(read(old)) if old else {}
        for name, (mode, sha) in entries.items():
            if before.get(name) == (mode, sha):
                continue  # unchanged since the current head (checked when it came)
            text = name.decode("utf-8", "surrogateescape")
            path = prefix + text
            if mode == TREE_MODE:
                problem = component_problem(text)
                if problem:
                    return path, problem
                old_entry = before.get(name)
                found = walk(sha, old_entry[1] if old_entry and old_entry[0] == TREE_MODE else None, path + "/")
                if found:
                    return found
                continue
            problem = path_problem(path, mode)
            if problem:
                return path, problem
        return None

    return walk(new_tree, old_tree, "")

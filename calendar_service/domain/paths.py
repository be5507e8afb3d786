"""Which paths a content repository may hold: the one check for a path from the remote, the
working tree or a request.

A content repository is written by people the server does not trust with code: editors push
to it and the service checks it out. So a path is accepted only when it is a plain file (git
mode 100644 or 100755) at an ordinary place:

- under a content folder (``events/``, ``venues/``, ``organizers/``, ``categories/``,
  ``tags/``), at any depth;
- or one of the repository files kept in git but never executed or parsed by the service:
  ``README*``, ``LICENSE*``, ``.gitignore``, ``.editorconfig``, ``.pre-commit-config.yaml``
  and anything under ``.github/``.

Every component must be a plain name: not empty, not ``.`` or ``..``, no ``.git`` in any
spelling git itself guards against (any case, trailing dots or spaces, the NTFS short name
``git~1``, HFS+ ignorable code points), no backslash, no control character. No component may
be a file git reads instructions from, ``.gitattributes`` or ``.gitmodules`` (filters, checkout
encodings, submodules), at any depth and in any spelling git guards against (case, trailing dots
or spaces, NTFS short names). Absolute paths and symlinks (120000), submodules (160000) and other
modes are refused.
"""
from __future__ import annotations

import re

from calendar_service.domain.resources import RESOURCES

CONTENT_FOLDERS = tuple(RESOURCES)
FILE_MODES = (0o100644, 0o100755)
SYMLINK_MODE = 0o120000
SUBMODULE_MODE = 0o160000
# repository files at the top level that are kept in git but never executed or parsed
TOP_LEVEL_FILES = re.compile(r"(README|LICENSE)[^/]*|\.gitignore|\.editorconfig|\.pre-commit-config\.yaml")
TOP_LEVEL_FOLDERS = CONTENT_FOLDERS + (".github",)
# code points HFS+ ignores when comparing names (git's is_hfs_dotgit list)
HFS_IGNORABLE = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                       "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NTFS_SHORT_DOTGIT = re.compile(r"git~\d+", re.I)
# files git itself reads instructions from, wherever they are in a tree; and their NTFS short
# names as git computes them (the first six characters, or git's hashed prefix, then ~N)
GIT_FILES = (".gitattributes", ".gitmodules")
NTFS_SHORT_GIT_FILES = re.compile(r"(gitatt|gi7d29|gitmod|gi7eba)~\d+", re.I)


class UnsafePath(ValueError):
    """A path the service refuses; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def is_dotgit(name: str) -> bool:
    """Whether ``name`` is ``.git`` as some filesystem would read it."""
    plain = name.translate(HFS_IGNORABLE).rstrip(". ").lower()
    return plain == ".git" or bool(NTFS_SHORT_DOTGIT.fullmatch(name.rstrip(". ")))


def git_file(name: str) -> str | None:
    """Which of git's instruction files ``name`` is as some filesystem would read it, or None."""
    plain = name.translate(HFS_IGNORABLE).rstrip(". ").lower()
    if plain in GIT_FILES:
        return plain
    short = NTFS_SHORT_GIT_FILES.fullmatch(name.rstrip(". "))
    if short:
        return GIT_FILES[0] if short.group(1).lower() in ("gitatt", "gi7d29") else GIT_FILES[1]
    return None


def component_problem(name: str) -> str | None:
    """Why ``name`` cannot be one component of a path; None when it can."""
    if name in ("", ".", ".."):
        return "empty, '.' or '..' component" if name else "empty component"
    if is_dotgit(name):
        return "a '.git' component"
    special = git_file(name)
    if special:
        return f"a '{special}' file (git reads instructions from it)"
    if "\\" in name:
        return "a backslash"
    if CONTROL.search(name):
        return "a control character"
    return None


def path_problem(path: str, mode: int | None = None, anywhere: bool = False) -> str | None:
    """Why the repository may not hold ``path`` (with git ``mode``, when known); None when it may.
    With ``anywhere`` only the components and the mode are checked, not the allowed places
    (for the store, which may be asked to write any file of the repository)."""
    if not path:
        return "an empty path"
    if path.startswith("/"):
        return "an absolute path"
    parts = path.split("/")
    for name in parts:
        problem = component_problem(name)
        if problem:
            return problem
    if mode is not None and mode not in FILE_MODES:
        if mode == SYMLINK_MODE:
            return "a symbolic link"
        if mode == SUBMODULE_MODE:
            return "a submodule"
        return f"not a plain file (mode {mode:o})"
    if anywhere:
        return None
    if len(parts) == 1:
        if not TOP_LEVEL_FILES.fullmatch(parts[0]):
            return "not under a content folder nor an ordinary repository file"
    elif parts[0] not in TOP_LEVEL_FOLDERS:
        return "not under a content folder nor an ordinary repository file"
    return None


def check_path(path: str, mode: int | None = None) -> str:
    """``path`` itself when the repository may hold it; raises UnsafePath otherwise."""
    problem = path_problem(path, mode)
    if problem:
        raise UnsafePath(path, problem)
    return path

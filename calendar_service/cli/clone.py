"""Which content repository a command works on (what git says about a clone is
``storage.clone.Clone``).

``find_content`` is the one look-up that ``validate``, ``new`` and ``status`` share: a directory
given on the command line; else ``CALENDAR_CONTENT_DIR``; else the clone the current directory
is in (the top of its git work tree, when that top has a content folder); else the service's
default content directory when it exists. Anything else is refused with a message that says
what a content repository is and how to point at one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from calendar_service.config import Settings
from calendar_service.domain.resources import RESOURCES

WHAT_IT_IS = ("A content repository is a git repository (a clone of the calendar's content, or the service's "
              "data directory) whose top folder holds the content folders " + ", ".join(f"{n}/" for n in RESOURCES)
              + ". Point at one with --dir DIR (-C DIR for status), with CALENDAR_CONTENT_DIR, or run the "
              "command inside a clone.")


class NotContent(ValueError):
    """No content repository where the command looked (the message says where and what to do)."""


@dataclass(frozen=True)
class Content:
    root: Path
    how: str          # "given", "environment", "clone" or "default"

    @property
    def is_service_dir(self) -> bool:
        """Whether this is the service's own data directory (the configured or default one)
        rather than an editor's clone."""
        if self.how in ("environment", "default"):
            return True
        try:
            return self.root.resolve() == Settings.from_env().content_dir.resolve()
        except OSError:
            return False


def has_content_folders(folder: Path) -> bool:
    return any((folder / name).is_dir() for name in RESOURCES)


def git_top(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in, or None (``.git`` may be a file: worktrees)."""
    folder = folder.absolute()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def find_content(given: str | os.PathLike | None) -> Content:
    """The content repository a command works on (see the module's description); raises
    ``NotContent`` when there is none."""
    if given:
        root = Path(given)
        if not root.is_dir():
            raise NotContent(f"no content directory at {root}. {WHAT_IT_IS}")
        top = git_top(root)
        if has_content_folders(root) or top is not None and top.resolve() == root.resolve():
            return Content(root, "given")
        if top is not None and has_content_folders(top):   # a folder inside a clone: its top
            return Content(top, "given")
        raise NotContent(f"{root} is not a content repository (no {', '.join(RESOURCES)} folder). {WHAT_IT_IS}")
    if os.environ.get("CALENDAR_CONTENT_DIR"):
        root = Settings.from_env().content_dir
        if not root.is_dir():
            raise NotContent(f"no content directory at {root} (CALENDAR_CONTENT_DIR). {WHAT_IT_IS}")
        return Content(root, "environment")
    here = Path.cwd()
    top = git_top(here)
    if top is not None and has_content_folders(top):
        return Content(top, "clone")
    if top is None and has_content_folders(here):
        return Content(here, "clone")
    default = Settings.from_env().content_dir
    if default.is_dir() and ((default / ".git").exists() or has_content_folders(default)):
        return Content(default, "default")
    raise NotContent(f"{here} is not in a content repository. {WHAT_IT_IS}")

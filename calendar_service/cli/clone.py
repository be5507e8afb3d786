"""Which content repository a command works on, and what git says about an editor's clone.

``find_content`` is the one look-up that ``validate``, ``new`` and ``status`` share: a directory
given on the command line; else ``CALENDAR_CONTENT_DIR``; else the clone the current directory
is in (the top of its git work tree, when that top has a content folder); else the service's
default content directory when it exists. Anything else is refused with a message that says
what a content repository is and how to point at one.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from calendar_service.config import Settings
from calendar_service.domain.resources import RESOURCES

GIT_TIMEOUT = 60   # seconds for one git command run on an editor's clone

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


def git(root: Path, *args: str, check: bool = True) -> str | None:
    """Run git in ``root``; its output, or None when it fails and ``check`` is false."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=GIT_TIMEOUT,
                          env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    if done.returncode:
        if check:
            raise ValueError(f"git {' '.join(args)}: {done.stderr.strip()}")
        return None
    return done.stdout


def git_bytes(root: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git in ``root`` (with ``input`` on its standard input); its output as bytes."""
    done = subprocess.run(["git", *args], cwd=root, input=input, capture_output=True, timeout=GIT_TIMEOUT)
    if done.returncode:
        raise ValueError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def upstream(root: Path) -> str | None:
    """The branch the current branch follows (``origin/main``), else the remote's default branch."""
    for ref in ("@{upstream}", "refs/remotes/origin/HEAD"):
        name = git(root, "rev-parse", "--abbrev-ref", "--verify", "-q", ref, check=False)
        if name and name.strip():
            return name.strip()
    return None


def default_base(root: Path) -> str | None:
    """What ``validate --changed`` compares with when no BASE is given: the merge base with the
    upstream (or remote-tracking) branch, else HEAD; None in a repository without a commit."""
    branch = upstream(root)
    if branch:
        base = git(root, "merge-base", "HEAD", branch, check=False)
        if base and base.strip():
            return base.strip()
    head = git(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return head.strip() if head and head.strip() else None


def changed_files(root: Path, base: str | None) -> set[str]:
    """The paths under the content folders that differ between ``base`` and the working tree:
    changed, added, deleted (staged or not) and untracked ones. Without a base: every file."""
    folders = list(RESOURCES)
    if base is None:
        listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *folders) or ""
        return {p for p in listed.split("\0") if p}
    diff = git(root, "diff", "-z", "--name-only", "--no-renames", base, "--", *folders)
    untracked = git(root, "ls-files", "-z", "--others", "--exclude-standard", "--", *folders)
    return {p for p in (diff + untracked).split("\0") if p}


def clone_state(root: Path) -> dict:
    """What ``status`` shows for a clone: where it is, its head, its branch against the upstream."""
    head = git(root, "log", "-1", "--format=%H%x00%s", check=False)
    commit, _, subject = (head or "").strip().partition("\0")
    branch = (git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False) or "").strip() or None
    state: dict = {"kind": "clone", "root": str(root), "branch": branch,
                   "head": {"commit": commit, "subject": subject} if commit else None, "upstream": None}
    follows = upstream(root) if commit else None
    if follows:
        counts = git(root, "rev-list", "--left-right", "--count", f"HEAD...{follows}", check=False)
        if counts:
            ahead, behind = (int(n) for n in counts.split())
            state["upstream"] = {"branch": follows, "ahead": ahead, "behind": behind}
    uncommitted = git(root, "status", "--porcelain", "--", *RESOURCES, check=False)
    state["uncommitted_files"] = len((uncommitted or "").splitlines())
    return state

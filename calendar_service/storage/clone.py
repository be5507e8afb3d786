"""An editor's clone of the content repository, read by the command-line tools: which commit a
name means, and its commits' files (never written)."""
from __future__ import annotations

from pathlib import Path

from calendar_service.storage.errors import StoreError
from calendar_service.storage.gitcmd import Git
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import ObjectStore


class Clone:
    """A git work tree holding the content folders (a clone, or the service's own repository)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._git = Git(self.root)

    def _out(self, *args: str) -> str | None:
        try:
            return self._git.run(*args).decode("utf-8", "replace").strip()
        except StoreError:
            return None

    def commit(self, name: str) -> str | None:
        """The commit ``name`` (a branch, tag, ``HEAD~2``, an id) means here; None when none."""
        if name.startswith("-"):
            return None
        return self._out("rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}")

    def history(self) -> CommitLog:
        """Reads this clone's commits and files (``list_files``, ``read_files``); never writes."""
        return CommitLog(self._git.run, self._git, ObjectStore(self.root))

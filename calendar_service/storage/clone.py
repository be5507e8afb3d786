"""An editor's clone of the content repository, as the command-line tools see it: where its top
is, which commit a name means, and what a pull request's change is compared with."""
from __future__ import annotations

from pathlib import Path

from calendar_service.storage.errors import StoreError
from calendar_service.storage.gitcmd import Git
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import ObjectStore

# the upstream branches a change is compared with when none is named, first found wins
UPSTREAM_GUESSES = ("@{upstream}", "origin/HEAD", "origin/main", "origin/master")


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

    def default_base(self) -> tuple[str, str] | None:
        """(commit, how it was found) of what a change is compared with when no base is named: the
        merge base of HEAD with its upstream branch (a pull request's target), else HEAD."""
        for upstream in UPSTREAM_GUESSES:
            if self.commit(upstream) is None:
                continue
            base = self._out("merge-base", "HEAD", upstream)
            if base:
                return base, f"the merge base of HEAD and {upstream}"
        head = self.commit("HEAD")
        return (head, "HEAD") if head else None

    def history(self) -> CommitLog:
        """Reads this clone's commits and files (``list_files``, ``read_files``); never writes."""
        return CommitLog(self._git.run, self._git, ObjectStore(self.root))

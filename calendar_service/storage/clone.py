"""An editor's clone of the content repository, as the command-line tools read it (never
written): which commit a name means, what a change is compared with, the files it changed,
its state against the upstream branch, and its commits' files."""
from __future__ import annotations

from pathlib import Path

from calendar_service.domain.resources import RESOURCES
from calendar_service.storage.errors import StoreError
from calendar_service.storage.gitcmd import Git
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import ObjectStore

CONTENT_FOLDERS = tuple(RESOURCES)


class Clone:
    """A git work tree holding the content folders (a clone, or the service's own repository)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._git = Git(self.root)

    def _out(self, *args: str) -> str | None:
        """git's output, stripped; None when git fails."""
        try:
            return self._git.run("--no-optional-locks", *args).decode("utf-8", "replace").strip()
        except StoreError:
            return None

    def commit(self, name: str) -> str | None:
        """The commit ``name`` (a branch, tag, ``HEAD~2``, an id) means here; None when none."""
        if name.startswith("-"):
            return None
        return self._out("rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}") or None

    def upstream(self) -> str | None:
        """The branch the current branch follows (``origin/main``), else the remote's default branch."""
        for ref in ("@{upstream}", "refs/remotes/origin/HEAD"):
            name = self._out("rev-parse", "--abbrev-ref", "--verify", "-q", ref)
            if name:
                return name
        return None

    def default_base(self) -> str | None:
        """What a change is compared with when no base is named (``validate --changed``, ``diff``):
        the merge base with the upstream branch, else HEAD; None in a repository without a commit."""
        branch = self.upstream()
        base = self._out("merge-base", "HEAD", branch) if branch else None
        return base or self.commit("HEAD")

    def changed_files(self, base: str | None) -> set[str]:
        """The paths under the content folders that differ between ``base`` and the working tree:
        changed, added, deleted (staged or not) and untracked ones. Without a base: every file."""
        if base is None:
            listed = self._out("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *CONTENT_FOLDERS)
        else:
            listed = (self._out("diff", "-z", "--name-only", "--no-renames", base, "--", *CONTENT_FOLDERS) or "") \
                + "\0" + (self._out("ls-files", "-z", "--others", "--exclude-standard", "--", *CONTENT_FOLDERS) or "")
        return {p for p in (listed or "").split("\0") if p}

    def state(self) -> dict:
        """Where the clone is: its head, its branch against the upstream, its uncommitted files."""
        commit, _, subject = (self._out("log", "-1", "--format=%H%x00%s") or "").partition("\0")
        branch = self._out("symbolic-ref", "-q", "--short", "HEAD") or None
        state: dict = {"kind": "clone", "root": str(self.root), "branch": branch,
                       "head": {"commit": commit, "subject": subject} if commit else None, "upstream": None}
        follows = self.upstream() if commit else None
        counts = self._out("rev-list", "--left-right", "--count", f"HEAD...{follows}") if follows else None
        if counts:
            ahead, behind = (int(n) for n in counts.split())
            state["upstream"] = {"branch": follows, "ahead": ahead, "behind": behind}
        uncommitted = self._out("status", "--porcelain", "--", *CONTENT_FOLDERS)
        state["uncommitted_files"] = len((uncommitted or "").splitlines())
        return state

    def history(self) -> CommitLog:
        """Reads this clone's commits and files (``list_files``, ``blobs_at``, ``read_files``)."""
        return CommitLog(self._git.run, self._git, ObjectStore(self.root))

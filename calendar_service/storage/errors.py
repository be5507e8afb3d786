"""What the store raises. Every message is safe to show: no paths outside the repository, no
credentials of a remote."""
from __future__ import annotations


class StoreError(Exception):
    """Git refused or failed."""


class BranchMoved(StoreError):
    """The branch moved between reading it and updating it; nothing was written."""


class RemoteError(StoreError):
    """The git remote could not be reached or refused a push."""


class RemoteUnavailable(RemoteError):
    """The git remote did not answer (network, authentication, missing repository, timeout)."""


class RemoteRefused(RemoteError):
    """The git remote refused a push for a reason other than a race (a hook, a protected branch)."""


class PushRejected(StoreError):
    """The remote branch moved (someone else pushed first); ``commit`` is the commit that was refused."""

    def __init__(self, message: str, commit: str):
        super().__init__(message)
        self.commit = commit


class PullRefused(StoreError):
    """The remote branch points at a commit whose tree the service refuses to check out (a path
    outside the content, a ``.git`` component, a symlink, a submodule); nothing moved."""

    def __init__(self, commit: str | None, path: str, reason: str):
        super().__init__(f"refused commit {commit} of the git remote: {path or 'a tree'}: {reason}")
        self.commit = commit
        self.path = path
        self.reason = reason

"""Running git on the content repository: a clean environment, no prompts, safe messages."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from calendar_service.domain.resources import RESOURCES
from calendar_service.storage.errors import StoreError

CONTENT_FOLDERS = tuple(RESOURCES)
ZERO = "0" * 40                                           # git's "no commit" in update-ref and raw diffs
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
SHA_LENGTH = 40                                           # hex digits of an object id
SHA = re.compile(r"^[0-9a-f]{%d}$" % SHA_LENGTH)
# git lists paths on its command line; past this many, list the whole tree and filter instead
MAX_PATH_ARGUMENTS = 500


def clean_env() -> dict:
    """The process environment without GIT_* variables (a hook or a parent git process would
    point us at another repository), with prompts off and messages in English."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def command_name(args) -> str:
    """The git command of ``args`` (its first word that is not an option or a ``-c`` value)."""
    for i, arg in enumerate(args):
        if not arg.startswith("-") and (i == 0 or args[i - 1] != "-c"):
            return arg
    return args[0] if args else "git"


class Git:
    """Runs git commands in one repository's folder."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.env = clean_env()

    def argv(self, *args: str) -> list[str]:
        """The command line of ``git args`` run in the repository."""
        return ["git", "-C", str(self.root), *args]

    def safe(self, text: str) -> str:
        """``text`` with the repository's path replaced by ``<content>``."""
        return text.replace(str(self.root), "<content>")

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """The standard output of ``git args``. Raises StoreError when git fails (with ``check``)."""
        proc = subprocess.run(self.argv(*args), input=input, capture_output=True, env=self.env)
        if check and proc.returncode != 0:
            message = self.safe(proc.stderr.decode("utf-8", "replace").strip()) or f"exit status {proc.returncode}"
            raise StoreError(f"git {command_name(args)} failed: {message}")
        return proc.stdout

    def succeeds(self, *args: str) -> bool:
        """Whether ``git args`` exits with status 0 (for commands that answer by their status)."""
        return subprocess.run(self.argv(*args), capture_output=True, env=self.env).returncode == 0

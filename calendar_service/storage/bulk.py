"""Importing many files as one commit through ``git fast-import`` (a pack, not one loose object
per file): new files, and replacements of files whose current blob the caller names."""
from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from calendar_service.storage.errors import BranchMoved, StoreError
from calendar_service.storage.gitcmd import EMPTY_TREE, Git
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import blob_sha, ident
from calendar_service.storage.writing import CommitWriter

log = logging.getLogger(__name__)

IMPORT_REF_PREFIX = "refs/calendar-import/"   # where fast-import leaves the commit before the branch moves
PROGRESS_EVERY = 2000                          # files between two progress calls
ERROR_LENGTH = 500                             # characters of fast-import's complaint kept in the message
# a top-level folder getting at least this many files has its tree made by `git mktree`: fast-import
# finds each path's entry by a linear scan of its folder, so a million files in events/ (one
# commit of a 1,000,000-event import) took time quadratic in the folder (over an hour)
MKTREE_FILES = 5000


class BulkWriter:
    """Writes an import as one commit. Must be used inside the store's write lock."""

    def __init__(self, root: Path, committer: tuple[str, str], git_cmd: Git, run: Callable[..., bytes],
                 history: CommitLog, writer: CommitWriter, head: Callable[[], str | None],
                 sync_worktree: Callable[[dict], None]):
        self.root = root
        self.committer = committer
        self._git = git_cmd
        self._run = run
        self._history = history
        self._writer = writer
        self._head = head
        self._sync_worktree = sync_worktree

    def commit_new_files(self, files: dict[str, bytes], message: str, author: tuple[str, str],
                         expected_head: str | None, progress=None, replacing: dict[str, str] | None = None) -> str:
        """Add many files as one commit on the branch; returns the new commit id.

        Every path of ``files`` must be new, except those of ``replacing`` (path -> the blob id
        the file has at ``expected_head``), which are overwritten: each must still have that blob
        both at ``expected_head`` and in the working tree (an editor's uncommitted change to it
        refuses the import rather than be lost). The commit goes to a temporary ref, then the
        branch advances (compare-and-swap) and ``git read-tree -m -u OLD NEW`` brings the index
        and working tree in line (only the files of the commit change). Raises BranchMoved if the
        branch is not at ``expected_head``, StoreError if a new path exists already (committed,
        or any file in the working tree), a replaced one changed, or git fails; in every case
        the branch and working tree are untouched. ``progress(done, total)`` is called while
        objects are written.
        """
        replacing = replacing or {}
        if self._head() != expected_head:
            raise BranchMoved("the branch moved")
        existing = self._history.list_files(expected_head) if expected_head else {}
        for path in files:
            if path in replacing:
                blob = replacing[path]
                if existing.get(path) != blob or self._worktree_blob(path) != blob:
                    raise StoreError(f"{path} changed since it was read (committed or not); nothing was imported")
            elif path in existing or os.path.lexists(self.root / path):
                raise StoreError(f"{path} exists already; nothing was imported")
        temp_ref = f"{IMPORT_REF_PREFIX}{os.getpid()}-{threading.get_ident()}"
        try:
            self._fast_import(temp_ref, files, message, author, expected_head, progress)
            new_commit = self._run("rev-parse", "--verify", temp_ref).decode().strip()
        finally:
            self._run("update-ref", "-d", temp_ref, check=False)

        def update_worktree() -> None:
            try:
                self._run("read-tree", "-m", "-u", expected_head or EMPTY_TREE, new_commit)
            except StoreError as exc:
                # the commit stands; write the files ourselves (new or unchanged since read: checked above)
                log.warning("read-tree after an import failed (%s); writing the files directly", exc)
                self._sync_worktree(files)

        self._writer.advance(expected_head, new_commit, message.splitlines()[0],
                             {p: replacing.get(p) for p in files}, update_worktree)
        return new_commit

    def _worktree_blob(self, path: str) -> str | None:
        """The blob id of the working tree's file at ``path`` (None: missing, or not a plain file)."""
        target = self.root / path
        if target.is_symlink() or not target.is_file():
            return None
        try:
            return blob_sha(target.read_bytes())
        except OSError:
            return None

    def _fast_import(self, ref: str, files: dict[str, bytes], message: str, author: tuple[str, str],
                     parent: str | None, progress) -> None:
        """Stream the commit of ``files`` on ``parent`` to ``ref`` through one ``git fast-import``.
        Raises StoreError when it fails."""
        now = int(time.time())
        body = message.strip().encode("utf-8") + b"\n"
        head_lines = [f"commit {ref}", f"author {ident(*author, now)}", f"committer {ident(*self.committer, now)}",
                      f"data {len(body)}"]
        proc = subprocess.Popen(self._git.argv("fast-import", "--quiet", "--date-format=raw", "--done", "--force"),
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=self._git.env)
        total = len(files)
        folders = self._large_folders(files)
        try:
            out = proc.stdin
            n = 0
            for folder in folders:   # their blobs first (a blob command cannot sit inside a commit)
                for path in folders[folder]:
                    content = files[path]
                    out.write(b"blob\ndata %d\n%s\n" % (len(content), content))
                    n += 1
                    if progress and (n % PROGRESS_EVERY == 0 or n == total):
                        progress(n, total)
            trees = {folder: self._folder_tree(folder, paths, files, parent) for folder, paths in folders.items()}
            out.write(("\n".join(head_lines) + "\n").encode() + body)
            if parent:
                out.write(f"from {parent}\n".encode())
            for folder, tree in trees.items():
                out.write(f"M 040000 {tree} {folder}\n".encode("utf-8"))
            in_trees = {path for paths in folders.values() for path in paths}
            inline = sorted(path for path in files if path not in in_trees)
            for path in inline:
                content = files[path]
                out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode("utf-8"), len(content), content))
                n += 1
                if progress and (n % PROGRESS_EVERY == 0 or n == total):
                    progress(n, total)
            out.write(b"\ndone\n")
            out.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read()
        if proc.wait() != 0:
            raise StoreError(f"git fast-import failed: {self._git.safe(err.decode('utf-8', 'replace').strip())[:ERROR_LENGTH]}")

    @staticmethod
    def _large_folders(files: dict[str, bytes]) -> dict[str, list[str]]:
        """Top-level folders getting at least MKTREE_FILES files directly in them (not deeper):
        folder -> those paths."""
        by_folder: dict[str, list[str]] = {}
        for path in files:
            folder, _, name = path.partition("/")
            if name and "/" not in name:
                by_folder.setdefault(folder, []).append(path)
        return {folder: paths for folder, paths in sorted(by_folder.items()) if len(paths) >= MKTREE_FILES}

    def _folder_tree(self, folder: str, paths: list[str], files: dict[str, bytes], parent: str | None) -> str:
        """The tree of ``folder`` at ``parent`` with ``paths`` added or replaced, written by `git
        mktree` (its blobs are still in fast-import's stream: --missing). Raises StoreError."""
        entries: dict[bytes, bytes] = {}
        if parent:
            listing = self._run("ls-tree", "-z", f"{parent}:{folder}", check=False)
            for line in listing.split(b"\0"):
                if b"\t" in line:
                    entries[line.split(b"\t", 1)[1]] = line
        for path in paths:
            name = path.partition("/")[2].encode("utf-8")
            entries[name] = b"100644 blob %s\t%s" % (blob_sha(files[path]).encode(), name)
        tree = self._run("mktree", "-z", "--missing", input=b"\0".join(entries.values()) + b"\0")
        return tree.decode().strip()

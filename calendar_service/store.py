"""The git-backed store: reads files at a commit and writes changes as exactly one commit.

Writes build blobs, trees and the commit object in process through GitPython's object
database, then move the branch with ``git update-ref NEW OLD`` (a compare-and-swap: it
refuses if the branch moved meanwhile), then bring the working tree and the index in line.
That is one short-lived git process per write instead of five (MEASURED.md: 30 ms for
plumbing through processes, 540 ms through GitPython's index API at 10,000 files).

A journal in the git directory records a write between the ref update and the working
tree update, so a process killed there is finished by the next start (``recover``).
Writers are serialized across threads and processes by ``write_lock``.
"""
from __future__ import annotations

import bisect
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import subprocess
import tempfile
import threading
import time
import zlib
from io import BytesIO
from pathlib import Path

import git
from gitdb import IStream

from .resources import RESOURCES

log = logging.getLogger(__name__)

CONTENT_FOLDERS = tuple(RESOURCES)
ZERO = "0" * 40
TREE_MODE = 0o40000
BLOB_MODE = 0o100644
_SHA = re.compile(r"^[0-9a-f]{40}$")


class StoreError(Exception):
    """Git refused or failed; the message is safe to show (no paths outside the repository)."""


class BranchMoved(StoreError):
    """The branch moved between reading it and updating it; nothing was written."""


def blob_sha(data: bytes) -> str:
    """The id git gives a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _clean_env() -> dict:
    # GIT_DIR and friends set by a hook or a parent git process would point us elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def _identity(text: str) -> str:
    # git forbids these in names and e-mails of an ident line
    return re.sub(r"[<>\n\r\0]", "", text).strip() or "unknown"


class _Tree:
    """A git tree object as sorted entries: ``keys`` in git's order, ``entries`` their raw bytes."""

    __slots__ = ("keys", "entries")

    def __init__(self, keys: list, entries: list):
        self.keys = keys
        self.entries = entries

    @classmethod
    def parse(cls, raw: bytes) -> "_Tree":
        keys, entries = [], []
        pos, end = 0, len(raw)
        while pos < end:
            nul = raw.index(b"\0", pos)
            mode, _, name = raw[pos:nul].partition(b" ")
            stop = nul + 21
            keys.append(name + b"/" if mode == b"40000" else name)
            entries.append(raw[pos:stop])
            pos = stop
        return cls(keys, entries)

    def copy(self) -> "_Tree":
        return _Tree(list(self.keys), list(self.entries))

    @staticmethod
    def _key(name: bytes, mode: int) -> bytes:
        return name + b"/" if mode == TREE_MODE else name  # git sorts a folder as "name/"

    def get(self, name: bytes, mode: int) -> bytes | None:
        key = self._key(name, mode)
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return self.entries[i][-20:]
        return None

    def remove(self, name: bytes, mode: int) -> None:
        for key in (self._key(name, mode), self._key(name, TREE_MODE if mode != TREE_MODE else BLOB_MODE)):
            i = bisect.bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                del self.keys[i]
                del self.entries[i]

    def put(self, name: bytes, mode: int, sha: bytes) -> None:
        self.remove(name, mode)
        key = self._key(name, mode)
        i = bisect.bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.entries.insert(i, b"%o %s\0%s" % (mode, name, sha))


class _LooseObjectWriter:
    """GitPython's object database for reading; objects are written by this process.

    GitPython stores each object through a new ``git hash-object`` process (four per API
    write, a third of its time in the benchmark); a loose object is just the zlib-compressed
    ``type size\0content`` at ``objects/xx/yyyy...``, written to a temporary file and renamed.
    """

    class Stored:
        __slots__ = ("binsha", "hexsha")

        def __init__(self, binsha: bytes):
            self.binsha = binsha
            self.hexsha = binsha.hex()

    def __init__(self, repo):
        self._odb = repo.odb
        self._objects = Path(repo.common_dir) / "objects"

    def stream(self, sha):
        return self._odb.stream(sha)

    def store(self, istream) -> "_LooseObjectWriter.Stored":
        data = istream.stream.read()
        raw = b"%s %d\0" % (istream.type, len(data)) + data
        stored = self.Stored(hashlib.sha1(raw).digest())
        target = self._objects / stored.hexsha[:2] / stored.hexsha[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix="tmp_obj_")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(zlib.compress(raw))
                os.chmod(tmp, 0o444)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        return stored


class GitStore:
    """A content repository on disk: one branch, five folders of record files."""

    def __init__(self, root: Path, branch: str = "main", committer: tuple[str, str] = ("Calendar Service", "calendar-service@localhost")):
        self.root = Path(root)
        self.branch = branch
        self.committer = committer
        self._thread_lock = threading.RLock()
        self._repo: git.Repo | None = None
        self._trees: dict[bytes, _Tree] = {}
        self._env = _clean_env()

    # ----------------------------------------------------------------------------- setup

    @property
    def git_dir(self) -> Path:
        return self.root / ".git"

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").exists()

    def init(self) -> None:
        """Create the repository (empty, on ``branch``) if there is none."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.exists():
            self._git("init", "-q", "-b", self.branch)

    def close(self) -> None:
        """Release the git helper processes GitPython keeps per Repo."""
        with self._thread_lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    def _odb(self):
        if self._repo is None:
            self._repo = git.Repo(self.root)
        return _LooseObjectWriter(self._repo)

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        proc = subprocess.run(["git", "-C", str(self.root), *args], input=input, capture_output=True,
                              env=self._env)
        if check and proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip().replace(str(self.root), "<content>")
            raise StoreError(f"git {args[0]} failed: {message}")
        return proc.stdout

    # ----------------------------------------------------------------------------- reading

    def head(self) -> str | None:
        """The commit the branch points at, or None for a repository without commits.

        Reads the ref file directly (microseconds), falling back to packed refs.
        """
        ref = f"refs/heads/{self.branch}"
        try:
            value = (self.git_dir / ref).read_text().strip()
            if _SHA.match(value):
                return value
        except (FileNotFoundError, NotADirectoryError):
            pass
        try:
            for line in (self.git_dir / "packed-refs").read_text().splitlines():
                if line.endswith(" " + ref) and _SHA.match(line[:40]):
                    return line[:40]
        except FileNotFoundError:
            pass
        return None

    def list_files(self, commit: str) -> dict[str, str]:
        """Every file under the content folders at ``commit``: path -> blob id."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit, "--", *CONTENT_FOLDERS)
        files = {}
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, sha = meta.split()
            if kind == b"blob":
                files[path.decode("utf-8", "surrogateescape")] = sha.decode()
        return files

    def changed_files(self, old: str, new: str) -> dict[str, str | None]:
        """Paths under the content folders that differ between two commits: path -> new blob or None."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", old, new, "--", *CONTENT_FOLDERS)
        parts = out.split(b"\0")
        changes: dict[str, str | None] = {}
        i = 0
        while i < len(parts) - 1:
            meta = parts[i].decode()
            if not meta.startswith(":"):
                i += 1
                continue
            _, new_mode, _, new_sha, status = meta[1:].split()
            path = parts[i + 1].decode("utf-8", "surrogateescape")
            changes[path] = None if status.startswith("D") else new_sha
            i += 2
        return changes

    def read_blobs(self, shas) -> dict[str, bytes]:
        """Contents of many blobs in one ``git cat-file --batch`` run: sha -> bytes."""
        shas = list(dict.fromkeys(shas))
        if not shas:
            return {}
        out = self._git("cat-file", "--batch", input=("\n".join(shas) + "\n").encode())
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in shas:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            blobs[sha] = out[pos:pos + size]
            pos += size + 1
        return blobs

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = subprocess.run(["git", "-C", str(self.root), "merge-base", "--is-ancestor", older, newer],
                              capture_output=True, env=self._env)
        return proc.returncode == 0

    # ----------------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def write_lock(self):
        """Hold the repository's write lock: one writer at a time across threads and processes."""
        with self._thread_lock:
            self.git_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.git_dir / "calendar-write.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def commit(self, changes: dict[str, bytes | None], message: str, author: tuple[str, str],
               expected_head: str | None) -> str:
        """Write ``changes`` (path -> new content, None to delete) as one commit on the branch.

        Must be called inside ``write_lock``. ``expected_head`` is the commit the changes
        were computed against; if the branch is elsewhere now, BranchMoved is raised and
        nothing is written. A working-tree file that differs from ``expected_head`` (an
        editor's uncommitted change) makes the write fail with StoreError before anything
        is committed, so nothing anyone wrote is overwritten. Returns the new commit id.
        """
        if self.head() != expected_head:
            raise BranchMoved("the branch moved")
        old_blobs = self._blobs_at(expected_head, changes)
        for path in changes:
            self._check_worktree_clean(path, old_blobs.get(path))
        with self._thread_lock:
            odb = self._odb()
            root_tree = self._commit_tree(odb, expected_head) if expected_head else None
            new_root = self._write_tree(odb, root_tree, self._group(changes))
            now = int(time.time())
            offset = time.strftime("%z", time.localtime(now))
            lines = [f"tree {new_root.hex()}"]
            if expected_head:
                lines.append(f"parent {expected_head}")
            lines.append(f"author {_identity(author[0])} <{_identity(author[1])}> {now} {offset}")
            lines.append(f"committer {_identity(self.committer[0])} <{_identity(self.committer[1])}> {now} {offset}")
            body = ("\n".join(lines) + "\n\n" + message.strip() + "\n").encode("utf-8")
            new_commit = odb.store(IStream(b"commit", len(body), BytesIO(body))).hexsha
            if isinstance(new_commit, bytes):
                new_commit = new_commit.decode()
        journal = {"commit": new_commit, "old": expected_head, "paths": {p: old_blobs.get(p) for p in changes}}
        self._write_journal(journal)
        try:
            self._git("update-ref", "-m", message.splitlines()[0][:200], f"refs/heads/{self.branch}",
                      new_commit, expected_head or ZERO)
        except StoreError:
            self._clear_journal()
            if self.head() != expected_head:
                raise BranchMoved("the branch moved") from None
            raise
        self._sync_worktree(changes)
        self._clear_journal()
        return new_commit

    def _blobs_at(self, commit: str | None, paths) -> dict[str, str]:
        """Blob ids of ``paths`` at ``commit`` (absent paths left out)."""
        if not commit:
            return {}
        paths = list(paths)
        if len(paths) > 500:  # a command line has a size limit: list the whole tree instead
            wanted = set(paths)
            return {p: sha for p, sha in self.list_files(commit).items() if p in wanted}
        out = self._git("ls-tree", "-z", "--full-tree", commit, "--", *paths)
        found = {}
        for entry in out.split(b"\0"):
            if entry:
                meta, _, path = entry.partition(b"\t")
                found[path.decode()] = meta.split()[2].decode()
        return found

    def _check_worktree_clean(self, path: str, old_blob: str | None) -> None:
        file = self.root / path
        try:
            current = blob_sha(file.read_bytes())
        except FileNotFoundError:
            current = None
        if current != old_blob:
            raise StoreError(f"{path} has uncommitted changes in the content repository's working tree; "
                             "commit or discard them first")

    @staticmethod
    def _group(changes: dict[str, bytes | None]) -> dict:
        tree: dict = {}
        for path, content in changes.items():
            node = tree
            *folders, name = path.split("/")
            for folder in folders:
                node = node.setdefault(folder, {})
            node[name] = content
        return tree

    def _commit_tree(self, odb, commit: str) -> bytes:
        data = odb.stream(bytes.fromhex(commit)).read()
        return bytes.fromhex(data[5:45].decode())

    def _tree(self, odb, tree_sha: bytes) -> "_Tree":
        tree = self._trees.get(tree_sha)
        if tree is None:
            tree = _Tree.parse(odb.stream(tree_sha).read())
            self._remember(tree_sha, tree)
        return tree

    def _remember(self, tree_sha: bytes, tree: "_Tree") -> None:
        # the root and the five folders of the last few commits are all a write needs
        if len(self._trees) >= 16:
            self._trees.pop(next(iter(self._trees)))
        self._trees[tree_sha] = tree

    def _write_tree(self, odb, tree_sha: bytes | None, changes: dict) -> bytes | None:
        """Write the tree ``tree_sha`` with ``changes`` applied; None when it ends up empty.

        Parsed trees are kept sorted in memory (git's order), so a write touching one file
        of a 100,000-file folder costs a bisect and a join, not a parse and a sort.
        """
        tree = self._tree(odb, tree_sha).copy() if tree_sha is not None else _Tree([], [])
        for name, change in changes.items():
            encoded = name.encode("utf-8")
            if isinstance(change, dict):
                current = tree.get(encoded, TREE_MODE)
                sub = self._write_tree(odb, current, change)
                tree.remove(encoded, TREE_MODE)
                if sub is not None:
                    tree.put(encoded, TREE_MODE, sub)
            elif change is None:
                tree.remove(encoded, BLOB_MODE)
            else:
                blob = odb.store(IStream(b"blob", len(change), BytesIO(change))).binsha
                tree.put(encoded, BLOB_MODE, blob)
        if not tree.entries and tree_sha is not None:
            return None
        raw = b"".join(tree.entries)
        sha = odb.store(IStream(b"tree", len(raw), BytesIO(raw))).binsha
        self._remember(sha, tree)
        return sha

    def _sync_worktree(self, changes: dict[str, bytes | None]) -> None:
        for path, content in changes.items():
            target = self.root / path
            if content is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        try:
            # paths go through standard input: a write may touch more than a command line holds
            self._git("update-index", "-q", "--add", "--remove", "-z", "--stdin",
                      input=b"".join(p.encode() + b"\0" for p in changes))
        except StoreError as exc:
            # The commit stands; only `git status` in the server's checkout is affected.
            log.warning("could not refresh the git index after a write: %s", exc)

    # ----------------------------------------------------------------------------- recovery

    @property
    def _journal_path(self) -> Path:
        return self.git_dir / "calendar-journal.json"

    def _write_journal(self, journal: dict) -> None:
        tmp = self._journal_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(journal))
        os.replace(tmp, self._journal_path)

    def _clear_journal(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._journal_path.unlink()

    def recover(self) -> None:
        """Finish a write that a killed process left between the ref update and the working tree.

        Only files still holding their pre-write content are touched; anything else in the
        working tree is somebody's work and is left alone.
        """
        with self.write_lock():
            try:
                journal = json.loads(self._journal_path.read_text())
            except FileNotFoundError:
                return
            except ValueError:
                self._clear_journal()
                return
            head = self.head()
            commit = journal.get("commit")
            if head and commit and (head == commit or self.is_ancestor(commit, head)):
                current = self._blobs_at(head, journal["paths"])
                contents = self.read_blobs(v for v in current.values())
                for path, old_blob in journal["paths"].items():
                    file = self.root / path
                    on_disk = blob_sha(file.read_bytes()) if file.exists() else None
                    if on_disk != old_blob:
                        continue
                    new_blob = current.get(path)
                    self._sync_worktree({path: contents[new_blob] if new_blob else None})
                log.info("finished an interrupted write of commit %s", commit[:12])
            self._clear_journal()

    # ----------------------------------------------------------------------------- bulk import

    EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

    def commit_new_files(self, files: dict[str, bytes], message: str, author: tuple[str, str],
                         expected_head: str | None, progress=None) -> str:
        """Add many NEW files as one commit on the branch; returns the new commit id.

        For imports: objects are streamed through one ``git fast-import`` (a pack, not one
        loose object per file), the commit goes to a temporary ref, then the branch moves
        with ``update-ref NEW OLD`` (compare-and-swap) and ``git read-tree -m -u OLD NEW``
        brings the index and working tree in line (it only adds the new files). Must be
        called inside ``write_lock``. Raises BranchMoved if the branch is not at
        ``expected_head``, StoreError if a path exists already (committed, or any file in
        the working tree) or git fails; in both cases the branch and working tree are
        untouched. ``progress(done, total)`` is called while objects are written.
        """
        if self.head() != expected_head:
            raise BranchMoved("the branch moved")
        existing = self.list_files(expected_head) if expected_head else {}
        for path in files:
            if path in existing or os.path.lexists(self.root / path):
                raise StoreError(f"{path} exists already; nothing was imported")
        now = int(time.time())
        offset = time.strftime("%z", time.localtime(now))
        temp_ref = f"refs/calendar-import/{os.getpid()}-{threading.get_ident()}"
        body = message.strip().encode("utf-8") + b"\n"
        head_lines = [f"commit {temp_ref}",
                      f"author {_identity(author[0])} <{_identity(author[1])}> {now} {offset}",
                      f"committer {_identity(self.committer[0])} <{_identity(self.committer[1])}> {now} {offset}",
                      f"data {len(body)}"]
        proc = subprocess.Popen(["git", "-C", str(self.root), "fast-import", "--quiet", "--date-format=raw",
                                 "--done", "--force"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=self._env)
        total = len(files)
        try:
            out = proc.stdin
            out.write(("\n".join(head_lines) + "\n").encode() + body)
            if expected_head:
                out.write(f"from {expected_head}\n".encode())
            for n, (path, content) in enumerate(sorted(files.items()), 1):
                out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode("utf-8"), len(content), content))
                if progress and (n % 2000 == 0 or n == total):
                    progress(n, total)
            out.write(b"\ndone\n")
            out.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read()
        if proc.wait() != 0:
            self._git("update-ref", "-d", temp_ref, check=False)
            message_text = err.decode("utf-8", "replace").strip().replace(str(self.root), "<content>")
            raise StoreError(f"git fast-import failed: {message_text[:500]}")
        new_commit = self._git("rev-parse", "--verify", temp_ref).decode().strip()
        self._git("update-ref", "-d", temp_ref, check=False)
        journal = {"commit": new_commit, "old": expected_head, "paths": {p: None for p in files}}
        self._write_journal(journal)
        try:
            self._git("update-ref", "-m", message.splitlines()[0][:200], f"refs/heads/{self.branch}",
                      new_commit, expected_head or ZERO)
        except StoreError:
            self._clear_journal()
            if self.head() != expected_head:
                raise BranchMoved("the branch moved") from None
            raise
        try:
            self._git("read-tree", "-m", "-u", expected_head or self.EMPTY_TREE, new_commit)
        except StoreError as exc:
            # the commit stands; write the files ourselves (none existed: checked above)
            log.warning("read-tree after an import failed (%s); writing the files directly", exc)
            self._sync_worktree(files)
        self._clear_journal()
        return new_commit

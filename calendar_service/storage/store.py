"""The git-backed store: reads files at a commit and writes changes as exactly one commit.

Writes build blobs, trees and the commit object in process through GitPython's object
database, then move the branch with ``git update-ref NEW OLD`` (a compare-and-swap: it
refuses if the branch moved meanwhile), then bring the working tree and the index in line.
That is one short-lived git process per write instead of five (MEASURED.md: 30 ms for
plumbing through processes, 540 ms through GitPython's index API at 10,000 files).

A journal in the git directory records a write between the ref update and the working
tree update, so a process killed there is finished by the next start (``recover``).
Writers are serialized across threads and processes by ``write_lock``.

With a git remote configured, a write is pushed before the local branch moves, and
``pull`` brings the branch in line with the remote (fast-forward, or local commits
replayed onto the remote's head); see the README's "Git remote".
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
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

import git
from gitdb import IStream

from calendar_service.config import without_userinfo
from calendar_service.domain.resources import RESOURCES

log = logging.getLogger(__name__)

CONTENT_FOLDERS = tuple(RESOURCES)
ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
TREE_MODE = 0o40000
BLOB_MODE = 0o100644
_SHA = re.compile(r"^[0-9a-f]{40}$")
REMOTE_TIMEOUT = 120          # seconds one fetch, push or ls-remote may take
REMOTE_ATTEMPTS = 5           # pushes a pull tries when it keeps losing races
REMOTE_REF_PREFIX = "refs/calendar/remote/"
CONFLICT_REF_PREFIX = "refs/calendar/conflicts/"
FILE_MODES = (0o100644, 0o100755)
# how git reports a push that lost a race against another push (rather than a refusal)
RACE_WORDS = ("fetch first", "non-fast-forward", "stale info", "cannot lock", "failed to lock", "unable to lock",
              "failed to update ref", "incorrect old value")
# A git lock file older than this, found while we hold the write lock, was left by a killed
# process. Younger ones may belong to an editor's git command running in the checkout.
STALE_LOCK_SECONDS = 30


class StoreError(Exception):
    """Git refused or failed; the message is safe to show (no paths outside the repository)."""


class BranchMoved(StoreError):
    """The branch moved between reading it and updating it; nothing was written."""


class RemoteError(StoreError):
    """The git remote could not be reached or refused a push; the message carries no credentials."""


class RemoteUnavailable(RemoteError):
    """The git remote did not answer (network, authentication, missing repository, timeout)."""


class RemoteRefused(RemoteError):
    """The git remote refused a push for a reason other than a race (a hook, a protected branch)."""


class PushRejected(StoreError):
    """The remote branch moved (someone else pushed first); ``commit`` is the commit that was refused."""

    def __init__(self, message: str, commit: str):
        super().__init__(message)
        self.commit = commit


@dataclass
class PullResult:
    """What a pull did: the branch head after it, whether the branch moved, whether local commits
    were pushed, and the local commits kept aside under ``refs/calendar/conflicts/``."""

    head: str | None
    moved: bool = False
    pushed: bool = False
    conflicts: list = field(default_factory=list)


def blob_sha(data: bytes) -> str:
    """The id git gives a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_atomically(target: Path, data: bytes, mode: int, prefix: str) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder and a rename,
    so a reader (or a killed process) sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
            write_atomically(target, zlib.compress(raw), 0o444, "tmp_obj_")
        return stored


class GitStore:
    """A content repository on disk: one branch, five folders of record files."""

    def __init__(self, root: Path, branch: str = "main", committer: tuple[str, str] = ("Calendar Service", "calendar-service@localhost"),
                 remote: str = "", remote_branch: str | None = None):
        self.root = Path(root)
        self.branch = branch
        self.committer = committer
        self.remote = remote                        # URL, path or remote name; "" = none
        self.remote_branch = remote_branch or branch
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
        return {path: entry[3] for path, entry in self._diff_tree(old, new).items()}

    def _diff_tree(self, old: str | None, new: str, whole_tree: bool = False) -> dict[str, tuple]:
        """Paths that differ between two commits (``old`` None: the empty tree), under the content
        folders or, with ``whole_tree``, anywhere: path -> (old mode, new mode, old blob or None,
        new blob or None). One ``git diff-tree``, read from its ``-z`` raw output."""
        args = ["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", old or EMPTY_TREE, new]
        if not whole_tree:
            args += ["--", *CONTENT_FOLDERS]
        parts = self._git(*args).split(b"\0")
        found: dict[str, tuple] = {}
        i = 0
        while i < len(parts) - 1:
            meta = parts[i].decode("ascii", "replace")
            if not meta.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, old_sha, new_sha, _status = meta[1:].split()
            path = parts[i + 1].decode("utf-8", "surrogateescape")
            found[path] = (int(old_mode, 8), int(new_mode, 8), None if old_sha == ZERO else old_sha,
                           None if new_sha == ZERO else new_sha)
            i += 2
        return found

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

    # ----------------------------------------------------------------------------- history

    def resolve_commit(self, value: str) -> str | None:
        """The full id of the commit ``value`` (4 to 40 hex digits) names, or None when it names
        no commit or several. Only hex ever reaches git, so a value can never become an option."""
        if not re.fullmatch(r"[0-9a-f]{4,40}", value or ""):
            return None
        out = self._git("rev-parse", "--verify", "--quiet", f"{value}^{{commit}}", check=False).strip()
        found = out.decode("ascii", "replace")
        return found if _SHA.match(found) else None

    def log(self, folder: str, head: str | None = None, since: str | None = None) -> list[dict]:
        """Every commit of the branch (newest first) that changed a file under ``folder``, in one
        ``git log`` run: dicts with ``commit``, ``author`` (name, email), ``date`` (ISO 8601),
        ``message`` and ``changes``, a list of (status, path, old blob or None, new blob or None).
        With ``since`` (an ancestor of ``head``), only the commits after it."""
        head = head or self.head()
        if head is None or folder not in CONTENT_FOLDERS:
            return []
        span = f"{since}..{head}" if since else head
        out = self._git("log", "-z", "--raw", "--no-renames", "--no-abbrev",
                        "--format=%x01%H%x00%an%x00%ae%x00%aI%x00%B", span, "--", folder + "/")
        commits = []
        for chunk in out.split(b"\x01")[1:]:
            parts = chunk.split(b"\0")
            sha, name, email, date, body = (p.decode("utf-8", "replace") for p in parts[:5])
            changes = []
            i = 5
            while i < len(parts) - 1:
                meta = parts[i].strip().decode("ascii", "replace")
                if not meta.startswith(":"):
                    i += 1
                    continue
                _, _, old_sha, new_sha, status = meta[1:].split()
                path = parts[i + 1].decode("utf-8", "surrogateescape")
                changes.append((status[0], path, None if old_sha == ZERO else old_sha,
                                None if new_sha == ZERO else new_sha))
                i += 2
            commits.append({"commit": sha, "author": {"name": name, "email": email}, "date": date,
                            "message": body.strip(), "changes": changes})
        return commits

    def read_object(self, sha: str) -> bytes | None:
        """The content of one blob, read in process (GitPython keeps one ``cat-file`` running),
        so walking history costs no process per commit. None when it does not exist."""
        with self._thread_lock:
            try:
                return self._odb().stream(bytes.fromhex(sha)).read()
            except (ValueError, git.BadObject, git.BadName):
                return None
            except Exception:  # a missing object surfaces differently across GitPython versions
                return None

    def diff(self, old: str | None, new: str) -> dict[str, tuple[str | None, str | None]]:
        """Paths under the content folders that differ between two commits (``old`` None: the
        empty tree): path -> (old blob or None, new blob or None)."""
        return {path: (entry[2], entry[3]) for path, entry in self._diff_tree(old, new).items()}

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
               expected_head: str | None, push: bool = False) -> str:
        """Write ``changes`` (path -> new content, None to delete) as one commit on the branch.

        Must be called inside ``write_lock``. ``expected_head`` is the commit the changes
        were computed against; if the branch is elsewhere now, BranchMoved is raised and
        nothing is written. A working-tree file that differs from ``expected_head`` (an
        editor's uncommitted change) makes the write fail with StoreError before anything
        is committed, so nothing anyone wrote is overwritten. With ``push``, the commit is
        pushed to the remote before the branch moves: PushRejected or RemoteError then
        leave the branch untouched. Returns the new commit id.
        """
        if self.head() != expected_head:
            raise BranchMoved("the branch moved")
        message = message.replace("\0", "")  # git refuses a NUL in a commit object
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
        if push:
            self.push(new_commit)
        journal = {"commit": new_commit, "old": expected_head, "paths": {p: old_blobs.get(p) for p in changes}}
        self._write_journal(journal)
        update = ("update-ref", "-m", message.splitlines()[0][:200], f"refs/heads/{self.branch}",
                  new_commit, expected_head or ZERO)
        try:
            try:
                self._git(*update)
            except StoreError:
                if not self.remove_stale_locks():
                    raise
                self._git(*update)  # a killed process had left the ref locked
        except StoreError:
            self._clear_journal()
            if self.head() != expected_head:
                if push:
                    # the commit is on the remote already: put the branch's newcomer on top of it
                    self._follow_pushed(new_commit)
                    return new_commit
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
            return {p: entry[1] for p, entry in self._entries(commit).items() if p in wanted}
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
            elif isinstance(change, tuple):  # (mode, blob id) of an object that exists already
                tree.put(encoded, change[0], bytes.fromhex(change[1]))
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
            write_atomically(target, content, 0o644, ".tmp-")
        try:
            # paths go through standard input: a write may touch more than a command line holds
            self._git("update-index", "-q", "--add", "--remove", "-z", "--stdin",
                      input=b"".join(p.encode() + b"\0" for p in changes))
        except StoreError as exc:
            # The commit stands; only `git status` in the server's checkout is affected.
            log.warning("could not refresh the git index after a write: %s", exc)

    # ----------------------------------------------------------------------------- remote

    def _remote_git(self, *args: str) -> subprocess.CompletedProcess:
        """Run a git command that talks to the remote (no prompts, bounded time).

        Raises RemoteUnavailable when it does not finish within REMOTE_TIMEOUT seconds.
        """
        env = dict(self._env)
        for name in ("GIT_SSH_COMMAND", "GIT_SSH"):  # how the operator reaches an ssh remote
            if os.environ.get(name):
                env[name] = os.environ[name]
        try:
            return subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, env=env,
                                  timeout=REMOTE_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise RemoteUnavailable(f"git {args[0]}: the remote {self.remote_display} did not answer "
                                    f"within {REMOTE_TIMEOUT} s") from None

    @property
    def remote_display(self) -> str:
        """The remote as messages may show it: without credentials."""
        return without_userinfo(self.remote)

    def _remote_message(self, command: str, stderr: bytes) -> str:
        """The reason git gave, safe to show: no credentials, no server paths, no hints."""
        lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()
                 if line.strip() and not line.startswith("hint:")]
        reason = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
        if self.remote:
            reason = reason.replace(self.remote, self.remote_display)
        reason = reason.replace(str(self.root), "<content>")
        return without_userinfo(f"git {command} {self.remote_display} failed: {reason}".strip())

    def remote_head(self) -> str | None:
        """The commit the remote branch points at, None when the remote has no such branch.

        Reads nothing into the repository (safe without the write lock). Raises RemoteUnavailable.
        """
        ref = f"refs/heads/{self.remote_branch}"
        proc = self._remote_git("ls-remote", "--", self.remote, ref)
        if proc.returncode != 0:
            raise RemoteUnavailable(self._remote_message("ls-remote", proc.stderr))
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition("\t")
            if name == ref and _SHA.match(sha):
                return sha
        return None

    def fetch(self) -> str | None:
        """Fetch the remote branch (into ``refs/calendar/remote/<branch>``); return its commit,
        None when the remote has no such branch. Call inside ``write_lock``. Raises RemoteUnavailable.
        """
        tracking = REMOTE_REF_PREFIX + self.remote_branch
        proc = self._remote_git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", self.remote,
                                f"+refs/heads/{self.remote_branch}:{tracking}")
        if proc.returncode == 0:
            return self._git("rev-parse", "--verify", "-q", tracking + "^{commit}").decode().strip()
        if self.remote_head() is None:  # reachable, but the branch does not exist (yet)
            return None
        raise RemoteUnavailable(self._remote_message("fetch", proc.stderr))

    def push(self, commit: str) -> None:
        """Make the remote branch point at ``commit`` if that is a fast-forward.

        Raises PushRejected when the remote branch moved meanwhile (fetch and retry),
        RemoteRefused when the remote declined for another reason, RemoteUnavailable when
        it could not be reached. Nothing local changes either way.
        """
        proc = self._remote_git("push", "--porcelain", "--", self.remote, f"{commit}:refs/heads/{self.remote_branch}")
        if proc.returncode == 0:
            return
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("!"):
                summary = line.split("\t")[2] if line.count("\t") >= 2 else line
                if "[rejected]" in summary or any(w in summary for w in RACE_WORDS):
                    raise PushRejected(f"the remote branch moved: {summary}", commit)
                raise RemoteRefused(without_userinfo(f"the remote {self.remote_display} refused the push: {summary}"))
        raise RemoteUnavailable(self._remote_message("push", proc.stderr))

    def pull(self) -> PullResult:
        """Fetch the remote and bring the branch in line with it, under the write lock.

        Behind: fast-forward. Ahead: push. Diverged: local commits replayed onto the remote
        head (conflicting ones kept under ``refs/calendar/conflicts/``), then pushed.
        Raises RemoteUnavailable (nothing changed) or BranchMoved (an editor committed in
        this checkout meanwhile; pull again).
        """
        with self.write_lock():
            return self.pull_locked()

    def pull_locked(self) -> PullResult:
        """``pull`` for a caller that holds the write lock already."""
        result = PullResult(self.head())
        for attempt in range(REMOTE_ATTEMPTS):
            remote = self.fetch()
            local = self.head()
            if local == remote:
                break
            if local is None or (remote is not None and self.is_ancestor(local, remote)):
                self._move_branch(local, remote)
                result.moved = True
                break
            if remote is not None and not self.is_ancestor(remote, local):
                new_head, conflicts = self._replay(local, remote)
                self._move_branch(local, new_head)
                result.moved = True
                result.conflicts += conflicts
            head = self.head()
            if head == remote:
                break
            try:
                self.push(head)
                result.pushed = True
                break
            except PushRejected:
                log.info("push to %s lost a race; fetching again (%d)", self.remote_display, attempt + 1)
            except RemoteRefused as exc:
                log.warning("%s; the local commits stay on the branch", exc)
                break
        else:
            log.warning("could not push to %s after %d attempts; the next pull tries again",
                        self.remote_display, REMOTE_ATTEMPTS)
        result.head = self.head()
        return result

    def _follow_pushed(self, pushed: str) -> None:
        """After ``pushed`` reached the remote but the branch moved locally (an editor's commit in
        this checkout): replay the local commits onto it, then push them (best effort)."""
        local = self.head()
        new_head, conflicts = self._replay(local, pushed)
        self._move_branch(local, new_head)
        if new_head != pushed:
            try:
                self.push(new_head)
            except StoreError as exc:
                log.warning("local commits not pushed yet (%s); the next pull pushes them", exc)

    def keep_aside(self, commit: str) -> str:
        """Keep ``commit`` reachable under ``refs/calendar/conflicts/<sha>``; returns the ref name."""
        ref = CONFLICT_REF_PREFIX + commit
        self._git("update-ref", ref, commit)
        return ref

    def clashes(self, base: str | None, head: str | None, changes: dict[str, bytes | None]) -> list[str]:
        """Paths of ``changes`` (computed against ``base``) whose file existed at ``base`` and
        was changed differently by ``head``: the write would overwrite someone else's edit."""
        if not base or not head or base == head:
            return []
        before = self._entries_at(base, changes)
        after = self._entries_at(head, changes)
        found = []
        for path, content in changes.items():
            old = before.get(path)
            new = after.get(path)
            wanted = blob_sha(content) if content is not None else None
            if old is not None and new != old and (new[1] if new else None) != wanted:
                found.append(path)
        return sorted(found)

    def _entries(self, commit: str | None) -> dict[str, tuple[int, str]]:
        """Every file of ``commit`` (the whole tree): path -> (mode, object id)."""
        if not commit:
            return {}
        return self._parse_ls_tree(self._git("ls-tree", "-r", "-z", "--full-tree", commit))

    def _entries_at(self, commit: str | None, paths) -> dict[str, tuple[int, str]]:
        """(mode, object id) of those ``paths`` that exist at ``commit``."""
        paths = list(paths)
        if not commit or not paths:
            return {}
        if len(paths) > 500:  # a command line has a size limit: list the whole tree instead
            wanted = set(paths)
            return {p: e for p, e in self._entries(commit).items() if p in wanted}
        return self._parse_ls_tree(self._git("ls-tree", "-z", "--full-tree", commit, "--", *paths))

    @staticmethod
    def _parse_ls_tree(out: bytes) -> dict[str, tuple[int, str]]:
        found = {}
        for entry in out.split(b"\0"):
            if entry:
                meta, _, path = entry.partition(b"\t")
                mode, kind, sha = meta.split()
                if kind != b"tree":
                    found[path.decode("utf-8", "surrogateescape")] = (int(mode, 8), sha.decode())
        return found

    def _diff(self, old: str | None, new: str) -> dict[str, tuple[int, str] | None]:
        """Every path that differs between two commits (whole tree): path -> (mode, id) or None if deleted."""
        return {path: None if entry[3] is None else (entry[1], entry[3])
                for path, entry in self._diff_tree(old, new, whole_tree=True).items()}

    def _replay(self, local: str, onto: str) -> tuple[str, list[str]]:
        """Replay the commits of ``local`` that ``onto`` lacks onto ``onto``, one by one, keeping
        each one's author, committer (with dates) and message.

        A commit that changes a file ``onto`` changed differently is not replayed: it is kept
        under ``refs/calendar/conflicts/<sha>`` and logged. Returns (new head, kept commits).
        """
        listing = self._git("rev-list", "--reverse", "--first-parent", local, "--not", onto).decode().split()
        odb = self._odb()
        tip, conflicts = onto, []
        for commit in listing:
            raw = odb.stream(bytes.fromhex(commit)).read()
            header, _, message = raw.partition(b"\n\n")
            lines = header.split(b"\n")
            parents = [line[7:].decode() for line in lines if line.startswith(b"parent ")]
            changes = self._diff(parents[0] if parents else None, commit)
            before = self._entries_at(parents[0] if parents else None, changes)
            now = self._entries_at(tip, changes)
            clash = sorted(p for p, v in changes.items() if now.get(p) != before.get(p) and now.get(p) != v)
            if clash:
                ref = self.keep_aside(commit)
                conflicts.append(commit)
                log.warning("commit %s conflicts with the remote (%s); the remote's version stays on the branch, "
                            "the commit is kept as %s", commit[:12], ", ".join(clash[:5]), ref)
                continue
            apply = {p: v for p, v in changes.items() if now.get(p) != v}
            if not apply:
                continue  # the remote has this change already
            with self._thread_lock:
                root = self._write_tree(odb, self._commit_tree(odb, tip), self._group(apply))
                kept = [line for line in lines if line.startswith((b"author ", b"committer ", b"encoding "))]
                body = b"\n".join([b"tree " + (root.hex() if root else EMPTY_TREE).encode(),
                                   b"parent " + tip.encode(), *kept]) + b"\n\n" + message
                tip = odb.store(IStream(b"commit", len(body), BytesIO(body))).hexsha
                if isinstance(tip, bytes):
                    tip = tip.decode()
        return tip, conflicts

    def _move_branch(self, old: str | None, new: str | None) -> None:
        """Move the branch from ``old`` to ``new`` (compare-and-swap) and bring the working tree in
        line for the files that changed, leaving alone any file an editor changed without
        committing (logged). Call inside ``write_lock``. Raises BranchMoved."""
        if new is None or new == old:
            return
        changes = self._diff(old, new)
        before = self._entries_at(old, changes)
        self._write_journal({"commit": new, "old": old,
                             "paths": {p: before[p][1] if p in before else None for p in changes}})
        try:
            self._git("update-ref", "-m", "calendar: follow the remote", f"refs/heads/{self.branch}", new, old or ZERO)
        except StoreError:
            self._clear_journal()
            raise BranchMoved("the branch moved") from None
        contents = self.read_blobs(v[1] for v in changes.values() if v and v[0] in FILE_MODES)
        sync, kept = {}, []
        for path, entry in changes.items():
            file = self.root / path
            try:
                on_disk = blob_sha(file.read_bytes()) if not file.is_symlink() else "symlink"
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                on_disk = None
            old_entry = before.get(path)
            if on_disk != (old_entry[1] if old_entry else None):
                kept.append(path)
            elif entry is None:
                sync[path] = None
            elif entry[0] in FILE_MODES and entry[1] in contents:
                sync[path] = contents[entry[1]]
        if sync:
            self._sync_worktree(sync)
        self._clear_journal()
        if kept:
            log.warning("left %d working-tree file(s) alone (uncommitted changes): %s", len(kept), ", ".join(kept[:5]))

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

    def lock_files(self) -> list[Path]:
        """The git lock files a killed write can leave: the branch ref, HEAD, packed refs, the index."""
        names = [f"refs/heads/{self.branch}.lock", "HEAD.lock", "packed-refs.lock", "index.lock"]
        return [self.git_dir / name for name in names]

    def remove_stale_locks(self, older_than: float = STALE_LOCK_SECONDS) -> list[str]:
        """Delete git lock files older than ``older_than`` seconds; returns their names.

        Must be called inside ``write_lock``: then no write of this service is running, and a
        lock file that old was left by a killed process (git holds its locks for
        milliseconds), not by a live one. Each removal is logged.
        """
        removed = []
        now = time.time()
        for path in self.lock_files():
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < older_than:
                log.warning("%s exists (%.0f s old); leaving it to its owner", path.name, age)
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(str(path.relative_to(self.git_dir)))
                log.warning("removed the stale git lock file .git/%s (%.0f s old, left by a killed process)",
                            removed[-1], age)
        return removed

    def _refresh_index(self) -> None:
        """Record in git's index the files whose working copy matches the branch head but whose
        index entry does not (a killed ``update-index`` after a write); others are left alone."""
        head = self.head()
        out = self._git("diff-index", "--cached", "-z", "--name-only", head, "--", *CONTENT_FOLDERS, check=False)
        paths = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
        if not paths:
            return
        at_head = self._blobs_at(head, paths)
        fix = []
        for path in paths:
            file = self.root / path
            on_disk = blob_sha(file.read_bytes()) if file.is_file() else None
            if on_disk == at_head.get(path):
                fix.append(path)
        if fix:
            self._git("update-index", "-q", "--add", "--remove", "-z", "--stdin",
                      input=b"".join(p.encode() + b"\0" for p in fix), check=False)
            log.info("refreshed git's index for %d files after a killed write", len(fix))

    def _remove_temporary_files(self) -> None:
        """Delete the temporary files a killed write leaves (``.tmp-*`` next to record files)."""
        for folder in CONTENT_FOLDERS:
            directory = self.root / folder
            if directory.is_dir():
                for leftover in directory.glob(".tmp-*"):
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
                        log.warning("removed %s/%s, left by a killed write", folder, leftover.name)
        with contextlib.suppress(FileNotFoundError):
            self._journal_path.with_suffix(".tmp").unlink()

    def recover(self) -> None:
        """Clean up after a killed process, then finish a write it left between the ref update
        and the working tree.

        Stale git lock files and our own temporary files are removed (see
        ``remove_stale_locks``), and the git index is refreshed when a lock had to go. Only
        files still holding their pre-write content are touched; anything else in the
        working tree is somebody's work and is left alone.
        """
        with self.write_lock():
            self._remove_temporary_files()
            if self.remove_stale_locks() and self.head():
                self._refresh_index()
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
                # killed after writing a file but before `update-index` ran: the file is new,
                # its index entry old (git status would show it deleted and untracked)
                self._refresh_index()
                log.info("finished an interrupted write of commit %s", commit[:12])
            self._clear_journal()

    # ----------------------------------------------------------------------------- bulk import

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
            self._git("read-tree", "-m", "-u", expected_head or EMPTY_TREE, new_commit)
        except StoreError as exc:
            # the commit stands; write the files ourselves (none existed: checked above)
            log.warning("read-tree after an import failed (%s); writing the files directly", exc)
            self._sync_worktree(files)
        self._clear_journal()
        return new_commit

"""The git remote: reaching it (ls-remote, fetch, push) and following it (pull, replay).

With a remote configured, a write is pushed before the local branch moves, and a pull
brings the branch in line with the remote: fast-forward, or the local commits replayed onto
the remote's head, one by one, with their authors, dates and messages.
"""
from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from calendar_service.config import without_userinfo
from calendar_service.storage.errors import PullRefused, PushRejected, RemoteRefused, RemoteUnavailable, StoreError
from calendar_service.storage.gitcmd import SHA, Git
from calendar_service.storage.guard import FSCK_MESSAGES, FSCK_OPTIONS, first_problem
from calendar_service.storage.history import CommitLog
from calendar_service.storage.objects import ObjectStore, group
from calendar_service.storage.writing import CommitWriter

log = logging.getLogger(__name__)

REMOTE_TIMEOUT = 10.0         # default seconds one fetch, push or ls-remote may take (CALENDAR_REMOTE_TIMEOUT)
REMOTE_ATTEMPTS = 5           # pushes a pull tries when it keeps losing races
# the last remote head this repository saw (fetched) or made (pushed): what "on the remote" means
REMOTE_REF_PREFIX = "refs/calendar/remote/"
CONFLICT_REF_PREFIX = "refs/calendar/conflicts/"
REPLACED_REF_PREFIX = "refs/calendar/replaced/"   # local heads given up when the remote rewrote its history
# how git reports a push that lost a race against another push (rather than a refusal)
RACE_WORDS = ("fetch first", "non-fast-forward", "stale info", "cannot lock", "failed to lock", "unable to lock",
              "failed to update ref", "incorrect old value")
KEPT_HEADERS = (b"author ", b"committer ", b"encoding ")   # what a replayed commit keeps of the original
# what git on the remote says when it cannot send the remote head (upload-pack's walk stopped)
UNSENDABLE_ENTRY = re.compile(r"entry '([^'\n]*)' in tree [0-9a-f]{40} has tree mode, but is not a tree")
UNSENDABLE_OBJECT = re.compile(r"(?:bad tree object|[Oo]bject) ([0-9a-f]{40})")
REMOTE_CORRUPTION = "possible repository corruption on the remote side"


@dataclass
class PullResult:
    """What a pull did: the branch head after it, whether the branch moved, whether local commits
    were pushed, and the local commits kept aside under ``refs/calendar/conflicts/``."""

    head: str | None
    moved: bool = False
    pushed: bool = False
    conflicts: list = field(default_factory=list)


class Remote:
    """One remote branch (``url``: a URL, a path or a remote name) seen from the repository."""

    def __init__(self, git_cmd: Git, url: str, branch: str, run: Callable[..., bytes],
                 timeout: float = REMOTE_TIMEOUT):
        self._git = git_cmd
        self.url = url
        self.branch = branch
        self._run = run
        self.timeout = timeout

    @property
    def tracking_ref(self) -> str:
        return REMOTE_REF_PREFIX + self.branch

    def last_seen(self) -> str | None:
        """The remote head this repository last fetched or pushed (None: never)."""
        out = self._run("rev-parse", "--verify", "-q", self.tracking_ref + "^{commit}", check=False)
        value = out.decode().strip()
        return value if SHA.match(value) else None

    @property
    def display(self) -> str:
        """The remote as messages may show it: without credentials."""
        return without_userinfo(self.url)

    def _call(self, *args: str, config: tuple[str, ...] = (),
              argv: list[str] | None = None) -> subprocess.CompletedProcess:
        """Run a git command that talks to the remote (no prompts, bounded time), with ``config``
        options (``-c`` pairs) before it; ``argv`` replaces the command that reaches this
        repository (the quarantine uses its own). Raises RemoteUnavailable when it does not
        finish within ``timeout`` seconds; git and the helpers it started (ssh, remote helpers)
        are killed as one process group."""
        env = dict(self._git.env)
        for name in ("GIT_SSH_COMMAND", "GIT_SSH"):  # how the operator reaches an ssh remote
            if os.environ.get(name):
                env[name] = os.environ[name]
        command = (argv or self._git.argv()) + [*config, *args]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              start_new_session=True) as proc:
            try:
                out, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.communicate()
                raise RemoteUnavailable(f"git {args[0]}: the remote {self.display} did not answer "
                                        f"within {self.timeout:g} s") from None
        return subprocess.CompletedProcess(command, proc.returncode, out, err)

    def _message(self, command: str, stderr: bytes) -> str:
        """The reason git gave, safe to show: no credentials, no server paths, no hints."""
        lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()
                 if line.strip() and not line.startswith("hint:")]
        reason = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
        if self.url:
            reason = reason.replace(self.url, self.display)
        return without_userinfo(f"git {command} {self.display} failed: {self._git.safe(reason)}".strip())

    def head(self) -> str | None:
        """The commit the remote branch points at, None when the remote has no such branch.
        Reads nothing into the repository. Raises RemoteUnavailable."""
        ref = f"refs/heads/{self.branch}"
        proc = self._call("ls-remote", "--", self.url, ref)
        if proc.returncode != 0:
            raise RemoteUnavailable(self._message("ls-remote", proc.stderr))
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition("\t")
            if name == ref and SHA.match(sha):
                return sha
        return None

    def fetch(self, current: str | None = None) -> str | None:
        """Fetch the remote branch (into ``refs/calendar/remote/<branch>``); returns its commit,
        None when the remote has no such branch.

        git checks every object it receives (``FSCK_OPTIONS``): a tree with a ``.git``, ``..``
        or otherwise unsafe entry is refused while fetched, so it never enters the repository.
        Raises PullRefused then (naming the commit and, found in a throw-away quarantine
        repository, the path; ``current`` is the branch head the paths are compared with),
        RemoteUnavailable when the remote cannot be reached."""
        tracking = self.tracking_ref
        proc = self._call("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", self.url,
                          f"+refs/heads/{self.branch}:{tracking}", config=FSCK_OPTIONS)
        if proc.returncode == 0:
            return self._run("rev-parse", "--verify", "-q", tracking + "^{commit}").decode().strip()
        stderr = proc.stderr.decode("utf-8", "replace")
        if any(msg.lower() in stderr.lower() for msg in FSCK_MESSAGES) or "fsck" in stderr:
            raise self._diagnose(current, stderr)
        unsendable = self._unsendable(stderr)
        if unsendable is not None:
            raise unsendable
        if self.head() is None:  # reachable, but the branch does not exist (yet)
            return None
        raise RemoteUnavailable(self._message("fetch", proc.stderr))

    def _unsendable(self, stderr: str) -> PullRefused | None:
        """The refusal of a remote head git on the remote cannot send: a tree entry whose mode
        says folder points at a file (or a file entry at a folder), so the remote's pack-objects
        stops while walking the commit and sends nothing. The remote is reachable; its state is
        what is refused, naming its head, the object, and the entry when git's message names the
        folder entry itself (no tree of the commit can be read here to name more)."""
        if REMOTE_CORRUPTION not in stderr and "not a tree" not in stderr:
            return None
        try:
            head = self.head()
        except RemoteUnavailable:
            return None
        named = UNSENDABLE_ENTRY.search(stderr)
        found = UNSENDABLE_OBJECT.search(stderr)
        what = f"the object {found.group(1)}" if found else "an object"
        return PullRefused(head, named.group(1) if named else "",
                           f"a tree entry whose mode says folder (40000) points at {what}, which is not a tree "
                           "(or the remote's repository is damaged): git on the remote cannot send this commit")

    def _diagnose(self, current: str | None, stderr: str) -> PullRefused:
        """The refusal of a fetch git's object checks stopped: the remote's commit and the first
        unsafe path, found by fetching into a throw-away bare repository (borrowing this one's
        objects, never running anything from it) and walking the new tree."""
        reason = next((line.strip() for line in stderr.splitlines() if any(m in line for m in FSCK_MESSAGES)),
                      "git's object checks refused the fetched objects")
        git_dir = self._git.root / ".git"
        with tempfile.TemporaryDirectory(prefix="calendar-quarantine-", dir=git_dir) as folder:
            quarantine = ["git", f"--git-dir={folder}"]
            subprocess.run(["git", "init", "-q", "--bare", folder], capture_output=True, env=self._git.env)
            alternates = os.path.join(folder, "objects", "info", "alternates")
            with open(alternates, "w", encoding="utf-8") as out:
                out.write(str((git_dir / "objects").resolve()) + "\n")
            proc = self._call("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", self.url,
                              f"+refs/heads/{self.branch}:refs/quarantine", argv=quarantine,
                              config=("-c", "fetch.fsckObjects=false", "-c", "transfer.fsckObjects=false"))
            if proc.returncode != 0:
                return PullRefused(self.head(), "", reason)

            def read(sha: bytes) -> bytes:
                return subprocess.run(quarantine + ["cat-file", "tree", sha.hex()], capture_output=True,
                                      env=self._git.env, check=True).stdout

            def tree(commit: str) -> bytes:
                raw = subprocess.run(quarantine + ["cat-file", "commit", commit], capture_output=True,
                                     env=self._git.env, check=True).stdout
                return bytes.fromhex(raw[len(b"tree "):len(b"tree ") + 40].decode())

            try:
                commit = subprocess.run(quarantine + ["rev-parse", "refs/quarantine"], capture_output=True,
                                        env=self._git.env, check=True).stdout.decode().strip()
                found = first_problem(tree(commit), tree(current) if current else None, read)
            except (subprocess.CalledProcessError, ValueError):
                return PullRefused(self.head(), "", reason)
        path, why = found if found else ("", reason)
        return PullRefused(commit, path, why)

    def push(self, commit: str) -> None:
        """Make the remote branch point at ``commit`` if it is still at the head this repository
        last saw (``last_seen``) and ``commit`` descends from it. Only the tracking ref changes
        locally. Raises PushRejected when the remote branch moved meanwhile (forward, or back by a
        force-push: commits the remote dropped are never pushed back), RemoteRefused when the
        remote declined for another reason, RemoteUnavailable when it could not be reached."""
        seen = self.last_seen()
        if seen is not None and not self._git.succeeds("merge-base", "--is-ancestor", seen, commit):
            raise PushRejected("the commit does not build on the remote head last seen", commit)
        lease = f"--force-with-lease=refs/heads/{self.branch}:{seen or ''}"
        proc = self._call("push", "--porcelain", lease, "--", self.url, f"{commit}:refs/heads/{self.branch}")
        if proc.returncode == 0:
            self._run("update-ref", self.tracking_ref, commit)
            return
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("!"):
                summary = line.split("\t")[2] if line.count("\t") >= 2 else line
                if "[rejected]" in summary or any(w in summary for w in RACE_WORDS):
                    raise PushRejected(f"the remote branch moved: {summary}", commit)
                raise RemoteRefused(without_userinfo(f"the remote {self.display} refused the push: {summary}"))
        raise RemoteUnavailable(self._message("push", proc.stderr))


ERROR_CHARS = 300  # the longest reason /status shows for a failed attempt


class Follower:
    """Brings the local branch in line with the remote. Every method must run inside the
    store's write lock."""

    def __init__(self, remote: Remote, writer: CommitWriter, history: CommitLog, objects: ObjectStore,
                 run: Callable[..., bytes], head: Callable[[], str | None], lock: threading.RLock):
        self.remote = remote
        self._writer = writer
        self._history = history
        self._objects = objects
        self._run = run
        self._head = head
        self._lock = lock
        self.refused: PullRefused | None = None   # the remote's commit the last pull refused
        self.last_pull: dict | None = None        # the last attempt: {"time", "result", "error"}
        self.last_success: dict | None = None     # {"time": epoch seconds, "head": the remote's commit}
        self.failing_since: float | None = None    # the first of the attempts failing since the last success
        self.failures = 0                          # attempts failed in a row
        self._logged: set[str | None] = set()      # refused commits already logged
        self.synced = False                        # whether a pull has succeeded since the start

    def pull(self) -> PullResult:
        """Fetch, then: behind, fast-forward; ahead, push; diverged, replay the local commits onto
        the remote head and push. Raises PullRefused (the remote's commit holds a path the service
        will not check out; nothing moved), RemoteUnavailable (nothing changed) or BranchMoved
        (an editor committed in this checkout meanwhile)."""
        try:
            result = self._pull()
        except PullRefused as exc:
            self.attempted("refused", str(exc))
            self.refused = exc
            if exc.commit not in self._logged:
                self._logged.add(exc.commit)
                log.error("refused commit %s of the git remote %s: %s: %s; the branch stays at %s",
                          exc.commit, self.remote.display, exc.path or "(a tree)", exc.reason, self._head())
            raise
        except StoreError as exc:
            self.attempted("failed", str(exc))
            raise
        self.attempted("ok", head=result.head)
        self.synced = True
        if self.refused is not None:
            log.info("the git remote is followed again (head %s)", result.head)
        self.refused = None
        return result

    def attempted(self, result: str, error: str | None = None, head: str | None = None) -> None:
        """Note an attempt to reach the remote (a pull, or the periodic look at its head):
        ``result`` "ok" (the remote is at ``head``), "refused" or "failed" with ``error``, a
        short reason without credentials."""
        now = time.time()
        if error is not None:
            error = without_userinfo(error)
            error = error if len(error) <= ERROR_CHARS else error[:ERROR_CHARS - 1] + "…"
        self.last_pull = {"time": now, "result": result, "error": error}
        if result == "ok":
            self.last_success = {"time": now, "head": head}
            self.failing_since, self.failures = None, 0
        else:
            self.failing_since = now if self.failing_since is None else self.failing_since
            self.failures += 1

    def check(self, local: str | None, remote: str) -> None:
        """Raise PullRefused when the tree of ``remote`` holds a path (new or changed since
        ``local``) the repository may not hold; see ``domain.paths``."""
        with self._lock:
            try:
                found = first_problem(self._objects.tree_of(remote),
                                      self._objects.tree_of(local) if local else None, self._objects.read_tree)
            except Exception as exc:  # a tree git's checks let through but that cannot be read
                raise PullRefused(remote, "", f"unreadable tree ({type(exc).__name__})") from None
        if found:
            raise PullRefused(remote, *found)

    def _pull(self) -> PullResult:
        result = PullResult(self._head())
        for attempt in range(REMOTE_ATTEMPTS):
            seen = self.remote.last_seen()
            remote = self.remote.fetch(self._head())
            local = self._head()
            if local == remote:
                break
            if remote is not None:
                self.check(local, remote)
            if local is None or (remote is not None and self._history.is_ancestor(local, remote)):
                self._writer.follow(local, remote)
                result.moved = True
                break
            if self._rewritten(seen, remote, local):
                # the remote dropped commits it had: follow it, replay only what never reached it
                kept = self._keep_replaced(local)
                log.warning("the remote %s rewrote its history (it dropped commits up to %s); following it, "
                            "the old branch head is kept as %s", self.remote.display, seen[:12], kept)
                new_head, conflicts = self.replay(local, remote, exclude=seen)
                self._writer.follow(local, new_head)
                result.moved = True
                result.conflicts += conflicts
            elif remote is not None and not self._history.is_ancestor(remote, local):
                new_head, conflicts = self.replay(local, remote)
                self._writer.follow(local, new_head)
                result.moved = True
                result.conflicts += conflicts
            head = self._head()
            if head == remote:
                break
            try:
                self.remote.push(head)
                result.pushed = True
                break
            except PushRejected:
                log.info("push to %s lost a race; fetching again (%d)", self.remote.display, attempt + 1)
            except RemoteRefused as exc:
                log.warning("%s; the local commits stay on the branch", exc)
                break
        else:
            log.warning("could not push to %s after %d attempts; the next pull tries again",
                        self.remote.display, REMOTE_ATTEMPTS)
        result.head = self._head()
        return result

    def _rewritten(self, seen: str | None, remote: str | None, local: str) -> bool:
        """Whether the remote dropped commits it had: the head last seen is in the local history
        but no longer in the remote's."""
        if seen is None or remote is None or seen == remote or self._history.is_ancestor(seen, remote):
            return False
        return self._history.is_ancestor(seen, local)

    def _keep_replaced(self, local: str) -> str:
        ref = REPLACED_REF_PREFIX + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + local[:12]
        self._run("update-ref", ref, local)
        return ref

    def follow_pushed(self, pushed: str) -> None:
        """After ``pushed`` reached the remote but the branch moved locally (an editor's commit in
        this checkout): replay the local commits onto it, then push them (best effort)."""
        local = self._head()
        new_head, conflicts = self.replay(local, pushed)
        self._writer.follow(local, new_head)
        if new_head != pushed:
            try:
                self.remote.push(new_head)
            except StoreError as exc:
                log.warning("local commits not pushed yet (%s); the next pull pushes them", exc)

    def keep_aside(self, commit: str) -> str:
        """Keep ``commit`` reachable under ``refs/calendar/conflicts/<sha>``; returns the ref name."""
        ref = CONFLICT_REF_PREFIX + commit
        self._run("update-ref", ref, commit)
        return ref

    def replay(self, local: str, onto: str, exclude: str | None = None) -> tuple[str, list[str]]:
        """Replay the commits of ``local`` that ``onto`` (and ``exclude``, commits the remote had
        and dropped) lack onto ``onto``, one by one, keeping each one's author, committer (with
        dates) and message; returns (new head, kept commits).

        A commit that changes a file ``onto`` changed differently is not replayed: it is kept
        under ``refs/calendar/conflicts/<sha>`` and logged.
        """
        listing = self._run("rev-list", "--reverse", "--first-parent", local, "--not", onto,
                            *([exclude] if exclude else [])).decode().split()
        tip, conflicts = onto, []
        for commit in listing:
            with self._lock:
                raw = self._objects.read(bytes.fromhex(commit))
            header, _, message = raw.partition(b"\n\n")
            lines = header.split(b"\n")
            parents = [line[len(b"parent "):].decode() for line in lines if line.startswith(b"parent ")]
            parent = parents[0] if parents else None
            changes = self._history.changes(parent, commit)
            before = self._history.entries_at(parent, changes)
            now = self._history.entries_at(tip, changes)
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
            with self._lock:
                tree = self._objects.write_tree(self._objects.tree_of(tip), group(apply))
                kept = [line for line in lines if line.startswith(KEPT_HEADERS)]
                tip = self._objects.write_commit(tree, tip, kept, message)
        return tip, conflicts

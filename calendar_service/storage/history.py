"""Reading the repository at any commit: files, differences, blobs and the log."""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Callable, NamedTuple

import git

from calendar_service.storage import readers
from calendar_service.storage.gitcmd import CONTENT_FOLDERS, EMPTY_TREE, MAX_PATH_ARGUMENTS, SHA, Git
from calendar_service.storage.objects import ObjectStore, blob_sha



class FileDates(NamedTuple):
    """When a file last changed (committer time, epoch seconds) and when and by whom (the
    author's e-mail) it was added."""

    changed: int
    added: int
    email: str
    once: bool  # the file was added by the commit that last changed it


class PathVersion(NamedTuple):
    """One version of a file on the branch's first-parent history (see ``CommitLog.path_versions``)."""

    commit: str
    when: int
    email: str
    status: str        # A, M, T or D (as git's raw diff says)
    blob: str | None   # None when the commit deleted the file


COMMIT_PREFIX = re.compile(r"[0-9a-f]{4,40}")  # how much of a commit id a reader may give
# commits this process wrote whose changes (and new blobs) are kept, so that the catalog's
# "what changed from the previous head" after a write needs no git process
RECENT_COMMITS = 32
RECENT_BLOB_BYTES = 4 << 20   # contents kept of those commits' new blobs, at most
# content files are read in batches of at most this many bytes or files: a push of many files (or
# of big ones) never holds all of them in memory at once
READ_BATCH_BYTES = 32 << 20
READ_BATCH_FILES = 2000
# ``diff_tree`` reads at most this many trees in process before asking git (two commits a few
# writes apart differ in a few month folders; a pull may differ in hundreds)
NEAR_TREES = 24
NEAR_BLOBS = 16     # blobs read (or sized) one by one in process; more: one ``git cat-file`` for all
NEAR_COMMITS = 16   # ``change_dates`` walks at most this many commits in process before asking git
TREE_MODE, LINK_MODE = 0o40000, 0o120000
NEAR_MODES = (0o100644, 0o100755, LINK_MODE, TREE_MODE)


def tree_diff(objects: ObjectStore, old: str, new: str, whole_tree: bool) -> dict[str, readers.RawChange] | None:
    """``CommitLog.diff_tree`` read in process for two commits whose trees differ in a few
    folders (the commits another process of the service wrote: no git process started under
    the write lock or by the follower); None when it would read more than NEAR_TREES trees or
    meets anything but plain files and folders where they differ (then git answers).

    Two versions of a folder are compared by their entries' raw bytes (mode, name, id) as sets:
    only the entries that differ are read (the parsed trees are the object store's, shared with
    the writes, which built most of them)."""
    budget = [NEAR_TREES]
    found: dict[str, readers.RawChange] = {}

    def entries(tree: bytes | None) -> list[bytes] | None:
        if tree is None:
            return []
        budget[0] -= 1
        if budget[0] < 0:
            return None
        return objects.parsed_tree(tree).entries

    def walk(before: bytes | None, after: bytes | None, prefix: str) -> bool:
        a, b = entries(before), entries(after)
        if a is None or b is None:
            return False
        sides: dict[bytes, list] = {}
        for side, raws in ((0, set(a).difference(b)), (1, set(b).difference(a))):
            for raw in raws:
                nul = raw.index(b"\0")   # the name holds none (the binary id may)
                head, sha = raw[:nul], raw[nul + 1:]
                mode, _, name = head.partition(b" ")
                mode = int(mode, 8)
                if mode not in NEAR_MODES:
                    return False
                sides.setdefault(name, [None, None])[side] = (mode, sha)
        for name in sorted(sides):
            one, two = sides[name]
            path = prefix + name.decode("utf-8", "surrogateescape")
            if not prefix and not whole_tree and path not in CONTENT_FOLDERS:
                continue
            folders = [e is not None and e[0] == TREE_MODE for e in (one, two)]
            if folders[0] != folders[1] and one is not None and two is not None:
                return False   # a file became a folder or back: git's own order of the two
            if folders[0] or folders[1]:
                if not walk(one[1] if one else None, two[1] if two else None, path + "/"):
                    return False
                continue
            if one is not None and two is not None and (one[0] == LINK_MODE) != (two[0] == LINK_MODE):
                return False   # a type change (T)
            status = "A" if one is None else "D" if two is None else "M"
            found[path] = readers.RawChange(path, one[0] if one else 0, two[0] if two else 0,
                                            one[1].hex() if one else None, two[1].hex() if two else None, status)
        return True

    try:
        done = walk(objects.tree_of(old), objects.tree_of(new), "")
    except Exception:   # a missing or odd object: git says what it is
        return None
    return found if done else None


class CommitLog:
    """Read-only queries on commits. ``run`` runs a git command (raising StoreError)."""

    def __init__(self, run: Callable[..., bytes], git_cmd: Git, objects: ObjectStore):
        self._run = run
        self._git = git_cmd
        self._objects = objects
        self._recent: OrderedDict[str, tuple[str | None, list[readers.RawChange]]] = OrderedDict()
        self._recent_blobs: OrderedDict[str, bytes] = OrderedDict()
        self._recent_lock = threading.Lock()

    def remember(self, commit: str, parent: str | None, changes: list[readers.RawChange],
                 contents: dict[str, bytes]) -> None:
        """Keep what the commit ``commit`` (on ``parent``) changed and its new blobs' contents,
        as written by this process, for ``diff_tree`` and ``read_blobs`` (bounded)."""
        with self._recent_lock:
            self._recent[commit] = (parent, changes)
            while len(self._recent) > RECENT_COMMITS:
                self._recent.popitem(last=False)
            for sha, data in contents.items():
                if len(data) <= RECENT_BLOB_BYTES // 4:
                    self._recent_blobs[sha] = data
            total = sum(len(v) for v in self._recent_blobs.values())
            while total > RECENT_BLOB_BYTES:
                total -= len(self._recent_blobs.popitem(last=False)[1])

    def ls_tree(self, commit: str | None, paths=None) -> list[readers.LsEntry]:
        """The entries of ``commit`` (None: none): every file when ``paths`` is None, else those of
        ``paths`` that exist (the whole tree listed and filtered when there are many)."""
        if not commit:
            return []
        if paths is None:
            return readers.ls_tree(self._run("ls-tree", "-r", "-z", "--full-tree", commit))
        paths = list(paths)
        if not paths:
            return []
        if len(paths) > MAX_PATH_ARGUMENTS:
            wanted = set(paths)
            return [e for e in self.ls_tree(commit) if e.path in wanted]
        return readers.ls_tree(self._run("ls-tree", "-z", "--full-tree", commit, "--", *paths))

    def list_files(self, commit: str) -> dict[str, str]:
        """Every file under the content folders at ``commit``: path -> blob id."""
        out = self._run("ls-tree", "-r", "-z", "--full-tree", commit, "--", *CONTENT_FOLDERS)
        return {e.path: e.sha for e in readers.ls_tree(out) if e.kind == "blob"}

    def entries_at(self, commit: str | None, paths=None) -> dict[str, tuple[int, str]]:
        """(mode, object id) of the files of ``commit`` (all, or those of ``paths`` that exist)."""
        return {e.path: (e.mode, e.sha) for e in self.ls_tree(commit, paths) if e.kind != "tree"}

    def blobs_at(self, commit: str | None, paths) -> dict[str, str]:
        """Blob ids of those ``paths`` that exist at ``commit``."""
        return {e.path: e.sha for e in self.ls_tree(commit, paths)}

    def diff_tree(self, old: str | None, new: str, whole_tree: bool = False) -> dict[str, readers.RawChange]:
        """Paths that differ between two commits (``old`` None: the empty tree), under the content
        folders or, with ``whole_tree``, anywhere: path -> RawChange. One ``git diff-tree``."""
        near = self._diff_without_git(old, new, whole_tree)
        if near is not None:
            return near
        args = ["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", old or EMPTY_TREE, new]
        if not whole_tree:
            args += ["--", *CONTENT_FOLDERS]
        return {c.path: c for c in readers.raw_changes(self._run(*args).split(b"\0"))}

    def _diff_without_git(self, old: str | None, new: str, whole_tree: bool) -> dict[str, readers.RawChange] | None:
        """``diff_tree`` without a git process: a commit this process wrote on ``old`` (its changes
        kept), or two near commits read in process (``tree_diff``); None when git has to answer."""
        with self._recent_lock:
            known = self._recent.get(new)
        if known is not None and known[0] == old:
            return {c.path: c for c in known[1] if whole_tree or c.path.split("/", 1)[0] in CONTENT_FOLDERS}
        return tree_diff(self._objects, old, new, whole_tree) if old is not None else None

    def changes(self, old: str | None, new: str) -> dict[str, tuple[int, str] | None]:
        """Every path that differs between two commits (whole tree): path -> (mode, id) or None if deleted."""
        return {path: None if c.new_sha is None else (c.new_mode, c.new_sha)
                for path, c in self.diff_tree(old, new, whole_tree=True).items()}

    def read_blobs(self, shas) -> dict[str, bytes]:
        """Contents of many blobs in one ``git cat-file --batch`` run: sha -> bytes (missing ones left out)."""
        shas = list(dict.fromkeys(shas))
        with self._recent_lock:
            found = {sha: self._recent_blobs[sha] for sha in shas if sha in self._recent_blobs}
        shas = [sha for sha in shas if sha not in found]
        if not shas:
            return found
        if len(shas) <= NEAR_BLOBS:   # through the object reader's long-running git (no process started)
            for sha in shas:
                data = self.read_object(sha)
                if data is not None:
                    found[sha] = data
            return found
        out = self._run("cat-file", "--batch", input=("\n".join(shas) + "\n").encode())
        return {**found, **readers.cat_file_batch(out, shas)}

    def blob_sizes(self, shas) -> dict[str, int]:
        """Sizes of many blobs in one ``git cat-file --batch-check`` run (nothing read): sha -> bytes
        (missing ones left out)."""
        shas = list(dict.fromkeys(shas))
        with self._recent_lock:
            found = {sha: len(self._recent_blobs[sha]) for sha in shas if sha in self._recent_blobs}
        shas = [sha for sha in shas if sha not in found]
        if 0 < len(shas) <= NEAR_BLOBS:
            for sha in shas:
                size = self._objects.size(sha)
                if size is not None:
                    found[sha] = size
        elif shas:
            out = self._run("cat-file", "--batch-check", input=("\n".join(shas) + "\n").encode())
            found.update(readers.cat_file_batch_check(out))
        return found

    def read_files(self, shas, max_bytes: int, batch_bytes: int = READ_BATCH_BYTES):
        """The contents of content files' blobs, never one over ``max_bytes`` (sizes are checked
        first, nothing read) and never more than about ``batch_bytes`` held at once: yields
        ``(sizes, contents)`` per batch, sizes of every blob of the batch (sha -> bytes), contents
        of those at most ``max_bytes`` long (sha -> bytes); missing blobs are in neither."""
        shas = list(dict.fromkeys(shas))
        sizes = self.blob_sizes(shas)
        batch: list[str] = []
        held = 0
        for sha in shas + [None]:
            size = sizes.get(sha, 0) if sha is not None else 0
            size = size if size <= max_bytes else 0   # never read: it costs nothing
            if batch and (sha is None or held + size > batch_bytes or len(batch) >= READ_BATCH_FILES):
                readable = [s for s in batch if sizes.get(s, 0) <= max_bytes]
                yield {s: sizes[s] for s in batch if s in sizes}, self.read_blobs(readable) if readable else {}
                batch, held = [], 0
            if sha is not None:
                batch.append(sha)
                held += size

    def read_object(self, sha: str) -> bytes | None:
        """The content of one object, read in process (no process per call); None when it does not exist.

        Safe without the store's thread lock (the object store guards its own reader), so the
        catalog may call it while a writer holds that lock and waits for the catalog."""
        try:
            return self._objects.read(bytes.fromhex(sha))
        except (ValueError, git.BadObject, git.BadName):
            return None
        except Exception:  # a missing object surfaces differently across GitPython versions
            return None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is ``newer`` or one of its ancestors."""
        return self._git.succeeds("merge-base", "--is-ancestor", older, newer)

    def resolve_commit(self, value: str) -> str | None:
        """The full id of the commit ``value`` (4 to 40 hex digits) names, or None when it names
        no commit or several. Only hex ever reaches git, so a value can never become an option."""
        if not COMMIT_PREFIX.fullmatch(value or ""):
            return None
        out = self._run("rev-parse", "--verify", "--quiet", f"{value}^{{commit}}", check=False).strip()
        found = out.decode("ascii", "replace")
        return found if SHA.match(found) else None

    def log(self, folder: str, head: str | None, since: str | None = None) -> list[dict]:
        """The commits up to ``head`` (children first; after ``since`` if given) that changed a file
        under ``folder``, in one ``git log`` run; see ``readers.log_entries``. [] for no head or
        an unknown folder."""
        if head is None or folder not in CONTENT_FOLDERS:
            return []
        span = f"{since}..{head}" if since else head
        # every commit that changed a file, on any parent's line (--full-history: no simplification
        # to one side of a merge), children before parents; a merge is listed with the files
        # whose result differs from every parent (a hand-resolved conflict)
        out = self._run("log", "-z", "--raw", "--no-renames", "--no-abbrev", "--full-history", "--topo-order",
                        "--diff-merges=dense-combined", readers.LOG_FORMAT, span, "--", folder + "/")
        return readers.log_entries(out)

    def change_dates(self, head: str, since: str | None = None, paths=None) -> dict[str, "FileDates"]:
        """path -> FileDates of the files under the content folders (or of ``paths``) that the
        commits up to ``head`` (after ``since`` if given) added or changed, in one ``git log``:
        ``changed`` the committer time of the newest such commit, ``added``/``email`` the time and
        author e-mail of the oldest (the adding commit when the span reaches back to it), ``once``
        when they are the same commit. Commits are walked newest first (git's order)."""
        span = f"{since}..{head}" if since else head
        if paths is not None:
            paths = sorted(paths)
            if not paths:
                return {}
        if since:
            near = self._near_change_dates(head, since, set(paths) if paths is not None else None)
            if near is not None:
                return near
        if paths is None or len(paths) > MAX_PATH_ARGUMENTS:
            limit = CONTENT_FOLDERS
        elif since:
            # the files' folders, the paths kept below: git matches each file's pathspecs against every
            # entry of the trees it compares, which over a span of commits cost seconds in large folders
            limit = sorted({path.partition("/")[0] for path in paths})
        else:
            limit = paths   # the whole history: the paths keep git from diffing every commit
        out = self._run("-c", "core.quotepath=off", "log", "--no-renames", "--diff-filter=AM", "--name-only",
                        "--format=%x00%ct %ae", span, "--", *limit).decode("utf-8", "replace")
        wanted = set(paths) if paths is not None else None
        found: dict[str, FileDates] = {}
        for chunk in out.split("\0")[1:]:
            lines = chunk.strip("\n").split("\n")
            when, _, email = lines[0].partition(" ")
            when = int(when or 0)
            for path in lines[1:]:
                if not path or (wanted is not None and path not in wanted):
                    continue
                seen = found.get(path)
                found[path] = FileDates(seen.changed, when, email, False) if seen else FileDates(when, when, email, True)
        return found

    def _near_change_dates(self, head: str, since: str, wanted: set | None) -> dict[str, "FileDates"] | None:
        """``change_dates`` read in process when ``head`` is at most NEAR_COMMITS commits of one
        parent each on top of ``since`` (the commits another process of the service wrote), each
        one's changes read as ``diff_tree`` reads them; None otherwise (then ``git log`` answers)."""
        chain = []
        commit = head
        while commit != since:
            facts = self.commit_facts(commit) if len(chain) < NEAR_COMMITS else None
            if facts is None or len(facts[0]) != 1:
                return None
            chain.append((commit, facts))
            commit = facts[0][0]
        found: dict[str, FileDates] = {}
        for commit, (parents, when, email) in chain:   # newest first, as git log walks them
            near = self._diff_without_git(parents[0], commit, whole_tree=False)
            if near is None:
                return None
            for change in near.values():
                path = change.path
                if change.status not in ("A", "M") or (wanted is not None and path not in wanted):
                    continue
                seen = found.get(path)
                found[path] = FileDates(seen.changed, when, email, False) if seen else FileDates(when, when, email, True)
        return found

    def path_versions(self, head: str, paths, max_commits: int) -> dict[str, list["PathVersion"]]:
        """path -> its versions on the first-parent history of ``head``, newest first: each
        commit (at most ``max_commits`` looked at, newest first) that changed one of ``paths``,
        compared with its first parent (a merge is one step of the branch), as (commit,
        committer time, author e-mail, status A/M/D/T, blob or None). One ``git log``; the
        answer depends only on the commit graph."""
        paths = sorted(paths)
        if not paths or head is None:
            return {}
        limit = paths if len(paths) <= MAX_PATH_ARGUMENTS else CONTENT_FOLDERS
        out = self._run("-c", "core.quotepath=off", "log", "--first-parent", "--no-renames", "--raw", "--no-abbrev",
                        f"--max-count={max(1, int(max_commits))}", "--format=%x00%H %ct %ae", head,
                        "--", *limit).decode("utf-8", "replace")
        wanted = set(paths)
        found: dict[str, list[PathVersion]] = {}
        for chunk in out.split("\0")[1:]:
            lines = chunk.strip("\n").split("\n")
            commit, when, email = (lines[0].split(" ", 2) + ["", ""])[:3]
            if not SHA.match(commit):
                continue
            for line in lines[1:]:
                meta, tab, path = line.partition("\t")
                if not tab or path not in wanted or not meta.startswith(":"):
                    continue
                fields = meta.split()
                if len(fields) < 5:
                    continue
                status = fields[4][:1]
                blob = fields[3] if status != "D" else None
                found.setdefault(path, []).append(PathVersion(commit, int(when or 0), email, status, blob))
        return found

    def deleted_blobs(self, head: str) -> dict[str, str]:
        """blob id -> path of every file under the content folders that a commit up to ``head``
        deleted (a rename counts as a deletion of the old path), in one ``git log``."""
        out = self._run("log", "-z", "--no-renames", "--no-abbrev", "--diff-filter=D", "--raw", "--format=",
                        head, "--", *CONTENT_FOLDERS).decode("utf-8", "replace")
        found: dict[str, str] = {}
        parts = out.split("\0")
        for i, part in enumerate(parts[:-1]):
            # ":100644 000000 <old blob> <new blob> D", then the path
            fields = part.strip("\n").split()
            if len(fields) == 5 and fields[0].startswith(":") and fields[4] == "D":
                found[fields[2]] = parts[i + 1]
        return found

    def commit_facts(self, commit: str) -> tuple[list[str], int, str] | None:
        """(parents, committer time, author e-mail) of ``commit``, read in process; None if unknown."""
        raw = self.read_object(commit)
        if raw is None:
            return None
        parents, when, email = [], 0, ""
        for line in raw.split(b"\n\n", 1)[0].decode("utf-8", "replace").split("\n"):
            key, _, value = line.partition(" ")
            if key == "parent":
                parents.append(value.strip())
            elif key == "author":
                email = value[value.rfind("<") + 1:value.rfind(">")] if "<" in value else ""
            elif key == "committer":
                parts = value.rsplit(" ", 2)
                when = int(parts[1]) if len(parts) == 3 and parts[1].lstrip("-").isdigit() else 0
        return parents, when, email

    def clashes(self, base: str | None, head: str | None, changes: dict[str, bytes | None]) -> list[str]:
        """Paths of ``changes`` (computed against ``base``) whose file existed at ``base`` and
        was changed differently by ``head``: the write would overwrite someone else's edit."""
        if not base or not head or base == head:
            return []
        before = self.entries_at(base, changes)
        after = self.entries_at(head, changes)
        found = []
        for path, content in changes.items():
            old = before.get(path)
            new = after.get(path)
            wanted = blob_sha(content) if content is not None else None
            if old is not None and new != old and (new[1] if new else None) != wanted:
                found.append(path)
        return sorted(found)

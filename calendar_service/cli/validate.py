"""``validate``: check content files as the service reads them, all of them or only yours.

With no paths and no ``--changed`` every problem in the working tree counts (exit 1). With
paths (as a pre-commit hook passes the staged files) or ``--changed [BASE]`` only the selected
files count, plus the problems your change causes in other files (a reference to the venue you
deleted or renamed): a problem in an unselected file that is also there at BASE (HEAD when only
paths are given) is someone else's, counted in one line and not failing the run.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from calendar_service.cli import clone
from calendar_service.config import Settings
from calendar_service.domain import record_files
from calendar_service.domain.paths import CONTENT_FOLDERS, FILE_MODES, SYMLINK_MODE, path_problem
from calendar_service.domain.resources import RESOURCES
from calendar_service.domain.snapshot import reference_problems
from calendar_service.storage.clone import Clone

PROBLEMS = 1        # problems found (exit status)
CHANGED_DEFAULT = "@default"   # --changed without BASE


def unsafe_paths(root: Path) -> list[record_files.FileProblem]:
    """A problem for each path under the content folders that the service would refuse to pull
    (see ``domain.paths``): a symbolic link, a ``.git`` or otherwise unsafe component."""
    found = []
    for folder in CONTENT_FOLDERS:
        for path in sorted((root / folder).rglob("*")) if (root / folder).is_dir() else ():
            if path.is_dir() and not path.is_symlink():
                continue
            relative = path.relative_to(root).as_posix()
            problem = path_problem(relative, SYMLINK_MODE if path.is_symlink() else FILE_MODES[0])
            if problem:
                found.append(record_files.FileProblem(relative, 1, f"the service refuses this path: {problem}"))
    return found


def check_tree(root: Path):
    """(snapshot, every problem) of the files in ``root``'s content folders."""
    from calendar_service.storage.catalog import load_directory

    snapshot = load_directory(root)
    texts: dict[str, str] = {}

    def line_of(path: str, key: str) -> int:
        if path not in texts:
            texts[path] = (root / path).read_text(encoding="utf-8", errors="replace")
        return record_files.line_of(texts[path], key)

    problems = list(snapshot.problems) + reference_problems(snapshot, line_of)
    return snapshot, problems + unsafe_paths(root)


def problems_at(repo: Clone, base: str, snapshot, touched: set[str]) -> set[tuple[str, str]]:
    """(path, message) of each cross-file problem (references, ids or slugs two files claim) at
    commit ``base``: the working tree's records, with the ``touched`` files as ``base`` has them
    (read as the service reads blobs, none over the file size limit; a file ``base`` lacks is
    left out)."""
    from calendar_service.domain import file_limits
    from calendar_service.domain.snapshot import Snapshot

    files = {path: entry for path, entry in snapshot.files.items() if path not in touched}
    wanted = [p for p in touched if record_files.resource_of_path(p) is not None]
    history = repo.history()
    blobs = history.blobs_at(base, wanted) if wanted else {}
    paths_of: dict[str, list[str]] = {}
    for path, blob in blobs.items():
        paths_of.setdefault(blob, []).append(path)
    for sizes, contents in history.read_files(list(paths_of), file_limits.LIMITS.file_bytes):
        for blob, size in sizes.items():
            for path in paths_of[blob]:
                if blob in contents:
                    record, problems = record_files.parse(path, contents[blob])
                else:
                    record, problems = None, [record_files.size_problem(path, size)]
                files[path] = (blob, record, tuple(problems))
    before = Snapshot(None, files)
    return {(p.path, p.message) for p in list(before.problems) + reference_problems(before)}


def selection(root: Path, paths: list[str]) -> set[str]:
    """The given paths as paths inside ``root`` (relative to the current directory or to
    ``root``); a path outside the content repository is refused."""
    chosen = set()
    top = root.resolve()
    for given in paths:
        inside = []
        for candidate in [Path(given).absolute()] + ([] if Path(given).is_absolute() else [root / given]):
            resolved = Path(os.path.normpath(candidate.parent.resolve() / candidate.name))
            if resolved.is_relative_to(top):
                inside.append((not candidate.exists(), resolved))
        if not inside:
            raise ValueError(f"{given} is outside the content repository {root}: give files of that repository "
                             "(relative to the current directory or to its top)")
        resolved = min(inside, key=lambda found: found[0])[1]   # an existing file first (a deleted one else)
        relative = resolved.relative_to(top).as_posix()
        if resolved.is_dir():
            chosen.update(p.relative_to(top).as_posix() for p in resolved.rglob("*") if p.is_file())
        else:
            chosen.add(relative)
    return chosen


def cmd_validate(options) -> int:
    """Print one ``path:line: message`` line per problem; exit 1 when there is any (warnings
    too, unless --allow-warnings), else print a one-line summary and exit 0. The checks are the
    service's own (records.parse for each file, the snapshot for ids, slugs and references)."""
    from calendar_service.service.build import configure_limits

    settings = Settings.from_env()
    configure_limits(settings)   # the limits the service reads files and expands series with
    paths = list(options.paths or [])
    given_dir = None
    if len(paths) == 1 and Path(paths[0]).is_dir():
        candidate = Path(paths[0])
        top = clone.git_top(candidate)
        if clone.has_content_folders(candidate) or (top is not None and top.resolve() == candidate.resolve()):
            given_dir, paths = paths[0], []    # ``validate DIR``: the whole content directory, as always
    selecting = bool(paths) or options.changed is not None
    if given_dir is None and paths:
        try:
            content = clone.find_content(None)
        except clone.NotContent:   # run outside: the repository of the first path
            first = Path(paths[0])
            if not first.exists():
                raise clone.NotContent(f"no content directory or file at {first}. {clone.WHAT_IT_IS}") from None
            content = clone.find_content(first if first.is_dir() else first.parent)
    else:
        content = clone.find_content(given_dir)
    root = content.root
    snapshot, problems = check_tree(root)
    shown = os.path.normpath(given_dir) if given_dir else ("." if root.absolute() == Path.cwd() else str(root))

    mine, others = problems, []
    repo = Clone(root)
    if selecting:
        chosen = selection(root, paths)
        if options.changed is not None:
            base = repo.default_base() if options.changed == CHANGED_DEFAULT else options.changed
            if base is not None and repo.commit(base) is None:
                raise ValueError(f"--changed {base}: no such commit in {root}")
            chosen |= repo.changed_files(base)
        else:
            base = repo.commit("HEAD")
        mine = [p for p in problems if p.path in chosen]
        rest = [p for p in problems if p.path not in chosen]
        if rest and base is not None:
            touched = repo.changed_files(base)
            # a file nobody changed since BASE reads as it did then: only a problem that comes from
            # other files (a reference, an id or slug two files claim) may be new, caused by your change
            candidates = [p for p in rest if p.path not in touched
                          and p not in snapshot.files.get(p.path, (None, None, ()))[2]]
            before = problems_at(repo, base, snapshot, touched) if candidates else set()
            caused = [p for p in candidates if (p.path, p.message) not in before]
            mine += caused
            rest = [p for p in rest if p not in caused]
        others = rest

    failing = 0
    for problem in sorted(mine, key=lambda p: (p.path, p.line)):
        where = os.path.normpath(os.path.join(shown, problem.path))
        label = "warning: " if problem.severity == "warning" else ""
        print(f"{where}:{problem.line}: {label}{problem.message}")
        failing += problem.severity == "error" or not options.allow_warnings
    if mine:
        print(f"{len(mine)} problem(s) in {len({p.path for p in mine})} file(s)", file=sys.stderr)
    if others:
        print(f"{len({p.path for p in others})} other files have problems (not yours): run validate without paths "
              "to see them", file=sys.stderr)
    if failing:
        return PROBLEMS
    counts = {name: len(snapshot.all(resource)) for name, resource in RESOURCES.items()}
    if selecting:
        print(f"your files OK: {len(chosen)} file(s) checked ({sum(counts.values())} records read)")
        return 0
    print(f"content OK: {sum(counts.values())} records in {len(snapshot.files)} files ("
          + ", ".join(f"{n} {name}" for name, n in counts.items()) + ")")
    return 0

"""``diff [BASE [HEAD]]``: what a content change does to the calendar, for a reviewer.

BASE defaults to what ``validate --changed`` compares with: the merge base of HEAD with its
upstream branch (a pull request's target),
HEAD to the working tree (what is committed or not yet). Output: text, or Markdown for a
pull-request comment (``--format markdown``). Exit 0 when it ran, 1 when the change breaks
something (a file that no longer reads, a reference that points nowhere), 2 on a wrong use.
"""
from __future__ import annotations

import sys
from pathlib import Path

from calendar_service.config import Settings
from calendar_service.domain.calendar_diff import CalendarDiff, RecordChange, compare
from calendar_service.domain import record_files
from calendar_service.domain.record_files import FileProblem
from calendar_service.storage.catalog import load_commit, load_directory
from calendar_service.storage.clone import Clone

FAILED, BROKEN = 2, 1
SHORT_COMMIT = 12


def cmd_diff(options, root: Path) -> int:
    from calendar_service.service.build import configure_limits

    settings = Settings.from_env()
    configure_limits(settings)   # the limits the service reads files with
    if not (root / ".git").exists():
        print(f"error: {root} is not a clone of a content repository (no .git); "
              "run diff inside your clone or pass -C DIR", file=sys.stderr)
        return FAILED
    clone = Clone(root)
    if options.base:
        base = clone.commit(options.base)
        if base is None:
            print(f"error: {options.base!r} is not a commit here", file=sys.stderr)
            return FAILED
        base_label = f"{options.base} ({base[:SHORT_COMMIT]})"
    else:   # what ``validate --changed`` compares with too
        base = clone.default_base()
        if base is None:
            print("error: the repository has no commits yet", file=sys.stderr)
            return FAILED
        follows = clone.upstream()
        base_label = f"{base[:SHORT_COMMIT]} ({f'the merge base with {follows}' if follows else 'HEAD'})"
    history = clone.history()
    base_snapshot = load_commit(history, base)
    if options.head:
        head = clone.commit(options.head)
        if head is None:
            print(f"error: {options.head!r} is not a commit here", file=sys.stderr)
            return FAILED
        head_snapshot = load_commit(history, head, reuse=base_snapshot)
        head_label = f"{options.head} ({head[:SHORT_COMMIT]})"
    else:
        head_snapshot = load_directory(root, reuse=base_snapshot)
        head_label = "the working tree"
    if options.head:
        line_of = None
    else:
        def line_of(path: str, key: str) -> int:
            return record_files.line_of((root / path).read_text(encoding="utf-8", errors="replace"), key)
    result = compare(base_snapshot, head_snapshot, settings.tz, line_of=line_of)
    render = markdown if options.format == "markdown" else text
    sys.stdout.write(render(result, base_label, head_label))
    return BROKEN if result.breaks else 0


def summary(diff: CalendarDiff) -> str:
    parts = [f"{diff.count(kind)} {kind}" for kind in ("added", "removed", "changed") if diff.count(kind)]
    if diff.broken_files:
        parts.append(f"{len(diff.broken_files)} file(s) that no longer read")
    if diff.broken_references:
        parts.append(f"{len(diff.broken_references)} broken reference(s)")
    if diff.overlaps_total:
        parts.append(f"{diff.overlaps_total} new overlap(s) at one venue")
    return ", ".join(parts) if parts else "no change to the calendar"


def _headline(change: RecordChange) -> str:
    ident = f" {change.record_id}" if change.record_id is not None else " (new, no id yet)"
    line = f"{change.resource.singular}{ident} \"{change.title}\""
    if change.when and not change.old_when:
        line += f", {change.when}"
    if change.venue:
        line += f", at {change.venue}"
    return line


def _details(change: RecordChange) -> list[str]:
    lines = []
    if change.old_path:
        lines.append(f"file: {change.old_path} → {change.path}")
    if change.old_when:
        lines.append(f"moved: {change.old_when} → {change.when}")
    for key, old, new in change.fields:
        lines.append(f"{key}: {old} → {new}")
    if change.kind != "changed":
        total = change.occurrences_added_total or change.occurrences_removed_total
        if total:
            lines.append(f"a series of {total} occurrence(s) within the horizon")
    return lines


def _occurrence_lines(change: RecordChange) -> list[str]:
    if change.kind != "changed":
        return []   # a whole series added or removed: counted in its details
    lines = [f"+ {s}" for s in change.occurrences_added]
    if change.occurrences_added_total > len(change.occurrences_added):
        lines.append(f"+ ... and {change.occurrences_added_total - len(change.occurrences_added)} more")
    lines += [f"- {s}" for s in change.occurrences_removed]
    if change.occurrences_removed_total > len(change.occurrences_removed):
        lines.append(f"- ... and {change.occurrences_removed_total - len(change.occurrences_removed)} more")
    return lines


def _problem(problem: FileProblem) -> str:
    return f"{problem.path}:{problem.line}: {problem.message}"


SECTIONS = (("added", "Added"), ("removed", "Removed"), ("changed", "Changed"))


def text(diff: CalendarDiff, base: str, head: str) -> str:
    out = [f"Calendar diff: {base} → {head}", summary(diff), ""]
    for kind, title in SECTIONS:
        changes = [c for c in diff.changes if c.kind == kind]
        if not changes:
            continue
        out.append(title)
        for change in changes:
            out.append(f"  {_headline(change)}  ({change.path})")
            out += [f"    {line}" for line in _details(change)]
            occurrences = _occurrence_lines(change)
            if occurrences:
                out.append(f"    occurrences: {change.occurrences_added_total} appear, "
                           f"{change.occurrences_removed_total} disappear")
                out += [f"      {line}" for line in occurrences]
        out.append("")
    for title, problems in (("Files that no longer read", diff.broken_files),
                            ("References that break", diff.broken_references)):
        if problems:
            out.append(title)
            out += [f"  {_problem(p)}" for p in problems]
            out.append("")
    if diff.overlaps:
        out.append("Overlaps at one venue (new)")
        out += [f"  {o.venue}: {o.first} and {o.second}, {o.when}" for o in diff.overlaps]
        if diff.overlaps_total > len(diff.overlaps):
            out.append(f"  ... and {diff.overlaps_total - len(diff.overlaps)} more")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _md(value: str) -> str:
    """``value`` safe inside Markdown text (a title comes from a file anyone may edit)."""
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in value)


def markdown(diff: CalendarDiff, base: str, head: str) -> str:
    mark = "❌" if diff.breaks else "📅"
    out = [f"### {mark} Calendar diff", "", f"**{_md(summary(diff))}** ({_md(base)} → {_md(head)})", ""]
    for kind, title in SECTIONS:
        changes = [c for c in diff.changes if c.kind == kind]
        if not changes:
            continue
        out += [f"#### {title} ({len(changes)})", ""]
        for change in changes:
            out.append(f"- **{_md(_headline(change))}** `{change.path}`")
            out += [f"  - {_md(line)}" for line in _details(change)]
            occurrences = _occurrence_lines(change)
            if occurrences:
                out += [f"  - <details><summary>occurrences: {change.occurrences_added_total} appear, "
                        f"{change.occurrences_removed_total} disappear</summary>", "",
                        *[f"    {_md(line)}<br>" for line in occurrences], "", "    </details>"]
        out.append("")
    for title, problems in (("Files that no longer read", diff.broken_files),
                            ("References that break", diff.broken_references)):
        if problems:
            out += [f"#### ❌ {title}", ""] + [f"- `{p.path}:{p.line}`: {_md(p.message)}" for p in problems] + [""]
    if diff.overlaps:
        out += ["#### ⚠️ Overlaps at one venue (new)", ""]
        out += [f"- {_md(o.venue)}: {_md(o.first)} and {_md(o.second)}, {_md(o.when)}" for o in diff.overlaps]
        if diff.overlaps_total > len(diff.overlaps):
            out.append(f"- ... and {diff.overlaps_total - len(diff.overlaps)} more")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"

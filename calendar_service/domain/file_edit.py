"""Updating a record file in place: only the lines of the keys that change.

An update of a file an editor wrote keeps the editor's key order, comments, blank lines, the
way untouched values are written and the body's bytes when the body does not change. Each
top-level key owns its line and the lines that continue its value (indented lines, items of a
sequence written at the start of the line, blank lines between them); comment and blank
lines before a key are left where they are. A changed key's lines are replaced by the value
as ``record_files.dump`` writes it, a removed key loses its lines, an added key goes after
the nearest key before it in the resource's declared order that the file has (else after
the last key). ``update`` returns None for a file it does not split with certainty (see
``_blocks``): the caller then writes the whole file.
"""
from __future__ import annotations

import re
from typing import Callable

from calendar_service.domain import record_files
from calendar_service.domain.resources import Resource

# a top-level key line: a plain key, its colon, then a space or the end of the line
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)")


def _blocks(lines: list[str]) -> list[list] | None:
    """[key, first line, end line (exclusive)] of each top-level key of a YAML mapping's
    ``lines``, in file order; None when a line is neither a key, a continuation, a comment nor
    blank (a flow mapping at the top, a quoted or complex key, a document marker...) or a key
    is written twice."""
    blocks: list[list] = []
    seen: set[str] = set()
    for number, line in enumerate(lines):
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t" or line.startswith("- ") or line == "-":
            if not blocks:
                return None   # a continuation before any key
            blocks[-1][2] = number + 1
            continue
        match = _KEY_LINE.match(line)
        if match is None or match[1] in seen:
            return None
        seen.add(match[1])
        blocks.append([match[1], number, number + 1])
    return blocks


def same(a, b) -> bool:
    """Equal values of equal types (``True`` is not ``1``), recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def _render(key: str, value) -> list[str]:
    """The lines of ``key: value`` as ``record_files.dump`` writes them."""
    return record_files.key_text(key, value).rstrip("\n").split("\n")


def update(resource: Resource, raw: bytes, old: dict, new: dict, derived=()) -> bytes | None:
    """``raw`` (a record file read as ``old``) changed to hold ``new``: only the lines of the
    keys whose values differ, the body's bytes kept when it is the same. A key of ``derived``
    that the file leaves out (read from the file's name or git's history) stays out while its
    value in ``new`` is the one ``old`` holds. None when the file is not one this edit handles
    (not UTF-8, a byte order mark, CR line ends, a front matter that is not closed, or a key
    area ``_blocks`` refuses): write the whole file then. The caller checks that the result
    reads back as ``new`` (see ``edited``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text or text.startswith("\ufeff"):
        return None
    if not resource.body_key and text and not text.endswith("\n"):
        text += "\n"   # a last line without its newline gets one
    start, end = record_files.key_area(resource, text)
    if resource.body_key and (start == 0 or end == len(text)):
        return None   # no opening or no closing '---' line
    area = text[start:end]
    lines = area.split("\n")
    if lines.pop() != "":
        return None   # a key area not ending with a newline (text right before the closing '---')
    blocks = _blocks(lines)
    if blocks is None:
        return None
    wanted = {k: v for k, v in new.items() if v is not None and k != resource.body_key}
    present = {block[0] for block in blocks}
    replaced: dict[int, list[str] | None] = {}   # first line -> new lines (None: removed)
    for key, first, _ in blocks:
        if key not in wanted:
            replaced[first] = None
        elif not same(wanted[key], old.get(key)):
            replaced[first] = _render(key, wanted[key])
    added = [k for k in wanted if k not in present and not (k in derived and same(wanted[k], old.get(k)))]
    order = {key: number for number, key in enumerate(resource.file_keys)}
    added.sort(key=lambda k: order.get(k, len(order)))
    after: dict[int, list[str]] = {}   # last line of a block (or -1: the end) -> lines added after it
    ends = {block[0]: block[2] - 1 for block in blocks if replaced.get(block[1], True) is not None}
    for key in added:
        anchor = -1
        if key in order:
            before = [k for k in resource.file_keys[:order[key]] if k in ends]
            if before:
                anchor = ends[before[-1]]
        if anchor == -1 and ends:
            anchor = max(ends.values())
        after.setdefault(anchor, []).extend(_render(key, wanted[key]))
        if anchor != -1:
            ends[key] = anchor
    out: list[str] = list(after.get(-1, [])) if not ends else []
    skip_to = -1
    starts = {block[1]: block for block in blocks}
    for number, line in enumerate(lines):
        if number < skip_to:
            continue
        block = starts.get(number)
        if block is not None and block[1] in replaced:
            skip_to = block[2]
            if replaced[block[1]] is not None:
                out.extend(replaced[block[1]])
            number = block[2] - 1
        else:
            out.append(line)
        out.extend(after.get(number, []))
    if not out and not resource.body_key:
        return None
    head = text[:start] + "".join(line + "\n" for line in out)
    if not resource.body_key:
        return head.encode("utf-8")
    if same(new.get(resource.body_key) or "", old.get(resource.body_key) or ""):
        return (head + text[end:]).encode("utf-8")
    closing = re.compile(r"^-{3,}[ \t]*$", re.M).match(text, end)
    body = (new.get(resource.body_key) or "").strip("\n")
    return (head + text[end:closing.end()] + "\n" + (body + "\n" if body else "")).encode("utf-8")


def edited(resource: Resource, path: str, raw: bytes, current: dict, new: dict,
           refs: Callable[[dict], dict]) -> bytes | None:
    """``update`` of the file ``raw`` at ``path`` whose record holds ``current``, when the result
    reads back as exactly ``new`` (its keys of value None left out, the body without its
    surrounding newlines); None when it would not: the caller writes the whole file (and
    reports a value that cannot be stored). ``refs`` writes a record's references as its file
    does (by slug), on both sides. A file without ``slug`` (its name says it) stays without."""
    current = refs(current)
    content = update(resource, raw, current, new, ("slug",))
    if content is None:
        return None
    record, problems = record_files.parse(path, content)
    if record is None or any(p.severity == "error" for p in problems):
        return None
    got = refs(record.data)
    wanted = refs({k: v for k, v in new.items() if v is not None})
    if resource.body_key:
        got.setdefault(resource.body_key, "")
        wanted[resource.body_key] = (wanted.get(resource.body_key) or "").strip("\n")
    return content if same(got, wanted) else None

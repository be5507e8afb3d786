"""Limits on what one content file may cost to read, and what reading a big one needs.

Each limit is a setting (``config.Settings``; the variable is named in every message). A file over
one is an error of that file alone, at its line; the API refuses a write that would make one
(400 naming the field). The nesting, keys and items limits are checked on the node tree libyaml
composes, without recursion and before any Python object of the file is built.
"""
from __future__ import annotations

from dataclasses import dataclass

import yaml

from calendar_service.domain.recurrence.ids import MAX_SERIES_ID

# Record ids run from 1 to this: the largest series id an occurrence id can hold, so a record id
# never collides with an occurrence id (2**52 and above) and fits the 32-bit bitmaps of the maps.
MAX_ID = MAX_SERIES_ID


@dataclass(frozen=True)
class Limits:
    """What one content file may cost to read: each limit is a setting (``config.Settings``, the
    variable named in each message). A file over one is not served (an error at its line); the
    API refuses a write that would make one (400 naming the field)."""

    file_bytes: int = 1024 * 1024    # CALENDAR_MAX_FILE_BYTES: checked before the file is read
    nesting: int = 20                # CALENDAR_MAX_NESTING: lists and mappings inside one another
    keys: int = 1000                 # CALENDAR_MAX_KEYS: keys of one mapping
    items: int = 10000               # CALENDAR_MAX_ITEMS: items of one list
    string_length: int = 2000        # CALENDAR_MAX_STRING_LENGTH: characters of a one-line field


LIMITS = Limits()


def configure(limits: Limits) -> None:
    """Use ``limits`` for every file read from now on (the service does this from its settings)."""
    global LIMITS
    LIMITS = limits


def megabytes(size: int) -> str:
    """``size`` bytes for an editor: in MB from 0.1 MB, else in bytes."""
    return f"{size / (1024 * 1024):.1f} MB" if size >= 102400 else f"{size:,} bytes"


class OverLimit(yaml.YAMLError):
    """A node of the YAML is over one of ``LIMITS`` (at ``line``, 0-based in the YAML text)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.message, self.line = message, line


def check_nodes(root, limits: Limits) -> None:
    """Walk the composed node tree without recursion (no Python object built yet): refuse nesting,
    mappings and lists over ``limits`` (a scalar's length is bounded by the file's size)."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        line = node.start_mark.line
        if depth > limits.nesting:
            raise OverLimit(f"lists and mappings nested more than {limits.nesting} deep "
                            "(CALENDAR_MAX_NESTING)", line)
        if isinstance(node, yaml.MappingNode):
            if len(node.value) > limits.keys:
                raise OverLimit(f"a mapping of {len(node.value):,} keys, over the limit of {limits.keys:,} "
                                "(CALENDAR_MAX_KEYS)", line)
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        else:
            if len(node.value) > limits.items:
                raise OverLimit(f"a list of {len(node.value):,} items, over the limit of {limits.items:,} "
                                "(CALENDAR_MAX_ITEMS)", line)
            stack.extend((item, depth + 1) for item in node.value)


KEY_COLONS = 4   # a line's key may hold a colon or a few: prefixes up to this many colons are keys


class KeyLines:
    """``key`` -> the line of ``text`` where top-level ``key`` is first written (1 when it is
    not), as ``line_of`` finds it, from one pass over the text made at the first question: a
    file of many keys is located in linear time, not one scan of the text per key."""

    def __init__(self, text: str):
        self.text = text
        self._lines: dict | None = None

    def __call__(self, key: str) -> int:
        if self._lines is None:
            lines: dict = {}
            for number, line in enumerate(self.text.split("\n"), 1):
                if not line or line[0] in " \t#":
                    continue
                colon = line.find(":")
                for _ in range(KEY_COLONS):
                    if colon < 0:
                        break
                    lines.setdefault(line[:colon].rstrip(), number)
                    colon = line.find(":", colon + 1)
            self._lines = lines
        return self._lines.get(key, 1)

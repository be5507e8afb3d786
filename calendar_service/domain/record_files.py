"""Record files: how one record is read from and written to its file.

Events are YAML front matter plus the description as the body; venues, organizers,
categories and tags are plain YAML. Keys are the API's field names and are written in the
order the resource declares, then any keys an editor added (kept, never dropped). Reading
checks every key's type and reports problems as ``path:line: message``.
"""
from __future__ import annotations

import difflib
import hashlib
import logging
import re
import sys
from dataclasses import dataclass
from datetime import datetime

import frontmatter
import yaml

from calendar_service.domain import dates
from calendar_service.domain.booleans import LENIENT, parse_bool
from calendar_service.domain import series_file
from calendar_service.domain.record import Record
from calendar_service.domain import file_limits
from calendar_service.domain.file_limits import MAX_ID, KeyLines, OverLimit, megabytes
from calendar_service.domain.resources import RESOURCES, TYPE_NAMES, Resource

log = logging.getLogger(__name__)

try:  # the C loader and dumper are several times faster than the pure-Python ones
    _Loader = yaml.CSafeLoader
    _BaseDumper = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader
    _BaseDumper = yaml.SafeDumper


_CParser = getattr(yaml, "CParser", None)


def size_problem(path: str, size: int) -> "FileProblem":
    """The problem of a file of ``size`` bytes, over ``file_limits.LIMITS.file_bytes``."""
    shown, limit = megabytes(size), megabytes(file_limits.LIMITS.file_bytes)
    if shown == limit:   # just over: the exact sizes say it
        shown, limit = f"{size:,} bytes", f"{file_limits.LIMITS.file_bytes:,} bytes"
    return FileProblem(path, 1, f"the file is {shown}, over the limit of {limit} (CALENDAR_MAX_FILE_BYTES)")


def largest_key(resource: Resource, raw: bytes) -> str | None:
    """The key of the longest value of a file the service wrote (for naming the field that makes
    it too big); None when it cannot tell."""
    try:
        text = raw.decode("utf-8")
        if resource.body_key:
            split = _split_front_matter(text)
            meta = yaml.load(split[0], Loader=_Loader) if split else {}
            sizes = {resource.body_key: len(split[1]) if split else 0}
        else:
            meta, sizes = yaml.load(text, Loader=_Loader), {}
        sizes.update((str(key), len(str(value))) for key, value in (meta or {}).items())
        return max(sizes, key=sizes.get) if sizes else None
    except Exception:   # noqa: BLE001 - only a better name for a refusal made anyway
        return None


def load_yaml(text: str):
    """Load the YAML of a content file: the one loader of records (plain files and front matter).

    Content files need no anchors or aliases, and nested aliases can make a few lines expand to
    gigabytes: any anchor or alias is refused (a ``yaml.YAMLError`` with its line).
    """
    if "&" in text or "*" in text:  # neither can occur without one of these characters
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, "anchors and aliases (&name, *name) are not allowed in content files",
                    event.start_mark)
    return yaml.load(text, Loader=_StrictLoader)


class _FrontMatter(frontmatter.YAMLHandler):
    """Front matter read with ``load_yaml``."""

    def load(self, fm: str, **kwargs):
        return load_yaml(fm)


_FRONT_MATTER = _FrontMatter()


class _Dumper(_BaseDumper):
    """Block style for records, ``[1, 2]`` for short lists, ``|`` blocks for multi-line text."""


def _represent_list(dumper, data):
    flat = all(isinstance(x, (int, float, bool)) or (isinstance(x, str) and "\n" not in x and len(x) < 60)
               for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


def _represent_str(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


class _Lines(list):
    """A list always written one item per line (a series' ``recurrence``)."""


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(_Lines, lambda dumper, data: dumper.represent_sequence(
    "tag:yaml.org,2002:seq", data, flow_style=False))
_Dumper.add_representer(str, _represent_str)


class _DuplicateKey(yaml.YAMLError):
    """A mapping names ``key`` twice: on line ``first`` and ``line`` of the YAML text."""

    def __init__(self, key, first: int, line: int):
        super().__init__(f"duplicate key {key!r}")
        self.key, self.first, self.line = key, first, line


class _StrictLoader(_Loader):
    """The safe loader, refusing a mapping that names one key twice (YAML lets the last one win
    silently, so an editor's second ``title:`` would hide the first without a word), and a
    document over ``file_limits.LIMITS`` before any of it is constructed."""

    def get_single_data(self):
        node = self.get_single_node()   # composed by libyaml in C: no Python recursion
        if node is None:
            return None
        file_limits.check_nodes(node, file_limits.LIMITS)
        return self.construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:
                    continue  # an unhashable key: construct_mapping reports it
                if first != key_node.start_mark.line + 1:
                    raise _DuplicateKey(key, first, key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _StrictLoader.construct_yaml_map)

# the line that opens and closes front matter (as python-frontmatter reads it)
_FRONT_MATTER_BOUNDARY = re.compile(r"^-{3,}\s*$", re.M)

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,199}$")


@dataclass(frozen=True)
class FileProblem:
    """Something wrong in a content file, located for the editor who has to fix it."""

    path: str
    line: int
    message: str
    severity: str = "error"   # "error": the record is not served; "warning": served anyway

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# Strings up to this long in a record's data are interned: keys, statuses, zones, dates and the
# slugs events name repeat across thousands of records and are then held once per process.
INTERN_LENGTH = 80


def _compact(value):
    if isinstance(value, str):
        return sys.intern(value) if len(value) <= INTERN_LENGTH else value
    if isinstance(value, list):
        return [_compact(item) for item in value]
    return value


def compact(data: dict) -> dict:
    """``data`` with its keys and short strings interned (in place: the same dict, same order)."""
    items = [(sys.intern(k) if isinstance(k, str) else k, _compact(v)) for k, v in data.items()]
    data.clear()
    data.update(items)
    return data


def is_safe_slug(slug) -> bool:
    """True when ``slug`` can name a file: lowercase letters, digits, ``-`` and ``_`` only."""
    return isinstance(slug, str) and bool(_SLUG.match(slug))


def file_stem(path: str) -> str:
    """The file name of ``path`` without its folders and extension."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


# a month folder of a resource filed by month: events/2026/11/
_MONTH_FOLDER = re.compile(r"(\d{4})/(0[1-9]|1[0-2])")
_MONTH_OF_DATE = re.compile(r"(\d{4})-(0[1-9]|1[0-2])-")


def folder_for(resource: Resource, data: dict | None = None) -> str:
    """The folder the service puts a new file of ``resource`` in: the resource's folder, and for
    a resource filed by month the year and month of ``data``'s date key (``events/2026/11``);
    the resource's folder alone when that date is missing or unreadable."""
    if resource.filed_by_month and data:
        match = _MONTH_OF_DATE.match(str(data.get(resource.filed_by_month) or ""))
        if match:
            return f"{resource.folder}/{match[1]}/{match[2]}"
    return resource.folder


def path_for(resource: Resource, slug: str, data: dict | None = None, old_path: str | None = None) -> str:
    """Repository path of the file of ``slug`` (with ``data``, in its month folder: see
    ``folder_for``); refuses anything that is not a safe slug. A file now at ``old_path`` at the
    top of its resource's folder (the older layout) stays at the top: editors' files are not
    moved; one in a month folder follows its date to another month's folder."""
    if not is_safe_slug(slug):
        raise ValueError(f"unsafe slug {slug!r}")
    if old_path is not None and old_path.rsplit("/", 1)[0] == resource.folder:
        data = None
    return f"{folder_for(resource, data)}/{slug}{resource.extension}"


def resource_of_path(path: str) -> Resource | None:
    """The resource whose folder holds ``path`` with the right extension, or None. Files are
    read at the top of their resource's folder and, for a resource filed by month, in its
    ``YYYY/MM/`` folders (both layouts are read: older repositories keep every file at the top)."""
    folder, _, name = path.partition("/")
    resource = RESOURCES.get(folder)
    if resource is None:
        return None
    if "/" in name:
        where, _, name = name.rpartition("/")
        if not resource.filed_by_month or not _MONTH_FOLDER.fullmatch(where):
            return None
    if resource.kind == "post" and resource.body_key and name.endswith((".md", ".html")):
        return resource
    if name.endswith((".yaml", ".yml")) and not resource.body_key:
        return resource
    return None


def misfiled(resource: Resource, path: str, data: dict) -> str | None:
    """The month folder ``path`` should be in when it is in another one (a file an editor moved,
    or whose date changed by hand); None when it is where the layout puts it or at the top."""
    where = path.rsplit("/", 1)[0]
    if not resource.filed_by_month or where == resource.folder:
        return None
    wanted = folder_for(resource, data)
    return wanted if wanted != where and wanted != resource.folder else None


# keys read from files besides the declared ones
EXTRA_KEYS = ("global_id_lineage",)


def known_keys(resource: Resource) -> set[str]:
    """The keys a file of ``resource`` may hold that the service reads."""
    return set(resource.types) | set(resource.file_keys) | set(EXTRA_KEYS)


def line_of(text: str, key: str) -> int:
    """The line of ``text`` where top-level ``key`` is written (1 when it is not)."""
    return _line_of(text, key)


def _line_of(text: str, key: str, offset: int = 0) -> int:
    match = re.search(rf"^{re.escape(key)}\s*:", text, re.M)
    return offset + (text.count("\n", 0, match.start()) + 1 if match else 1)


# messages of unexpected failures already logged with their traceback (bounded: see ``parse``)
_LOGGED: set = set()
_LOGGED_MAX = 1000


def parse(path: str, raw: bytes) -> tuple[Record | None, list[FileProblem]]:
    """Read a content file. Returns the record (None when it cannot be served) and its problems.

    Never raises: a file over ``file_limits.LIMITS`` or one that makes a library fail in a way nobody
    foresaw is a problem of that file alone (an error at its line, or line 1)."""
    if len(raw) > file_limits.LIMITS.file_bytes:
        return None, [size_problem(path, len(raw))]
    try:
        return _parse(path, raw)
    except Exception as exc:   # RecursionError, OverflowError, MemoryError, a library's ValueError...
        kind = type(exc).__name__
        marker = (path, hashlib.sha1(raw).hexdigest(), kind)
        if marker not in _LOGGED:
            if len(_LOGGED) >= _LOGGED_MAX:
                _LOGGED.clear()
            _LOGGED.add(marker)
            log.error("%s could not be read (%s)", path, kind, exc_info=True)
        return None, [FileProblem(path, 1, f"could not be read: {kind}")]


def _parse(path: str, raw: bytes) -> tuple[Record | None, list[FileProblem]]:
    resource = resource_of_path(path)
    if resource is None:
        return None, []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [FileProblem(path, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]
    if "\x00" in text:
        return None, [FileProblem(path, 1, "the file contains a NUL byte")]
    body = None
    try:
        if resource.body_key:
            if not text.lstrip("\ufeff").startswith("---"):
                return None, [FileProblem(path, 1, "expected YAML front matter starting with '---'")]
            split = _split_front_matter(text)
            if split is None:
                return None, [FileProblem(path, 1, "the front matter is not closed: no '---' line after the opening one")]
            offset = split[2]
            # a byte order mark (some Windows editors write one) would hide the front matter
            post = frontmatter.loads(text[1:] if text.startswith("\ufeff") else text, handler=_FRONT_MATTER)
            meta, body = post.metadata, post.content
        else:
            offset = 0
            meta = load_yaml(text)
    except OverLimit as exc:
        return None, [FileProblem(path, exc.line + 1 + offset, exc.message)]
    except _DuplicateKey as exc:
        return None, [FileProblem(path, exc.line + offset,
                              f"duplicate key {exc.key!r} (first on line {exc.first + offset}); YAML would keep only the last")]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 + offset if mark else 1
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, [FileProblem(path, line, f"YAML syntax error: {reason}")]
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return None, [FileProblem(path, 1, "expected a mapping of keys to values")]
    meta = {str(k): v for k, v in meta.items()}
    at = KeyLines(text)
    data, problems = normalize(resource, meta, path, at)
    problems += _unknown_keys(resource, meta, path, at)
    if body is not None:
        data[resource.body_key] = body
    stem = file_stem(path)
    if "slug" not in data or data["slug"] in (None, ""):
        data["slug"] = stem
    elif data["slug"] != stem:
        problems.append(FileProblem(path, at("slug"),
                                f"slug {data['slug']!r} does not match the file name {stem!r}", "warning"))
    if not is_safe_slug(data["slug"]):
        problems.append(FileProblem(path, at("slug"),
                                "slug must be lowercase letters, digits, '-' or '_'"))
    refused = {p.message.split("'")[1] for p in problems if p.message.startswith("'")}  # wrong type: said already
    if data.get("id") in (None, ""):
        data["id"] = None  # the service gives the file an id in a commit of its own (see Snapshot)
    for key in (resource.title_key,):
        if data.get(key) in (None, "") and key not in refused:
            problems.append(FileProblem(path, 1, f"required field '{key}' is missing"))
    if resource is RESOURCES["events"]:
        for key in ("start_date", "end_date"):
            if not data.get(key) and key not in refused:
                problems.append(FileProblem(path, 1, f"required field '{key}' is missing"))
        if data.get("timezone") and not dates.is_valid_timezone(data["timezone"]):
            problems.append(FileProblem(path, at("timezone"), f"unknown time zone {data['timezone']!r}"))
        if not any(p.severity == "error" for p in problems) and data["end_date"] < data["start_date"]:
            problems.append(FileProblem(path, at("end_date"), "end_date is before start_date"))
        wanted = misfiled(resource, path, data)
        if wanted:
            problems.append(FileProblem(path, at("start_date"), f"starts in another month than its "
                                    f"folder says: new files of that month go to {wanted}/", "warning"))
        if not any(p.severity == "error" for p in problems):
            split = _split_front_matter(text)
            problems += [FileProblem(path, line, message, severity) for line, message, severity in
                         series_file.problems(data, text, at, split[0] if split else "", split[2] if split else 0)]
            exceptions = data.get("exceptions") if isinstance(data.get("exceptions"), dict) else {}
            for key, changes in exceptions.items():
                if isinstance(changes, dict):  # an exception's fields have the types of the event's
                    # (its times were checked with the series: a bare date is a day of an all-day series)
                    checked, wrong = normalize(resource, {k: v for k, v in changes.items() if k in resource.types
                                                          and k not in ("start_date", "end_date")})
                    changes.update(checked)
                    problems += [FileProblem(path, at("exceptions"),
                                         f"'exceptions' {str(key)!r}: {p.message}") for p in wrong]
            if exceptions:   # keys YAML read as dates are kept as the text they were written as
                data["exceptions"] = {str(dates.normalize_stored(k)) if isinstance(k, datetime) else str(k): v
                                      for k, v in exceptions.items()}
    elif "recurrence" in meta or "exceptions" in meta:
        key = "recurrence" if "recurrence" in meta else "exceptions"
        problems.append(FileProblem(path, at(key), f"'{key}' belongs to events only (a recurring event)"))
    if resource is RESOURCES["venues"]:
        problems += _fold_stateprovince(data, path, at)
    if any(p.severity == "error" for p in problems):
        return None, problems
    return Record(resource, compact(data), path), problems


US_COUNTRIES = ("", "us", "usa", "united states")


def region_key(data: dict) -> str:
    """The key of a venue that holds its region (the API's ``stateprovince``): ``state`` when the
    venue has a state and its country is empty or the United States, else ``province``."""
    us = str(data.get("country") or "").strip().lower() in US_COUNTRIES
    return "state" if us and (data.get("state") or not data.get("province")) else "province"


def _fold_stateprovince(data: dict, path: str, at) -> list[FileProblem]:
    """A venue's region is written once, as ``state`` or ``province``; an older file's
    ``stateprovince`` is read as an alias of that key (it fills it when it is empty) and dropped,
    with a warning when the two differ."""
    alias = data.pop("stateprovince", None)
    if alias in (None, ""):
        return []
    key = region_key(data)
    if data.get(key) in (None, ""):
        data[key] = alias
        return []
    if str(data[key]).strip() != str(alias).strip():
        return [FileProblem(path, at("stateprovince"),
                        f"stateprovince {alias!r} differs from {key} {data[key]!r}: the service serves "
                        f"{key}; remove stateprovince", "warning")]
    return []


def _split_front_matter(text: str) -> tuple[str, str, int] | None:
    """(front matter, body, lines before the front matter) of an event file, as python-frontmatter
    splits it; None when the front matter is never closed."""
    stripped = text.strip().lstrip("\ufeff")
    lead = text[:len(text) - len(text.lstrip())].count("\n")
    parts = _FRONT_MATTER_BOUNDARY.split(stripped, 2)
    if len(parts) < 3:
        return None
    return parts[1], parts[2].strip(), lead


_ID_LINE = re.compile(rb"""^id[ \t]*:[ \t]*['"]?([0-9]{1,18})['"]?[ \t]*(?:#.*)?$""", re.M)


def claimed_id(raw: bytes) -> int | None:
    """The id a file that cannot be read writes on a top-level ``id:`` line, if any: it is kept
    free, so the file keeps it once repaired."""
    match = _ID_LINE.search(raw)
    return int(match.group(1)) if match and 1 <= int(match.group(1)) <= MAX_ID else None


# The lines ``new`` writes at the top of a file (of its front matter) for the service's id commit to
# fill in: the id commit then changes one line between two that nobody edits (the ``---`` or the start of
# the file, and the comment), so git merges it with any edit the editor makes meanwhile.
ID_PLACEHOLDER = "id:\n# the calendar service writes this file's id on the line above: keep both lines\n"


def with_id_placeholder(resource: Resource, raw: bytes) -> bytes:
    """``raw`` (a new record file without id) with ``ID_PLACEHOLDER`` as its first lines (of its
    front matter for a front-matter file)."""
    text = raw.decode("utf-8")
    start = key_area(resource, text)[0]
    return (text[:start] + ID_PLACEHOLDER + text[start:]).encode("utf-8")


def key_area(resource: Resource, text: str) -> tuple[int, int]:
    """Where the top-level keys of a record file's text are: (start, end) offsets."""
    if not resource.body_key:
        return 0, len(text)
    opening = _FRONT_MATTER_BOUNDARY.search(text)
    start = opening.end() + 1 if opening else 0
    closing = _FRONT_MATTER_BOUNDARY.search(text, start)
    return start, closing.start() if closing else len(text)


def with_key(resource: Resource, raw: bytes, key: str, value) -> bytes:
    """``raw`` (a record file) with its top-level ``key`` set to ``value`` (an int or a safe slug),
    every other byte kept: the key's line is replaced (``new``'s empty ``id:`` placeholder line
    too), or one is added as the first key. The first line is where an added line has the fewest
    neighbours an editor changes (the ``---`` or the start of the file above it): git merges it with
    an edit of any other key, of the body, or a key appended, made without pulling first; only an
    edit of the first key (often the title) conflicts with it (see docs/editing.md)."""
    text = raw.decode("utf-8")
    start, end = key_area(resource, text)
    line = re.compile(rf"^{re.escape(key)}[ \t]*:.*$", re.M).search(text, start, end)
    if line:
        text = text[:line.start()] + f"{key}: {value}" + text[line.end():]
    else:
        text = text[:start] + f"{key}: {value}\n" + text[start:]
    return text.encode("utf-8")


# unknown keys of one file reported one by one; the rest in one warning (a file's problems stay small)
UNKNOWN_KEYS_SHOWN = 20


def _unknown_keys(resource: Resource, meta: dict, path: str, at) -> list[FileProblem]:
    """Keys the service does not read: kept and served anyway (a warning), often a typo."""
    known = known_keys(resource) | {"recurrence", "exceptions"}  # on other records: an error (see parse)
    unknown = [key for key in meta if key not in known]
    problems = []
    for key in unknown[:UNKNOWN_KEYS_SHOWN]:
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        problems.append(FileProblem(path, at(key), f"unknown key '{key}'{hint}", "warning"))
    if len(unknown) > UNKNOWN_KEYS_SHOWN:
        rest = unknown[UNKNOWN_KEYS_SHOWN:]
        problems.append(FileProblem(path, at(rest[0]), f"{len(rest):,} more unknown keys", "warning"))
    return problems


def normalize(resource: Resource, meta: dict, path: str = "", at=None) -> tuple[dict, list[FileProblem]]:
    """Check and coerce each known key to its declared type; unknown keys are kept as they are.
    ``at(key)`` is the line of a key (1 without it)."""
    at = at or (lambda key: 1)
    data: dict = {}
    problems: list[FileProblem] = []
    for key, value in meta.items():
        kind = resource.types.get(key)
        if kind is None or value is None:
            data[key] = value
            continue
        try:
            data[key] = _coerce(kind, value)
        except (TypeError, ValueError):
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            problems.append(FileProblem(path, at(key), f"'{key}' must be {TYPE_NAMES[kind]}, got {shown}"))
            continue
        if key == "id" and not 1 <= data[key] <= MAX_ID:
            problems.append(FileProblem(path, at(key), f"'id' must be from 1 to {MAX_ID:,} (larger numbers are "
                                                       f"the ids of occurrences), got {data[key]}"))
        elif kind == "str" and len(data[key]) > (most := file_limits.LIMITS.string_length):
            problems.append(FileProblem(path, at(key), f"'{key}' is {len(data[key]):,} characters long, over "
                                                       f"the limit of {most:,} (CALENDAR_MAX_STRING_LENGTH)"))
    return data, problems


def _coerce(kind: str, value):
    if kind == "int":
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        raise TypeError
    if kind in ("str", "text"):
        if isinstance(value, (dict, list)):
            raise TypeError
        return value if isinstance(value, str) else str(value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        parsed = parse_bool(value, LENIENT) if isinstance(value, (int, str)) else None
        if parsed is None:
            raise TypeError
        return parsed
    if kind == "datetime":
        value = dates.normalize_stored(value)
        if not isinstance(value, str):
            raise TypeError
        dates.read_local(value, None)
        return value.strip()
    if kind == "refs":
        items = value if isinstance(value, list) else [value]
        out = []
        for item in items:
            if isinstance(item, bool) or isinstance(item, (dict, list, float)):
                raise TypeError
            # an integer is an id, a string a slug (a slug of digits only is written quoted: '2024')
            out.append(item.strip() if isinstance(item, str) else item)
        return out
    if kind == "ref":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise TypeError
        return value.strip() if isinstance(value, str) else value
    if kind == "cost":
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return value
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            return value
        raise TypeError
    if kind == "float":
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    if kind == "image":
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
        raise TypeError
    if kind == "map":
        if isinstance(value, dict):
            return value
        raise TypeError
    if kind == "lines":  # a list of text lines (one line may be written as a plain string)
        if isinstance(value, str):
            return [line.strip() for line in value.splitlines() if line.strip()]
        if isinstance(value, list):
            return value
        raise TypeError
    raise AssertionError(kind)


def _yaml_text(mapping: dict) -> str:
    """The YAML of top-level keys as record files write them (a series' ``recurrence`` one RFC
    5545 line per line)."""
    if isinstance(mapping.get("recurrence"), list):
        mapping = {**mapping, "recurrence": _Lines(mapping["recurrence"])}
    return yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1000)


def key_text(key: str, value) -> str:
    """The lines ``dump`` writes for one top-level key (an in-place edit writes them alone)."""
    return _yaml_text({key: value})


def dump(resource: Resource, data: dict) -> bytes:
    """The file content for ``data``: declared keys first, in order, then any others; None values left out."""
    ordered = {k: data[k] for k in resource.file_keys if data.get(k) is not None}
    for key, value in data.items():
        if key not in ordered and key != resource.body_key and value is not None and key in data:
            if key not in resource.file_keys:
                ordered[key] = value
    text = _yaml_text(ordered)
    if resource.body_key:
        body = (data.get(resource.body_key) or "").strip("\n")
        return ("---\n" + text + "---\n" + (body + "\n" if body else "")).encode("utf-8")
    return text.encode("utf-8")

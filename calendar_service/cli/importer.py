"""Importing events from The Events Calendar's REST API output, as ONE commit.

Input: the JSON the original serves for an event list (``{"events": [...], ...}``), a
single event object, or a plain list of event objects, with venues, organizers,
categories and tags embedded as the original embeds them. Output: record files in our
format (``records.dump``) added as one commit through ``GitStore.commit_new_files``
(``git fast-import``, then a compare-and-swap on the branch), under the store's write
lock, so it is safe while a service runs on the repository.

Rules:
- Linked records (venues, organizers, categories, tags) are created once each: they are
  deduplicated by their original id, else by slug (or name). One already in the
  repository with the same id and slug (terms: the same slug or name; venues and
  organizers: the same slug and name) is reused, not written again.
- Original ids are kept when they are free. An id already used in the repository, or by
  an earlier record of the input in the same id space (events, venues and organizers
  share one, categories and tags another), is replaced by a new id above every id in
  use or requested; the result lists each change (``remapped``) and so does the commit
  message. Slugs are kept unless taken, then get ``-2``, ``-3``...; events are always
  created (importing the same file twice gives two copies, with new ids).
- The whole input is checked before anything is written: a bad record raises
  ImportFailure naming it (its index in the input, its id and title) and the field, and
  nothing is written.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from calendar_service.domain import dates
from calendar_service.domain.booleans import YES_NO, parse_bool
from calendar_service.domain import records
from calendar_service.domain import text
from calendar_service.cli import import_series
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, POST_STATUSES, RESOURCES, TAGS, VENUES, Resource
from calendar_service.storage.store import GitStore

_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
_FLAGS = ("hide_from_listings", "sticky", "featured")


class ImportFailure(ValueError):
    """The input cannot be imported; the message names the record and the field. Nothing was written."""


@dataclass
class ImportResult:
    """What an import wrote: the commit, counts per resource, reused records and changed ids."""

    commit: str | None
    created: dict = field(default_factory=dict)      # resource name -> files written
    reused: dict = field(default_factory=dict)       # resource name -> records already there
    remapped: list = field(default_factory=list)     # (singular, original id, new id)
    seconds: float = 0.0

    def summary(self) -> str:
        parts = [f"{n} {name}" for name, n in self.created.items() if n]
        line = "imported " + (", ".join(parts) or "nothing")
        reused = [f"{n} {name}" for name, n in self.reused.items() if n]
        if reused:
            line += "; reused " + ", ".join(reused)
        if self.remapped:
            line += f"; {len(self.remapped)} ids changed on clash"
        if self.commit:
            line += f" in commit {self.commit[:12]}"
        return line + f" ({self.seconds:.1f} s)"


def load(path) -> list:
    """The event objects of a JSON file (list response, single event or list). Raises ImportFailure."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ImportFailure(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ImportFailure(f"{path} is not valid JSON: {exc}") from None
    return events_of(data)


def events_of(data) -> list:
    """The event objects of decoded JSON. Raises ImportFailure for any other shape."""
    if isinstance(data, dict) and isinstance(data.get("events"), list):
        return data["events"]
    if isinstance(data, dict) and "start_date" in data:
        return [data]
    if isinstance(data, list):
        return data
    raise ImportFailure("expected a list response with 'events', an event object or a list of events")


# ----------------------------------------------------------------------------- checking one value


class _Bad(Exception):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def _label(index: int, item) -> str:
    if not isinstance(item, dict):
        return f"event #{index}"
    ident = item.get("id")
    title = item.get("title")
    bits = []
    if ident not in (None, ""):
        bits.append(f"id {ident}")
    if isinstance(title, str) and title.strip():
        bits.append(repr(title.strip()[:60]))
    return f"event #{index}" + (f" ({', '.join(bits)})" if bits else "")


def _id(value, key: str) -> int | None:
    if value in (None, "", 0, "0"):
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.strip().isdigit()):
        raise _Bad(key, f"must be a positive integer id, got {value!r}")
    return int(value)


def _str(value, key: str, required: bool = False) -> str | None:
    if value is None or value is False:
        if required:
            raise _Bad(key, "is required")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Bad(key, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise _Bad(key, "is required and must not be empty")
    return value if value.strip() else None


def _stamp(value, key: str, required: bool = False) -> str | None:
    if value in (None, ""):
        if required:
            raise _Bad(key, "is required")
        return None
    if not isinstance(value, str) or not _STAMP.match(value.strip()):
        raise _Bad(key, f"must be a date 'YYYY-MM-DD HH:MM:SS', got {value!r}")
    try:
        dates.read_local(value, None)
    except ValueError:
        raise _Bad(key, f"is not a real date: {value!r}") from None
    return value.strip()


def _bool(value, key: str) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    parsed = parse_bool(value, YES_NO) if isinstance(value, (int, str)) else None
    if parsed is not None:
        return parsed
    raise _Bad(key, f"must be true or false, got {value!r}")


def _image(value, key: str) -> str | None:
    if value in (None, False, "", 0):
        return None
    if isinstance(value, dict):
        value = value.get("url")
    if not isinstance(value, str) or not value.strip():
        raise _Bad(key, "must be false, an image URL or an object with 'url'")
    return value.strip()


def _float(value, key: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise _Bad(key, f"must be a number, got {value!r}") from None


def plain_text(html_text: str | None) -> str | None:
    """The editor-friendly text whose display (``text.autop``) is ``html_text``; the HTML itself
    when no plain form displays identically."""
    if not html_text or not html_text.strip():
        return None
    chunks = re.findall(r"<p>(.*?)</p>", html_text, re.S)
    if chunks and "\n".join(f"<p>{c}</p>" for c in chunks) == html_text.strip():
        plain = "\n\n".join(c.replace("<br />\n", "\n") for c in chunks)
        if text.autop(plain) == html_text.strip():
            return plain
    return html_text


def _as_list(value, key: str) -> list:
    if value in (None, "", False, 0, "0"):
        return []
    if isinstance(value, dict):
        # one embedded object, or a PHP-style list {"0": {...}}
        return list(value.values()) if value and all(str(k).isdigit() for k in value) else [value]
    if isinstance(value, list):
        return value
    if isinstance(value, (int, str)):
        return [value]
    raise _Bad(key, f"must be a list of objects or ids, got {type(value).__name__}")


# ----------------------------------------------------------------------------- the plan


@dataclass
class _Linked:
    """One venue, organizer or term of the input, before it gets its final id."""

    resource: Resource
    original_id: int | None
    data: dict
    new_id: int | None = None
    reused: bool = False
    slug: str | None = None   # the slug its file has (the one files refer to it by)


class _Planner:
    def __init__(self, snapshot: Snapshot, root: Path, site_tz):
        self.snapshot = snapshot
        self.site_tz = site_tz
        self.linked: dict[tuple, _Linked] = {}     # (resource name, key) -> linked record
        self.by_original: dict[tuple, _Linked] = {}
        self.slugs: dict[tuple, _Linked] = {}       # (resource name, ("slug", slug)) -> first with it
        self.events: list[tuple[int, dict, dict]] = []   # (index, data, refs)
        # paths in use: committed (even unreadable files) and anything in the working tree
        self.taken_slugs: dict[str, set] = {resource.folder: set() for resource in RESOURCES.values()}
        for path in snapshot.files:
            folder, _, name = path.partition("/")
            if folder in self.taken_slugs:
                self.taken_slugs[folder].add(name.rsplit(".", 1)[0])
        for folder, slugs in self.taken_slugs.items():
            with_files = root / folder
            if with_files.is_dir():
                slugs.update(name.rsplit(".", 1)[0] for name in os.listdir(with_files))

    # ---- reading the input

    def linked_record(self, resource: Resource, item, key: str) -> _Linked:
        if not isinstance(item, (dict, int, str)) or isinstance(item, bool):
            raise _Bad(key, f"each {resource.singular} must be an object or an id")
        if not isinstance(item, dict):
            # a bare id or name: an earlier embedded record of the input, or one in the repository
            if str(item).strip().isdigit():
                original = int(str(item).strip())
                found = self.by_original.get((resource.id_space, resource.name, original))
                if found is not None:
                    return found
                if self.snapshot.get(resource, original) is not None:
                    return self._remember(_Linked(resource, original, {}, original, True), ("id", original))
                raise _Bad(key, f"{original} is not the id of a {resource.singular} in the input or the repository")
            if resource.kind != "term":
                raise _Bad(key, f"{item!r} is not a {resource.singular} id or object")
            item = {"name": item}
        name = _str(item.get(resource.title_key), f"{key}.{resource.title_key}", required=True).strip()
        original = _id(item.get("id"), f"{key}.id")
        slug = item.get("slug") if isinstance(item.get("slug"), str) else None
        by_slug = ("slug", slug or text.slugify(name) or name.lower())
        dedupe = ("id", original) if original else by_slug
        found = self.linked.get((resource.name, dedupe)) or (
            None if original else self.slugs.get((resource.name, by_slug)))
        if found is not None:
            return found
        data = self._linked_data(resource, item, key, name, slug)
        linked = self._remember(_Linked(resource, original, data), dedupe)
        self.slugs.setdefault((resource.name, by_slug), linked)
        return linked

    def _remember(self, linked: _Linked, dedupe) -> _Linked:
        self.linked[(linked.resource.name, dedupe)] = linked
        if linked.original_id:
            self.by_original.setdefault((linked.resource.id_space, linked.resource.name, linked.original_id), linked)
        return linked

    def _linked_data(self, resource: Resource, item: dict, key: str, name: str, slug) -> dict:
        data: dict = {resource.title_key: name, "slug": slug}
        if resource.kind == "term":
            data["description"] = _str(item.get("description"), f"{key}.description")
            if resource is CATEGORIES:
                data["parent"] = _id(item.get("parent"), f"{key}.parent")
            return data
        self._post_fields(data, item, key)
        if resource is VENUES:
            for field_name in VENUES.text_keys:
                data[field_name] = _str(item.get(field_name), f"{key}.{field_name}")
            for field_name in ("show_map", "show_map_link"):
                data[field_name] = _bool(item.get(field_name), f"{key}.{field_name}")
            for field_name in ("geo_lat", "geo_lng"):
                data[field_name] = _float(item.get(field_name), f"{key}.{field_name}")
        else:
            for field_name in ORGANIZERS.text_keys:
                data[field_name] = _str(item.get(field_name), f"{key}.{field_name}")
        return data

    @staticmethod
    def _post_fields(data: dict, item: dict, prefix: str) -> None:
        def key(name: str) -> str:
            return f"{prefix}.{name}" if prefix else name

        status = item.get("status") or "publish"
        if status not in POST_STATUSES:
            raise _Bad(key("status"), f"must be one of {', '.join(POST_STATUSES)}, got {status!r}")
        data["status"] = status
        data["author"] = _id(item.get("author"), key("author"))
        data["date_utc"] = _stamp(item.get("date_utc"), key("date_utc"))
        data["modified_utc"] = _stamp(item.get("modified_utc"), key("modified_utc")) or data["date_utc"]
        data["description"] = plain_text(_str(item.get("description"), key("description")))
        data["excerpt"] = plain_text(_str(item.get("excerpt"), key("excerpt")))
        data["image"] = _image(item.get("image"), key("image"))
        lineage = item.get("global_id_lineage")
        if isinstance(lineage, list) and all(isinstance(x, str) for x in lineage) and lineage:
            data["global_id_lineage"] = lineage

    def event(self, index: int, item) -> None:
        if not isinstance(item, dict):
            raise _Bad("", f"must be an event object, got {type(item).__name__}")
        data: dict = {"title": _str(item.get("title"), "title", required=True).strip()}
        data["id"] = _id(item.get("id"), "id")
        data["slug"] = item.get("slug") if isinstance(item.get("slug"), str) else None
        self._post_fields(data, item, "")
        data["start_date"] = _stamp(item.get("start_date"), "start_date", required=True)
        data["end_date"] = _stamp(item.get("end_date"), "end_date", required=True)
        if data["end_date"] < data["start_date"]:
            raise _Bad("end_date", f"{data['end_date']} is before start_date {data['start_date']}")
        zone = _str(item.get("timezone"), "timezone")
        if zone and not dates.is_valid_timezone(zone):
            raise _Bad("timezone", f"unknown time zone {zone!r}")
        data["timezone"] = zone
        data["all_day"] = _bool(item.get("all_day"), "all_day") or None
        cost = item.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            cost = str(cost)
        if cost is not None and not isinstance(cost, (str, list)):
            raise _Bad("cost", f"must be a string, got {type(cost).__name__}")
        data["cost"] = cost or None
        details = item.get("cost_details")
        if details is not None and not isinstance(details, dict):
            raise _Bad("cost_details", "must be an object")
        if details and data["cost"]:
            derived = text.cost_details(data["cost"])[1]
            for part in ("currency_symbol", "currency_position", "currency_code"):
                value = _str(details.get(part), f"cost_details.{part}")
                if value and value != derived[part]:
                    data[part] = value
        # the original shows the event's own page when it has no website: keep that default
        website = _str(item.get("website"), "website")
        if "website" in item and website != item.get("url"):
            data["website"] = website or ""
        for flag in ("show_map", "show_map_link"):
            data[flag] = _bool(item.get(flag), flag)
        for flag in _FLAGS:
            data[flag] = _bool(item.get(flag), flag) or None
        custom = item.get("custom_fields")
        if custom not in (None, [], {}, ""):
            if not isinstance(custom, dict):
                raise _Bad("custom_fields", "must be an object")
            data["custom_fields"] = custom
        bad = import_series.series_fields(data, item, self.site_tz)
        if bad:
            raise _Bad(*bad)
        refs = {}
        for key, resource in (("venue", VENUES), ("organizer", ORGANIZERS), ("categories", CATEGORIES),
                              ("tags", TAGS)):
            refs[key] = [self.linked_record(resource, entry, key) for entry in _as_list(item.get(key), key)]
        self.events.append((index, data, refs))

    # ---- ids, slugs, files

    def _reuse(self, linked: _Linked) -> None:
        resource, data, snapshot = linked.resource, linked.data, self.snapshot
        slug = data.get("slug") or text.slugify(data[resource.title_key])
        if linked.original_id:
            same = snapshot.get(resource, linked.original_id)
            if same is not None and same.slug == slug:
                linked.new_id, linked.reused = same.id, True
                return
        by_slug = snapshot.get_slug(resource, slug) if slug else None
        if resource.kind == "term":
            name = data["name"].lower()
            match = by_slug or next((t for t in snapshot.all(resource) if t.title.strip().lower() == name), None)
        else:
            match = by_slug if by_slug is not None and by_slug.title.strip().lower() == data[
                resource.title_key].lower() else None
        if match is not None:
            linked.new_id, linked.reused = match.id, True

    def _slug(self, resource: Resource, wanted, title: str, record_id: int) -> str:
        # the API's slug rule: the same cleaning (Windows device names too) for a given slug or a title
        base = text.slugify(wanted if isinstance(wanted, str) and wanted else title) or f"{resource.singular}-{record_id}"
        taken = self.taken_slugs[resource.folder]
        slug = text.unique_slug(base, taken.__contains__)
        taken.add(slug)
        return slug

    def files(self, result: ImportResult) -> dict[str, bytes]:
        """Give every record its id and slug, and dump the files."""
        for linked in self.linked.values():
            if not linked.reused:
                self._reuse(linked)
        spaces = {"posts": set(self.snapshot.ids["posts"]), "terms": set(self.snapshot.ids["terms"])}
        wanted = {"posts": [], "terms": []}   # (kind, original id, record) in order of claim
        for linked in self.linked.values():
            if not linked.reused:
                wanted[linked.resource.id_space].append((linked.resource, linked.original_id, linked))
        for _, data, _ in self.events:
            wanted["posts"].append((EVENTS, data["id"], data))
        for space, claims in wanted.items():
            used = spaces[space]
            next_free = max([*used, *(c[1] or 0 for c in claims), 0]) + 1
            for resource, original, target in claims:
                if original and original not in used:
                    new = original
                else:
                    new, next_free = next_free, next_free + 1
                    if original:
                        result.remapped.append((resource.singular, original, new))
                used.add(new)
                if isinstance(target, _Linked):
                    target.new_id = new
                else:
                    target["id"] = new
        out: dict[str, bytes] = {}
        result.created = {name: 0 for name in RESOURCES}
        result.reused = dict(result.created)
        # files refer to records by slug: every slug is settled before any file is written
        for linked in self.linked.values():
            if linked.reused:
                linked.slug = self.snapshot.get(linked.resource, linked.new_id).slug
            else:
                linked.slug = self._slug(linked.resource, linked.data.get("slug"),
                                         linked.data[linked.resource.title_key], linked.new_id)
        originals = {(l.resource.name, l.original_id): l.slug for l in self.linked.values() if l.original_id}
        for linked in self.linked.values():
            resource = linked.resource
            if linked.reused:
                result.reused[resource.name] += 1
                continue
            data = {"id": linked.new_id, **linked.data, "slug": linked.slug}
            if resource is CATEGORIES and data.get("parent"):
                parent = data["parent"]
                existing = self.snapshot.get(CATEGORIES, parent)
                data["parent"] = originals.get((CATEGORIES.name, parent)) or (
                    existing.slug if existing is not None else None)
            out[records.path_for(resource, data["slug"])] = records.dump(resource, data)
            result.created[resource.name] += 1
        for _, data, refs in self.events:
            data["slug"] = self._slug(EVENTS, data.get("slug"), data["title"], data["id"])
            for key, linked_list in refs.items():
                data[key] = list(dict.fromkeys(l.slug for l in linked_list)) or None
            out[records.path_for(EVENTS, data["slug"])] = records.dump(EVENTS, data)
            result.created[EVENTS.name] += 1
        return out


# ----------------------------------------------------------------------------- entry points


def _message(result: ImportResult, source: str | None) -> str:
    lines = [f"Import {result.created.get('events', 0)} events" + (f" from {source}" if source else "")]
    details = [f"{n} {name}" for name, n in result.created.items() if n and name != "events"]
    body = []
    if details:
        body.append("Created " + ", ".join(details) + ".")
    reused = [f"{n} {name}" for name, n in result.reused.items() if n]
    if reused:
        body.append("Reused " + ", ".join(reused) + " already in the repository.")
    for singular, old, new in result.remapped[:50]:
        body.append(f"{singular} {old} is now {new} (id taken)")
    if len(result.remapped) > 50:
        body.append(f"... and {len(result.remapped) - 50} more ids changed")
    return lines[0] + ("\n\n" + "\n".join(body) if body else "")


def import_events(store: GitStore, items: list, site_tz, author: tuple[str, str] | None = None,
                  message: str | None = None, source: str | None = None, progress=None,
                  catalog: Catalog | None = None) -> ImportResult:
    """Import ``items`` (event objects as the original API serves them) as one commit.

    Returns an ImportResult. Raises ImportFailure for bad input (nothing written), and the
    store's StoreError/BranchMoved when git refuses (nothing written either).
    ``progress(stage, done, total)`` reports progress. ``catalog`` (a running service's)
    saves reading the repository again.
    """
    started = time.monotonic()
    if not isinstance(items, list):
        raise ImportFailure("expected a list of events")
    store.init()
    author = author or store.committer
    with store.write_lock():
        snapshot = (catalog or Catalog(store)).current()
        planner = _Planner(snapshot, store.root, site_tz)
        for index, item in enumerate(items):
            try:
                planner.event(index, item)
            except _Bad as bad:
                where = f"field '{bad.key}'" if bad.key else "the record"
                raise ImportFailure(f"{_label(index, item)}: {where} {bad}") from None
            if progress and (index + 1) % 2000 == 0:
                progress("checking", index + 1, len(items))
        if progress and len(items) % 2000:
            progress("checking", len(items), len(items))
        result = ImportResult(None)
        files = planner.files(result)
        if not files:
            result.seconds = time.monotonic() - started
            return result
        commit_message = message or _message(result, source)
        result.commit = store.commit_new_files(
            files, commit_message, author, snapshot.commit,
            progress=(lambda done, total: progress("writing", done, total)) if progress else None)
    result.seconds = time.monotonic() - started
    return result


def parse_author(value: str) -> tuple[str, str]:
    """``"Name <email>"`` as (name, email). Raises ValueError."""
    match = re.match(r"^\s*([^<>]+?)\s*<([^<>\s]+)>\s*$", value or "")
    if not match:
        raise ValueError(f"--author must look like 'Name <email>', got {value!r}")
    return match.group(1), match.group(2)

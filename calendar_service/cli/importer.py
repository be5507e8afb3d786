"""Importing events from The Events Calendar's REST API output, as ONE commit.

Input: the JSON the original serves for an event list (``{"events": [...], ...}``), a
single event object, or a plain list of event objects, with venues, organizers,
categories and tags embedded as the original embeds them. Output: record files in our
format (``records.dump``) added as one commit through ``GitStore.commit_new_files``
(``git fast-import``, then a compare-and-swap on the branch), under the store's write
lock, so it is safe while a service runs on the repository.

Rules:
- Re-importing is idempotent (a site can be re-synced from the original): an event, venue
  or organizer of the input is the repository's record whose ``global_id_lineage`` holds
  the input's ``global_id`` (or one of its lineage), else the record of the same resource
  with the same id and slug; a category or tag is the one with the same id and slug. Such
  a record is rewritten only when the import changes its file (keys an editor added, such
  as a ``password``, are kept; its id, slug and path stay), so importing the same export
  twice writes nothing the second time. Records missing from the input are left alone
  (an export may be a page or a date window, never a list of deletions).
- Other linked records (venues, organizers, categories, tags) are created once each: they
  are deduplicated by their original id, else by slug (or name). One already in the
  repository with the same slug (terms: or name; venues and organizers: and name) is
  reused as it is, not written.
- Original ids are kept when they are free. An id already used in the repository, or by
  an earlier record of the input in the same id space (events, venues and organizers
  share one, categories and tags another), is replaced by a new id above every id in
  use or requested; the result lists each change (``remapped``) and so does the commit
  message. A record's ``global_id`` is kept in its ``global_id_lineage``, so the next
  import finds it under its new id. Slugs are kept unless taken, then get ``-2``, ``-3``...
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

from calendar_service.cli.import_values import (Bad, as_bool, as_float, as_id, as_image, as_list, as_stamp, as_str,
                                                plain_text, record_label)
from calendar_service.domain import dates
from calendar_service.domain import record_files
from calendar_service.domain import text
from calendar_service.cli import import_series
from calendar_service.domain.record import Record
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.catalog import Catalog
from calendar_service.storage.objects import blob_sha
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, POST_STATUSES, RESOURCES, TAGS, VENUES, Resource
from calendar_service.storage.store import GitStore

_FLAGS = ("hide_from_listings", "sticky", "featured")


class ImportFailure(ValueError):
    """The input cannot be imported; the message names the record and the field. Nothing was written."""


@dataclass
class ImportResult:
    """What an import wrote: the commit, counts per resource, reused records and changed ids."""

    commit: str | None
    created: dict = field(default_factory=dict)      # resource name -> files written
    reused: dict = field(default_factory=dict)       # resource name -> records already there
    updated: dict = field(default_factory=dict)      # resource name -> matched records rewritten
    unchanged: dict = field(default_factory=dict)    # resource name -> matched records the import leaves as they are
    remapped: list = field(default_factory=list)     # (singular, original id, new id)
    seconds: float = 0.0

    def summary(self) -> str:
        parts = [f"{n} {name}" for name, n in self.created.items() if n]
        line = "imported " + (", ".join(parts) or "nothing new")
        for label, counts in (("updated", self.updated), ("unchanged", self.unchanged), ("reused", self.reused)):
            listed = [f"{n} {name}" for name, n in counts.items() if n]
            if listed:
                line += f"; {label} " + ", ".join(listed)
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
    existing: Record | None = None   # the repository's record it is (rewritten when it changes)


class _Planner:
    def __init__(self, snapshot: Snapshot, root: Path, site_tz):
        self.snapshot = snapshot
        self.site_tz = site_tz
        self.linked: dict[tuple, _Linked] = {}     # (resource name, key) -> linked record
        self.by_original: dict[tuple, _Linked] = {}
        self.slugs: dict[tuple, _Linked] = {}       # (resource name, ("slug", slug)) -> first with it
        self.events: list[tuple[int, dict, dict]] = []   # (index, data, refs)
        # paths in use: committed (even unreadable files) and anything in the working tree
        # (file names in a resource's folder and its month folders, and the slugs records hold)
        self.taken_slugs: dict[str, set] = {resource.folder: set() for resource in RESOURCES.values()}
        for path in snapshot.files:
            folder = path.partition("/")[0]
            if folder in self.taken_slugs:
                self.taken_slugs[folder].add(record_files.file_stem(path))
        for resource in RESOURCES.values():
            self.taken_slugs[resource.folder].update(record.slug for record in snapshot.all(resource))
        for folder, slugs in self.taken_slugs.items():
            for _, _, names in os.walk(root / folder):
                slugs.update(record_files.file_stem(name) for name in names)
        # (resource name, global id) -> the record whose lineage holds it
        self.lineage: dict[tuple, Record] = {}
        for resource in (EVENTS, VENUES, ORGANIZERS):
            for record in snapshot.all(resource):
                for gid in record.data.get("global_id_lineage") or ():
                    if isinstance(gid, str):
                        self.lineage.setdefault((resource.name, gid), record)
        self.matched: set = set()   # (resource name, id) of repository records an input record is
        self.existing_events: dict[int, Record] = {}   # position in self.events -> matched record

    # ---- reading the input

    def linked_record(self, resource: Resource, item, key: str) -> _Linked:
        if not isinstance(item, (dict, int, str)) or isinstance(item, bool):
            raise Bad(key, f"each {resource.singular} must be an object or an id")
        if not isinstance(item, dict):
            # a bare id or name: an earlier embedded record of the input, or one in the repository
            if str(item).strip().isdigit():
                original = int(str(item).strip())
                found = self.by_original.get((resource.id_space, resource.name, original))
                if found is not None:
                    return found
                if self.snapshot.get(resource, original) is not None:
                    return self._remember(_Linked(resource, original, {}, original, True), ("id", original))
                raise Bad(key, f"{original} is not the id of a {resource.singular} in the input or the repository")
            if resource.kind != "term":
                raise Bad(key, f"{item!r} is not a {resource.singular} id or object")
            item = {"name": item}
        name = as_str(item.get(resource.title_key), f"{key}.{resource.title_key}", required=True).strip()
        original = as_id(item.get("id"), f"{key}.id")
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
            data["description"] = as_str(item.get("description"), f"{key}.description")
            if resource is CATEGORIES:
                data["parent"] = as_id(item.get("parent"), f"{key}.parent")
            return data
        self._post_fields(data, item, key)
        if resource is VENUES:
            for field_name in VENUES.text_keys:
                data[field_name] = as_str(item.get(field_name), f"{key}.{field_name}")
            for field_name in ("show_map", "show_map_link"):
                data[field_name] = as_bool(item.get(field_name), f"{key}.{field_name}")
            for field_name in ("geo_lat", "geo_lng"):
                data[field_name] = as_float(item.get(field_name), f"{key}.{field_name}")
        else:
            for field_name in ORGANIZERS.text_keys:
                data[field_name] = as_str(item.get(field_name), f"{key}.{field_name}")
        return data

    @staticmethod
    def _post_fields(data: dict, item: dict, prefix: str) -> None:
        def key(name: str) -> str:
            return f"{prefix}.{name}" if prefix else name

        status = item.get("status") or "publish"
        if status not in POST_STATUSES:
            raise Bad(key("status"), f"must be one of {', '.join(POST_STATUSES)}, got {status!r}")
        data["status"] = status
        data["author"] = as_id(item.get("author"), key("author"))
        data["date_utc"] = as_stamp(item.get("date_utc"), key("date_utc"))
        data["modified_utc"] = as_stamp(item.get("modified_utc"), key("modified_utc")) or data["date_utc"]
        data["description"] = plain_text(as_str(item.get("description"), key("description")))
        data["excerpt"] = plain_text(as_str(item.get("excerpt"), key("excerpt")))
        data["image"] = as_image(item.get("image"), key("image"))
        lineage = item.get("global_id_lineage")
        lineage = list(lineage) if isinstance(lineage, list) and all(isinstance(x, str) for x in lineage) else []
        global_id = item.get("global_id")
        if isinstance(global_id, str) and global_id.strip() and global_id not in lineage:
            lineage.append(global_id)   # what the next import of this record is matched by
        if lineage:
            data["global_id_lineage"] = lineage

    def event(self, index: int, item) -> None:
        if not isinstance(item, dict):
            raise Bad("", f"must be an event object, got {type(item).__name__}")
        data: dict = {"title": as_str(item.get("title"), "title", required=True).strip()}
        data["id"] = as_id(item.get("id"), "id")
        data["slug"] = item.get("slug") if isinstance(item.get("slug"), str) else None
        self._post_fields(data, item, "")
        data["start_date"] = as_stamp(item.get("start_date"), "start_date", required=True)
        data["end_date"] = as_stamp(item.get("end_date"), "end_date", required=True)
        if data["end_date"] < data["start_date"]:
            raise Bad("end_date", f"{data['end_date']} is before start_date {data['start_date']}")
        zone = as_str(item.get("timezone"), "timezone")
        if zone and not dates.is_valid_timezone(zone):
            raise Bad("timezone", f"unknown time zone {zone!r}")
        data["timezone"] = zone
        data["all_day"] = as_bool(item.get("all_day"), "all_day") or None
        cost = item.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            cost = str(cost)
        if cost is not None and not isinstance(cost, (str, list)):
            raise Bad("cost", f"must be a string, got {type(cost).__name__}")
        data["cost"] = cost or None
        details = item.get("cost_details")
        if details is not None and not isinstance(details, dict):
            raise Bad("cost_details", "must be an object")
        if details and data["cost"]:
            derived = text.cost_details(data["cost"])[1]
            for part in ("currency_symbol", "currency_position", "currency_code"):
                value = as_str(details.get(part), f"cost_details.{part}")
                if value and value != derived[part]:
                    data[part] = value
        # the original shows the event's own page when it has no website: keep that default
        website = as_str(item.get("website"), "website")
        if "website" in item and website != item.get("url"):
            data["website"] = website or ""
        for flag in ("show_map", "show_map_link"):
            data[flag] = as_bool(item.get(flag), flag)
        for flag in _FLAGS:
            data[flag] = as_bool(item.get(flag), flag) or None
        custom = item.get("custom_fields")
        if custom not in (None, [], {}, ""):
            if not isinstance(custom, dict):
                raise Bad("custom_fields", "must be an object")
            data["custom_fields"] = custom
        bad = import_series.series_fields(data, item, self.site_tz)
        if bad:
            raise Bad(*bad)
        refs = {}
        for key, resource in (("venue", VENUES), ("organizer", ORGANIZERS), ("categories", CATEGORIES),
                              ("tags", TAGS)):
            refs[key] = [self.linked_record(resource, entry, key) for entry in as_list(item.get(key), key)]
        self.events.append((index, data, refs))

    # ---- ids, slugs, files

    def _match(self, resource: Resource, original: int | None, wanted_slug, title: str, lineage) -> Record | None:
        """The repository's record an input record is (see the module's rules), or None; each
        repository record is matched once."""
        found = next((self.lineage[(resource.name, g)] for g in lineage or () if (resource.name, g) in self.lineage),
                     None)
        if found is None and original:
            same = self.snapshot.get(resource, original)
            slug = text.slugify(wanted_slug if isinstance(wanted_slug, str) and wanted_slug else title)
            if same is not None and same.slug == slug:
                found = same
        if found is None or (resource.name, found.id) in self.matched:
            return None
        self.matched.add((resource.name, found.id))
        return found

    def _reuse(self, linked: _Linked) -> None:
        resource, data, snapshot = linked.resource, linked.data, self.snapshot
        slug = data.get("slug") or text.slugify(data[resource.title_key])
        same = self._match(resource, linked.original_id, data.get("slug"), data[resource.title_key],
                           data.get("global_id_lineage"))
        if same is not None:
            linked.new_id, linked.reused, linked.existing = same.id, True, same
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

    def _write(self, resource: Resource, data: dict, existing: Record | None, out: dict, replacing: dict,
               result: ImportResult) -> None:
        """Dump a new record, or rewrite a matched one when its file changes (an editor's extra keys kept)."""
        if existing is None:
            out[record_files.path_for(resource, data["slug"], data)] = record_files.dump(resource, data)
            result.created[resource.name] += 1
            return
        extras = {k: v for k, v in existing.file_data().items() if k not in data}
        content = record_files.dump(resource, {**data, **extras})
        blob = self.snapshot.files[existing.path][0]
        if blob_sha(content) == blob:
            result.unchanged[resource.name] += 1
            return
        out[existing.path] = content
        replacing[existing.path] = blob
        result.updated[resource.name] += 1

    def files(self, result: ImportResult) -> tuple[dict[str, bytes], dict[str, str]]:
        """Give every record its id and slug, and dump the files: (path -> content, path -> the
        blob a rewritten file replaces)."""
        for linked in self.linked.values():
            if not linked.reused:
                self._reuse(linked)
        for position, (_, data, _) in enumerate(self.events):
            same = self._match(EVENTS, data["id"], data.get("slug"), data["title"], data.get("global_id_lineage"))
            if same is not None:
                data["id"] = same.id
                self.existing_events[position] = same
        spaces = {"posts": set(self.snapshot.ids["posts"]), "terms": set(self.snapshot.ids["terms"])}
        wanted = {"posts": [], "terms": []}   # (kind, original id, record) in order of claim
        for linked in self.linked.values():
            if not linked.reused:
                wanted[linked.resource.id_space].append((linked.resource, linked.original_id, linked))
        for position, (_, data, _) in enumerate(self.events):
            if position not in self.existing_events:
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
        replacing: dict[str, str] = {}
        result.created = {name: 0 for name in RESOURCES}
        result.reused, result.updated, result.unchanged = dict(result.created), dict(result.created), dict(result.created)
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
            if linked.reused and linked.existing is None:
                result.reused[resource.name] += 1
                continue
            data = {"id": linked.new_id, **linked.data, "slug": linked.slug}
            if resource is CATEGORIES and data.get("parent"):
                parent = data["parent"]
                existing = self.snapshot.get(CATEGORIES, parent)
                data["parent"] = originals.get((CATEGORIES.name, parent)) or (
                    existing.slug if existing is not None else None)
            self._write(resource, data, linked.existing, out, replacing, result)
        for position, (_, data, refs) in enumerate(self.events):
            existing = self.existing_events.get(position)
            data["slug"] = existing.slug if existing is not None else self._slug(
                EVENTS, data.get("slug"), data["title"], data["id"])
            for key, linked_list in refs.items():
                data[key] = list(dict.fromkeys(l.slug for l in linked_list)) or None
            self._write(EVENTS, data, existing, out, replacing, result)
        return out, replacing


# ----------------------------------------------------------------------------- entry points


def _message(result: ImportResult, source: str | None) -> str:
    created, updated = result.created.get("events", 0), result.updated.get("events", 0)
    head = f"Import {created} events" if created or not updated else f"Update {updated} events"
    if created and updated:
        head += f", update {updated}"
    lines = [head + (f" from {source}" if source else "")]
    details = [f"{n} {name}" for name, n in result.created.items() if n and name != "events"]
    body = []
    if details:
        body.append("Created " + ", ".join(details) + ".")
    changed = [f"{n} {name}" for name, n in result.updated.items() if n]
    if changed:
        body.append("Updated " + ", ".join(changed) + " (matched by global_id or id).")
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
            except Bad as bad:
                where = f"field '{bad.key}'" if bad.key else "the record"
                raise ImportFailure(f"{record_label(index, item)}: {where} {bad}") from None
            if progress and (index + 1) % 2000 == 0:
                progress("checking", index + 1, len(items))
        if progress and len(items) % 2000:
            progress("checking", len(items), len(items))
        result = ImportResult(None)
        files, replacing = planner.files(result)
        if not files:   # nothing new and nothing changed: no commit at all
            result.seconds = time.monotonic() - started
            return result
        commit_message = message or _message(result, source)
        result.commit = store.commit_new_files(
            files, commit_message, author, snapshot.commit,
            progress=(lambda done, total: progress("writing", done, total)) if progress else None,
            replacing=replacing)
    result.seconds = time.monotonic() - started
    return result


def parse_author(value: str) -> tuple[str, str]:
    """``"Name <email>"`` as (name, email). Raises ValueError."""
    match = re.match(r"^\s*([^<>]+?)\s*<([^<>\s]+)>\s*$", value or "")
    if not match:
        raise ValueError(f"--author must look like 'Name <email>', got {value!r}")
    return match.group(1), match.group(2)

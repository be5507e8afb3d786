"""Turning validated arguments into files: the plan of one write and the rules that fill it.

A ``WritePlan`` collects the files one write changes, the ids and slugs it hands out and
the lines of its commit message. ``WritePlanner`` fills plans for creates, updates and deletes:
fields not given are kept, dates are read in the event's (or the site's) time zone, venues
and organizers named in an event are found or created, unknown category and tag names
become new terms. Nothing here touches git: the service commits the plan.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timezone
from typing import Callable

from calendar_service.auth.accounts import User
from calendar_service.config import Settings
from calendar_service.domain import dates, file_edit, permissions, record_files, text
from calendar_service.domain.booleans import LENIENT, parse_bool
from calendar_service.domain.record import Record
from calendar_service.domain.resources import CATEGORIES, EVENTS, EVENT_REFERENCES, VENUES, Resource
from calendar_service.service import errors, series_writes
from calendar_service.domain.snapshot import Snapshot
from calendar_service.storage.objects import blob_sha

DATE_CHARS = len("YYYY-MM-DD")               # the date part of a stored "YYYY-MM-DD HH:MM:SS"
DAY_STARTS, DAY_ENDS = " 00:00:00", " 23:59:59"  # the times an all-day event starts and ends at

# the key of an event that refers to records of a resource, by resource name
REFERENCE_KEYS = {"venues": "venue", "organizers": "organizer", "categories": "categories", "tags": "tags"}


def _same_but_modified(new: dict, old: dict) -> bool:
    """Whether an update leaves a record as it was, apart from the time it stamps on it."""
    def strip(data: dict) -> dict:
        return {k: v for k, v in data.items() if k != "modified_utc" and v is not None}
    return strip(new) == strip(old)


class LinkedValueError(ValueError):
    """A venue or organizer value in an event payload that is neither an id nor a usable object."""


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def parse_linked(value, resource: Resource, snapshot: Snapshot, user: User | None) -> list:
    """Read the ``venue`` or ``organizer`` value of an event payload.

    The value may be an id, a comma-separated list of ids, an object (with an ``id``, or
    with a non-empty name to create a new record), a list of those, or a PHP-style list
    ``{"0": ..., "1": ...}``. Returns a list whose items are existing record ids or dicts
    describing new records. Empty values (``""``, ``0``, ``[]``) give an empty list.
    An id of a record ``user`` may not link (``permissions.can_use``: someone else's private
    or draft record it cannot see, a trashed one) is refused exactly like an unknown id.
    Raises LinkedValueError.
    """
    def usable(ident: str) -> bool:
        if not ident.isdigit():
            return False
        record = snapshot.get(resource, int(ident))
        return record is not None and permissions.can_use(user, record)

    if value in (None, "", 0, "0", [], {}):
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, dict):
        # a single object, or a PHP-style list {"0": {...}, "1": {...}}
        items = list(value.values()) if value and all(str(k).isdigit() for k in value) else [value]
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    found: list = []
    for item in items:
        if item in (None, "", 0, "0"):
            continue
        if isinstance(item, bool):
            raise LinkedValueError("not an id")
        if isinstance(item, (int, str)):
            text_value = str(item).strip()
            if not usable(text_value):
                raise LinkedValueError(f"{text_value!r} is not the id of {_article(resource.singular)}")
            found.append(int(text_value))
        elif isinstance(item, dict):
            if item.get("id") not in (None, ""):
                ident = str(item["id"]).strip()
                if not usable(ident):
                    raise LinkedValueError(f"{ident!r} is not the id of {_article(resource.singular)}")
                found.append(int(ident))
            elif isinstance(item.get(resource.title_key), str) and item[resource.title_key].strip():
                found.append(item)
            else:
                raise LinkedValueError(f"a new {resource.singular} needs a non-empty '{resource.title_key}'")
        else:
            raise LinkedValueError("not an id or an object")
    return found


def parse_term_list(value) -> list:
    """Categories or tags of an event payload: ids and names, from a CSV string or a list."""
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        value = [value]
    out = []
    for item in value:
        if isinstance(item, bool) or isinstance(item, (dict, list)) or item is None:
            raise ValueError("not a term id or name")
        if str(item).strip():
            out.append(item if isinstance(item, int) else str(item).strip())
    return out


_QUOTED_KEY = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'")


def _check_reads_back(resource: Resource, path: str, content: bytes) -> None:
    """Raise ``rest_invalid_param`` when ``content`` would not be read back as a record."""
    record, problems = record_files.parse(path, content)
    errors_found = [p for p in problems if p.severity == "error"]
    if record is not None and not errors_found:
        return
    reasons = {}
    for problem in errors_found or [record_files.FileProblem(path, 1, "the record could not be read back")]:
        found = _QUOTED_KEY.search(problem.message)
        key = found.group(1) if found else resource.title_key
        if "(CALENDAR_MAX_FILE_BYTES)" in problem.message:   # the field that makes the file too big
            key = record_files.largest_key(resource, content) or key
        if key.endswith("_utc") and key[: -len("_utc")] in resource.input_keys:
            key = key[: -len("_utc")]  # stored as UTC, sent as local time
        reasons.setdefault(key, f"The value cannot be stored: {problem.message}.")
    raise errors.invalid_params(reasons)


@dataclass
class WritePlan:
    """The files one write changes, the ids it hands out, and what its commit message says."""

    snapshot: Snapshot
    read: Callable[[str], bytes | None] | None = None  # blob id -> content (None: files are written whole)
    changes: dict = field(default_factory=dict)      # path -> bytes or None
    taken: dict = field(default_factory=dict)        # id space -> ids handed out in this write
    slugs: dict = field(default_factory=dict)        # resource name -> slugs used in this write
    notes: list = field(default_factory=list)        # further lines for the commit message
    records: dict = field(default_factory=dict)      # (resource name, id) -> data written

    def new_id(self, resource: Resource) -> int:
        taken = self.taken.setdefault(resource.id_space, set())
        candidate = max([self.snapshot.next_id(resource) - 1, *taken]) + 1
        taken.add(candidate)
        return candidate

    def unique_slug(self, resource: Resource, wanted: str, record_id: int, data: dict | None = None,
                    old_path: str | None = None) -> str:
        """``wanted``, or ``wanted-2``, ``-3``...: the first slug no other record holds or this write plans."""
        used = self.slugs.setdefault(resource.name, set())
        own = self.snapshot.get(resource, record_id)

        def taken(slug: str) -> bool:
            # a path in the tree is never written over unless it is this record's own file,
            # even when the service cannot read it (an editor's file with a YAML error)
            other = self.snapshot.get_slug(resource, slug)
            path = record_files.path_for(resource, slug, data, old_path) if record_files.is_safe_slug(slug) else None
            occupied = path in self.snapshot.files and (own is None or own.path != path)
            return slug in used or occupied or (other is not None and other.id != record_id)

        slug = text.unique_slug(wanted, taken)
        used.add(slug)
        return slug

    def slug_ref(self, resource: Resource, ref):
        """How a file of this write names the record ``ref`` (an id or a slug): by its slug, as
        planned in this write or in the snapshot; an id no record has is left as it is."""
        if not isinstance(ref, int):
            return ref
        planned = self.records.get((resource.name, ref))
        if planned is not None:
            return planned["slug"]
        record = self.snapshot.get(resource, ref)
        return record.slug if record is not None else ref

    def slug_refs(self, resource: Resource, data: dict) -> dict:
        """``data`` with its references as its file writes them: by slug (see ``slug_ref``)."""
        data = dict(data)
        if resource is EVENTS:
            for key, target in EVENT_REFERENCES.items():
                if data.get(key):
                    data[key] = list(dict.fromkeys(self.slug_ref(target, ref) for ref in data[key]))
        if resource is CATEGORIES and isinstance(data.get("parent"), int):
            data["parent"] = self.slug_ref(CATEGORIES, data["parent"])
        return data

    def put(self, resource: Resource, data: dict, old_path: str | None = None) -> None:
        """Plan ``data`` as its file. The file is read back first with the rules ``validate``
        and the loader use: one that would not read back is a 400 naming the field, never a commit.

        References are written as slugs. The file keeps its name unless it is named after the
        record's slug and the slug changes (a file renamed by hand keeps the editor's name)."""
        data.update(self.slug_refs(resource, data))
        old = self.snapshot.files.get(old_path) if old_path else None
        old_record = old[1] if old else None
        if old_record is not None and record_files.file_stem(old_path) != old_record.slug:
            path = old_path  # renamed by hand: the file name is the editor's
        else:
            path = record_files.path_for(resource, data["slug"], data, old_path)
        if path != old_path and path in self.snapshot.files:
            # another file is there (one the service may not even read): never write over it
            data["slug"] = self.unique_slug(resource, data["slug"], data["id"], data, old_path)
            path = record_files.path_for(resource, data["slug"], data, old_path)
        content = self._in_place(resource, path, old, data) if old_record is not None and self.read else None
        if content is None:
            content = record_files.dump(resource, data)
            _check_reads_back(resource, path, content)
        self.records[(resource.name, data["id"])] = data
        if path == old_path and old is not None and old[0] == blob_sha(content):
            return  # the file would not change by a byte: nothing to commit for it
        if old_path and old_path != path:
            self.changes[old_path] = None
        self.changes[path] = content

    def _in_place(self, resource: Resource, path: str, old: tuple, data: dict) -> bytes | None:
        """The file ``old`` (blob, record) with only the lines of the keys that change, when it
        reads back as exactly ``data`` (``file_edit.edited``); None when it would not, or its
        content cannot be read: the whole file is written then."""
        raw = self.read(old[0])
        if raw is None:
            return None
        return file_edit.edited(resource, path, raw, old[1].data, data, lambda found: self.slug_refs(resource, found))

    def remove(self, record: Record) -> None:
        self.changes[record.path] = None


class WritePlanner:
    """Plans the files of creates, updates and deletes: each method returns the ``build(plan)``
    the service runs against the branch head under the write lock (see ``CalendarService._write``).
    A build fills the plan and returns (commit message, (resource, id) to return or None)."""

    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def site_tz(self):
        return self.settings.tz

    def create(self, resource: Resource, args: dict, user: User):
        def build(plan: WritePlan):
            record_id = plan.new_id(resource)
            data = self._apply(plan, resource, {"id": record_id}, args, user, creating=True)
            plan.put(resource, data)
            return f'Create {resource.singular} {record_id} "{data[resource.title_key]}"', (resource, record_id)
        return build

    def update(self, record: Record, args: dict, user: User):
        resource = record.resource

        def build(plan: WritePlan):
            current = plan.snapshot.get(resource, record.id)
            if current is None:
                raise errors.conflict(f"{resource.singular} {record.id} was removed meanwhile")
            data = self._apply(plan, resource, dict(current.data), args, user, creating=False)
            if not plan.changes and _same_but_modified(plan.slug_refs(resource, data),
                                                       plan.slug_refs(resource, current.data)):
                return f'Update {resource.singular} {record.id}', (resource, record.id)  # nothing to commit
            plan.put(resource, data, old_path=current.path)
            if data["slug"] != current.slug:
                relink(plan, current, data["slug"])
            return f'Update {resource.singular} {record.id} "{data[resource.title_key]}"', (resource, record.id)
        return build

    def delete(self, record: Record, user: User | None = None):
        """Trash a post or delete a term for good (removing it from the events that carry it,
        in a commit by ``user``, refused with 409 ``calendar-term-in-use`` when ``user`` may not
        edit one of them; its child categories move up). Trashing changes the trashed record
        only: events keep naming a trashed venue or organizer (embeds leave it out), so
        restoring it links it again, and nobody changes others' events by trashing a venue."""
        resource = record.resource

        def build(plan: WritePlan):
            current = plan.snapshot.get(resource, record.id)
            if current is None:
                raise errors.conflict(f"{resource.singular} {record.id} was removed meanwhile")
            if resource.kind == "term":
                key = REFERENCE_KEYS[resource.name]
                carriers = plan.snapshot.events_referencing(key, current)
                if user is not None and not all(permissions.can_edit(user, e) for e in carriers):
                    raise errors.term_in_use(resource.singular)
                unlink(plan, key, current)
                plan.remove(current)
                self._reparent_children(plan, current)
                return f'Delete {resource.singular} {record.id} "{current.title}"', None
            data = dict(current.data)
            data["status"] = "trash"
            data["modified_utc"] = dates.fmt(dates.utc_now())
            plan.put(resource, data, old_path=current.path)
            return f'Trash {resource.singular} {record.id} "{current.title}"', (resource, record.id)
        return build

    def find_duplicate(self, snapshot: Snapshot, resource: Resource, args: dict, user: User | None) -> Record | None:
        """The existing venue or organizer a create by name stands for (the original's duplicate
        rule), among those ``user`` may match by name (``permissions.can_match``)."""
        name = str(args.get(resource.title_key) or "").strip().lower()
        description = args.get("description")
        for record in snapshot.all(resource):
            if record.title.strip().lower() != name or not permissions.can_match(user, record):
                continue
            if description not in (None, "") and (record.data.get("description") or "").strip() != str(description).strip():
                continue
            return record
        return None

    @staticmethod
    def _planned_duplicate(plan: WritePlan, resource: Resource, item: dict) -> int | None:
        """The id of a record this same write creates with the same name (and description)."""
        name = str(item.get(resource.title_key) or "").strip().lower()
        description = item.get("description")
        for (kind, record_id), data in plan.records.items():
            if kind != resource.name or str(data.get(resource.title_key) or "").strip().lower() != name:
                continue
            if description not in (None, "") and (data.get("description") or "").strip() != str(description).strip():
                continue
            return record_id
        return None

    def _apply(self, plan: WritePlan, resource: Resource, data: dict, args: dict, user: User, creating: bool) -> dict:
        now = dates.fmt(dates.utc_now())
        if resource.kind == "term":
            return self._apply_term(plan, resource, data, args, creating)
        title = args.get(resource.title_key)
        if title is not None:
            data[resource.title_key] = str(title).strip()
        for key in ("description", "excerpt"):
            if key in args and args[key] is not None:
                data[key] = args[key] if args[key] != "" else None
        if creating or "slug" in args and args["slug"] is not None:
            wanted = text.slugify(args.get("slug") or data[resource.title_key]) or f"{resource.singular}-{data['id']}"
            data["slug"] = plan.unique_slug(resource, wanted, data["id"])
        data["status"] = permissions.scale_status(args.get("status"), user, None if creating else data.get("status"))
        if args.get("author") is not None:
            if not permissions.can_assign_author(user, int(args["author"])):
                raise errors.cannot_assign_author()
            data["author"] = int(args["author"])
        elif creating:
            data["author"] = user.id
        tz = self.site_tz
        if resource is EVENTS:
            if "timezone" in args and args["timezone"] is not None:
                data["timezone"] = args["timezone"] or self.settings.site_timezone
            elif creating:
                data["timezone"] = self.settings.site_timezone
            tz = dates.zone(data.get("timezone"), self.site_tz)
        if args.get("date_utc") not in (None, ""):
            data["date_utc"] = dates.fmt(dates.parse(args["date_utc"], timezone.utc).astimezone(timezone.utc))
        elif args.get("date") not in (None, ""):
            data["date_utc"] = dates.fmt(dates.parse(args["date"], tz).astimezone(timezone.utc))
        elif creating:
            data["date_utc"] = now
        data["modified_utc"] = now
        if "image" in args and args["image"] is not None:
            data["image"] = args["image"] or None
        if resource is EVENTS:
            self._apply_event(plan, data, args, tz, user, creating)
        elif resource is VENUES:
            self._apply_venue(data, args, creating)
        else:
            for key in ("phone", "website", "email"):
                if args.get(key) is not None:
                    data[key] = str(args[key]).strip() or None
        return data

    def _apply_event(self, plan: WritePlan, data: dict, args: dict, tz, user: User, creating: bool) -> None:
        for key in ("start_date", "end_date"):
            if args.get(key) is not None:
                data[key] = dates.fmt(dates.parse(args[key], tz))
        if args.get("all_day") is not None:
            data["all_day"] = bool(args["all_day"])
        if data.get("all_day"):
            data["start_date"] = data["start_date"][:DATE_CHARS] + DAY_STARTS
            data["end_date"] = data["end_date"][:DATE_CHARS] + DAY_ENDS
        if data["end_date"] < data["start_date"]:
            data["end_date"] = data["start_date"]  # the original clamps rather than refusing
        if "cost" in args and args["cost"] is not None:
            cost = args["cost"]
            data["cost"] = cost if cost not in ("", []) else None
        if args.get("website") is not None:
            data["website"] = str(args["website"]).strip()
        for key in ("show_map", "show_map_link", "hide_from_listings", "sticky", "featured"):
            if args.get(key) is not None:
                data[key] = bool(args[key])
            elif creating and key in ("show_map", "show_map_link"):
                # the original stores false when an API create omits them; an update leaves them
                # (a file without them reads as true)
                data[key] = False
        for key in ("categories", "tags"):
            if key in args and args[key] is not None:
                data[key] = self._term_ids(plan, EVENT_REFERENCES[key], parse_term_list(args[key]))
        for key in ("venue", "organizer"):
            if key in args and args[key] is not None:
                target = EVENT_REFERENCES[key]
                try:
                    items = parse_linked(args[key], target, plan.snapshot, user)
                except LinkedValueError as exc:
                    # the HTTP check's answer (the plugin's code for a bad linked id): a replica
                    # that passed the check on an older head says what an up-to-date one says
                    raise errors.invalid_param(key, str(exc)) from None
                data[key] = self._linked_ids(plan, target, items, user)
        if "password" in args and args["password"] is not None:
            data["password"] = args["password"] or None
        series_writes.apply_recurrence(data, args.get("recurrence"), self.site_tz)

    def _apply_venue(self, data: dict, args: dict, creating: bool) -> None:
        for key in ("address", "city", "country", "province", "state", "zip", "phone", "website"):
            if args.get(key) is not None:
                data[key] = str(args[key]).strip() or None
        for key in ("show_map", "show_map_link"):
            if args.get(key) is not None:
                data[key] = parse_bool(args[key], LENIENT) is True
            elif creating:
                data[key] = True
        # the region is written once, as state or province (records.region_key): the API's
        # stateprovince is derived from it, and one given explicitly is stored there
        data.pop("stateprovince", None)
        explicit = str(args.get("stateprovince") or "").strip()
        if explicit:
            data[record_files.region_key(data)] = explicit

    def _apply_term(self, plan: WritePlan, resource: Resource, data: dict, args: dict, creating: bool) -> dict:
        snapshot = plan.snapshot
        if args.get("name") is not None:
            data["name"] = str(args["name"]).strip()
        if args.get("description") is not None:
            data["description"] = str(args["description"])
        if args.get("parent") is not None and resource is CATEGORIES:
            parent = int(args["parent"])
            if parent == data["id"]:
                raise errors.invalid_param("parent", "A category cannot be its own parent.")
            data["parent"] = parent or None
        if creating or args.get("slug") is not None:
            wanted = text.slugify(args.get("slug") or data["name"])
            if not wanted and args.get("slug"):
                raise errors.invalid_param("slug", "A slug needs at least one letter or digit.")
            wanted = wanted or f"{resource.singular}-{data['id']}"  # names without ASCII letters
            clash = snapshot.get_slug(resource, wanted)
            if clash is not None and clash.id != data["id"] or wanted in plan.slugs.get(resource.name, set()):
                raise errors.term_exists(clash.id if clash else None)
            data["slug"] = wanted
            plan.slugs.setdefault(resource.name, set()).add(wanted)
        for other in snapshot.all(resource):
            if (other.id != data["id"] and other.title.strip().lower() == data["name"].lower()
                    and snapshot.parent_id(other) == self._parent_id(plan, data)):
                raise errors.term_exists(other.id)
        return data

    @staticmethod
    def _parent_id(plan: WritePlan, data: dict) -> int:
        """The parent id of category ``data`` (its parent written as an id or a slug), 0 for none."""
        parent = data.get("parent")
        if isinstance(parent, str):
            record = plan.snapshot.get_slug(CATEGORIES, parent)
            return record.id if record is not None else 0
        return parent or 0

    def _term_ids(self, plan: WritePlan, resource: Resource, items: list) -> list[int]:
        """Ids for a list of term ids and names; unknown names become new terms, unknown ids are skipped."""
        ids: list[int] = []
        for item in items:
            text_value = str(item).strip()
            if isinstance(item, int) or text_value.isdigit():
                if plan.snapshot.get(resource, int(text_value)) is not None:
                    ids.append(int(text_value))
                continue
            existing = next((t for t in plan.snapshot.all(resource)
                             if t.title.lower() == text_value.lower() or t.slug == text_value), None)
            if existing is None:
                existing_new = next((d for (name, _), d in plan.records.items()
                                     if name == resource.name and d["name"].lower() == text_value.lower()), None)
                if existing_new is not None:
                    ids.append(existing_new["id"])
                    continue
                slug = text.slugify(text_value) or f"{resource.singular}"
                term_id = plan.new_id(resource)
                slug = plan.unique_slug(resource, slug, term_id)
                plan.put(resource, {"id": term_id, "name": text_value, "slug": slug})
                plan.notes.append(f'Create {resource.singular} {term_id} "{text_value}"')
                ids.append(term_id)
            else:
                ids.append(existing.id)
        return list(dict.fromkeys(ids))

    def _linked_ids(self, plan: WritePlan, resource: Resource, items: list, user: User) -> list[int]:
        ids = []
        for item in items:
            if isinstance(item, int):
                ids.append(item)
                continue
            duplicate = self.find_duplicate(plan.snapshot, resource, item, user)
            if duplicate is not None:
                ids.append(duplicate.id)
                continue
            created = self._planned_duplicate(plan, resource, item)
            if created is not None:
                ids.append(created)
                continue
            record_id = plan.new_id(resource)
            allowed = set(resource.input_keys)
            nested_args = {k: v for k, v in item.items() if k in allowed}
            data = self._apply(plan, resource, {"id": record_id}, nested_args, user, creating=True)
            plan.put(resource, data)
            plan.notes.append(f'Create {resource.singular} {record_id} "{data[resource.title_key]}"')
            ids.append(record_id)
        return list(dict.fromkeys(ids))

    def _reparent_children(self, plan: WritePlan, term: Record) -> None:
        """Children of a deleted category move up to its parent, as WordPress does."""
        if term.resource is not CATEGORIES:
            return
        for child in plan.snapshot.all(CATEGORIES):
            if plan.snapshot.parent_id(child) == term.id:
                data = dict(child.data)
                data["parent"] = term.data.get("parent") or None
                plan.put(CATEGORIES, data, old_path=child.path)
                plan.notes.append(f"Move category {child.id} up to parent {data['parent'] or 0}")


def unlink(plan: WritePlan, key: str, target: Record) -> None:
    """Remove ``target`` from the ``key`` references of every event naming it (a term deleted
    for good, a venue or organizer removed when the trash is emptied)."""
    for event in plan.snapshot.events_referencing(key, target):
        if event.path in plan.changes and plan.changes[event.path] is None:
            continue  # removed by this same write
        data = dict(plan.records.get((EVENTS.name, event.id)) or event.data)
        kept = [ref for ref in data.get(key) or [] if plan.snapshot.resolve(target.resource, ref) is not target]
        data[key] = kept
        plan.put(EVENTS, data, old_path=event.path)
        plan.notes.append(f"Unlink {target.resource.singular} {target.id} from event {event.id}")


def relink(plan: WritePlan, target: Record, new_slug: str) -> None:
    """After ``target``'s slug changed to ``new_slug``: rewrite every file that names it by its old
    slug (events' references, child categories' ``parent``) in the same write, so no reference is
    left dangling. Files that name it by id still point at it and are left alone."""
    old_slug = target.slug
    key = REFERENCE_KEYS.get(target.resource.name)
    if key is not None:
        for event in plan.snapshot.events_referencing(key, target):
            if event.path in plan.changes and plan.changes[event.path] is None:
                continue
            data = dict(plan.records.get((EVENTS.name, event.id)) or event.data)
            refs = data.get(key) or []
            if old_slug not in refs:
                continue
            data[key] = [new_slug if ref == old_slug else ref for ref in refs]
            plan.put(EVENTS, data, old_path=event.path)
            plan.notes.append(f"Rename {target.resource.singular} {old_slug} to {new_slug} in event {event.id}")
    if target.resource is CATEGORIES:
        for child in plan.snapshot.all(CATEGORIES):
            if child.id != target.id and child.data.get("parent") == old_slug:
                data = dict(plan.records.get((CATEGORIES.name, child.id)) or child.data)
                data["parent"] = new_slug
                plan.put(CATEGORIES, data, old_path=child.path)
                plan.notes.append(f"Rename category {old_slug} to {new_slug} as the parent of category {child.id}")

"""Venues, organizers, categories and tags over HTTP, as the original plugin serves them: who may
read and write each kind, the objects' fields and their order, list pagination and headers, the
list filters (search, has_events, event, only_with_upcoming, hide_empty, parent, ...), creating,
updating and deleting, and the error codes; against a real git content repository.

Venues and organizers mirror each other, and so do categories and tags: most tests run once per kind through
the ``linked`` and ``term`` fixtures. Large data sets (pagination, the per_page cap) are written straight into
the repository as one commit, as an editor would, to keep the file fast.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from calendar_service.auth.accounts import Accounts
from conftest import API

BASE = "http://localhost" + API
SITE = "http://localhost"

# Key orders of the original's recorded responses (create and single read).
VENUE_CREATE_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "venue", "slug",
                     "address", "city", "country", "state", "zip", "phone", "website", "stateprovince", "show_map",
                     "show_map_link", "global_id", "global_id_lineage"]
VENUE_SINGLE_KEYS = VENUE_CREATE_KEYS[:18] + ["json_ld"] + VENUE_CREATE_KEYS[18:]
ORGANIZER_CREATE_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "organizer",
                         "slug", "phone", "website", "email", "global_id", "global_id_lineage"]
ORGANIZER_SINGLE_KEYS = ORGANIZER_CREATE_KEYS[:13] + ["json_ld"] + ORGANIZER_CREATE_KEYS[13:]
# The order in which the original builds a venue / organizer object, before empty values are dropped.
VENUE_FULL_ORDER = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "venue",
                    "description", "excerpt", "slug", "image", "address", "city", "country", "province", "state",
                    "zip", "phone", "website", "stateprovince", "geo_lat", "geo_lng", "json_ld", "show_map",
                    "show_map_link", "global_id", "global_id_lineage"]
ORGANIZER_FULL_ORDER = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "organizer",
                        "description", "excerpt", "slug", "image", "phone", "website", "email", "json_ld",
                        "global_id", "global_id_lineage"]
VENUE_MINIMAL_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url", "venue", "slug",
                      "show_map", "show_map_link", "global_id", "global_id_lineage"]
ORGANIZER_MINIMAL_KEYS = ["id", "author", "status", "date", "date_utc", "modified", "modified_utc", "url",
                          "organizer", "slug", "global_id", "global_id_lineage"]
CATEGORY_KEYS = ["id", "count", "description", "name", "slug", "taxonomy", "parent", "meta", "url", "urls"]
TAG_KEYS = ["id", "count", "description", "name", "slug", "taxonomy", "meta", "url", "urls"]
EMBEDDED_TERM_KEYS = ["name", "slug", "term_group", "term_taxonomy_id", "taxonomy", "description", "parent", "count",
                      "filter", "id", "urls"]
MISSING_ID_ERROR = {  # samples/error_venue_missing_id.json (= organizer and category ones)
    "code": "rest_invalid_param",
    "message": "Invalid parameter(s): id",
    "data": {"status": 400, "params": {"id": "Invalid parameter."}, "details": []},
}

VENUE_META = {"address": "1 Main St", "city": "Springfield", "country": "United States", "state": "IL",
              "zip": "62701", "phone": "555-0100", "website": "https://venue.example.com"}
ORGANIZER_META = {"phone": "555-0200", "website": "https://org.example.com", "email": "org@example.com"}

FUTURE = {"start_date": "2099-03-01 10:00:00", "end_date": "2099-03-01 12:00:00"}
PAST = {"start_date": "2001-03-01 10:00:00", "end_date": "2001-03-01 12:00:00"}


# ----------------------------------------------------------------------------- kinds


@dataclass(frozen=True)
class Linked:
    """Venues or organizers: what differs between the two."""

    name: str            # "venues"
    singular: str        # "venue" (also the name parameter and the event key)
    meta: dict           # optional fields that round-trip
    create_keys: list
    single_keys: list
    full_order: list
    minimal_keys: list

    @property
    def path(self) -> str:
        return "/" + self.name

    def make(self, factory, **fields) -> dict:
        return getattr(factory, self.singular)(**fields)

    def link(self, record_id: int) -> dict:
        """Event payload fields linking the event to one record of this kind."""
        return {self.singular: record_id if self.singular == "venue" else [record_id]}

    def linked_ids(self, event: dict) -> list[int]:
        value = event[self.singular]
        if isinstance(value, dict):
            return [value["id"]]
        return [item["id"] for item in value]


VENUES = Linked("venues", "venue", VENUE_META, VENUE_CREATE_KEYS, VENUE_SINGLE_KEYS, VENUE_FULL_ORDER,
                VENUE_MINIMAL_KEYS)
ORGANIZERS = Linked("organizers", "organizer", ORGANIZER_META, ORGANIZER_CREATE_KEYS, ORGANIZER_SINGLE_KEYS,
                    ORGANIZER_FULL_ORDER, ORGANIZER_MINIMAL_KEYS)


@dataclass(frozen=True)
class Term:
    name: str            # "categories"
    singular: str        # "category"
    taxonomy: str
    keys: list
    permalink: str       # public archive path of a slug

    @property
    def path(self) -> str:
        return "/" + self.name

    @property
    def hierarchical(self) -> bool:
        return self.name == "categories"

    def make(self, factory, **fields) -> dict:
        return getattr(factory, self.singular)(**fields)


CATEGORIES = Term("categories", "category", "tribe_events_cat", CATEGORY_KEYS, "/events/category/{}/")
TAGS = Term("tags", "tag", "post_tag", TAG_KEYS, "/tag/{}/")


@pytest.fixture(params=[VENUES, ORGANIZERS], ids=["venues", "organizers"])
def linked(request) -> Linked:
    return request.param


@pytest.fixture(params=[CATEGORIES, TAGS], ids=["categories", "tags"])
def term(request) -> Term:
    return request.param


# ----------------------------------------------------------------------------- speed


# ----------------------------------------------------------------------------- helpers


def author_of(role: str) -> str:
    return f"{role.capitalize()} <{role}@example.org>"


@pytest.fixture
def user_id(paths):
    accounts = Accounts(paths["users_file"])
    return lambda role: accounts.get(role).id


@contextlib.contextmanager
def no_write(repo):
    """The block must leave the content repository exactly as it found it."""
    count, status = repo.count(), repo.status()
    yield
    assert repo.count() == count, "a failed request made a commit"
    assert repo.status() == status, "a failed request changed the working tree"


@contextlib.contextmanager
def one_commit(repo, role: str = "administrator"):
    """The block must make exactly one commit, authored by ``role``, and leave the tree clean."""
    count = repo.count()
    yield
    assert repo.count() == count + 1
    assert repo.last_author() == author_of(role)
    assert repo.status() == ""


def error(response, status: int, code: str) -> dict:
    body = response.get_json()
    assert response.status_code == status, body
    assert body["code"] == code, body
    assert body["data"]["status"] == status
    return body


def ok(response, status: int = 200) -> dict:
    body = response.get_json()
    assert response.status_code == status, body
    return body


def query(url: str) -> dict:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def item_ids(body: dict, key: str) -> list[int]:
    return [item["id"] for item in body[key]]


def assert_totals(response, total: int, pages: int) -> dict:
    body = ok(response)
    assert body["total"] == total and body["total_pages"] == pages
    assert response.headers["X-TEC-Total"] == str(total)
    assert response.headers["X-TEC-TotalPages"] == str(pages)
    return body


@pytest.fixture
def seed(app, repo):
    """Write records straight into the content repository as a single commit (fast set-up of many records)."""
    next_id = [5000]

    def write(folder: str, rows: list[dict]) -> list[int]:
        ids = []
        for row in rows:
            row = {"id": next_id[0], **row}
            next_id[0] += 1
            ids.append(row["id"])
            target = repo.root / folder / f"{row['slug']}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump(row, sort_keys=False))
        repo("add", folder)
        repo("-c", "user.name=Seeder", "-c", "user.email=seed@example.org", "commit", "-q", "-m", f"seed {folder}")
        return ids

    def posts(kind: Linked, n: int, status: str = "publish", prefix: str = "Bulk") -> list[int]:
        tag = prefix.lower().replace(" ", "-")
        return write(kind.name, [{kind.singular: f"{prefix} {i}", "slug": f"{tag}-{i}", "status": status, "author": 1,
                                  "date_utc": f"2020-01-01 00:{i // 60:02d}:{i % 60:02d}"} for i in range(n)])

    def terms(kind: Term, n: int) -> list[int]:
        return write(kind.name, [{"name": f"Term {i:02d}", "slug": f"term-{i:02d}"} for i in range(n)])

    write.posts = posts
    write.terms = terms
    return write


# ============================================================================= venues / organizers: create


def test_create_requires_name(linked, admin, repo):
    with no_write(repo):
        body = error(admin.post(linked.path, json={"description": "No name"}), 400, "rest_missing_callback_param")
        assert body["data"]["params"] == [linked.singular]
        body = error(admin.post(linked.path, json={linked.singular: ""}), 400, "rest_invalid_param")
        assert list(body["data"]["params"]) == [linked.singular]


def test_create_returns_201_with_the_object_in_one_commit(linked, admin, repo):
    with one_commit(repo):
        body = ok(admin.post(linked.path, json={linked.singular: "Peer Hall", **linked.meta}), 201)
    assert list(body) == linked.create_keys
    assert isinstance(body["id"], int)
    assert body[linked.singular] == "Peer Hall"
    assert body["author"] == "1"
    assert body["status"] == "publish"
    assert body["slug"] == "peer-hall"
    assert body["url"] == f"{SITE}/{linked.singular}/peer-hall/"
    assert body["global_id"] == f"localhost?id={body['id']}"
    assert body["global_id_lineage"] == [body["global_id"]]
    for key, value in linked.meta.items():
        assert body[key] == value
    assert f"{linked.name}/peer-hall.yaml" in repo.files()


def test_create_commit_is_authored_by_the_signed_in_user(linked, as_role, repo, user_id):
    with one_commit(repo, "editor"):
        body = ok(as_role("editor").post(linked.path, json={linked.singular: "By the editor"}), 201)
    assert body["author"] == str(user_id("editor"))


def test_create_needs_the_right_to_edit(linked, as_role, repo):
    with no_write(repo):
        for role, status in ((None, 401), ("subscriber", 403)):
            error(as_role(role).post(linked.path, json={linked.singular: "Nope"}), status, "rest_forbidden")


BAD_POST_VALUES = [("author", "23"), ("author", "foo"), ("author", ""), ("date", "foo"), ("date_utc", "foo"),
                   ("status", "kinda_thinking_about_it"), ("website", "foo")]


def test_create_rejects_bad_values(linked, admin, repo):
    with no_write(repo):
        for field, value in BAD_POST_VALUES:
            body = error(admin.post(linked.path, json={linked.singular: "Bad", field: value}), 400,
                         "rest_invalid_param")
            assert list(body["data"]["params"]) == [field], (field, value)


def test_create_with_post_fields(linked, admin, repo, user_id):
    editor = user_id("editor")
    payload = {linked.singular: "Dated", "author": editor, "date": "2030-01-02 09:00:00",
               "description": "A description", "status": "draft", "timezone": "Europe/Rome"}
    with one_commit(repo):
        body = ok(admin.post(linked.path, data=payload), 201)
    assert body["author"] == str(editor)
    assert body["date"] == "2030-01-02 09:00:00" and body["date_utc"] == "2030-01-02 09:00:00"
    assert body["description"] == "<p>A description</p>"
    assert body["status"] == "draft"
    assert "timezone" not in body


def test_create_with_date_utc(linked, admin):
    body = ok(admin.post(linked.path, json={linked.singular: "Dated UTC", "date_utc": "2030-01-02 09:00:00"}), 201)
    assert body["date_utc"] == "2030-01-02 09:00:00"


def test_contributor_creates_a_draft(linked, as_role, repo):
    with one_commit(repo, "contributor"):
        body = ok(as_role("contributor").post(linked.path, json={linked.singular: "Contributed"}), 201)
    assert body["status"] == "draft"


def test_duplicate_name_returns_the_existing_record_without_a_commit(linked, admin, repo):
    first = ok(admin.post(linked.path, json={linked.singular: "Same Place", "description": "The description"}), 201)
    with no_write(repo):
        for payload in ({linked.singular: "Same Place", "description": "The description"},
                        {linked.singular: "Same Place"},
                        {linked.singular: "same place", "description": "The description"},
                        {linked.singular: "SAME PLACE", **linked.meta}):
            body = ok(admin.post(linked.path, json=payload), 201)
            assert body["id"] == first["id"], payload
    # a different description is a different record
    with one_commit(repo):
        other = ok(admin.post(linked.path, json={linked.singular: "Same Place", "description": "Another one"}), 201)
    assert other["id"] != first["id"]


def test_duplicate_detection_ignores_trashed_records(linked, admin, factory):
    first = linked.make(factory, **{linked.singular: "Gone Place"})
    ok(admin.delete(f"{linked.path}/{first['id']}"))
    again = ok(admin.post(linked.path, json={linked.singular: "Gone Place"}), 201)
    assert again["id"] != first["id"]
    assert again["status"] == "publish"


def test_venue_map_flags_default_true_and_false_strings(admin):
    body = ok(admin.post("/venues", data={"venue": "Default flags"}), 201)
    assert body["show_map"] is True and body["show_map_link"] is True
    body = ok(admin.post("/venues", data={"venue": "No maps", "show_map": "false", "show_map_link": "false"}), 201)
    assert body["show_map"] is False and body["show_map_link"] is False
    body = ok(admin.post("/venues", data={"venue": "Map only", "show_map": "true", "show_map_link": "false"}), 201)
    assert body["show_map"] is True and body["show_map_link"] is False


def test_venue_stateprovince_derivation(admin):
    cases = [("United States", "IL", "Somewhere", "IL"), ("US", "NY", "", "NY"), ("", "CA", "Ontario", "CA"),
             ("France", "IL", "Ile de France", "Ile de France"), ("Canada", "", "Ontario", "Ontario")]
    for n, (country, state, province, expected) in enumerate(cases):
        payload = {"venue": f"Derived {n}", "country": country, "state": state, "province": province}
        body = ok(admin.post("/venues", json=payload), 201)
        assert body["stateprovince"] == expected, payload


def test_venue_explicit_stateprovince_wins(admin):
    body = ok(admin.post("/venues", json={"venue": "Explicit", "country": "US", "state": "IL",
                                          "stateprovince": "Mine"}), 201)
    assert body["stateprovince"] == "Mine"


def test_venue_stateprovince_follows_a_state_change(admin, factory):
    venue = factory.venue(country="United States", state="IL")
    assert venue["stateprovince"] == "IL"
    body = ok(admin.post(f"/venues/{venue['id']}", json={"state": "NY"}))
    assert body["state"] == "NY"
    assert body["stateprovince"] == "NY"


def test_organizer_contact_fields_echoed(admin):
    body = ok(admin.post("/organizers", data={"organizer": "Contact", **ORGANIZER_META}), 201)
    assert {k: body[k] for k in ORGANIZER_META} == ORGANIZER_META


# ============================================================================= object shape


def test_key_order_matches_the_samples(linked, factory, anon):
    record = linked.make(factory, **{linked.singular: "Peer Hall", **linked.meta})
    assert list(record) == linked.create_keys
    single = ok(anon.get(f"{linked.path}/{record['id']}"))
    assert list(single) == linked.single_keys
    listed = ok(anon.get(linked.path))[linked.name]
    assert [list(item) for item in listed] == [linked.create_keys]


def test_full_key_order(linked, factory, anon):
    extra = {"description": "Described"}
    if linked is VENUES:
        extra.update(province="Province", country="Italy")
    record = linked.make(factory, **{linked.singular: "Everything", **linked.meta, **extra})
    single = ok(anon.get(f"{linked.path}/{record['id']}"))
    assert list(single) == [k for k in linked.full_order if k in single]
    assert {"description", *extra} <= set(single)


def test_minimal_record_keys(linked, factory):
    record = linked.make(factory)
    assert list(record) == linked.minimal_keys


def test_venue_flags_and_global_ids_always_present(factory, admin):
    venue = factory.venue(show_map="false", show_map_link="false")
    for body in (venue, ok(admin.get(f"/venues/{venue['id']}")), ok(admin.get("/venues"))["venues"][0],
                 ok(admin.delete(f"/venues/{venue['id']}"))):
        assert body["show_map"] is False and body["show_map_link"] is False
        assert body["global_id"] == f"localhost?id={venue['id']}"
        assert body["global_id_lineage"] == [body["global_id"]]


def test_json_ld_only_on_single_get(linked, factory, admin):
    record = linked.make(factory, **linked.meta)
    path = f"{linked.path}/{record['id']}"
    assert "json_ld" not in record
    assert "json_ld" not in ok(admin.get(linked.path))[linked.name][0]
    assert "json_ld" not in ok(admin.post(path, json={linked.singular: "Renamed"}))
    by_id = ok(admin.get(path))
    by_slug = ok(admin.get(f"{linked.path}/by-slug/{record['slug']}"))
    assert by_id["json_ld"]["@type"] == ("Place" if linked is VENUES else "Person")
    assert by_id["json_ld"]["name"] == "Renamed"
    assert by_slug["json_ld"] == by_id["json_ld"]
    assert "json_ld" not in ok(admin.delete(path))


def test_venue_json_ld_address(factory, anon):
    venue = factory.venue(venue="Peer Hall", **VENUE_META)
    ld = ok(anon.get(f"/venues/{venue['id']}"))["json_ld"]
    assert ld["address"] == {"@type": "PostalAddress", "streetAddress": "1 Main St", "addressLocality": "Springfield",
                             "addressRegion": "IL", "postalCode": "62701", "addressCountry": "United States"}
    assert ld["telephone"] == "555-0100" and ld["sameAs"] == "https://venue.example.com"


# ============================================================================= single GET


def test_get_by_id_and_by_slug(linked, factory, anon):
    record = linked.make(factory, **linked.meta)
    by_id = ok(anon.get(f"{linked.path}/{record['id']}"))
    by_slug = ok(anon.get(f"{linked.path}/by-slug/{record['slug']}"))
    assert by_id == by_slug
    assert by_id["id"] == record["id"]
    assert isinstance(by_id["author"], str)
    assert {k: v for k, v in by_id.items() if k != "json_ld"} == record


def test_unknown_id_is_400_with_the_original_envelope(linked, anon):
    response = anon.get(f"{linked.path}/999")
    assert response.status_code == 400
    assert response.get_json() == MISSING_ID_ERROR


def test_non_numeric_id_is_no_route(linked, anon):
    for segment in ("foo", "foo-bar", "foo%20bar", "12a"):
        error(anon.get(f"{linked.path}/{segment}"), 404, "rest_no_route")


def test_other_post_types_ids_are_400(linked, factory, anon):
    event = factory.event()
    other = (ORGANIZERS if linked is VENUES else VENUES).make(factory)
    for record_id in (event["id"], other["id"]):
        body = error(anon.get(f"{linked.path}/{record_id}"), 400, "rest_invalid_param")
        assert "id" in body["data"]["params"]


def test_unknown_slug_is_400(linked, factory, anon):
    linked.make(factory)
    body = error(anon.get(f"{linked.path}/by-slug/non-existing-slug"), 400, "rest_invalid_param")
    assert "slug" in body["data"]["params"]


def test_draft_is_forbidden_to_visitors_and_readable_by_editors(linked, factory, as_role):
    record = linked.make(factory, status="draft")
    code = f"{linked.singular}-not-accessible"
    for path in (f"{linked.path}/{record['id']}", f"{linked.path}/by-slug/{record['slug']}"):
        error(as_role(None).get(path), 403, code)
        error(as_role("subscriber").get(path), 403, code)
        assert ok(as_role("editor").get(path))["id"] == record["id"]


# ============================================================================= update


def test_update_renames(linked, factory, admin, repo):
    record = linked.make(factory, **linked.meta)
    with one_commit(repo):
        body = ok(admin.post(f"{linked.path}/{record['id']}", json={linked.singular: "New Name"}))
    assert body["id"] == record["id"]
    assert body[linked.singular] == "New Name"
    assert body["slug"] == record["slug"]
    assert ok(admin.get(f"{linked.path}/{record['id']}"))[linked.singular] == "New Name"


def test_update_keeps_omitted_fields(linked, factory, admin):
    fields = dict(linked.meta, description="Kept description")
    if linked is VENUES:
        fields.update(show_map="false")
    for method in ("post", "put", "patch"):
        record = linked.make(factory, **fields)
        body = ok(getattr(admin, method)(f"{linked.path}/{record['id']}", json={linked.singular: f"Only {method}"}))
        assert body[linked.singular] == f"Only {method}"
        for key, value in linked.meta.items():
            assert body[key] == value, (method, key)
        assert body["description"] == "<p>Kept description</p>"
        if linked is VENUES:
            assert body["show_map"] is False and body["show_map_link"] is True


def test_update_with_empty_values_drops_the_keys(linked, factory, admin, repo):
    record = linked.make(factory, **linked.meta)
    cleared = dict.fromkeys(linked.meta, "")
    if linked is VENUES:
        cleared.update(province="", stateprovince="", show_map="false", show_map_link="false")
    with one_commit(repo):
        body = ok(admin.post(f"{linked.path}/{record['id']}", data=cleared))
    for key in cleared:
        if key not in ("show_map", "show_map_link"):
            assert key not in body, key
    assert body[linked.singular] == record[linked.singular]
    if linked is VENUES:
        assert body["show_map"] is False and body["show_map_link"] is False
        assert list(body) == VENUE_MINIMAL_KEYS
    else:
        assert list(body) == ORGANIZER_MINIMAL_KEYS
    assert ok(admin.get(f"{linked.path}/{record['id']}")).keys() == set(body) | {"json_ld"}


def test_update_one_empty_value(linked, factory, admin):
    record = linked.make(factory, **linked.meta)
    first, *rest = list(linked.meta)
    body = ok(admin.post(f"{linked.path}/{record['id']}", json={first: ""}))
    assert first not in body
    for key in rest:
        assert body[key] == linked.meta[key]


def test_rename_to_another_records_name_is_allowed(linked, factory, admin, repo):
    one = linked.make(factory, **{linked.singular: f"{linked.singular} 1"})
    two = linked.make(factory, **{linked.singular: f"{linked.singular} 2"})
    with one_commit(repo):
        body = ok(admin.post(f"{linked.path}/{two['id']}", json={linked.singular: f"{linked.singular} 1"}))
    assert body["id"] == two["id"]
    assert ok(admin.get(f"{linked.path}/{one['id']}"))[linked.singular] == f"{linked.singular} 1"
    assert ok(admin.get(f"{linked.path}/{two['id']}"))[linked.singular] == f"{linked.singular} 1"


def test_update_needs_rights(linked, factory, as_role, repo):
    record = linked.make(factory)
    path = f"{linked.path}/{record['id']}"
    with no_write(repo):
        error(as_role(None).post(path, json={linked.singular: "x"}), 401, "rest_forbidden")
        error(as_role("contributor").post(path, json={linked.singular: "x"}), 403, "rest_forbidden")
        error(as_role("subscriber").patch(path, json={linked.singular: "x"}), 403, "rest_forbidden")


def test_contributor_updates_own_draft(linked, as_role, repo):
    contributor = as_role("contributor")
    record = ok(contributor.post(linked.path, json={linked.singular: "Mine"}), 201)
    with one_commit(repo, "contributor"):
        body = ok(contributor.post(f"{linked.path}/{record['id']}", json={linked.singular: "Still mine"}))
    assert body["status"] == "draft"


def test_update_rejects_bad_values(linked, factory, admin, repo):
    record = linked.make(factory)
    with no_write(repo):
        for field, value in BAD_POST_VALUES:
            body = error(admin.post(f"{linked.path}/{record['id']}", json={field: value}), 400, "rest_invalid_param")
            assert list(body["data"]["params"]) == [field], (field, value)


def test_update_with_empty_name_is_400(linked, factory, admin, repo):
    record = linked.make(factory)
    with no_write(repo):
        error(admin.post(f"{linked.path}/{record['id']}", json={linked.singular: ""}), 400, "rest_invalid_param")


def test_update_of_unknown_id_is_400_even_anonymous(linked, factory, as_role, repo):
    event = factory.event()
    with no_write(repo):
        for role in (None, "administrator"):
            for record_id in (999, event["id"]):
                body = error(as_role(role).post(f"{linked.path}/{record_id}", json={linked.singular: "x"}), 400,
                             "rest_invalid_param")
                assert "id" in body["data"]["params"]


# ============================================================================= delete


def test_delete_trashes_then_410(linked, factory, admin, anon, repo):
    record = linked.make(factory, **linked.meta)
    path = f"{linked.path}/{record['id']}"
    with one_commit(repo):
        body = ok(admin.delete(path))
    assert body["id"] == record["id"]
    assert body["status"] == "trash"
    assert body[linked.singular] == record[linked.singular]
    assert f"{linked.name}/{record['slug']}.yaml" in repo.files()
    assert yaml.safe_load((repo.root / linked.name / f"{record['slug']}.yaml").read_text())["status"] == "trash"
    with no_write(repo):
        error(admin.delete(path), 410, f"{linked.singular}-is-in-trash")
        error(anon.get(path), 403, f"{linked.singular}-not-accessible")
    assert record["id"] not in item_ids(ok(anon.get(linked.path)), linked.name)
    assert record["id"] not in item_ids(ok(admin.get(linked.path)), linked.name)


def test_delete_unknown_id_is_400_even_anonymous(linked, factory, as_role, repo):
    event = factory.event()
    with no_write(repo):
        for role in (None, "subscriber", "administrator"):
            for record_id in (23, 999, event["id"]):
                body = error(as_role(role).delete(f"{linked.path}/{record_id}"), 400, "rest_invalid_param")
                assert body["data"]["params"] == {"id": "Invalid parameter."}


def test_delete_needs_rights(linked, factory, as_role, repo):
    record = linked.make(factory)
    path = f"{linked.path}/{record['id']}"
    with no_write(repo):
        error(as_role(None).delete(path), 401, "rest_forbidden")
        error(as_role("subscriber").delete(path), 403, "rest_forbidden")
        error(as_role("contributor").delete(path), 403, "rest_forbidden")
    assert ok(as_role(None).get(path))["status"] == "publish"


def test_delete_trashes_only_the_record_and_events_skip_it(linked, factory, admin, repo):
    """Trashing changes the trashed file only (the original unlinks; here events keep the
    reference, embeds leave a trashed record out, and a restore links it again)."""
    record = linked.make(factory)
    keep = linked.make(factory)
    if linked is VENUES:
        event = factory.event(venue=record["id"])
        other = factory.event(venue=keep["id"])
    else:
        event = factory.event(organizer=[record["id"], keep["id"]])
        other = factory.event(organizer=[keep["id"]])
    assert record["id"] in linked.linked_ids(event)
    with one_commit(repo):
        ok(admin.delete(f"{linked.path}/{record['id']}"))
    changed = repo("show", "--name-only", "--format=", "HEAD").split()
    assert changed == [f"{linked.name}/{record['slug']}.yaml"]
    after = ok(admin.get(f"/events/{event['id']}"))
    if linked is VENUES:
        assert after["venue"] == []
    else:
        assert linked.linked_ids(after) == [keep["id"]]
    assert linked.linked_ids(ok(admin.get(f"/events/{other['id']}"))) == [keep["id"]]
    still_linked = item_ids(ok(admin.get(linked.path, query_string={"event": event["id"]})), linked.name)
    assert still_linked == ([] if linked is VENUES else [keep["id"]])
    ok(admin.post(f"{linked.path}/{record['id']}", json={"status": "publish"}))
    assert record["id"] in linked.linked_ids(ok(admin.get(f"/events/{event['id']}")))


# ============================================================================= lists


def test_empty_list(linked, anon):
    response = anon.get(linked.path)
    body = assert_totals(response, 0, 0)
    assert list(body) == [linked.name, "rest_url", "total", "total_pages"]
    assert body[linked.name] == []
    assert body["rest_url"] == f"{BASE}/{linked.name}/?page=1&per_page=10&status=publish"


def test_list_pagination(linked, seed, anon, repo):
    ids = seed.posts(linked, 7)
    newest_first = sorted(ids, reverse=True)  # seeded with increasing publication dates
    seen = []
    first = assert_totals(anon.get(linked.path, query_string={"per_page": 3}), 7, 3)
    assert "previous_rest_url" not in first
    assert query(first["next_rest_url"])["page"] == ["2"]
    assert query(first["next_rest_url"])["per_page"] == ["3"]
    seen += item_ids(first, linked.name)
    second = assert_totals(anon.get(linked.path, query_string={"per_page": 3, "page": 2}), 7, 3)
    assert "page" not in query(second["previous_rest_url"])
    assert urlsplit(second["previous_rest_url"]).path == f"{API}/{linked.name}/"
    assert query(second["next_rest_url"])["page"] == ["3"]
    seen += item_ids(second, linked.name)
    third = assert_totals(anon.get(linked.path, query_string={"per_page": 3, "page": 3}), 7, 3)
    assert "next_rest_url" not in third
    assert query(third["previous_rest_url"])["page"] == ["2"]
    assert query(third["rest_url"])["page"] == ["3"]
    seen += item_ids(third, linked.name)
    assert seen == newest_first
    with no_write(repo):
        error(anon.get(linked.path, query_string={"per_page": 3, "page": 4}), 404,
              f"{linked.singular}-archive-page-not-found")


def test_list_bad_page_values(linked, anon):
    for param in ("page", "per_page"):
        for value in ("foo", "-1", "0", "foo bar", ""):
            body = error(anon.get(linked.path, query_string={param: value}), 400, "rest_invalid_param")
            assert list(body["data"]["params"]) == [param], value


def test_list_per_page_is_capped_at_50_and_defaults_to_10(linked, seed, anon):
    seed.posts(linked, 51)
    body = assert_totals(anon.get(linked.path, query_string={"per_page": 100}), 51, 2)
    assert len(body[linked.name]) == 50
    body = assert_totals(anon.get(linked.path), 51, 6)
    assert len(body[linked.name]) == 10


def test_list_drafts_hidden_from_visitors_shown_to_editors(linked, seed, as_role):
    drafts = seed.posts(linked, 3, status="draft")
    body = assert_totals(as_role(None).get(linked.path), 0, 0)
    assert body[linked.name] == [] and "next_rest_url" not in body and "previous_rest_url" not in body
    assert_totals(as_role("subscriber").get(linked.path), 0, 0)
    body = assert_totals(as_role("editor").get(linked.path), 3, 1)
    assert sorted(item_ids(body, linked.name)) == drafts


def test_list_status_filter(linked, seed, as_role):
    published = seed.posts(linked, 3, prefix="Pub")
    drafts = seed.posts(linked, 3, status="draft", prefix="Dra")
    pending = seed.posts(linked, 3, status="pending", prefix="Pen")
    editor, anon = as_role("editor"), as_role(None)
    assert sorted(item_ids(ok(editor.get(linked.path, query_string={"status": "publish"})), linked.name)) == published
    body = ok(editor.get(linked.path, query_string={"status": "publish, draft"}))
    assert sorted(item_ids(body, linked.name)) == sorted(published + drafts)
    body = ok(editor.get(linked.path, query_string=[("status[]", "publish"), ("status[]", "draft"),
                                                     ("status[]", "pending")]))
    assert sorted(item_ids(body, linked.name)) == sorted(published + drafts + pending)
    assert ok(editor.get(linked.path))["total"] == 9
    for value in ("foo", "foo, bar", "foo, bar, publish"):
        error(editor.get(linked.path, query_string={"status": value}), 400, "rest_invalid_param")
    assert sorted(item_ids(ok(anon.get(linked.path, query_string={"status": "publish"})), linked.name)) == published
    for value in ("publish, draft", "draft"):
        error(anon.get(linked.path, query_string={"status": value}), 400, "rest_invalid_param")


def _search(client, kind: Linked, text: str) -> list[int]:
    return sorted(item_ids(ok(client.get(kind.path, query_string={"search": text})), kind.name))


def test_search_on_names_descriptions(linked, factory, anon):
    records = [linked.make(factory, **{linked.singular: f"{linked.singular.capitalize()} {w}",
                                       "description": f"Content {w}"}) for w in ("foo", "baz", "bar")]
    all_ids = sorted(r["id"] for r in records)
    cases = {"woo": [], linked.singular: all_ids, f"{linked.singular} foo": [records[0]["id"]],
             "Content": all_ids, "content FOO": [records[0]["id"]], "foo content": [records[0]["id"]],
             # all the words must be in one field: "bar" is in the name, "content" in the description
             f"{linked.singular} content": []}
    for text, expected in cases.items():
        assert _search(anon, linked, text) == expected, text
    error(anon.get(linked.path, query_string={"search": ""}), 400, "rest_invalid_param")


@pytest.fixture
def searchable_venues(factory):
    a = factory.venue(venue="Venue A", address="100, Avenue du Temple", city="Paris", province="Ile de France",
                      country="France", zip="75003", phone="3333333")
    b = factory.venue(venue="Venue B", address="10 Downing Street", city="London", province="Greater London",
                      country="United Kingdom", zip="223345", phone="111")
    c = factory.venue(venue="Venue C", address="221B Baker Street", city="London", state="Greater London",
                      country="United Kingdom", zip="223345-1", phone="222")
    return a["id"], b["id"], c["id"]


def test_venue_search_on_address_fields(searchable_venues, anon):
    a, b, c = searchable_venues
    cases = {"Venue": [a, b, c], "london": [b, c], "3333333": [a], "temple avenue": [a], "TEMPLE": [a],
             "greater london": [b, c], "france": [a], "france, ile de": [a], "223345": [b, c],
             "223345-1": [c], "baker, street!": [c],
             # words spread over two fields (city, address) do not match
             "paris temple": []}
    for text, expected in cases.items():
        assert _search(anon, VENUES, text) == sorted(expected), text


def test_venue_search_splits_words_on_underscores(searchable_venues, anon):
    a, b, c = searchable_venues
    assert _search(anon, VENUES, "temple_avenue") == [a]


def test_organizer_search_on_contact_fields(factory, anon):
    one = factory.organizer(organizer="Organizer one", phone="111111111", email="one@common.com",
                            website="http://one.com")["id"]
    two = factory.organizer(organizer="Organizer two", phone="111112222", email="two@common.com",
                            website="http://two.com")["id"]
    three = factory.organizer(organizer="Organizer three", phone="222223333", email="three@three.com",
                              website="http://three.com")["id"]
    cases = {"Organizer": [one, two, three], "1111": [one, two], "111111111": [one], "222223333": [three],
             "three@three.com": [three], "common.com": [one, two], "http://one.com": [one],
             "@common.com": [one, two], "zzz": []}
    for text, expected in cases.items():
        assert _search(anon, ORGANIZERS, text) == sorted(expected), text


def test_event_filter(linked, factory, anon, repo):
    records = [linked.make(factory) for _ in range(3)]
    events = [factory.event(**linked.link(r["id"])) for r in records]
    for record, event in zip(records, events):
        body = assert_totals(anon.get(linked.path, query_string={"event": event["id"]}), 1, 1)
        assert item_ids(body, linked.name) == [record["id"]]
        assert query(body["rest_url"])["event"] == [str(event["id"])]
    lonely = factory.event()
    body = assert_totals(anon.get(linked.path, query_string={"event": lonely["id"]}), 0, 0)
    assert body[linked.name] == [] and "next_rest_url" not in body and "previous_rest_url" not in body
    with no_write(repo):
        for value in ("23", str(records[0]["id"]), "foo", ""):
            body = error(anon.get(linked.path, query_string={"event": value}), 400, "rest_invalid_param")
            assert "event" in body["data"]["params"]


def test_event_filter_keeps_visibility(linked, factory, as_role):
    draft = linked.make(factory, status="draft")
    event = factory.event(**linked.link(draft["id"]))
    assert_totals(as_role(None).get(linked.path, query_string={"event": event["id"]}), 0, 0)
    body = assert_totals(as_role("editor").get(linked.path, query_string={"event": event["id"]}), 1, 1)
    assert item_ids(body, linked.name) == [draft["id"]]


def test_has_events(linked, factory, anon):
    none1, none2, published, drafted, pending = (linked.make(factory)["id"] for _ in range(5))
    factory.event(**linked.link(published))
    factory.event(status="draft", **linked.link(drafted))
    factory.event(status="pending", **linked.link(pending))
    body = ok(anon.get(linked.path, query_string={"has_events": "true"}))
    assert item_ids(body, linked.name) == [published]
    body = ok(anon.get(linked.path, query_string={"has_events": "false"}))
    assert sorted(item_ids(body, linked.name)) == sorted([none1, none2, drafted, pending])
    error(anon.get(linked.path, query_string={"has_events": "maybe"}), 400, "rest_invalid_param")


def test_has_events_empty_results(linked, factory, anon):
    for _ in range(2):
        factory.event()
        linked.make(factory)
    body = assert_totals(anon.get(linked.path, query_string={"has_events": "true"}), 0, 0)
    assert "next_rest_url" not in body and "previous_rest_url" not in body


def test_has_events_counts_trashed_events(linked, factory, admin, anon):
    record = linked.make(factory)
    event = factory.event(**linked.link(record["id"]))
    ok(admin.delete(f"/events/{event['id']}"))
    assert item_ids(ok(anon.get(linked.path, query_string={"has_events": "true"})), linked.name) == [record["id"]]


def test_only_with_upcoming(linked, factory, as_role):
    upcoming, past, none, draft, private = (linked.make(factory)["id"] for _ in range(5))
    factory.event(**FUTURE, **linked.link(upcoming))
    factory.event(**PAST, **linked.link(past))
    factory.event(**FUTURE, status="draft", **linked.link(draft))
    factory.event(**FUTURE, status="private", **linked.link(private))
    anon, editor = as_role(None), as_role("editor")
    body = assert_totals(anon.get(linked.path, query_string={"only_with_upcoming": "true"}), 1, 1)
    assert item_ids(body, linked.name) == [upcoming]
    body = ok(editor.get(linked.path, query_string={"only_with_upcoming": "true"}))
    assert sorted(item_ids(body, linked.name)) == sorted([upcoming, draft, private])
    body = ok(anon.get(linked.path, query_string={"only_with_upcoming": "false"}))
    assert sorted(item_ids(body, linked.name)) == sorted([upcoming, past, none, draft, private])


def test_only_with_upcoming_when_all_events_are_past(linked, factory, anon):
    for _ in range(2):
        factory.event(**PAST, **linked.link(linked.make(factory)["id"]))
    linked.make(factory)
    body = assert_totals(anon.get(linked.path, query_string={"only_with_upcoming": "true"}), 0, 0)
    assert body[linked.name] == []


# ============================================================================= categories / tags: create


def test_term_create_shape(term, as_role, repo):
    with one_commit(repo, "editor"):
        body = ok(as_role("editor").post(term.path, json={"name": "Live Music", "description": "Music events",
                                                          "slug": "live-music"}), 201)
    assert list(body) == term.keys
    assert body["count"] == 0 and body["meta"] == []
    assert body["name"] == "Live Music" and body["description"] == "Music events" and body["slug"] == "live-music"
    assert body["taxonomy"] == term.taxonomy
    assert body["url"] == SITE + term.permalink.format("live-music")
    assert body["urls"] == {"self": f"{BASE}/{term.name}/{body['id']}", "collection": f"{BASE}/{term.name}"}
    if term.hierarchical:
        assert body["parent"] == 0
    assert f"{term.name}/live-music.yaml" in repo.files()


def test_category_with_parent_links_up(factory, admin, anon):
    parent = factory.category()
    child = ok(admin.post("/categories", data={"name": "Child", "parent": str(parent["id"])}), 201)
    assert child["parent"] == parent["id"]
    assert child["urls"]["up"] == f"{BASE}/categories/{parent['id']}"
    assert list(child["urls"]) == ["self", "collection", "up"]
    assert ok(anon.get(f"/categories/{child['id']}"))["urls"]["up"] == f"{BASE}/categories/{parent['id']}"


def test_term_create_requires_name(term, admin, repo):
    with no_write(repo):
        body = error(admin.post(term.path, json={"description": "x"}), 400, "rest_missing_callback_param")
    assert body["data"]["params"] == ["name"]


def bad_term_values(term: Term) -> list[tuple[str, str]]:
    values = [("name", ""), ("description", ""), ("slug", "")]
    if term.hierarchical:
        values += [("parent", ""), ("parent", "2389"), ("parent", "foo")]
    return values


def test_term_create_rejects_bad_values(term, admin, repo):
    with no_write(repo):
        for field, value in bad_term_values(term):
            body = error(admin.post(term.path, data={"name": "Fine", field: value}), 400, "rest_invalid_param")
            assert list(body["data"]["params"]) == [field], (field, value)


def test_term_duplicate_name_is_term_exists(term, factory, admin, repo):
    existing = term.make(factory, name="Music")
    with no_write(repo):
        for name in ("Music", "music"):
            body = error(admin.post(term.path, json={"name": name}), 400, "term_exists")
            assert body["data"]["term_id"] == existing["id"]


@pytest.mark.parametrize("role", [None, "subscriber", "contributor", "author", "editor"])
def test_term_permissions(term, factory, as_role, repo, role):
    if role is None:
        expected = 401
    elif role in ("subscriber", "contributor") or (role == "author" and not term.hierarchical):
        expected = 403
    else:
        expected = None  # allowed
    target = term.make(factory)
    client = as_role(role)
    path = f"{term.path}/{target['id']}"
    if expected:
        with no_write(repo):
            error(client.post(term.path, json={"name": "New"}), expected, "rest_forbidden")
            error(client.post(path, json={"name": "Renamed"}), expected, "rest_forbidden")
            error(client.delete(path), expected, "rest_forbidden")
        return
    with one_commit(repo, role):
        ok(client.post(term.path, json={"name": "New"}), 201)
    with one_commit(repo, role):
        assert ok(client.post(path, json={"name": "Renamed"}))["name"] == "Renamed"
    with one_commit(repo, role):
        ok(client.delete(path))


def test_unknown_term_id_is_400_before_permissions(term, factory, as_role, repo):
    other = (TAGS if term is CATEGORIES else CATEGORIES).make(factory)
    with no_write(repo):
        for role in (None, "subscriber"):
            for record_id in (23, other["id"]):
                error(as_role(role).delete(f"{term.path}/{record_id}"), 400, "rest_invalid_param")
                error(as_role(role).post(f"{term.path}/{record_id}", json={"name": "x"}), 400, "rest_invalid_param")
    response = as_role(None).get(f"{term.path}/2389")
    assert response.status_code == 400 and response.get_json() == MISSING_ID_ERROR
    error(as_role(None).get(f"{term.path}/{other['id']}"), 400, "rest_invalid_param")
    error(as_role(None).get(f"{term.path}/foo"), 404, "rest_no_route")
    error(as_role(None).get(f"{term.path}/foo%20bar"), 404, "rest_no_route")


# ============================================================================= categories / tags: single, update, delete


def test_term_single_get(term, factory, anon):
    fields = {"name": "Foo", "slug": "foo-bar", "description": "A term"}
    if term.hierarchical:
        fields["parent"] = factory.category()["id"]
    created = term.make(factory, **fields)
    for _ in range(2):
        factory.event(**{term.name: [created["id"]]})
    body = ok(anon.get(f"{term.path}/{created['id']}"))
    assert list(body) == term.keys
    assert body["count"] == 2
    assert body["name"] == "Foo" and body["slug"] == "foo-bar" and body["description"] == "A term"
    assert body["url"] == SITE + term.permalink.format("foo-bar")
    assert body["meta"] == []
    if term.hierarchical:
        assert body["parent"] == fields["parent"]
        assert body["urls"]["up"] == f"{BASE}/categories/{fields['parent']}"
    else:
        assert "up" not in body["urls"]


def test_term_update(term, factory, as_role, repo):
    created = term.make(factory, name="Old", description="Old description")
    payload = {"name": "New", "description": "New description", "slug": "new-slug"}
    if term.hierarchical:
        payload["parent"] = factory.category()["id"]
    with one_commit(repo, "editor"):
        body = ok(as_role("editor").post(f"{term.path}/{created['id']}", data=payload))
    assert list(body) == term.keys
    assert body["id"] == created["id"]
    assert (body["name"], body["description"], body["slug"]) == ("New", "New description", "new-slug")
    assert body["urls"]["self"] == f"{BASE}/{term.name}/{created['id']}"
    if term.hierarchical:
        assert body["parent"] == payload["parent"]
        assert body["urls"]["up"] == f"{BASE}/categories/{payload['parent']}"
    files = repo.files()
    assert f"{term.name}/new-slug.yaml" in files and f"{term.name}/{created['slug']}.yaml" not in files


def test_term_update_keeps_omitted_fields(term, factory, admin):
    created = term.make(factory, name="Keep", description="Kept", slug="kept-slug")
    body = ok(admin.patch(f"{term.path}/{created['id']}", json={"name": "Renamed"}))
    assert (body["name"], body["description"], body["slug"]) == ("Renamed", "Kept", "kept-slug")


def test_term_update_rejects_bad_values(term, factory, admin, repo):
    created = term.make(factory)
    with no_write(repo):
        for field, value in bad_term_values(term):
            body = error(admin.post(f"{term.path}/{created['id']}", data={field: value}), 400, "rest_invalid_param")
            assert list(body["data"]["params"]) == [field], (field, value)


def test_term_update_to_an_existing_name_is_term_exists(term, factory, admin, repo):
    one = term.make(factory, name="First")
    two = term.make(factory, name="Second")
    with no_write(repo):
        body = error(admin.post(f"{term.path}/{two['id']}", json={"name": "first"}), 400, "term_exists")
    assert body["data"]["term_id"] == one["id"]


def test_term_delete_is_permanent_and_returns_the_term_before_deletion(term, factory, admin, anon, repo):
    fields = {"name": "Doomed", "description": "Going away", "slug": "doomed"}
    if term.hierarchical:
        fields["parent"] = factory.category()["id"]
    created = term.make(factory, **fields)
    events = [factory.event(**{term.name: [created["id"]]}) for _ in range(3)]
    factory.event(status="draft", **{term.name: [created["id"]]})
    before = ok(anon.get(f"{term.path}/{created['id']}"))
    with one_commit(repo):
        body = ok(admin.delete(f"{term.path}/{created['id']}"))
    assert body == before
    assert body["count"] == 3
    assert list(body) == term.keys
    assert f"{term.name}/doomed.yaml" not in repo.files()
    assert not (repo.root / term.name / "doomed.yaml").exists()
    error(anon.get(f"{term.path}/{created['id']}"), 400, "rest_invalid_param")
    with no_write(repo):
        error(admin.delete(f"{term.path}/{created['id']}"), 400, "rest_invalid_param")
    assert created["id"] not in item_ids(ok(anon.get(term.path, query_string={"hide_empty": "false"})), term.name)
    assert ok(anon.get(f"/events/{events[0]['id']}"))[term.name] == []


def test_deleting_a_parent_category_reparents_its_children(factory, admin, anon):
    grandparent = factory.category()
    parent = factory.category(parent=grandparent["id"])
    child = factory.category(parent=parent["id"])
    ok(admin.delete(f"/categories/{parent['id']}"))
    body = ok(anon.get(f"/categories/{child['id']}"))
    assert body["parent"] == grandparent["id"]
    assert body["urls"]["up"] == f"{BASE}/categories/{grandparent['id']}"


# ============================================================================= categories / tags: lists


def test_term_list_empty(term, anon):
    body = assert_totals(anon.get(term.path), 0, 0)
    assert list(body) == ["rest_url", "total", "total_pages", term.name]
    assert body[term.name] == []
    assert body["rest_url"] == f"{BASE}/{term.name}/"


def test_term_list_hides_empty_terms_by_default(term, factory, anon):
    unused = term.make(factory)
    used = term.make(factory)
    draft_only = term.make(factory)
    factory.event(**{term.name: [used["id"]]})
    factory.event(status="draft", **{term.name: [draft_only["id"]]})
    body = assert_totals(anon.get(term.path), 1, 1)
    assert item_ids(body, term.name) == [used["id"]]
    assert body[term.name][0]["count"] == 1
    assert list(body[term.name][0]) == term.keys
    for value in ("false", "0"):
        body = ok(anon.get(term.path, query_string={"hide_empty": value}))
        assert sorted(item_ids(body, term.name)) == sorted([unused["id"], used["id"], draft_only["id"]])
    counts = {item["id"]: item["count"] for item in body[term.name]}
    assert counts == {unused["id"]: 0, used["id"]: 1, draft_only["id"]: 0}
    assert ok(anon.get(term.path, query_string={"hide_empty": "true"}))["total"] == 1


def test_term_list_pagination(term, seed, anon):
    ids = seed.terms(term, 9)  # names sort as their ids do
    params = {"hide_empty": "false", "per_page": 3}
    first = assert_totals(anon.get(term.path, query_string=params), 9, 3)
    assert list(first) == ["rest_url", "total", "total_pages", term.name, "next_rest_url"]
    assert item_ids(first, term.name) == ids[:3]
    assert query(first["next_rest_url"])["page"] == ["2"]
    second = assert_totals(anon.get(term.path, query_string={**params, "page": 2}), 9, 3)
    assert list(second)[-2:] == ["next_rest_url", "previous_rest_url"]
    assert item_ids(second, term.name) == ids[3:6]
    assert "page" not in query(second["previous_rest_url"])
    assert urlsplit(second["previous_rest_url"]).path == f"{API}/{term.name}/"
    assert query(second["next_rest_url"])["page"] == ["3"]
    third = assert_totals(anon.get(term.path, query_string={**params, "page": 3}), 9, 3)
    assert item_ids(third, term.name) == ids[6:]
    assert "next_rest_url" not in third and query(third["previous_rest_url"])["page"] == ["2"]
    past = assert_totals(anon.get(term.path, query_string={**params, "page": 4}), 9, 3)
    assert past[term.name] == []
    assert "next_rest_url" not in past and query(past["previous_rest_url"])["page"] == ["3"]
    for value in ("foo", "0", "-1"):
        error(anon.get(term.path, query_string={**params, "page": value}), 400, "rest_invalid_param")
        error(anon.get(term.path, query_string={**params, "per_page": value}), 400, "rest_invalid_param")


def test_term_list_per_page_cap(term, seed, anon):
    seed.terms(term, 51)
    body = assert_totals(anon.get(term.path, query_string={"hide_empty": "false", "per_page": 100}), 51, 2)
    assert len(body[term.name]) == 50


def test_term_list_include_exclude(term, factory, anon):
    a, b, c = (term.make(factory)["id"] for _ in range(3))

    def listed(params):
        return sorted(item_ids(ok(anon.get(term.path, query_string=[("hide_empty", "false"), *params])), term.name))

    assert listed([("exclude", a)]) == [b, c]
    assert listed([("exclude[]", a), ("exclude[]", b)]) == [c]
    assert listed([("exclude", f"{a},{b},{c}")]) == []
    assert listed([("include", a)]) == [a]
    assert listed([("include", f"{a},{b},{c}")]) == [a, b, c]
    assert listed([("include[]", b), ("include[]", c)]) == [b, c]
    for key in ("exclude", "include"):
        body = error(anon.get(term.path, query_string=[(f"{key}[]", "2389"), (f"{key}[]", "1235"),
                                                        (f"{key}[]", "3434")]), 400, "rest_invalid_param")
        assert key in body["data"]["params"]
        error(anon.get(term.path, query_string={key: f"{a},2389"}), 400, "rest_invalid_param")


def test_term_list_order(term, factory, anon):
    b = term.make(factory, name="b")["id"]
    a = term.make(factory, name="A")["id"]
    c = term.make(factory, name="C")["id"]

    def order(**params):
        return item_ids(ok(anon.get(term.path, query_string={"hide_empty": "false", **params})), term.name)

    assert order(order="desc", orderby="id") == [c, a, b]
    assert order(order="asc", orderby="id") == [b, a, c]
    assert order(order="asc", orderby="name") == [a, b, c]
    assert order(order="desc", orderby="name") == [c, b, a]
    assert order() == [a, b, c]
    for params in ({"order": "", "orderby": "id"}, {"order": "desc", "orderby": ""}, {"order": "sideways"},
                   {"orderby": "colour"}):
        error(anon.get(term.path, query_string={"hide_empty": "false", **params}), 400, "rest_invalid_param")


def test_category_parent_filter(factory, anon):
    b = factory.category(name="b")
    a = factory.category(name="A", parent=b["id"])
    d = factory.category(name="D", parent=b["id"])
    factory.category(name="E", parent=a["id"])  # a grandchild is not a direct child
    body = assert_totals(anon.get("/categories", query_string={"hide_empty": "false", "parent": b["id"]}), 2, 1)
    assert item_ids(body, "categories") == [a["id"], d["id"]]
    for value in ("2389", "", "foo"):
        error(anon.get("/categories", query_string={"hide_empty": "false", "parent": value}), 400,
              "rest_invalid_param")


def test_term_list_post_and_event_filters(term, factory, anon):
    a, b, c = (term.make(factory, name=n)["id"] for n in ("A", "b", "C"))
    first = factory.event(**{term.name: [b, c]})
    second = factory.event(**{term.name: [a]})
    venue = factory.venue()

    def listed(params):
        return item_ids(ok(anon.get(term.path, query_string={"hide_empty": "false", **params})), term.name)

    assert listed({"post": first["id"]}) == [b, c]
    assert listed({"event": first["id"]}) == [b, c]
    assert listed({"post": first["id"], "event": second["id"]}) == [a]
    for key in ("post", "event"):
        for value in ("", "23", "foo", str(venue["id"])):
            body = error(anon.get(term.path, query_string={key: value}), 400, "rest_invalid_param")
            assert key in body["data"]["params"]


def test_term_list_slug_filter(term, factory, anon):
    ids = {s: term.make(factory, name=s.upper(), slug=s)["id"] for s in "abcd"}
    body = assert_totals(anon.get(term.path, query_string={"hide_empty": "false", "slug": "a"}), 1, 1)
    assert item_ids(body, term.name) == [ids["a"]]
    assert item_ids(ok(anon.get(term.path, query_string={"hide_empty": "false", "slug": "c"})), term.name) == [ids["c"]]
    body = assert_totals(anon.get(term.path, query_string={"hide_empty": "false", "slug": "foo"}), 0, 0)
    assert body[term.name] == [] and "next_rest_url" not in body and "previous_rest_url" not in body
    error(anon.get(term.path, query_string={"slug": ""}), 400, "rest_invalid_param")


def test_term_list_search_matches_name_or_slug(term, factory, anon):
    foo = term.make(factory, name="Foo")["id"]
    bar = term.make(factory, name="bar")["id"]
    term.make(factory, name="baz")
    one = term.make(factory, name="One", slug="foo-bar")["id"]

    def found(text):
        return sorted(item_ids(ok(anon.get(term.path, query_string={"hide_empty": "false", "search": text})),
                               term.name))

    assert found("foo") == sorted([foo, one])
    assert found("bar") == sorted([bar, one])
    assert found("ONE") == [one]
    assert found("zoot") == []
    error(anon.get(term.path, query_string={"search": ""}), 400, "rest_invalid_param")


def test_term_count_and_embedded_flavour(term, factory, admin, anon):
    fields = {"name": "Counted", "description": "Desc"}
    if term.hierarchical:
        fields["parent"] = factory.category()["id"]
    created = term.make(factory, **fields)
    published = [factory.event(**{term.name: [created["id"]]}) for _ in range(2)]
    factory.event(status="draft", **{term.name: [created["id"]]})
    factory.event(status="private", **{term.name: [created["id"]]})
    assert ok(anon.get(f"{term.path}/{created['id']}"))["count"] == 2
    listed = ok(anon.get(term.path))[term.name]
    assert [(t["id"], t["count"]) for t in listed] == [(created["id"], 2)]
    embedded = ok(anon.get(f"/events/{published[0]['id']}"))[term.name]
    assert len(embedded) == 1
    item = embedded[0]
    assert list(item) == EMBEDDED_TERM_KEYS
    assert "url" not in item
    assert item["id"] == created["id"] and item["term_taxonomy_id"] == created["id"]
    assert (item["name"], item["slug"], item["description"]) == ("Counted", created["slug"], "Desc")
    assert item["taxonomy"] == term.taxonomy and item["filter"] == "raw" and item["term_group"] == 0
    assert item["count"] == 2
    assert item["parent"] == fields.get("parent", 0)
    assert item["urls"]["self"] == f"{BASE}/{term.name}/{created['id']}"
    assert item["urls"]["collection"] == f"{BASE}/{term.name}"
    assert ("up" in item["urls"]) == term.hierarchical
    # trashing a published event lowers the count
    ok(admin.delete(f"/events/{published[1]['id']}"))
    assert ok(anon.get(f"{term.path}/{created['id']}"))["count"] == 1

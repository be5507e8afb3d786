"""The five resources, described once as data.

Each ``Resource`` says where its files live, which keys its files hold (in the order they
are written, so diffs stay small), what type each key has and which of them a client may
write: it is the only list of each resource's fields. Shared code in the store, the service, the presenters and the HTTP layer
serves all five from these descriptions; events, venues and organizers behave like posts,
categories and tags like terms.
"""
from __future__ import annotations

from dataclasses import dataclass

POST_STATUSES = ("publish", "future", "draft", "pending", "private", "trash")
# Statuses WordPress registers besides ours; accepted in filters for compatibility.
OTHER_REGISTERED_STATUSES = ("auto-draft", "inherit")


@dataclass(frozen=True, eq=False)
class Resource:
    """A kind of record: its folder, file format and keys."""

    name: str                      # URL segment, folder and list key: "events"
    singular: str                  # "event"
    kind: str                      # "post" or "term"
    extension: str                 # ".md" (front matter + body) or ".yaml"
    title_key: str                 # the key holding the display name
    file_keys: tuple[str, ...]     # keys in file order
    types: dict[str, str]          # key -> type, see TYPE_NAMES
    body_key: str | None = None    # key stored as the file body (events: description)
    taxonomy: str | None = None    # terms: WordPress taxonomy name
    permalink: str = ""            # public page path template under the site URL
    # file keys that are no create argument (the service sets them, or the API does not take them)
    server_keys: tuple[str, ...] = ("id",)
    # the date key whose year and month name the subfolders new files go to (events/2026/11/):
    # a commit then rewrites a few small trees, not one folder of every event
    filed_by_month: str | None = None

    @property
    def id_space(self) -> str:
        """Events, venues and organizers share one id space (posts), categories and tags another."""
        return "posts" if self.kind == "post" else "terms"

    @property
    def by_slug(self) -> bool:
        return self.kind == "post"

    @property
    def folder(self) -> str:
        return self.name

    @property
    def text_keys(self) -> tuple[str, ...]:
        """The plain-text keys other than the title, slug, status and password, in file order (a
        venue's address parts, phone and website; an organizer's phone, website and e-mail)."""
        skip = (self.title_key, "slug", "status", "password")
        return tuple(k for k in self.file_keys if self.types.get(k) == "str" and k not in skip)

    @property
    def input_keys(self) -> tuple[str, ...]:
        """The keys a client may give when creating a record: the file keys the service does not
        manage, the body key, and for posts ``date`` (the local publication date, stored as ``date_utc``)."""
        keys = tuple(k for k in self.file_keys if k not in self.server_keys)
        if self.body_key:
            keys += (self.body_key,)
        return (("date",) if self.kind == "post" else ()) + keys


# Types a file value may have; the store checks them when it loads a file.
TYPE_NAMES = {
    "int": "an integer",
    "str": "a string",
    "text": "a string",
    "bool": "true or false",
    "datetime": "a date and time 'YYYY-MM-DD HH:MM:SS'",
    "refs": "a list of ids or slugs",
    "ref": "an id or a slug",
    "cost": "a string, a number or a list of them",
    "float": "a number",
    "image": "an image URL",
    "map": "a mapping",
    "lines": "a list of lines",
}

_POST_COMMON_TYPES = {
    "id": "int", "slug": "str", "status": "str", "author": "int",
    "date_utc": "datetime", "modified_utc": "datetime",
    "description": "text", "excerpt": "text", "image": "image", "password": "str",
}

# a venue's or organizer's slug, excerpt and password are not among its create arguments
_LINKED_SERVER_KEYS = ("id", "slug", "modified_utc", "excerpt", "password")

EVENTS = Resource(
    name="events", singular="event", kind="post", extension=".md", title_key="title",
    file_keys=("id", "title", "slug", "status", "author", "date_utc", "modified_utc", "start_date", "end_date",
               "timezone", "all_day", "excerpt", "cost", "currency_symbol", "currency_position", "currency_code",
               "website", "show_map", "show_map_link", "hide_from_listings", "sticky", "featured",
               "categories", "tags", "venue", "organizer", "image", "post_parent", "password", "custom_fields",
               "recurrence", "exceptions"),
    types={**_POST_COMMON_TYPES, "title": "str", "start_date": "datetime", "end_date": "datetime",
           "timezone": "str", "all_day": "bool", "cost": "cost", "currency_symbol": "str",
           "currency_position": "str", "currency_code": "str", "website": "str", "show_map": "bool",
           "show_map_link": "bool", "hide_from_listings": "bool", "sticky": "bool", "featured": "bool",
           "categories": "refs", "tags": "refs", "venue": "refs", "organizer": "refs", "post_parent": "int",
           "custom_fields": "map", "recurrence": "lines", "exceptions": "map"},
    body_key="description",
    # a series' exceptions are written through recurrence_scope=this on its occurrences
    server_keys=("id", "modified_utc", "currency_symbol", "currency_position", "currency_code", "post_parent",
                 "password", "custom_fields", "exceptions"),
    permalink="/event/{slug}/",
    filed_by_month="start_date",
)

VENUES = Resource(
    name="venues", singular="venue", kind="post", extension=".yaml", title_key="venue",
    file_keys=("id", "venue", "slug", "status", "author", "date_utc", "modified_utc", "description", "excerpt",
               "address", "city", "country", "province", "state", "zip", "phone", "stateprovince", "website",
               "show_map", "show_map_link", "geo_lat", "geo_lng", "image", "password"),
    types={**_POST_COMMON_TYPES, "venue": "str", "address": "str", "city": "str", "country": "str",
           "province": "str", "state": "str", "zip": "str", "phone": "str", "stateprovince": "str",
           "website": "str", "show_map": "bool", "show_map_link": "bool", "geo_lat": "float", "geo_lng": "float"},
    permalink="/venue/{slug}/",
    server_keys=_LINKED_SERVER_KEYS + ("geo_lat", "geo_lng"),
)

ORGANIZERS = Resource(
    name="organizers", singular="organizer", kind="post", extension=".yaml", title_key="organizer",
    file_keys=("id", "organizer", "slug", "status", "author", "date_utc", "modified_utc", "description", "excerpt",
               "phone", "website", "email", "image", "password"),
    types={**_POST_COMMON_TYPES, "organizer": "str", "phone": "str", "website": "str", "email": "str"},
    permalink="/organizer/{slug}/",
    server_keys=_LINKED_SERVER_KEYS,
)

CATEGORIES = Resource(
    name="categories", singular="category", kind="term", extension=".yaml", title_key="name",
    file_keys=("id", "name", "slug", "description", "parent"),
    types={"id": "int", "name": "str", "slug": "str", "description": "text", "parent": "ref"},
    taxonomy="tribe_events_cat",
    permalink="/events/category/{slug}/",
)

TAGS = Resource(
    name="tags", singular="tag", kind="term", extension=".yaml", title_key="name",
    file_keys=("id", "name", "slug", "description"),
    types={"id": "int", "name": "str", "slug": "str", "description": "text"},
    taxonomy="post_tag",
    permalink="/tag/{slug}/",
)

RESOURCES: dict[str, Resource] = {r.name: r for r in (EVENTS, VENUES, ORGANIZERS, CATEGORIES, TAGS)}
POST_TYPES = (EVENTS, VENUES, ORGANIZERS)
TERM_TYPES = (CATEGORIES, TAGS)

# Event keys that point at other records, and the resource they point at.
EVENT_REFERENCES = {"categories": CATEGORIES, "tags": TAGS, "venue": VENUES, "organizer": ORGANIZERS}

"""The sample calendar written to a new content repository on first run.

About twenty events and a weekly series dated relative to the day of the first run (so the default list window
shows them), with venues, organizers, categories and tags, committed as one commit.
"""
from __future__ import annotations

from datetime import datetime, time, timedelta

from calendar_service.domain import dates
from calendar_service.domain import record_files
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, TAGS, VENUES
from calendar_service.storage.store import GitStore

VENUES_DATA = [
    {"venue": "Riverside Hall", "address": "12 Quay Street", "city": "Springfield", "state": "IL", "zip": "62701",
     "country": "United States", "phone": "+1 217 555 0100", "website": "https://riverside.example.org",
     "geo_lat": 39.7990, "geo_lng": -89.6440, "description": "A converted warehouse on the river, 400 seats."},
    {"venue": "Old Town Library", "address": "3 Market Square", "city": "Springfield", "state": "IL",
     "zip": "62702", "country": "United States", "phone": "+1 217 555 0142",
     "description": "Reading rooms and a small auditorium."},
    {"venue": "Botanic Garden", "address": "Parkway 50", "city": "Springfield", "state": "IL", "zip": "62704",
     "country": "United States", "geo_lat": 39.7700, "geo_lng": -89.6800},
    {"venue": "Jazzkeller", "address": "Kleine Gasse 7", "city": "Berlin", "province": "Berlin", "zip": "10115",
     "country": "Germany", "website": "https://jazzkeller.example.de"},
]

ORGANIZERS_DATA = [
    {"organizer": "City Arts Council", "email": "events@arts.example.org", "phone": "+1 217 555 0199",
     "website": "https://arts.example.org"},
    {"organizer": "Friends of the Library", "email": "friends@library.example.org"},
    {"organizer": "Springfield Runners", "website": "https://runners.example.org"},
]

CATEGORIES_DATA = [
    {"name": "Music", "description": "Concerts and live music"},
    {"name": "Workshops", "description": "Learn something new"},
    {"name": "Family", "description": "Fun for all ages"},
    {"name": "Sports", "description": ""},
    {"name": "Jazz", "description": "Swing, bebop and more", "parent": "music"},
]

TAGS_DATA = [
    {"name": "outdoor"}, {"name": "free"}, {"name": "kids"}, {"name": "evening"}, {"name": "weekly"},
    {"name": "accessible"},
]

# (day offset, start hour, duration hours, title, venue, organizers, categories, tags, extra)
EVENTS_DATA = [
    (-1, 18, 2, "Open Mic Night", "riverside-hall", ["city-arts-council"], ["music"], ["evening", "free"], {}),
    (0, 10, 1, "Story Time for Toddlers", "old-town-library", ["friends-of-the-library"], ["family"], ["kids", "weekly"], {}),
    (1, 7, 2, "Morning Park Run", "botanic-garden", ["springfield-runners"], ["sports"], ["outdoor", "free", "weekly"], {}),
    (2, 19, 3, "Jazz Night", "jazzkeller", ["city-arts-council"], ["music", "jazz"], ["evening"],
     {"cost": "€12", "featured": True, "timezone": "Europe/Berlin"}),
    (3, 14, 2, "Watercolour Workshop", "old-town-library", ["city-arts-council"], ["workshops"], ["accessible"],
     {"cost": "$25"}),
    (4, 9, 8, "Garden Volunteer Day", "botanic-garden", [], ["family"], ["outdoor", "free"], {"all_day": True}),
    (5, 20, 2, "Chamber Music Evening", "riverside-hall", ["city-arts-council"], ["music"], ["evening"],
     {"cost": ["10", "25"], "featured": True}),
    (6, 11, 2, "Book Club: Classics", "old-town-library", ["friends-of-the-library"], ["workshops"], ["weekly"], {}),
    (8, 7, 2, "Morning Park Run", "botanic-garden", ["springfield-runners"], ["sports"], ["outdoor", "free", "weekly"], {}),
    (9, 15, 3, "Family Science Fair", "riverside-hall", ["city-arts-council"], ["family", "workshops"], ["kids"],
     {"cost": "0"}),
    (11, 18, 2, "Poetry Reading", "old-town-library", ["friends-of-the-library"], [], ["evening", "accessible"], {}),
    (13, 20, 3, "Big Band Swing", "jazzkeller", ["city-arts-council"], ["music", "jazz"], ["evening"],
     {"cost": "€15", "timezone": "Europe/Berlin"}),
    (15, 7, 2, "Morning Park Run", "botanic-garden", ["springfield-runners"], ["sports"], ["outdoor", "weekly"], {}),
    (17, 10, 6, "Spring Plant Sale", "botanic-garden", [], ["family"], ["outdoor"], {}),
    (20, 13, 3, "Pottery for Beginners", "riverside-hall", ["city-arts-council"], ["workshops"], [], {"cost": "$40"}),
    (24, 19, 2, "Film Screening: Silent Classics", "old-town-library", ["friends-of-the-library"], [], ["evening", "free"], {}),
    (30, 9, 4, "City Half Marathon", "botanic-garden", ["springfield-runners"], ["sports"], ["outdoor"],
     {"cost": "$30", "featured": True}),
    (45, 18, 3, "Summer Concert in the Park", "botanic-garden", ["city-arts-council"], ["music", "family"],
     ["outdoor", "free", "kids"], {}),
    (60, 10, 2, "Coding Club for Teens", "old-town-library", ["friends-of-the-library"], ["workshops"], ["kids"], {}),
    (90, 20, 2, "New Year Jazz Gala", "jazzkeller", ["city-arts-council"], ["music", "jazz"], ["evening"],
     {"cost": "€35", "timezone": "Europe/Berlin", "sticky": True}),
]


# A recurring series: a weekly rehearsal in the site's zone, twelve times from the day after the
# first run, without its third evening (EXDATE) and with its fifth one moved and retitled.
SERIES_DATA = {"title": "Choir Rehearsal", "offset": 1, "hour": 19, "hours": 2, "count": 12, "venue": "riverside-hall",
               "organizer": ["city-arts-council"], "categories": ["music"], "tags": ["evening", "weekly"]}
WEEKDAY_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


def series(today, site_timezone: str, record_id: int, created: str) -> dict:
    """The sample's recurring series (see SERIES_DATA) as the data of its file."""
    item = SERIES_DATA
    start = datetime.combine(today + timedelta(days=item["offset"]), time(item["hour"], 0))
    skipped, moved = start + timedelta(weeks=2), start + timedelta(weeks=4)
    return {
        "id": record_id, "title": item["title"], "slug": "choir-rehearsal", "status": "publish", "author": 1,
        "date_utc": created, "modified_utc": created, "start_date": dates.fmt(start),
        "end_date": dates.fmt(start + timedelta(hours=item["hours"])), "timezone": site_timezone,
        "show_map": True, "show_map_link": True, "categories": item["categories"], "tags": item["tags"],
        "venue": [item["venue"]], "organizer": item["organizer"],
        "recurrence": [f"RRULE:FREQ=WEEKLY;BYDAY={WEEKDAY_CODES[start.weekday()]};COUNT={item['count']}",
                       f"EXDATE:{skipped:%Y%m%dT%H%M%S}"],
        "exceptions": {dates.fmt(moved): {"title": "Choir Rehearsal with the orchestra",
                                          "start_date": dates.fmt(moved - timedelta(hours=1)),
                                          "end_date": dates.fmt(moved + timedelta(hours=item["hours"]))}},
        "description": "Weekly rehearsal, open to new singers.\n\nNo rehearsal in the third week; in the "
                       "fifth the orchestra joins us, an hour earlier.",
    }


def build(today: datetime, site_timezone: str) -> dict[str, bytes]:
    """The sample calendar's files, dated relative to ``today`` (a date in the site time zone)."""
    created = dates.fmt(dates.utc_now())
    files: dict[str, bytes] = {}
    next_post_id, next_term_id = 1, 1
    term_ids: dict[tuple[str, str], int] = {}
    post_ids: dict[tuple[str, str], int] = {}

    def add(resource, data):
        files[record_files.path_for(resource, data["slug"], data)] = record_files.dump(resource, data)

    for resource, items in ((CATEGORIES, CATEGORIES_DATA), (TAGS, TAGS_DATA)):
        for item in items:
            slug = item["name"].lower()
            data = {"id": next_term_id, "name": item["name"], "slug": slug,
                    "description": item.get("description") or None}
            if item.get("parent"):
                data["parent"] = item["parent"]  # references are written as slugs
            term_ids[(resource.name, slug)] = next_term_id
            next_term_id += 1
            add(resource, data)
    for resource, items in ((VENUES, VENUES_DATA), (ORGANIZERS, ORGANIZERS_DATA)):
        for item in items:
            title = item[resource.title_key]
            slug = "-".join(title.lower().split())
            data = {"id": next_post_id, resource.title_key: title, "slug": slug, "status": "publish", "author": 1,
                    "date_utc": created, "modified_utc": created, **item}
            if resource is VENUES:
                data.update(show_map=True, show_map_link=True)
            post_ids[(resource.name, slug)] = next_post_id
            next_post_id += 1
            add(resource, data)
    used_slugs: set[str] = set()
    for offset, hour, duration, title, venue, organizers, categories, tags, extra in EVENTS_DATA:
        day = today + timedelta(days=offset)
        start = datetime.combine(day, time(hour, 0))
        end = start + timedelta(hours=duration)
        slug = "-".join(title.lower().replace(":", "").split())
        base, n = slug, 2
        while slug in used_slugs:
            slug = f"{base}-{n}"
            n += 1
        used_slugs.add(slug)
        data = {
            "id": next_post_id, "title": title, "slug": slug, "status": "publish", "author": 1,
            "date_utc": created, "modified_utc": created,
            "start_date": dates.fmt(start), "end_date": dates.fmt(end),
            "timezone": extra.pop("timezone", site_timezone),
            "show_map": True, "show_map_link": True,
            "categories": [c for c in categories if ("categories", c) in term_ids],
            "tags": [t for t in tags if ("tags", t) in term_ids],
            "venue": [venue] if ("venues", venue) in post_ids else [],
            "organizer": [o for o in organizers if ("organizers", o) in post_ids],
            "description": f"{title} at the {venue.replace('-', ' ').title()}.\n\nAll welcome.",
            **extra,
        }
        if data.get("all_day"):
            data["start_date"] = data["start_date"][:10] + " 00:00:00"
            data["end_date"] = data["end_date"][:10] + " 23:59:59"
        next_post_id += 1
        add(EVENTS, data)
    add(EVENTS, series(today, site_timezone, next_post_id, created))
    return files


def seed(store: GitStore, site_timezone: str, tz) -> str:
    """Commit the sample calendar to an empty repository; returns the commit id."""
    today = datetime.now(tz).date()
    files = build(today, site_timezone)
    readme = (
        "# Calendar content\n\n"
        "Each record is one file: `events/<slug>.md` (YAML front matter, then the description),\n"
        "`venues/`, `organizers/`, `categories/` and `tags/` hold `<slug>.yaml` files. Keys are the\n"
        "field names of the calendar API; references to venues, organizers, categories and tags are slugs\n"
        "(ids are accepted too). Run `python -m calendar_service validate` before you commit.\n"
    ).encode()
    files["README.md"] = readme
    with store.write_lock():
        return store.commit(files, "Create the sample calendar\n\nWritten by the calendar service on first run.",
                            ("Calendar Service", "calendar-service@localhost"), store.head())

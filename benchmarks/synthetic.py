"""The synthetic calendar: deterministic (``random.Random(seed)``, dates relative to ``today``)
record files of N events with their venues, organizers, categories and tags, and the same
events as The Events Calendar's REST API serves them (the importer's input)."""
from __future__ import annotations

import random
from itertools import accumulate
from datetime import date, datetime, timedelta, timezone

from calendar_service.domain import dates, record_files
from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, TAGS, VENUES
from calendar_service.domain.text import slugify

EVENTS_PER_VENUE = 50
EVENTS_PER_ORGANIZER = 100
HISTORY_DAYS = 400           # records were created up to this long before today
FIRST_EVENT_DAYS_AGO = 365   # events start from a year ago ...
EVENT_SPAN_DAYS = 4 * 365    # ... over four years
DESCRIPTION_CHARS = 290      # a description grows by extra sentences up to about this length

CITIES = [  # (city, state/province, country, time zone, lat, lng)
    ("Springfield", "IL", "United States", "America/Chicago", 39.80, -89.64),
    ("New York", "NY", "United States", "America/New_York", 40.71, -74.01),
    ("Portland", "OR", "United States", "America/Los_Angeles", 45.52, -122.68),
    ("Berlin", "Berlin", "Germany", "Europe/Berlin", 52.52, 13.40),
    ("London", "England", "United Kingdom", "Europe/London", 51.51, -0.13),
    ("Tokyo", "Tokyo", "Japan", "Asia/Tokyo", 35.68, 139.69),
]
CITY_WEIGHTS = [30, 20, 15, 15, 12, 8]

VENUE_WORDS = ["Riverside", "Old Town", "Harbour", "Maple", "Granite", "Lantern", "Copper", "Northgate", "Willow",
               "Station", "Meridian", "Orchard", "Beacon", "Foundry", "Linden", "Crescent", "Summit", "Elm"]
VENUE_KINDS = ["Hall", "Library", "Community Centre", "Park", "Gallery", "Theatre", "Brewery", "Studio", "Pavilion",
               "Church", "Museum", "Market", "Arts Centre", "Club", "Garden"]
STREETS = ["Quay Street", "Market Square", "Parkway", "High Street", "Mill Lane", "Station Road", "Church Walk",
           "Harbour Road", "Elm Avenue", "King Street"]
ORG_FIRST = ["City", "Friends of the", "Northside", "Riverside", "Young", "United", "Open", "Neighbourhood",
             "Independent", "Grassroots"]
ORG_SECOND = ["Arts Council", "Library", "Runners", "Makers", "Choir", "Film Society", "Historical Society",
              "Chess Club", "Gardeners", "Jazz Collective", "Coders", "Theatre Group", "Poetry Circle"]

CATEGORY_NAMES = ["Music", "Workshops", "Family", "Sports", "Jazz", "Classical", "Theatre", "Film", "Literature",
                  "Food & Drink", "Markets", "Outdoors", "Technology", "Science", "History", "Art", "Dance",
                  "Comedy", "Wellness", "Education", "Community", "Charity", "Business", "Kids", "Seniors",
                  "Festivals", "Nightlife", "Crafts", "Gardening", "Languages"]
CATEGORY_PARENTS = {"Jazz": "Music", "Classical": "Music", "Kids": "Family", "Crafts": "Workshops"}
TAG_NAMES = ["outdoor", "free", "kids", "evening", "weekly", "accessible", "monthly", "beginners", "advanced",
             "vegan", "live-music", "registration", "drop-in", "indoor", "wheelchair", "seniors", "teens",
             "family-friendly", "pet-friendly", "all-ages", "members", "volunteers", "fundraiser", "hands-on",
             "lecture", "tasting", "networking", "bilingual", "online", "hybrid", "sold-out", "waitlist",
             "early-bird", "summer", "winter", "spring", "autumn", "weekend", "morning", "lunchtime",
             "afternoon", "late-night", "premiere", "anniversary", "holiday", "local", "international",
             "student-discount", "bring-a-friend", "rain-or-shine", "parking", "transit", "refreshments",
             "bar", "workshop", "exhibition", "guided", "self-guided", "certificate", "quiet"]
TITLE_ADJ = ["Evening", "Morning", "Community", "Family", "Summer", "Winter", "Spring", "Autumn", "Open",
             "Late-Night", "Weekend", "Beginners'", "Advanced", "Annual", "Monthly", "Weekly", "Outdoor",
             "Acoustic", "Classical", "Modern", "Historic", "Local", "International", "Charity", "Sunset",
             "Riverside", "Downtown", "Holiday", "Sunday", "Midweek"]
TITLE_KIND = ["Jazz Concert", "Pottery Workshop", "Book Club", "Farmers Market", "Yoga Class", "Film Screening",
              "Poetry Reading", "Wine Tasting", "Park Run", "Art Exhibition", "Chess Tournament", "Coding Meetup",
              "Photography Walk", "Choir Rehearsal", "Lecture", "Dance Party", "Comedy Night", "Craft Fair",
              "Science Talk", "Cooking Class", "Storytelling Hour", "Board Game Night", "Quiz Night",
              "Garden Tour", "Open Mic", "String Quartet", "Food Festival", "Charity Gala", "Language Exchange",
              "Cycling Tour", "Theatre Performance", "Beer Festival", "Hackathon", "Career Fair",
              "Meditation Session", "Sketching Circle", "History Walk", "Karaoke Night", "Swing Dance Lesson",
              "Startup Pitch Night"]
AUDIENCES = ["neighbours of all ages", "curious beginners", "seasoned enthusiasts", "families with young children",
             "students and teachers", "local artists", "anyone who loves good company", "newcomers to the city"]
ACTIVITIES = ["live music", "conversation", "hands-on practice", "short talks", "shared food", "improvisation",
              "friendly competition", "guided exploration", "quiet reflection", "storytelling", "painting",
              "tasting local produce", "dancing", "singing", "problem solving", "photography"]
EXTRAS = ["No experience is necessary; all materials are provided.",
          "Doors open thirty minutes before the start, and light refreshments will be served.",
          "Places are limited, so please register early to avoid disappointment.",
          "The venue is step-free and has an accessible toilet.",
          "Bring a water bottle, comfortable shoes and plenty of curiosity.",
          "Children under twelve must be accompanied by an adult.",
          "Proceeds go to the neighbourhood food bank.",
          "Rain or shine: the programme moves indoors if the weather turns.",
          "Parking is available nearby, and the number 12 bus stops outside.",
          "Stay afterwards for an informal chat with the organisers."]
COSTS = ["Free", "$5", "$10", "$12.50", "$25", "€12", "€15", "£8", "10-25", "Donation"]


def _weights(count: int, skew: float = 0.8) -> list[float]:
    """Zipf-like popularity: a few venues, categories and tags are used much more than others."""
    return [1 / (i + 1) ** skew for i in range(count)]


def _description(rng: random.Random, title: str, venue: str, city: str, organizer: str | None) -> str:
    kind = title.split(" ", 1)[-1].lower()
    parts = [
        f"Join us for {('an' if kind[0] in 'aeiou' else 'a')} {kind} at {venue}, {city}.",
        f"This {rng.choice(['weekly', 'monthly', 'seasonal', 'one-off', 'popular'])} gathering brings together "
        f"{rng.choice(AUDIENCES)} for an afternoon of {rng.choice(ACTIVITIES)} and {rng.choice(ACTIVITIES)}.",
    ]
    if organizer:
        parts.append(f"Hosted by {organizer}, it has been running since {rng.randint(1985, 2023)}.")
    extras = rng.sample(EXTRAS, len(EXTRAS))
    while sum(len(p) + 1 for p in parts) < DESCRIPTION_CHARS and extras:
        parts.append(extras.pop())
    split = rng.randint(1, len(parts) - 1)
    return " ".join(parts[:split]) + "\n\n" + " ".join(parts[split:])


class _Calendar:
    """The files being generated (path -> bytes), the records by kind, and the ids and slugs handed out."""

    def __init__(self, seed: int, today: date):
        self.rng = random.Random(seed)
        self.files: dict[str, bytes] = {}
        self.by_kind: dict[str, dict[int, dict]] = {"events": {}, "venues": {}, "organizers": {}, "categories": {},
                                                    "tags": {}}
        self.created = datetime.combine(today, datetime.min.time()) - timedelta(days=HISTORY_DAYS)
        self.used_slugs: set[str] = set()
        self.next_suffix: dict[str, int] = {}   # base slug -> the first "-N" suffix not tried yet
        self.post_id = 0

    def add(self, resource, data: dict) -> None:
        self.files[record_files.path_for(resource, data["slug"], data)] = record_files.dump(resource, data)
        self.by_kind[resource.name][data["id"]] = data

    def unique(self, slug: str) -> str:
        """``slug``, or the first free ``slug-N`` (N >= 2). The suffix search resumes where the last
        one for that base stopped (the set only grows), so a title used k times costs k steps in
        all, not k*k/2: with ~1,200 titles, 1,000,000 events took ~400 million steps."""
        if slug not in self.used_slugs:
            self.used_slugs.add(slug)
            return slug
        base, n = slug, self.next_suffix.get(slug, 2)
        while f"{base}-{n}" in self.used_slugs:
            n += 1
        slug = f"{base}-{n}"
        self.next_suffix[base] = n + 1
        self.used_slugs.add(slug)
        return slug

    def forget_slugs(self) -> None:
        """Venues, organizers and events each have their own slugs."""
        self.used_slugs.clear()
        self.next_suffix.clear()

    def next_post(self) -> int:
        """Venues, organizers, then events share one id space."""
        self.post_id += 1
        return self.post_id

    def stamp(self) -> str:
        """A creation time within the first month of the calendar's history."""
        return dates.fmt(self.created + timedelta(minutes=self.rng.randint(0, 60 * 24 * 30)))


def build_calendar(size: int, seed: int, today: date, series: int = 0,
                   api: bool = True) -> tuple[dict[str, bytes], dict]:
    """The files of a calendar of ``size`` events (path -> bytes) and what the requests need to know;
    ``series`` more events are weekly recurring series without an end (``_Events.add_series``);
    ``api``: the events as the API serves them too (``meta["api_events"]``)."""
    cal = _Calendar(seed, today)
    n_venues, n_organizers = max(1, size // EVENTS_PER_VENUE), max(1, size // EVENTS_PER_ORGANIZER)
    category_ids, tag_ids = _terms(cal)
    venues = [_venue(cal) for _ in range(n_venues)]
    cal.forget_slugs()
    organizers = [_organizer(cal) for _ in range(n_organizers)]
    cal.forget_slugs()
    events = _Events(cal, venues, organizers, category_ids, tag_ids, today)
    for _ in range(size):
        events.add_one()
    for _ in range(series):
        events.add_series()
    cal.files["README.md"] = b"# Synthetic benchmark calendar\n\nGenerated by benchmarks.bench.\n"
    words = sorted({w.lower().strip("'") for t in TITLE_KIND + TITLE_ADJ for w in t.replace("-", " ").split()}
                   | {w for a in ACTIVITIES for w in a.split() if len(w) > 4})
    cal.rng.shuffle(words)
    meta = {
        "events": size, "series": series, "venues": n_venues, "organizers": n_organizers, "categories": len(category_ids),
        "tags": len(tag_ids), "drafts": events.drafts, "hidden": events.hidden, "files": len(cal.files),
        "bytes": sum(len(v) for v in cal.files.values()),
        "category_ids": category_ids, "tag_ids": tag_ids,
        "venue_ids": [v[0] for v in venues], "organizer_ids": [o[0] for o in organizers],
        "listed": events.listed, "search_words": words, "series_ids": events.listed_series,
    }
    if api:
        meta["api_events"] = api_events(cal.by_kind)
    return cal.files, meta


def _terms(cal: _Calendar) -> tuple[list[int], list[int]]:
    """Categories 1..30, then tags 31..90 (terms have their own id space)."""
    term_id = 0
    category_ids, tag_ids = [], []
    cat_by_name = {}
    for name in CATEGORY_NAMES:
        term_id += 1
        data = {"id": term_id, "name": name, "slug": slugify(name),
                "description": f"{name} events around town." if cal.rng.random() < 0.7 else None}
        if name in CATEGORY_PARENTS:
            data["parent"] = cat_by_name[CATEGORY_PARENTS[name]]
        cat_by_name[name] = term_id
        category_ids.append(term_id)
        cal.add(CATEGORIES, data)
    for name in TAG_NAMES:
        term_id += 1
        tag_ids.append(term_id)
        cal.add(TAGS, {"id": term_id, "name": name, "slug": slugify(name)})
    return category_ids, tag_ids


def _venue(cal: _Calendar) -> tuple[int, str, tuple]:
    """One venue; returns (id, name, city tuple)."""
    rng = cal.rng
    post_id = cal.next_post()
    city = rng.choices(CITIES, CITY_WEIGHTS)[0]
    name = f"{rng.choice(VENUE_WORDS)} {rng.choice(VENUE_KINDS)}"
    stamp = cal.stamp()
    data = {"id": post_id, "venue": name, "slug": cal.unique(slugify(name)), "status": "publish", "author": 1,
            "date_utc": stamp, "modified_utc": stamp,
            "description": f"{name} in {city[0]}: a space for concerts, talks and workshops.",
            "address": f"{rng.randint(1, 250)} {rng.choice(STREETS)}", "city": city[0], "country": city[2],
            "zip": f"{rng.randint(10000, 99999)}", "phone": f"+1 555 {rng.randint(1000, 9999)}",
            "show_map": True, "show_map_link": True}
    data["state" if city[2] == "United States" else "province"] = city[1]
    data["stateprovince"] = city[1]
    if rng.random() < 0.7:
        data["geo_lat"] = round(city[4] + rng.uniform(-0.1, 0.1), 5)
        data["geo_lng"] = round(city[5] + rng.uniform(-0.1, 0.1), 5)
    if rng.random() < 0.4:
        data["website"] = f"https://{data['slug']}.example.org"
    cal.add(VENUES, data)
    return post_id, name, city


def _organizer(cal: _Calendar) -> tuple[int, str]:
    """One organizer; returns (id, name)."""
    rng = cal.rng
    post_id = cal.next_post()
    name = f"{rng.choice(ORG_FIRST)} {rng.choice(ORG_SECOND)}"
    slug = cal.unique(slugify(name))
    stamp = cal.stamp()
    data = {"id": post_id, "organizer": name, "slug": slug, "status": "publish", "author": 1,
            "date_utc": stamp, "modified_utc": stamp, "email": f"events@{slug}.example.org"}
    if rng.random() < 0.5:
        data["website"] = f"https://{slug}.example.org"
    cal.add(ORGANIZERS, data)
    return post_id, name


class _Events:
    """Adds events one at a time, counting drafts and hidden ones and listing the listed ones."""

    def __init__(self, cal: _Calendar, venues, organizers, category_ids, tag_ids, today: date):
        self.cal, self.venues, self.organizers = cal, venues, organizers
        self.category_ids, self.tag_ids = category_ids, tag_ids
        # cumulative weights, summed once: random.choices sums plain weights on every call (a loop
        # over 20,000 venues and 10,000 organizers per event at 1,000,000 events); the same draws
        self.venue_w, self.cat_w, self.tag_w, self.org_w = (list(accumulate(_weights(n))) for n in (
            len(venues), len(category_ids), len(tag_ids), len(organizers)))
        self.now = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
        self.first_day = today - timedelta(days=FIRST_EVENT_DAYS_AGO)
        self.listed: list[tuple[int, str]] = []  # (id, slug) of published events not hidden from listings
        self.listed_series: list[int] = []       # ids of the published series not hidden from listings
        self.drafts = self.hidden = 0

    def _times(self) -> tuple[datetime, str, str, bool]:
        """Start time, start and end as the record writes them, all-day or not (5% all-day, 2% multi-day)."""
        rng = self.cal.rng
        day = self.first_day + timedelta(days=rng.randrange(EVENT_SPAN_DAYS))
        start = datetime.combine(day, datetime.min.time()) + timedelta(hours=rng.randint(7, 21),
                                                                       minutes=rng.choice((0, 15, 30, 45)))
        roll = rng.random()
        if roll < 0.05:
            all_day, end = True, None
        elif roll < 0.07:
            all_day, end = False, start + timedelta(days=rng.randint(1, 4), hours=rng.randint(1, 6))
        else:
            all_day, end = False, start + timedelta(minutes=rng.choice((60, 90, 120, 150, 180, 240)))
        if all_day:
            start_text = dates.fmt(start)[:10] + " 00:00:00"
            end_text = dates.fmt(start + timedelta(days=rng.choice((0, 0, 0, 1))))[:10] + " 23:59:59"
        else:
            start_text, end_text = dates.fmt(start), dates.fmt(end)
        return start, start_text, end_text, all_day

    def add_one(self) -> None:
        cal, rng = self.cal, self.cal.rng
        post_id = cal.next_post()
        title = f"{rng.choice(TITLE_ADJ)} {rng.choice(TITLE_KIND)}"
        vid, vname, city = rng.choices(self.venues, cum_weights=self.venue_w)[0]
        org = rng.choices(self.organizers, cum_weights=self.org_w)[0] if rng.random() < 0.8 else None
        org_ids = [org[0]] + ([rng.choice(self.organizers)[0]] if rng.random() < 0.15 else []) if org else []
        start, start_text, end_text, all_day = self._times()
        published = min(self.now, start - timedelta(days=rng.randint(1, 120), minutes=rng.randint(0, 1439)))
        status = "draft" if rng.random() < 0.05 else "publish"
        hide = rng.random() < 0.02
        slug = cal.unique(slugify(title))
        cats = sorted(set(rng.choices(self.category_ids, cum_weights=self.cat_w, k=rng.choice((1, 1, 1, 2, 2, 3)))))
        if rng.random() < 0.05:
            cats = []
        tags = sorted(set(rng.choices(self.tag_ids, cum_weights=self.tag_w, k=rng.randint(0, 4))))
        data = {
            "id": post_id, "title": title, "slug": slug, "status": status, "author": 1,
            "date_utc": dates.fmt(published), "modified_utc": dates.fmt(published),
            "start_date": start_text, "end_date": end_text,
            "timezone": city[3] if rng.random() < 0.9 else None,
            "all_day": True if all_day else None,
            "excerpt": f"{title} in {city[0]}." if rng.random() < 0.3 else None,
            "cost": rng.choice(COSTS) if rng.random() < 0.4 else None,
            "website": f"https://example.org/events/{slug}" if rng.random() < 0.2 else None,
            "show_map": True, "show_map_link": True,
            "hide_from_listings": True if hide else None,
            "featured": True if rng.random() < 0.03 else None,
            "sticky": True if rng.random() < 0.01 else None,
            "categories": cats, "tags": tags, "venue": [vid], "organizer": org_ids,
            "description": _description(rng, title, vname, city[0], org[1] if org else None),
        }
        cal.add(EVENTS, data)
        self.drafts += status == "draft"
        self.hidden += hide
        if status == "publish" and not hide:
            self.listed.append((post_id, slug))


    def add_series(self) -> None:
        """A weekly series without an end (listed up to the horizon: ~100 occurrences over 24 months),
        its first occurrence within the last three months, at a whole quarter hour."""
        rng = self.cal.rng
        self.add_one()
        if self.listed and self.listed[-1][0] == self.cal.post_id:
            self.listed_series.append(self.cal.post_id)
        data = self.cal.by_kind["events"][self.cal.post_id]
        day = datetime.combine(self.now.date() - timedelta(days=rng.randrange(90)), datetime.min.time())
        start = day + timedelta(hours=rng.randint(7, 21), minutes=rng.choice((0, 15, 30, 45)))
        data.update(start_date=dates.fmt(start), end_date=dates.fmt(start + timedelta(minutes=90)), all_day=None,
                    recurrence=["RRULE:FREQ=WEEKLY"])
        self.cal.add(EVENTS, data)


def api_events(by_kind: dict) -> list[dict]:
    """The events as The Events Calendar's REST API serves them (linked records embedded),
    the input of the importer."""
    def post(data: dict, title_key: str) -> dict:
        out = {"id": data["id"], "author": str(data.get("author") or 1), "status": data.get("status", "publish"),
               "date_utc": data.get("date_utc"), "modified_utc": data.get("modified_utc"),
               title_key: data[title_key], "slug": data["slug"]}
        for key in ("description", "excerpt"):
            if data.get(key):
                out[key] = data[key]
        return out

    def term(data: dict, taxonomy: str) -> dict:
        return {"name": data["name"], "slug": data["slug"], "term_group": 0, "term_taxonomy_id": data["id"],
                "taxonomy": taxonomy, "description": data.get("description") or "", "parent": data.get("parent") or 0,
                "count": 0, "filter": "raw", "id": data["id"]}

    venues = {}
    for vid, data in by_kind["venues"].items():
        venue = post(data, "venue")
        for key in ("address", "city", "country", "province", "state", "zip", "phone", "website", "stateprovince",
                    "geo_lat", "geo_lng"):
            if data.get(key) is not None:
                venue[key] = data[key]
        venue["show_map"], venue["show_map_link"] = data.get("show_map", True), data.get("show_map_link", True)
        venues[vid] = venue
    organizers = {}
    for oid, data in by_kind["organizers"].items():
        organizer = post(data, "organizer")
        for key in ("phone", "website", "email"):
            if data.get(key):
                organizer[key] = data[key]
        organizers[oid] = organizer
    categories = {i: term(d, "tribe_events_cat") for i, d in by_kind["categories"].items()}
    tags = {i: term(d, "post_tag") for i, d in by_kind["tags"].items()}
    out = []
    for data in by_kind["events"].values():
        event = post(data, "title")
        event.update({
            "start_date": data["start_date"], "end_date": data["end_date"], "timezone": data.get("timezone") or "",
            "all_day": bool(data.get("all_day")), "cost": data.get("cost") or "",
            "show_map": data.get("show_map", True), "show_map_link": data.get("show_map_link", True),
            "hide_from_listings": bool(data.get("hide_from_listings")), "sticky": bool(data.get("sticky")),
            "featured": bool(data.get("featured")),
            "categories": [categories[i] for i in data.get("categories") or []],
            "tags": [tags[i] for i in data.get("tags") or []],
            "venue": venues[data["venue"][0]] if data.get("venue") else [],
            "organizer": [organizers[i] for i in data.get("organizer") or []],
        })
        if data.get("website"):
            event["website"] = data["website"]
        out.append(event)
    return out

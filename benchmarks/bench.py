"""Benchmark: build a synthetic calendar of N events, then time the service against floors.

    python -m benchmarks.bench [--sizes 1000,10000] [--repeat 200] [--out DIR]
                                     [--budget SECONDS] [--seed N] [--profile] [--keep]

For each size the calendar is generated deterministically (``random.Random(seed)``, dates
relative to today) as the JSON The Events Calendar's API serves (linked records embedded)
and imported as ONE commit through the importer (``importer.import_events``) into a fresh
repository. Then, each phase in its own Python process so that memory figures are not
polluted by the previous phase:

- build process: generate the JSON, import it, load a ``Catalog`` snapshot, rebuild the
  search index (``SearchIndex.rebuild_now``);
- serve process: ``create_app`` on that repository with its up-to-date index (cold start,
  until the first list request returns), RSS after load, then requests through the Flask
  test client: reads with the index, the same list queries with ``service.index = None``
  (the scanning fallback), and writes (each one a real commit).

Floors measured in the same run: the same Flask app returning a precomputed copy of each
response body through a trivial route (same ``json_response``), ``git add`` + ``git commit``
of one event file in the same repository for writes, and ``git add -A`` + ``git commit`` of
the same files into a scratch repository for the initial commit.

A row stops early once it has used ``--budget`` seconds (and has at least a few samples):
the scanning fallback can take seconds per request at large sizes. ``n`` in the table says
how many samples a row has. Results go to ``--out`` (default ``./bench-results/``) as JSON.
"""
from __future__ import annotations

import argparse
import base64
import cProfile
import gc
import json
import logging
import math
import os
import platform
import pstats
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

API = "/calendar/events/v1"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
ADMIN_LOGIN = "bench-admin"
ADMIN_PASSWORD = "bench-admin-password-not-secret"
SITE_TZ = "UTC"
MIN_SAMPLES = 5
WARMUP = 2


def say(message: str) -> None:
    """Progress on standard error."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    """Resident set size now (VmRSS), in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak_rss_mb()


def peak_rss_mb() -> float:
    """Peak resident set size of this process (ru_maxrss is in KB on Linux), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary(samples_ms: list[float]) -> dict:
    return {"n": len(samples_ms), "p50_ms": percentile(samples_ms, 0.5), "p95_ms": percentile(samples_ms, 0.95),
            "min_ms": min(samples_ms) if samples_ms else float("nan"),
            "max_ms": max(samples_ms) if samples_ms else float("nan"),
            "mean_ms": sum(samples_ms) / len(samples_ms) if samples_ms else float("nan")}


def git_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def run_git(root: Path, *args: str, check: bool = True) -> str:
    # gc.auto=0: an automatic `git gc` (thousands of loose objects here) would land in one sample at random
    proc = subprocess.run(["git", "-C", str(root), "-c", "gc.auto=0", "-c", "user.name=Bench",
                           "-c", "user.email=bench@localhost", *args], capture_output=True, env=git_env())
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


# =============================================================================== synthetic calendar

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


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


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
    while sum(len(p) + 1 for p in parts) < 290 and extras:
        parts.append(extras.pop())
    split = rng.randint(1, len(parts) - 1)
    return " ".join(parts[:split]) + "\n\n" + " ".join(parts[split:])


def build_calendar(size: int, seed: int, today: date) -> tuple[dict[str, bytes], dict]:
    """The files of a calendar of ``size`` events (path -> bytes) and what the requests need to know."""
    from calendar_service.domain import dates
    from calendar_service.domain import records
    from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, TAGS, VENUES
    from calendar_service.domain.text import slugify

    rng = random.Random(seed)
    files: dict[str, bytes] = {}
    created = datetime.combine(today, datetime.min.time()) - timedelta(days=400)
    n_venues, n_organizers = max(1, size // 50), max(1, size // 100)

    by_kind: dict[str, dict[int, dict]] = {"events": {}, "venues": {}, "organizers": {}, "categories": {},
                                           "tags": {}}

    def add(resource, data):
        files[records.path_for(resource, data["slug"])] = records.dump(resource, data)
        by_kind[resource.name][data["id"]] = data

    # terms: categories 1..30, tags 31..90 (their own id space)
    term_id = 0
    category_ids, tag_ids = [], []
    cat_by_name = {}
    for name in CATEGORY_NAMES:
        term_id += 1
        data = {"id": term_id, "name": name, "slug": slugify(name),
                "description": f"{name} events around town." if rng.random() < 0.7 else None}
        if name in CATEGORY_PARENTS:
            data["parent"] = cat_by_name[CATEGORY_PARENTS[name]]
        cat_by_name[name] = term_id
        category_ids.append(term_id)
        add(CATEGORIES, data)
    for name in TAG_NAMES:
        term_id += 1
        tag_ids.append(term_id)
        add(TAGS, {"id": term_id, "name": name, "slug": slugify(name)})

    # posts: venues, organizers, then events share one id space
    post_id = 0
    venues = []  # (id, name, city tuple)
    used_slugs: set[str] = set()

    def unique(slug: str) -> str:
        base, n = slug, 2
        while slug in used_slugs:
            slug = f"{base}-{n}"
            n += 1
        used_slugs.add(slug)
        return slug

    for _ in range(n_venues):
        post_id += 1
        city = rng.choices(CITIES, CITY_WEIGHTS)[0]
        name = f"{rng.choice(VENUE_WORDS)} {rng.choice(VENUE_KINDS)}"
        stamp = dates.fmt(created + timedelta(minutes=rng.randint(0, 60 * 24 * 30)))
        data = {"id": post_id, "venue": name, "slug": unique(slugify(name)), "status": "publish", "author": 1,
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
        venues.append((post_id, name, city))
        add(VENUES, data)
    organizers = []
    used_slugs.clear()
    for _ in range(n_organizers):
        post_id += 1
        name = f"{rng.choice(ORG_FIRST)} {rng.choice(ORG_SECOND)}"
        slug = unique(slugify(name))
        stamp = dates.fmt(created + timedelta(minutes=rng.randint(0, 60 * 24 * 30)))
        data = {"id": post_id, "organizer": name, "slug": slug, "status": "publish", "author": 1,
                "date_utc": stamp, "modified_utc": stamp, "email": f"events@{slug}.example.org"}
        if rng.random() < 0.5:
            data["website"] = f"https://{slug}.example.org"
        organizers.append((post_id, name))
        add(ORGANIZERS, data)

    venue_w, cat_w, tag_w, org_w = (_weights(n_venues), _weights(len(category_ids)), _weights(len(tag_ids)),
                                    _weights(n_organizers))
    now = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
    used_slugs.clear()
    listed = []  # (id, slug) of published events not hidden from listings
    drafts = hidden = 0
    first_day = today - timedelta(days=365)
    span_days = 4 * 365
    for _ in range(size):
        post_id += 1
        title = f"{rng.choice(TITLE_ADJ)} {rng.choice(TITLE_KIND)}"
        vid, vname, city = rng.choices(venues, venue_w)[0]
        org = rng.choices(organizers, org_w)[0] if rng.random() < 0.8 else None
        org_ids = [org[0]] + ([rng.choice(organizers)[0]] if rng.random() < 0.15 else []) if org else []
        day = first_day + timedelta(days=rng.randrange(span_days))
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
        published = min(now, start - timedelta(days=rng.randint(1, 120), minutes=rng.randint(0, 1439)))
        status = "draft" if rng.random() < 0.05 else "publish"
        hide = rng.random() < 0.02
        slug = unique(slugify(title))
        cats = sorted(set(rng.choices(category_ids, cat_w, k=rng.choice((1, 1, 1, 2, 2, 3)))))
        if rng.random() < 0.05:
            cats = []
        tags = sorted(set(rng.choices(tag_ids, tag_w, k=rng.randint(0, 4))))
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
        add(EVENTS, data)
        drafts += status == "draft"
        hidden += hide
        if status == "publish" and not hide:
            listed.append((post_id, slug))
    files["README.md"] = b"# Synthetic benchmark calendar\n\nGenerated by benchmarks.bench.\n"
    words = sorted({w.lower().strip("'") for t in TITLE_KIND + TITLE_ADJ for w in t.replace("-", " ").split()}
                   | {w for a in ACTIVITIES for w in a.split() if len(w) > 4})
    rng.shuffle(words)
    meta = {
        "events": size, "venues": n_venues, "organizers": n_organizers, "categories": len(category_ids),
        "tags": len(tag_ids), "drafts": drafts, "hidden": hidden, "files": len(files),
        "bytes": sum(len(v) for v in files.values()),
        "category_ids": category_ids, "tag_ids": tag_ids,
        "venue_ids": [v[0] for v in venues], "organizer_ids": [o[0] for o in organizers],
        "listed": listed, "search_words": words,
    }
    meta["api_events"] = api_events(by_kind)
    return files, meta


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


# =============================================================================== build phase


def phase_build(cfg: dict) -> dict:
    """Generate, commit as one commit, floor-commit with git, load a snapshot, rebuild the index."""
    from zoneinfo import ZoneInfo

    from calendar_service.auth.accounts import Accounts
    from calendar_service.storage.catalog import Catalog
    from calendar_service.index.search import SearchIndex
    from calendar_service.storage.store import GitStore

    work = Path(cfg["work"])
    size, today = cfg["size"], date.fromisoformat(cfg["today"])
    result: dict = {"problems": []}

    say(f"{size}: generating the calendar")
    t0 = time.perf_counter()
    files, meta = build_calendar(size, cfg["seed"], today)
    result["generate_s"] = time.perf_counter() - t0
    say(f"{size}: {meta['files']} files, {meta['bytes'] / 1e6:.1f} MB in {result['generate_s']:.1f} s")

    from calendar_service.cli import importer
    items = meta.pop("api_events")
    source = work / "import.json"
    source.write_text(json.dumps({"events": items}))
    result["import_json_mb"] = source.stat().st_size / 1e6
    del items
    gc.collect()
    store = GitStore(work / "content", "main")
    store.init()
    say(f"{size}: importing {source} ({result['import_json_mb']:.1f} MB) through the importer")
    last_say = [time.monotonic()]

    def import_progress(stage, done, total):
        if time.monotonic() - last_say[0] > 15 or done == total:
            last_say[0] = time.monotonic()
            say(f"{size}: import {stage} {done}/{total}")

    t0 = time.perf_counter()
    imported = importer.import_events(store, importer.load(source), ZoneInfo(SITE_TZ), author=("Bench", "bench@localhost"),
                                      source="synthetic calendar", progress=import_progress)
    result["commit_s"] = time.perf_counter() - t0
    result["import_created"] = imported.created
    result["import_remapped"] = len(imported.remapped)
    if imported.remapped or imported.created["events"] != size:
        raise RuntimeError(f"the import changed ids or lost events: {imported.summary()}")
    commit = store.head()
    result["commit"] = commit
    say(f"{size}: committed {commit[:12]} in {result['commit_s']:.1f} s")
    status = run_git(work / "content", "status", "--porcelain", "--untracked-files=no")
    result["worktree_clean_after_commit"] = status.strip() == ""
    objects = dict(line.split(": ", 1) for line in run_git(work / "content", "count-objects", "-v").splitlines())
    result["loose_objects"] = int(objects.get("count", 0))
    result["loose_kib"] = int(objects.get("size", 0))

    # floor for the initial commit: the same files written, `git add -A`, `git commit`
    scratch = work / "floor-bulk"
    say(f"{size}: floor: write files + git add -A + git commit in a scratch repository")
    t0 = time.perf_counter()
    run_git(scratch.parent, "init", "-q", "-b", "main", str(scratch))
    for path, content in files.items():
        target = scratch / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    result["floor_bulk_write_s"] = time.perf_counter() - t0
    run_git(scratch, "add", "-A")
    run_git(scratch, "commit", "-q", "-m", "bulk")
    result["floor_bulk_commit_s"] = time.perf_counter() - t0
    say(f"{size}: floor bulk commit {result['floor_bulk_commit_s']:.1f} s")
    shutil.rmtree(scratch, ignore_errors=True)
    del files
    gc.collect()

    say(f"{size}: loading the snapshot (Catalog.current)")
    t0 = time.perf_counter()
    # with the records cache the service uses (index folder): the serve phase is a restart
    catalog = Catalog(store, work / "index" / "records.cache")
    snapshot = catalog.current()
    result["snapshot_s"] = time.perf_counter() - t0
    import threading
    for thread in threading.enumerate():
        if thread.name == "calendar-records-cache":
            thread.join()
    result["records_cache_s"] = time.perf_counter() - t0 - result["snapshot_s"]
    result["snapshot_problems"] = len(snapshot.problems)
    result["problem_samples"] = [str(p) for p in snapshot.problems[:5]]
    result["rss_after_snapshot_mb"] = rss_mb()
    say(f"{size}: snapshot in {result['snapshot_s']:.1f} s, {len(snapshot.problems)} problems, "
        f"RSS {result['rss_after_snapshot_mb']:.0f} MB")

    say(f"{size}: full reindex (SearchIndex.rebuild_now)")
    index = SearchIndex(work / "index", ZoneInfo(SITE_TZ))
    last = [time.monotonic()]

    def progress(done, total):
        if time.monotonic() - last[0] > 15 or done == total:
            last[0] = time.monotonic()
            say(f"{size}: indexed {done}/{total}")

    t0 = time.perf_counter()
    indexed = index.rebuild_now(snapshot, progress)
    result["reindex_s"] = time.perf_counter() - t0
    result["reindex_docs"] = indexed
    result["reindex_docs_per_s"] = indexed / result["reindex_s"] if result["reindex_s"] else None
    result["index_mb"] = sum(f.stat().st_size for f in (work / "index").rglob("*") if f.is_file()) / 1e6
    say(f"{size}: reindexed {indexed} events in {result['reindex_s']:.1f} s "
        f"({result['reindex_docs_per_s']:.0f}/s), index {result['index_mb']:.1f} MB")
    store.close()

    Accounts(work / "users.yaml").add(ADMIN_LOGIN, "administrator", email="bench@example.org", name="Bench Admin",
                                      password=ADMIN_PASSWORD)
    result["peak_rss_mb"] = peak_rss_mb()
    result["meta"] = meta
    return result


# =============================================================================== serve phase


class Runner:
    """Times requests through the test client, with a time budget per row."""

    def __init__(self, client, repeat: int, budget: float):
        self.client = client
        self.repeat = repeat
        self.budget = budget
        self.auth = {"Authorization": "Basic " + base64.b64encode(f"{ADMIN_LOGIN}:{ADMIN_PASSWORD}".encode()).decode()}

    def measure(self, name: str, request, expect: int = 200, warmup: int = WARMUP, after=None) -> dict:
        """``request(k)`` sends request number k (distinct k, distinct query) and returns the response;
        ``after(k)``, when given, runs after each request, outside the timing."""
        errors: list[str] = []
        for j in range(warmup):
            request(self.repeat + 1000 + j)
            if after:
                after(self.repeat + 1000 + j)
        samples: list[float] = []
        sample_body = None
        started = time.perf_counter()
        for k in range(self.repeat):
            t0 = time.perf_counter()
            response = request(k)
            samples.append((time.perf_counter() - t0) * 1000)
            if after:
                after(k)
            if response.status_code != expect:
                if len(errors) < 3:
                    errors.append(f"{response.status_code}: {response.get_data(as_text=True)[:200]}")
            elif sample_body is None:
                sample_body = response.get_data()
            if time.perf_counter() - started > self.budget and len(samples) >= MIN_SAMPLES:
                break
        row = {"name": name, **summary(samples), "errors": errors,
               "stopped_by_budget": len(samples) < self.repeat,
               "body_bytes": len(sample_body) if sample_body else None}
        say(f"  {name}: p50 {row['p50_ms']:.2f} ms, p95 {row['p95_ms']:.2f} ms (n={row['n']})"
            + (f"  ERRORS {errors}" if errors else ""))
        return row, sample_body

    def get(self, path: str, params: dict | None = None, auth: bool = False):
        url = API + path + ("?" + urlencode(params) if params else "")
        return self.client.get(url, headers=self.auth if auth else None)

    def post(self, path: str, body: dict):
        return self.client.post(API + path, json=body, headers=self.auth)


def phase_serve(cfg: dict) -> dict:
    """Cold start on the built repository, then reads, scanning reads, writes and floors."""
    work = Path(cfg["work"])
    meta = cfg["meta"]
    size, repeat, budget = cfg["size"], cfg["repeat"], cfg["budget"]
    today = date.fromisoformat(cfg["today"])
    result: dict = {}

    t0 = time.perf_counter()
    from flask import Blueprint

    from calendar_service import create_app
    from calendar_service.http.api import json_response
    result["import_s"] = time.perf_counter() - t0

    config = {"content_dir": work / "content", "index_dir": work / "index", "users_file": work / "users.yaml",
              "seed_sample": False, "site_timezone": SITE_TZ}
    say(f"{size}: cold start (create_app + first list request)")
    t0 = time.perf_counter()
    app = create_app(config)
    result["create_app_s"] = time.perf_counter() - t0

    # the floor route: same app, same json_response, a precomputed body (registered before the first request)
    floor_bodies: dict[str, object] = {}
    floor_bp = Blueprint("bench_floor", __name__)

    @floor_bp.route("/__bench/floor/<name>")
    def floor(name):
        return json_response(floor_bodies[name])

    app.register_blueprint(floor_bp)
    client = app.test_client()
    service = app.extensions["calendar"]
    t0 = time.perf_counter()
    first = client.get(API + "/events")
    result["first_list_s"] = time.perf_counter() - t0
    result["cold_start_s"] = result["create_app_s"] + result["first_list_s"]
    result["first_list_status"] = first.status_code
    result["first_list_from_index"] = service.index is not None and service.index._view is not None
    result["rss_after_load_mb"] = rss_mb()
    say(f"{size}: cold start {result['cold_start_s']:.2f} s (create_app {result['create_app_s']:.2f} s, "
        f"first list {result['first_list_s'] * 1000:.0f} ms, from index: {result['first_list_from_index']}), "
        f"RSS {result['rss_after_load_mb']:.0f} MB")

    runner = Runner(client, repeat, budget)
    listed = meta["listed"]
    category_ids = meta["category_ids"]
    words = meta["search_words"]
    rng = random.Random(cfg["seed"] + 1)
    picks = rng.sample(listed, min(len(listed), max(repeat, 1) + 1100))

    def day(offset: int) -> str:
        return (today + timedelta(days=offset)).isoformat()

    def search_text(k: int) -> str:
        # distinct strings (the index caches search results by text): words, then pairs of words
        w = len(words)
        if k < w:
            return words[k]
        a, b = divmod(k - w, w)
        return f"{words[a % w]} {words[(a + 1 + b) % w]}"

    probe = runner.get("/events", {"page": 1, "per_page": 10})
    deep_page = max(1, min(40, int(probe.headers.get("X-TEC-TotalPages", "1"))))
    result["default_list_total"] = int(probe.headers.get("X-TEC-Total", "0"))
    result["deep_page"] = deep_page

    lists = {
        "list: default, first page": lambda k: runner.get("/events"),
        "list: category + 30-day window": lambda k: runner.get("/events", {
            "categories": category_ids[k % len(category_ids)], "start_date": day(k % 365),
            "end_date": day(k % 365 + 30)}),
        "list: search + 1-year window": lambda k: runner.get("/events", {
            "search": search_text(k), "start_date": day(k % 60), "end_date": day(k % 60 + 365)}),
        f"list: deep page ({deep_page} of per_page 10)": lambda k: runner.get("/events", {
            "page": deep_page, "per_page": 10, "start_date": day(-(k % 30) - 1)}),
    }
    singles = {
        "single: by id": lambda k: runner.get(f"/events/{picks[k % len(picks)][0]}"),
        "single: by slug": lambda k: runner.get(f"/events/by-slug/{picks[k % len(picks)][1]}"),
    }
    rows: list[dict] = []
    bodies: dict[str, bytes] = {}

    say(f"{size}: reads with the index")
    for name, request in {**lists, **singles}.items():
        row, body = runner.measure(name, request)
        row["kind"] = "list" if name.startswith("list") else "single"
        row["mode"] = "index"
        rows.append(row)
        bodies[name] = body

    say(f"{size}: the same lists with service.index = None (scanning fallback)")
    saved_index, service.index = service.index, None
    for name, request in lists.items():
        row, body = runner.measure(name + " [scan]", request)
        row["kind"], row["mode"], row["floor_of"] = "list", "scan", name
        rows.append(row)
    service.index = saved_index

    say(f"{size}: floors: the precomputed bodies through a trivial route")
    floors: dict[str, dict] = {}
    for name, body in bodies.items():
        if body is None:
            continue
        key = f"f{len(floors)}"
        floor_bodies[key] = json.loads(body)
        floors[name], _ = runner.measure(f"floor for {name}", lambda k, key=key: client.get(f"/__bench/floor/{key}"))
    for row in rows:
        floor_row = floors.get(row.get("floor_of", row["name"]))
        if floor_row:
            row["floor_p50_ms"] = floor_row["p50_ms"]
            row["floor_p95_ms"] = floor_row["p95_ms"]

    say(f"{size}: iCalendar feeds (every matching event; bodies read inside the timing: they are streamed)")

    def feed(params: dict):
        response = runner.get("/events", {"ical": 1, **params})
        response.get_data()
        return response

    t0 = time.perf_counter()
    first_feed = feed({})
    result["first_feed_ms"] = (time.perf_counter() - t0) * 1000
    result["feed_events"] = int(first_feed.headers.get("X-TEC-Total", "0"))
    result["feed_bytes"] = len(first_feed.get_data())
    say(f"{size}: first feed (every VEVENT built) {result['first_feed_ms']:.0f} ms, {result['feed_events']} events, "
        f"{result['feed_bytes'] / 1e6:.1f} MB")
    feeds = {
        "feed: every event (ical=1)": lambda k: feed({}),
        "feed: category + 30-day window (ical=1)": lambda k: feed({
            "categories": category_ids[k % len(category_ids)], "start_date": day(k % 365),
            "end_date": day(k % 365 + 30)}),
    }
    for name, request in feeds.items():
        row, _ = runner.measure(name, request)
        row["kind"], row["mode"] = "feed", "index"
        rows.append(row)

    if cfg.get("profile"):
        result["profiles"] = profile_lists(runner, service, rows, lists, cfg)

    # writes: each one is a commit
    say(f"{size}: writes (each a commit)")
    commits_before = int(run_git(work / "content", "rev-list", "--count", "HEAD").strip())
    venue_ids, organizer_ids, tag_ids = meta["venue_ids"], meta["organizer_ids"], meta["tag_ids"]

    def create(k: int):
        start = datetime.combine(today + timedelta(days=k % 700), datetime.min.time()) + timedelta(hours=18)
        return runner.post("/events", {
            "title": f"Benchmark Jazz Evening {k}", "status": "publish",
            "start_date": start.strftime("%Y-%m-%d %H:%M:%S"),
            "end_date": (start + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S"),
            "timezone": "Europe/Berlin",
            "description": "A benchmark event written through the API. " * 7,
            "categories": [category_ids[k % len(category_ids)]], "tags": [tag_ids[k % len(tag_ids)]],
            "venue": venue_ids[k % len(venue_ids)], "organizer": organizer_ids[k % len(organizer_ids)],
        })

    row, _ = runner.measure("write: create event (POST)", create, expect=201)
    row["kind"], row["mode"] = "write", "index"
    rows.append(row)

    # the index is behind by every create now; the next list catches up inline (<= 500 files)
    t0 = time.perf_counter()
    catch_up = runner.get("/events")
    result["list_after_creates_ms"] = (time.perf_counter() - t0) * 1000
    result["list_after_creates_status"] = catch_up.status_code
    say(f"{size}: first list after {row['n'] + WARMUP} creates (index catch-up): "
        f"{result['list_after_creates_ms']:.0f} ms")

    list_after: list[float] = []
    update_targets = picks[-(repeat + WARMUP + 1):]

    def update(k: int):
        target = update_targets[k % len(update_targets)][0]
        return runner.post(f"/events/{target}", {
            "title": f"Updated Event {k}", "description": f"Updated by the benchmark, round {k}. " * 8})

    def list_after_update(k: int):
        # the default list right after each update, timed apart: it brings the index up to that commit
        t1 = time.perf_counter()
        runner.get("/events")
        list_after.append((time.perf_counter() - t1) * 1000)

    row, _ = runner.measure("write: update event (POST to id)", update, expect=200, after=list_after_update)
    row["kind"], row["mode"] = "write", "index"
    rows.append(row)
    if cfg.get("profile"):
        # where a write's time goes (each profiled request is one more commit)
        result.setdefault("profiles", []).append(profile_requests(
            "write: update event (POST to id), without the list after it", 10,
            lambda k: runner.post(f"/events/{update_targets[k % len(update_targets)][0]}",
                                  {"title": f"Profiled Update {k}"}), cfg["size"]))
    after = {"name": "list: default, right after a write", **summary(list_after[WARMUP:]), "kind": "list",
             "mode": "index", "errors": [], "floor_of": "list: default, first page"}
    after["floor_p50_ms"] = floors.get("list: default, first page", {}).get("p50_ms")
    rows.append(after)
    say(f"  {after['name']}: p50 {after['p50_ms']:.2f} ms, p95 {after['p95_ms']:.2f} ms (n={after['n']})")
    commits_after = int(run_git(work / "content", "rev-list", "--count", "HEAD").strip())
    result["write_commits"] = commits_after - commits_before
    result["writes_sent"] = sum(r["n"] + WARMUP for r in rows if r["kind"] == "write") + (10 if cfg.get("profile") else 0)
    result["rss_end_mb"] = rss_mb()
    service.store.close()

    # floor for writes: git add + git commit of one event file (modified) in this repository
    say(f"{size}: floor: git add + git commit of one file in this repository")
    content = work / "content"
    paths = [p.relative_to(content).as_posix() for p in sorted((content / "events").iterdir())[:repeat + 10]]
    samples = []
    started = time.perf_counter()
    for k in range(repeat + WARMUP):
        path = paths[k % len(paths)]
        with open(content / path, "a", encoding="utf-8") as handle:
            handle.write(f"\nEdited by hand, round {k}.\n")
        t0 = time.perf_counter()
        run_git(content, "add", "--", path)
        run_git(content, "commit", "-q", "-m", f"Edit {path}")
        if k >= WARMUP:
            samples.append((time.perf_counter() - t0) * 1000)
        if time.perf_counter() - started > budget and len(samples) >= MIN_SAMPLES:
            break
    git_floor = {"name": "floor: git add + git commit (one file)", **summary(samples)}
    say(f"  {git_floor['name']}: p50 {git_floor['p50_ms']:.1f} ms (n={git_floor['n']})")
    for row in rows:
        if row["kind"] == "write":
            row["floor_p50_ms"], row["floor_p95_ms"] = git_floor["p50_ms"], git_floor["p95_ms"]
    result["rows"] = rows
    result["floors"] = {**{k: v for k, v in floors.items()}, "git add + commit": git_floor}
    return result


def profile_lists(runner: Runner, service, rows: list[dict], lists: dict, cfg: dict) -> list[dict]:
    """cProfile the slowest list row (by p50), and the slowest one served by the index if that differs."""
    list_rows = [r for r in rows if r["kind"] == "list"]
    chosen = [max(list_rows, key=lambda r: r["p50_ms"])]
    indexed = [r for r in list_rows if r["mode"] == "index"]
    if indexed and max(indexed, key=lambda r: r["p50_ms"]) is not chosen[0]:
        chosen.append(max(indexed, key=lambda r: r["p50_ms"]))
    out = []
    for row in chosen:
        base = row.get("floor_of", row["name"])
        request = lists[base]
        count = max(3, min(30, int(cfg["budget"] / 2 * 1000 / max(row["p50_ms"], 0.01))))
        saved = service.index
        if row["mode"] == "scan":
            service.index = None
        try:
            # queries not used before (no cached search results)
            out.append(profile_requests(row["name"], count, lambda k: request(50_000 + k), cfg["size"]))
        finally:
            service.index = saved
    return out


def profile_requests(name: str, count: int, request, size: int) -> dict:
    say(f"{size}: profiling {name} over {count} requests")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    try:
        for k in range(count):
            request(k)
    finally:
        profiler.disable()
    wall = time.perf_counter() - started
    return {"row": name, "requests": count, "wall_s": wall, "top15_cumulative": profile_table(profiler, count, wall)}


_WRAPPERS = ("/werkzeug/", "/flask/", "/calendar_service/bench.py")


def _where(filename: str, line: int, func: str) -> str:
    if filename == "~":
        return func
    marker = filename.rfind("site-packages/")
    stdlib = os.path.dirname(os.__file__) + "/"
    if marker >= 0:
        short = filename[marker + 14:]
    elif filename.startswith(stdlib):
        short = "stdlib/" + filename[len(stdlib):]
    else:
        short = filename.replace(str(PACKAGE_ROOT) + "/", "")
    return f"{short}:{line}({func})"


def profile_table(profiler: cProfile.Profile, requests: int, wall: float, top: int = 15) -> str:
    """Top functions by cumulative time, leaving out the test client, Flask and this module
    (their frames only wrap the request), then the top by own time. Percentages are of the
    wall time of the profiled requests."""
    stats = pstats.Stats(profiler)
    total = wall
    entries = [(key, value) for key, value in stats.stats.items()
               if not any(w in key[0] for w in _WRAPPERS)]
    lines = [f"{requests} requests, {total:.3f} s wall time under the profiler ({total / requests * 1000:.1f} ms "
             f"per request); test-client, Flask and bench frames left out",
             f"{'cum s':>8} {'cum %':>6} {'own s':>8} {'calls':>9}  function"]
    for (filename, line, func), (cc, nc, tt, ct, _) in sorted(entries, key=lambda e: -e[1][3])[:top]:
        lines.append(f"{ct:8.3f} {ct / total * 100:5.1f}% {tt:8.3f} {nc:9d}  {_where(filename, line, func)}")
    lines += ["", f"top {top // 2 + 3} by own time:", f"{'own s':>8} {'own %':>6} {'calls':>9}  function"]
    for (filename, line, func), (cc, nc, tt, ct, _) in sorted(entries, key=lambda e: -e[1][2])[:top // 2 + 3]:
        lines.append(f"{tt:8.3f} {tt / total * 100:5.1f}% {nc:9d}  {_where(filename, line, func)}")
    return "\n".join(lines) + "\n"


# =============================================================================== report


def _fmt_ms(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _ratio(value, floor) -> str:
    if not value or not floor or math.isnan(value) or math.isnan(floor):
        return "—"
    return f"{value / floor:.1f}x"


def table(size_result: dict) -> str:
    b, s = size_result["build"], size_result.get("serve", {})
    meta = b["meta"]
    lines = [
        f"== {meta['events']:,} events ({meta['venues']} venues, {meta['organizers']} organizers, "
        f"{meta['categories']} categories, {meta['tags']} tags; {meta['drafts']} drafts, {meta['hidden']} hidden; "
        f"{meta['files']:,} files, {meta['bytes'] / 1e6:.1f} MB; seed {size_result['seed']}) ==",
        "",
        f"{'one-off figure':<58} {'value':>12} {'floor':>12} {'ratio':>7}",
    ]

    def one(name, value, unit="s", floor=None):
        text = "—" if value is None else (f"{value:.2f} {unit}" if unit else f"{value:,.0f}")
        ftext = "—" if floor is None else f"{floor:.2f} {unit}"
        lines.append(f"{name:<58} {text:>12} {ftext:>12} {_ratio(value, floor):>7}")

    one("generate files (records.dump)", b["generate_s"])
    one("import (JSON file -> one commit, importer) (floor: git) [a]",
        b["commit_s"], floor=b["floor_bulk_commit_s"])
    one("snapshot load (Catalog.current, parse every file)", b["snapshot_s"])
    if b.get("records_cache_s") is not None:
        one("  writing the records cache (background at first start)", b["records_cache_s"])
    one("full reindex (SearchIndex.rebuild_now)", b["reindex_s"])
    one("  reindex throughput (events/s)", b["reindex_docs_per_s"], unit="")
    if s:
        one("cold start: create_app (import not included)", s["create_app_s"])
        one("cold start: first list request", s["first_list_s"])
        one("cold start: total until the first list returns", s["cold_start_s"])
        one("RSS after load (serving process, MB)", s["rss_after_load_mb"], unit="")
        if s.get("first_feed_ms") is not None:
            one(f"first iCalendar feed, every VEVENT built ({s['feed_events']:,} events)", s["first_feed_ms"] / 1000)
        one("RSS at the end of the serving process (MB)", s["rss_end_mb"], unit="")
    one("peak RSS of the build process (MB)", b["peak_rss_mb"], unit="")
    one("search index on disk (MB)", b["index_mb"], unit="")
    lines.append(f"{'loose objects after the initial commit':<58} {b['loose_objects']:>12,}")
    if not s:
        return "\n".join(lines)
    lines += ["", f"{'request (in process, Flask test client)':<50} {'p50 ms':>9} {'p95 ms':>9} {'n':>5} "
                  f"{'floor p50':>10} {'ratio':>7}"]
    for row in s["rows"]:
        flag = " *" if row.get("stopped_by_budget") else ""
        err = f"  ERR {row['errors'][0][:60]}" if row.get("errors") else ""
        lines.append(f"{row['name']:<50} {_fmt_ms(row['p50_ms']):>9} {_fmt_ms(row['p95_ms']):>9} {row['n']:>5} "
                     f"{_fmt_ms(row.get('floor_p50_ms')):>10} {_ratio(row['p50_ms'], row.get('floor_p50_ms')):>7}"
                     f"{flag}{err}")
    lines.append(f"{'first list after the creates (index catch-up)':<50} {_fmt_ms(s['list_after_creates_ms']):>9}")
    git_floor = s["floors"]["git add + commit"]
    lines += [
        "",
        "[a] floor: write the same files + `git add -A` + `git commit` in a scratch repository.",
        f"floors: list/single rows = the same body through a trivial route of the same app; writes = "
        f"`git add` + `git commit` of one event file in this repository (p50 {_fmt_ms(git_floor['p50_ms'])} ms, "
        f"p95 {_fmt_ms(git_floor['p95_ms'])} ms, n={git_floor['n']}).",
        f"default list total: {s['default_list_total']} events; writes sent {s['writes_sent']}, commits made "
        f"{s['write_commits']}; * = row stopped by the time budget.",
    ]
    return "\n".join(lines)


# =============================================================================== driver


def environment() -> dict:
    from importlib import metadata
    versions = {}
    for name in ("Flask", "Whoosh", "GitPython", "PyYAML", "Werkzeug"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        code = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(PACKAGE_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        code, dirty = None, None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
            "packages": versions, "code_commit": code, "code_dirty": dirty}


def run_phase(phase: str, cfg: dict, work: Path) -> dict:
    """Run one phase in a fresh interpreter; it writes its result as JSON."""
    cfg_path, out_path = work / f"{phase}-config.json", work / f"{phase}-result.json"
    cfg_path.write_text(json.dumps(cfg, default=str))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench", "--phase", phase,
                           "--phase-config", str(cfg_path), "--phase-out", str(out_path)], env=env)
    if proc.returncode != 0 or not out_path.exists():
        raise RuntimeError(f"the {phase} phase failed (exit status {proc.returncode})")
    return json.loads(out_path.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated event counts (default 1000,10000)")
    parser.add_argument("--repeat", type=int, default=200, help="requests per row (default 200)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds a row may take before it stops early (at least 5 samples; default 60)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default="bench-results", help="directory for the JSON results")
    parser.add_argument("--keep", action="store_true", help="keep the repositories (under OUT/work-SIZE)")
    parser.add_argument("--profile", action="store_true", help="cProfile the slowest list request of each size")
    parser.add_argument("--phase", choices=("build", "serve"), help=argparse.SUPPRESS)
    parser.add_argument("--phase-config", help=argparse.SUPPRESS)
    parser.add_argument("--phase-out", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)

    if options.phase:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
        cfg = json.loads(Path(options.phase_config).read_text())
        result = phase_build(cfg) if options.phase == "build" else phase_serve(cfg)
        Path(options.phase_out).write_text(json.dumps(result, default=str))
        return 0

    sizes = [int(s.replace("_", "")) for s in options.sizes.split(",") if s.strip()]
    out = Path(options.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    today = datetime.now(timezone.utc).date()
    report = {"started": stamp, "today": today.isoformat(), "args": vars(options), "environment": environment(),
              "sizes": {}}
    json_path = out / f"bench-{stamp}.json"
    tables = []
    for size in sizes:
        work = out / f"work-{size}" if options.keep else Path(tempfile.mkdtemp(prefix=f"calendar-bench-{size}-"))
        if options.keep and work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        say(f"== size {size}: working in {work}")
        started = time.perf_counter()
        cfg = {"work": str(work), "size": size, "seed": options.seed, "today": today.isoformat(),
               "repeat": options.repeat, "budget": options.budget, "profile": options.profile}
        entry: dict = {"seed": options.seed}
        try:
            entry["build"] = run_phase("build", cfg, work)
            entry["serve"] = run_phase("serve", {**cfg, "meta": entry["build"]["meta"]}, work)
        except Exception as exc:
            entry["error"] = str(exc)
            say(f"size {size}: {exc}")
        entry["wall_s"] = time.perf_counter() - started
        # the id and slug lists are large and only needed by the serve phase
        if "build" in entry:
            for key in ("listed", "search_words", "category_ids", "tag_ids", "venue_ids", "organizer_ids"):
                entry["build"]["meta"].pop(key, None)
        report["sizes"][str(size)] = entry
        json_path.write_text(json.dumps(report, indent=1, default=str))
        if "build" in entry:
            text = table(entry) + f"\n(size {size} took {entry['wall_s']:.0f} s)"
            for n, prof in enumerate(entry.get("serve", {}).get("profiles", []), 1):
                text += f"\n\n-- cProfile: {prof['row']} ({prof['requests']} requests), top 15 by cumulative time --\n"
                text += prof["top15_cumulative"].strip()
                (out / f"profile-{stamp}-{size}-{n}.txt").write_text(prof["top15_cumulative"])
            tables.append(text)
            print(text + "\n", flush=True)
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    report["environment_at_end"] = environment()
    if report["environment_at_end"]["code_commit"] != report["environment"]["code_commit"]:
        say("WARNING: the service code changed (new commit) while the benchmark ran")
    json_path.write_text(json.dumps(report, indent=1, default=str))
    (out / f"bench-{stamp}.txt").write_text("\n\n".join(tables) + "\n")
    say(f"results: {json_path}")
    return 0 if all("error" not in e for e in report["sizes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

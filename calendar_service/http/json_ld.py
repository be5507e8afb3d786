"""JSON-LD (schema.org) of single reads, as the original embeds it under ``json_ld``."""
from __future__ import annotations

from calendar_service.domain import record_files, text
from calendar_service.domain.record import Record
from calendar_service.domain.resources import ORGANIZERS, VENUES


def event_ld(out: dict, start, end, places: list, people: list) -> dict:
    """schema.org ``Event`` of an event's single read: ``out`` is its API object, ``places`` and
    ``people`` the ``venue_ld`` and ``organizer_ld`` of the linked records the caller may see
    (objects, or their JSON text as the presenter embeds it)."""
    ld = {
        "@context": "http://schema.org",
        "@type": "Event",
        "name": out["title"],
        "description": text.strip_tags(out["excerpt"] or out["description"]),
    }
    if out["image"]:
        ld["image"] = out["image"]["url"]
    ld.update({
        "url": out["url"],
        "eventAttendanceMode": "https://schema.org/OfflineEventAttendanceMode",
        "eventStatus": "https://schema.org/EventScheduled",
        "startDate": start.isoformat(),
        "endDate": end.isoformat(),
    })
    if places:
        ld["location"] = places[0] if len(places) == 1 else places
    if people:
        ld["organizer"] = people[0] if len(people) == 1 else people
    values = out["cost_details"]["values"]
    if values:
        ld["offers"] = {
            "@type": "Offer",
            "price": values[0],
            "priceCurrency": out["cost_details"]["currency_code"] or "USD",
            "url": out["url"],
            "category": "primary",
            "availability": "inStock",
            "validFrom": out["date_utc"].replace(" ", "T") + "+00:00",
        }
    ld["performer"] = "Organization"
    return ld


def venue_ld(record: Record, urls) -> dict:
    """schema.org ``Place`` of a venue."""
    data = record.data
    ld = {
        "@type": "Place",
        "name": record.title,
        "description": text.strip_tags(data.get("excerpt") or data.get("description")),
        "url": urls.permalink(VENUES, record.slug),
        "address": {
            "@type": "PostalAddress",
            "streetAddress": data.get("address") or "",
            "addressLocality": data.get("city") or "",
            "addressRegion": data.get(record_files.region_key(data)) or "",
            "postalCode": data.get("zip") or "",
            "addressCountry": data.get("country") or "",
        },
    }
    if data.get("geo_lat") is not None and data.get("geo_lng") is not None:
        ld["geo"] = {"@type": "GeoCoordinates", "latitude": data["geo_lat"], "longitude": data["geo_lng"]}
    if data.get("phone"):
        ld["telephone"] = data["phone"]
    if data.get("website"):
        ld["sameAs"] = data["website"]
    return ld


def organizer_ld(record: Record, urls) -> dict:
    """schema.org ``Person`` of an organizer."""
    data = record.data
    ld = {
        "@type": "Person",
        "name": record.title,
        "description": text.strip_tags(data.get("excerpt") or data.get("description")),
        "url": data.get("website") or urls.permalink(ORGANIZERS, record.slug),
    }
    for key, ld_key in (("phone", "telephone"), ("email", "email"), ("website", "sameAs")):
        if data.get(key):
            ld[ld_key] = data[key]
    return ld

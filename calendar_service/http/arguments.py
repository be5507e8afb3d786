"""The arguments of each endpoint: names, types, defaults, checks and descriptions.

``Resource`` (domain) says which keys a record's file holds; this module says what the
HTTP endpoints of each resource accept, as The Events Calendar registers them. The
names of each create endpoint's body fields are exactly the resource's ``input_keys``
(checked when this module loads), so the field list lives in one place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calendar_service.domain.resources import CATEGORIES, EVENTS, ORGANIZERS, RESOURCES, TAGS, VENUES, Resource
from calendar_service.http import checks
from calendar_service.http.checks import (BOOLEAN_LIKE, DATE, NONEMPTY, POSITIVE_INT, POST_STATUS, STRING_OR_EMPTY,
                                          USER_ID, Check)
from calendar_service.http.i18n import LANGUAGES, N_
from calendar_service.http.params import CheckContext, check_text, coerce

NO_DEFAULT = object()


@dataclass(frozen=True)
class Arg:
    """One argument of an endpoint, as the original registers it.

    ``type``/``format``/``items``/``default``/``description``/``required`` are what the
    index route and /doc show; ``check`` validates the argument when it is present, before
    any permission check, and gives /doc its schema.
    """

    name: str
    description: str
    type: str | None = None
    format: str | None = None
    items: str | None = None
    default: Any = NO_DEFAULT
    required: bool = False
    check: Check | None = None
    location: str = "query"

    def optional(self) -> "Arg":
        return Arg(self.name, self.description, self.type, self.format, self.items,
                   NO_DEFAULT, False, self.check, self.location)

    def clean(self, value, ctx: CheckContext):
        """``value`` checked and normalized by the argument's check, else by its declared type;
        raises Invalid."""
        check_text(value)
        if self.check is not None:
            return self.check.validate(value, ctx, self)
        return coerce(value, self.type, self.name)


PAGE = Arg("page", N_("The archive page to return"), type="integer", default=1, check=POSITIVE_INT)


# Descriptions are whole sentences marked with N_ (not assembled from parts) so that each
# language can translate them with its own grammar.
def _per_page(description: str) -> Arg:
    return Arg("per_page", description, type="integer", default="10", check=POSITIVE_INT)


def _status_filter(description: str) -> Arg:
    return Arg("status", description, format="string", check=checks.STATUS_FILTER)


def _date(name: str, text: str) -> Arg:
    return Arg(name, text, check=DATE)


EVENT_ARCHIVE_ARGS = (
    PAGE,
    _per_page(N_("The number of events to return on each page")),
    _date("start_date", N_("Events that start on the specified date")),
    _date("end_date", N_("Events that end on the specified date")),
    _date("starts_before", N_("Events that start before the specified date")),
    _date("starts_after", N_("Events that start after the specified date")),
    _date("ends_before", N_("Events that end before the specified date")),
    _date("ends_after", N_("Events that end after the specified date")),
    Arg("strict_dates", N_("Dates set using the start_date/end_date, starts_*/ends_* are set to start at the "
        "specified times. The default behavior is to include the entire days."), default="false",
        check=checks.STRICT_DATES),
    Arg("search", N_("Events should contain the specified string in the title or description"),
        type="string", check=NONEMPTY),
    Arg("categories", N_("Events should be assigned one of the specified categories slugs or IDs"),
        items="integer", check=checks.terms(CATEGORIES, set)),
    Arg("tags", N_("Events should be assigned one of the specified tags slugs or IDs"), items="integer",
        check=checks.terms(TAGS, set)),
    Arg("venue", N_("Events should be assigned one of the specified venue IDs"), items="integer",
        check=checks.visible_posts(VENUES)),
    Arg("organizer", N_("Events should be assigned one of the specified organizer IDs"), items="integer",
        check=checks.visible_posts(ORGANIZERS)),
    Arg("featured", N_("Events should be filtered by their featured status"), type="boolean"),
    _status_filter(N_("The event post status")),
    Arg("geoloc", N_("Events should be filtered by whether their venue has geolocation data"), type="boolean"),
    Arg("geoloc_lat", N_("Events should be filtered by their venue latitude location, must also provide "
        "geoloc_lng"), format="double", check=checks.LATITUDE),
    Arg("geoloc_lng", N_("Events should be filtered by their venue longitude location, must also provide "
        "geoloc_lat"), format="double", check=checks.LONGITUDE),
    Arg("include", N_("Include events with one of the post IDs specified in the array of CSV list, date "
        "filters will be ignored."), items="integer", check=checks.POSITIVE_INT_LIST),
    Arg("post_parent", N_("Events should be filtered by their post_parent being the specified one."),
        type="integer", check=checks.EVENT_ID),
    Arg("ticketed", N_("Filter events with or without tickets."), type="boolean"),
)

# Not in the original's route table: its iCalendar export lives on the site's pages (?ical=1).
ICAL = Arg("ical", N_("Answer in iCalendar (text/calendar, RFC 5545) instead of JSON; an Accept header "
                      "preferring text/calendar does the same. A list then holds every matching event unless page "
                      "or per_page is given."),
           type="boolean")
EVENT_ARCHIVE_ARGS += (ICAL,)

def _post_meta_args(author: str, date: str, date_utc: str) -> tuple[Arg, ...]:
    return (
        Arg("author", author, type="integer", check=USER_ID, location="body"),
        Arg("date", date, type="string", check=DATE, location="body"),
        Arg("date_utc", date_utc, type="string", check=DATE, location="body"),
    )


def _body(name: str, description: str, check: Check | None = STRING_OR_EMPTY, type: str = "string") -> Arg:
    return Arg(name, description, type=type, default=None, check=check, location="body")


VENUE_CREATE_ARGS = _post_meta_args(
    N_("The venue author ID"), N_("The venue publication date"), N_("The venue publication date (UTC time zone)"),
) + (
    Arg("venue", N_("The venue name"), type="string", required=True, check=NONEMPTY, location="body"),
    _body("description", N_("The venue description")),
    Arg("status", N_("The venue post status"), type="string", check=POST_STATUS, location="body"),
    # The original types these as strings and answers a JSON boolean with a 400; we accept both.
    _body("show_map", N_("Whether events linked to the venue should show a map or not"), check=BOOLEAN_LIKE),
    _body("show_map_link", N_("Whether events linked to the venue should show a map link or not"),
          check=BOOLEAN_LIKE),
    _body("address", N_("The venue address")),
    _body("city", N_("The venue city")),
    _body("country", N_("The venue country")),
    _body("province", N_("The venue province")),
    _body("state", N_("The venue state")),
    _body("zip", N_("The venue ZIP code")),
    _body("phone", N_("The venue phone number")),
    _body("stateprovince", N_("The venue state and province")),
    _body("website", N_("The venue website URL"), check=checks.URL_OR_EMPTY),
    _body("image", N_("The venue featured image ID or URL"), check=checks.IMAGE),
)

ORGANIZER_CREATE_ARGS = _post_meta_args(
    N_("The organizer author ID"), N_("The organizer publication date"),
    N_("The organizer publication date (UTC time zone)"),
) + (
    Arg("organizer", N_("The organizer name"), type="string", required=True, check=NONEMPTY, location="body"),
    _body("description", N_("The organizer description")),
    Arg("status", N_("The organizer post status"), type="string", check=POST_STATUS, location="body"),
    _body("phone", N_("The organizer phone number")),
    _body("website", N_("The organizer website"), check=checks.URL_OR_EMPTY),
    _body("email", N_("The organizer e-mail address"), check=checks.EMAIL_OR_EMPTY),
    _body("image", N_("The organizer featured image ID or URL"), check=checks.IMAGE),
)


# An event's venue and organizer: ids, or new records checked as their own create routes check them.
LINKED_VENUE = checks.linked(VENUES, VENUE_CREATE_ARGS, "EventVenueInput")
LINKED_ORGANIZER = checks.linked(ORGANIZERS, ORGANIZER_CREATE_ARGS, "EventOrganizerInput")


EVENT_CREATE_ARGS = (
    Arg("author", N_("The event author ID"), type="integer", check=USER_ID, location="body"),
    Arg("date", N_("The event publication date"), type="string", check=DATE, location="body"),
    Arg("date_utc", N_("The event publication date (UTC time zone)"), type="string", check=DATE, location="body"),
    Arg("title", N_("The event title"), type="string", required=True, check=NONEMPTY, location="body"),
    Arg("description", N_("The event description"), type="string", check=NONEMPTY, location="body"),
    Arg("slug", N_("The event slug"), type="string", check=NONEMPTY, location="body"),
    Arg("excerpt", N_("The event excerpt"), type="string", check=NONEMPTY, location="body"),
    Arg("status", N_("The event post status"), type="string", check=POST_STATUS, location="body"),
    Arg("timezone", N_("The event time zone"), type="string", check=checks.TIMEZONE, location="body"),
    Arg("all_day", N_("Whether the event lasts the whole day or not"), type="boolean", default=False, location="body"),
    Arg("start_date", N_("The event start date and time"), type="string", required=True, check=DATE, location="body"),
    Arg("end_date", N_("The event end date and time"), type="string", required=True, check=DATE, location="body"),
    Arg("image", N_("The event featured image ID or URL"), type="string", check=checks.IMAGE, location="body"),
    Arg("cost", N_("The event cost"), check=checks.COST, location="body"),
    Arg("website", N_("The event website URL"), default=None, check=checks.URL_OR_EMPTY, location="body"),
    Arg("show_map", N_("Whether the event should show a map or not"), type="boolean", location="body"),
    Arg("show_map_link", N_("Whether the event should show a map link or not"), type="boolean", location="body"),
    Arg("hide_from_listings", N_("Whether events should be hidden in the calendar view or not"), type="boolean",
        location="body"),
    Arg("sticky", N_("Whether the event should be sticky in the calendar view or not"), type="boolean",
        location="body"),
    Arg("featured", N_("Whether the event should be featured on the site or not"), type="boolean", location="body"),
    Arg("categories", N_("The event category ID or name"), items="integer", default=None, check=checks.TERM_LIST,
        location="body"),
    Arg("tags", N_("The event tag ID or name"), items="integer", default=None, check=checks.TERM_LIST, location="body"),
    Arg("venue", N_("The event venue IDs or data"), items="integer", default=None, check=LINKED_VENUE,
        location="body"),
    Arg("organizer", N_("The event organizer IDs or data"), items="integer", default=None, check=LINKED_ORGANIZER,
        location="body"),
    # not in the original's route table (its Pro add-on has no REST writes of series)
    Arg("recurrence", N_("Makes the event a recurring series: RFC 5545 lines (RRULE, EXDATE, RDATE) as a list, or "
                         "separated by newlines; start_date and end_date are the first occurrence. An empty value "
                         "makes the series a single event again."),
        items="string", default=None, check=checks.RECURRENCE_LINES, location="body"),
)

# On an update or delete of an event: which occurrences of a series it changes.
RECURRENCE_SCOPE = Arg("recurrence_scope", N_("For a recurring event: this (only the occurrence the ID names), "
                                              "following (it and the later ones: the series is split in two) or "
                                              "all (the whole series). Default: this for an occurrence ID, all for "
                                              "the series ID."), type="string", check=checks.RECURRENCE_SCOPE)


def _linked_archive_args(per_page: str, search: str, event: str, has_events: str, upcoming: str,
                         status: str) -> tuple[Arg, ...]:
    return (
        PAGE,
        _per_page(per_page),
        Arg("search", search, type="string", check=NONEMPTY),
        Arg("event", event, type="integer", check=checks.EVENT_ID),
        Arg("has_events", has_events, check=BOOLEAN_LIKE),
        Arg("only_with_upcoming", upcoming, default=False, check=BOOLEAN_LIKE),
        _status_filter(status),
    )


def _term_archive_args(per_page: str, resource: Resource, with_parent: bool) -> tuple[Arg, ...]:
    listed = checks.terms(resource)
    args = [
        PAGE,
        _per_page(per_page),
        Arg("search", N_("Limit results to those matching a string"), type="string", check=NONEMPTY),
        Arg("exclude", N_("Ensure result set exclude specific IDs"), items="integer", check=listed),
        Arg("include", N_("Limit result set to specific IDs"), items="integer", check=listed),
        Arg("order", N_("Order sort attribute ascending or descending"), type="string", check=checks.ORDER),
        Arg("orderby", N_("Sort collection by term attribute"), type="string", check=checks.ORDERBY),
        Arg("hide_empty", N_("Whether to hide terms not assigned to any posts"), type="boolean", default="1"),
    ]
    if with_parent:
        args.append(Arg("parent", N_("Limit result set to terms assigned to a specific parent"), type="integer",
                        check=checks.CATEGORY_PARENT))
    args += [
        Arg("post", N_("Limit result set to terms assigned to a specific post"), type="integer", check=checks.EVENT_ID),
        Arg("event", N_('Limit result set to terms assigned to a specific event (an alias of the "post" parameter)'),
            type="integer", check=checks.EVENT_ID),
        Arg("slug", N_("Limit result set to terms with a specific slug"), type="string", check=NONEMPTY),
    ]
    return tuple(args)


def _term_create_args(name: str, description: str, slug: str, parent: str | None = None) -> tuple[Arg, ...]:
    args = [
        Arg("name", name, type="string", required=True, check=NONEMPTY, location="body"),
        Arg("description", description, type="string", check=NONEMPTY, location="body"),
        Arg("slug", slug, type="string", check=NONEMPTY, location="body"),
    ]
    if parent:
        args.append(Arg("parent", parent, type="integer", check=checks.CATEGORY_PARENT, location="body"))
    return tuple(args)


ARCHIVE_ARGS: dict[str, tuple[Arg, ...]] = {
    EVENTS.name: EVENT_ARCHIVE_ARGS,
    VENUES.name: _linked_archive_args(
        N_("The number of venues to return on each page"),
        N_("Venues should contain the specified string in the title, description or custom fields"),
        N_("Venues should be related to this event"),
        N_("Venues should have events associated to them"),
        N_("Venues should have upcoming events associated to them"),
        N_("The venue post status")),
    ORGANIZERS.name: _linked_archive_args(
        N_("The number of organizers to return on each page"),
        N_("Organizers should contain the specified string in the title, description or custom fields"),
        N_("Organizers should be related to this event"),
        N_("Organizers should have events associated to them"),
        N_("Organizers should have upcoming events associated to them"),
        N_("The organizer post status")),
    CATEGORIES.name: _term_archive_args(N_("The number of event categories to return on each page"), CATEGORIES,
                                           with_parent=True),
    TAGS.name: _term_archive_args(N_("The number of event tags to return on each page"), TAGS,
                                     with_parent=False),
}

CREATE_ARGS: dict[str, tuple[Arg, ...]] = {
    EVENTS.name: EVENT_CREATE_ARGS,
    VENUES.name: VENUE_CREATE_ARGS,
    ORGANIZERS.name: ORGANIZER_CREATE_ARGS,
    CATEGORIES.name: _term_create_args(N_("The event category name"), N_("The event category description"),
                                                N_("The event category slug"), N_("The event category parent ID")),
    TAGS.name: _term_create_args(N_("The event tag name"), N_("The event tag description"),
                                          N_("The event tag slug")),
}


# ``GET /events/{id}/occurrences``: the list's paging and date window (no default end: the horizon)
OCCURRENCE_ARGS = (
    PAGE,
    _per_page(N_("The number of events to return on each page")),
    _date("start_date", N_("Events that start on the specified date")),
    _date("end_date", N_("Events that end on the specified date")),
)

# Arguments every route takes besides its own (the index and /doc list them on every endpoint).
# An unknown language is not an error: it falls back to English (see i18n.choose).
LANGUAGE = Arg("i18n_language", N_("The language of the descriptions in the answer: one of nl, en, fr, de, it, "
                                   "pl, pt-pt, sl, es (any other value means English)"), type="string")
LANGUAGE_CODES = tuple(LANGUAGES)
COMMON_ARGS = (LANGUAGE,)


def archive_args(resource: Resource) -> tuple[Arg, ...]:
    return ARCHIVE_ARGS[resource.name]


def create_args(resource: Resource) -> tuple[Arg, ...]:
    return CREATE_ARGS[resource.name]


def update_args(resource: Resource) -> tuple[Arg, ...]:
    return tuple(a.optional() for a in CREATE_ARGS[resource.name])


for _resource in RESOURCES.values():
    # a create endpoint takes exactly the keys a client may write (one list of fields: the Resource)
    if {a.name for a in CREATE_ARGS[_resource.name]} != set(_resource.input_keys):
        raise RuntimeError(f"the {_resource.name} create arguments differ from the resource's input_keys")

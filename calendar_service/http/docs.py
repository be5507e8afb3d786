"""The namespace index and the OpenAPI document, both built from the route table.

Both walk the route table they are given (``routes.ROUTES``, which the dispatcher hands to
the discovery handlers, plus ``arguments.COMMON_ARGS``, which every route takes), so any
route in the table is described in both, with the same methods and arguments. The OpenAPI
schema of an argument comes from the check that validates it (``Check.schema``), so the
document says what the API really accepts; an Endpoint may name its success schema
(``Endpoint.response``), else one is chosen by operation and resource, else the response is
described without a body. Descriptions and summaries come in the request's language.
Built documents are cached per (table, base URL, language), the 8 most recent of each: they depend on nothing else.
"""
from __future__ import annotations

import functools
import re

from calendar_service.http.i18n import N_, gettext
from calendar_service.http.urls import Urls
from calendar_service.http.arguments import (COMMON_ARGS, ICAL, LANGUAGE_CODES, LINKED_ORGANIZER, LINKED_VENUE,
                                             NO_DEFAULT, Arg)
from calendar_service.http.checks import ID_SCHEMA
from calendar_service.http.namespace import NAMESPACE, WP_NAMESPACE
from calendar_service.http.routing import Endpoint, Route

INFO_DESCRIPTION = N_("The Events Calendar REST API allows accessing upcoming events information easily and "
                      "conveniently. This implementation stores its data in a git repository.")
TEC_DESCRIPTION = N_("The same events, venues and organizers are also served by the original's newer API, tec/v1, at "
                     "/calendar/tec/v1 (and at /wp-json/tec/v1 with CALENDAR_WP_COMPAT), with the same permissions, "
                     "ETags and commits: records are WordPress posts (title.rendered, content.rendered, an integer "
                     "author, venues and organizers embedded, term ids in tribe_events_cat and tags), lists are bare "
                     "arrays with the X-WP-Total, X-WP-TotalPages and Link headers, and writes take title, content, "
                     "venues, organizers, tribe_events_cat, featured_media, start_date_utc, end_date_utc and duration. "
                     "DELETE moves a record to the trash; with force=true it is deleted for good.")


def endpoint_args(endpoint: Endpoint) -> tuple[Arg, ...]:
    """Every argument ``endpoint`` takes: its own, then the common ones it does not redefine."""
    own = {a.name for a in endpoint.args}
    return endpoint.args + tuple(a for a in COMMON_ARGS if a.name not in own)


# ----------------------------------------------------------------------------- namespace index


def _arg_schema(arg: Arg, language: str, namespace: str = NAMESPACE) -> dict:
    """An argument as WordPress shows it in the index: JSON-schema keywords plus ``required``
    (the index route's ``namespace`` argument defaults to the namespace the request addressed)."""
    out: dict = {}
    if arg.default is not NO_DEFAULT:
        out["default"] = namespace if arg.default == NAMESPACE and arg.name == "namespace" else arg.default
    if arg.description:
        out["description"] = gettext(arg.description, language)
    if arg.type:
        out["type"] = arg.type
    if arg.format:
        out["format"] = arg.format
    if arg.items:
        out["items"] = {"type": arg.items}
    out["required"] = arg.required
    return out


def namespace_index(table: tuple[Route, ...], urls: Urls, language: str = "en") -> dict:
    """``GET /calendar/events/v1``: every route of ``table`` with its methods and arguments, as
    WordPress lists a namespace.

    Under the compat prefix the namespace is ``tribe/events/v1`` and the routes are named with it.
    The returned dict is shared by later calls with the same base URL and language: do not modify it.
    """
    return _namespace_index(table, urls.rest_base, urls.namespace, language)


@functools.lru_cache(maxsize=8)
def _namespace_index(table: tuple[Route, ...], rest_base: str, namespace: str, language: str) -> dict:
    routes = {}
    for route in table:
        key = f"/{namespace}{route.pattern}"
        entry = {
            "namespace": namespace,
            "methods": route.methods,
            "endpoints": [
                {"methods": list(e.methods),
                 "args": {a.name: _arg_schema(a, language, namespace) for a in endpoint_args(e)} or []}
                for e in route.endpoints
            ],
        }
        if "(?P<" not in route.pattern:
            entry["_links"] = {"self": [{"href": rest_base + route.pattern}]}
        routes[key] = entry
    site_root = rest_base[: -len(namespace)] if rest_base.endswith(namespace) else rest_base
    return {"namespace": namespace, "routes": routes, "_links": {"up": [{"href": site_root}]}}


def wp_index(tables: tuple, wp_routes: dict, language: str, site: dict) -> dict:
    """``GET /wp-json/`` (with ``CALENDAR_WP_COMPAT``): WordPress' discovery index, listing every
    namespace served under it and their routes as WordPress does: ``tables`` holds (route
    table, ``Urls``) pairs, ``wp_routes`` WordPress' own routes we answer (path: methods);
    ``site``: name, description, url, home, gmt_offset, timezone_string. Shared like
    ``namespace_index``'s answer."""
    return _wp_index(tuple((table, urls.rest_base, urls.namespace) for table, urls in tables),
                     tuple((path, tuple(methods)) for path, methods in wp_routes.items()), language,
                     tuple(site.items()))


@functools.lru_cache(maxsize=8)
def _wp_index(tables: tuple, wp_routes: tuple, language: str, site: tuple) -> dict:
    _table, rest_base, namespace = tables[0]
    root = rest_base[: -len(namespace)] if rest_base.endswith(namespace) else rest_base + "/"
    routes = {"/": {"namespace": "", "methods": ["GET"],
                    "endpoints": [{"methods": ["GET"], "args": {"context": {"default": "view", "required": False}}}],
                    "_links": {"self": [{"href": root}]}}}
    namespaces = []
    for table, base, name in tables:
        namespaces.append(name)
        routes.update(_namespace_index(table, base, name, language)["routes"])
    for path, methods in wp_routes:
        routes[path] = {"namespace": "wp/v2", "methods": list(methods),
                        "endpoints": [{"methods": list(methods), "args": {}}],
                        "_links": {"self": [{"href": root.rstrip("/") + path}]}}
    namespaces.append("wp/v2")
    return {**dict(site), "namespaces": namespaces, "authentication": [], "routes": routes,
            "_links": {"help": [{"href": "https://developer.wordpress.org/rest-api/"}]}}


# ----------------------------------------------------------------------------- /doc: components


_STRING = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}

SCHEMAS = {
    "ImageSize": {"type": "object", "properties": {"width": _INT, "height": _INT, "mime-type": _STRING,
                                                   "filesize": _INT, "url": _STRING}},
    "DateDetails": {"type": "object", "properties": {k: {"type": "string"} for k in
                                                     ("year", "month", "day", "hour", "minutes", "seconds")}},
    "CostDetails": {"type": "object", "properties": {
        "currency_symbol": _STRING, "currency_code": _STRING,
        "currency_position": {"type": "string", "enum": ["prefix", "postfix", ""]},
        "values": {"type": "array", "items": _STRING}}},
    "Image": {"type": "object", "properties": {
        "url": _STRING, "id": _INT, "extension": _STRING, "width": _INT, "height": _INT, "filesize": _INT,
        "sizes": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/ImageSize"}}}},
    "Term": {"type": "object", "properties": {
        "id": _INT, "count": _INT, "description": _STRING, "name": _STRING, "slug": _STRING, "taxonomy": _STRING,
        "parent": _INT, "meta": {"type": "array", "items": {}}, "url": _STRING,
        "urls": {"type": "object", "additionalProperties": _STRING}}},
    "Venue": {"type": "object", "properties": {
        "id": _INT, "author": _STRING, "status": _STRING, "date": _STRING, "date_utc": _STRING,
        "modified": _STRING, "modified_utc": _STRING, "url": _STRING, "venue": _STRING, "description": _STRING,
        "excerpt": _STRING, "slug": _STRING, "image": {"$ref": "#/components/schemas/Image"},
        **{k: _STRING for k in ("address", "city", "country", "province", "state", "zip", "phone", "website",
                                "stateprovince")},
        "geo_lat": {"type": "number"}, "geo_lng": {"type": "number"}, "show_map": _BOOL, "show_map_link": _BOOL,
        "global_id": _STRING, "global_id_lineage": {"type": "array", "items": _STRING}}},
    "Organizer": {"type": "object", "properties": {
        "id": _INT, "author": _STRING, "status": _STRING, "date": _STRING, "date_utc": _STRING,
        "modified": _STRING, "modified_utc": _STRING, "url": _STRING, "organizer": _STRING, "description": _STRING,
        "excerpt": _STRING, "slug": _STRING, "image": {"$ref": "#/components/schemas/Image"},
        "phone": _STRING, "website": _STRING, "email": _STRING,
        "global_id": _STRING, "global_id_lineage": {"type": "array", "items": _STRING}}},
}
SCHEMAS["Event"] = {"type": "object", "properties": {
    "id": _INT, "global_id": _STRING, "global_id_lineage": {"type": "array", "items": _STRING},
    "author": _STRING, "status": _STRING, "date": _STRING, "date_utc": _STRING, "modified": _STRING,
    "modified_utc": _STRING, "url": _STRING, "rest_url": _STRING, "title": _STRING, "description": _STRING,
    "excerpt": _STRING, "slug": _STRING, "image": {"oneOf": [{"$ref": "#/components/schemas/Image"}, _BOOL]},
    "all_day": _BOOL,
    **{k: _STRING for k in ("start_date", "end_date", "utc_start_date", "utc_end_date")},
    **{f"{k}_details": {"$ref": "#/components/schemas/DateDetails"}
       for k in ("start_date", "end_date", "utc_start_date", "utc_end_date")},
    "timezone": _STRING, "timezone_abbr": _STRING, "cost": _STRING,
    "cost_details": {"$ref": "#/components/schemas/CostDetails"}, "website": _STRING,
    **{k: _BOOL for k in ("show_map", "show_map_link", "hide_from_listings", "sticky", "featured")},
    "categories": {"type": "array", "items": {"$ref": "#/components/schemas/Term"}},
    "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Term"}},
    "venue": {"oneOf": [{"$ref": "#/components/schemas/Venue"},
                        {"type": "array", "items": {"$ref": "#/components/schemas/Venue"}}]},
    "organizer": {"type": "array", "items": {"$ref": "#/components/schemas/Organizer"}},
    "custom_fields": {"oneOf": [{"type": "object"}, {"type": "array", "items": {}}]},
    # recurring events (not in the original's answers: its Pro add-on has no such fields)
    "post_parent": {**_INT, "description": N_(
        "For an occurrence of a recurring event: the ID of its series. The first occurrence is served under "
        "the series ID and has no post_parent")},
    "recurrence": {"type": "object", "description": N_(
        "A recurring event's series as its file holds it: on the single read of the series ID and on the "
        "answers of writes to it"), "properties": {
        "rules": {"type": "array", "items": _STRING, "description": N_(
            "The RFC 5545 lines of the series (RRULE, EXDATE, RDATE), as written")},
        "exceptions": {"type": "object", "additionalProperties": {"type": "object"}, "description": N_(
            "The occurrences that differ from the series, by original local start (YYYY-MM-DD HH:MM:SS, or "
            "YYYY-MM-DD for an all-day series): the fields each one overrides")},
        "occurrences": {**_STRING, "description": N_(
            "The URL of the list of the series' occurrences")}}},
    "json_ld": {"type": "object"}}}

SCHEMAS["Error"] = {"type": "object", "required": ["code", "message", "data"], "properties": {
    "code": _STRING, "message": _STRING,
    "data": {"type": "object", "required": ["status"], "properties": {"status": _INT}}}}
SCHEMAS["NamespaceIndex"] = {"type": "object", "required": ["namespace", "routes", "_links"], "properties": {
    "namespace": _STRING, "routes": {"type": "object", "additionalProperties": {"type": "object"}},
    "_links": {"type": "object"}}}

_ITEM_SCHEMA = {"events": "Event", "venues": "Venue", "organizers": "Organizer", "categories": "Term", "tags": "Term"}
_LIST_SCHEMA = {"events": "EventList", "venues": "VenueList", "organizers": "OrganizerList",
                "categories": "CategoryList", "tags": "TagList"}
for _name, _list in _LIST_SCHEMA.items():
    SCHEMAS[_list] = {"type": "object", "required": [_name, "rest_url", "total", "total_pages"], "properties": {
        _name: {"type": "array", "items": {"$ref": f"#/components/schemas/{_ITEM_SCHEMA[_name]}"}},
        "rest_url": _STRING, "next_rest_url": _STRING, "previous_rest_url": _STRING,
        "total": _INT, "total_pages": _INT}}

SCHEMAS["RevisionList"] = {"type": "object", "required": ["revisions"], "properties": {
    "revisions": {"type": "array", "items": {"type": "object", "required": ["commit", "author", "date", "message"],
                                             "properties": {
        "commit": _STRING, "date": _STRING, "message": _STRING,
        "parents": {"type": "array", "items": _STRING},
        "author": {"type": "object", "properties": {"name": _STRING, "email": _STRING}}}}}}}
# without `since` only the token of now is returned
SCHEMAS["ChangeList"] = {"type": "object", "required": ["next_token"], "properties": {
    "changes": {"type": "array", "items": {"type": "object", "required": ["type", "id", "action"], "properties": {
        "type": _STRING, "id": _INT, "action": _STRING}}},
    "next_token": _STRING}}
SCHEMAS["GitHookResult"] = {"type": "object", "required": ["pulled", "head"], "properties": {
    "pulled": _BOOL, "head": {"type": "string", "nullable": True}, "moved": _BOOL, "pushed": _BOOL,
    "conflicts": {"type": "array", "items": _STRING}}}


# ----------------------------------------------------------------------------- /doc: arguments

def param_schema(arg: Arg) -> dict:
    """The OpenAPI schema of a path or query argument: from its check, else from its declared type."""
    if arg.check is not None:
        return dict(arg.check.schema)
    if arg.items:
        return {"type": "array", "items": {"type": arg.items}}
    if arg.type in ("integer", "boolean", "string"):
        return {"type": arg.type}
    if arg.format == "double":
        return {"type": "number", "format": "double"}
    return {"type": "string"}


def _body_schema(arg: Arg) -> dict:
    """A body field's schema: its check's for body fields when it has one (JSON bodies may also
    send booleans where words are accepted), else the parameter's; nullable unless required."""
    if arg.check is not None and arg.check.body_schema is not None:
        schema = dict(arg.check.body_schema)
    else:
        schema = param_schema(arg)
    if not arg.required:
        schema["nullable"] = True  # a null field counts as not given
    return schema


def _is_list(schema: dict) -> bool:
    """Whether ``schema`` allows an array (sent comma-separated: the checks read CSV, and a repeated
    form field would keep only its last value)."""
    return schema.get("type") == "array" or any(_is_list(s) for s in schema.get("anyOf", ()))


for _linked in (LINKED_VENUE, LINKED_ORGANIZER):  # a new venue or organizer in an event payload
    SCHEMAS[_linked.component] = {"type": "object", "properties": {
        "id": ID_SCHEMA, **{a.name: _body_schema(a) for a in _linked.args}}}


# ----------------------------------------------------------------------------- /doc: operations

# Summaries of operations, by operation name (``Endpoint.name``), then by resource; "by-slug" entries for slug routes.
SUMMARIES = {
    "index": N_("Describe the routes of this namespace"),
    "doc": N_("Get the OpenAPI document of this API"),
    ("archive", "events"): N_("List events"),
    ("archive", "venues"): N_("List venues"),
    ("archive", "organizers"): N_("List organizers"),
    ("archive", "categories"): N_("List event categories"),
    ("archive", "tags"): N_("List event tags"),
    ("create", "events"): N_("Create an event"),
    ("create", "venues"): N_("Create a venue"),
    ("create", "organizers"): N_("Create an organizer"),
    ("create", "categories"): N_("Create an event category"),
    ("create", "tags"): N_("Create an event tag"),
    ("single", "events"): N_("Get an event by ID"),
    ("single", "venues"): N_("Get a venue by ID"),
    ("single", "organizers"): N_("Get an organizer by ID"),
    ("single", "categories"): N_("Get an event category by ID"),
    ("single", "tags"): N_("Get an event tag by ID"),
    ("update", "events"): N_("Update an event by ID"),
    ("update", "venues"): N_("Update a venue by ID"),
    ("update", "organizers"): N_("Update an organizer by ID"),
    ("update", "categories"): N_("Update an event category by ID"),
    ("update", "tags"): N_("Update an event tag by ID"),
    ("delete", "events"): N_("Delete an event by ID (moves it to the trash)"),
    ("delete", "venues"): N_("Delete a venue by ID (moves it to the trash)"),
    ("delete", "organizers"): N_("Delete an organizer by ID (moves it to the trash)"),
    ("delete", "categories"): N_("Delete an event category by ID"),
    ("delete", "tags"): N_("Delete an event tag by ID"),
    ("single", "events", "by-slug"): N_("Get an event by slug"),
    ("single", "venues", "by-slug"): N_("Get a venue by slug"),
    ("single", "organizers", "by-slug"): N_("Get an organizer by slug"),
    ("update", "events", "by-slug"): N_("Update an event by slug"),
    ("update", "venues", "by-slug"): N_("Update a venue by slug"),
    ("update", "organizers", "by-slug"): N_("Update an organizer by slug"),
    ("delete", "events", "by-slug"): N_("Delete an event by slug (moves it to the trash)"),
    ("delete", "venues", "by-slug"): N_("Delete a venue by slug (moves it to the trash)"),
    ("delete", "organizers", "by-slug"): N_("Delete an organizer by slug (moves it to the trash)"),
}


def summary_of(route: Route, endpoint: Endpoint) -> str:
    """The English summary of ``endpoint`` on ``route``: its own, else from SUMMARIES, else ""."""
    if endpoint.summary:
        return endpoint.summary
    name = route.resource.name if route.resource else None
    keys = [(endpoint.name, name, "by-slug")] if "/by-slug/" in route.pattern else []
    keys += [(endpoint.name, name), endpoint.name]
    return next((SUMMARIES[k] for k in keys if k in SUMMARIES), "")


_OK = {
    "archive": N_("A page of records, with links to the next and previous pages"),
    "single": N_("The record"),
    "create": N_("The record created"),
    "update": N_("The record after the update"),
    "delete": N_("The record deleted (events, venues and organizers are moved to the trash)"),
    "index": N_("The routes of this namespace, their methods and arguments"),
    "doc": N_("This document"),
    "revision": N_("The record as it was at that commit"),
    # by the name of the success schema
    "RevisionList": N_("The commits that changed the record, newest first"),
    "ChangeList": N_("The records changed since the token, and the token to ask with next time"),
    "GitHookResult": N_("Whether the remote was pulled, the branch head after it, and what the pull did"),
}
_GENERIC_OK = N_("Success")
_ERRORS = {
    "400": N_("A required parameter is missing or a parameter is not valid"),
    "401": N_("Wrong credentials, or the request needs a signed-in user"),
    "403": N_("The signed-in user may not do this"),
    "404": N_("There is no such record or page"),
    "409": N_("The write conflicts with the repository as it is now; nothing was changed"),
    "410": N_("The record is already in the trash"),
    "413": N_("The request body is too large"),
    "4XX": N_("Any client error, in the same envelope"),
}
_ERRORS_OF = {
    "archive": ("400", "401", "404"),
    "single": ("400", "401", "403", "404"),
    "create": ("400", "401", "403", "409", "413"),
    "update": ("400", "401", "403", "404", "409", "413"),
    "delete": ("400", "401", "403", "404", "409", "410"),
}


def _success_schema(route: Route, endpoint: Endpoint) -> dict | None:
    """The schema of the success body: the endpoint's own, else by operation and resource, else None."""
    if endpoint.response:
        return {"$ref": f"#/components/schemas/{endpoint.response}"} if endpoint.response in SCHEMAS else None
    name = route.resource.name if route.resource else None
    if endpoint.name == "archive" and name in _LIST_SCHEMA:
        return {"$ref": f"#/components/schemas/{_LIST_SCHEMA[name]}"}
    if endpoint.name in ("single", "create", "update", "delete") and name in _ITEM_SCHEMA:
        return {"$ref": f"#/components/schemas/{_ITEM_SCHEMA[name]}"}
    if endpoint.name == "index":
        return {"$ref": "#/components/schemas/NamespaceIndex"}
    if endpoint.name == "doc":
        return {"type": "object"}
    return None


def _responses(route: Route, endpoint: Endpoint, language: str) -> dict:
    def error(code):
        return {"description": gettext(_ERRORS[code], language),
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}

    ok = {"description": gettext(_OK.get(endpoint.response) or _OK.get(endpoint.name, _GENERIC_OK), language)}
    schema = _success_schema(route, endpoint)
    if schema is not None:
        ok["content"] = {"application/json": {"schema": schema}}
        if ICAL in endpoint.args:  # ?ical=1 or an Accept header preferring it (see ical.py)
            ok["content"]["text/calendar"] = {"schema": {"type": "string"}}
    responses = {"201" if endpoint.name == "create" else "200": ok}
    for code in _ERRORS_OF.get(endpoint.name, ("400", "401")):
        responses[code] = error(code)
    responses["4XX"] = error("4XX")
    return responses


def _parameter(arg: Arg, language: str) -> dict:
    schema = param_schema(arg)
    out = {"name": arg.name, "in": arg.location,
           "description": gettext(arg.description, language) or "No description provided",
           "required": True if arg.location == "path" else arg.required, "schema": schema}
    if _is_list(schema):
        out.update(style="form", explode=False)  # comma-separated, as the checks read them
    if arg is COMMON_ARGS[0]:
        out["example"] = LANGUAGE_CODES[0]
    return out


def _request_body(args: list[Arg], name: str, bodies: dict, language: str) -> dict:
    """A request body (JSON or form) whose schema is stored once in ``bodies`` under ``name``."""
    properties = {a.name: {"description": gettext(a.description, language), **_body_schema(a)} for a in args}
    required = [a.name for a in args if a.required]
    bodies[name] = {"type": "object", "properties": properties, **({"required": required} if required else {})}
    ref = {"$ref": f"#/components/schemas/{name}"}
    encoding = {key: {"style": "form", "explode": False} for key, p in properties.items() if _is_list(p)}
    return {"content": {
        "application/json": {"schema": ref},
        "application/x-www-form-urlencoded": {"schema": ref, **({"encoding": encoding} if encoding else {})}}}


def _operation(route: Route, endpoint: Endpoint, method: str, bodies: dict, language: str) -> dict:
    args = endpoint_args(endpoint)
    body_args = [a for a in args if a.location == "body"]
    in_url = [a for a in args if a.location == "path"] + [a for a in args if a.location == "query"]
    operation: dict = {}
    summary = summary_of(route, endpoint)
    # a route without a summary of its own still gets one (method and path are the same in every language)
    operation["summary"] = gettext(summary, language) if summary else f"{method} {route.doc_path}"
    operation["operationId"] = method.lower() + re.sub(r"\W+", "_", route.doc_path).rstrip("_")
    operation["tags"] = [route.resource.name if route.resource else NAMESPACE]
    operation["parameters"] = [_parameter(a, language) for a in in_url]
    if body_args and method in ("POST", "PUT", "PATCH"):
        name = re.sub(r"[\W_]+", "_", f"{route.doc_path}_{endpoint.name}").strip("_") + "_body"
        operation["requestBody"] = _request_body(body_args, name, bodies, language)
    operation["responses"] = _responses(route, endpoint, language)
    return operation


SERVER_TEXT = {
    NAMESPACE: N_("The API under this service's own URL prefix."),
    WP_NAMESPACE: N_("The same API under the URL space of The Events Calendar for WordPress, for its existing "
                     "clients (served when CALENDAR_WP_COMPAT is on; WordPress' discovery index is /wp-json/)."),
}


def openapi(table: tuple[Route, ...], urls: Urls, language: str = "en", others: tuple[str, ...] = ()) -> dict:
    """``GET /doc``: an OpenAPI 3.0 description of every route of ``table``, in ``language``.

    ``servers[0]`` is the request's base; ``others`` are the bases of the same API under the
    other prefix (with ``CALENDAR_WP_COMPAT``), listed after it, each server then described.
    The returned dict is shared by later calls with the same arguments: do not modify it.
    """
    return _openapi(table, urls.rest_base, language, tuple(others))


def _translated(schema, language: str):
    """A copy of ``schema`` (components) with every ``description`` in ``language``."""
    if isinstance(schema, dict):
        return {k: gettext(v, language) if k == "description" and isinstance(v, str) else _translated(v, language)
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_translated(item, language) for item in schema]
    return schema


def schema_descriptions(schema=None) -> list[str]:
    """Every ``description`` text of the response schemas (``SCHEMAS``), in English."""
    schema = SCHEMAS if schema is None else schema
    if isinstance(schema, dict):
        return [v for k, v in schema.items() if k == "description" and isinstance(v, str)] + [
            text for k, v in schema.items() if k != "description" for text in schema_descriptions(v)]
    if isinstance(schema, list):
        return [text for item in schema for text in schema_descriptions(item)]
    return []


def _servers(rest_base: str, others: tuple[str, ...], language: str) -> list[dict]:
    servers = [{"url": base + "/"} for base in (rest_base, *others)]
    if others:
        for server in servers:
            kind = WP_NAMESPACE if server["url"].endswith(f"/{WP_NAMESPACE}/") else NAMESPACE
            server["description"] = gettext(SERVER_TEXT[kind], language)
    return servers


@functools.lru_cache(maxsize=8)
def _openapi(table: tuple[Route, ...], rest_base: str, language: str, others: tuple[str, ...] = ()) -> dict:
    paths: dict = {}
    bodies: dict = {}
    for route in table:
        operations = paths.setdefault(route.doc_path, {})
        for endpoint in route.endpoints:
            for method in endpoint.methods:
                operations[method.lower()] = _operation(route, endpoint, method, bodies, language)
    return {
        "openapi": "3.0.0",  # as the original; Swagger UI 4 reads 3.0, not 3.1
        "info": {"version": "1.0.0", "title": "The Events Calendar REST API",
                 "description": gettext(INFO_DESCRIPTION, language)},
        "components": {"schemas": {**_translated(SCHEMAS, language), **bodies}},
        "servers": _servers(rest_base, others, language),
        "paths": paths,
        # the newer API over the same records (see ``tec``), described where every /doc reader finds it
        "tags": [{"name": "tec/v1", "description": gettext(TEC_DESCRIPTION, language)}],
    }

"""The namespace index and the OpenAPI document, both built from the route table."""
from __future__ import annotations

from .presenters import Urls
from .resources import NO_DEFAULT, Arg
from .routes import NAMESPACE, ROUTES


def _arg_schema(arg: Arg) -> dict:
    """An argument as WordPress shows it in the index: JSON-schema keywords plus ``required``."""
    out: dict = {}
    if arg.default is not NO_DEFAULT:
        out["default"] = arg.default
    if arg.description:
        out["description"] = arg.description
    if arg.type:
        out["type"] = arg.type
    if arg.format:
        out["format"] = arg.format
    if arg.items:
        out["items"] = {"type": arg.items}
    out["required"] = arg.required
    return out


def namespace_index(urls: Urls) -> dict:
    """``GET /calendar/events/v1``: every route with its methods and arguments (BEHAVIOR.md 14)."""
    routes = {}
    for route in ROUTES:
        key = f"/{NAMESPACE}{route.pattern}"
        entry = {
            "namespace": NAMESPACE,
            "methods": route.methods,
            "endpoints": [
                {"methods": list(e.methods),
                 "args": {a.name: _arg_schema(a) for a in e.args} if e.args else []}
                for e in route.endpoints
            ],
        }
        if "(?P<" not in route.pattern:
            entry["_links"] = {"self": [{"href": urls.rest_base + route.pattern}]}
        routes[key] = entry
    site_root = urls.rest_base[: -len(NAMESPACE)] if urls.rest_base.endswith(NAMESPACE) else urls.rest_base
    return {"namespace": NAMESPACE, "routes": routes, "_links": {"up": [{"href": site_root}]}}


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
    "json_ld": {"type": "object"}}}

_SCHEMA_OF = {"events": "Event", "venues": "Venue", "organizers": "Organizer", "categories": "Term", "tags": "Term"}
_ERROR = {"description": "An error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
SCHEMAS["Error"] = {"type": "object", "properties": {"code": _STRING, "message": _STRING,
                                                    "data": {"type": "object", "properties": {"status": _INT}}}}


def _param_schema(arg: Arg) -> dict:
    if arg.items:
        return {"type": "array", "items": {"type": arg.items}}
    if arg.type in ("integer", "boolean", "string"):
        return {"type": arg.type}
    if arg.format == "double":
        return {"type": "number", "format": "double"}
    return {"type": "string"}


def openapi(urls: Urls) -> dict:
    """``GET /doc``: an OpenAPI 3 description of every route (BEHAVIOR.md 13)."""
    paths: dict = {}
    for route in ROUTES:
        if route.pattern == "":
            continue
        operations = {}
        schema_name = _SCHEMA_OF.get(route.resource.name) if route.resource else None
        for endpoint in route.endpoints:
            path_args = [a for a in endpoint.args if a.location == "path"]
            body_args = [a for a in endpoint.args if a.location == "body"]
            query_args = [a for a in endpoint.args if a.location == "query"]
            parameters = [{"name": a.name, "in": a.location, "description": a.description or "No description provided",
                           "required": True if a.location == "path" else a.required, "schema": _param_schema(a),
                           **({"style": "form", "explode": False} if a.items else {})}
                          for a in path_args + query_args]
            if endpoint.handler == "doc":
                ok = {"description": "The OpenAPI document of this API"}
            elif endpoint.handler == "git_hook":
                ok = {"description": "The pull's outcome: {pulled, head, moved, pushed, conflicts}"}
            elif endpoint.handler == "archive":
                ok = {"description": f"A page of {route.resource.name}",
                      "content": {"application/json": {"schema": {"type": "object", "properties": {
                          route.resource.name: {"type": "array", "items": {"$ref": f"#/components/schemas/{schema_name}"}},
                          "rest_url": _STRING, "next_rest_url": _STRING, "previous_rest_url": _STRING,
                          "total": _INT, "total_pages": _INT}}}}}
            else:
                ok = {"description": f"The {route.resource.singular}",
                      "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}}}
            responses = {"201" if endpoint.handler == "create" else "200": ok}
            if endpoint.handler != "doc":
                responses.update({"400": _ERROR, "401": _ERROR, "403": _ERROR, "404": _ERROR})
            if endpoint.handler == "delete":
                responses["410"] = _ERROR
            operation = {"responses": responses}
            if parameters:
                operation["parameters"] = parameters
            if body_args:
                properties = {a.name: {"description": a.description, **_param_schema(a)} for a in body_args}
                required = [a.name for a in body_args if a.required]
                body_schema = {"type": "object", "properties": properties, **({"required": required} if required else {})}
                operation["requestBody"] = {"content": {
                    "application/json": {"schema": body_schema},
                    "application/x-www-form-urlencoded": {"schema": body_schema}}}
            for method in endpoint.methods:
                operations[method.lower()] = operation
        paths[route.doc_path] = operations
    return {
        "openapi": "3.0.0",
        "info": {"version": "1.0.0", "title": "The Events Calendar REST API",
                 "description": "The Events Calendar REST API allows accessing upcoming events information easily "
                                "and conveniently. This implementation stores its data in a git repository."},
        "components": {"schemas": SCHEMAS},
        "servers": [{"url": urls.rest_base + "/"}],
        "paths": paths,
    }

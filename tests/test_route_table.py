"""The route table is whole before any request reaches it: every endpoint names a handler
function that takes the request's Call, and every argument's check carries a validator and
the OpenAPI schema /doc shows for it (a handler or check named wrongly would otherwise fail
only when a request used that route)."""
from __future__ import annotations

import inspect

from calendar_service.http import docs
from calendar_service.http.arguments import COMMON_ARGS
from calendar_service.http.checks import Check, LinkedCheck
from calendar_service.http.routes import ROUTES

SCHEMA_KEYS = {"type", "anyOf", "$ref"}  # an OpenAPI schema says what it is in one of these


def _where(route, endpoint) -> str:
    return f"{'/'.join(endpoint.methods)} {route.pattern or '/'}"


def _arguments():
    """(where, Arg) for every argument of every endpoint, the common ones, and the fields of the
    objects a linked check takes (a new venue or organizer in an event payload)."""
    found = [(_where(route, endpoint), arg) for route in ROUTES for endpoint in route.endpoints
             for arg in endpoint.args]
    found += [("every route", arg) for arg in COMMON_ARGS]
    seen = set()
    for where, arg in found:  # grows while linked checks add their fields
        if isinstance(arg.check, LinkedCheck) and id(arg.check) not in seen:
            seen.add(id(arg.check))
            found += [(f"{where}: {arg.name}[]", nested) for nested in arg.check.args]
    return found


def _refs(schema):
    if isinstance(schema, dict):
        return [ref for key, value in schema.items() for ref in ([value] if key == "$ref" else _refs(value))]
    if isinstance(schema, list):
        return [ref for item in schema for ref in _refs(item)]
    return []


def test_every_endpoint_names_a_handler_function_taking_the_call():
    assert len(ROUTES) >= 15
    for route in ROUTES:
        for endpoint in route.endpoints:
            where = _where(route, endpoint)
            handler = endpoint.handler
            assert inspect.isfunction(handler), (where, handler)
            inspect.signature(handler).bind(None)  # raises TypeError unless it takes one argument (the Call)
            assert handler.__module__.startswith("calendar_service.http.handlers."), (where, handler.__module__)
            # /doc names the operation after its handler (summaries, request body schemas)
            assert handler.__name__.startswith("handle_") and endpoint.name.isidentifier(), (where, handler.__name__)


def test_every_argument_check_has_a_validator_and_a_schema():
    arguments = _arguments()
    checked = [(where, arg) for where, arg in arguments if arg.check is not None]
    assert len(checked) >= 100 and any(isinstance(arg.check, LinkedCheck) for _, arg in checked)
    for where, arg in checked:
        check = arg.check
        assert isinstance(check, Check), (where, arg.name, check)
        inspect.signature(check.validate).bind(None, None, None)  # (value, ctx, arg)
        for schema in (check.schema, check.body_schema or check.schema):
            assert isinstance(schema, dict) and SCHEMA_KEYS & set(schema), (where, arg.name, schema)
            for ref in _refs(schema):  # a schema it names is one /doc holds
                assert ref.startswith("#/components/schemas/"), (where, arg.name, ref)
                assert ref.rsplit("/", 1)[-1] in docs.SCHEMAS, (where, arg.name, ref)



def test_every_endpoint_has_a_summary_for_the_doc():
    # summaries are looked up by operation name and resource: a new endpoint without one would
    # show an empty summary in /doc rather than fail
    missing = [_where(route, endpoint) for route in ROUTES for endpoint in route.endpoints
               if not docs.summary_of(route, endpoint)]
    assert not missing, missing

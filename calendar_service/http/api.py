"""HTTP: the blueprint that hands every request under the namespace to the pipeline.

The pipeline is ``dispatch.py``; the handlers are in ``handlers/``. The app factory registers
``bp``, which also puts the matched route's methods in the ``Allow`` header of every answer.
"""
from __future__ import annotations

from flask import Blueprint, g
from werkzeug.routing import PathConverter

from calendar_service.http import dispatch as pipeline
from calendar_service.http import ical_fold
from calendar_service.http.call import json_response
from calendar_service.http.dispatch import ALL_METHODS
from calendar_service.http.namespace import PREFIX, TEC_PREFIX
from calendar_service.http import prefix

__all__ = ["bp", "json_response"]

bp = Blueprint("calendar", __name__)


class AnyPath(PathConverter):
    """Werkzeug's ``path`` converter, but also across line breaks: ``/events/by-slug/abc%0A``
    reaches the route table (whose ``[^/]+`` takes it, as WordPress' does) and gets the slug's
    400, not a 404 for a path no route could match."""

    regex = "[^/](?s:.)*?"


@bp.record_once
def _register_converter(state):
    state.app.url_map.converters["anypath"] = AnyPath


@bp.record_once
def _install_library_changes(state):
    """The web app's one change to a library, made when the app is built (``create_app`` registers
    this blueprint), not when a module is imported: icalendar's line folding (``ical_fold``;
    checked against the icalendar it was written for, installed once per process)."""
    ical_fold.install()


@bp.route(PREFIX, defaults={"rest": ""}, methods=ALL_METHODS, strict_slashes=False)
@bp.route(PREFIX + "/<anypath:rest>", methods=ALL_METHODS)
def dispatch(rest: str):
    return pipeline.dispatch(rest)


@bp.route(TEC_PREFIX, defaults={"rest": ""}, methods=ALL_METHODS, strict_slashes=False)
@bp.route(TEC_PREFIX + "/<anypath:rest>", methods=ALL_METHODS)
def dispatch_tec(rest: str):
    """The original's newer API, ``tec/v1`` (see ``tec``), over the same pipeline."""
    from calendar_service.http.tec import TEC  # it builds on the v1 route table
    prefix.mark_native_tec()
    return pipeline.dispatch(rest, TEC)


@bp.after_app_request
def allow_header(response):
    """The methods of the route a request matched (``dispatch`` keeps them in ``g``), on its
    answer and on its errors, unless the answer names them itself."""
    allow = getattr(g, "calendar_allow", None)
    if allow is not None and "Allow" not in response.headers:
        response.headers["Allow"] = allow
    return response

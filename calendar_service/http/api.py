"""HTTP: the blueprint that hands every request under the namespace to the pipeline.

The pipeline is ``dispatch.py``; the handlers are in ``handlers/``. ``bp`` and
``json_response`` are what the app factory imports from here.
"""
from __future__ import annotations

from flask import Blueprint

from calendar_service.http import dispatch as pipeline
from calendar_service.http.call import json_response
from calendar_service.http.dispatch import ALL_METHODS, PREFIX

__all__ = ["bp", "json_response"]

bp = Blueprint("calendar", __name__)


@bp.route(PREFIX, defaults={"rest": ""}, methods=ALL_METHODS, strict_slashes=False)
@bp.route(PREFIX + "/<path:rest>", methods=ALL_METHODS)
def dispatch(rest: str):
    return pipeline.dispatch(rest)

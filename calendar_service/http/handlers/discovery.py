"""The namespace index and the OpenAPI document."""
from __future__ import annotations

from calendar_service.http import docs
from calendar_service.http.call import Call


def handle_index(call: Call):
    return docs.namespace_index(call.urls, call.language), 200


def handle_doc(call: Call):
    return docs.openapi(call.urls, call.language), 200

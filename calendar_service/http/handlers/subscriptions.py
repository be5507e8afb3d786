"""Webhook subscriptions: create, list, read, change, delete, and their delivery log."""
from __future__ import annotations

import math

from calendar_service.http.call import Call
from calendar_service.service.webhooks import Webhooks

MAX_PER_PAGE = 50


def _filter(args: dict, base: dict | None = None) -> dict:
    found = dict(base or {})
    for key in ("types", "categories", "tags"):
        if key in args:
            found[key] = list(args[key])
    return found


def _paged(call: Call, items: list, total: int, key: str):
    per_page = min(call.args["per_page"], MAX_PER_PAGE)
    call.headers["X-TEC-Total"] = str(total)
    call.headers["X-TEC-TotalPages"] = str(math.ceil(total / per_page) if total else 0)
    return {key: items, "total": total, "total_pages": math.ceil(total / per_page) if total else 0}, 200


def _hooks(call: Call) -> Webhooks:
    return call.service.webhooks


def handle_subscriptions(call: Call):
    per_page = min(call.args["per_page"], MAX_PER_PAGE)
    items, total = _hooks(call).list(call.user, call.args["page"], per_page)
    return _paged(call, items, total, "subscriptions")


def handle_subscribe(call: Call):
    view, secret = _hooks(call).create(call.user, call.args["url"], _filter(call.args))
    return {**view, "secret": secret}, 201


def handle_subscription(call: Call):
    return _hooks(call).get(call.user, call.args["id"]), 200


def handle_update_subscription(call: Call):
    hooks = _hooks(call)
    values = {k: call.args[k] for k in ("url", "enabled") if k in call.args}
    if any(k in call.args for k in ("types", "categories", "tags")):
        current = hooks.get(call.user, call.args["id"])
        base = {"types": current["types"], "categories": current["categories"], "tags": current["tags"]}
        values["filter"] = _filter(call.args, base)
    return hooks.update(call.user, call.args["id"], values), 200


def handle_unsubscribe(call: Call):
    return {"deleted": True, "previous": _hooks(call).delete(call.user, call.args["id"])}, 200


def handle_deliveries(call: Call):
    per_page = min(call.args["per_page"], MAX_PER_PAGE)
    items, total = _hooks(call).deliveries(call.user, call.args["id"], call.args["page"], per_page)
    return _paged(call, items, total, "deliveries")

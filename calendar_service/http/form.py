"""Form and query parameters as WordPress (PHP) gathers them: bracketed names
(``venue[venue]=X``, ``organizer[0][organizer]=A``, ``status[]=draft``) build nested values."""
from __future__ import annotations

import re

from calendar_service.http.params import MAX_DEPTH, Invalid


def php_nested(pairs) -> dict:
    """Build nested values from ``name[key][]=value`` pairs as PHP does.

    Raises Invalid when nesting is deeper than MAX_DEPTH.
    """
    out: dict = {}
    for name, value in pairs:
        match = re.match(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$", name)
        if not match:
            out[name] = value
            continue
        base, rest = match.groups()
        keys = re.findall(r"\[([^\[\]]*)\]", rest)
        if len(keys) > MAX_DEPTH:
            raise Invalid("Parameters are nested too deeply.")
        if not keys:
            out[base] = value
            continue
        node = out
        path = [base] + keys
        for i, key in enumerate(path[:-1]):
            nxt_key = path[i + 1]
            container = node.get(key) if isinstance(node, dict) else None
            if not isinstance(container, (dict, list)):
                container = [] if nxt_key == "" else {}
                _assign(node, key, container)
            node = container
        _assign(node, path[-1], value)
    return {k: _listify(v) for k, v in out.items()}


def _assign(node, key, value) -> None:
    """Put ``value`` under ``key`` of a PHP array: appended to a list (PHP's ``[]``, and any key
    once the array is a list), the next number for an empty key of a map."""
    if isinstance(node, list):
        node.append(value)
    else:
        node[key if key != "" else str(len(node))] = value


def _listify(value):
    """PHP arrays with keys 0..n-1 become lists."""
    if isinstance(value, dict):
        value = {k: _listify(v) for k, v in value.items()}
        if value and all(k.isdigit() for k in value) and sorted(int(k) for k in value) == list(range(len(value))):
            return [value[str(i)] for i in range(len(value))]
        return value
    if isinstance(value, list):
        return [_listify(v) for v in value]
    return value

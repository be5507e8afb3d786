"""The ``recurrence`` and ``exceptions`` of an event file checked for the loader and ``validate``:
each problem of the series (``recurrence_problems``) located at the line of the list item or
exception key it is about, so an editor reads ``path:line: message`` like for any other field."""
from __future__ import annotations

from datetime import timezone

import yaml

from calendar_service.domain import dates
from calendar_service.domain.recurrence.series import recurrence_problems

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


def problems(data: dict, text: str, line_of, front_matter: str, lead: int) -> list[tuple[int, str, str]]:
    """(line, message, severity) for each problem of an event's series (none for a single event):
    "error" makes the file unservable, "warning" (an exception whose occurrence the series does
    not have) is served without that exception.

    ``line_of(key)`` is the line of a top-level key; ``front_matter`` the file's YAML and ``lead``
    the lines before it. The zone is the file's (UTC when it names none: the loader knows no
    site zone). Messages quote the field (``'recurrence' item 2: ...``)."""
    if data.get("recurrence") in (None, [], ""):
        if data.get("exceptions"):
            return [(line_of("exceptions"), "'exceptions' needs 'recurrence': only a recurring event has exceptions",
                     "error")]
        return []
    tz = dates.zone(data.get("timezone"), timezone.utc)
    found = recurrence_problems(data["recurrence"], data.get("exceptions"), data.get("start_date"),
                                data.get("end_date"), tz, bool(data.get("all_day")))
    if not found:
        return []
    nodes = _top_nodes(front_matter)
    out = []
    for problem in found:
        line, where = line_of(problem.field), ""
        node = nodes.get(problem.field)
        if isinstance(problem.index, int):
            where = f" item {problem.index + 1}"
            if isinstance(node, yaml.SequenceNode) and problem.index < len(node.value):
                line = node.value[problem.index].start_mark.line + 1 + lead
        elif problem.index is not None:
            where = f" {problem.index!r}"
            if isinstance(node, yaml.MappingNode):
                for key_node, _ in node.value:
                    if _same_key(key_node.value, problem.index):
                        line = key_node.start_mark.line + 1 + lead
                        break
        out.append((line, f"'{problem.field}'{where}: {problem.message}", problem.severity))
    return out


def _same_key(written, label: str) -> bool:
    """Whether an exception key as written in YAML is the key a SeriesProblem names (its ``str``)."""
    text = str(written).strip()
    return text == label or text.replace("T", " ", 1) == label or label.startswith(text + " ")


def _top_nodes(front_matter: str) -> dict:
    """The YAML nodes of the front matter's top-level values, by key (empty when unreadable)."""
    try:
        root = yaml.compose(front_matter, Loader=_Loader)
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    return {str(key.value): value for key, value in root.value}

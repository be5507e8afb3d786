"""The JSON text of a listed occurrence of a recurring series, from its series' template.

Occurrences of one series share everything but their ids and dates (an occurrence whose
exception changes more than its times is ``special`` and built whole). Building each one
whole (its embedded venues, organizers and terms, its texts, its encoding) was most of a
list's time with series; now the first occurrence of a series listed at a commit is built
whole and cut into a template (the JSON text of its shared keys, in the order of the event's
keys), and every other occurrence of the series at that commit is that text with its own
``id``, ``global_id``, ``global_id_lineage``, ``rest_url``, dates and ``post_parent`` put in.
The template is checked once when it is made: it must give back the text it was cut from.
"""
from __future__ import annotations

import json
from datetime import timezone

from calendar_service.domain import dates

# the date keys of an event (between ``all_day`` and ``cost``), as ``event_times`` gives them
DATE_KEYS = ("start_date", "start_date_details", "end_date", "end_date_details", "utc_start_date",
             "utc_start_date_details", "utc_end_date", "utc_end_date_details", "timezone", "timezone_abbr")
_IDS = ("id", "global_id", "global_id_lineage")


def event_times(data: dict, tz, instants: tuple | None = None) -> tuple[dict, object, object]:
    """(the date keys of an event, its aware start, its aware end) for its stored local times in
    ``tz``, or for an occurrence its ``instants`` (aware start and end: an end in a repeated hour
    is read as the instant it is, not as the first of the two local times)."""
    start_text, end_text = data["start_date"], data["end_date"]
    if instants is not None:
        start, end = (moment.astimezone(tz) for moment in instants)
    else:
        start, end = dates.event_span(start_text, end_text, tz)
        if dates.fmt(start.replace(tzinfo=None)) != start_text:   # a start a DST gap skips: moved past it
            start_text, end_text = dates.fmt(start.replace(tzinfo=None)), dates.fmt(end.replace(tzinfo=None))
    utc_start = dates.fmt(start.astimezone(timezone.utc))
    utc_end = dates.fmt(end.astimezone(timezone.utc))
    return {
        "start_date": start_text,
        "start_date_details": dates.details(start_text),
        "end_date": end_text,
        "end_date_details": dates.details(end_text),
        "utc_start_date": utc_start,
        "utc_start_date_details": dates.details(utc_start),
        "utc_end_date": utc_end,
        "utc_end_date_details": dates.details(utc_end),
        "timezone": data.get("timezone") or "",
        "timezone_abbr": dates.tz_abbr(start) if data.get("timezone") else "",
    }, start, end


def _encode(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Template:
    """The shared JSON text of a series' listed occurrences (see the module's docstring)."""

    __slots__ = ("head", "middle", "tail", "lineage", "weight")

    def __init__(self, head: str, middle: str, tail: str, lineage: bool):
        self.head = head        # the keys between global_id_lineage and rest_url
        self.middle = middle    # between rest_url and the dates
        self.tail = tail        # after the dates (without post_parent)
        self.lineage = lineage  # whether the embedded records' text holds a stored lineage
        self.weight = len(head) + len(middle) + len(tail)

    @classmethod
    def cut(cls, built: dict, to_json) -> "Template | None":
        """The template of ``built`` (an occurrence's object as the presenter builds it with
        ``to_json`` its encoder), or None when its keys are not in the expected order."""
        keys = list(built)
        if "post_parent" in built:
            if keys[-1] != "post_parent":
                return None
            keys.pop()
        try:
            rest, first = keys.index("rest_url"), keys.index(DATE_KEYS[0])
        except ValueError:
            return None
        if (tuple(keys[:3]) != _IDS or rest < 3 or first < rest
                or tuple(keys[first:first + len(DATE_KEYS)]) != DATE_KEYS):
            return None

        def text(names) -> str:
            return to_json({name: built[name] for name in names})[1:-1]
        return cls(text(keys[3:rest]), text(keys[rest + 1:first]), text(keys[first + len(DATE_KEYS):]), False)

    def text(self, record, urls, tz) -> str:
        """The JSON text of the occurrence ``record`` (with ``urls``; ``tz`` its event zone)."""
        rid = record.id
        gid = _encode(urls.global_id(rid))
        times = _encode(event_times(record.data, tz, getattr(record, "instants", None))[0])[1:-1]
        parts = [f'{{"id":{rid},"global_id":{gid},"global_id_lineage":[{gid}]']
        for part in (self.head, f'"rest_url":{_encode(urls.rest("events", rid))}', self.middle, times, self.tail):
            if part:
                parts.append(part)
        text = ",".join(parts)
        if record.series_id and rid != record.series_id:
            text += f',"post_parent":{record.series_id}'
        return text + "}"


def templated(record, single: bool) -> bool:
    """Whether ``record`` is an occurrence a template may give (listed, not special, no stored lineage)."""
    return (not single and getattr(record, "original_start", None) is not None
            and not getattr(record, "special", True) and not record.data.get("global_id_lineage")
            and not record.data.get("password"))


def entry(memo, viewer, record, build, to_json, lineage, urls, tz) -> tuple[str, bool] | None:
    """The (text, lineage) entry of a listed occurrence from its series' template in ``memo``
    (one commit's), or None when the series has none. ``build()`` builds the occurrence's object
    whole; it is called once per series and commit, to cut the template; ``lineage()`` says
    whether that object holds a stored lineage."""
    key = ("occurrence-template", record.series_id, viewer)
    template = memo.get(key, False)
    if template is False:
        built = build()
        template = Template.cut(built, to_json)
        whole = to_json(built)
        if template is not None:
            template.lineage = lineage()
            if template.text(record, urls, tz) != whole:   # never: the check of the cut
                template = None
        memo.put(key, template, template.weight if template is not None else 0)
        if template is None:
            return whole, lineage()
    if template is None:
        return None
    return template.text(record, urls, tz), template.lineage

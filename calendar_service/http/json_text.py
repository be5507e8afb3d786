"""The JSON text of responses: compact, UTF-8 characters as they are, with presented records'
text (already JSON) spliced in as it is (``RawJSON``)."""
from __future__ import annotations

import json
import secrets

import orjson


class RawJSON:
    """JSON text that goes into a response body as it is (``call.encode_json`` splices it)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


# orjson writes the same text as ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` (floats
# may spell their exponent shorter: 1e-7, not 1e-07) at a quarter of its cost, and splices
# embedded text itself (``orjson.Fragment``); datetimes and dataclasses are refused as the
# standard encoder refuses them, not turned into text.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _fragment(value):
    if type(value) is RawJSON:
        return orjson.Fragment(value.text)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(obj) -> str:
    """The JSON text of an object as responses carry it (compact, UTF-8 characters as they
    are); RawJSON values (already JSON) are spliced in as they are."""
    try:
        return orjson.dumps(obj, default=_fragment, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:   # what orjson refuses (keys that are not text, integers past
        return _standard_json(obj)   # 64 bits, ...): the standard encoder's answer, or its error


# With the standard encoder, a RawJSON value is written as a placeholder (random per process: no
# content can spell it), the text split at it and the values put between the pieces, in the
# order the encoder met them.
_RAW_TOKEN = "raw-json-" + secrets.token_hex(8)
_RAW_QUOTED = '"' + _RAW_TOKEN + '"'


def _standard_json(obj) -> str:
    fragments: list[str] = []

    def raw(value):
        if not isinstance(value, RawJSON):
            raise TypeError(f"{type(value).__name__} is not JSON serializable")
        fragments.append(value.text)
        return _RAW_TOKEN

    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=raw)
    if not fragments:
        return text
    pieces = text.split(_RAW_QUOTED)
    if len(pieces) != len(fragments) + 1:   # only a string equal to the token could do this
        raise ValueError("a value holds the placeholder of embedded JSON text")
    out = [pieces[0]]
    for fragment, piece in zip(fragments, pieces[1:]):
        out.append(fragment)
        out.append(piece)
    return "".join(out)

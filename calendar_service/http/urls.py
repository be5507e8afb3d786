"""Where a response's links point (``Urls``), and presented text built once for every host.

Presented objects are cached once per record, whatever the request's host: built with the
stand-in URLs of ``STAND_IN`` (random per process, so no content can spell them) and kept cut
where they stand (``StandInText``); the caller's URLs are put in by one join. A flood of distinct
Host headers therefore costs no memory, and an ETag hashes the stand-in text itself (``neutral``):
one tag on every host.
"""
from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from calendar_service.domain.resources import Resource
from calendar_service.http.namespace import NAMESPACE


@dataclass(frozen=True)
class Urls:
    """Where things are: the REST base (``.../calendar/events/v1``, or the compat prefix's
    ``.../wp-json/tribe/events/v1``), the public site, and the namespace the base ends with."""

    rest_base: str
    site: str
    namespace: str = NAMESPACE

    @functools.cached_property   # every event's global_id asks (a frozen dataclass keeps it in __dict__)
    def host_path(self) -> str:
        parts = urlsplit(self.site)
        return parts.netloc + parts.path.rstrip("/")

    def rest(self, *parts) -> str:
        return "/".join([self.rest_base, *map(str, parts)])

    def permalink(self, resource: Resource, slug: str) -> str:
        return self.site + resource.permalink.format(slug=slug)

    def global_id(self, record_id: int) -> str:
        return f"{self.host_path}?id={record_id}"


TOKEN = secrets.token_hex(8)
# What each stand-in URL is: the token and a letter naming the URL it stands for (site, REST base,
# host path), so a text cut at the token says by the letter after each cut what goes there.
_KIND_LETTERS = "srh"
_KIND_OF = {letter: kind for kind, letter in enumerate(_KIND_LETTERS)}


@dataclass(frozen=True)
class _StandIns(Urls):
    """The stand-in URLs: the host path a stand-in of its own, not the site's without a scheme
    (which would spell the site's stand-in again)."""

    @property
    def host_path(self) -> str:
        return TOKEN + _KIND_LETTERS[2]


STAND_IN = _StandIns(rest_base=TOKEN + _KIND_LETTERS[1], site=TOKEN + _KIND_LETTERS[0])
_STAND_INS = (STAND_IN.site, STAND_IN.rest_base, STAND_IN.host_path)
# the token as tags spell it: the same in every process, and a character JSON text never holds
# unescaped (so no content hashes like a stand-in)
NEUTRAL_TOKEN = "\x00"
_NEUTRAL_VALUES = tuple(NEUTRAL_TOKEN + letter for letter in _KIND_LETTERS)


def text_with_urls(text: str, urls: Urls) -> str:
    """JSON text built with the stand-in URLs, with ``urls`` put in (JSON escapes neither ``/``
    nor the characters of a URL's host, so a plain replacement is exact)."""
    return _put_in(text, _replacements(urls))


def _put_in(text: str, values: tuple) -> str:
    """``text`` with each stand-in replaced by its value (site, REST base, host path)."""
    if TOKEN not in text:
        return text
    for stand_in, value in zip(_STAND_INS, values):
        text = text.replace(stand_in, value)
    return text


@functools.lru_cache(maxsize=64)
def _replacements(urls: Urls) -> tuple:
    """``urls``' site, REST base and host path as they appear inside a JSON string."""
    def inner(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)[1:-1]
    return inner(urls.site), inner(urls.rest_base), inner(urls.host_path)


PIECE_BYTES = 64   # what a piece of a cut text costs beside its characters (a str object's own)


class StandInText:
    """JSON text built with the stand-in URLs, kept cut where they stand: putting a caller's URLs
    in is one join, not a scan of the text per stand-in (a remembered event is put in on every
    page that lists it: three replacements were ~40 % of listing it). ``token``: how the text
    spells the stand-ins' token (``NEUTRAL_TOKEN`` for text kept across processes)."""

    __slots__ = ("pieces", "kinds", "weight")

    def __init__(self, text: str, token: str = TOKEN):
        pieces = text.split(token)
        kinds: list = []
        if len(pieces) > 1:
            rest = pieces[1:]
            try:
                kinds = [_KIND_OF[piece[0]] for piece in rest]
                pieces = [pieces[0], *[piece[1:] for piece in rest]]
            except (KeyError, IndexError):   # a token no stand-in put there: left as it stands
                pieces, kinds = [pieces[0]], []
                for piece in rest:
                    kind = _KIND_OF.get(piece[:1])
                    if kind is None:
                        pieces[-1] += token + piece
                    else:
                        kinds.append(kind)
                        pieces.append(piece[1:])
        self.pieces = tuple(pieces)
        self.kinds = tuple(kinds)
        self.weight = len(text) + PIECE_BYTES * len(pieces)

    def __len__(self) -> int:
        """What the text weighs in a memo (its characters and its pieces)."""
        return self.weight

    def _joined(self, values: tuple) -> str:
        pieces = self.pieces
        if len(pieces) == 1:
            return pieces[0]
        out = [pieces[0]] * (2 * len(pieces) - 1)
        out[0::2] = pieces
        out[1::2] = [values[kind] for kind in self.kinds]
        return "".join(out)

    def with_urls(self, urls: Urls) -> str:
        """The text with ``urls`` put in (``text_with_urls`` of the stand-in text)."""
        return self._joined(_replacements(urls))

    def stand_in(self) -> str:
        """The text as it was built (with the stand-in URLs)."""
        return self._joined(_STAND_INS)

    def neutral(self) -> str:
        """``neutral`` of the stand-in text."""
        return self._joined(_NEUTRAL_VALUES)


def neutral(text: str) -> str:
    """Stand-in text as an ETag hashes it: the process's token spelled out the same everywhere,
    so a tag holds on every host, worker and replica (and costs one replacement, not three)."""
    return text.replace(TOKEN, NEUTRAL_TOKEN)


def with_urls(obj, urls: Urls):
    """A copy of ``obj`` with the stand-in URLs replaced by ``urls`` (only what holds them is copied)."""
    if isinstance(obj, str):
        return _put_in(obj, (urls.site, urls.rest_base, urls.host_path))
    if isinstance(obj, dict):
        out = {key: with_urls(value, urls) for key, value in obj.items()}
        if isinstance(out.get("global_id_lineage"), list):  # a stored entry may now equal global_id
            out["global_id_lineage"] = list(dict.fromkeys(out["global_id_lineage"]))
        return out
    if isinstance(obj, list):
        return [with_urls(value, urls) for value in obj]
    return obj

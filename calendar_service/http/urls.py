"""Where a response's links point (``Urls``), and presented text built once for every host.

Presented objects are cached once per record, whatever the request's host: built with the
stand-in URLs of ``STAND_IN`` (random per process, so no content can spell them), then the
caller's URLs are put in (``text_with_urls``). A flood of distinct Host headers therefore costs
no memory, and an ETag hashes the stand-in text itself (``neutral``): one tag on every host.
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
STAND_IN = Urls(rest_base=f"https://rest-{TOKEN}.invalid", site=f"https://site-{TOKEN}.invalid")
# the token as tags spell it: the same in every process, and a character JSON text never holds
# unescaped (so no content hashes like a stand-in)
_NEUTRAL = "\x00"


def text_with_urls(text: str, urls: Urls) -> str:
    """JSON text built with the stand-in URLs, with ``urls`` put in (JSON escapes neither ``/``
    nor the characters of a URL's host, so a plain replacement is exact). The site before the
    host path: the host path is the site's without its scheme."""
    return _put_in(text, _replacements(urls))


def _put_in(text: str, values: tuple) -> str:
    """``text`` with each stand-in replaced by its value (site, REST base, host path, in that order)."""
    if TOKEN not in text:
        return text
    for stand_in, value in zip((STAND_IN.site, STAND_IN.rest_base, STAND_IN.host_path), values):
        text = text.replace(stand_in, value)
    return text


@functools.lru_cache(maxsize=64)
def _replacements(urls: Urls) -> tuple:
    """``urls``' site, REST base and host path as they appear inside a JSON string."""
    def inner(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)[1:-1]
    return inner(urls.site), inner(urls.rest_base), inner(urls.host_path)


def neutral(text: str) -> str:
    """Stand-in text as an ETag hashes it: the process's token spelled out the same everywhere,
    so a tag holds on every host, worker and replica (and costs one replacement, not three)."""
    return text.replace(TOKEN, _NEUTRAL)


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

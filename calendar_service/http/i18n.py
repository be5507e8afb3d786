"""Languages: which one a request asks for, and the translated descriptions of the API.

Every route takes the language as the ``i18n_language`` argument or as a path segment
before the namespace (``/it/calendar/events/v1/...``). Only human-readable descriptions
(the namespace index and /doc) change with the language; data never does. Unknown
languages fall back to English; a string missing from a catalog stays English.

Translations live in standard gettext catalogs, ``locale/<ll>/LC_MESSAGES/messages.po``,
extracted from the code with Babel (strings marked with ``N_``) and read with Babel when
first needed, so no compiled ``.mo`` file can fall out of date with its ``.po``.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path

from calendar_service.http.namespace import PREFIX

LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "messages"
DEFAULT = "en"
# API language code -> gettext catalog folder (English is the source language: no catalog)
LANGUAGES = {"nl": "nl", "en": None, "fr": "fr", "de": "de", "it": "it", "pl": "pl", "pt-pt": "pt_PT",
             "sl": "sl", "es": "es"}
ENVIRON_KEY = "calendar.language_segment"

_catalogs: dict[str, dict[str, str]] = {}
_lock = threading.Lock()


def N_(text: str) -> str:
    """Mark ``text`` for extraction into the message catalogs; returns it unchanged."""
    return text


def normalize(code) -> str | None:
    """The API language code ``code`` names (``pt_PT`` and ``PT-PT`` name ``pt-pt``), or None."""
    if not isinstance(code, str):
        return None
    code = code.strip().lower().replace("_", "-")
    return code if code in LANGUAGES else None


def choose(parameter, segment: str | None) -> str:
    """The request's language: a known ``i18n_language`` wins, then the path segment, then English."""
    return normalize(parameter) or normalize(segment) or DEFAULT


def catalog(language: str) -> dict[str, str]:
    """The translations of ``language`` (msgid -> msgstr; untranslated and fuzzy entries left out)."""
    folder = LANGUAGES.get(language)
    if folder is None:
        return {}
    with _lock:
        if language not in _catalogs:
            _catalogs[language] = _read(LOCALE_DIR / folder / "LC_MESSAGES" / f"{DOMAIN}.po")
        return _catalogs[language]


def _read(path: Path) -> dict[str, str]:
    from babel.messages.pofile import read_po
    if not path.exists():
        return {}
    with path.open("rb") as handle:
        parsed = read_po(handle)
    return {m.id: m.string for m in parsed if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}


def gettext(text: str, language: str) -> str:
    """``text`` in ``language``; English (``text`` itself) when the catalog lacks it."""
    if not text or language == DEFAULT:
        return text
    return catalog(language).get(text, text)


class LanguageSegment:
    """WSGI middleware: ``/<language>/calendar/events/v1/...`` is served as ``/calendar/events/v1/...``.

    The segment is kept in the environ (``ENVIRON_KEY``) so the API answers in that language and
    its links keep the segment. Only the nine known languages are segments: any other
    first segment is left alone, so ``/xx/calendar/events/v1`` is a 404 ``rest_no_route``.
    """

    PATTERN = re.compile(r"\A/([A-Za-z_-]{2,5})(" + re.escape(PREFIX) + r"(?:/.*)?)\Z", re.I | re.S)

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        found = self.PATTERN.match(environ.get("PATH_INFO", ""))
        if found and normalize(found.group(1)) and "_" not in found.group(1):
            environ[ENVIRON_KEY] = normalize(found.group(1))
            environ["PATH_INFO"] = found.group(2)
        return self.wsgi_app(environ, start_response)

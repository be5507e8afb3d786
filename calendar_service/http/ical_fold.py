"""The one change the service makes to the ``icalendar`` package: a faster RFC 5545 line
folding, with the same output.

``icalendar`` folds every content line by walking it one character at a time, encoding each to
count its octets (``icalendar.parser.string._foldline``): a large part of building a VEVENT.
Most lines are short, and the rest mostly ASCII: ``fold`` returns a line of at most 74 octets as
it is, cuts an ASCII line into the same 74-character pieces (keeping a backslash or caret escape
with the character after it, as icalendar does), and leaves every other line to icalendar's own
function.

The rule: nothing else in the service touches icalendar's private names. ``install()`` puts
``fold`` where icalendar's content lines look their folding up (the module attribute
``icalendar.parser.content_line._foldline``). It is called once when the web app starts (the
blueprint's registration, ``http/api.py``), never at import: a program that merely imports the
package keeps icalendar as it is. A second call is a no-op. It installs only on icalendar
``WRITTEN_FOR`` (the version ``requirements.txt`` pins, read with ``importlib.metadata``) and
only when icalendar's folding is where and what ``fold`` expects (the name looked up by
``Contentline.to_ical``, the signature, the same output on a few test lines); otherwise it logs
one warning saying what is off, and icalendar folds with its own function: the same feeds,
built more slowly. ``uninstall()`` puts icalendar's function back and forgets the decision.
"""
from __future__ import annotations

import importlib
import inspect
import logging
import threading
from importlib import metadata

log = logging.getLogger(__name__)

WRITTEN_FOR = "7.3.0"   # the icalendar ``install`` was written for and checked against
LIMIT = 75        # octets of a line, as icalendar counts them (a piece holds at most LIMIT - 1)
SEPARATOR = "\r\n "
PARAMETERS = ("line", "limit", "fold_sep")   # icalendar's folding function's, in order
# lines ``install`` folds both ways before it puts ``fold`` in place: short, long ASCII, an
# escape at a cut, and lines icalendar's own function folds
SAMPLES = ("", "DESCRIPTION:" + "x" * 62, "DESCRIPTION:" + "x" * 63, "SUMMARY:" + "ab\\," * 40,
           "SUMMARY:" + "y" * 65 + "\\," + "z" * 80, "X:" + "y" * 71 + "^n" + "z" * 80, "LOCATION:" + "café " * 30,
           "SUMMARY:" + "€😀" * 40)

_lock = threading.Lock()
_state: dict = {"decided": False, "installed": False, "own": None}   # own: icalendar's folding function


def _library():
    """icalendar's modules that hold its folding (``content_line`` looks it up, ``string`` defines it)."""
    return (importlib.import_module("icalendar.parser.content_line"),
            importlib.import_module("icalendar.parser.string"))


def _own_fold():
    """icalendar's own folding function (what ``fold`` hands the lines it does not fold itself)."""
    own = _state["own"]
    if own is None:
        own = _state["own"] = _library()[1]._foldline
    return own


def fold(line: str, limit: int = LIMIT, fold_sep: str = SEPARATOR) -> str:
    """``line`` folded exactly as ``icalendar.parser.string._foldline`` folds it."""
    if limit != LIMIT or fold_sep != SEPARATOR or not isinstance(line, str) or "\n" in line or not line.isascii():
        if isinstance(line, str) and "\n" not in line and limit == LIMIT and fold_sep == SEPARATOR \
                and len(line.encode("utf-8")) < LIMIT:
            return line
        return _own_fold()(line, limit, fold_sep)
    if len(line) < LIMIT:
        return line
    pieces, start, size = [], 0, LIMIT - 1
    while len(line) - start > size:
        end = start + size
        if line[end - 1] in "\\^":   # an escape is not split from what it escapes
            end -= 1
        pieces.append(line[start:end])
        start = end
    pieces.append(line[start:])
    return fold_sep.join(pieces)


def installed_version() -> str | None:
    try:
        return metadata.version("icalendar")
    except metadata.PackageNotFoundError:
        return None


def problems(version: str | None) -> list[str]:
    """What keeps ``fold`` out of icalendar ``version`` as it is loaded here (empty: nothing)."""
    if version != WRITTEN_FOR:
        return [f"icalendar {version} is installed, not {WRITTEN_FOR}"]
    try:
        content_line, string = _library()
    except ImportError as exc:
        return [f"icalendar's parser modules are not where they were ({exc})"]
    own = getattr(string, "_foldline", None)
    if not callable(own):
        return ["icalendar.parser.string._foldline is missing"]
    found = []
    if getattr(content_line, "_foldline", None) not in (own, fold):
        found.append("icalendar.parser.content_line._foldline is not icalendar's folding function")
    to_ical = getattr(getattr(content_line, "Contentline", None), "to_ical", None)
    if "_foldline" not in getattr(getattr(to_ical, "__code__", None), "co_names", ()):
        found.append("Contentline.to_ical does not fold through content_line._foldline")
    try:
        signature = inspect.signature(own).parameters
    except (TypeError, ValueError):
        signature = {}
    if (tuple(signature) != PARAMETERS or signature["limit"].default != LIMIT
            or signature["fold_sep"].default != SEPARATOR):
        found.append(f"icalendar's folding takes {tuple(signature)}, not {PARAMETERS} with limit={LIMIT}")
    elif any(fold(line) != own(line) for line in SAMPLES):
        found.append("icalendar folds lines differently")
    return found


def install(version: str | None = None) -> bool:
    """Make icalendar's content lines fold with ``fold``, once: True when it does. ``version`` is
    the installed icalendar's (default: read from its metadata). A second call changes nothing."""
    with _lock:
        if not _state["decided"]:
            _state["decided"] = True
            off = problems(installed_version() if version is None else version)
            if off:
                log.warning("icalendar's line folding is left as it is (%s): feeds are the same, built more slowly",
                            "; ".join(off))
            else:
                _library()[0]._foldline = fold
                _state["installed"] = True
        return _state["installed"]


def installed() -> bool:
    return _state["installed"]


def uninstall() -> None:
    """icalendar's own folding back, and the decision forgotten."""
    with _lock:
        if _state["installed"]:
            _library()[0]._foldline = _own_fold()
        _state.update(decided=False, installed=False)

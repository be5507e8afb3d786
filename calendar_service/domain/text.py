"""Small text helpers shared by the service and the presenters: slugs, paragraphs, costs."""
from __future__ import annotations

import functools
import html
import re
import unicodedata
from typing import Callable

_BLOCK = re.compile(r"^\s*<(p|div|ul|ol|li|h[1-6]|table|thead|tbody|tr|blockquote|pre|figure|section|article|"
                    r"aside|header|footer|nav|hr|form|dl|address|details|iframe)\b", re.I)


# device names Windows reserves whatever the extension; a clone of the content repository must check out
WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                              *(f"lpt{i}" for i in range(1, 10))})


SLUG_MAX = 190        # characters of a slug (the stem of the record's file name)
SLUG_BASE_MAX = 180   # characters of the slug kept before a "-2", "-3"... suffix


def slugify(text: str) -> str:
    """A WordPress-like slug: ASCII letters and digits joined by hyphens (``"Jazz Night!"`` -> ``jazz-night``)."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"<[^>]*>", "", text)
    text = re.sub(r"&[a-z0-9#]+;", "", text)
    text = re.sub(r"[^a-z0-9_\s-]", "", text)
    text = re.sub(r"[\s_-]+", "-", text).strip("-")
    text = text[:SLUG_MAX].strip("-")
    if text in WINDOWS_RESERVED:
        text += "-1"  # the slug names a file, and Windows cannot check out a file called con.md
    return text


SUBJECT_MAX = 120     # characters of a commit message line made from record text


def one_line(value: str, limit: int = SUBJECT_MAX) -> str:
    """``value`` as one line of printable text for a commit message: line breaks, tabs and other
    control or format characters (ANSI escapes included) become spaces, runs of spaces one, and
    the result is cut to ``limit`` characters (with an ellipsis). A title can then never add a
    line (a forged trailer) or colour a terminal."""
    out = "".join(" " if (ch.isspace() or unicodedata.category(ch)[0] == "C") else ch for ch in str(value))
    out = re.sub(r" {2,}", " ", out).strip()
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "\u2026"


def unique_slug(wanted: str, taken: Callable[[str], bool]) -> str:
    """``wanted``, or the first of ``wanted-2``, ``wanted-3``... that is not ``taken``."""
    slug, n = wanted, 2
    while taken(slug):
        slug = f"{wanted[:SLUG_BASE_MAX]}-{n}"
        n += 1
    return slug


def autop(text: str | None) -> str:
    """Wrap plain paragraphs in ``<p>`` as WordPress displays post content; HTML blocks stay as written."""
    if not text or not text.strip():
        return ""
    chunks = _PARAGRAPHS.split(text.replace("\r\n", "\n").strip())
    out = []
    for chunk in chunks:
        chunk = chunk.strip()
        if _BLOCK.match(chunk):
            out.append(chunk)
        else:
            out.append("<p>" + chunk.replace("\n", "<br />\n") + "</p>")
    return "\n".join(out)


def strip_tags(text: str | None) -> str:
    return html.unescape(_TAG.sub("", text or "")).strip()


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# compiled once: every event presented for the first time runs these (autop twice)
_PARAGRAPHS = re.compile(r"\n\s*\n")
_TAG = re.compile(r"<[^>]*>")
_DECIMALS = re.compile(r"^(.*?)([.,](\d{1,2}))?$")
_SEPARATORS = re.compile(r"[.,]")
_DASHES = re.compile(r"[\s\-–]+")


def _number(token: str) -> float:
    # "1,234.50" and "1.234,50" and "25,55": the last separator followed by 1-2 digits is decimal
    match = _DECIMALS.match(token)
    whole, _, decimals = match.groups()
    whole = _SEPARATORS.sub("", whole)
    return float(f"{whole}.{decimals}" if decimals else whole)


def _plain(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.2f}".rstrip("0").rstrip(".")


COSTS_REMEMBERED = 1024   # distinct (cost, currency) a process keeps the cost details of
COST_REMEMBERED_CHARS = 100   # longer costs are read each time: the cache stays small whatever files hold


def cost_details(cost, symbol: str = "", position: str = "", code: str = "") -> tuple[str, dict]:
    """The ``cost`` text and ``cost_details`` object for a stored cost (a string, a number or a list).

    The currency symbol is the non-numeric part shared by every entry (``20$``, ``€6.50``)
    unless the record stores one; its position is ``prefix`` when it leads. A calendar has
    few distinct costs ("Free", "$10"): a single cost is read once (reading it was a visible
    part of presenting an event); each caller gets its own ``cost_details`` object.
    """
    fields = (cost if isinstance(cost, str) else "", symbol, position, code)
    if ((cost is None or isinstance(cost, (str, int, float))) and all(type(x) is str for x in fields)
            and sum(map(len, fields)) <= COST_REMEMBERED_CHARS):
        text, details = _remembered_cost(cost, symbol, position, code)
        return text, {**details, "values": list(details["values"])}
    return _cost_details(cost, symbol, position, code)


def _cost_details(cost, symbol: str, position: str, code: str) -> tuple[str, dict]:
    entries = cost if isinstance(cost, list) else ([] if cost in (None, "") else [cost])
    entries = [str(e).strip() for e in entries if str(e).strip()]
    values: list[float] = []
    leftovers = set()
    positions = set()
    for entry in entries:
        numbers = _NUMBER.findall(entry)
        values.extend(_number(n) for n in numbers)
        tokens = set(_DASHES.sub(" ", _NUMBER.sub(" ", entry)).split())
        if numbers and tokens:
            leftovers.add(" ".join(sorted(tokens)))
            positions.add("prefix" if entry.startswith(tuple(tokens)) else "postfix")
    if not symbol and len(leftovers) == 1 and len(positions) == 1:
        candidate = leftovers.pop()
        if len(candidate) <= 4:
            symbol, position = candidate, positions.pop()
    if symbol and not position:
        position = "prefix"
    unique = sorted(set(values))
    details = {
        "currency_symbol": symbol or "",
        "currency_code": code or "",
        "currency_position": position if symbol else "",
        "values": [_plain(v) for v in unique],
    }

    def money(value: float) -> str:
        if value == 0:
            return "Free"
        amount = _plain(value) if value == int(value) else f"{value:.2f}"
        if not symbol:
            return amount
        return symbol + amount if position == "prefix" else amount + symbol

    if not unique:
        text = entries[0] if entries else ""
    elif len(unique) == 1:
        text = money(unique[0])
    else:
        text = f"{money(unique[0])} – {money(unique[-1])}"
    return text, details


# typed: True, 1 and 1.0 read as different costs ("True", "1", "1.0")
_remembered_cost = functools.lru_cache(maxsize=COSTS_REMEMBERED, typed=True)(_cost_details)


_DROPPED = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.I)
_BLOCK_END = re.compile(r"</(p|div|h[1-6]|ul|ol|table|blockquote|pre|figure|section|article|aside|header|footer|"
                        r"address|details|dl)\s*>|<hr\b[^>]*>", re.I)
_ROW_END = re.compile(r"</(li|tr|dt|dd)\s*>", re.I)


def plain_text(markup: str | None) -> str:
    """Readable plain text of an HTML fragment (a description as stored): tags dropped, entities
    decoded, line breaks and paragraphs kept as one and two new lines, list items as ``- ``."""
    if not markup:
        return ""
    value = str(markup)
    if "<" not in value and "&" not in value and "  " not in value and "\t" not in value and "\xa0" not in value \
            and "\n\n\n" not in value and "\r" not in value and all(line == line.strip() for line in value.split("\n")):
        return value.strip()   # already plain text (as the importer stores it): nothing below would change it
    return _marked_up_text(value)


def _marked_up_text(value: str) -> str:
    """``plain_text`` of any text (the way for markup)."""
    value = _DROPPED.sub("", value.replace("\r\n", "\n"))
    value = _LINE_BREAK.sub("\n", value)
    value = _BLOCK_END.sub("\n\n", value)
    value = _ROW_END.sub("\n", value)
    value = re.sub(r"<li\b[^>]*>", "- ", value, flags=re.I)
    value = html.unescape(re.sub(r"<[^>]*>", "", value)).replace("\xa0", " ")
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in value.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()

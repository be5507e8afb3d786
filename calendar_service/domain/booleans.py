"""The one true/false parser, with named word sets.

Each place that reads a boolean from text names the words it accepts; ``parse_bool``
answers True, False, or None when the value is none of the words (the caller decides
whether that is an error, "not given", or false). A real ``bool`` is always itself;
any other value is read as its text, stripped and lower-cased.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest


@dataclass(frozen=True)
class BooleanWords:
    true: tuple[str, ...]
    false: tuple[str, ...]

    def all(self) -> list[str]:
        """Every word, true and false ones alternating (``true, false, 1, 0, ...``)."""
        return [w for pair in zip_longest(self.true, self.false) for w in pair if w is not None]


# WordPress' REST "boolean" type (rest_is_boolean): only true/false and 1/0.
WORDPRESS_REST = BooleanWords(true=("true", "1"), false=("false", "0"))
# Ours, wider than WordPress' rest_sanitize_boolean (which takes any text but "false" and "0"
# as true): yes/no and on/off as well, and empty text is false. Configuration, stored files,
# venue map flags and the filters typed as strings read booleans this way.
LENIENT = BooleanWords(true=("true", "1", "yes", "on"), false=("false", "0", "no", "off", ""))
# The importer's: yes/no but not on/off (empty text means "not given" there).
YES_NO = BooleanWords(true=("true", "1", "yes"), false=("false", "0", "no"))


def parse_bool(value, words: BooleanWords) -> bool | None:
    """``value`` as a boolean under ``words``; None when it is none of them."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in words.true:
        return True
    if text in words.false:
        return False
    return None

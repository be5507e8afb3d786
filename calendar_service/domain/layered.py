"""A mapping derived from another by a few changes without copying it: the maps of a snapshot
(files, file dates, records by id and slug) are derived commit after commit, and a commit
changes a few entries of maps with 100,000 or more.

A ``Layered`` map is a base dict, shared with the maps it was derived from and never changed
once shared, plus its own small dict of changes (a removed key is marked ``_GONE``). Deriving the
next map copies only the changes; when they grow past a share of the base, the next map gets a
base of its own (one copy in C, its cost spread over the many commits before it).
"""
from __future__ import annotations

from collections.abc import Mapping

_GONE = object()   # a key removed from the base
_MISSING = object()
# the changes a derived map carries before it takes a base of its own: at least this many,
# or this share of the base (1/64), so a big base is copied rarely
MIN_CHANGES = 256
CHANGES_SHARE = 64


class Layered(Mapping):
    """A dict-like map: a shared base and its own changes. Change it (``[]=``, ``del``, ``pop``)
    only before it is shared (while it is being derived), as a snapshot does."""

    __slots__ = ("_base", "_changes", "_len", "_flat")

    def __init__(self, base: dict | None = None):
        self._base = base if base is not None else {}
        self._changes: dict = {}
        self._len = len(self._base)
        self._flat: dict | None = None   # base and changes in one dict, made when first iterated

    def derive(self) -> "Layered":
        """A map with the same entries, to be changed without changing this one: shares this
        map's base (or its flat dict, when one was made) and copies only the changes."""
        child = Layered.__new__(Layered)
        child._flat = None
        child._len = self._len
        if self._flat is not None:
            child._base, child._changes = self._flat, {}
        elif len(self._changes) > max(MIN_CHANGES, len(self._base) // CHANGES_SHARE):
            child._base, child._changes = self._flatten(), {}
        else:
            child._base, child._changes = self._base, dict(self._changes)
        return child

    @classmethod
    def of(cls, mapping) -> "Layered":
        """``mapping`` derived (a ``Layered`` map), or a plain dict wrapped as the base of a new one
        (the dict is then shared: it must not be changed any more)."""
        return mapping.derive() if isinstance(mapping, Layered) else cls(mapping)

    def _flatten(self) -> dict:
        base = self._base
        if not isinstance(base, dict) and hasattr(base, "layered"):
            # a map that layers changes itself (the records cache's file dates by column): a
            # copy of the changes, not a dict of every entry
            return base.layered({key: None if value is _GONE else value for key, value in self._changes.items()},
                                self._len)
        # another mapping gives its pairs faster than a key and a lookup each
        flat = dict(base) if isinstance(base, dict) else dict(base.items())
        for key, value in self._changes.items():
            if value is _GONE:
                flat.pop(key, None)
            else:
                flat[key] = value
        return flat

    def _view(self) -> dict:
        """Every entry as one plain dict (the base itself without changes; made once and kept)."""
        if not self._changes:
            return self._base
        if self._flat is None:
            self._flat = self._flatten()
        return self._flat

    # ------------------------------------------------------------------------- reading

    def __getitem__(self, key):
        value = self._changes.get(key, _MISSING)
        if value is _MISSING:
            return self._base[key]
        if value is _GONE:
            raise KeyError(key)
        return value

    def get(self, key, default=None):
        value = self._changes.get(key, _MISSING)
        if value is _MISSING:
            return self._base.get(key, default)
        return default if value is _GONE else value

    def __contains__(self, key) -> bool:
        value = self._changes.get(key, _MISSING)
        if value is _MISSING:
            return key in self._base
        return value is not _GONE

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        return iter(self._view())

    def keys(self):
        return self._view().keys()

    def values(self):
        return self._view().values()

    def items(self):
        return self._view().items()

    def __eq__(self, other) -> bool:
        if isinstance(other, Layered):
            other = other._view()
        return self._view() == other if isinstance(other, dict) else NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"Layered({self._view()!r})"

    # ------------------------------------------------------------------------- changing

    def __setitem__(self, key, value) -> None:
        if key not in self:
            self._len += 1
        self._changes[key] = value
        self._flat = None

    def __delitem__(self, key) -> None:
        if key not in self:
            raise KeyError(key)
        self._len -= 1
        if key in self._base:
            self._changes[key] = _GONE
        else:
            del self._changes[key]
        self._flat = None

    def pop(self, key, default=_MISSING):
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default is _MISSING:
            raise KeyError(key)
        return default

    def setdefault(self, key, default=None):
        if key in self:
            return self[key]
        self[key] = default
        return default

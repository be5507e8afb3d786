"""The files' git dates as the records cache keeps them: by column, in the path order of its files."""
from __future__ import annotations

import copy
from array import array
from bisect import bisect_left
from collections.abc import Mapping
from itertools import compress, filterfalse
from operator import itemgetter


def position(paths: list[str], path: str) -> int | None:
    """Where ``path`` is in the sorted ``paths``, or None."""
    index = bisect_left(paths, path)
    return index if index < len(paths) and paths[index] == path else None


_FACT_KINDS = (int, int, str, bool)   # a FileDates: changed, added, e-mail, once


def _facts_of_kinds(facts) -> bool:
    """Whether every one of ``facts`` is a (changed, added, e-mail, once) tuple (one pass in C per check)."""
    facts = list(facts)
    return not facts or (set(map(type, facts)) == {tuple} and set(map(len, facts)) == {4}
                         and all(set(map(type, map(itemgetter(i), facts))) == {kind}
                                 for i, kind in enumerate(_FACT_KINDS)))


class FileDateColumns(Mapping):
    """The files' git dates (``history.FileDates``: when each last changed, when and by whom it
    was added, and whether one commit did both) as the cache keeps them: by column, in the path
    order of the files' columns (``records_cache.CachedFiles``), the e-mails once each. A start hands every
    record its row as it makes it (a dict of a million tuples took ~0.65 s to unpickle); asked
    by path (the dates a write's next snapshot keeps, the cache writer), a row is found by the
    files' positions. ``extra``: dates of paths the files' columns do not hold. Checked to have
    the shapes the cache writer gives them (ValueError otherwise)."""

    def __init__(self, raw, files):
        if type(raw) is not dict:
            raise ValueError("file dates that are not columns")
        count = len(files)
        columns = []
        for name, code in (("changed", "q"), ("added", "q"), ("email_of", "I")):
            data = raw.get(name)
            if type(data) is not bytes or len(data) != count * array(code).itemsize:
                raise ValueError(f"file dates whose {name} column is not {count} numbers")
            column = array(code)
            column.frombytes(data)
            columns.append(column)
        self.changed, self.added, self.email_of = columns
        self.emails, self.once, self.dated, self.extra = (raw.get(name) for name in ("emails", "once", "dated", "extra"))
        if not (type(self.emails) is list and set(map(type, self.emails)) <= {str}
                and type(self.once) is bytes and type(self.dated) is bytes and len(self.once) == len(self.dated) == count
                and set(self.once) <= {0, 1} and set(self.dated) <= {0, 1}
                and (not self.email_of or max(self.email_of) < len(self.emails))
                and type(self.extra) is dict and set(map(type, self.extra)) <= {str}
                and _facts_of_kinds(self.extra.values())):
            raise ValueError("file dates that are not (changed, added, e-mail, once)")
        self._paths = files.paths   # (the files' other columns are not kept alive by the dates)
        if any(position(self._paths, path) is not None for path in self.extra):
            raise ValueError("file dates given twice")
        self._len = self.dated.count(1) + len(self.extra)

    @staticmethod
    def columns(file_dates, paths: list[str]) -> dict:
        """``file_dates`` (path -> FileDates) by column along ``paths`` (the files' columns, in
        path order), as ``FileDateColumns`` reads them."""
        known = file_dates if type(file_dates) is dict else dict(file_dates.items())
        changed, added, email_of = array("q"), array("q"), array("I")
        once, dated = bytearray(), bytearray()
        emails: dict[str, int] = {}
        for path in paths:
            facts = known.get(path)
            dated.append(facts is not None)
            if facts is None:
                facts = (0, 0, "", False)
            changed.append(facts[0])
            added.append(facts[1])
            email_of.append(emails.setdefault(facts[2], len(emails)))
            once.append(bool(facts[3]))
        listed = set(paths)
        return {"changed": changed.tobytes(), "added": added.tobytes(), "email_of": email_of.tobytes(),
                "emails": list(emails), "once": bytes(once), "dated": bytes(dated),
                "extra": {path: tuple(facts) for path, facts in known.items() if path not in listed}}

    def _dated_rows(self):
        """The dates of every file that has them, in path order (made by column)."""
        rows = zip(self.changed, self.added, map(self.emails.__getitem__, self.email_of), map(bool, self.once))
        return compress(rows, self.dated)

    def row(self, index: int) -> tuple | None:
        """The dates of the file at ``index`` of the columns, None when it has none."""
        if not self.dated[index]:
            return None
        return self.changed[index], self.added[index], self.emails[self.email_of[index]], bool(self.once[index])

    # path -> dates, or None for a path without dates any more: what ``layered`` put over the
    # columns and ``extra`` (none in the map read from the cache)
    _over: dict = {}

    def layered(self, changes: dict, length: int) -> "FileDateColumns":
        """These dates with ``changes`` over them (path -> dates, or None: none any more), of
        ``length`` entries, as a map of its own: how a ``Layered`` map derived from this one
        flattens (a copy of the changes, not a dict of a million files)."""
        over = copy.copy(self)
        over._over = {**self._over, **changes}
        over._len = length
        return over

    def __getitem__(self, path: str) -> tuple:
        if self._over:
            facts = self._over.get(path, _NOT_OVER)
            if facts is not _NOT_OVER:
                if facts is None:
                    raise KeyError(path)
                return facts
        index = position(self._paths, path)
        if index is not None and self.dated[index]:
            return self.row(index)
        return self.extra[path]

    def __contains__(self, path) -> bool:
        if self._over:
            facts = self._over.get(path, _NOT_OVER)
            if facts is not _NOT_OVER:
                return facts is not None
        index = position(self._paths, path) if type(path) is str else None
        return bool(self.dated[index]) if index is not None else path in self.extra

    def __iter__(self):
        over = self._over
        if not over:
            yield from compress(self._paths, self.dated)
            yield from self.extra
            return
        yield from filterfalse(over.__contains__, compress(self._paths, self.dated))
        yield from filterfalse(over.__contains__, self.extra)
        yield from (path for path, facts in over.items() if facts is not None)

    def __len__(self) -> int:
        return self._len

    def items(self):
        """(path, dates) of every file with dates, made by column (a pair each, no lookup)."""
        pairs = zip(compress(self._paths, self.dated), self._dated_rows())
        over = self._over
        if not over:
            return [*pairs, *self.extra.items()]
        return [*filterfalse(lambda pair: pair[0] in over, pairs),
                *filterfalse(lambda pair: pair[0] in over, self.extra.items()),
                *((path, facts) for path, facts in over.items() if facts is not None)]


_NOT_OVER = object()

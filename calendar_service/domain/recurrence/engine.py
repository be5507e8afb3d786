"""A series' RRULE instances as naive local wall-clock times."""
from __future__ import annotations

import copy
import types
from bisect import bisect_left, bisect_right
from datetime import date, datetime, time, timedelta
from functools import cached_property
from itertools import accumulate, repeat
from typing import TYPE_CHECKING

from dateutil import rrule as du

from calendar_service.domain.recurrence import limits
from calendar_service.domain.recurrence.limits import LAST_INSTANT, RuleTooCostly
from calendar_service.domain.recurrence.lines import local_naive

if TYPE_CHECKING:
    from calendar_service.domain.recurrence.series import Series


_DU_FREQ = {"YEARLY": du.YEARLY, "MONTHLY": du.MONTHLY, "WEEKLY": du.WEEKLY, "DAILY": du.DAILY,
            "HOURLY": du.HOURLY}


class _PastLimit(Exception):
    """A bounded walk reached the first period after its limit."""


class _BoundedInfo(du._iterinfo):
    """dateutil's per-walk calendar state, counting the periods a walk visits: past the walk's
    limit it ends the walk, past its budget it raises RuleTooCostly. dateutil itself only stops
    when a produced instance passes UNTIL (or at year 9999), so a rule that produces nothing
    would otherwise walk to year 9999."""

    def __init__(self, rr):
        super().__init__(rr)
        self.steps = 0

    def _visit(self, year, month, day):
        self.steps += 1
        if self.steps > self.rrule._budget:
            raise RuleTooCostly("the rule produces too rarely to be evaluated (more than "
                                f"{limits.STEP_BUDGET:,} periods without reaching the end asked for)")
        stop, freq = self.rrule._stop, self.rrule._freq
        if freq == du.YEARLY:
            past = year > stop.year
        elif freq == du.MONTHLY:
            past = (year, month) > (stop.year, stop.month)
        else:
            past = date(year, month, day) > stop
        if past:
            raise _PastLimit

    def ydayset(self, year, month, day):
        self._visit(year, month, day)
        return super().ydayset(year, month, day)

    def mdayset(self, year, month, day):
        self._visit(year, month, day)
        return super().mdayset(year, month, day)

    def wdayset(self, year, month, day):
        self._visit(year, month, day)
        return super().wdayset(year, month, day)

    def ddayset(self, year, month, day):
        self._visit(year, month, day)
        return super().ddayset(year, month, day)


# dateutil's own walk with the calendar state above: the same code, its one global name replaced
_bounded_walk = types.FunctionType(du.rrule._iter.__code__, {**vars(du), "_iterinfo": _BoundedInfo},
                                   "_bounded_walk", du.rrule._iter.__defaults__, du.rrule._iter.__closure__)
# instances kept per series for walks from its start (a valid series has at most the occurrence
# limit of them in a horizon; a longer walk is not kept)
MEMO_LIMIT = 20_000


class Engine:
    """Generates a series' RRULE instances as naive local times, ascending.

    Daily and weekly rules with plain weekdays (most series) are arithmetic progressions,
    computed in bulk from any window on; the rest go through dateutil's rrule, which walks
    from the first occurrence. UNTIL is compared as an instant (a date for all-day series).
    """

    def __init__(self, series: Series):
        self.series = series
        rule = self.rule = series.rule
        if rule is None:
            return
        self.start = series.start
        self.until_local = None
        self._memo: tuple[datetime, list[datetime]] | None = None
        self._too_far: tuple[datetime, str] | None = None     # a limit the budget did not reach
        # an UNTIL past the last instant an occurrence can start is no end at all (no date beyond
        # it is ever computed: year 9999 stays safe)
        if isinstance(rule.until, datetime):
            self.until_utc = rule.until.replace(tzinfo=None)
            if self.until_utc < LAST_INSTANT:
                self.until_local = local_naive(rule.until, series.tz) + timedelta(days=1)
        elif isinstance(rule.until, date):
            if rule.until < LAST_INSTANT.date():
                self.until_local = datetime.combine(rule.until, time(23, 59, 59))
        simple_parts = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "WKST"}
        self.simple = (rule.freq in ("DAILY", "WEEKLY") and all(k in simple_parts for k, _ in rule.parts)
                       and not any(n for n, _ in rule.byday))
        if self.simple:
            days = sorted({d for _, d in rule.byday}) if rule.byday else [series.start.weekday()]
            self.days = frozenset(days)
            if rule.freq == "WEEKLY":
                week0 = series.start - timedelta(days=(series.start.weekday() - rule.wkst) % 7)
                self.bases = [week0 + timedelta(days=(d - rule.wkst) % 7) for d in days]
                self.step = 7 * rule.interval
            else:
                self.bases = [series.start]
                self.step = rule.interval

    @cached_property
    def _rrule(self) -> du.rrule:
        rule = self.rule
        return du.rrule(
            _DU_FREQ[rule.freq], dtstart=self.start, interval=rule.interval, wkst=rule.wkst, count=rule.count,
            until=self.until_local, bysetpos=rule.bysetpos or None, bymonth=rule.bymonth or None,
            bymonthday=rule.bymonthday or None, byyearday=rule.byyearday or None,
            byweekno=rule.byweekno or None,
            byweekday=[du.weekday(d, n or None) for n, d in rule.byday] or None,
            byhour=rule.byhour or None, byminute=rule.byminute or None)

    def _walk(self, limit: datetime, most: int | None = None) -> list[datetime]:
        """The rule's instances from its start to ``limit`` (inclusive; at most ``most`` of them),
        within the step budget (RuleTooCostly beyond it). Complete walks are kept
        (``MEMO_LIMIT``), so a series listed again is not walked again."""
        memo = self._memo
        if memo is not None and memo[0] >= limit:
            found = memo[1]
            return found[:bisect_right(found, limit)][:most]
        if self._too_far is not None and limit >= self._too_far[0]:
            raise RuleTooCostly(self._too_far[1])   # known already: not walked again
        walk = copy.copy(self._rrule)
        walk._stop, walk._budget = limit.date(), limits.STEP_BUDGET
        found = []
        try:
            for local in _bounded_walk(walk):
                if local > limit:
                    break
                found.append(local)
                if most is not None and len(found) >= most:
                    return found
        except _PastLimit:
            pass
        except RuleTooCostly as exc:
            self._too_far = (limit, str(exc))
            raise
        if len(found) <= MEMO_LIMIT and (memo is None or memo[0] < limit):
            self._memo = (limit, found)
        return found[:]

    def count_upto(self, limit: datetime, most: int) -> int:
        """How many instances start from the rule's start to ``limit`` (local), counting no
        further than ``most``."""
        if self.rule is None:
            return 0
        if not self.simple:
            return len(self._walk(min(limit, LAST_INSTANT if self.until_local is None else
                                      min(self.until_local, LAST_INSTANT)), most))
        return min(len(self.rule_instances(None, limit)), most)

    def _within_until(self, local: datetime) -> bool:
        until = self.rule.until
        if until is None:
            return True
        if isinstance(until, datetime):
            return local - self.series.tz.utcoffset(local) <= self.until_utc
        return local.date() <= until

    def rule_instances(self, lo: datetime | None, hi: datetime | None) -> list[datetime]:
        """Instances with lo <= local time <= hi (None: unbounded), ascending; ``hi`` or a bound
        of the rule must end the rule."""
        if self.rule is None:
            return []
        limit = hi
        if self.until_local is not None and (limit is None or self.until_local < limit):
            limit = self.until_local
        if limit is None and self.rule.count is None:
            raise ValueError("an open-ended rule needs an upper bound")
        if limit is None or limit > LAST_INSTANT:
            limit = LAST_INSTANT    # no occurrence starts later (ids)
        if lo is not None and lo > limit:
            return []
        found = self._simple(lo, limit) if self.simple else self._general(lo, limit)
        if self.rule.until is not None and found and not self._within_until(found[-1]):
            found = [d for d in found if self._within_until(d)]    # only near UNTIL
        return found

    def _general(self, lo, limit) -> list[datetime]:
        found = self._walk(limit)
        if lo is not None and found and found[0] < lo:
            found = found[bisect_left(found, lo):]
        return found

    def _simple(self, lo: datetime | None, limit: datetime | None) -> list[datetime]:
        rule, start, step = self.rule, self.start, self.step
        count = rule.count
        days = self.days if rule.freq == "DAILY" and rule.byday else None
        if count is not None:   # count from the start: enough periods for COUNT instances
            per_period = len(self.bases) if days is None else max(1, sum(1 for i in range(step) if
                                                                        (start + timedelta(days=i)).weekday() in days))
            first_k, last_k = 0, (count + 2 * per_period) // per_period + 1
            if days is not None:
                last_k = count * 7 + 1
            last_k = min(last_k, (limit - start).days // step + 2)   # never past the limit
        else:
            first_k = max(0, ((lo - start).days - 7) // step) if lo is not None else 0
            last_k = (limit - start).days // step + 2
        found = []
        for base in self.bases:
            found += accumulate(repeat(timedelta(days=step), last_k - first_k),
                                initial=base + timedelta(days=first_k * step))
        if len(self.bases) > 1:
            found.sort()
        if found and found[0] < start:
            found = [d for d in found if d >= start]
        if days is not None:
            found = [d for d in found if d.weekday() in days]
        if count is not None:
            found = found[:count]
        if lo is not None and found and found[0] < lo:
            found = found[bisect_left(found, lo):]
        if limit is not None and found and found[-1] > limit:
            found = found[:bisect_right(found, limit)]
        return found

    def is_rule_instance(self, local: datetime) -> bool:
        if self.rule is None:
            return False
        return bool(self.rule_instances(local, local))

    def last_instance_before(self, local: datetime) -> datetime | None:
        """The last RRULE instance strictly before ``local`` (for splitting a series)."""
        found = [d for d in self.rule_instances(None, local) if d < local]
        return found[-1] if found else None

    def count_before(self, local: datetime) -> int:
        """How many RRULE instances (EXDATEs included, as COUNT counts them) start before ``local``."""
        return sum(1 for d in self.rule_instances(None, local) if d < local)

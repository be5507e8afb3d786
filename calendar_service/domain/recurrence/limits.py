"""What one series may cost: how many occurrences its rule may produce in a horizon, how far any
evaluation of it goes, and how much work one evaluation may do.

Occurrences never start after ``LAST_ORIGINAL_START`` (their ids count minutes since 1970 in 26
bits), so a rule is never evaluated past ``LAST_INSTANT``: an UNTIL in year 9999 simply means
"no end" and no date computed from a rule can leave Python's range. ``STEP_BUDGET`` bounds the
periods (years, months, weeks, days or hours, as the rule's FREQ says) one evaluation may walk,
whether or not they produce anything: a rule that matches too rarely to be evaluated within it is
refused (``RuleTooCostly``) instead of holding a worker for seconds.

``max_occurrences`` is a policy (the setting ``CALENDAR_MAX_OCCURRENCES``): the service sets it
once at start (``configure``); the domain reads it when it checks a series.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from calendar_service.domain.recurrence.ids import LAST_ORIGINAL_START

DEFAULT_MAX_OCCURRENCES = 10_000
# the last instant a rule is evaluated to: the last start an occurrence id can name, plus a day
LAST_INSTANT = LAST_ORIGINAL_START + timedelta(days=1)
# times a series may name at all (override times, the end of its first occurrence): inside this,
# an occurrence's start, end and UTC times are always representable
EARLIEST_TIME = datetime(1900, 1, 1)
LATEST_TIME = datetime(2200, 12, 31, 23, 59, 59)
# periods one evaluation of a rule may walk: a few tenths of a second at most (an hourly rule
# walks ~18,000 in two years; daily and slower rules walk fewer than 40,000 in a century)
STEP_BUDGET = 100_000

_max_occurrences = DEFAULT_MAX_OCCURRENCES
_horizon_months = 24


class RuleTooCostly(ValueError):
    """Evaluating a rule would walk more than ``STEP_BUDGET`` periods."""


def configure(max_occurrences: int | None = None, horizon_months: int | None = None) -> None:
    """Set the operator's limits (from the settings, at start)."""
    global _max_occurrences, _horizon_months
    if max_occurrences is not None:
        _max_occurrences = int(max_occurrences)
    if horizon_months is not None:
        _horizon_months = int(horizon_months)


def max_occurrences() -> int:
    return _max_occurrences


def horizon_months() -> int:
    return _horizon_months

"""Freed heap memory given back to the system: after a large feed, after a worker's start (the
records loaded and the index read build and drop large temporary lists) and after the serving
master's load of the records (``serving``), which its workers would otherwise inherit.

Writing and sending an unpaged iCalendar feed builds and drops thousands of VEVENT texts and
icalendar objects and the body's chunks; glibc keeps the freed space inside its heap, between
the objects that stay, so a worker's resident size stayed higher after a big feed than
before it, though all of that space is free (``malloc_trim(0)`` gives it back). Once a feed of at least ``TRIM_AFTER_EVENTS`` events is sent and closed,
``give_back`` asks for it; with another C library it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

TRIM_AFTER_EVENTS = 1000
trims = 0   # how often this process trimmed its heap (tests read it)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):   # not glibc: nothing to ask
        return None


def give_back() -> bool:
    """Return the heap's free space to the system (glibc's ``malloc_trim(0)``); False when the C
    library has no such call."""
    global trims
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    trims += 1
    return True

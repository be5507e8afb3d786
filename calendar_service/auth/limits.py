"""Limits on guessing: failed sign-ins and event-password guesses, and Argon2's concurrency.

Failed attempts are counted in sliding windows, per login, per client address, and per
(event, client address) for event passwords. Once a key has used up its attempts in the
window, further attempts are refused with 429 ``rest_too_many_requests`` and a
``Retry-After`` header until its oldest failure leaves the window, even when the password
is right (as WordPress lockout plugins do): otherwise an attacker could keep guessing and
recognize the right password by its answer. Successful attempts are not counted. Logins
that do not exist are counted like real ones, so a 429 says nothing about the account.

The failures are kept in the service's state database (``storage/state.py``: SQLite for one
machine, PostgreSQL for several), so a limit holds across gunicorn workers and replicas; the
key is stored as a SHA-256 of the kind and the key (no login names or addresses in clear),
timed by the wall clock that hosts share. Each kind holds at most ``size`` keys; the least
recently failed keys are dropped first, so a flood of distinct logins or addresses costs
bounded space. While that database cannot be reached, checks raise its ``StateUnavailable``
(503 with ``Retry-After``): never an unlimited guess. Without a state database (a ``Limits``
made on its own, as in a command line tool) the failures are counted in this process's memory.

Argon2 checks (human-chosen passwords) need tens of megabytes each by design (argon2-cffi's
memory cost); at most
``argon2_concurrency`` run at once per process. A check that cannot start within
``ARGON2_WAIT`` seconds answers 503 with ``Retry-After`` instead of piling up memory.
"""
from __future__ import annotations

import hmac
import math
import threading
import time
from collections import OrderedDict, deque
from contextlib import contextmanager
from hashlib import sha256

ARGON2_WAIT = 2.0  # seconds an Argon2 check may wait for a free slot
BUSY_RETRY_AFTER = 1  # seconds a client is asked to wait when every Argon2 slot is taken


def limit_key(kind: str, key) -> str:
    """How a key is stored in the state database: a SHA-256 of the kind and the key."""
    parts = key if isinstance(key, tuple) else (key,)
    text = "\0".join([kind, *(str(p) for p in parts)])
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Throttled(Exception):
    """Too many failed attempts for this login, address or event; ``retry_after`` in seconds.

    The HTTP layer answers 429 ``rest_too_many_requests`` with a ``Retry-After`` header.
    """

    def __init__(self, retry_after: int, message: str = "Too many failed attempts. Try again later."):
        super().__init__(message)
        self.retry_after = retry_after


class Busy(Exception):
    """Every password-check slot is taken; the HTTP layer answers 503 with ``Retry-After``."""

    def __init__(self):
        super().__init__("The server is busy checking passwords. Try again shortly.")
        self.retry_after = BUSY_RETRY_AFTER


class AttemptLimiter:
    """Failures per key in a sliding window of ``window`` seconds; ``attempts`` <= 0 turns it off.

    With ``state`` (the state database: ``limit_retry_after``, ``limit_failed``, ``limit_keys``)
    the failures are kept there under ``kind``, shared by every process using it; else in memory."""

    def __init__(self, attempts: int, window: float, size: int = 10_000, clock=None, state=None,
                 kind: str = "limit"):
        self.attempts = int(attempts)
        self.window = float(window)
        self.size = max(1, int(size))
        self.state = state
        self.kind = kind
        # shared counts are timed by the wall clock (the same on every host); memory by a monotonic one
        self.clock = clock or (time.time if state is not None else time.monotonic)
        self._lock = threading.Lock()
        self._failures: OrderedDict[object, deque] = OrderedDict()

    def __len__(self) -> int:
        if self.state is not None:
            return self.state.limit_keys(self.kind)
        return len(self._failures)

    def _key(self, key) -> str:
        return limit_key(self.kind, key)

    def retry_after(self, key) -> int:
        """Seconds until ``key`` may try again; 0 when it may try now."""
        if self.attempts <= 0:
            return 0
        if self.state is not None:
            wait = self.state.limit_retry_after(self.kind, self._key(key), self.attempts, self.window, self.clock())
            return max(1, math.ceil(wait)) if wait > 0 else 0
        with self._lock:
            times = self._failures.get(key)
            if not times:
                return 0
            now = self.clock()
            while times and times[0] <= now - self.window:
                times.popleft()
            if len(times) < self.attempts:
                return 0
            return max(1, math.ceil(times[0] + self.window - now))

    def failed(self, key) -> None:
        if self.attempts <= 0:
            return
        if self.state is not None:
            self.state.limit_failed(self.kind, self._key(key), self.attempts, self.window, self.size, self.clock())
            return
        with self._lock:
            times = self._failures.get(key)
            if times is None:
                # only the last ``attempts`` failures matter: older ones cannot block anything
                times = self._failures[key] = deque(maxlen=self.attempts)
            times.append(self.clock())
            self._failures.move_to_end(key)
            while len(self._failures) > self.size:
                self._failures.popitem(last=False)


class Limits:
    """The limiters of one service (one process) and the Argon2 slots."""

    def __init__(self, login_attempts: int = 10, login_address_attempts: int = 30, login_window: float = 300,
                 event_password_attempts: int = 10, event_password_window: float = 300, size: int = 10_000,
                 argon2_concurrency: int = 2, trust_forwarded_for: bool = False,
                 remote_lookups: int = 30, remote_lookup_window: float = 60, state=None):
        for name, value in (("login attempts", login_attempts), ("login address attempts", login_address_attempts),
                            ("event password attempts", event_password_attempts),
                            ("remote lookups", remote_lookups)):
            if value < 0:
                raise ValueError(f"{name} must be 0 (no limit) or a positive number")
        if login_window <= 0 or event_password_window <= 0 or remote_lookup_window <= 0 or size < 1 \
                or argon2_concurrency < 1:
            raise ValueError("limit windows, the limiter size and the Argon2 concurrency must be positive")
        self.state = state
        self.login = AttemptLimiter(login_attempts, login_window, size, state=state, kind="login")
        self.address = AttemptLimiter(login_address_attempts, login_window, size, state=state, kind="address")
        self.event = AttemptLimiter(event_password_attempts, event_password_window, size, state=state, kind="event")
        self.lookups = AttemptLimiter(remote_lookups, remote_lookup_window, size, state=state, kind="lookup")
        self.trust_forwarded_for = trust_forwarded_for  # as set: the app's WSGI middleware acts on it (see client)
        self._argon2 = threading.BoundedSemaphore(argon2_concurrency)

    @classmethod
    def from_settings(cls, settings, state=None) -> "Limits":
        """The limits of ``settings``, counted in ``state`` (the state database) when given."""
        return cls(settings.login_attempts, settings.login_address_attempts, settings.login_window,
                   settings.event_password_attempts, settings.event_password_window, settings.limiter_size,
                   settings.argon2_concurrency, settings.trust_forwarded_for,
                   settings.changes_remote_lookups, settings.changes_remote_window, state)

    def client(self, request) -> str:
        """The client address of a request (anything with ``remote_addr``).

        ``X-Forwarded-For`` is anyone's to send, so it counts only when the service is told it
        runs behind a proxy (``trust_forwarded_for``); then the app's WSGI middleware has put
        the last address of that header, the one the proxy saw, in ``remote_addr``.
        """
        return request.remote_addr or ""

    # ----------------------------------------------------------------------------- sign-in

    def check_login(self, login: str | None, client: str | None) -> None:
        """Raise ``Throttled`` when this login or this address has used up its attempts."""
        wait = max(self.login.retry_after(login) if login is not None else 0,
                   self.address.retry_after(client) if client is not None else 0)
        if wait:
            raise Throttled(wait)

    def login_failed(self, login: str | None, client: str | None) -> None:
        if login is not None:
            self.login.failed(login)
        if client is not None:
            self.address.failed(client)

    @contextmanager
    def argon2_slot(self):
        """Hold one of the Argon2 slots for a check; ``Busy`` when none frees up in time."""
        if not self._argon2.acquire(timeout=ARGON2_WAIT):
            raise Busy()
        try:
            yield
        finally:
            self._argon2.release()

    # ----------------------------------------------------------------------------- event passwords

    def check_event(self, record_id, client: str) -> None:
        """Raise ``Throttled`` when this address has used up its guesses at this record's password."""
        wait = self.event.retry_after((record_id, client))
        if wait:
            raise Throttled(wait)

    def event_password(self, record_id, client: str, given, secret: str) -> bool:
        """Whether ``given`` is the record's password (in constant time); a wrong guess counts.

        While the address is locked out of the record the answer is False even for the right
        password, so a list (which blanks rather than refuses) is no way around the limit.
        """
        if not isinstance(given, str) or not given:
            return False
        if self.event.retry_after((record_id, client)):
            return False
        if hmac.compare_digest(given.encode(), str(secret).encode()):
            return True
        self.event.failed((record_id, client))
        return False

    # ----------------------------------------------------------------------------- the remote, asked by anyone

    def remote_lookup(self, client: str) -> None:
        """Count one look at the git remote an anonymous caller asked for (a change token this
        replica does not know); raise ``Throttled`` once this address has used up its lookups."""
        wait = self.lookups.retry_after(client)
        if wait:
            raise Throttled(wait, "Too many change tokens this server does not know. Try again later.")
        self.lookups.failed(client)

"""The service's own state, kept beside the content and never in it: webhook subscriptions (with
their secrets), the queue and log of their deliveries, the cursor of the last commit turned into
deliveries, the lease that elects the one process that delivers, and the failed sign-in and
password attempts the limits count.

Two backends, one API and one set of SQL statements (``?`` placeholders; each backend's
dialect translates them and brings what differs: connecting, the transaction, the DDL, row
locks):

- SQLite (the default): ``webhooks.sqlite3`` in ``CALENDAR_STATE_DIR``, for one machine
  (``state_sqlite.py``). The file is created by the first subscription or the first failed
  attempt: a service that never sees either writes nothing there.
- PostgreSQL (``CALENDAR_STATE_URL=postgresql://...``), for replicas on several hosts
  (``state_postgres.py``).

Every thread opens its own connection. Writes are transactions; the lease row is read ``FOR
UPDATE`` in the transaction that takes it, and deliveries are *claimed* (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL, SQLite's write lock) by one process for a while before it attempts
them, so two processes that both believe they deliver never attempt the same one at once.

A backend that cannot be reached raises ``StateUnavailable`` (logged once per outage, never
with the URL's password); the broken connection is dropped and the next call opens another.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
from pathlib import Path
from urllib.parse import urlsplit

from calendar_service.storage.state_sqlite import FILE_NAME, SQLiteDialect

log = logging.getLogger(__name__)

KEEP_DELIVERED = 200      # delivered entries kept per subscription in the log (older ones dropped)
LEASE_NAME = "delivery"
SWEEP_EVERY = 100         # failed attempts (per process) between sweeps of expired ones and of keys beyond the size
RETRIES = 3              # runs of a transaction PostgreSQL rolled back to break a deadlock
RETRY_AFTER = 5           # seconds a client is asked to wait while the state cannot be reached

COPIED = ("subscriptions", "deliveries", "meta")  # what copy_from moves

__all__ = ["FILE_NAME", "StateDB", "StateUnavailable"]


def schema(id_column: str) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS subscriptions (
            id {id_column},
            owner INTEGER NOT NULL,
            url TEXT NOT NULL,
            secret TEXT NOT NULL,
            filter TEXT NOT NULL,
            enabled INTEGER NOT NULL DEFAULT 1,
            failures INTEGER NOT NULL DEFAULT 0,
            disabled_reason TEXT,
            created DOUBLE PRECISION NOT NULL,
            updated DOUBLE PRECISION NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS deliveries (
            id {id_column},
            subscription INTEGER NOT NULL,
            message_id TEXT NOT NULL UNIQUE,
            commit_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt DOUBLE PRECISION NOT NULL,
            last_error TEXT,
            last_status INTEGER,
            created DOUBLE PRECISION NOT NULL,
            last_attempt DOUBLE PRECISION,
            delivered DOUBLE PRECISION)""",
        "CREATE INDEX IF NOT EXISTS deliveries_queue ON deliveries (subscription, status, id)",
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)",
        # the lease row always exists, so taking it is a row lock, never a race between two inserts
        f"INSERT INTO lease (name, owner, expires) VALUES ('{LEASE_NAME}', '', 0) ON CONFLICT (name) DO NOTHING",
        f"""CREATE TABLE IF NOT EXISTS failures (
            id {id_column},
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS failures_key ON failures (kind, key, at)",
        "CREATE INDEX IF NOT EXISTS failures_at ON failures (kind, at)",
    ]


# columns added to tables of an older state database
COLUMNS = {"deliveries": [("claimed_by", "TEXT"), ("claimed_until", "DOUBLE PRECISION")]}


class StateUnavailable(Exception):
    """The state database cannot be reached; ``retry_after`` in seconds. Sign-in, event passwords
    and webhook management answer 503 ``calendar-state-unavailable`` meanwhile."""

    def __init__(self, message: str = "The service's state database cannot be reached. Try again shortly."):
        super().__init__(message)
        self.retry_after = RETRY_AFTER


def _guarded(method):
    """Turn a backend that cannot be reached into ``StateUnavailable`` (and drop a broken connection)."""
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        for attempt in range(RETRIES):
            try:
                result = method(self, *args, **kwargs)
                break
            except self.dialect.retryable:   # rolled back (a deadlock): run it again
                if attempt == RETRIES - 1:
                    raise StateUnavailable() from None
            except self.dialect.unavailable as exc:
                self._unreachable(exc)
                raise StateUnavailable() from None
        if self._down:
            self._reachable()
        return result
    return guarded


class StateDB:
    """The state database: SQLite in ``directory`` (opened on first use; created only by a write
    that asks for it), or PostgreSQL at ``url`` when one is given."""

    def __init__(self, directory: Path, url: str = ""):
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        if url:
            from calendar_service.storage.state_postgres import PostgresDialect
            self.dialect = PostgresDialect(url)
        else:
            self.dialect = SQLiteDialect(self.directory)
        self.kind = self.dialect.kind
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()
        self._down = False
        self._failed_count = 0

    @classmethod
    def of(cls, settings) -> "StateDB":
        return cls(settings.state_dir, getattr(settings, "state_url", "") or "")

    def exists(self) -> bool:
        return self.dialect.exists()

    # ------------------------------------------------------------------------- connections

    def _connection(self, create: bool = False):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = self.dialect.connect(create, schema(self.dialect.id_column), COLUMNS)
        if conn is None:
            return None
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def _unreachable(self, exc: Exception) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.dialect.broken(conn, exc):
            self._local.conn = None
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            with contextlib.suppress(Exception):
                conn.close()
        with self._lock:
            first, self._down = not self._down, True
        if first:  # once per outage; the reason without the URL's password
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            password = urlsplit(getattr(self.dialect, "url", "")).password
            if password:
                reason = reason.replace(password, "***")
            log.error("the state database (%s, %s) cannot be reached: %s", self.kind, self.dialect.describe(), reason)

    def _reachable(self) -> None:
        with self._lock:
            was, self._down = self._down, False
        if was:
            log.warning("the state database (%s) can be reached again", self.kind)

    def _run(self, conn, sql: str, params=()):
        return conn.execute(self.dialect.sql(sql), tuple(params))

    def _one(self, conn, sql: str, params=()) -> dict | None:
        return self._run(conn, sql, params).fetchone()

    def _all(self, conn, sql: str, params=()) -> list[dict]:
        return list(self._run(conn, sql, params).fetchall())

    @contextlib.contextmanager
    def write(self, create: bool = False):
        """A write transaction (None when the database does not exist and ``create`` is false)."""
        conn = self._connection(create)
        if conn is None:
            yield None
            return
        with self.dialect.transaction(conn):
            yield conn

    def read(self):
        return self._connection()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(Exception):
                conn.close()
        self._local = threading.local()

    @_guarded
    def ping(self) -> bool:
        """Whether the database answers (True for a SQLite database not created yet)."""
        conn = self.read()
        if conn is not None:
            self._one(conn, "SELECT 1 AS one")
        return True

    def status(self) -> dict:
        """The backend and whether it can be reached (for /status; never the URL's password)."""
        try:
            reachable = self.ping()
        except StateUnavailable:
            reachable = False
        return {"kind": self.kind, "reachable": reachable, "location": self.dialect.describe()}

    # ------------------------------------------------------------------------- moving the state

    @_guarded
    def copy_from(self, source: "StateDB") -> dict[str, int]:
        """Copy ``source``'s subscriptions (secrets included), their queue and delivery log and the
        cursor here, ids kept (so a repeated delivery keeps its webhook-id, and a subscription its
        URL): how one machine's SQLite state moves to PostgreSQL. Claims and the lease are not
        copied (nothing delivers while the service is stopped for the move), nor the failed
        attempts (they matter for minutes). One transaction; ValueError when this database already
        holds subscriptions. Returns the rows copied per table."""
        if source.dialect.describe() == self.dialect.describe():
            raise ValueError("the source and the target are the same state database")
        src = source.read()
        counts = {table: 0 for table in COPIED}
        if src is None:
            return counts
        rows = {table: source._all(src, f"SELECT * FROM {table} ORDER BY 1") for table in COPIED}
        with self.write(create=True) as conn:
            if self._one(conn, "SELECT COUNT(*) AS n FROM subscriptions")["n"]:
                raise ValueError("the target state database already holds subscriptions: nothing was copied")
            self._run(conn, "DELETE FROM deliveries")
            self._run(conn, "DELETE FROM meta")
            for table in COPIED:
                for row in rows[table]:
                    if table == "deliveries":
                        row = {**row, "claimed_by": None, "claimed_until": None}
                    self._run(conn, f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                              tuple(row.values()))
                counts[table] = len(rows[table])
            self.dialect.ids_copied(conn, [t for t in COPIED if t != "meta"])
        return counts

    # ------------------------------------------------------------------------- subscriptions

    @_guarded
    def add_subscription(self, owner: int, url: str, secret: str, filter: dict, now: float, head: str) -> dict:
        """Store a new subscription. The first one also starts the cursor at ``head``: commits
        made before webhooks were used are never announced."""
        with self.write(create=True) as conn:
            self._run(conn, "INSERT INTO meta (key, value) VALUES ('cursor', ?) ON CONFLICT (key) DO NOTHING", (head,))
            new_id = self._one(conn, "INSERT INTO subscriptions (owner, url, secret, filter, created, updated) "
                                     "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                               (owner, url, secret, json.dumps(filter), now, now))["id"]
        return self.subscription(new_id)

    @_guarded
    def subscription(self, sub_id: int) -> dict | None:
        conn = self.read()
        if conn is None:
            return None
        row = self._one(conn, "SELECT * FROM subscriptions WHERE id=?", (sub_id,))
        return _subscription(row) if row else None

    @_guarded
    def subscriptions(self, owner: int | None = None, limit: int = 50, offset: int = 0,
                      enabled_only: bool = False) -> tuple[list[dict], int]:
        """Subscriptions (of ``owner``, or all), oldest first, one page of them, and how many there are."""
        conn = self.read()
        if conn is None:
            return [], 0
        where, params = [], []
        if owner is not None:
            where.append("owner=?")
            params.append(owner)
        if enabled_only:
            where.append("enabled=1")
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        total = self._one(conn, "SELECT COUNT(*) AS n FROM subscriptions" + clause, params)["n"]
        rows = self._all(conn, "SELECT * FROM subscriptions" + clause + " ORDER BY id LIMIT ? OFFSET ?",
                         params + [limit, offset])
        return [_subscription(r) for r in rows], total

    @_guarded
    def update_subscription(self, sub_id: int, now: float, **values) -> dict | None:
        """Change ``url``, ``filter`` or ``enabled`` (enabling clears the run of failures)."""
        sets, params = ["updated=?"], [now]
        for key, value in values.items():
            if key == "filter":
                value = json.dumps(value)
            if key == "enabled":
                value = 1 if value else 0
                if value:
                    sets += ["failures=0", "disabled_reason=NULL"]
            sets.append(f"{key}=?")
            params.append(value)
        with self.write() as conn:
            if conn is None:
                return None
            self._run(conn, f"UPDATE subscriptions SET {', '.join(sets)} WHERE id=?", params + [sub_id])
            if values.get("enabled"):  # retried at once
                self._run(conn, "UPDATE deliveries SET next_attempt=? WHERE subscription=? AND status='pending'",
                          (now, sub_id))
        return self.subscription(sub_id)

    @_guarded
    def delete_subscription(self, sub_id: int) -> None:
        with self.write() as conn:
            if conn is not None:
                self._run(conn, "DELETE FROM deliveries WHERE subscription=?", (sub_id,))
                self._run(conn, "DELETE FROM subscriptions WHERE id=?", (sub_id,))

    # ------------------------------------------------------------------------- the queue

    @_guarded
    def cursor(self) -> str | None:
        """The last commit turned into deliveries (None before the first subscription)."""
        conn = self.read()
        if conn is None:
            return None
        row = self._one(conn, "SELECT value FROM meta WHERE key='cursor'")
        return row["value"] if row else None

    @_guarded
    def enqueue(self, expected: str, cursor: str, rows: list[tuple[int, str, str, str]], now: float) -> bool:
        """Add deliveries ``(subscription, message id, commit, payload)`` and move the cursor from
        ``expected`` to ``cursor``, in one transaction; False (nothing added) when the cursor is no
        longer ``expected`` (another process enqueued those commits meanwhile)."""
        with self.write() as conn:
            row = self._one(conn, "SELECT value FROM meta WHERE key='cursor'" + self.dialect.for_update)
            if row is None or row["value"] != expected:
                return False
            live = {r["id"] for r in self._all(conn, "SELECT id FROM subscriptions")}
            for s, m, c, p in rows:
                if s in live:
                    self._run(conn, "INSERT INTO deliveries (subscription, message_id, commit_id, payload, "
                                    "next_attempt, created) VALUES (?, ?, ?, ?, ?, ?)", (s, m, c, p, now, now))
            self._run(conn, "UPDATE meta SET value=? WHERE key='cursor'", (cursor,))
        return True

    _HEADS = ("FROM deliveries d JOIN subscriptions s ON s.id = d.subscription "
              "WHERE s.enabled=1 AND d.status='pending' AND d.id = (SELECT MIN(id) FROM deliveries "
              "WHERE subscription=d.subscription AND status='pending')")

    @_guarded
    def claim(self, now: float, owner: str, seconds: float) -> tuple[list[dict], float | None]:
        """Claim for ``owner`` until ``now + seconds`` the due head of every enabled subscription
        that no other owner holds a live claim on (an owner's own claims are taken again); returns
        them and the earliest time another head will be due or free. Only the claimer records the
        outcome of an attempt (``delivered``, ``failed``): two processes that both believe they
        deliver never attempt the same delivery at once."""
        with self.write() as conn:
            if conn is None:
                return [], None
            free = "(d.claimed_until IS NULL OR d.claimed_until <= ? OR d.claimed_by = ?)"
            claimed = self._all(conn, "SELECT d.*, s.url, s.secret " + self._HEADS +
                                f" AND d.next_attempt <= ? AND {free} ORDER BY d.id" + self.dialect.skip_locked,
                                (now, now, owner))
            for row in claimed:
                row["claimed_by"], row["claimed_until"] = owner, now + seconds
                self._run(conn, "UPDATE deliveries SET claimed_by=?, claimed_until=? WHERE id=?",
                          (owner, now + seconds, row["id"]))
            later = self._one(conn, "SELECT MIN(CASE WHEN d.next_attempt > ? THEN d.next_attempt "
                                    "ELSE d.claimed_until END) AS at " + self._HEADS +
                              f" AND NOT (d.next_attempt <= ? AND {free})", (now, now, now, owner))["at"]
        return claimed, later

    @_guarded
    def hold(self, delivery_id: int, owner: str, until: float) -> bool:
        """Extend ``owner``'s claim on a delivery (before an attempt that started late); False when
        it is no longer ``owner``'s."""
        with self.write() as conn:
            return self._run(conn, "UPDATE deliveries SET claimed_until=? WHERE id=? AND claimed_by=? "
                                   "AND status='pending'", (until, delivery_id, owner)).rowcount == 1

    @_guarded
    def release_claims(self, ids: list[int], owner: str) -> None:
        """Give up ``owner``'s claims on deliveries it did not attempt."""
        if not ids:
            return
        with self.write() as conn:
            for delivery_id in ids:
                self._run(conn, "UPDATE deliveries SET claimed_by=NULL, claimed_until=NULL WHERE id=? AND claimed_by=?",
                          (delivery_id, owner))

    def _claimed(self, conn, delivery_id: int, owner: str | None) -> int | None:
        """The subscription of a delivery, locked for this transaction, when ``owner`` (None: anyone)
        still holds its claim; None when another process does or it is gone."""
        row = self._one(conn, "SELECT subscription, claimed_by FROM deliveries WHERE id=?" + self.dialect.for_update,
                        (delivery_id,))
        if row is None or (owner is not None and row["claimed_by"] != owner):
            return None
        return row["subscription"]

    @_guarded
    def delivered(self, delivery_id: int, now: float, status_code: int, owner: str | None = None) -> bool:
        """Record a delivery; only for the process that claimed it (``owner``; None: whoever).
        False when another one holds it now (or the subscription was deleted meanwhile)."""
        with self.write() as conn:
            sub = self._claimed(conn, delivery_id, owner)
            if sub is None:
                return False
            self._run(conn, "UPDATE deliveries SET status='delivered', attempts=attempts+1, last_attempt=?, "
                            "delivered=?, last_status=?, last_error=NULL, claimed_by=NULL, claimed_until=NULL "
                            "WHERE id=?", (now, now, status_code, delivery_id))
            self._run(conn, "UPDATE subscriptions SET failures=0 WHERE id=?", (sub,))
            self._run(conn, "DELETE FROM deliveries WHERE subscription=? AND status='delivered' AND id <= "
                            "(SELECT id FROM deliveries WHERE subscription=? AND status='delivered' "
                            "ORDER BY id DESC LIMIT 1 OFFSET ?)", (sub, sub, KEEP_DELIVERED))
        return True

    @_guarded
    def failed(self, delivery_id: int, now: float, error: str, status_code: int | None, retry_at: float,
               max_failures: int, owner: str | None = None) -> bool:
        """Record a failed attempt (only for the claimer ``owner``, as ``delivered``); returns True
        when it disabled the subscription (``max_failures`` consecutive failures; 0 = never)."""
        with self.write() as conn:
            sub = self._claimed(conn, delivery_id, owner)
            if sub is None:
                return False
            self._run(conn, "UPDATE deliveries SET attempts=attempts+1, last_attempt=?, last_error=?, last_status=?, "
                            "next_attempt=?, claimed_by=NULL, claimed_until=NULL WHERE id=?",
                      (now, error, status_code, retry_at, delivery_id))
            failures = self._one(conn, "UPDATE subscriptions SET failures=failures+1 WHERE id=? RETURNING failures",
                                 (sub,))["failures"]
            if max_failures and failures >= max_failures:
                self._run(conn, "UPDATE subscriptions SET enabled=0, disabled_reason=? WHERE id=?",
                          (f"{failures} consecutive failed deliveries", sub))
                return True
        return False

    @_guarded
    def deliveries(self, sub_id: int, limit: int, offset: int) -> tuple[list[dict], int]:
        """The delivery log of a subscription, newest first."""
        conn = self.read()
        if conn is None:
            return [], 0
        total = self._one(conn, "SELECT COUNT(*) AS n FROM deliveries WHERE subscription=?", (sub_id,))["n"]
        rows = self._all(conn, "SELECT * FROM deliveries WHERE subscription=? ORDER BY id DESC LIMIT ? OFFSET ?",
                         (sub_id, limit, offset))
        return rows, total

    # ------------------------------------------------------------------------- the lease

    @_guarded
    def take_lease(self, owner: str, seconds: float, now: float) -> bool:
        """Take or renew the delivery lease for ``owner`` until ``now + seconds``; False while
        another owner holds an unexpired one. The lease row is locked while it is looked at."""
        with self.write() as conn:
            if conn is None:
                return False
            row = self._one(conn, "SELECT owner, expires FROM lease WHERE name=?" + self.dialect.for_update,
                            (LEASE_NAME,))
            if row is not None and row["owner"] not in ("", owner) and row["expires"] > now:
                return False
            self._run(conn, "UPDATE lease SET owner=?, expires=? WHERE name=?", (owner, now + seconds, LEASE_NAME))
        return True

    @_guarded
    def release_lease(self, owner: str) -> None:
        with self.write() as conn:
            if conn is not None:
                self._run(conn, "UPDATE lease SET owner='', expires=0 WHERE name=? AND owner=?", (LEASE_NAME, owner))

    @_guarded
    def lease_owner(self, now: float) -> str | None:
        conn = self.read()
        if conn is None:
            return None
        row = self._one(conn, "SELECT owner, expires FROM lease WHERE name=?", (LEASE_NAME,))
        return row["owner"] if row and row["owner"] and row["expires"] > now else None

    # ------------------------------------------------------------------------- failed attempts (the limits)

    @_guarded
    def limit_retry_after(self, kind: str, key: str, attempts: int, window: float, now: float) -> float:
        """Seconds until ``key`` (a digest: see ``auth.limits.limit_key``) of ``kind`` may try again: 0 while fewer than
        ``attempts`` of its failures are in the window, else until the oldest of the newest
        ``attempts`` ones leaves it."""
        conn = self.read()
        if conn is None:
            return 0.0
        row = self._one(conn, "SELECT at FROM failures WHERE kind=? AND key=? AND at > ? ORDER BY at DESC "
                              "LIMIT 1 OFFSET ?", (kind, key, now - window, attempts - 1))
        return 0.0 if row is None else max(0.0, row["at"] + window - now)

    @_guarded
    def limit_failed(self, kind: str, key: str, attempts: int, window: float, size: int, now: float) -> None:
        """Count a failure of ``key``: only its newest ``attempts`` failures are kept (older ones
        cannot block anything); now and then, failures that left the window are dropped and, past
        ``size`` keys of ``kind``, the keys that failed least recently."""
        with self.write(create=True) as conn:
            self._run(conn, "INSERT INTO failures (kind, key, at) VALUES (?, ?, ?)", (kind, key, now))
            self._run(conn, "DELETE FROM failures WHERE kind=? AND key=? AND id NOT IN (SELECT id FROM failures "
                            "WHERE kind=? AND key=? ORDER BY at DESC, id DESC LIMIT ?)", (kind, key, kind, key, attempts))
            with self._lock:
                self._failed_count += 1
                sweep = self._failed_count % SWEEP_EVERY == 1
            if sweep:
                self._sweep(conn, kind, window, size, now)

    def _sweep(self, conn, kind: str, window: float, size: int, now: float) -> None:
        self._run(conn, "DELETE FROM failures WHERE kind=? AND at <= ?", (kind, now - window))
        keys = self._one(conn, "SELECT COUNT(DISTINCT key) AS n FROM failures WHERE kind=?", (kind,))["n"]
        if keys > size:
            self._run(conn, "DELETE FROM failures WHERE kind=? AND key IN (SELECT key FROM failures WHERE kind=? "
                            "GROUP BY key ORDER BY MAX(id) LIMIT ?)", (kind, kind, keys - size))

    @_guarded
    def limit_keys(self, kind: str) -> int:
        """How many keys of ``kind`` have failures stored."""
        conn = self.read()
        if conn is None:
            return 0
        return self._one(conn, "SELECT COUNT(DISTINCT key) AS n FROM failures WHERE kind=?", (kind,))["n"]


def _subscription(row: dict) -> dict:
    found = dict(row)
    found["filter"] = json.loads(found["filter"])
    found["enabled"] = bool(found["enabled"])
    return found

"""The service's own state, kept beside the content and never in it: webhook subscriptions (with
their secrets), the queue and log of their deliveries, the cursor of the last commit turned into
deliveries, and the lease that elects the one process that delivers.

One SQLite database (``webhooks.sqlite3`` in ``CALENDAR_STATE_DIR``), file mode 0600, in WAL mode
with ``synchronous=FULL``: a transaction that returned is on disk, so a kill -9 loses nothing
confirmed. Every process and thread opens its own connection; writes take SQLite's write lock
(``BEGIN IMMEDIATE``), so gunicorn workers and replicas sharing the directory stay consistent.
The database is created by the first subscription: a service whose webhooks are never used
writes nothing there.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path

FILE_NAME = "webhooks.sqlite3"
BUSY_MS = 10_000          # how long a connection waits for another one's write lock
KEEP_DELIVERED = 200      # delivered entries kept per subscription in the log (older ones dropped)
LEASE_NAME = "delivery"

SCHEMA = """
CREATE TABLE IF NOT EXISTS subscriptions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner INTEGER NOT NULL,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    filter TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    failures INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription INTEGER NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    commit_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL,
    last_error TEXT,
    last_status INTEGER,
    created REAL NOT NULL,
    last_attempt REAL,
    delivered REAL
);
CREATE INDEX IF NOT EXISTS deliveries_queue ON deliveries (subscription, status, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
"""


class StateDB:
    """The state database in ``directory`` (opened on first use; created only by ``create``)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def exists(self) -> bool:
        return self.path.exists()

    def _connection(self, create: bool = False) -> sqlite3.Connection | None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if not self.path.exists():
            if not create:
                return None
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)  # secrets inside: owner only
            os.close(fd)
        os.chmod(self.path, 0o600)
        conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        with self._transaction(conn):
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.chmod(str(self.path) + suffix, 0o600)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    @staticmethod
    @contextlib.contextmanager
    def _transaction(conn: sqlite3.Connection):
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextlib.contextmanager
    def write(self, create: bool = False):
        """A write transaction (None when the database does not exist and ``create`` is false)."""
        conn = self._connection(create)
        if conn is None:
            yield None
            return
        with self._transaction(conn):
            yield conn

    def read(self) -> sqlite3.Connection | None:
        return self._connection()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    # ------------------------------------------------------------------------- subscriptions

    def add_subscription(self, owner: int, url: str, secret: str, filter: dict, now: float, head: str) -> dict:
        """Store a new subscription. The first one also starts the cursor at ``head``: commits
        made before webhooks were used are never announced."""
        with self.write(create=True) as conn:
            if conn.execute("SELECT value FROM meta WHERE key='cursor'").fetchone() is None:
                conn.execute("INSERT INTO meta (key, value) VALUES ('cursor', ?)", (head,))
            cur = conn.execute("INSERT INTO subscriptions (owner, url, secret, filter, created, updated) "
                               "VALUES (?, ?, ?, ?, ?, ?)", (owner, url, secret, json.dumps(filter), now, now))
            new_id = cur.lastrowid
        return self.subscription(new_id)

    def subscription(self, sub_id: int) -> dict | None:
        conn = self.read()
        if conn is None:
            return None
        row = conn.execute("SELECT * FROM subscriptions WHERE id=?", (sub_id,)).fetchone()
        return _subscription(row) if row else None

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
        total = conn.execute("SELECT COUNT(*) FROM subscriptions" + clause, params).fetchone()[0]
        rows = conn.execute("SELECT * FROM subscriptions" + clause + " ORDER BY id LIMIT ? OFFSET ?",
                            params + [limit, offset]).fetchall()
        return [_subscription(r) for r in rows], total

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
            conn.execute(f"UPDATE subscriptions SET {', '.join(sets)} WHERE id=?", params + [sub_id])
            if values.get("enabled"):  # retried at once
                conn.execute("UPDATE deliveries SET next_attempt=? WHERE subscription=? AND status='pending'",
                             (now, sub_id))
        return self.subscription(sub_id)

    def delete_subscription(self, sub_id: int) -> None:
        with self.write() as conn:
            if conn is not None:
                conn.execute("DELETE FROM deliveries WHERE subscription=?", (sub_id,))
                conn.execute("DELETE FROM subscriptions WHERE id=?", (sub_id,))

    # ------------------------------------------------------------------------- the queue

    def cursor(self) -> str | None:
        """The last commit turned into deliveries (None before the first subscription)."""
        conn = self.read()
        if conn is None:
            return None
        row = conn.execute("SELECT value FROM meta WHERE key='cursor'").fetchone()
        return row[0] if row else None

    def enqueue(self, expected: str, cursor: str, rows: list[tuple[int, str, str, str]], now: float) -> bool:
        """Add deliveries ``(subscription, message id, commit, payload)`` and move the cursor from
        ``expected`` to ``cursor``, in one transaction; False (nothing added) when the cursor is no
        longer ``expected`` (another process enqueued those commits meanwhile)."""
        with self.write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key='cursor'").fetchone()
            if row is None or row[0] != expected:
                return False
            live = {r[0] for r in conn.execute("SELECT id FROM subscriptions")}
            conn.executemany("INSERT INTO deliveries (subscription, message_id, commit_id, payload, next_attempt, "
                             "created) VALUES (?, ?, ?, ?, ?, ?)",
                             [(s, m, c, p, now, now) for s, m, c, p in rows if s in live])
            conn.execute("UPDATE meta SET value=? WHERE key='cursor'", (cursor,))
        return True

    def due(self, now: float) -> tuple[list[dict], float | None]:
        """The first undelivered entry of every enabled subscription whose time has come (commit
        order: a later one waits for it), and the earliest time another one will be due."""
        conn = self.read()
        if conn is None:
            return [], None
        heads = conn.execute(
            "SELECT d.*, s.url, s.secret FROM deliveries d JOIN subscriptions s ON s.id = d.subscription "
            "WHERE s.enabled=1 AND d.id = (SELECT MIN(id) FROM deliveries WHERE subscription=d.subscription "
            "AND status='pending') ORDER BY d.id").fetchall()
        ready = [dict(r) for r in heads if r["next_attempt"] <= now]
        later = [r["next_attempt"] for r in heads if r["next_attempt"] > now]
        return ready, (min(later) if later else None)

    def delivered(self, delivery_id: int, now: float, status_code: int) -> None:
        with self.write() as conn:
            row = conn.execute("SELECT subscription FROM deliveries WHERE id=?", (delivery_id,)).fetchone()
            if row is None:
                return  # the subscription was deleted meanwhile
            conn.execute("UPDATE deliveries SET status='delivered', attempts=attempts+1, last_attempt=?, "
                         "delivered=?, last_status=?, last_error=NULL WHERE id=?",
                         (now, now, status_code, delivery_id))
            conn.execute("UPDATE subscriptions SET failures=0 WHERE id=?", (row[0],))
            conn.execute("DELETE FROM deliveries WHERE subscription=? AND status='delivered' AND id <= "
                         "(SELECT id FROM deliveries WHERE subscription=? AND status='delivered' "
                         "ORDER BY id DESC LIMIT 1 OFFSET ?)", (row[0], row[0], KEEP_DELIVERED))

    def failed(self, delivery_id: int, now: float, error: str, status_code: int | None, retry_at: float,
               max_failures: int) -> bool:
        """Record a failed attempt; returns True when it disabled the subscription (``max_failures``
        consecutive failures; 0 = never)."""
        with self.write() as conn:
            row = conn.execute("SELECT subscription FROM deliveries WHERE id=?", (delivery_id,)).fetchone()
            if row is None:
                return False
            conn.execute("UPDATE deliveries SET attempts=attempts+1, last_attempt=?, last_error=?, last_status=?, "
                         "next_attempt=? WHERE id=?", (now, error, status_code, retry_at, delivery_id))
            conn.execute("UPDATE subscriptions SET failures=failures+1 WHERE id=?", (row[0],))
            failures = conn.execute("SELECT failures FROM subscriptions WHERE id=?", (row[0],)).fetchone()[0]
            if max_failures and failures >= max_failures:
                conn.execute("UPDATE subscriptions SET enabled=0, disabled_reason=? WHERE id=?",
                             (f"{failures} consecutive failed deliveries", row[0]))
                return True
        return False

    def deliveries(self, sub_id: int, limit: int, offset: int) -> tuple[list[dict], int]:
        """The delivery log of a subscription, newest first."""
        conn = self.read()
        if conn is None:
            return [], 0
        total = conn.execute("SELECT COUNT(*) FROM deliveries WHERE subscription=?", (sub_id,)).fetchone()[0]
        rows = conn.execute("SELECT * FROM deliveries WHERE subscription=? ORDER BY id DESC LIMIT ? OFFSET ?",
                            (sub_id, limit, offset)).fetchall()
        return [dict(r) for r in rows], total

    # ------------------------------------------------------------------------- the lease

    def take_lease(self, owner: str, seconds: float, now: float) -> bool:
        """Take or renew the delivery lease for ``owner`` until ``now + seconds``; False while
        another owner holds an unexpired one."""
        with self.write() as conn:
            if conn is None:
                return False
            row = conn.execute("SELECT owner, expires FROM lease WHERE name=?", (LEASE_NAME,)).fetchone()
            if row is not None and row[0] != owner and row[1] > now:
                return False
            conn.execute("INSERT INTO lease (name, owner, expires) VALUES (?, ?, ?) ON CONFLICT(name) "
                         "DO UPDATE SET owner=excluded.owner, expires=excluded.expires", (LEASE_NAME, owner, now + seconds))
        return True

    def release_lease(self, owner: str) -> None:
        with self.write() as conn:
            if conn is not None:
                conn.execute("DELETE FROM lease WHERE name=? AND owner=?", (LEASE_NAME, owner))

    def lease_owner(self, now: float) -> str | None:
        conn = self.read()
        if conn is None:
            return None
        row = conn.execute("SELECT owner, expires FROM lease WHERE name=?", (LEASE_NAME,)).fetchone()
        return row[0] if row and row[1] > now else None


def _subscription(row: sqlite3.Row) -> dict:
    found = dict(row)
    found["filter"] = json.loads(found["filter"])
    found["enabled"] = bool(found["enabled"])
    return found

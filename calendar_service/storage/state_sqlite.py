"""The state database as one SQLite file (``webhooks.sqlite3`` in ``CALENDAR_STATE_DIR``): what
differs from PostgreSQL (connecting, the write transaction, the DDL). The SQL of the state
itself is in ``state.py``, written once with ``?`` placeholders.

File mode 0600 (secrets inside), WAL mode with ``synchronous=FULL``: a transaction that
returned is on disk, so a kill -9 loses nothing confirmed. Writes take SQLite's write lock
(``BEGIN IMMEDIATE``), so gunicorn workers and processes on one machine stay consistent;
``FOR UPDATE`` is not needed (and not SQLite): the write lock already serializes them.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

FILE_NAME = "webhooks.sqlite3"
BUSY_MS = 10_000          # how long a connection waits for another one's write lock
WAL_RETRY_SECONDS = 0.01  # between tries of the switch to WAL while another connection makes it

ID = "INTEGER PRIMARY KEY AUTOINCREMENT"


def _dict_row(cursor, row) -> dict:
    return {d[0]: v for d, v in zip(cursor.description, row)}


def _switch_to_wal(conn) -> None:
    """WAL mode (kept in the file once set). Two processes opening a new file at once both ask
    for it, and SQLite answers the one that loses "database is locked" at once, without its busy
    handler (two gunicorn workers' first writes did): tried again until ``BUSY_MS`` has passed."""
    deadline = time.monotonic() + BUSY_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(WAL_RETRY_SECONDS)


class SQLiteDialect:
    kind = "sqlite"
    unavailable = (sqlite3.OperationalError,)   # cannot open, locked too long, disk I/O
    retryable = ()                               # (one writer at a time: no deadlocks)
    for_update = ""               # BEGIN IMMEDIATE holds the one write lock
    skip_locked = ""
    id_column = ID

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME

    def describe(self) -> str:
        return str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def sql(self, text: str) -> str:
        return text

    def connect(self, create: bool, schema: list[str], columns: dict[str, list[tuple[str, str]]]):
        """A connection with the schema in place; None when the file does not exist and not ``create``."""
        if not self.path.exists():
            if not create:
                return None
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)  # secrets inside: owner only
            os.close(fd)
        os.chmod(self.path, 0o600)
        conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        conn.row_factory = _dict_row
        _switch_to_wal(conn)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        with self.transaction(conn):
            for statement in schema:
                conn.execute(statement)
            for table, wanted in columns.items():  # columns added since the table was made
                have = {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}
                for name, decl in wanted:
                    if name not in have:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.chmod(str(self.path) + suffix, 0o600)
        return conn

    @staticmethod
    @contextlib.contextmanager
    def transaction(conn):
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def ids_copied(conn, tables: list[str]) -> None:
        """Nothing to do: AUTOINCREMENT goes on after the largest id inserted."""

    @staticmethod
    def broken(conn, exc: Exception) -> bool:
        """Whether ``exc`` leaves the connection unusable (SQLite's never does: the file is local)."""
        return False

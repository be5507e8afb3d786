"""A real PostgreSQL for the tests of the state database: started on loopback in a temporary
directory (``initdb`` + ``pg_ctl`` from Debian's ``postgresql`` package), one fresh database
per test, stopped at the end of the session. PostgreSQL refuses to run as root: as root, its
commands run as the ``postgres`` user (``runuser``) on a directory that user owns.

Tests that need it skip, saying why, only when no PostgreSQL binaries are installed
(``.ci/run`` installs them).
"""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

USER = "calendar"
PASSWORD = "pg-secret-word"   # a real password (scram-sha-256 on TCP), so its redaction is tested too


def binaries() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl`` (the newest installed version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """One PostgreSQL server in its own temporary directory."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="calendar-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.getuid() == 0
        self._names = itertools.count(1)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_root:
            owner = pwd.getpwnam("postgres")
            for path in (self.root, pwfile):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
        self.start()

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root, timeout=120)
        if check and done.returncode:
            raise RuntimeError(f"{tool} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root} "
                   "-c fsync=off -c max_connections=300 -c shared_buffers=16MB")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg
        name = f"state_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start_or_skip() -> Postgres:
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl): install Debian's postgresql package (.ci/run does)")
    return Postgres(bin_dir)


@pytest.fixture(scope="session")
def postgres_server():
    """The session's PostgreSQL server (skips when PostgreSQL is not installed)."""
    server = start_or_skip()
    yield server
    server.close()


@pytest.fixture
def state_url(postgres_server) -> str:
    """The URL of a fresh PostgreSQL database for this test's state."""
    return postgres_server.new_database()


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own (to be stopped and started again)."""
    server = start_or_skip()
    yield server
    server.close()

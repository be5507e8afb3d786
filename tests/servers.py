"""Real server processes for the concurrency, crash and secrets tests: gunicorn or ``python
app.py`` on a free port, in their own process group (so a SIGKILL takes the workers too),
always killed by the caller's ``finally``; every wait is bounded."""
from __future__ import annotations

import contextlib
import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import API

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One server process group on a temporary content repository."""

    def __init__(self, paths: dict, kind: str = "gunicorn", workers: int = 3, extra_env: dict | None = None,
                 log_level: str = "warning"):
        self.paths = paths
        self.log_level = log_level
        self.kind = kind
        self.workers = workers
        self.extra_env = extra_env or {}
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.stderr_path = Path(paths["content_dir"]).parent / "server-stderr.log"

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CALENDAR_", "GIT_"))}
        env.update(
            CALENDAR_CONTENT_DIR=str(self.paths["content_dir"]), CALENDAR_INDEX_DIR=str(self.paths["index_dir"]),
            CALENDAR_USERS_FILE=str(self.paths["users_file"]), CALENDAR_SEED_SAMPLE="false",
            CALENDAR_TIMEZONE="UTC", PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore",
            # the test's own state (failed attempts, webhooks), never ./state of the working directory
            CALENDAR_STATE_DIR=str(self.paths.get("state_dir") or Path(self.paths["content_dir"]).parent / "state"),
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 20) -> "Server":
        self.port = free_port()
        if self.kind == "gunicorn":
            cmd = [sys.executable, "-m", "gunicorn", "-w", str(self.workers), "-b", f"127.0.0.1:{self.port}",
                   "--graceful-timeout", "1", "--log-level", self.log_level, "calendar_service:create_app()"]
        else:
            cmd = [sys.executable, str(ROOT / "app.py"), "--port", str(self.port)]
        stderr = open(self.stderr_path, "ab")
        proc = self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env(), stdout=stderr, stderr=stderr,
                                            start_new_session=True)
        stderr.close()
        deadline = time.monotonic() + timeout
        # each worker fetches the calendar on its own: one answer says one worker is ready, so
        # wait for several in a row (the connections spread over the workers)
        needed, answered = 3 * self.workers if self.kind == "gunicorn" else 1, 0
        while time.monotonic() < deadline:
            if proc.poll() is not None:   # (``kill`` from another thread may have reaped it already)
                raise RuntimeError(f"server exited: {self.stderr()[-2000:]}")
            try:
                status, _, _ = self.request("GET", "/events", timeout=2)
                answered = answered + 1 if status == 200 else 0
                if answered >= needed:
                    return self
                if status == 200:
                    continue
            except OSError:
                answered = 0
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server did not answer within {timeout} s: {self.stderr()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the whole process group (master and workers) and reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        self.proc = None

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def request(self, method: str, path: str, body=None, auth: tuple[str, str] | None = None,
                timeout: float = 30, headers: dict | None = None, api: bool = True) -> tuple[int, dict | None, str]:
        """Send one request (``path`` under the API's namespace unless ``api`` is false); returns
        (status, JSON body or None, raw text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = dict(headers or {})
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                sent["Content-Type"] = "application/json"
            if auth:
                sent["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            conn.request(method, (API if api else "") + path, body=data, headers=sent)
            response = conn.getresponse()
            raw = response.read().decode("utf-8", "replace")
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            return response.status, parsed, raw
        finally:
            conn.close()


def kill_mid_stream(server: Server, writers: list, acked: list, stop: threading.Event, enough: int,
                    seconds: float) -> None:
    """Start ``server``, run the ``writers`` (callables that write until ``stop`` is set) until
    ``enough`` writes are acknowledged in ``acked`` or ``seconds`` pass, then SIGKILL the server
    while requests are in flight, and wait for the writers."""
    threads = [threading.Thread(target=writer) for writer in writers]
    try:
        server.start()
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + seconds
        while len(acked) < enough and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
    finally:
        stop.set()
        server.kill()


def is_envelope(body, status: int) -> bool:
    return (isinstance(body, dict) and isinstance(body.get("code"), str) and isinstance(body.get("message"), str)
            and isinstance(body.get("data"), dict) and body["data"].get("status") == status)


@contextlib.contextmanager
def git_daemon(base: Path, log: Path | None = None, port: int | None = None):
    """Serve the bare repositories under ``base`` with ``git daemon`` on 127.0.0.1 (push
    enabled); yields the ``git://127.0.0.1:PORT`` prefix of their URLs. Always stopped. With
    ``log``, the daemon's verbose log (one ``Request upload-pack`` line per fetch or ls-remote)
    goes to that file; with ``port``, it listens there (a daemon restarted at the same URL)."""
    port = port or free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen(["git", "daemon", "--export-all", "--enable=receive-pack", f"--base-path={base}",
                             f"--port={port}", "--listen=127.0.0.1", "--reuseaddr",
                             *(["--verbose"] if log else []), str(base)],
                            stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
    if log:
        out.close()
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("git daemon did not start")
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

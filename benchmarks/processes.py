"""Servers started for a measurement and spoken to over HTTP on loopback: a free port, a
process in its own session (stopped with everything it started), one request, waiting for a
condition. Shared by ``benchmarks.served`` and ``scripts/cluster.py``."""
from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Answer:
    def __init__(self, status: int, body, headers: dict, seconds: float):
        self.status, self.body, self.headers, self.seconds = status, body, headers, seconds


def request(port: int, method: str, path: str, body=None, auth: tuple[str, str] | None = None,
            timeout: float = 30, headers: dict | None = None) -> Answer:
    """One HTTP request to 127.0.0.1:``port``; a connection failure is status 0."""
    sent = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    if auth:
        sent["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        headers = {name.lower(): value for name, value in response.getheaders()}  # HAProxy sends them in lower case
        return Answer(response.status, parsed, headers, time.monotonic() - started)
    except (OSError, http.client.HTTPException):
        return Answer(0, None, {}, time.monotonic() - started)
    finally:
        conn.close()


class Process:
    """A server process in its own session (a SIGKILL of the group takes its children too)."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict | None = None, cwd: Path | None = None):
        self.name, self.argv, self.log, self.env, self.cwd = name, argv, log, env, cwd
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Process":
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=out, env=self.env, cwd=self.cwd,
                                     start_new_session=True)
        out.close()
        return self

    def send(self, sig: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        self.send(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.send(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-3000:]
        return ""


def wait_until(check, timeout: float, what: str, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(poll)


def listening(port: int) -> bool:
    with contextlib.suppress(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    return False

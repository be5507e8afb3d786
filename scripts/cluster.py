"""The calendar on three machines' worth of parts, on loopback: HAProxy in front of three
replicas under gunicorn, a git host over smart HTTP (git http-backend behind nginx and fcgiwrap)
with the shipped push webhook, and the replicas' state in PostgreSQL. Everything is started from
the files in ``deploy/cluster/``, measured, and stopped.

    python3 scripts/cluster.py              # every measurement at full length (a few minutes)
    python3 scripts/cluster.py --quick      # the short variant CI runs (tests/test_cluster.py)
    python3 scripts/cluster.py --install    # first install haproxy, nginx, fcgiwrap, postgresql (apt-get)

It prints one table: each measure, its figure and its goal. The operations doc keeps the figures.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import glob
import hashlib
import http.client
import http.server
import json
import os
import resource
import secrets
import shutil
import signal
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.processes import Answer, Process, free_port, listening, request, wait_until  # noqa: E402

KIT = ROOT / "deploy" / "cluster"
API = "/calendar/events/v1"
PACKAGES = ("haproxy", "nginx-light", "fcgiwrap", "postgresql")
EVENT = {"start_date": "2031-05-01 10:00:00", "end_date": "2031-05-01 11:00:00", "status": "publish"}
CHECK_INTERVAL = 2.0   # haproxy.cfg: inter 1s x fall 2, the time the balancer needs to see a replica gone


def missing_tools() -> list[str]:
    found = {"haproxy": shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin"),
             "nginx": shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin"),
             "fcgiwrap": shutil.which("fcgiwrap") or shutil.which("fcgiwrap", path="/usr/sbin"),
             "postgresql": postgres_bin()}
    return [name for name, where in found.items() if not where]


def install() -> None:
    """Install the Debian packages the cluster needs (as .ci/run installs Chromium)."""
    if not missing_tools():
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "update", "-q"], check=True)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def ssha(password: str) -> str:
    """An htpasswd line's hash in the {SSHA} scheme nginx reads."""
    salt = secrets.token_bytes(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()


class Cluster:
    """The parts, on loopback under ``root`` (a temporary folder); ``with Cluster(...) as c``."""

    def __init__(self, root: Path, replicas: int = 3, workers: int = 2, pull_interval: float = 10,
                 login_attempts: int = 10):
        self.root = root
        self.run = root / "run"
        self.count, self.workers, self.pull_interval, self.login_attempts = replicas, workers, pull_interval, login_attempts
        self.git_port, self.pg_port, self.balancer_port = free_port(), free_port(), free_port()
        self.replica_ports = [free_port() for _ in range(replicas)]
        self.git_password, self.db_password = secrets.token_hex(12), secrets.token_hex(12)
        self.hook_secret = secrets.token_hex(16)
        self.processes: dict[str, Process] = {}
        self.admin: tuple[str, str] = ("", "")
        self.victim = "victim"

    # --------------------------------------------------------------------------- the parts

    def __enter__(self) -> "Cluster":
        self.run.mkdir(parents=True)
        os.chmod(self.root, 0o755)
        os.chmod(self.run, 0o755)
        try:
            self.start_postgres()
            self.start_git_host()
            self.make_accounts()
            for n in range(self.count):
                self.start_replica(n)
                if n == 0:  # the first one writes the sample calendar to the empty git host
                    self.wait_ready(0)
            for n in range(1, self.count):
                self.wait_ready(n)
            self.start_balancer()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for process in reversed(list(self.processes.values())):
            with contextlib.suppress(Exception):
                process.stop()

    def start_postgres(self) -> None:
        bin_dir = postgres_bin()
        data = self.run / "pgdata"
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        data.mkdir(mode=0o700)
        if as_postgres:
            shutil.chown(data, "postgres", "postgres")
        subprocess.run(as_postgres + [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
                                      "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8"],
                       check=True, capture_output=True)
        self.processes["postgres"] = Process("postgres", as_postgres + [
            str(bin_dir / "postgres"), "-D", str(data), "-p", str(self.pg_port), "-k", str(data),
            "-c", "listen_addresses=127.0.0.1"], self.run / "postgres.log").start()
        psql = as_postgres + [str(bin_dir / "psql"), "-h", str(data), "-p", str(self.pg_port), "-U", "postgres",
                              "-v", "ON_ERROR_STOP=1", "-q"]
        wait_until(lambda: subprocess.run(psql + ["-c", "SELECT 1"], capture_output=True).returncode == 0,
                   30, "PostgreSQL")
        setup = (KIT / "postgres.sql").read_text().replace("DB-PASSWORD", self.db_password)
        subprocess.run(psql, input=setup.encode(), check=True, capture_output=True)
        self.psql = psql + ["-d", "calendar", "-At"]

    @property
    def state_url(self) -> str:
        return f"postgresql://calendar:{self.db_password}@127.0.0.1:{self.pg_port}/calendar"

    def sql(self, statement: str) -> str:
        return subprocess.run(self.psql + ["-c", statement], capture_output=True, text=True).stdout.strip()

    def start_git_host(self) -> None:
        repos = self.run / "git"
        bare = repos / "calendar.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        shutil.copy(KIT / "post-receive", bare / "hooks" / "post-receive")
        self.set_hook(True)
        (self.run / "htpasswd").write_text(f"calendar:{ssha(self.git_password)}\n")
        self.bare = bare
        self.processes["fcgiwrap"] = Process("fcgiwrap", [sbin("fcgiwrap"), "-c", "8", "-s",
                                             f"unix:{self.run}/fcgiwrap.sock"], self.run / "fcgiwrap.log").start()
        wait_until(lambda: (self.run / "fcgiwrap.sock").exists(), 10, "fcgiwrap")
        os.chmod(self.run / "fcgiwrap.sock", 0o666)  # nginx's workers run as another user
        conf = string.Template((KIT / "nginx-git.conf").read_text()).safe_substitute(
            GIT_LISTEN=f"127.0.0.1:{self.git_port}", GIT_ROOT=str(repos), RUN_DIR=str(self.run))
        (self.run / "nginx.conf").write_text(conf)
        self.start_nginx()

    def start_nginx(self) -> None:
        self.processes["nginx"] = Process("nginx", [sbin("nginx"), "-c", str(self.run / "nginx.conf"),
                                          "-p", str(self.run)], self.run / "nginx.log").start()
        wait_until(lambda: listening(self.git_port), 10, "nginx")

    def set_hook(self, enabled: bool) -> None:
        """Point the git host's push webhook at the replicas, or switch it off (a lost webhook)."""
        def config(*args):
            subprocess.run(["git", "-C", str(self.run / "git" / "calendar.git"), "config", *args], check=False)
        config("calendar.webhookSecret", self.hook_secret)
        if enabled:
            config("calendar.replicas", " ".join(f"http://127.0.0.1:{p}" for p in self.replica_ports))
        else:
            config("--unset", "calendar.replicas")

    def make_accounts(self) -> None:
        sys.path.insert(0, str(ROOT))
        from calendar_service.auth.accounts import Accounts
        users = self.run / "users.yaml"
        accounts = Accounts(users)
        _, password = accounts.add("admin", "administrator", email="admin@example.org", name="Admin")
        self.admin = ("admin", password)
        accounts.add(self.victim, "editor", email="victim@example.org", name="Victim")
        self.users = users

    def replica_env(self, n: int) -> dict:
        home = self.run / f"replica{n + 1}"
        home.mkdir(exist_ok=True)
        users = home / "users.yaml"
        if not users.exists():
            shutil.copy(self.users, users)
            os.chmod(users, 0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CALENDAR_", "GIT_"))}
        env.update(
            PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore",
            CALENDAR_BIND=f"127.0.0.1:{self.replica_ports[n]}", CALENDAR_WORKERS=str(self.workers),
            CALENDAR_CONTENT_DIR=str(home / "content"), CALENDAR_INDEX_DIR=str(home / "index"),
            CALENDAR_STATE_DIR=str(home / "state"), CALENDAR_USERS_FILE=str(users),
            CALENDAR_SEED_SAMPLE="true" if n == 0 else "false", CALENDAR_TIMEZONE="UTC",
            CALENDAR_GIT_REMOTE=f"http://calendar:{self.git_password}@127.0.0.1:{self.git_port}/calendar.git",
            CALENDAR_WEBHOOK_SECRET=self.hook_secret, CALENDAR_PULL_INTERVAL=str(self.pull_interval),
            CALENDAR_STATE_URL=self.state_url, CALENDAR_TRUST_FORWARDED_FOR="true",
            CALENDAR_WEBHOOK_ALLOW_PRIVATE="127.0.0.0/8", CALENDAR_WEBHOOK_LEASE="6",
            CALENDAR_WEBHOOK_TIMEOUT="3", CALENDAR_WEBHOOK_BACKOFF="1",
            CALENDAR_LOGIN_ATTEMPTS=str(self.login_attempts), CALENDAR_LOGIN_ADDRESS_ATTEMPTS="1000",
            CALENDAR_REMOTE_TIMEOUT="5")
        return env

    def start_replica(self, n: int) -> None:
        name = f"replica{n + 1}"
        self.processes[name] = Process(name, [sys.executable, "-m", "gunicorn", "-c", str(KIT / "gunicorn.conf.py")],
                                       self.run / f"{name}.log", env=self.replica_env(n), cwd=ROOT).start()

    def wait_ready(self, n: int, timeout: float = 60) -> None:
        process = self.processes[f"replica{n + 1}"]

        def ready():
            if process.proc.poll() is not None:
                raise RuntimeError(f"{process.name} exited: {process.tail()}")
            return request(self.replica_ports[n], "GET", "/readyz", timeout=5).status == 200
        wait_until(ready, timeout, f"replica {n + 1} to be ready", poll=0.2)

    def start_balancer(self) -> None:
        env = dict(os.environ, CALENDAR_LISTEN=f"127.0.0.1:{self.balancer_port}",
                   **{f"CALENDAR_REPLICA_{n + 1}": f"127.0.0.1:{p}" for n, p in enumerate(self.replica_ports)})
        subprocess.run([sbin("haproxy"), "-c", "-q", "-f", str(KIT / "haproxy.cfg")], env=env, check=True)
        self.processes["haproxy"] = Process("haproxy", [sbin("haproxy"), "-db", "-f", str(KIT / "haproxy.cfg")],
                                            self.run / "haproxy.log", env=env).start()
        wait_until(lambda: request(self.balancer_port, "GET", API + "/events").status == 200, 20, "HAProxy")

    # --------------------------------------------------------------------------- calls

    def via_balancer(self, method: str, path: str, body=None, auth=None, timeout: float = 30) -> Answer:
        return request(self.balancer_port, method, API + path, body, auth, timeout)

    def create(self, title: str, port: int | None = None) -> Answer:
        return request(port or self.balancer_port, "POST", API + "/events", {"title": title, **EVENT}, self.admin)

    def served_everywhere(self, event_id: int) -> bool:
        return all(request(p, "GET", f"{API}/events/{event_id}", timeout=5).status == 200 for p in self.replica_ports)

    def heads(self) -> list[str | None]:
        found = []
        for port in self.replica_ports:
            answer = request(port, "GET", "/readyz", timeout=5)
            found.append((answer.body or {}).get("head") if answer.status == 200 else None)
        return found

    def remote_titles(self) -> set[str]:
        """Titles of every event file on the git host's branch (read from the bare repository)."""
        listing = subprocess.run(["git", "-C", str(self.bare), "grep", "-h", "^title:", "main", "--", "events"],
                                 capture_output=True, text=True).stdout
        return {line.split(":", 1)[1].strip().strip("'\"") for line in listing.splitlines() if ":" in line}

    def replica_of_pid(self, pid: int) -> int | None:
        for n in range(self.count):
            process = self.processes.get(f"replica{n + 1}")
            if process and process.proc and (pid == process.proc.pid or _parent(pid) == process.proc.pid):
                return n
        return None

    def kill(self, n: int) -> None:
        self.processes[f"replica{n + 1}"].send(signal.SIGKILL)
        self.processes[f"replica{n + 1}"].proc.wait(10)

    def restart(self, n: int) -> None:
        self.start_replica(n)
        self.wait_ready(n)


def _parent(pid: int) -> int | None:
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return None


# ------------------------------------------------------------------------------- measures


def propagation(cluster: Cluster, writes: int, hook: bool) -> dict:
    """Seconds from a write's answer through the balancer until every replica serves it."""
    cluster.set_hook(hook)
    lags = []
    try:
        for n in range(writes):
            answer = cluster.create(f"Propagation {'hook' if hook else 'poll'} {n}")
            assert answer.status == 201, (answer.status, answer.body)
            acked = time.monotonic()
            wait_until(lambda: cluster.served_everywhere(answer.body["id"]),
                       cluster.pull_interval * 3 + 10, "every replica to serve a write", poll=0.02)
            lags.append(time.monotonic() - acked)
    finally:
        cluster.set_hook(True)
    return {"writes": writes, "p50": statistics.median(lags), "max": max(lags)}


class Load:
    """Readers and writers through the balancer, recording every answer with its time."""

    def __init__(self, cluster: Cluster, readers: int = 4, writers: int = 2):
        self.cluster, self.readers, self.writers = cluster, readers, writers
        self.stop = threading.Event()
        self.reads: list[tuple[float, int]] = []
        self.writes: list[tuple[float, int, str]] = []
        self.acked: list[str] = []
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def _read(self) -> None:
        while not self.stop.is_set():
            answer = self.cluster.via_balancer("GET", "/events?per_page=5", timeout=15)
            with self.lock:
                self.reads.append((time.monotonic(), answer.status))

    def _write(self, name: int) -> None:
        n = 0
        while not self.stop.is_set():
            title = f"Load {name}-{n} {secrets.token_hex(3)}"
            n += 1
            answer = self.cluster.create(title)
            with self.lock:
                self.writes.append((time.monotonic(), answer.status, title))
                if answer.status == 201:
                    self.acked.append(title)
            time.sleep(0.05)

    def __enter__(self) -> "Load":
        self.threads = ([threading.Thread(target=self._read) for _ in range(self.readers)]
                        + [threading.Thread(target=self._write, args=(w,)) for w in range(self.writers)])
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def kill_under_load(cluster: Cluster, before: float, after: float, victim: int = 1) -> dict:
    """kill -9 of one replica (master and workers) under a steady read and write load."""
    with Load(cluster) as load:
        time.sleep(before)
        killed_at = time.monotonic()
        cluster.kill(victim)
        time.sleep(after)
    failed_reads = [(t - killed_at) for t, status in load.reads if status != 200]
    failed_writes = [(t - killed_at, status) for t, status, _ in load.writes if status != 201]
    cluster.restart(victim)
    wait_until(lambda: len(set(cluster.heads())) == 1, 30, "the replicas to agree on the head", poll=0.2)
    lost = set(load.acked) - cluster.remote_titles()
    return {"reads": len(load.reads), "failed_reads": len(failed_reads),
            "failed_reads_after_check": sum(1 for t in failed_reads if t > CHECK_INTERVAL),
            "read_failure_window": max(failed_reads, default=0.0),
            "writes": len(load.writes), "acked": len(load.acked), "failed_writes": len(failed_writes),
            "failed_write_statuses": sorted({s for _, s in failed_writes}), "lost": len(lost)}


class Receiver:
    """A webhook receiver on loopback that takes ``delay`` seconds per delivery (so that the
    deliverer is mid-queue when it is killed), recording each delivery's id, commit and time."""

    def __init__(self, delay: float):
        self.delay = delay
        self.deliveries: list[dict] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(delay)
                receiver.deliveries.append({"id": self.headers.get("webhook-id"), "at": time.monotonic(),
                                            "commit": json.loads(body)["data"]["commit"]})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def commits(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for delivery in list(self.deliveries):
            found.setdefault(delivery["commit"], set()).add(delivery["id"])
        return found

    def close(self) -> None:
        self.server.shutdown()


def webhook_deliveries(cluster: Cluster, changes: int) -> dict:
    """One delivery per change across the cluster, with the delivering replica killed midway
    through the queue (the lease holder, read from the state database)."""
    receiver = Receiver(delay=0.3)
    try:
        answer = cluster.via_balancer("POST", "/subscriptions", {"url": receiver.url}, cluster.admin)
        assert answer.status == 201, (answer.status, answer.body)
        for n in range(changes):
            created = cluster.create(f"Announced {n}")
            assert created.status == 201, (created.status, created.body)
        wait_until(lambda: len(receiver.deliveries) >= changes // 2, 60, "half of the deliveries", poll=0.05)
        owner = cluster.sql("SELECT owner FROM lease")
        killed = cluster.replica_of_pid(int(owner.split(":")[1])) if owner.count(":") >= 2 else None
        killed_at = time.monotonic()
        if killed is not None:
            cluster.kill(killed)
        wait_until(lambda: len(receiver.commits()) >= changes, 90, "every change to be delivered", poll=0.1)
        # the first delivery another process began after the kill (one the killed process had under
        # way may still reach the receiver within its delay)
        after = [d["at"] - killed_at for d in receiver.deliveries if d["at"] > killed_at + receiver.delay + 0.1]
        if killed is not None:
            cluster.restart(killed)
        time.sleep(2)  # repeats, if any, arrive now
        per_commit = receiver.commits()
        counts = [sum(1 for d in receiver.deliveries if d["commit"] == c) for c in per_commit]
        return {"changes": changes, "delivered": len(per_commit), "deliveries": len(receiver.deliveries),
                "repeated": sum(1 for c in counts if c > 1),
                "repeats_with_other_id": sum(1 for ids in per_commit.values() if len(ids) > 1),
                "killed_deliverer": killed is not None, "takeover": min(after, default=0.0)}
    finally:
        receiver.close()


def sign_in_limits(cluster: Cluster) -> dict:
    """Failed sign-ins spread over every replica (and every worker): how many before 429."""
    wrong = (cluster.victim, "not-the-password")
    failures, refused_at = 0, None
    for n in range(cluster.login_attempts * cluster.count * cluster.workers + 5):
        port = cluster.replica_ports[n % cluster.count]
        answer = request(port, "GET", API + "/events?status=draft", auth=wrong)
        if answer.status == 429:
            refused_at = n
            break
        failures += 1
    everywhere = all(request(p, "GET", API + "/events", auth=wrong).status == 429 for p in cluster.replica_ports)
    return {"documented": cluster.login_attempts, "failures_allowed": failures,
            "refused_everywhere_after": everywhere and refused_at is not None}


def git_host_restart(cluster: Cluster, down: float) -> dict:
    """Stop the git host; writes answer 503 with Retry-After meanwhile, reads go on; start it
    again: how long until a write succeeds and every replica is at the same head."""
    cluster.processes["nginx"].stop()
    statuses, retry_after, reads = [], [], []
    stopped = time.monotonic()
    while time.monotonic() - stopped < down:
        answer = cluster.create("During the git host's restart")
        statuses.append(answer.status)
        if answer.status == 503:
            retry_after.append(answer.headers.get("retry-after"))
        reads.append(cluster.via_balancer("GET", "/events?per_page=5").status)
        time.sleep(0.5)
    cluster.start_nginx()
    back = time.monotonic()
    wait_until(lambda: cluster.create("After the git host's restart").status == 201, 60, "a write to succeed", poll=0.2)
    first_write = time.monotonic() - back
    wait_until(lambda: len(set(cluster.heads())) == 1 and None not in cluster.heads(), 60,
               "the replicas to converge", poll=0.2)
    converged = time.monotonic() - back
    return {"writes_meanwhile": len(statuses), "answered_503": statuses.count(503),
            "with_retry_after": sum(1 for r in retry_after if r and r.isdigit()),
            "other_statuses": sorted(set(statuses) - {503}), "reads_ok": reads.count(200), "reads": len(reads),
            "first_write_after": first_write, "converged_after": converged}


def write_ceiling(cluster: Cluster, writes: int, writers: int) -> dict:
    """Writes per second on one branch: one writer on one replica, then ``writers`` spread over
    every replica (each write is a fetch and a push through the smart-HTTP host)."""
    started = time.monotonic()
    for n in range(writes):
        assert cluster.create(f"Ceiling one {n}", cluster.replica_ports[0]).status == 201
    one = writes / (time.monotonic() - started)
    done, latencies, lock = [], [], threading.Lock()

    def writer(w: int) -> None:
        for n in range(writes // writers):
            answer = cluster.create(f"Ceiling many {w}-{n}", cluster.replica_ports[w % cluster.count])
            with lock:
                done.append(answer.status)
                latencies.append(answer.seconds)
    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    many = done.count(201) / (time.monotonic() - started)
    latencies.sort()
    return {"one_writer_per_s": one, "many_writers": writers, "many_per_s": many,
            "many_failed": len(done) - done.count(201), "many_p50": latencies[len(latencies) // 2],
            "many_p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}


def git_host_cost(cluster: Cluster, looks: int) -> dict:
    """What one replica's periodic look (ls-remote) and a no-op fetch cost the git host: wall time,
    and CPU time of the machine minus that of the git client (nginx, fcgiwrap and git
    http-backend, plus the idle replicas' background threads: an upper bound)."""
    url = f"http://calendar:{cluster.git_password}@127.0.0.1:{cluster.git_port}/calendar.git"

    def busy() -> float:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        ticks = [int(v) for v in fields]
        return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait

    def client() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def each(argv: list[str]) -> tuple[float, float]:
        machine, own, started = busy(), client(), time.monotonic()
        for _ in range(looks):
            subprocess.run(argv, check=True, capture_output=True)
        wall = (time.monotonic() - started) / looks
        return wall * 1000, max(0.0, (busy() - machine) - (client() - own)) / looks * 1000

    look_ms, look_cpu = each(["git", "ls-remote", url, "refs/heads/main"])
    clone = cluster.run / "cost-clone"
    subprocess.run(["git", "clone", "-q", "--bare", url, str(clone)], check=True, capture_output=True)
    fetch_ms, fetch_cpu = each(["git", "-C", str(clone), "fetch", "-q", url, "main"])
    return {"ls_remote_ms": look_ms, "ls_remote_cpu_ms": look_cpu, "fetch_ms": fetch_ms, "fetch_cpu_ms": fetch_cpu}


# ------------------------------------------------------------------------------- the run


def measure(quick: bool, keep: bool = False) -> dict:
    """Bring the cluster up, take every measure, bring it down; returns the figures."""
    sizes = dict(writes=3 if quick else 20, before=2 if quick else 5, after=6 if quick else 15,
                 changes=6 if quick else 20, down=4 if quick else 15, ceiling=10 if quick else 60, looks=5 if quick else 30)
    root = Path(tempfile.mkdtemp(prefix="calendar-cluster-"))
    figures: dict = {}
    try:
        with Cluster(root, pull_interval=5 if quick else 10) as cluster:
            started = time.monotonic()
            figures["start"] = {"pull_interval": cluster.pull_interval, "workers": cluster.workers}
            figures["webhook"] = propagation(cluster, sizes["writes"], hook=True)
            figures["no_webhook"] = propagation(cluster, max(2, sizes["writes"] // 2), hook=False)
            figures["kill"] = kill_under_load(cluster, sizes["before"], sizes["after"])
            figures["deliveries"] = webhook_deliveries(cluster, sizes["changes"])
            figures["sign_in"] = sign_in_limits(cluster)
            figures["git_restart"] = git_host_restart(cluster, sizes["down"])
            figures["ceiling"] = write_ceiling(cluster, sizes["ceiling"], writers=6)
            figures["cost"] = git_host_cost(cluster, sizes["looks"])
            figures["seconds"] = time.monotonic() - started
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return figures


def table(f: dict) -> str:
    w, p, k, d, s, g, c, o = (f["webhook"], f["no_webhook"], f["kill"], f["deliveries"], f["sign_in"],
                              f["git_restart"], f["ceiling"], f["cost"])
    interval = f["start"]["pull_interval"]
    rows = [
        ("write through the balancer served by every replica, push webhook (p50 / max)",
         f"{w['p50']:.2f} / {w['max']:.2f} s ({w['writes']} writes)", "≤ 2 s"),
        ("the same with the webhook lost (p50 / max)", f"{p['p50']:.2f} / {p['max']:.2f} s",
         f"≤ one pull interval ({interval:g} s) + the follower's 1 s"),
        ("kill -9 of a replica under load: failed reads (all / after the check interval)",
         f"{k['failed_reads']} of {k['reads']} / {k['failed_reads_after_check']}", "0 after 2 s"),
        ("kill -9: failed writes (statuses) / acknowledged writes lost",
         f"{k['failed_writes']} of {k['writes']} ({', '.join(map(str, k['failed_write_statuses'])) or '-'}) / {k['lost']}",
         "0 lost"),
        ("webhook deliveries per change, deliverer killed midway",
         f"{d['delivered']} of {d['changes']} changes, {d['deliveries']} deliveries, {d['repeated']} repeated "
         f"(all with their first id: {d['repeats_with_other_id'] == 0}); another replica delivers "
         f"{d['takeover']:.1f} s after the kill", "every change, repeats keep their id"),
        ("failed sign-ins allowed across 3 replicas x workers", f"{s['failures_allowed']} (then 429 everywhere: "
         f"{s['refused_everywhere_after']})", f"{s['documented']}"),
        ("git host down: writes 503 with Retry-After / reads answered",
         f"{g['answered_503']} of {g['writes_meanwhile']} ({g['with_retry_after']} with Retry-After) / "
         f"{g['reads_ok']} of {g['reads']}", "all"),
        ("git host back: first write / replicas at one head", f"{g['first_write_after']:.1f} / {g['converged_after']:.1f} s",
         "converges"),
        ("write ceiling of one branch: one writer / 6 writers on 3 replicas",
         f"{c['one_writer_per_s']:.1f} / {c['many_per_s']:.1f} writes/s (p50 {c['many_p50'] * 1000:.0f} ms, "
         f"p99 {c['many_p99'] * 1000:.0f} ms, {c['many_failed']} failed)", "on paper"),
        ("git host per look: ls-remote / no-op fetch (wall, http-backend CPU)",
         f"{o['ls_remote_ms']:.0f} ms, {o['ls_remote_cpu_ms']:.0f} ms / {o['fetch_ms']:.0f} ms, "
         f"{o['fetch_cpu_ms']:.0f} ms", "on paper"),
    ]
    lines = ["| measure | figure | goal |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the short variant CI runs")
    parser.add_argument("--install", action="store_true", help="install the Debian packages first")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs) afterwards")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--check", action="store_true", help="only say whether the Debian packages are there (exit 1)")
    options = parser.parse_args()
    if options.install:
        install()
    missing = missing_tools()
    if options.check:
        print(f"missing: {', '.join(missing)}" if missing else "every part is installed")
        sys.exit(1 if missing else 0)
    if missing:
        sys.exit(f"missing: {', '.join(missing)} (run with --install, or apt-get install {' '.join(PACKAGES)})")
    # stopped by a signal (Ctrl-C, kill, a CI timeout): unwind, so that every part started is stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    figures = measure(options.quick, options.keep)
    print(table(figures))
    print(f"\n{figures['seconds']:.0f} s of measures; `python3 scripts/cluster.py{' --quick' if options.quick else ''}`")
    if options.json:
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

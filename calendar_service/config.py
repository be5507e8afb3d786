"""Settings of the service, read from the environment once and then passed around.

Every setting has an environment variable (documented in the README) and a key that
tests and embedding code may pass to ``create_app`` directly.
"""
from __future__ import annotations

import ipaddress
import os
import re
from datetime import datetime, timezone
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from calendar_service.domain.booleans import LENIENT, parse_bool
from calendar_service.domain.recurrence.expand import horizon_end


def _bool(value: str) -> bool:
    return parse_bool(value, LENIENT) is True


def _list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _networks(value: str) -> tuple[str, ...]:
    """``CALENDAR_WEBHOOK_ALLOW_PRIVATE``: a true value (``1``, ``true``, ``*``) allows every address,
    a false one none, anything else is a comma-separated list of networks (``127.0.0.0/8,10.1.0.0/16``)."""
    if value.strip() == "*" or parse_bool(value, LENIENT) is True:
        return ("*",)
    if parse_bool(value, LENIENT) is False:
        return ()
    networks = _list(value)
    for network in networks:
        ipaddress.ip_network(network, strict=False)  # ValueError names the bad one
    return networks


# a branch name git accepts and no command line can mistake for an option
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/+-]+(?<!\.lock)(?<![/.])$")


_HOST = re.compile(r"^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?$")


def host_allowed(host: str, patterns) -> bool:
    """Whether a Host header value (``name[:port]``) matches one of ``patterns``, as Django's
    ``validate_host``: ``*`` any, ``.example.org`` that domain and its subdomains, else the exact
    name (case and a trailing dot ignored, the port never compared). A malformed value never matches.
    (Werkzeug's ``host_is_trusted`` answers otherwise: see ``http/guards.py``.)"""
    if not host or not _HOST.match(host):
        return False
    name = host.rsplit(":", 1)[0] if not host.endswith("]") and ":" in host else host
    name = name.lower().rstrip(".")
    for pattern in patterns:
        if pattern == "*" or name == pattern:
            return True
        if pattern.startswith(".") and (name.endswith(pattern) or name == pattern[1:]):
            return True
    return False


def without_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL in it removed (safe for logs and messages)."""
    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@", r"\1", text)


@dataclass(frozen=True)
class Settings:
    """Everything the service needs to know about its surroundings.

    Paths are absolute once ``resolved()`` has run. ``site_timezone`` is an IANA name.
    """

    content_dir: Path = Path("content")
    index_dir: Path = Path("index")
    users_file: Path = Path("users.yaml")
    branch: str = "main"
    site_timezone: str = "UTC"
    site_url: str = ""                 # public home of the calendar site; default: the request's host
    per_page_default: int = 10
    per_page_max: int = 50
    max_body_bytes: int = 4 * 1024 * 1024
    seed_sample: bool = True           # create the sample calendar when the content repo is new
    committer_name: str = "Calendar Service"
    committer_email: str = "calendar-service@localhost"
    cors_origins: tuple[str, ...] = ()
    wp_compat: bool = False            # also serve the API under /wp-json/tribe/events/v1 and /wp-json/
    # Host header values answered (Django's ALLOWED_HOSTS: "*" any, ".example.org" the domain and
    # its subdomains); empty = the local names and the host of ``site_url``
    allowed_hosts: tuple[str, ...] = ()
    # the git remote the branch is pushed to and pulled from ("" = none); may hold credentials
    git_remote: str = field(default="", repr=False)
    git_remote_branch: str = ""        # default: ``branch``
    pull_interval: float = 30.0        # seconds between periodic pulls; 0 = only on the webhook
    remote_timeout: float = 10.0       # seconds one git command talking to the remote may take
    webhook_secret: str = field(default="", repr=False)
    # limits on guessing (auth/limits.py): failed sign-ins per login and per client address in a
    # window of seconds, wrong event passwords per event and address; 0 attempts = no limit
    login_attempts: int = 10
    login_address_attempts: int = 30
    login_window: float = 300.0
    event_password_attempts: int = 10
    event_password_window: float = 300.0
    limiter_size: int = 10_000          # keys each limiter remembers at most (oldest dropped)
    argon2_concurrency: int = 2         # Argon2 checks (~50 MB each) running at once per process
    trust_forwarded_for: bool = False   # client address from X-Forwarded-For (behind a proxy only)
    # outbound webhooks (service/webhooks.py): subscriptions and their delivery queue live in one
    # SQLite database in ``state_dir`` (never in the content repository)
    state_dir: Path = Path("state")
    webhook_delivery: bool = True        # this process may deliver (one at a time, by a lease in the database)
    # networks webhook targets may be in besides public addresses: () none, ("*",) any
    webhook_allow_private: tuple[str, ...] = ()
    webhook_timeout: float = 10.0        # seconds to connect to a target and read its answer
    webhook_backoff: float = 10.0        # first retry after this many seconds, doubled per failure ...
    webhook_backoff_max: float = 3600.0  # ... up to this many
    webhook_max_failures: int = 20       # consecutive failures that disable a subscription; 0 = never
    webhook_lease: float = 30.0          # seconds a delivering process holds the lease without renewing it
    webhook_poll: float = 1.0            # seconds between looks at the branch head and the queue
    # recurring events: open-ended rules are expanded this many months ahead (1..120)
    recurrence_horizon: int = 24

    # environment variable -> (field name, converter)
    ENV = {
        "CALENDAR_CONTENT_DIR": ("content_dir", Path),
        "CALENDAR_INDEX_DIR": ("index_dir", Path),
        "CALENDAR_USERS_FILE": ("users_file", Path),
        "CALENDAR_BRANCH": ("branch", str),
        "CALENDAR_TIMEZONE": ("site_timezone", str),
        "CALENDAR_SITE_URL": ("site_url", str),
        "CALENDAR_PER_PAGE": ("per_page_default", int),
        "CALENDAR_MAX_PER_PAGE": ("per_page_max", int),
        "CALENDAR_MAX_BODY_BYTES": ("max_body_bytes", int),
        "CALENDAR_SEED_SAMPLE": ("seed_sample", _bool),
        "CALENDAR_COMMITTER_NAME": ("committer_name", str),
        "CALENDAR_COMMITTER_EMAIL": ("committer_email", str),
        "CALENDAR_CORS_ORIGINS": ("cors_origins", _list),
        "CALENDAR_WP_COMPAT": ("wp_compat", _bool),
        "CALENDAR_ALLOWED_HOSTS": ("allowed_hosts", _list),
        "CALENDAR_GIT_REMOTE": ("git_remote", str),
        "CALENDAR_GIT_REMOTE_BRANCH": ("git_remote_branch", str),
        "CALENDAR_PULL_INTERVAL": ("pull_interval", float),
        "CALENDAR_REMOTE_TIMEOUT": ("remote_timeout", float),
        "CALENDAR_WEBHOOK_SECRET": ("webhook_secret", str),
        "CALENDAR_LOGIN_ATTEMPTS": ("login_attempts", int),
        "CALENDAR_LOGIN_ADDRESS_ATTEMPTS": ("login_address_attempts", int),
        "CALENDAR_LOGIN_WINDOW": ("login_window", float),
        "CALENDAR_EVENT_PASSWORD_ATTEMPTS": ("event_password_attempts", int),
        "CALENDAR_EVENT_PASSWORD_WINDOW": ("event_password_window", float),
        "CALENDAR_LIMITER_SIZE": ("limiter_size", int),
        "CALENDAR_ARGON2_CONCURRENCY": ("argon2_concurrency", int),
        "CALENDAR_TRUST_FORWARDED_FOR": ("trust_forwarded_for", _bool),
        "CALENDAR_STATE_DIR": ("state_dir", Path),
        "CALENDAR_WEBHOOK_DELIVERY": ("webhook_delivery", _bool),
        "CALENDAR_WEBHOOK_ALLOW_PRIVATE": ("webhook_allow_private", _networks),
        "CALENDAR_WEBHOOK_TIMEOUT": ("webhook_timeout", float),
        "CALENDAR_WEBHOOK_BACKOFF": ("webhook_backoff", float),
        "CALENDAR_WEBHOOK_BACKOFF_MAX": ("webhook_backoff_max", float),
        "CALENDAR_WEBHOOK_MAX_FAILURES": ("webhook_max_failures", int),
        "CALENDAR_WEBHOOK_LEASE": ("webhook_lease", float),
        "CALENDAR_WEBHOOK_POLL": ("webhook_poll", float),
        "CALENDAR_RECURRENCE_HORIZON": ("recurrence_horizon", int),
    }

    @classmethod
    def from_env(cls, environ: dict | None = None, **overrides) -> "Settings":
        """Build settings from environment variables, then apply ``overrides`` (field names).

        Raises ValueError naming the variable when a value cannot be converted.
        """
        environ = os.environ if environ is None else environ
        values = {}
        for var, (name, convert) in cls.ENV.items():
            raw = environ.get(var)
            if raw is None or raw == "":
                continue
            try:
                values[name] = convert(raw)
            except ValueError as exc:
                raise ValueError(f"{var}: cannot use {raw!r}: {exc}") from None
        known = {f.name for f in fields(cls)}
        for name, value in overrides.items():
            if name not in known:
                raise ValueError(f"unknown setting {name!r}")
            if name.endswith("_dir") or name.endswith("_file"):
                value = Path(value)
            values[name] = value
        return cls(**values).resolved()

    def resolved(self) -> "Settings":
        """Return a copy with absolute paths, after checking the values that can be wrong."""
        try:
            ZoneInfo(self.site_timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"CALENDAR_TIMEZONE: unknown time zone {self.site_timezone!r}") from None
        if self.per_page_default < 1 or self.per_page_max < 1:
            raise ValueError("per-page settings must be positive")
        for name, value in (("CALENDAR_BRANCH", self.branch), ("CALENDAR_GIT_REMOTE_BRANCH", self.git_remote_branch)):
            if value and not _BRANCH.match(value):
                raise ValueError(f"{name}: {value!r} is not a usable branch name")
        if self.git_remote.strip().startswith("-"):
            raise ValueError("CALENDAR_GIT_REMOTE must be a URL, a path or a remote's name")
        if not self.pull_interval >= 0:
            raise ValueError("CALENDAR_PULL_INTERVAL must be 0 (off) or a number of seconds")
        if not self.remote_timeout > 0:
            raise ValueError("CALENDAR_REMOTE_TIMEOUT must be a positive number of seconds")
        content = self.content_dir.expanduser().resolve()
        users = self.users_file.expanduser().resolve()
        if users == content or content in users.parents:
            raise ValueError("CALENDAR_USERS_FILE must not be inside the content repository")
        state = self.state_dir.expanduser().resolve()
        if state == content or content in state.parents:
            raise ValueError("CALENDAR_STATE_DIR must not be inside the content repository")
        for name, value in (("CALENDAR_WEBHOOK_TIMEOUT", self.webhook_timeout),
                            ("CALENDAR_WEBHOOK_BACKOFF", self.webhook_backoff),
                            ("CALENDAR_WEBHOOK_BACKOFF_MAX", self.webhook_backoff_max),
                            ("CALENDAR_WEBHOOK_POLL", self.webhook_poll)):
            if not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        if not self.webhook_lease > self.webhook_timeout:
            raise ValueError("CALENDAR_WEBHOOK_LEASE must be longer than CALENDAR_WEBHOOK_TIMEOUT")
        if isinstance(self.recurrence_horizon, bool) or not 1 <= int(self.recurrence_horizon) <= 120:
            raise ValueError("CALENDAR_RECURRENCE_HORIZON must be a number of months from 1 to 120")
        if self.webhook_max_failures < 0:
            raise ValueError("CALENDAR_WEBHOOK_MAX_FAILURES must be 0 (never disable) or more")
        allow = self.webhook_allow_private
        allow = _networks(allow) if isinstance(allow, str) else tuple(allow)  # create_app({...}) may pass text
        for network in allow:
            if network != "*":
                try:
                    ipaddress.ip_network(network, strict=False)
                except ValueError:
                    raise ValueError(f"CALENDAR_WEBHOOK_ALLOW_PRIVATE: {network!r} is not a network") from None
        return replace(
            self,
            content_dir=content,
            index_dir=self.index_dir.expanduser().resolve(),
            users_file=users,
            state_dir=state,
            webhook_allow_private=allow,
            site_url=self.site_url.rstrip("/"),
            git_remote=self.git_remote.strip(),
            git_remote_branch=self.git_remote_branch or self.branch,
        )

    @property
    def host_patterns(self) -> tuple[str, ...]:
        """The Host patterns answered: ``allowed_hosts``, or the local names and the site's host."""
        if self.allowed_hosts:
            return tuple(h.lower().rstrip(".") if h != "*" else h for h in self.allowed_hosts)
        local = ("localhost", "127.0.0.1", "[::1]")
        site = urlsplit(self.site_url).hostname if self.site_url else None
        if site:
            site = f"[{site}]" if ":" in site else site
            return local + (site.lower().rstrip("."),)
        return local

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.site_timezone)

    def horizon_end(self, now=None):
        """The end of the recurrence horizon at ``now`` (default: now): where open-ended rules stop
        (``CALENDAR_RECURRENCE_HORIZON`` months ahead, rounded up to the next midnight UTC)."""
        return horizon_end(now or datetime.now(timezone.utc), int(self.recurrence_horizon))

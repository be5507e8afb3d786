"""Settings of the service, read from the environment once and then passed around.

Every setting has an environment variable (docs/configuration.md, made from this module) and a key that
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


def setting(default, env: str, convert, doc: str, shown: str | None = None, secret: bool = False):
    """A field of ``Settings``, described once: its environment variable, how the variable's text
    becomes the value, what it means (``doc``, for operators) and its default as the
    configuration page shows it (``shown``; else the default itself)."""
    return field(default=default, repr=not secret,
                 metadata={"env": env, "convert": convert, "doc": doc, "shown": shown, "secret": secret})


# variables read outside ``Settings`` (by Python itself), shown on the configuration page too
OTHER_VARIABLES = (
    ("TMPDIR", "the system's (`/tmp`)",
     "where each worker keeps its built VEVENTs for iCalendar feeds: unlinked temporary files, at most "
     "64 MB per worker (its memory holds only their keys); when none can be made, feeds are built whole "
     "and the error is logged"),
    ("GIT_SSH_COMMAND", "none",
     "how git reaches an ssh remote (`ssh -i KEY -o ...`); passed to the git commands that talk to the "
     "remote, the only `GIT_*` variables that are (with `GIT_SSH`)"),
    ("GIT_SSH", "none", "the ssh program git runs for an ssh remote (see `GIT_SSH_COMMAND`)"),
)


@dataclass(frozen=True)
class Settings:
    """Everything the service needs to know about its surroundings.

    Paths are absolute once ``resolved()`` has run. ``site_timezone`` is an IANA name. Each field
    names its environment variable and says what it means: ``docs/configuration.md`` is made
    from them (``python3 -m calendar_service settings --markdown``).
    """

    content_dir: Path = setting(
        Path("content"), "CALENDAR_CONTENT_DIR", Path,
        "the content repository (a git repository; created, with the sample calendar, if missing)")
    index_dir: Path = setting(
        Path("index"), "CALENDAR_INDEX_DIR", Path,
        "derived data (the search index, the records cache); safe to delete")
    users_file: Path = setting(
        Path("users.yaml"), "CALENDAR_USERS_FILE", Path,
        "accounts and hashed application passwords; refused inside the content repository")
    branch: str = setting("main", "CALENDAR_BRANCH", str, "the branch the service reads and writes")
    last_good_files: int = setting(
        1000, "CALENDAR_LAST_GOOD_FILES", int,
        "files that stopped parsing whose last good version is looked up in git history per new head "
        "(a start counts as one); the others keep the version the service served, or are not served")
    last_good_versions: int = setting(
        20, "CALENDAR_LAST_GOOD_VERSIONS", int,
        "versions of one file that stopped parsing tried, newest first, for its last good version")
    last_good_commits: int = setting(
        10000, "CALENDAR_LAST_GOOD_COMMITS", int,
        "commits of the branch's history read per look-up of last good versions (one `git log` for all "
        "the files of a head)")
    site_timezone: str = setting(
        "UTC", "CALENDAR_TIMEZONE", str,
        "the site time zone (IANA name): default list window, events without their own zone")
    site_url: str = setting(
        "", "CALENDAR_SITE_URL", str, "public site URL used for permalinks (`url`) and `global_id`",
        shown="the request's host")
    per_page_default: int = setting(10, "CALENDAR_PER_PAGE", int, "default `per_page` of every list")
    per_page_max: int = setting(
        50, "CALENDAR_MAX_PER_PAGE", int,
        "`per_page` values above this are silently capped (as the original does at 50)")
    max_body_bytes: int = setting(4 * 1024 * 1024, "CALENDAR_MAX_BODY_BYTES", int, "larger request bodies get 413")
    max_file_bytes: int = setting(
        1024 * 1024, "CALENDAR_MAX_FILE_BYTES", int,
        "the largest content file read, in bytes (checked before reading it): a larger pushed file is not "
        "served (an error in `/status`); an API write that would make one gets 400", shown="1048576 (1 MB)")
    max_nesting: int = setting(
        20, "CALENDAR_MAX_NESTING", int,
        "how deep lists and mappings of a content file may sit inside one another (checked before "
        "they are built): a deeper file is not served; records need about 4")
    max_keys: int = setting(
        1000, "CALENDAR_MAX_KEYS", int, "the most keys one mapping of a content file may hold (a file with more "
        "is not served)")
    max_items: int = setting(
        10000, "CALENDAR_MAX_ITEMS", int, "the most items one list of a content file may hold (a file with more "
        "is not served)")
    max_string_length: int = setting(
        2000, "CALENDAR_MAX_STRING_LENGTH", int,
        "the most characters of a one-line field (title, name, venue, address, website...): a longer one in a "
        "file is an error at its line, through the API a 400 naming the field; descriptions and excerpts are "
        "bounded by `CALENDAR_MAX_FILE_BYTES` only")
    status_files_shown: int = setting(
        200, "CALENDAR_STATUS_FILES_SHOWN", int,
        "the most problems of files `/status` and `status` list (first by path), beside their total count")
    seed_sample: bool = setting(
        True, "CALENDAR_SEED_SAMPLE", _bool, "write the sample calendar into a newly created content repository")
    committer_name: str = setting(
        "Calendar Service", "CALENDAR_COMMITTER_NAME", str,
        "committer name of API commits (the author is always the signed-in user)")
    committer_email: str = setting(
        "calendar-service@localhost", "CALENDAR_COMMITTER_EMAIL", str, "committer e-mail of API commits")
    cors_origins: tuple[str, ...] = setting(
        (), "CALENDAR_CORS_ORIGINS", _list,
        "comma-separated origins allowed to call the API from a browser (`*` for any)")
    wp_compat: bool = setting(
        False, "CALENDAR_WP_COMPAT", _bool,
        "also serve the API under the original plugin's URL space, `/wp-json/tribe/events/v1/`, and "
        "WordPress' discovery index `/wp-json/`; off: those paths are 404")
    allowed_hosts: tuple[str, ...] = setting(
        (), "CALENDAR_ALLOWED_HOSTS", _list,
        "comma-separated Host header values answered (as Django's `ALLOWED_HOSTS`: `*` any, `.example.org` "
        "that domain and its subdomains; the port is not compared); any other Host gets 400 "
        "`rest_invalid_host` before anything is read",
        shown="`localhost`, `127.0.0.1`, `[::1]` and the host of `CALENDAR_SITE_URL`")
    git_remote: str = setting(
        "", "CALENDAR_GIT_REMOTE", str,
        "a git remote (URL, path, or the name of a remote configured in the content repository) every "
        "write is pushed to and pulled from; none = no remote. May hold credentials: never logged",
        secret=True)
    git_remote_branch: str = setting(
        "", "CALENDAR_GIT_REMOTE_BRANCH", str, "the branch of the remote to follow", shown="`CALENDAR_BRANCH`")
    pull_interval: float = setting(
        30.0, "CALENDAR_PULL_INTERVAL", float,
        "seconds between pulls from the remote (each worker); `0` = pull only on the webhook and when a "
        "push is refused")
    follow_interval: float = setting(
        1.0, "CALENDAR_FOLLOW_INTERVAL", float,
        "seconds between two looks at the branch head by the follower thread of each worker (it gives ids "
        "and brings the search index to a new head; woken at once after a write, a pull or a webhook)")
    remote_timeout: float = setting(
        10.0, "CALENDAR_REMOTE_TIMEOUT", float,
        "seconds one git command talking to the remote (fetch, push, ls-remote) may take; then the "
        "request answers 503 `calendar-remote-unavailable`")
    webhook_secret: str = setting(
        "", "CALENDAR_WEBHOOK_SECRET", str,
        "secret of the push webhook `POST /calendar/events/v1/hooks/git`; without it (or without a remote) "
        "the hook answers 403 `calendar-webhook-disabled`",
        secret=True)
    login_attempts: int = setting(
        10, "CALENDAR_LOGIN_ATTEMPTS", int,
        "failed sign-ins per login (existing or not) within the window; then 429 `rest_too_many_requests` "
        "with `Retry-After`, even for the right password; `0` = no limit")
    login_address_attempts: int = setting(
        30, "CALENDAR_LOGIN_ADDRESS_ATTEMPTS", int, "failed sign-ins per client address, across logins, within the window")
    login_window: float = setting(300.0, "CALENDAR_LOGIN_WINDOW", float, "seconds the sign-in limits look back")
    event_password_attempts: int = setting(
        10, "CALENDAR_EVENT_PASSWORD_ATTEMPTS", int,
        "wrong event passwords per event and client address within the window; then 429")
    event_password_window: float = setting(
        300.0, "CALENDAR_EVENT_PASSWORD_WINDOW", float, "seconds the event password limit looks back")
    changes_remote_lookups: int = setting(
        30, "CALENDAR_CHANGES_REMOTE_LOOKUPS", int,
        "change tokens this replica does not know (each makes it look at the git remote) an anonymous "
        "client address may send within `CALENDAR_CHANGES_REMOTE_WINDOW`; then 429 with `Retry-After`; "
        "`0` = no limit")
    changes_remote_window: float = setting(
        60.0, "CALENDAR_CHANGES_REMOTE_WINDOW", float, "seconds the limit on unknown change tokens looks back")
    limiter_size: int = setting(
        10_000, "CALENDAR_LIMITER_SIZE", int, "entries each limit remembers at most (the oldest is dropped)")
    argon2_concurrency: int = setting(
        2, "CALENDAR_ARGON2_CONCURRENCY", int,
        "Argon2 checks (64 MiB of memory each, argon2-cffi's default) running at once per worker; a check waiting over 2 s gets 503 "
        "with `Retry-After`")
    trust_forwarded_for: bool = setting(
        False, "CALENDAR_TRUST_FORWARDED_FOR", _bool,
        "take the client address from `X-Forwarded-For` (its last entry); only behind a proxy that sets it")
    state_dir: Path = setting(
        Path("state"), "CALENDAR_STATE_DIR", Path,
        "the service's own state (webhook subscriptions with their secrets, the delivery queue, failed "
        "sign-in and password attempts) when `CALENDAR_STATE_URL` is empty: one SQLite database, "
        "`webhooks.sqlite3`, mode 0600, created by the first subscription or the first failed attempt; "
        "refused inside the content repository")
    state_url: str = setting(
        "", "CALENDAR_STATE_URL", str,
        "`postgresql://USER:PASSWORD@HOST:PORT/DATABASE` keeps the service's state in PostgreSQL instead of "
        "SQLite, for replicas on several hosts (tables made on first use); empty: SQLite in "
        "`CALENDAR_STATE_DIR`. Its password is never shown", shown="empty (SQLite)", secret=True)
    webhook_delivery: bool = setting(
        True, "CALENDAR_WEBHOOK_DELIVERY", _bool,
        "`0` keeps this instance from ever delivering webhooks (one process delivers at a time, by a lease "
        "in the state database)")
    webhook_allow_private: tuple[str, ...] = setting(
        (), "CALENDAR_WEBHOOK_ALLOW_PRIVATE", _networks,
        "networks webhook targets may be in besides public addresses: comma-separated "
        "(`127.0.0.0/8,10.1.0.0/16`), or `1`/`*` for any address; for tests and intranets")
    webhook_timeout: float = setting(
        10.0, "CALENDAR_WEBHOOK_TIMEOUT", float,
        "seconds one delivery may take (connecting, sending, reading the answer)")
    webhook_backoff: float = setting(
        10.0, "CALENDAR_WEBHOOK_BACKOFF", float,
        "seconds before the first retry of a failed delivery, doubled per failure up to "
        "`CALENDAR_WEBHOOK_BACKOFF_MAX`")
    webhook_backoff_max: float = setting(
        3600.0, "CALENDAR_WEBHOOK_BACKOFF_MAX", float, "the longest wait between retries of a delivery, in seconds")
    webhook_max_failures: int = setting(
        20, "CALENDAR_WEBHOOK_MAX_FAILURES", int,
        "consecutive failed attempts that disable a subscription; `0` = never")
    webhook_lease: float = setting(
        30.0, "CALENDAR_WEBHOOK_LEASE", float,
        "seconds the delivering process holds its lease without renewing it (longer than the timeout); "
        "another process takes over after that")
    webhook_workers: int = setting(
        4, "CALENDAR_WEBHOOK_WORKERS", int,
        "deliveries the delivering process makes at once, each to a different subscription (one "
        "subscription's deliveries stay in commit order, one at a time): a receiver that hangs holds one "
        "worker for at most `CALENDAR_WEBHOOK_TIMEOUT`, never the others")
    webhook_poll: float = setting(
        1.0, "CALENDAR_WEBHOOK_POLL", float, "seconds between looks at the branch head and the delivery queue")
    recurrence_horizon: int = setting(
        24, "CALENDAR_RECURRENCE_HORIZON", int,
        "months ahead (1 to 120) that open-ended recurring events are expanded to, as the original's Pro "
        "setting; the horizon moves each midnight UTC, the files never change")
    max_occurrences: int = setting(
        10_000, "CALENDAR_MAX_OCCURRENCES", int,
        "occurrences a recurring event may have within `CALENDAR_RECURRENCE_HORIZON` months from its start, "
        "counted as its rule produces them (an `HOURLY` rule with 60 `BYMINUTE` values is one a minute); a "
        "series over it is refused: 400 naming `recurrence` through the API, `path:line` at its `RRULE` line "
        "in a pushed file (which is then not served)")

    presented_memo_bytes: int = setting(
        4_000_000, "CALENDAR_PRESENTED_MEMO_BYTES", int,
        "bytes of presented JSON text each worker remembers for the current commit (least recently used "
        "forgotten first): a list or event read again is answered from it; each worker fills its own, so "
        "this is per worker memory")
    recent_records: int = setting(
        300, "CALENDAR_RECENT_RECORDS", int,
        "events whose data each worker keeps unpacked at once (the others are unpacked again from the "
        "records cache's bytes when read); per worker memory")

    @classmethod
    def from_env(cls, environ: dict | None = None, **overrides) -> "Settings":
        """Build settings from environment variables, then apply ``overrides`` (field names).

        Raises ValueError naming the variable when a value cannot be converted.
        """
        environ = os.environ if environ is None else environ
        values = {}
        for setting_field in fields(cls):
            var, convert, name = setting_field.metadata["env"], setting_field.metadata["convert"], setting_field.name
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
        if not self.follow_interval > 0:
            raise ValueError("CALENDAR_FOLLOW_INTERVAL must be a positive number of seconds")
        if not self.remote_timeout > 0:
            raise ValueError("CALENDAR_REMOTE_TIMEOUT must be a positive number of seconds")
        content = self.content_dir.expanduser().resolve()
        users = self.users_file.expanduser().resolve()
        if users == content or content in users.parents:
            raise ValueError("CALENDAR_USERS_FILE must not be inside the content repository")
        state = self.state_dir.expanduser().resolve()
        scheme = self.state_url.strip().split("://", 1)[0].lower() if "://" in self.state_url else self.state_url.strip()
        if scheme and scheme not in ("postgresql", "postgres"):
            raise ValueError("CALENDAR_STATE_URL must be empty (SQLite in CALENDAR_STATE_DIR) or a "
                             "postgresql://user:password@host:port/database URL")
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
        for name, value in (("CALENDAR_MAX_FILE_BYTES", self.max_file_bytes),
                            ("CALENDAR_MAX_NESTING", self.max_nesting), ("CALENDAR_MAX_KEYS", self.max_keys),
                            ("CALENDAR_MAX_ITEMS", self.max_items),
                            ("CALENDAR_MAX_STRING_LENGTH", self.max_string_length),
                            ("CALENDAR_STATUS_FILES_SHOWN", self.status_files_shown),
                            ("CALENDAR_PRESENTED_MEMO_BYTES", self.presented_memo_bytes),
                            ("CALENDAR_RECENT_RECORDS", self.recent_records)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number")
        if self.max_nesting < 4:
            raise ValueError("CALENDAR_MAX_NESTING must be 4 or more (records nest that deep)")
        if isinstance(self.max_occurrences, bool) or not 1 <= int(self.max_occurrences) <= 1_000_000:
            raise ValueError("CALENDAR_MAX_OCCURRENCES must be a number from 1 to 1000000")
        if isinstance(self.webhook_workers, bool) or not 1 <= int(self.webhook_workers) <= 64:
            raise ValueError("CALENDAR_WEBHOOK_WORKERS must be a number from 1 to 64")
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
            state_url=self.state_url.strip(),
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


def _shown(value) -> str:
    """A default as the configuration page shows it."""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value in ("", ()):
        return "none"
    return f"`{value}`"


def configuration_page() -> str:
    """``docs/configuration.md``: every setting with its variable, default and meaning, made from
    the fields of ``Settings`` (a test fails when the page and this text differ)."""
    rows = []
    for setting_field in fields(Settings):
        meta = setting_field.metadata
        default = meta["shown"] or _shown(setting_field.default)
        rows.append(f"| `{meta['env']}` | {default} | `{setting_field.name}` | {meta['doc']} |")
    for name, default, doc in OTHER_VARIABLES:
        rows.append(f"| `{name}` | {default} | | {doc} |")
    table = "\n".join(rows)
    return f"""# Configuration

Every setting comes from an environment variable, read once when the service starts (the web
app and every command alike). Embedding code and tests pass the same settings to
`create_app({{...}})` by their key. A value that cannot be used stops the start with a message
naming the variable; an empty variable counts as unset.

`python3 -m calendar_service settings` prints the values this environment gives (secrets as
`set` or `not set`).

| variable | default | key | meaning |
|---|---|---|---|
{table}

Relative paths are taken from the directory the service starts in.

This page is made from the settings in `calendar_service/config.py` by
`python3 -m calendar_service settings --markdown > docs/configuration.md`;
`tests/test_configuration_doc.py` fails when the two differ.
"""


def effective_settings(settings: Settings) -> list[tuple[str, str]]:
    """(variable, value as text) of every setting of ``settings``, secrets as ``set`` / ``not set``."""
    shown = []
    for setting_field in fields(Settings):
        value = getattr(settings, setting_field.name)
        if setting_field.metadata["secret"]:
            text = "set" if value else "not set"
        elif isinstance(value, tuple):
            text = ",".join(value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        shown.append((setting_field.metadata["env"], text))
    return shown

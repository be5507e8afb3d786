"""Accounts: the users file, application passwords and HTTP Basic authentication.

The users file lives outside the content repository (``CALENDAR_USERS_FILE``). Each user
has a numeric id (the ``author`` of records), a login, a display name and e-mail (the
commit author), a role, and any number of application passwords, each stored only as a
hash and each revocable.

Two kinds of hash, chosen by who chose the password:

- Generated application passwords (``TOKEN_LENGTH`` characters from a 32-letter alphabet:
  140 bits from ``secrets``) are stored as ``$token-sha256$SALT$DIGEST``, HMAC-SHA256 keyed
  with a per-token random salt. A slow hash protects guessable passwords; nobody can
  enumerate 2**140 candidates however fast the hash, so slowness buys nothing and costs
  time and memory on every request (WordPress 6.8 made the same change for the same reason).
- Passwords a human chose (``--password``) keep Argon2id (argon2-cffi: slow, salted,
  memory-hard), as do application passwords generated before the change (24 characters),
  which therefore keep working. At most a few Argon2 checks run at once (``limits``).

Which kind applies is decided by the password presented, not by the account: a password in
the generated format is checked only against fast hashes, anything else only against Argon2
hashes. An unknown login, or an account without a hash of that kind, is checked against a
dummy hash of the same kind (and, for Argon2, the cost of the file's dearest hash), so the
time of an answer does not tell whether the login exists. A human-chosen password in the
generated format is refused. Failed attempts are counted and limited (``limits``).

A credential that has been verified once is remembered in memory (as a keyed digest, never
in clear) until the users file changes.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path

import yaml
from argon2 import PasswordHasher, extract_parameters
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from calendar_service.auth.limits import Limits
from calendar_service.domain.roles import ROLES, User

_hasher = PasswordHasher()

TOKEN_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789AB"  # 32 letters (5 bits each), no look-alikes
TOKEN_LENGTH = 28                                    # 140 bits; shown in groups of four
TOKEN_PREFIX = "$token-sha256$"
_dummy_argon2: dict[tuple, str] = {}                 # cost parameters -> a hash of nothing in particular
_DUMMY_TOKEN = None


def is_token(password: str) -> bool:
    """Whether ``password`` (spaces removed) has the shape of a generated application password."""
    return len(password) == TOKEN_LENGTH and all(c in TOKEN_ALPHABET for c in password)


def token_hash(token: str, salt: bytes | None = None) -> str:
    """The stored form of a generated application password: HMAC-SHA256 keyed with a random salt."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hmac.new(salt, token.encode(), hashlib.sha256).digest()
    return TOKEN_PREFIX + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode()


def token_matches(stored: str, token: str) -> bool:
    try:
        salt = base64.b64decode(stored[len(TOKEN_PREFIX):].split("$", 1)[0], validate=True)
    except ValueError:
        return False
    return hmac.compare_digest(token_hash(token, salt), stored)


def _dummy_token_hash() -> str:
    global _DUMMY_TOKEN
    if _DUMMY_TOKEN is None:
        _DUMMY_TOKEN = token_hash(secrets.token_hex(16))
    return _DUMMY_TOKEN


def _argon2_cost(stored: str) -> tuple:
    try:
        params = extract_parameters(stored)
    except (InvalidHashError, ValueError):
        return (0, 0, 0)
    return (params.memory_cost * params.time_cost, params.memory_cost, params.parallelism)


def _dummy_argon2_hash(like: str | None) -> str:
    """An Argon2 hash with the cost parameters of ``like`` (the default cost when None)."""
    try:
        params = extract_parameters(like) if like else None
    except (InvalidHashError, ValueError):
        params = None
    key = (params.time_cost, params.memory_cost, params.parallelism) if params else ()
    if key not in _dummy_argon2:
        hasher = PasswordHasher(*key[:3]) if key else _hasher
        _dummy_argon2[key] = hasher.hash(secrets.token_hex(16))
    return _dummy_argon2[key]


class AccountError(ValueError):
    """A user-management request that cannot be carried out; the message says why."""


class Accounts:
    """The users file, re-read whenever it changes on disk."""

    def __init__(self, path: Path, limits: Limits | None = None):
        self.path = Path(path)
        self.limits = limits or Limits()
        self._like: str | None = None  # an Argon2 hash of the file: dummies are made at its cost
        self._lock = threading.Lock()
        self._stamp = None
        self._users: dict[str, User] = {}
        self._verified: dict[bytes, str] = {}
        self._cache_key = secrets.token_bytes(32)

    # ----------------------------------------------------------------------------- reading

    def _load(self) -> None:
        try:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp:
            return
        users: dict[str, User] = {}
        if stamp is not None:
            raw = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
            for entry in raw.get("users", []) or []:
                user = User(
                    id=int(entry["id"]), login=str(entry["login"]), name=str(entry.get("name") or entry["login"]),
                    email=str(entry.get("email") or f"{entry['login']}@localhost"), role=str(entry.get("role", "subscriber")),
                    passwords=tuple(entry.get("passwords") or ()),
                )
                users[user.login] = user
        self._users = users
        # dummies cost what the dearest hash of the file costs: an unknown login is never the quick one
        self._like = max((str(e.get("hash")) for u in users.values() for e in u.passwords
                          if str(e.get("hash", "")).startswith("$argon2")), key=_argon2_cost, default=None)
        self._verified.clear()
        self._stamp = stamp

    def users(self) -> list[User]:
        with self._lock:
            self._load()
            return sorted(self._users.values(), key=lambda u: u.id)

    def get(self, login: str) -> User | None:
        with self._lock:
            self._load()
            return self._users.get(login)

    def id_of_email(self, email: str) -> int | None:
        """The id of the account with this e-mail address (compared without case), or None."""
        wanted = (email or "").strip().lower()
        return next((u.id for u in self.users() if wanted and u.email.lower() == wanted), None) if wanted else None

    def by_id(self, user_id: int) -> User | None:
        return next((u for u in self.users() if u.id == user_id), None)

    def authenticate(self, login: str, password: str, client: str | None = None) -> User | None:
        """The user whose login and application password these are, or None.

        ``client`` is the caller's address, for the limits on failed attempts: ``Throttled``
        (429) when this login or address has used them up, even with the right password.
        """
        self.limits.check_login(login, client)
        user = self._check(login, password)
        if user is None:
            self.limits.login_failed(login, client)
        return user

    def _check(self, login: str, password: str) -> User | None:
        with self._lock:
            self._load()
            user = self._users.get(login)
            like = self._like
            digest = hmac.new(self._cache_key, f"{login}\0{password}".encode(), hashlib.sha256).digest()
            if user is not None and password and digest in self._verified:
                return user
        password = password.replace(" ", "")  # application passwords may be pasted in groups
        entries = [str(e.get("hash", "")) for e in (user.passwords if user else ())]
        if is_token(password):
            # fast path: one HMAC per token of the account, or one against a dummy
            tokens = [h for h in entries if h.startswith(TOKEN_PREFIX)] or [_dummy_token_hash()]
            ok = any([token_matches(h, password) for h in tokens])  # a list: no early exit
        else:
            # human-chosen (or pre-change generated) passwords: Argon2, a few at a time
            ok = False
            with self.limits.argon2_slot():
                slow = [h for h in entries if h.startswith("$argon2")] or [_dummy_argon2_hash(like)]
                for stored in slow:
                    try:
                        ok = _hasher.verify(stored, password) or ok
                    except (VerifyMismatchError, VerificationError, InvalidHashError):
                        continue
        if not ok or user is None or not password:
            return None
        with self._lock:
            self._verified[digest] = login
        return user

    def authenticate_header(self, header: str | None, client: str | None = None) -> User | None:
        """Read an ``Authorization: Basic ...`` header; None when absent or wrong."""
        if not header:
            return None
        login, sep, password = None, "", ""
        if header.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
                login, sep, password = decoded.partition(":")
            except (ValueError, UnicodeDecodeError):
                pass
        if not sep:  # unreadable credentials count against the address
            self.limits.check_login(None, client)
            self.limits.login_failed(None, client)
            return None
        return self.authenticate(login, password, client)

    # ----------------------------------------------------------------------------- changing

    def _raw(self) -> dict:
        if not self.path.exists():
            return {"users": []}
        return yaml.safe_load(self.path.read_text(encoding="utf-8")) or {"users": []}

    def _save(self, raw: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".users-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("# Calendar service accounts. Passwords are hashes (generated ones salted SHA-256,\n"
                         "# chosen ones Argon2id); manage with\n"
                         "# `python -m calendar_service user ...`. Keep this file out of the content repository.\n")
            yaml.safe_dump(raw, handle, sort_keys=False, allow_unicode=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    @staticmethod
    def _new_password() -> str:
        # TOKEN_LENGTH characters from a 32-letter alphabet (140 bits), shown in groups of four
        raw = "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))
        return " ".join(raw[i:i + 4] for i in range(0, TOKEN_LENGTH, 4))

    @staticmethod
    def _chosen(password: str | None) -> str | None:
        """A human-chosen password, refused when it has the generated format (that format is
        checked with the fast hash only, which a guessable password must not get)."""
        if password and is_token(password.replace(" ", "")):
            raise AccountError("that password has the format of a generated application password; "
                               "leave out --password to have one generated")
        return password

    def _password_entry(self, password: str, label: str, generated: bool) -> dict:
        password = password.replace(" ", "")
        return {
            "id": secrets.token_hex(4),
            "label": label,
            "hash": token_hash(password) if generated else _hasher.hash(password),
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        }

    def add(self, login: str, role: str, email: str | None = None, name: str | None = None,
            password: str | None = None) -> tuple[User, str]:
        """Create an account. Returns the user and its password (generated when none is given)."""
        if role not in ROLES:
            raise AccountError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
        if not login or any(c in login for c in ":\n\r\0") or len(login) > 60:
            raise AccountError("a login must be 1-60 characters without ':' or line breaks")
        with self._lock:
            raw = self._raw()
            entries = raw.setdefault("users", [])
            if any(e.get("login") == login for e in entries):
                raise AccountError(f"user {login!r} already exists")
            generated = not self._chosen(password)
            password = password or self._new_password()
            entries.append({
                "id": max((int(e["id"]) for e in entries), default=0) + 1,
                "login": login,
                "name": name or login,
                "email": email or f"{login}@localhost",
                "role": role,
                "passwords": [self._password_entry(password, "default", generated)],
            })
            self._save(raw)
            self._stamp = None
        return self.get(login), password

    def remove(self, login: str) -> None:
        with self._lock:
            raw = self._raw()
            kept = [e for e in raw.get("users", []) if e.get("login") != login]
            if len(kept) == len(raw.get("users", [])):
                raise AccountError(f"no user {login!r}")
            raw["users"] = kept
            self._save(raw)
            self._stamp = None

    def set_password(self, login: str, password: str | None = None) -> str:
        """Replace all of a user's application passwords by one; returns it."""
        with self._lock:
            raw = self._raw()
            entry = next((e for e in raw.get("users", []) if e.get("login") == login), None)
            if entry is None:
                raise AccountError(f"no user {login!r}")
            generated = not self._chosen(password)
            password = password or self._new_password()
            entry["passwords"] = [self._password_entry(password, "default", generated)]
            self._save(raw)
            self._stamp = None
        return password

    def add_token(self, login: str, label: str = "token") -> tuple[str, str]:
        """Issue one more application password; returns (its id, the password)."""
        with self._lock:
            raw = self._raw()
            entry = next((e for e in raw.get("users", []) if e.get("login") == login), None)
            if entry is None:
                raise AccountError(f"no user {login!r}")
            password = self._new_password()
            item = self._password_entry(password, label, generated=True)
            entry.setdefault("passwords", []).append(item)
            self._save(raw)
            self._stamp = None
        return item["id"], password

    def revoke_token(self, login: str, token_id: str) -> None:
        with self._lock:
            raw = self._raw()
            entry = next((e for e in raw.get("users", []) if e.get("login") == login), None)
            if entry is None:
                raise AccountError(f"no user {login!r}")
            before = len(entry.get("passwords") or [])
            entry["passwords"] = [p for p in entry.get("passwords") or [] if p.get("id") != token_id]
            if len(entry["passwords"]) == before:
                raise AccountError(f"user {login!r} has no password with id {token_id!r}")
            self._save(raw)
            self._stamp = None

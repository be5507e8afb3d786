"""Accounts: the users file, application passwords and HTTP Basic authentication.

The users file lives outside the content repository (``CALENDAR_USERS_FILE``). Each user
has a numeric id (the ``author`` of records), a login, a display name and e-mail (the
commit author), a role, and any number of application passwords, each stored only as an
Argon2id hash (argon2-cffi: a slow, salted, memory-hard hash) and each revocable.

Checking an Argon2 hash costs tens of milliseconds by design, so a credential that has
been verified once is remembered in memory (as a keyed digest, never in clear) until the
users file changes.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

ROLES = ("administrator", "editor", "author", "contributor", "subscriber")

# Capabilities per role, as WordPress grants them, the same on events, venues and organizers.
CAPABILITIES = {
    "administrator": {"edit_posts", "publish_posts", "edit_others_posts", "edit_published_posts", "delete_posts",
                      "delete_others_posts", "delete_published_posts", "read_private_posts", "manage_categories",
                      "upload_files"},
    "editor": {"edit_posts", "publish_posts", "edit_others_posts", "edit_published_posts", "delete_posts",
               "delete_others_posts", "delete_published_posts", "read_private_posts", "manage_categories",
               "upload_files"},
    "author": {"edit_posts", "publish_posts", "edit_published_posts", "delete_posts", "delete_published_posts",
               "upload_files"},
    "contributor": {"edit_posts", "delete_posts"},
    "subscriber": set(),
}

_hasher = PasswordHasher()


class AccountError(ValueError):
    """A user-management request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class User:
    id: int
    login: str
    name: str
    email: str
    role: str
    passwords: tuple = field(default=(), repr=False)

    def can(self, capability: str) -> bool:
        return capability in CAPABILITIES.get(self.role, set())


class Accounts:
    """The users file, re-read whenever it changes on disk."""

    def __init__(self, path: Path):
        self.path = Path(path)
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

    def by_id(self, user_id: int) -> User | None:
        return next((u for u in self.users() if u.id == user_id), None)

    def authenticate(self, login: str, password: str) -> User | None:
        """The user whose login and application password these are, or None."""
        with self._lock:
            self._load()
            user = self._users.get(login)
            if user is None or not password:
                return None
            digest = hmac.new(self._cache_key, f"{login}\0{password}".encode(), hashlib.sha256).digest()
            if digest in self._verified:
                return user
        password = password.replace(" ", "")  # application passwords may be pasted in groups
        for entry in user.passwords:
            try:
                if _hasher.verify(entry.get("hash", ""), password):
                    with self._lock:
                        self._verified[digest] = login
                    return user
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                continue
        return None

    def authenticate_header(self, header: str | None) -> User | None:
        """Read an ``Authorization: Basic ...`` header; None when absent or wrong."""
        if not header or not header.lower().startswith("basic "):
            return None
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
        login, sep, password = decoded.partition(":")
        if not sep:
            return None
        return self.authenticate(login, password)

    # ----------------------------------------------------------------------------- changing

    def _raw(self) -> dict:
        if not self.path.exists():
            return {"users": []}
        return yaml.safe_load(self.path.read_text(encoding="utf-8")) or {"users": []}

    def _save(self, raw: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".users-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("# Calendar service accounts. Passwords are Argon2id hashes; manage with\n"
                         "# `python -m calendar_service user ...`. Keep this file out of the content repository.\n")
            yaml.safe_dump(raw, handle, sort_keys=False, allow_unicode=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    @staticmethod
    def _new_password() -> str:
        # 24 characters from a 32-letter alphabet (120 bits), shown in groups of four
        alphabet = "abcdefghjkmnpqrstuvwxyz23456789AB"
        raw = "".join(secrets.choice(alphabet) for _ in range(24))
        return " ".join(raw[i:i + 4] for i in range(0, 24, 4))

    def _password_entry(self, password: str, label: str) -> dict:
        return {
            "id": secrets.token_hex(4),
            "label": label,
            "hash": _hasher.hash(password.replace(" ", "")),
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
            password = password or self._new_password()
            entries.append({
                "id": max((int(e["id"]) for e in entries), default=0) + 1,
                "login": login,
                "name": name or login,
                "email": email or f"{login}@localhost",
                "role": role,
                "passwords": [self._password_entry(password, "default")],
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
            password = password or self._new_password()
            entry["passwords"] = [self._password_entry(password, "default")]
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
            item = self._password_entry(password, label)
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

"""Passwords: how they are stored and checked, and the limits on guessing them.

Generated application passwords get a fast salted hash, chosen ones Argon2id; answers take
as long for an unknown login as for a real one; failed sign-ins are limited per login and
per client address, event-password guesses per event and address (429 with Retry-After).
All through the real app and a real users file.
"""
from __future__ import annotations

import base64
import statistics
import time

import pytest
import yaml
from argon2 import PasswordHasher
from flask import request

from calendar_service.auth.accounts import Accounts, AccountError, is_token
from calendar_service.auth.limits import Limits
from conftest import API, PASSWORDS

LOCAL, OTHER = {"REMOTE_ADDR": "192.0.2.1"}, {"REMOTE_ADDR": "198.51.100.7"}


def basic(login: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def sign_in(client, login, password, where=LOCAL):
    return client.get(API + "/events", headers=basic(login, password), environ_base=where)


def stored_hashes(users_file, login) -> list[str]:
    raw = yaml.safe_load(users_file.read_text())
    return [p["hash"] for u in raw["users"] if u["login"] == login for p in u["passwords"]]


# ----------------------------------------------------------------------------- storage


def test_generated_token_has_a_fast_hash_and_signs_in(make_app, paths):
    accounts = Accounts(paths["users_file"])
    token_id, token = accounts.add_token("editor", "laptop")
    assert is_token(token.replace(" ", ""))
    (stored,) = [h for h in stored_hashes(paths["users_file"], "editor") if not h.startswith("$argon2")]
    assert stored.startswith("$token-sha256$") and token.replace(" ", "") not in stored
    client = make_app().test_client()
    assert sign_in(client, "editor", token).status_code == 200
    assert sign_in(client, "editor", token.replace(" ", "")).status_code == 200
    wrong = ("b" if token[0] != "b" else "c") + token[1:]  # same format, one letter off
    assert sign_in(client, "editor", wrong).status_code == 401
    assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 200  # the chosen one still works


def test_chosen_password_keeps_argon2_and_may_not_look_generated(make_app, paths):
    accounts = Accounts(paths["users_file"])
    accounts.add("zoe", "author", password="zoes own password")
    assert stored_hashes(paths["users_file"], "zoe")[0].startswith("$argon2id$")
    assert sign_in(make_app().test_client(), "zoe", "zoes own password").status_code == 200
    with pytest.raises(AccountError, match="format of a generated"):
        accounts.set_password("zoe", "abcd efgh jkmn pqrs tuvw xyz2 3456")
    generated = accounts.set_password("zoe")
    assert stored_hashes(paths["users_file"], "zoe")[0].startswith("$token-sha256$")
    assert sign_in(make_app().test_client(), "zoe", generated).status_code == 200


def test_argon2_hashes_of_old_generated_passwords_still_sign_in(make_app, paths):
    old = "k7mq 2xpa 9bnt r4wz h3ud e8fs"  # the former format: 24 characters
    raw = yaml.safe_load(paths["users_file"].read_text())
    author = next(u for u in raw["users"] if u["login"] == "author")
    author["passwords"].append({"id": "0ld0ld00", "label": "old", "created": "2024-01-01 00:00:00",
                                "hash": PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
                                .hash(old.replace(" ", ""))})
    paths["users_file"].write_text(yaml.safe_dump(raw, sort_keys=False))
    client = make_app().test_client()
    assert sign_in(client, "author", old).status_code == 200
    assert sign_in(client, "author", old.replace(" ", "")).status_code == 200
    assert sign_in(client, "author", old[:-1] + "x").status_code == 401


# ----------------------------------------------------------------------------- timing


def _median_times(client, login_a, login_b, password, tries=30) -> tuple[float, float]:
    times = {login_a: [], login_b: []}
    for _ in range(tries):
        for login in (login_a, login_b):  # interleaved: machine load hits both alike
            start = time.perf_counter()
            assert sign_in(client, login, password).status_code == 401
            times[login].append(time.perf_counter() - start)
    return statistics.median(times[login_a]), statistics.median(times[login_b])


def test_unknown_and_known_logins_take_the_same_time(make_app, paths):
    # one account with a real-cost Argon2 hash (the others have the test suite's cheap ones)
    Accounts(paths["users_file"]).add("slowpoke", "author", password="a real human password")
    client = make_app(login_attempts=0, login_address_attempts=0).test_client()
    known, unknown = _median_times(client, "slowpoke", "no-such-login", "wrong human guess")
    assert known > 0.005  # a real Argon2 check happened
    assert 1 / 3 < known / unknown < 3, (known, unknown)
    # a wrong password in the generated format: the fast hash for both
    Accounts(paths["users_file"]).add_token("slowpoke")
    known, unknown = _median_times(client, "slowpoke", "no-such-login", "abcd efgh jkmn pqrs tuvw xyz2 3456")
    assert known < 0.005 * 10 and 1 / 3 < known / unknown < 3, (known, unknown)


# ----------------------------------------------------------------------------- limits


def test_eleventh_failure_for_a_login_is_429_even_with_the_right_password(make_app):
    client = make_app(login_attempts=10, login_window=300).test_client()
    for _ in range(10):
        assert sign_in(client, "editor", "wrong").status_code == 401
    r = sign_in(client, "editor", "wrong")
    assert r.status_code == 429
    assert r.get_json() == {"code": "rest_too_many_requests", "message": "Too many failed attempts. Try again later.",
                            "data": {"status": 429}}
    assert 0 < int(r.headers["Retry-After"]) <= 300
    assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 429  # locked out: no oracle
    assert sign_in(client, "editor", PASSWORDS["editor"], OTHER).status_code == 429  # per login, any address
    assert sign_in(client, "author", PASSWORDS["author"]).status_code == 200  # other logins are not affected
    # an unknown login is limited exactly alike: a 429 says nothing about the account
    for _ in range(10):
        assert sign_in(client, "ghost", "wrong", OTHER).status_code == 401
    assert sign_in(client, "ghost", "wrong", OTHER).status_code == 429


def test_successes_do_not_count_and_the_window_ends(make_app):
    client = make_app(login_attempts=3, login_window=1).test_client()
    for _ in range(5):
        assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 200
    for _ in range(3):
        assert sign_in(client, "editor", "wrong").status_code == 401
    assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 429
    time.sleep(1.2)
    assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 200


def test_failures_from_one_address_are_limited_across_logins(make_app):
    client = make_app(login_attempts=100, login_address_attempts=5).test_client()
    for i in range(5):
        assert sign_in(client, f"guess{i}", "wrong").status_code == 401
    assert sign_in(client, "guess-next", "wrong").status_code == 429
    assert sign_in(client, "editor", PASSWORDS["editor"]).status_code == 429
    assert client.get(API + "/events", headers={"Authorization": "Basic !!!"}, environ_base=LOCAL).status_code == 429
    # another address has its own count
    assert sign_in(client, "guess-next", "wrong", OTHER).status_code == 401
    assert sign_in(client, "editor", PASSWORDS["editor"], OTHER).status_code == 200


def test_forwarded_for_counts_only_when_trusted(make_app):
    spoofed = {**basic("editor", "wrong"), "X-Forwarded-For": "203.0.113.9"}
    client = make_app(login_attempts=100, login_address_attempts=2).test_client()
    for _ in range(2):
        client.get(API + "/events", headers=spoofed, environ_base=LOCAL)
    spoofed["X-Forwarded-For"] = "203.0.113.10"  # a new header does not make a new client
    assert client.get(API + "/events", headers=spoofed, environ_base=LOCAL).status_code == 429
    trusting = make_app(login_attempts=100, login_address_attempts=2, trust_forwarded_for=True).test_client()
    for _ in range(2):
        trusting.get(API + "/events", headers={**spoofed, "X-Forwarded-For": "203.0.113.9"}, environ_base=LOCAL)
    assert trusting.get(API + "/events", headers=spoofed, environ_base=LOCAL).status_code == 401


def test_only_the_last_forwarded_for_entry_is_taken_and_only_with_the_setting(make_app):
    """The app's middleware puts the proxy's entry in remote_addr (what the limits count), even
    after an entry with an unclosed quote (werkzeug's ProxyFix would then keep the proxy's own
    address); the scheme and host the proxy might forward are never taken."""
    seen = []

    def whoami(app):
        app.add_url_rule("/whoami", "whoami", lambda: seen.append((request.remote_addr, request.scheme, request.host)) or "")
        return app.test_client()

    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example", "X-Forwarded-Port": "8443"}
    trusting, plain = whoami(make_app(trust_forwarded_for=True)), whoami(make_app())
    for header, address in (("203.0.113.9", "203.0.113.9"), ("198.51.100.1, 203.0.113.9", "203.0.113.9"),
                            ('"x, 203.0.113.9', "203.0.113.9"), (" , ", "192.0.2.1")):
        trusting.get("/whoami", headers={**forwarded, "X-Forwarded-For": header}, environ_base=LOCAL)
        plain.get("/whoami", headers={**forwarded, "X-Forwarded-For": header}, environ_base=LOCAL)
        assert seen[-2:] == [(address, "http", "localhost"), ("192.0.2.1", "http", "localhost")], header


def test_event_password_guesses_are_limited_per_event_and_address(make_app, paths):
    client = make_app(event_password_attempts=10).test_client()
    admin = basic("administrator", PASSWORDS["administrator"])
    event = client.post(API + "/events", headers=admin, json={"title": "Locked", "description": "Secret plans",
                                                             "start_date": "2030-01-01 10:00",
                                                             "end_date": "2030-01-01 11:00"}).get_json()
    assert client.post(f"{API}/events/{event['id']}", headers=admin, json={"password": "s3cret"}).status_code == 200
    path = f"{API}/events/{event['id']}"
    for i in range(10):
        r = client.get(path, query_string={"password": f"guess-{i}"}, environ_base=LOCAL)
        assert r.status_code == 403 and r.get_json()["code"] == "event-password-protected"
    r = client.get(path, query_string={"password": "guess-10"}, environ_base=LOCAL)
    assert r.status_code == 429 and r.get_json()["code"] == "rest_too_many_requests"
    assert int(r.headers["Retry-After"]) > 0
    assert client.get(path, query_string={"password": "s3cret"}, environ_base=LOCAL).status_code == 429
    # a list is no way around it: the event stays blanked for that address even with the password
    listed = client.get(API + "/events", query_string={"password": "s3cret", "start_date": "2029-12-31", "end_date": "2030-01-02"},
                        environ_base=LOCAL).get_json()["events"]
    assert [e["description"] for e in listed if e["id"] == event["id"]] == [""]
    listed = client.get(API + "/events", query_string={"password": "s3cret", "start_date": "2029-12-31", "end_date": "2030-01-02"},
                        environ_base=OTHER).get_json()["events"]
    assert ["Secret plans" in e["description"] for e in listed if e["id"] == event["id"]] == [True]
    # another address, and the editor of the event, are not affected
    assert client.get(path, query_string={"password": "s3cret"}, environ_base=OTHER).status_code == 200
    assert client.get(path, headers=admin, environ_base=LOCAL).status_code == 200


def test_limiter_tables_stay_bounded(paths):
    accounts = Accounts(paths["users_file"], Limits(login_attempts=10, login_address_attempts=0, size=1000))
    for i in range(10_000):
        assert accounts.authenticate(f"login-{i}", "abcd efgh jkmn pqrs tuvw xyz2 3456", "192.0.2.1") is None
    assert len(accounts.limits.login) == 1000
    assert len(accounts.limits.address) == 0  # that limiter is off


def test_limit_settings_come_from_the_environment(paths):
    from calendar_service.config import Settings
    settings = Settings.from_env({"CALENDAR_LOGIN_ATTEMPTS": "4", "CALENDAR_LOGIN_WINDOW": "60",
                                  "CALENDAR_EVENT_PASSWORD_ATTEMPTS": "0", "CALENDAR_TRUST_FORWARDED_FOR": "yes"},
                                 **paths)
    limits = Limits.from_settings(settings)
    assert (limits.login.attempts, limits.login.window, limits.event.attempts, limits.trust_forwarded_for) == \
        (4, 60.0, 0, True)
    with pytest.raises(ValueError):
        Limits(login_attempts=-1)

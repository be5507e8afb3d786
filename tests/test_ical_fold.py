"""The service's one change to icalendar (``http/ical_fold.py``): installed when the app is
built, only on the icalendar it was written for, and feeds are the same bytes either way."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
from icalendar.parser import content_line
from icalendar.parser import string as icalendar_string

from calendar_service.http import ical, ical_cache, ical_fold
from conftest import Client
from tests.test_ical import SITE_TZ, TODAY, HandWritten, local

ROOT = Path(__file__).resolve().parents[1]
FEEDS = [{}, {"categories": "music"}, {"search": "jazz"}, {"featured": "true"}]


@pytest.fixture
def fresh_icalendar():
    """icalendar's own folding and no decision made, as in a new process; the installed state
    (what building an app leaves) again afterwards."""
    ical_fold.uninstall()
    yield
    ical_fold.uninstall()
    ical_fold.install()


def _pin(name: str) -> str:
    found = re.search(rf"^{name}==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE | re.IGNORECASE)
    assert found, f"{name} is not pinned in requirements.txt"
    return found.group(1)


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == ical_fold.__name__ and r.levelno == logging.WARNING]


@pytest.fixture
def long_lines(repo, make_app):
    """An app on events whose lines need folding: long ASCII text with escapes, accents, emoji."""
    app = make_app(site_timezone=SITE_TZ)
    w = HandWritten(repo)
    music = w.category("Music")
    for n in range(12):
        day = TODAY + timedelta(days=n + 1)
        w.event(local(day, 9), local(day, 11), ["UTC", "Europe/Paris", None][n % 3],
                title=("Jazz, blues; and more " if n % 2 else "Café concert à l'église 😀 ") * (n % 4 + 1) + str(n),
                description="<p>" + "Line with commas, semicolons; and a backslash \\ " * (n + 1)
                + ("€" if n % 2 else "") + "</p>",
                categories=[music] if n % 3 else [], featured=n % 4 == 0)
    # SUMMARY's 74th octet is the backslash of an escaped comma: icalendar keeps it with the comma
    w.event(local(TODAY + timedelta(days=3), 9), local(TODAY + timedelta(days=3), 10), title="a" * 65 + ", and more")
    w.commit()
    return app


def _feeds(app, monkeypatch) -> list[bytes]:
    """Every feed of FEEDS, each VEVENT built anew (an empty VEVENT cache, no VTIMEZONE kept)."""
    client, out = Client(app.test_client(), None), []
    for params in FEEDS:
        monkeypatch.setattr(ical, "VEVENTS", ical_cache.VeventCache())
        ical._vtimezone.cache_clear()
        r = client.get("/events", query_string={**params, "ical": "1"})
        assert r.status_code == 200, r.data[:300]
        out.append(r.data)
    return out


def _unfolded(feed: bytes) -> bytes:
    return re.sub(rb"\r\n[ \t]", b"", feed)


def test_the_pinned_icalendar_is_the_one_the_folding_was_written_for():
    assert ical_fold.WRITTEN_FOR == _pin("icalendar") == ical_fold.installed_version()
    assert ical_fold.problems(ical_fold.WRITTEN_FOR) == []


def test_building_the_app_installs_the_folding_once(fresh_icalendar, long_lines, make_app, caplog, monkeypatch):
    # ``long_lines`` built an app after the folding was taken out: building it put the folding in
    assert ical_fold.installed() and content_line._foldline is ical_fold.fold
    feeds = _feeds(long_lines, monkeypatch)
    assert all(b"\r\n " in feed for feed in feeds)   # lines were folded
    ical_fold.uninstall()
    assert content_line._foldline is icalendar_string._foldline   # icalendar's own again
    with caplog.at_level(logging.WARNING):
        make_app(site_timezone=SITE_TZ)
        assert content_line._foldline is ical_fold.fold
        make_app(site_timezone=SITE_TZ)   # a second app: nothing more to do
        assert ical_fold.install() is True
    assert _warnings(caplog) == []
    assert _feeds(long_lines, monkeypatch) == feeds


def test_on_another_icalendar_the_folding_is_not_installed_and_feeds_are_the_same(fresh_icalendar, long_lines,
                                                                                 caplog, monkeypatch):
    assert content_line._foldline is ical_fold.fold
    ours = _feeds(long_lines, monkeypatch)
    ical_fold.uninstall()
    with caplog.at_level(logging.WARNING):
        assert ical_fold.install(version="7.2.0") is False
        assert ical_fold.install() is False   # decided once: a second install is a no-op
    assert len(_warnings(caplog)) == 1 and "icalendar 7.2.0 is installed, not 7.3.0" in _warnings(caplog)[0]
    assert not ical_fold.installed() and content_line._foldline is icalendar_string._foldline
    theirs = _feeds(long_lines, monkeypatch)
    assert theirs == ours
    assert [_unfolded(feed) for feed in theirs] == [_unfolded(feed) for feed in ours]
    assert all(b"\r\n " in feed for feed in theirs)


def test_a_folding_icalendar_moved_is_left_alone(fresh_icalendar, caplog, monkeypatch):
    """On the pinned version too: when content lines no longer fold through the name ``install``
    replaces, nothing is replaced and the warning says why."""
    monkeypatch.setattr(content_line, "_foldline", lambda line, limit=75, fold_sep="\r\n ": line)
    with caplog.at_level(logging.WARNING):
        assert ical_fold.install() is False
    assert content_line._foldline is not ical_fold.fold
    assert len(_warnings(caplog)) == 1 and "is not icalendar's folding function" in _warnings(caplog)[0]


def test_importing_the_service_leaves_icalendar_as_it_is():
    script = textwrap.dedent("""
        from icalendar.parser import content_line, string
        import calendar_service
        import calendar_service.http.api, calendar_service.http.ical
        assert content_line._foldline is string._foldline, "icalendar was changed at import"
        print("untouched")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "untouched"

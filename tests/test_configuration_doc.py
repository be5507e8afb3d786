"""The configuration page is made from the settings in code, so it cannot drift from them.

``docs/configuration.md`` is what ``python3 -m calendar_service settings --markdown`` prints;
every environment variable the package reads is a setting or one of the page's other
variables; every setting's variable reaches its field.
"""
from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import calendar_service
from calendar_service.cli.commands import main
from calendar_service.config import OTHER_VARIABLES, Settings, configuration_page

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "configuration.md"
PACKAGE = Path(calendar_service.__file__).parent


def test_the_page_is_the_one_the_settings_make(capsys):
    assert main(["settings", "--markdown"]) == 0
    printed = capsys.readouterr().out
    assert printed == configuration_page()
    assert PAGE.read_text(encoding="utf-8") == printed, (
        "docs/configuration.md differs from the settings in calendar_service/config.py: run "
        "python3 -m calendar_service settings --markdown > docs/configuration.md")


def _variables_read(path: Path) -> set[str]:
    """Names that look like environment variables in a module that reads ``os.environ``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    text = path.read_text(encoding="utf-8")
    if "os.environ" not in text and "getenv" not in text:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", node.value):
            found.add(node.value)
    return found


def test_every_variable_the_package_reads_is_documented():
    documented = {f.metadata["env"] for f in fields(Settings)} | {name for name, _, _ in OTHER_VARIABLES}
    read = set()
    for path in PACKAGE.rglob("*.py"):
        read |= {name for name in _variables_read(path) if name.startswith(("CALENDAR_", "GIT_SSH"))}
    for path in PACKAGE.rglob("*.py"):
        # every CALENDAR_ name anywhere in the package's code is a documented variable
        read |= set(re.findall(r"\bCALENDAR_[A-Z0-9_]+\b", path.read_text(encoding="utf-8")))
    assert read - documented == set(), "read but not documented (add a setting to config.Settings)"
    page = PAGE.read_text(encoding="utf-8")
    for name in documented:
        assert f"`{name}`" in page


# a value other than the default that each setting accepts, by field name where its kind is not enough
SAMPLES = {"site_timezone": "Europe/Rome", "site_url": "https://calendar.example", "webhook_timeout": "5",
           "webhook_allow_private": "10.1.0.0/16", "recurrence_horizon": "7", "webhook_lease": "70",
           "state_url": "postgresql://calendar:secret@db.example:5432/calendar"}
BY_KIND = {bool: lambda default: "0" if default else "1", int: lambda default: "7", float: lambda default: "70",
           str: lambda default: "other", tuple: lambda default: "a.example,b.example"}


def test_every_variable_reaches_its_own_setting(tmp_path):
    defaults = Settings.from_env({})
    for setting_field in fields(Settings):
        name, default = setting_field.name, setting_field.default
        if name in SAMPLES:
            raw = SAMPLES[name]
        elif isinstance(default, Path):
            raw = str(tmp_path / name)
        else:
            raw = BY_KIND[type(default)](default)
        given = Settings.from_env({setting_field.metadata["env"]: raw})
        changed = {f.name for f in fields(Settings) if getattr(given, f.name) != getattr(defaults, f.name)}
        # the remote's branch follows CALENDAR_BRANCH unless set
        assert changed - {"git_remote_branch"} == {name} if name == "branch" else changed == {name}, (name, changed)


def test_settings_into_a_closed_pipe_ends_quietly():
    # ``settings | head -1``: the reader may be gone before the output is written
    import os
    import subprocess
    import sys
    read_end, write_end = os.pipe()
    os.close(read_end)   # every write to the pipe now fails with a broken pipe
    try:
        run = subprocess.run([sys.executable, "-m", "calendar_service", "settings", "--markdown"], cwd=ROOT,
                             stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr

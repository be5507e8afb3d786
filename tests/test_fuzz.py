"""Fuzzing against our own /doc: schemathesis generates requests for every operation the
document describes, valid and invalid, and sends them, signed in as an administrator, to the real
app on a real repository seeded with the sample calendar.

Properties checked on every response: never a 5xx; every error carries the API's envelope; a
refused request (4xx) never adds a commit, and the working tree stays clean.

The CI run is short and deterministic (``derandomize``); for a longer hunt set
``CALENDAR_FUZZ_EXAMPLES`` (examples per operation), ``CALENDAR_FUZZ_RANDOM=1`` and
``CALENDAR_FUZZ_COVERAGE=1`` (schemathesis' coverage phase: every boundary value).
"""
from __future__ import annotations

import base64
import json
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from conftest import API, PASSWORDS, Git

EXAMPLES = int(os.environ.get("CALENDAR_FUZZ_EXAMPLES", "10"))
RANDOM = os.environ.get("CALENDAR_FUZZ_RANDOM") == "1"
COVERAGE = os.environ.get("CALENDAR_FUZZ_COVERAGE") == "1"
ADMIN = "Basic " + base64.b64encode(f"administrator:{PASSWORDS['administrator']}".encode()).decode()


@pytest.fixture
def fuzz_app(make_app):
    return make_app(seed_sample=True)


@pytest.fixture
def fuzz_schema(fuzz_app):
    config = schemathesis.Config()
    # the coverage phase sends every boundary value of every parameter (thousands of writes,
    # minutes of CI); tests/test_hostile_input.py covers those cases one by one
    config.projects.default.phases.coverage.enabled = COVERAGE
    return schemathesis.openapi.from_wsgi(API + "/doc", fuzz_app, config=config)


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_no_commit_on_refusal(case, fuzz_app, paths):
    repo = Git(paths["content_dir"])
    before = repo.head()
    headers = {"Authorization": ADMIN} if case.method.upper() != "GET" or "hooks" in case.path else {}
    response = case.call(headers=headers)
    where = f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    assert response.status_code < 500, where
    if response.status_code >= 400:
        body = json.loads(response.text)
        assert set(body) >= {"code", "message", "data"}, where
        assert body["data"]["status"] == response.status_code, where
        assert repo.head() == before, where
    assert repo.status() == "", where

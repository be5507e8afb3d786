"""The shipped deployment kit, for real: HAProxy in front of three gunicorn replicas, a git host
over smart HTTP (git http-backend behind nginx and fcgiwrap) with the shipped push webhook, and
the replicas' state in PostgreSQL, all on loopback, brought up from ``deploy/cluster/`` by
``scripts/cluster.py`` in its short variant. ``.ci/run`` installs the Debian packages it needs.
The full-length run with the figures of the operations doc is ``python3 scripts/cluster.py``."""
from __future__ import annotations

import sys

import pytest

from servers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import cluster  # noqa: E402  (scripts/ is not a package)

FOLLOW_INTERVAL = 1.0  # CALENDAR_FOLLOW_INTERVAL's default: how soon a replica's other workers see a pull


@pytest.fixture(scope="module")
def figures():
    missing = cluster.missing_tools()
    if missing:
        pytest.skip(f"needs Debian's {', '.join(missing)} (.ci/run installs them)")
    return cluster.measure(quick=True)


def test_a_write_is_served_by_every_replica_within_2_s_by_webhook_and_one_interval_without(figures):
    assert figures["webhook"]["max"] <= 2.0, figures["webhook"]
    interval = figures["start"]["pull_interval"]
    assert figures["no_webhook"]["max"] <= interval + FOLLOW_INTERVAL + 1.0, figures["no_webhook"]
    # the lost webhook is what the measure is about: without it, a write takes longer to spread
    assert figures["no_webhook"]["p50"] > figures["webhook"]["p50"], figures


def test_kill_9_of_a_replica_under_load_loses_no_acknowledged_write_and_reads_recover(figures):
    killed = figures["kill"]
    assert killed["reads"] > 100 and killed["acked"] > 5, killed
    assert killed["lost"] == 0, killed
    assert killed["failed_reads_after_check"] == 0, killed


def test_one_delivery_per_change_with_the_deliverer_killed(figures):
    sent = figures["deliveries"]
    assert sent["killed_deliverer"], sent
    assert sent["delivered"] == sent["changes"], sent
    assert sent["repeats_with_other_id"] == 0, sent


def test_sign_in_limits_hold_across_replicas(figures):
    limits = figures["sign_in"]
    assert limits["failures_allowed"] == limits["documented"], limits
    assert limits["refused_everywhere_after"], limits


def test_a_git_host_restart_answers_writes_503_with_retry_after_and_converges(figures):
    restart = figures["git_restart"]
    assert restart["writes_meanwhile"] >= 3, restart
    assert restart["answered_503"] == restart["writes_meanwhile"] == restart["with_retry_after"], restart
    assert restart["reads_ok"] == restart["reads"], restart
    assert restart["converged_after"] < 30, restart


def test_the_table_prints_every_figure(figures):
    printed = cluster.table(figures)
    assert printed.count("\n| ") == 10 and "nan" not in printed

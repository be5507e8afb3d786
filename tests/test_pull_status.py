"""/status through an outage of the git remote: the last attempt and its error, the last
successful pull, since when and how many times in a row it fails; and ``Retry-After`` on the
503s that wait for the remote. The remote is a real ``git daemon``, stopped and restarted at
the same URL."""
from __future__ import annotations

import time

from servers import git_daemon
from test_remote import bare, instances  # noqa: F401  (fixtures)

PULL_INTERVAL = 2  # seconds between the periodic looks at the remote in these tests


def _status(inst) -> dict:
    r = inst.admin.get("/status")
    assert r.status_code == 200, r.get_json()
    return r.get_json()["remote"]


def _wait_for(inst, check, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remote = _status(inst)
        if check(remote):
            return remote
        assert time.monotonic() < deadline, remote
        time.sleep(0.2)


def test_status_shows_the_failing_pulls_and_a_503_says_when_to_retry(bare, instances):  # noqa: F811
    with git_daemon(bare.parent) as prefix:
        port = int(prefix.rsplit(":", 1)[1])
        url = f"{prefix}/{bare.name}"
        a = instances("a", url,
                      pull_interval=PULL_INTERVAL)
        assert a.create("Before the outage").status_code == 201
        head = a.repo.head()
        up = _wait_for(a, lambda r: r["last_pull"] is not None and r["last_successful_pull"] is not None
                       and r["last_successful_pull"]["head"] == head)
        assert up["last_pull"]["result"] == "ok" and up["last_pull"]["error"] is None
        assert up["failing_since"] is None and up["consecutive_failures"] == 0
    # the remote is down: the periodic look fails, and /status says so
    down = _wait_for(a, lambda r: r["consecutive_failures"] >= 2)
    assert down["last_pull"]["result"] == "failed"
    assert "git" in down["last_pull"]["error"] and bare.name in down["last_pull"]["error"]
    assert down["last_successful_pull"]["head"] == head
    assert down["failing_since"] is not None and down["failing_since"] <= down["last_pull"]["time"]
    assert down["last_successful_pull"]["time"] <= down["failing_since"]
    # a write cannot reach the remote: 503, and when to try again (the pull interval)
    r = a.create("During the outage")
    assert r.status_code == 503 and r.get_json()["code"] == "calendar-remote-unavailable", r.get_json()
    assert r.headers["Retry-After"] == str(PULL_INTERVAL)
    # the remote is back at the same URL: the next look succeeds and the failure is gone
    with git_daemon(bare.parent, port=port):
        back = _wait_for(a, lambda r: r["consecutive_failures"] == 0 and r["last_pull"]["result"] == "ok")
        assert back["failing_since"] is None and back["last_pull"]["error"] is None
        assert back["last_successful_pull"]["head"] == a.repo.head()
        assert back["last_successful_pull"]["time"] > down["last_pull"]["time"]
        assert a.create("After the outage").status_code == 201


def test_the_error_shown_has_no_credentials(bare, instances, tmp_path):  # noqa: F811
    with git_daemon(bare.parent) as prefix:
        port = int(prefix.rsplit(":", 1)[1])
    # nothing listens there now; the URL carries a user and password
    url = f"http://editor:s3cret@127.0.0.1:{port}/{bare.name}"
    a = instances("a", url, pull_interval=PULL_INTERVAL)
    down = _wait_for(a, lambda r: r["consecutive_failures"] >= 1)
    assert down["last_pull"]["result"] == "failed" and down["last_successful_pull"] is None
    assert "s3cret" not in str(down) and "editor@" not in str(down)
    # readyz and every request wait for the first pull: 503 with Retry-After
    ready = a.app.test_client().get("/readyz")
    assert ready.status_code == 503 and ready.headers["Retry-After"] == str(PULL_INTERVAL)
    r = a.admin.get("/events")
    assert r.status_code == 503 and r.headers["Retry-After"] == str(PULL_INTERVAL)


def test_a_restarted_replica_whose_first_pull_failed_gets_ready_by_itself(bare, instances, tmp_path):  # noqa: F811
    """A replica restarted while its git host is down serves its last head but is not ready (a
    balancer sends it nothing); once the host is back it pulls within seconds, not after a whole
    pull interval, and is ready again, even though its branch already was where the remote is."""
    with git_daemon(bare.parent) as prefix:
        port = int(prefix.rsplit(":", 1)[1])
        url = f"{prefix}/{bare.name}"
        first = instances("a", url, pull_interval=600)
        assert first.create("Before the restart").status_code == 201
        assert first.app.test_client().get("/readyz").status_code == 200
        first.service.close()
    # the same replica (same content and index directories) starts while the host is down
    again = instances("a", url, pull_interval=600)
    assert again.app.test_client().get("/readyz").status_code == 503
    with git_daemon(bare.parent, port=port):
        deadline = time.monotonic() + 20
        while again.app.test_client().get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, _status(again)
            time.sleep(0.2)
        took = time.monotonic() - (deadline - 20)
    assert took < 15  # the first retries come after 1, 2, 4... seconds, not after 600
    assert again.admin.get("/events?start_date=2000-01-01").get_json()["events"][0]["title"] == "Before the restart"

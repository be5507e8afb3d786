"""The interactive documentation page: served from the installed swagger-ui-bundle, and rendered by
a real headless Chromium against a real server, showing the operations of our /doc.

Chromium is required (``.ci/run`` installs it); only ``CALENDAR_SKIP_BROWSER=1`` skips the render.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest
from werkzeug.serving import make_server

from conftest import API

UI = f"{API}/doc/ui"


def test_page_points_at_doc_and_loads_everything_from_this_server(app):
    client = app.test_client()
    r = client.get(UI)
    assert r.status_code == 200 and r.mimetype == "text/html"
    html = r.get_data(as_text=True)
    assert f'data-url="{API}/doc"' in html
    assert "http" not in html.replace('name="viewport"', "")  # no CDN, no absolute URL
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "init.js"):
        assert client.get(f"{UI}/{asset}").status_code == 200, asset
    assert "validatorUrl: null" in client.get(f"{UI}/init.js").get_data(as_text=True)


def test_page_follows_the_language(app):
    client = app.test_client()
    html = client.get(f"/it{UI}").get_data(as_text=True)
    assert '<html lang="it">' in html and f'data-url="/it{API}/doc"' in html
    html = client.get(f"{UI}?i18n_language=pl").get_data(as_text=True)
    assert '<html lang="pl">' in html and f'data-url="{API}/doc?i18n_language=pl"' in html


def test_only_swagger_ui_files_are_served(app):
    client = app.test_client()
    for name in ("index.html", "..%2f__init__.py", "swagger-initializer.js", "nothing.js"):
        r = client.get(f"{UI}/{name}")
        assert r.status_code == 404 and r.get_json()["code"] == "rest_no_route", name
    assert client.post(UI).status_code == 404


@pytest.fixture
def live_server(app):
    """The app behind a real HTTP server on a free port, in a thread."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


def render(url: str, profile) -> str:
    """The DOM of ``url`` after headless Chromium ran its scripts."""
    if os.environ.get("CALENDAR_SKIP_BROWSER") == "1":
        pytest.skip("CALENDAR_SKIP_BROWSER=1")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed (apt-get install chromium; .ci/run does it)"
    result = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_swagger_ui_renders_our_operations_in_chromium(live_server, tmp_path):
    dom = render(live_server + UI, tmp_path / "profile")
    assert 'class="swagger-ui' in dom
    assert 'data-path="/events"' in dom and 'data-path="/events/{id}"' in dom
    assert "List events" in dom and "The Events Calendar REST API" in dom
    assert "errors-wrapper" not in dom  # Swagger UI found nothing wrong with the document
    dom = render(f"{live_server}/it{UI}", tmp_path / "profile")
    assert "Elenca gli eventi" in dom and 'data-path="/venues/by-slug/{slug}"' in dom

#!/usr/bin/env bash
# Install what the tests need on a fresh machine, then run the whole suite (extra arguments go to pytest).
# The README's test command and CI (.ci/run) both run exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
# tests/test_doc_ui.py renders /doc/ui in headless Chromium (a Debian package, not on a fresh machine)
if ! command -v chromium >/dev/null 2>&1 && [ "${CALENDAR_SKIP_BROWSER:-}" != "1" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium
fi
exec python3 -m pytest -q "$@"

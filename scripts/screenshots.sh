#!/usr/bin/env bash
# Takes the web UI's pictures for the README into docs/screenshots/ (cluster.png, apps.png,
# running-app.png, finished-app.png) with headless Chromium (/usr/bin/chromium; see
# scripts/test-deps.sh): a node, an application with two executors whose revive timer is
# killed on purpose, its page while it runs and after it ended.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/chromium ]; then
    echo "screenshots.sh: /usr/bin/chromium is missing: install it with scripts/test-deps.sh" >&2
    exit 1
fi
cargo test --locked --test web_ui -- --ignored --exact screenshots
ls -l docs/screenshots/

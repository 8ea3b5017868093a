#!/usr/bin/env bash
# Installs the tools the test suite needs beyond cargo; idempotent (each step is skipped when
# its tool is already there), so the test command (README.md, .ci/run) runs it before every test run.
#  - chromium (Debian's package) for the web UI's browser tests, when running as root;
#  - a Python venv at target/test-venv with yarn-api-client, the REST API's reference client
#    (tests/rest_api.rs runs tests/python/yarn_api_client_check.py with it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the REST API test checks what this version calls and reads.
YARN_API_CLIENT_VERSION=1.0.3
VENV=target/test-venv

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "test-deps: installing chromium" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "test-deps: /usr/bin/chromium is missing and this is not root: install Debian's chromium package" >&2
    fi
fi

if ! "$VENV/bin/python" -c "import yarn_api_client, sys; sys.exit(0 if yarn_api_client.__version__ == '$YARN_API_CLIENT_VERSION' else 1)" 2>/dev/null; then
    echo "test-deps: creating $VENV with yarn-api-client $YARN_API_CLIENT_VERSION" >&2
    mkdir -p target
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "yarn-api-client==$YARN_API_CLIENT_VERSION"
fi

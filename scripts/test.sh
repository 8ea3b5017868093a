#!/usr/bin/env bash
# The project's test command (what CI runs): installs the test tools, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
cargo test --locked "$@"

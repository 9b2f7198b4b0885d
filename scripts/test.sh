#!/usr/bin/env bash
# Install everything the test-suite needs on a fresh Debian machine, then run all of it.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/bridge -x).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_debian_packages python3:python3 bwrap:bubblewrap node:nodejs npm:npm curl:curl
ensure_venv "[test]"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error >&2)
# The sandbox tests must fail, not skip, where bubblewrap does not work.
export REQUIRE_SANDBOX=1
exec .venv/bin/python -m pytest "$@"

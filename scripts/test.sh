#!/usr/bin/env bash
# Install everything the test-suite needs on a fresh Debian machine, then run all of it.
# Extra arguments go to pytest (e.g. scripts/test.sh -n0 tests/host -x, one process, stop at the first failure).
set -euo pipefail
cd "$(dirname "$0")/.."
# Sandboxed children get a private /tmp and /run, so the fixture servers of a checkout there are
# hidden from them (by design: see "What a child is denied"). Test an identical copy instead.
case "$(pwd -P)/" in
  /tmp/* | /run/*)
    copy="$(mktemp -d /var/tmp/mcp-bridge-test-XXXXXX)"
    echo "scripts/test.sh: sandboxed children cannot see $(pwd -P); testing a copy in $copy" >&2
    tar --exclude=./.venv --exclude=./tests/node/node_modules -cf - . | tar -xf - -C "$copy"
    exec bash "$copy/scripts/test.sh" "$@"
    ;;
esac
source scripts/setup.sh
ensure_debian_packages python3:python3 bwrap:bubblewrap node:nodejs npm:npm curl:curl
ensure_venv "[test,docs]"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error >&2)
# The sandbox tests must fail, not skip, where bubblewrap does not work.
export REQUIRE_SANDBOX=1
exec .venv/bin/python -m pytest "$@"

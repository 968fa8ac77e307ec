#!/usr/bin/env bash
# The test suite: installs what is needed, then runs pytest (2 workers). Extra arguments go to
# pytest, e.g. `-m slow` for the long sweeps or `-k Conv` to select tests.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/toolchain/install.sh"
cd "$repo"
exec python3 -m pytest -n "${PYTEST_WORKERS:-2}" "$@"

#!/usr/bin/env bash
# The second command of the README, and what CI runs: installs what is needed, builds, and runs the
# whole test suite (unit tests and end-to-end tests of the binary). GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"

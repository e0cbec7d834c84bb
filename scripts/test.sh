#!/usr/bin/env bash
# The second command of the README, and what CI runs: installs what is needed, builds, and runs the
# whole test suite: unit and end-to-end tests of the binary, the same suite under ASan+UBSan, and a
# short smoke of every fuzzer. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/setup.sh
bash scripts/build.sh
(cd "${BUILD_DIR:-build}" && bash "$root/scripts/ctest-timed.sh" --output-on-failure -j "$(nproc)" "$@")
echo "== test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/sanitize.sh asan
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz smoke"
  bash scripts/fuzz.sh smoke
fi

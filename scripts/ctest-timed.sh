#!/usr/bin/env bash
# Runs ctest in the current directory with the given arguments, keeps its output in Testing/ctest-output.log,
# and prints the ten slowest tests at the end whatever the outcome; exits with ctest's code.
#   (cd build && bash ../scripts/ctest-timed.sh --output-on-failure -j 2)
set -uo pipefail
log=Testing/ctest-output.log
mkdir -p Testing
start=$(date +%s)
ctest "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "== ten slowest tests (seconds), suite wall time $(( $(date +%s) - start )) s"
# CTest's result lines: " 7/34 Test  #7: e2e_injection ....   Passed  170.58 sec"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" | sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' \
  | sort -rn | head -10 | awk '{printf "  %8.1f  %s\n", $1, $2}'
exit "$rc"

#!/usr/bin/env bash
# Fuzzes the parsers of pattern files and option values with libFuzzer (fuzz/, built with clang into
# build-fuzz/). Installs nothing: needs clang and its runtime libraries (Debian/Ubuntu: clang,
# libclang-rt-dev or libclang-rt-NN-dev; `scripts/setup.sh --fuzz` installs them), plus the project's usual
# libraries (fmt, nlohmann-json, xxhash).
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   each harness (default: all) for SECONDS (default 600), one
#                                            after another; exits 1 if any of them found something
#   scripts/fuzz.sh smoke                    the CTest smoke: each harness ~20 s over its corpus and
#                                            fuzz/regressions/<harness>/ (fails while a regression input
#                                            still crashes)
#
# Environment: FUZZ_CC / FUZZ_CXX (default clang / clang++), BUILD_DIR (default build-fuzz),
# FUZZ_TIMEOUT (seconds one input may take before it counts as a hang, default 10),
# FUZZ_RSS_MB (memory limit, default 2048).
#
# The work corpus is build-fuzz/corpus-work/<harness> (seeded from fuzz/corpus/<harness>, kept between
# runs); each run's logs and findings (crash-*, leak-*, timeout-*, oom-*) are under
# build-fuzz/runs/<date-time>/. A finding worth keeping goes to fuzz/regressions/<harness>/.
set -euo pipefail
cd "$(dirname "$0")/.."

HARNESSES_ALL=(fuzz_battery fuzz_golden fuzz_manifest fuzz_inject fuzz_cpuset fuzz_duration fuzz_recording)
build_dir=${BUILD_DIR:-build-fuzz}
cc=${FUZZ_CC:-clang}
cxx=${FUZZ_CXX:-clang++}

die() { echo "fuzz.sh: $*" >&2; exit 2; }

if ! command -v "$cxx" >/dev/null 2>&1 || ! command -v "$cc" >/dev/null 2>&1; then
  die "clang is not installed ('$cxx' not found); install clang and libclang-rt-dev (scripts/setup.sh --fuzz) or set FUZZ_CC/FUZZ_CXX"
fi
command -v cmake >/dev/null 2>&1 || die "cmake is not installed"

build() {
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    CC="$cc" CXX="$cxx" cmake -S fuzz -B "$build_dir" || die "configuring $build_dir failed"
  fi
  cmake --build "$build_dir" -j "$(nproc)" || die "building $build_dir failed (is libclang-rt-dev installed?)"
}

if [[ "${1:-}" == "smoke" ]]; then
  shift
  build
  # Re-configure so that the tests see regression directories created since the last configure.
  cmake "$build_dir" >/dev/null
  # The harnesses run side by side, one per core: each stops at its time or run limit.
  exec ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -L fuzz "$@"
fi

seconds=${1:-600}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || die "usage: scripts/fuzz.sh [SECONDS] [HARNESS...] | scripts/fuzz.sh smoke"
shift || true
harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=("${HARNESSES_ALL[@]}")
for h in "${harnesses[@]}"; do
  [[ " ${HARNESSES_ALL[*]} " == *" $h "* ]] || die "unknown harness '$h' (${HARNESSES_ALL[*]})"
done

build

root=$(pwd)
run_dir="$root/$build_dir/runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$run_dir"
summary=()
status=0
for h in "${harnesses[@]}"; do
  corpus="$root/$build_dir/corpus-work/$h"
  artifacts="$run_dir/$h"
  log="$run_dir/$h.log"
  mkdir -p "$corpus" "$artifacts"
  cp -n "fuzz/corpus/$h"/* "$corpus"/ 2>/dev/null || true
  args=(-max_total_time="$seconds" -print_final_stats=1 -timeout="${FUZZ_TIMEOUT:-10}"
        -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -artifact_prefix="$artifacts/")
  [[ -f "fuzz/$h.dict" ]] && args+=(-dict="$root/fuzz/$h.dict")
  echo "== $h: ${seconds}s, corpus $corpus, log $log"
  rc=0
  # The outer timeout only guards against a harness that libFuzzer itself cannot stop; SIGINT lets it
  # print its final stats.
  (cd "$artifacts" && timeout --signal=INT --kill-after=60 $((seconds + 300)) \
     "$root/$build_dir/$h" "${args[@]}" "$corpus") >"$log" 2>&1 || rc=$?
  execs=$(grep -a 'stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}')
  count() { find "$artifacts" -maxdepth 1 -name "$1-*" | wc -l; }
  crashes=$(count crash) leaks=$(count leak) timeouts=$(count timeout) ooms=$(count oom)
  line=$(printf '%-14s executions %-10s crashes %s  leaks %s  timeouts %s  ooms %s  exit %s' \
         "$h" "${execs:-?}" "$crashes" "$leaks" "$timeouts" "$ooms" "$rc")
  echo "$line"
  summary+=("$line")
  if (( crashes + leaks + timeouts + ooms > 0 || rc != 0 )); then
    status=1
    grep -a -m3 -E 'ERROR:|runtime error|FUZZ INVARIANT|what\(\)' "$log" | sed 's/^/    /' || true
    find "$artifacts" -maxdepth 1 -type f -name '*-*' | sed 's/^/    finding: /'
  fi
done

echo
echo "== summary (${seconds}s per harness; logs and findings in $run_dir)"
printf '%s\n' "${summary[@]}"
exit "$status"

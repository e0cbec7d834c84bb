#!/usr/bin/env bash
# The second command of the README, and what CI runs: installs what is needed, builds, and runs the
# whole test suite: unit and end-to-end tests of the binary, the same suite under ASan+UBSan (both with every
# fuzz harness over its corpus and regressions), and with SDC_FUZZ_SMOKE=1 a short libFuzzer run of every
# harness. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/setup.sh
# The test build has a tree of its own (build-test/, or $BUILD_DIR), its device code compiled for sm_80 and sm_90
# only: every source path of the device code compiles there (the code under __CUDA_ARCH__ >= 890 and the code
# below it; sm_89 runs the same source as sm_90), and nvcc's time grows with each architecture (about a third of
# the device code's for each). The first command's build/, the bundle and the package keep every architecture
# the project ships (CMakeLists.txt: 80, 89, 90 and sm_90's PTX).
export BUILD_DIR=${BUILD_DIR:-build-test}
bash scripts/build.sh "-DCMAKE_CUDA_ARCHITECTURES=80-real;90-real"
# The sanitizer suite's build runs beside the release suite, at the idle scheduling class: it takes the time the
# tests leave idle (they wait on signals, deadlines, daemons and each other: about a fifth of two cores), never a
# test's own, though the tests run slower beside it (the two CPUs share caches and memory bandwidth, and the suites
# size their budgets from what they measure). Begun beside the release build instead, it slowed that build more
# than it gained: 1577 s for the whole command against 1421 s. Its output goes to a log, shown if it fails; it is
# stopped if this script ends first.
mkdir -p build-asan
asan_log=build-asan/build-output.log
idle=()
if command -v chrt > /dev/null && chrt --idle 0 true 2> /dev/null; then idle=(chrt --idle 0); else idle=(nice -n 19); fi
setsid -w "${idle[@]}" bash scripts/sanitize.sh asan --build-only > "$asan_log" 2>&1 &
asan_build=$!
trap 'kill -- -"$asan_build" 2> /dev/null || kill "$asan_build" 2> /dev/null || true' EXIT
(cd "$BUILD_DIR" && bash "$root/scripts/ctest-timed.sh" --output-on-failure -j "$(nproc)" "$@")
echo "== test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
start=$(date +%s)
if ! wait "$asan_build"; then
  tail -n 60 "$asan_log"
  echo "test: the sanitizer build failed (its whole output: $asan_log)" >&2
  exit 1
fi
trap - EXIT
echo "(its build, begun beside the release suite, ended $(( $(date +%s) - start )) s after the release suite)"
bash scripts/sanitize.sh asan
# The fuzz harnesses' corpus and regression inputs run in both suites above (fuzz_replay_*, under ASan+UBSan in
# the second). Fuzzing for new inputs needs a third build, with clang's libFuzzer: about 10 minutes on 2 cores,
# a third of the budget this command keeps (30 minutes), so it runs when asked: SDC_FUZZ_SMOKE=1, or
# scripts/fuzz.sh [SECONDS] for a real run.
if [ "${SDC_FUZZ_SMOKE:-0}" = 1 ]; then
  echo "== fuzz smoke"
  bash scripts/setup.sh --fuzz
  bash scripts/fuzz.sh smoke
else
  echo "== fuzz smoke not run (SDC_FUZZ_SMOKE=1 runs it); the corpus and regressions ran in both suites"
fi

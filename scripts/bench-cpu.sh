#!/usr/bin/env bash
# The CPU benchmark: the exact gemm_f32 reference, single thread, against OpenBLAS sgemm single thread
# on the same shapes in the same process. Prints medians and ratios; exits 1 below 0.7x.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh > /dev/null
exec ./build/bench_cpu_gemm "$@"

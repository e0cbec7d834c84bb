#!/usr/bin/env bash
# The CPU benchmarks, each in one process against OpenBLAS single-threaded: the exact gemm_f32 and gemm_f64
# references against sgemm and dgemm on the same shapes (exits 1 below 0.7x), then the training-step replay's step against the
# same step with sgemm matmuls (exits 2 when the two disagree on the loss). Prints medians and ratios.
# Arguments go to bench_cpu_gemm.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh > /dev/null
status=0
./build/bench_cpu_gemm "$@" || status=$?
./build/bench_train_step || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
exit "$status"

#!/usr/bin/env bash
# Configures and builds sdcscreen, its tests and benchmarks into build/ (or $BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON "$@"
cmake --build "$build_dir" -j "$(nproc)"

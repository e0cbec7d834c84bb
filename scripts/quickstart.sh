#!/usr/bin/env bash
# The first command of the README: installs what is needed, builds, and runs the default screen
# (profile boot; on the GPUs when the build has CUDA and a GPU is usable, else on every CPU core).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh > build.log 2>&1 || { tail -n 50 build.log; echo "quickstart: build failed (build.log)" >&2; exit 1; }
exec ./build/sdcscreen run "$@"

#!/usr/bin/env bash
# Builds the sdcscreen Debian package: configures build/ (or $BUILD_DIR) if it is not configured yet, builds,
# runs `cpack -G DEB`, and prints the path of the .deb on stdout (everything else goes to stderr).
# Needs dpkg-dev (dpkg-shlibdeps computes Depends; build-essential pulls it in, scripts/setup.sh installs it).
#   bash scripts/package.sh                 -> build/sdcscreen_<version>_<arch>.deb
#   BUILD_DIR=/tmp/b bash scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >&2
fi
# A package is a release build: refuse sanitizer or debug trees.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt"; }
if [ -n "$(cache_value SDC_SANITIZE)" ]; then
  echo "package: $build_dir is a sanitizer build (SDC_SANITIZE=$(cache_value SDC_SANITIZE)); use another BUILD_DIR" >&2
  exit 1
fi
if [ "$(cache_value CMAKE_BUILD_TYPE)" != Release ]; then
  echo "package: warning: $build_dir is a $(cache_value CMAKE_BUILD_TYPE) build, not Release" >&2
fi
cmake -S . -B "$build_dir" >&2   # picks up new install rules (and scripts added since the last configure)
cmake --build "$build_dir" -j "$(nproc)" >&2   # cpack would build everything anyway, serially

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$build_dir" && cpack -G DEB --config CPackConfig.cmake) >"$log" 2>&1; then
  cat "$log" >&2
  echo "package: cpack failed" >&2
  exit 1
fi
cat "$log" >&2
deb=$(sed -n 's/^CPack: - package: \(.*\.deb\) generated\.$/\1/p' "$log" | tail -n 1)
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
  echo "package: cpack did not report a .deb" >&2
  exit 1
fi
echo "$deb"

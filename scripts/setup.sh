#!/usr/bin/env bash
# Installs what sdcscreen needs to build and test, from the distribution's packages.
# Debian 12, Ubuntu 22.04 and Ubuntu 24.04 use the same package names for everything below.
# Run as root, or with sudo available. Safe to run again.
#   scripts/setup.sh          what the build, the screen and the test suite need
#   scripts/setup.sh --fuzz   that and clang with its runtime libraries, for libFuzzer (scripts/fuzz.sh)
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3 python3-jsonschema
  libcli11-dev libfmt-dev catch2 nlohmann-json3-dev libxxhash-dev
  libopenblas-dev libbenchmark-dev
  util-linux prometheus-node-exporter slurm-wlm munge
  python3-yaml dpkg-dev
  prometheus  # promtool: tests/e2e/test_alert_rules.py checks deploy/prometheus/sdcscreen.rules.yml
)
# clang (about 270 MB installed) only where fuzzing is asked for: the test suite runs the fuzz harnesses over their
# corpus with the project's own compiler.
case "${1:-}" in
  --fuzz) packages+=(clang libclang-rt-dev) ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--fuzz]" >&2; exit 64 ;;
esac
# Headless Chromium, the real browser tests/e2e/test_html.py opens the HTML report in. Debian packages it as
# chromium; Ubuntu ships only a wrapper that installs a snap, which containers cannot run: there the test says
# SKIP.
if [ -r /etc/os-release ] && . /etc/os-release && [ "${ID:-}" = debian ]; then packages+=(chromium); fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "setup: must run as root or with sudo to install packages" >&2; exit 1; fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

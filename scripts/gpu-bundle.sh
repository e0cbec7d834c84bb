#!/usr/bin/env bash
# Builds the GPU bundle: one relocatable folder from which a bare GPU machine runs the GPU runbook
# (docs/gpu-validation/README.md). Such a machine has the NVIDIA driver, CUDA 13 under /usr/local/cuda and
# CMake, and nothing else: no package registry, no CLI11/fmt/Catch2/nlohmann-json/xxhash, Python's standard
# library only. The folder holds:
#   sdcscreen gpu_tests bench_gpu   the built binaries, as built (RUNPATH $ORIGIN/lib; each finds patterns/
#                                   beside itself, src/core/patterns_location.h)
#   lib/                            every shared library they need that such a machine lacks (found with ldd):
#                                   all but the C library, the NVIDIA driver and cuBLAS/cuBLASLt, which come
#                                   from the machine's driver and CUDA
#   patterns/                       battery, goldens, manifest
#   scripts/                        gpu-first-light.sh, gpu-validate.sh and what they call
#   docs/                           the runbook and the report schema
#   BUNDLE.txt, SHA256SUMS          what it is (version, git, build, the C library it needs) and every file's hash
#
#   bash scripts/gpu-bundle.sh [--build-dir DIR] [--out DIR] [--no-build]
#
# --build-dir: the CUDA build to take the binaries from (default build/, or $BUILD_DIR); it is configured and
#   its three targets are built unless --no-build. --out: the folder to write (default <build>/gpu-bundle;
#   replaced). Copy the folder to the GPU machine and follow docs/gpu-validation/README.md inside it.
# Exit: 0 written (its path on stdout), 1 the build or the bundle failed (no CUDA build, a library not found,
#   over 64 MiB), 64 a bad argument.
set -euo pipefail
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$repo" && abs "${BUILD_DIR:-build}")  # as scripts/build.sh: relative to the repository
out=""
do_build=1
limit_bytes=$((64 << 20))
die() { echo "gpu-bundle: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir|--out)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "gpu-bundle: $1 needs a directory" >&2; exit 64; }
      if [ "$1" = --build-dir ]; then build=$(abs "$2"); else out=$(abs "$2"); fi
      shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$1' (see --help)" >&2; exit 64 ;;
  esac
done
out=${out:-$build/gpu-bundle}
binaries=(sdcscreen gpu_tests bench_gpu)
cd "$repo"
# --out is replaced: only ever a bundle written before, never a tree that holds other things.
if [ -e "$out" ] && [ ! -f "$out/BUNDLE.txt" ]; then
  echo "gpu-bundle: $out exists and is not a bundle (no BUNDLE.txt): give a new folder" >&2; exit 64
fi

if [ $do_build = 1 ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >&2 || die "configure failed"
  cmake --build "$build" -j "$(nproc)" --target "${binaries[@]}" >&2 || die "build failed"
fi
[ -f "$build/CMakeCache.txt" ] || die "$build is not a build directory"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
[ -z "$(cache_value SDC_SANITIZE)" ] || die "$build is a sanitizer build; the bundle needs a release build"
[ "$(cache_value CMAKE_BUILD_TYPE)" = Release ] || die "$build is a $(cache_value CMAKE_BUILD_TYPE) build; the bundle needs a release build"
for b in "${binaries[@]}"; do
  [ -x "$build/$b" ] || die "no $build/$b: the bundle needs a build with the CUDA backend (nvcc and cuBLAS found)"
  readelf -d "$build/$b" | grep -q 'R.*PATH.*\$ORIGIN/lib' || die "$build/$b has no RUNPATH \$ORIGIN/lib (reconfigure the build)"
done

rm -rf "$out"
mkdir -p "$out/lib" "$out/scripts" "$out/docs/gpu-validation"
for b in "${binaries[@]}"; do cp "$build/$b" "$out/"; done
# The build's own patterns (its link to the source tree it was built from), so binaries and goldens match.
cp -RL "$build/patterns" "$out/patterns" || die "no $build/patterns (reconfigure the build)"
cp scripts/gpu-first-light.sh scripts/gpu-validate.sh scripts/gpu-drills.py "$out/scripts/"
[ -f scripts/gpu-merge-records.py ] && cp scripts/gpu-merge-records.py "$out/scripts/"
cp docs/gpu-validation/README.md "$out/docs/gpu-validation/"
cp docs/report.schema.json "$out/docs/"

# The libraries: what ldd resolves for the binaries, less what every GPU machine has: the C library and its
# loader, the NVIDIA driver (libcuda, libnvidia-*) and cuBLAS/cuBLASLt (the machine's CUDA, which sdcscreen
# and gpu-validate.sh find under /usr/local/cuda). Anything else unresolved is an error here, not there.
provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libcuda|libnvidia-[^ ]*|libcublas|libcublasLt)\.so'
bundled=()
while read -r name arrow path _; do
  [[ "$name" =~ $provided ]] && continue
  [ "$arrow" = "=>" ] || continue
  [ "$path" != "not" ] || die "ldd finds no $name for the binaries"
  cp -L "$path" "$out/lib/$name"
  bundled+=("$name")
done < <(for b in "${binaries[@]}"; do ldd "$build/$b"; done | sed 's/^[[:space:]]*//; s/ (0x[0-9a-f]*)$//' | sort -u)
[ ${#bundled[@]} -gt 0 ] || die "ldd listed no library to bundle (libfmt at least is expected)"

glibc=$(for f in "${binaries[@]/#/$out/}" "$out"/lib/*; do objdump -T "$f"; done 2>/dev/null |
        grep -o 'GLIBC_[0-9][0-9.]*' | sort -V -u | tail -n 1)
version=$("$out/sdcscreen" --version) || die "the bundled sdcscreen does not start"
{
  echo "sdcscreen GPU bundle"
  echo "version:       $version"
  echo "built:         $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p' | head -n 1)"
  echo "architectures: $(cat "$build/cuda-architectures.txt" 2>/dev/null || echo unknown)"
  echo "needs:         x86-64 Linux with ${glibc/_/ } or newer, the NVIDIA driver for CUDA 13, cuBLAS 13 (CUDA's lib64)"
  echo "bundled:       ${bundled[*]}"
  echo "start:         docs/gpu-validation/README.md (the runbook); ./sdcscreen info"
} >"$out/BUNDLE.txt"
(cd "$out" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

size=$(du -sb "$out" | cut -f1)
[ "$size" -le $limit_bytes ] || die "$out is $((size >> 20)) MiB, over the 64 MiB a bundle may take"
echo "gpu-bundle: $out ($((size >> 20)) MiB, $(wc -l <"$out/SHA256SUMS") files; ${glibc/_/ } or newer)" >&2
echo "$out"

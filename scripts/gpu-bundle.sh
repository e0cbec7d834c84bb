#!/usr/bin/env bash
# Builds the GPU bundle: one relocatable folder from which a bare GPU machine runs the GPU runbook
# (docs/gpu-validation/README.md). Such a machine has the NVIDIA driver, CUDA 13 under /usr/local/cuda and
# CMake, and nothing else: no package registry, no CLI11/fmt/Catch2/nlohmann-json/xxhash, Python's standard
# library only. The folder holds:
#   sdcscreen gpu_tests bench_gpu   the built binaries, as built (RUNPATH $ORIGIN/lib; each finds patterns/
#                                   beside itself, src/core/patterns_location.h); a build this script makes
#                                   is portable (SDC_PORTABLE_BINARIES: fmt compiled in, libstdc++ static),
#                                   so they need the C library at the lowest version this toolchain allows
#   lib/                            every shared library they need that such a machine lacks (found with ldd):
#                                   all but the C library, the NVIDIA driver and cuBLAS/cuBLASLt, which come
#                                   from the machine's driver and CUDA (loaded at run time, never linked), and
#                                   in a portable build libgcc_s, which CUDA's libraries need on every machine
#                                   (empty for a portable build; libfmt, libstdc++, libgcc_s otherwise)
#   patterns/                       battery, goldens, manifest
#   scripts/                        gpu-first-light.sh, gpu-validate.sh and what they call
#   docs/                           the runbook and the report schema
#   BUNDLE.txt, SHA256SUMS          what it is (version, git, build) and what it needs of the machine: the
#                                   highest glibc symbol version any of its files needs (objdump -T), file by
#                                   file with the symbols that need it; and every file's hash
#
#   bash scripts/gpu-bundle.sh [--build-dir DIR] [--out DIR] [--no-build]
#
# --build-dir: the CUDA build to take the binaries from (default build/, or $BUILD_DIR); unless --no-build it
#   is configured portable (-DSDC_PORTABLE_BINARIES=ON, which rebuilds it once) and its three targets are
#   built; with --no-build it is taken as it is, and BUNDLE.txt says what its binaries need. --out: the folder
#   to write (default <build>/gpu-bundle; replaced). Copy the folder to the GPU machine and follow
#   docs/gpu-validation/README.md inside it.
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
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
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
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DSDC_PORTABLE_BINARIES=ON >&2 ||
    die "configure failed"
  cmake --build "$build" -j "$(nproc)" --target "${binaries[@]}" >&2 || die "build failed"
fi
[ -f "$build/CMakeCache.txt" ] || die "$build is not a build directory"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
[ -z "$(cache_value SDC_SANITIZE)" ] || die "$build is a sanitizer build; the bundle needs a release build"
[ "$(cache_value CMAKE_BUILD_TYPE)" = Release ] || die "$build is a $(cache_value CMAKE_BUILD_TYPE) build; the bundle needs a release build"
portable=0
[ "$(cache_value SDC_PORTABLE_BINARIES)" = ON ] && portable=1
for b in "${binaries[@]}"; do
  [ -x "$build/$b" ] || die "no $build/$b: the bundle needs a build with the CUDA backend (nvcc and cuBLAS found)"
  readelf -d "$build/$b" | grep -q 'R.*PATH.*\$ORIGIN/lib' || die "$build/$b has no RUNPATH \$ORIGIN/lib (reconfigure the build)"
done

rm -rf "$out"
mkdir -p "$out/lib" "$out/scripts" "$out/docs/gpu-validation"
for b in "${binaries[@]}"; do cp "$build/$b" "$out/"; done
# The build's own patterns (its link to the source tree it was built from), so binaries and goldens match.
cp -RL "$build/patterns" "$out/patterns" || die "no $build/patterns (reconfigure the build)"
cp scripts/gpu-first-light.sh scripts/gpu-first-light-lib.sh scripts/gpu-validate.sh scripts/gpu-drills.py "$out/scripts/"
[ -f scripts/gpu-merge-records.py ] && cp scripts/gpu-merge-records.py "$out/scripts/"
cp docs/gpu-validation/README.md "$out/docs/gpu-validation/"
cp docs/report.schema.json "$out/docs/"

# The libraries: what ldd resolves for the binaries, less what every GPU machine has: the C library and its
# loader, the NVIDIA driver (libcuda, libnvidia-*) and cuBLAS/cuBLASLt (the machine's CUDA, which sdcscreen
# and gpu-validate.sh find under /usr/local/cuda). Anything else unresolved is an error here, not there.
# libgcc_s is the machine's too in a portable build (CUDA's own libraries need it); otherwise it goes with the
# bundled libstdc++, which may need a newer one.
provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libcuda|libnvidia-[^ ]*|libcublas|libcublasLt)\.so'
[ $portable = 1 ] && provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libgcc_s|libcuda|libnvidia-[^ ]*|libcublas|libcublasLt)\.so'
bundled=()
while read -r name arrow path _; do
  [[ "$name" =~ $provided ]] && continue
  [ "$arrow" = "=>" ] || continue
  [ "$path" != "not" ] || die "ldd finds no $name for the binaries"
  cp -L "$path" "$out/lib/$name"
  bundled+=("$name")
done < <(for b in "${binaries[@]}"; do ldd "$build/$b"; done | sed 's/^[[:space:]]*//; s/ (0x[0-9a-f]*)$//' | sort -u)
[ $portable = 1 ] || [ ${#bundled[@]} -gt 0 ] || die "ldd listed no library to bundle (libfmt at least is expected)"

# The C library each file needs: the highest GLIBC_ version among the symbols it takes from it, and those
# symbols; the bundle needs the highest of all. A machine with an older glibc refuses to start the file.
glibc_needs() {  # FILE -> "GLIBC_x.y symbol ... (and N more)" (nothing when it needs no versioned symbol)
  objdump -T "$1" 2>/dev/null |
    awk '/\*UND\*/ { for (i = 1; i <= NF; ++i) if ($i ~ /^\(GLIBC_[0-9.]+\)$/) print substr($i, 2, length($i) - 2), $NF }' |
    sort -V -u | awk '{ v[NR] = $1; s[NR] = $2 } END { if (!NR) exit; top = v[NR]; line = top; n = 0;
                        for (i = 1; i <= NR; ++i) if (v[i] == top && ++n <= 6) line = line " " s[i];
                        if (n > 6) line = line " (and " n - 6 " more)"; print line }'
}
per_file=""
for f in "${binaries[@]/#/$out/}" "$out"/lib/*; do
  [ -f "$f" ] || continue
  need=$(glibc_needs "$f")
  [ -n "$need" ] || continue
  per_file+=$(printf '  %-22s %s' "${f#"$out"/}" "$need")$'\n'
done
glibc=$(printf '%s' "$per_file" | awk '{ print $2 }' | sort -V | tail -n 1)
[ -n "$glibc" ] || die "objdump -T found no glibc symbol version in the bundle's files (is binutils installed?)"
version=$("$out/sdcscreen" --version) || die "the bundled sdcscreen does not start"
{
  echo "sdcscreen GPU bundle"
  echo "version:       $version"
  echo "built:         $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p' | head -n 1)"
  echo "architectures: $(cat "$build/cuda-architectures.txt" 2>/dev/null || echo unknown)"
  echo "needs:         x86-64 Linux with ${glibc/_/ } or newer, the NVIDIA driver for CUDA 13, cuBLAS 13 (CUDA's lib64)"
  echo "glibc:         ${glibc#GLIBC_} (the highest glibc symbol version the bundle's files need; file by file below)"
  if [ $portable = 1 ]; then
    echo "c++ runtime:   linked in (portable build: fmt compiled in, libstdc++ static); libgcc_s.so.1 from the machine"
    gcc_s="libgcc_s.so.1, "
  else
    echo "c++ runtime:   bundled in lib/ (not a portable build: libstdc++ and libgcc_s of the build machine)"
    gcc_s=""
  fi
  echo "expects:       on the machine: glibc ${glibc#GLIBC_} or newer, ${gcc_s}the NVIDIA driver (libcuda.so.1),"
  echo "               libcublasLt.so.13 and libcublas.so.13, loaded at run time from the loader's path, the build's"
  echo "               CUDA library directory or /usr/local/cuda/lib64 (sdcscreen info says which file it loaded)"
  echo "bundled:       ${bundled[*]:-nothing: the binaries need no library the machine lacks}"
  echo "start:         docs/gpu-validation/README.md (the runbook); ./sdcscreen info"
  echo "glibc needed per file (its highest GLIBC_ symbol version, and the symbols that need it):"
  printf '%s' "$per_file"
} >"$out/BUNDLE.txt"
(cd "$out" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

size=$(du -sb "$out" | cut -f1)
[ "$size" -le $limit_bytes ] || die "$out is $((size >> 20)) MiB, over the 64 MiB a bundle may take"
echo "gpu-bundle: $out ($((size >> 20)) MiB, $(wc -l <"$out/SHA256SUMS") files; ${glibc/_/ } or newer)" >&2
echo "$out"

#!/usr/bin/env bash
# GPU first light: one call, from the GPU bundle (scripts/gpu-bundle.sh), on a GPU machine that has the NVIDIA
# driver and CUDA but none of the build's dependencies. The steps run in priority order under one global
# deadline; each has its own cap (never past the deadline), appends its result line to OUTDIR/summary.txt the
# moment it ends, and its files go into OUTDIR/results.tgz, refreshed after every step and on a trapped signal:
# those two files are all that comes back. scripts/gpu-first-light-record.py turns them into the dated record
# under docs/gpu-validation/ (docs/gpu-validation/README.md).
#
#   bash scripts/gpu-first-light.sh OUTDIR [--deadline S] [--steps LIST] [--device I] [--build-dir DIR]
#
# Steps (LIST: numbers or names, comma-separated; default all; a rerun into the same OUTDIR appends to
# summary.txt and replaces those steps' files in results.tgz):
#   0 env        glibc (the machine's, and the highest version the binaries need), what ldd finds missing,
#                nvidia-smi, sha256sum -c SHA256SUMS, sdcscreen info (driver, the cuBLASLt file it loads),
#                NVML's readings (info) against nvidia-smi -q: serial, VBIOS, driver, ECC mode, PCIe generation
#                and width (nvidia-smi-q.txt), the case listing. No usable GPU: one line and stop (exit 2).
#   1 smoke      four small boot cases, each with its JSON report: gemm_f32 (exact fp32), bf16 exact-integer
#                mma.sync, fp8 exact-integer mma.sync and its cuBLASLt twin.
#   2 boot       the boot profile once: JSON report and wall time, CUDA start-up included (target 45 s).
#   3 gpu_tests  every exact and exact-integer case against its golden, gemm_f64's forms against the fma chain,
#                the cuBLASLt algorithm sweep, the GPU executor tests.
#   4 hang       the hang drill: exit 2 by the watchdog, the time it took, no process left on the GPU.
#   5 sass       cuobjdump: which tensor-core instructions the exact-integer kernels use on this GPU's
#                architecture.
#   6 sanitizer  compute-sanitizer memcheck and racecheck over eight small boot cases of the project's kernels,
#                and over gemm_f64's kernel in every form at ragged shapes (gpu_tests --gemm-f64-forms); skipped
#                when under 90 s remain; the device refused to it is recorded, not fatal.
#   7 drills     8 output drills (2 of them warp-aligned multi-bit clusters), 4 replay drills (the fp32, bf16,
#                tensor-parallel and recorded tensor-core replays) and 2 memory drills (scripts/gpu-drills.py):
#                detected and localized (on the emulated device 4, 1 and 1).
#   8 bench      when 40 s remain: bench_gpu on one shape (gemm_f32 against cuBLAS SGEMM without TF32, gemm_f64
#                against cuBLAS DGEMM and each form of its kernel (blocks, slabs, on sm_90 m16n8k8/k16) with its bits,
#                verified bf16 against bare cuBLASLt, the digest's share), at most 60 s.
#
# summary.txt: '#' lines (the run's start, its end and exit code) and one line per step:
#   N NAME STATUS SECONDS DETAIL
# STATUS: pass (every check ran and passed), FAIL (a check failed; DETAIL says which), incomplete (nothing
# failed, but part of the step could not run: a tool not available), n/a (the step could not run at all here:
# the tool or a real GPU is not available), not-run (the deadline, no GPU, a signal, or the 90 s rule).
# Only pass is a pass. Files: results.tgz holds N-NAME/ per step, and a copy of summary.txt.
#
# --deadline S: the global deadline in seconds from the start (default 450; 15 to 3600). Call it under an
#   outer limit about 90 s longer. --device I: the GPU the steps use (default 0). --build-dir DIR: binaries
#   (sdcscreen, gpu_tests, bench_gpu) and patterns/ from DIR instead of the bundle this script lies in.
#   Libraries: the bundle's lib/, then CUDA's (${CUDA_HOME:-/usr/local/cuda}/lib64). Tools (nvidia-smi,
#   cuobjdump, compute-sanitizer): PATH, then ${CUDA_HOME:-/usr/local/cuda}/bin.
# --emulated SPEC (tests only): the screen runs on GPUs emulated on the CPU (--backend emulated:SPEC); the
#   steps that need a real GPU (gpu_tests, sanitizer, bench, the GPU's process list, cuBLASLt) say n/a or not
#   available; the boot profile runs its first 10 s; every line says "emulated".
#
# Exit: 0 every step asked for ran and passed; 1 a step failed (or sdcscreen does not start); 2 no usable GPU;
#   3 nothing failed, but a step was n/a, incomplete or skipped; 4 nothing failed, but the deadline left a step
#   not run; 64 a bad argument; 73 OUTDIR or its files cannot be written; 128+N interrupted by signal N (the
#   step running is a FAIL line, the archive is written).
set -uo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
NAMES=(env smoke boot gpu_tests hang sass sanitizer drills bench)
CAPS=(60 100 120 210 60 45 150 150 60)      # each step's cap in seconds (the deadline cuts them shorter)
MIN_LEFT=(10 10 10 10 15 10 90 15 40)       # a step starts only with this many seconds left
RESERVE=5                                   # kept for the last archive and the end line

usage_err() { echo "gpu-first-light: $* (see --help)" >&2; exit 64; }
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

OUTDIR=""
DEADLINE=450
STEPS_ARG=""
DEVICE=0
BUILD=""
EMULATED=""
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --deadline|--steps|--device|--build-dir|--emulated)
      if [ $# -lt 2 ] || [ -z "$2" ] || [ "${2#--}" != "$2" ]; then usage_err "$1 needs a value"; fi
      case "$1" in
        --deadline) DEADLINE=$2 ;;
        --steps) STEPS_ARG=$2 ;;
        --device) DEVICE=$2 ;;
        --build-dir) BUILD=$2 ;;
        --emulated) EMULATED=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$SELF"; exit 0 ;;
    -*) usage_err "unknown option '$1'" ;;
    *) [ -z "$OUTDIR" ] || usage_err "one OUTDIR only ('$OUTDIR', then '$1')"; OUTDIR=$1; shift ;;
  esac
done
[ -n "$OUTDIR" ] || usage_err "OUTDIR is missing"
[[ $DEADLINE =~ ^[1-9][0-9]{0,3}$ ]] && [ "$DEADLINE" -ge 15 ] && [ "$DEADLINE" -le 3600 ] ||
  usage_err "--deadline '$DEADLINE': want whole seconds from 15 to 3600"
[[ $DEVICE =~ ^[0-9]{1,3}$ ]] || usage_err "--device '$DEVICE': want a GPU index"
[ -z "$EMULATED" ] || [[ $EMULATED =~ ^[A-Za-z0-9_:,=/]+$ ]] || usage_err "--emulated '$EMULATED': not a device spec"
SELECTED=()  # step numbers, in order
if [ -n "$STEPS_ARG" ]; then
  declare -A want_step=()
  for s in ${STEPS_ARG//,/ }; do
    n=""
    for i in "${!NAMES[@]}"; do [ "$s" = "$i" ] || [ "$s" = "${NAMES[$i]}" ] && n=$i; done
    [ -n "$n" ] || usage_err "unknown step '$s' in --steps (steps: 0-8 or $(IFS=,; echo "${NAMES[*]}"))"
    want_step[$n]=1
  done
  for i in "${!NAMES[@]}"; do [ -n "${want_step[$i]:-}" ] && SELECTED+=("$i"); done
  [ ${#SELECTED[@]} -gt 0 ] || usage_err "--steps names no step"
else
  SELECTED=(0 1 2 3 4 5 6 7 8)
fi
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)
if [ -n "$BUILD" ]; then
  BUILD=$(abs "$BUILD")
  [ -d "$BUILD" ] || usage_err "--build-dir '$BUILD': no such directory"
else
  BUILD=$ROOT
fi
OUTDIR=$(abs "$OUTDIR")
mkdir -p "$OUTDIR" 2>/dev/null && [ -w "$OUTDIR" ] || { echo "gpu-first-light: cannot write to $OUTDIR" >&2; exit 73; }
SUMMARY=$OUTDIR/summary.txt
ARCHIVE=$OUTDIR/results.tgz

T0=$(date +%s)
T_END=$((T0 + DEADLINE))
BIN=$BUILD/sdcscreen
PATTERNS=$ROOT/patterns
[ -d "$BUILD/patterns" ] && PATTERNS=$BUILD/patterns
CUDA_DIR=${CUDA_HOME:-/usr/local/cuda}
LIBS=""
for d in "$BUILD/lib" "$CUDA_DIR/lib64" "$CUDA_DIR/targets/$(uname -m)-linux/lib"; do
  [ -d "$d" ] && LIBS="$LIBS${LIBS:+:}$d"
done
[ -n "$LIBS" ] && export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SDCSCREEN_HISTORY=none  # validation screens are no node's health history
export SDCSCREEN_PATTERNS=$PATTERNS  # for info, which takes no --patterns
BACKEND=cuda
[ -n "$EMULATED" ] && BACKEND="emulated:$EMULATED"
EMU_NOTE=""
[ -n "$EMULATED" ] && EMU_NOTE=" [emulated device $EMULATED]"

tool() {  # tool NAME: its path (PATH, then CUDA's bin), or nothing
  command -v "$1" 2>/dev/null || { [ -x "$CUDA_DIR/bin/$1" ] && echo "$CUDA_DIR/bin/$1"; }
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sdcscreen-first-light.XXXXXX") || { echo "gpu-first-light: no temporary folder" >&2; exit 73; }
# A rerun into the same OUTDIR keeps the earlier steps' files: the archive is unpacked first.
if [ -f "$ARCHIVE" ]; then
  tar -xzf "$ARCHIVE" -C "$WORK" 2>/dev/null || echo "gpu-first-light: $ARCHIVE does not unpack; it is replaced" >&2
fi

# The summary and the archive, the steps' bookkeeping, capped commands and the functions over the reports lie
# beside this script (in the bundle too: scripts/gpu-bundle.sh copies both).
LIB="$(dirname "$SELF")/gpu-first-light-lib.sh"
[ -f "$LIB" ] || { echo "gpu-first-light: $LIB is missing (it ships beside this script)" >&2; exit 1; }
# shellcheck source=gpu-first-light-lib.sh source-path=SCRIPTDIR
. "$LIB"

# ---- 0. environment -----------------------------------------------------------------------------------------
# NVML as sdcscreen reads it (info's "nvml gpu: cuda:N" line) against nvidia-smi -q for the same GPU: serial,
# VBIOS, driver, ECC mode, PCIe link generation and width. One ok line for what matches, a FAIL for what differs,
# not available for what either side could not read (an emulated device, no nvidia-smi, NVML not loaded).
nvml_compare() {  # nvml_compare DIR NVIDIA-SMI INFO-TEXT
  local d=$1 smi=$2 info=$3 line q name ours theirs same="" diff="" na=""
  if [ -n "$EMULATED" ]; then part "NVML vs nvidia-smi -q (an emulated device has no NVML)"; return; fi
  line=$(printf '%s\n' "$info" | grep "^nvml gpu: *cuda:$DEVICE " | head -n 1)
  if [ -z "$line" ] || [ "${line#*not found}" != "$line" ]; then
    part "NVML vs nvidia-smi -q: $(printf '%s\n' "$info" | grep -m1 -E '^nvml( gpu)?:' | cut -c1-160)"
    return
  fi
  if [ -z "$smi" ]; then part "NVML vs nvidia-smi -q (no nvidia-smi)"; return; fi
  q=$d/nvidia-smi-q.txt
  run_capped "$q" "$smi" -q -i "$DEVICE"
  # nvidia-smi -q: "Key : value" lines; ECC Mode and the PCIe link's Current are nested under their headers.
  smi_key() { grep -m1 "^ *$1 *:" "$q" | sed 's/^[^:]*: *//; s/ *$//'; }
  smi_under() { awk -v h="$1" '$0 ~ "^ *" h " *$" {f=1; next} f && /^ *Current *:/ {sub(/^[^:]*: */, ""); print; exit}' "$q"; }
  ours_of() { printf '%s\n' "$line" | sed -n "s/.*  $1 \([^ ]*\).*/\1/p"; }
  for name in serial vbios driver ecc pcie_gen pcie_width; do
    case $name in
      serial) ours=$(ours_of serial); theirs=$(smi_key "Serial Number") ;;
      vbios) ours=$(ours_of vbios); theirs=$(smi_key "VBIOS Version") ;;
      driver) ours=$(ours_of driver); theirs=$(smi_key "Driver Version") ;;
      ecc) ours=$(ours_of ecc)
           case $(smi_under "ECC Mode") in Enabled) theirs=on ;; Disabled) theirs=off ;; *) theirs="" ;; esac ;;
      pcie_gen) ours=$(printf '%s\n' "$line" | sed -n 's/.*  pcie gen \([^ ]*\) .*/\1/p'); theirs=$(smi_under "PCIe Generation") ;;
      pcie_width) ours=$(printf '%s\n' "$line" | sed -n 's/.*  pcie gen [^ ]* x\([^ ]*\).*/\1/p')
                  theirs=$(smi_under "Link Width"); theirs=${theirs%x} ;;
    esac
    if [ -z "$ours" ] || [ "$ours" = n/a ] || [ -z "$theirs" ] || [ "$theirs" = N/A ]; then na="$na $name"
    elif [ "$ours" = "$theirs" ]; then same="$same $name"
    else diff="$diff $name(NVML '$ours', nvidia-smi '$theirs')"; fi
  done
  [ -n "$same" ] && ok "NVML matches nvidia-smi -q:$same"
  [ -n "$diff" ] && bad "NVML differs from nvidia-smi -q:$diff"
  [ -n "$na" ] && part "NVML vs nvidia-smi -q:$na"
  return 0
}

step0() {
  step_begin 0
  local d=$CUR_DIR need have missing smi info rc gpu lt
  [ -f "$ROOT/BUNDLE.txt" ] && cp "$ROOT/BUNDLE.txt" "$d/BUNDLE.txt"
  "$BIN" --version >"$d/version.txt" 2>&1
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  need=$(grep -aoh 'GLIBC_[0-9][0-9.]*[0-9]' "$BIN" "$BUILD/gpu_tests" "$BUILD/bench_gpu" "$BUILD"/lib/*.so* 2>/dev/null |
         sed 's/GLIBC_//' | sort -V -u | tail -n 1)
  if [ -z "$have" ] || [ -z "$need" ]; then part "glibc version (machine: ${have:-unknown}, binaries need: ${need:-unknown})"
  elif [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -n 1)" = "$have" ]; then ok "glibc $have (binaries need $need)"
  else bad "glibc $have, the binaries need $need"; fi
  missing=""
  for b in sdcscreen gpu_tests bench_gpu; do
    if [ ! -f "$BUILD/$b" ] && [ -n "$EMULATED" ] && [ $b != sdcscreen ]; then part "$b (a build without CUDA)"; continue; fi
    [ -f "$BUILD/$b" ] || { missing="$missing $b(absent)"; continue; }
    ldd "$BUILD/$b" >"$d/ldd-$b.txt" 2>&1
    missing="$missing$(grep 'not found' "$d/ldd-$b.txt" | awk -v b="$b" '{printf " %s:%s", b, $1}')"
  done
  if [ -n "$missing" ]; then bad "missing:$missing"; else ok "every library resolved"; fi
  smi=$(tool nvidia-smi)
  if [ -n "$smi" ]; then
    run_capped "$d/nvidia-smi.txt" "$smi"
    run_capped "$d/nvidia-smi.csv" "$smi" --query-gpu=name,driver_version,clocks.max.sm,power.limit,ecc.mode.current --format=csv
    ok "nvidia-smi: $(sed -n 2p "$d/nvidia-smi.csv" | cut -c1-120)"
  else
    part "nvidia-smi"
  fi
  if [ -f "$ROOT/SHA256SUMS" ] && [ "$BUILD" = "$ROOT" ]; then
    (cd "$ROOT" && sha256sum -c --quiet SHA256SUMS) >"$d/sha256sum.txt" 2>&1
    rc=$?
    if [ $rc = 0 ]; then ok "sha256sum -c: every bundle file intact"; else bad "sha256sum -c: $(grep -c FAILED "$d/sha256sum.txt") file(s) FAILED"; fi
  else
    part "sha256sum -c (no SHA256SUMS: not run from a bundle)"
  fi
  run_capped "$d/info.txt" "$BIN" info
  rc=$?
  if [ $rc != 0 ]; then
    bad "sdcscreen info: exit $rc ($(tail -n 1 "$d/info.txt" | cut -c1-200))"
    step_end
    finish 1 "sdcscreen does not start"
  fi
  info=$(cat "$d/info.txt")
  lt=$(printf '%s\n' "$info" | sed -n 's/^cublaslt: *//p' | head -n 1)
  if [ -n "$lt" ]; then ok "cuBLASLt: $lt"; else part "cuBLASLt: info names no cuBLASLt"; fi
  nvml_compare "$d" "$smi" "$info"
  listing || bad "sdcscreen list: $(tail -n 1 "$d/list.err" | cut -c1-200)"
  gpu=$(printf '%s\n' "$info" | grep "^gpu: *cuda:$DEVICE " | head -n 1)
  if [ -n "$EMULATED" ]; then
    ok "emulated device $EMULATED (no real GPU: $(printf '%s\n' "$info" | sed -n 's/^gpus: *//p' | head -n 1))"
    GPU_CC=""
  elif [ -z "$gpu" ]; then
    bad "no usable GPU cuda:$DEVICE: $(printf '%s\n' "$info" | sed -n 's/^gpus: *//p' | head -n 1)"
    step_end
    echo "gpu-first-light: no usable GPU: $(printf '%s\n' "$info" | grep -m1 '^gpus:' || echo "info lists no cuda:$DEVICE")" >&2
    finish 2 "no usable GPU"
  else
    GPU_CC=$(printf '%s\n' "$gpu" | sed -n 's/.*  cc \([0-9]*\)\.\([0-9]*\)  .*/\1\2/p')
    ok "$(printf '%s\n' "$gpu" | sed -E 's/^gpu: +//; s/  GPU-[0-9a-f-]+//' | cut -c1-200)"
  fi
  step_end
}

# ---- 1. smoke -----------------------------------------------------------------------------------------------
SMOKE=(gemm_f32.special_512 gemm_bf16_exactint.mantissa_walk_128x64x96 gemm_fp8_exactint.mantissa_walk_128x192x64
       gemm_fp8_exactint_cublaslt.mantissa_walk_128x192x64)
step1() {
  step_begin 1
  listing
  local c rc res
  for c in "${SMOKE[@]}"; do
    if ! in_boot "$c"; then bad "$c: not a boot case of this build's listing"; continue; fi
    screen "$CUR_DIR/$c.txt" --profile boot --enable "$c" --output-format json -o "$CUR_DIR/$c.json"
    rc=$?
    res=$(report_test "$CUR_DIR/$c.json")
    case "$rc:$res" in
      0:pass) ok "$c pass" ;;
      *:"not_applicable"* | *:"skip (not applicable"*) part "$c $res" ;;
      *) bad "$c exit $rc, $res" ;;
    esac
  done
  step_end
}

# ---- 2. boot profile ----------------------------------------------------------------------------------------
step2() {
  step_begin 2
  local s e rc wall counts
  local budget=()
  # The emulated device runs the kernels on the CPU: the profile's first 10 s, the cases left skipped (incomplete).
  [ -n "$EMULATED" ] && budget=(--time-budget 10s)
  s=$(date +%s.%N)
  screen "$CUR_DIR/boot.txt" --profile boot --output-format json -o "$CUR_DIR/boot.json" "${budget[@]}"
  rc=$?
  e=$(date +%s.%N)
  wall=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')
  counts=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]
print("{tests} tests: {pass} pass, {fail} fail, {error} error, {skip} skip, {na} not applicable, {crash} crash".format(na=s.get("not_applicable", 0), **s))' \
    "$CUR_DIR/boot.json" 2>/dev/null || echo "no report")
  if [ $rc = 0 ]; then ok "exit 0, $counts"
  elif [ -n "$EMULATED" ] && [ $rc = 2 ] && [[ $counts == *" 0 fail, 0 error, "*", 0 crash" ]]; then
    part "exit 2, $counts (on the emulated device: GPU-only families and the cases past its budget)"
  else bad "exit $rc, $counts"; fi
  if [ -n "$EMULATED" ]; then ok "wall ${wall} s (emulated: no GPU figure)"
  elif awk -v w="$wall" 'BEGIN { exit !(w <= 45) }'; then ok "wall ${wall} s with CUDA start-up (target 45 s)"
  else bad "wall ${wall} s with CUDA start-up, over the 45 s target"; fi
  step_end
}

# ---- 3. gpu_tests -------------------------------------------------------------------------------------------
step3() {
  step_begin 3
  local rc lt
  if [ -n "$EMULATED" ]; then part "gpu_tests needs a real GPU"; step_end n/a; return; fi
  if [ ! -x "$BUILD/gpu_tests" ]; then bad "no gpu_tests beside sdcscreen"; step_end; return; fi
  run_capped "$CUR_DIR/gpu_tests.log" "$BUILD/gpu_tests" --patterns "$PATTERNS"
  rc=$?
  case $rc in
    0) ok "exit 0" ;;
    77) bad "exit 77: gpu_tests found no usable GPU although sdcscreen info lists one" ;;
    124|137) bad "did not finish in its cap (exit $rc; the log keeps every line written)" ;;
    *) bad "exit $rc: $(grep -c -i 'fail' "$CUR_DIR/gpu_tests.log") line(s) with FAIL" ;;
  esac
  lt=$(grep '^cublasLt algorithms checked:' "$CUR_DIR/gpu_tests.log" | tail -n 1)
  if [ -n "$lt" ]; then ok "$lt"; else bad "no cuBLASLt algorithm count (the sweep did not finish)"; fi
  lt=$(grep '^gemm_f64 forms checked:' "$CUR_DIR/gpu_tests.log" | tail -n 1)  # the sm_90 forms' order, in short
  if [ -n "$lt" ]; then ok "$lt"; else bad "no gemm_f64 forms count (their check did not finish)"; fi
  step_end
}

# ---- 4. hang drill ------------------------------------------------------------------------------------------
HANG_CASE=gemm_bf16_exactint.mantissa_walk_128x64x96
step4() {
  step_begin 4
  local s e rc took res smi apps
  listing
  if ! in_boot "$HANG_CASE"; then bad "$HANG_CASE: not a boot case of this build's listing"; step_end; return; fi
  s=$(date +%s.%N)
  screen "$CUR_DIR/hang.txt" --profile boot --enable "$HANG_CASE" --inject "case=$HANG_CASE,action=hang" \
    --output-format json -o "$CUR_DIR/hang.json"
  rc=$?
  e=$(date +%s.%N)
  took=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')
  res=$(report_test "$CUR_DIR/hang.json")
  case "$rc:$res" in
    "2:error (watchdog"*) ok "exit 2 after ${took} s, ${res:0:160}" ;;
    124:*|137:*) bad "the screen did not end by itself in its cap (exit $rc after ${took} s): a hang the watchdog missed" ;;
    *) bad "exit $rc after ${took} s (want 2), $res" ;;
  esac
  smi=$(tool nvidia-smi)
  if [ -n "$EMULATED" ] || [ -z "$smi" ]; then
    part "nvidia-smi: processes left on the GPU not checked"
  else
    run_capped "$CUR_DIR/compute-apps.csv" "$smi" --query-compute-apps=pid,process_name --format=csv,noheader
    apps=$(grep -c . "$CUR_DIR/compute-apps.csv")
    if [ "$apps" = 0 ]; then ok "no process left on the GPU"; else bad "$apps process(es) left on the GPU: $(head -c 200 "$CUR_DIR/compute-apps.csv" | tr '\n' ' ')"; fi
  fi
  step_end
}

# ---- 5. SASS ------------------------------------------------------------------------------------------------
step5() {
  step_begin 5
  local cuobjdump arch rc
  cuobjdump=$(tool cuobjdump)
  if [ -z "$cuobjdump" ]; then part "cuobjdump"; step_end n/a; return; fi
  arch=sm_${GPU_CC:-90}
  [ -n "$GPU_CC" ] || DETAIL+=("no real GPU: the SASS of $arch")
  run_capped "$CUR_DIR/sass-$arch.txt" "$cuobjdump" -sass -arch "$arch" "$BIN"
  rc=$?
  if [ $rc != 0 ] || ! grep -q 'Function :' "$CUR_DIR/sass-$arch.txt"; then
    bad "cuobjdump -sass -arch $arch: exit $rc, no $arch code in sdcscreen (the driver compiles its PTX: no SASS to read here)"
    step_end; return
  fi
  # Per kernel of the exact-integer families (mma_kernel over a format's traits, the mma attention) and of
  # gemm_f64 (its forms, gemm_kernel<Dmma, block>): each tensor-core instruction and its count.
  awk '/Function :/ { f = $3 }
       f ~ /mma|exactint/ && match($0, /[A-Z]*MMA[.A-Z0-9]*/) { n[f "  " substr($0, RSTART, RLENGTH)]++ }
       END { for (k in n) print n[k] "  " k }' "$CUR_DIR/sass-$arch.txt" | sort -k2 >"$CUR_DIR/sass-summary.txt"
  if [ -s "$CUR_DIR/sass-summary.txt" ]; then
    ok "$arch: $(awk '{ t = $2; if (match(t, /[a-z]+_[a-z0-9]+_exactint|attention_[a-z0-9_]*mma|gemm_f64/)) t = substr(t, RSTART, RLENGTH); else t = substr(t, 1, 40)
                         if (!seen[t, $3]++) s[t] = s[t] (s[t] ? "," : "") $3 } END { for (k in s) printf "%s: %s; ", k, s[k] }' \
                 "$CUR_DIR/sass-summary.txt" | sed 's/; $//')"
    gzip -f "$CUR_DIR/sass-$arch.txt"
  else
    bad "$arch: no tensor-core instruction in any exact-integer kernel"
  fi
  step_end
}

# ---- 6. compute-sanitizer -----------------------------------------------------------------------------------
SANITIZE=(gemm_f32.special_512 reduce_sum_f32.mantissa_walk_64x4097 softmax_f32.special_128x1000
          gemm_bf16_exactint.mantissa_walk_128x64x96 gemm_fp8_exactint.mantissa_walk_128x192x64
          attention_bf16_exactint.causal_uniform_2x256x64 gemm_f64.special_256 reduce_sum_f64.mantissa_walk_64x4097)
step6() {
  step_begin 6
  local cs t c enables=()
  if [ -n "$EMULATED" ]; then part "compute-sanitizer needs a real GPU"; step_end n/a; return; fi
  cs=$(tool compute-sanitizer)
  if [ -z "$cs" ]; then part "compute-sanitizer"; step_end n/a; return; fi
  listing
  for c in "${SANITIZE[@]}"; do
    if in_boot "$c"; then enables+=(--enable "$c"); else bad "$c: not a boot case of this build's listing"; fi
  done
  for t in memcheck racecheck; do
    sanitize "$t" "$t" "$cs" --tool "$t" --error-exitcode 99 "$BIN" run --backend cuda --devices "$DEVICE" \
      --patterns "$PATTERNS" --force -q --profile boot "${enables[@]}"
  done
  # gemm_f64's kernel in every form (the benchmark's too: cp.async rings, sm_90 instructions) at ragged shapes.
  if [ -x "$BUILD/gpu_tests" ]; then
    for t in memcheck racecheck; do
      sanitize "$t gemm_f64 forms" "forms-$t" env SDC_TEST_DEVICE="$DEVICE" "$cs" --tool "$t" --error-exitcode 99 \
        "$BUILD/gpu_tests" --gemm-f64-forms
    done
  else
    bad "no gpu_tests beside sdcscreen (gemm_f64 forms)"
  fi
  step_end
}

# sanitize WHAT LOG COMMAND...: runs a compute-sanitizer command into $CUR_DIR/LOG.log and says how it went (its
# errors exit 99, the program's own failure any other status).
sanitize() {
  local what=$1 log="$CUR_DIR/$2.log" rc errs
  shift 2
  run_capped "$log" "$@"
  rc=$?
  errs=$(grep -E -m1 'ERROR SUMMARY|RACECHECK SUMMARY' "$log")
  case $rc in
    0) ok "$what: ${errs:-exit 0}" ;;
    99) bad "$what found errors: $errs" ;;
    124|137) part "$what did not finish in the cap (exit $rc)" ;;
    *) if grep -q -i -E 'not supported|unable to|permission|refus' "$log"; then
         part "$what: the device or driver refused it (exit $rc: $(grep -i -m1 -E 'not supported|unable to|permission|refus' "$log" | cut -c1-120))"
       else bad "$what: exit $rc ($(grep -m1 '^FAIL' "$log" | cut -c1-160)$(tail -n 1 "$log" | cut -c1-160))"; fi ;;
  esac
}

# ---- 7. drills ----------------------------------------------------------------------------------------------
step7() {
  step_begin 7
  local rc args=(--count 8 --replay-drills 4 --memory-drills 2)
  # The emulated device (the script's own test) runs half as many: each drill is a screen emulated on the CPU,
  # and what that test checks is the step's plumbing, not the drills' number.
  [ -n "$EMULATED" ] && args=(--count 4 --replay-drills 1 --memory-drills 1 --backend "$BACKEND")
  run_capped "$CUR_DIR/drills.log" python3 "$ROOT/scripts/gpu-drills.py" --sdcscreen "$BIN" --patterns "$PATTERNS" \
    --device "$DEVICE" --json "$CUR_DIR/drills.json" "${args[@]}"
  rc=$?
  if [ $rc = 0 ]; then ok "$(tail -n 1 "$CUR_DIR/drills.log")"
  else bad "exit $rc: $(grep -m1 '^BAD' "$CUR_DIR/drills.log" | cut -c1-200)$(tail -n 1 "$CUR_DIR/drills.log" | cut -c1-200)"; fi
  step_end
}

# ---- 8. benchmark -------------------------------------------------------------------------------------------
bench_figures() {  # bench.json -> the figures for the summary line: each ratio against its reference, each share
  python3 - "$1" <<'PY' 2>/dev/null || echo "figures in bench.log (bench.json unreadable)"
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for r in d.get("gemm_vs_cublas", []):
    out.append(f"gemm_f32 {r['shape']} {r['ratio']:.3f}x cuBLAS SGEMM (target {r['target']})")
form_tiles = sum(f.get("mismatched_tiles", 0) for c in d.get("cases", []) for f in c.get("sm90_forms", [])
                 if isinstance(f, dict))
for r in d.get("dgemm_vs_cublas", []):
    out.append(f"gemm_f64 {r['shape']} {r['ratio']:.3f}x cuBLAS DGEMM (target {r['target']})")
    forms = [f for f in r.get("forms", []) if "ratio_vs_cublas" in f]  # bench_dmma.cpp: instruction, block, slab, stages
    if forms:
        out.append("forms " + ", ".join(f"{f['instruction'].split('.')[2]}/{f['block']}/k{f['slab']}/s{f.get('stages', 2)} "
                                        f"{f['ratio_vs_cublas']:.3f}x" for f in forms)
                   + f" ({sum(f['values_differing_from_family'] for f in forms)} values and {form_tiles} battery "
                   "tiles differ)")
for r in d.get("digest_overhead", []):
    out.append(f"digest share {r['share'] * 100:.2f}%")
for r in d.get("cublaslt", []):
    if "stress_ratio" in r:
        out.append(f"{r['family'].split('_')[1]} {r['shape']} verified {r['stress_ratio']:.3f}x bare cuBLASLt, "
                   f"share {r['digest_share'] * 100:.1f}%, mma.sync {r['mma_sync_vs_cublaslt']:.2f}x")
cases = d.get("cases", [])
timed = sum(1 for c in cases if "ms" in c)
out.append(f"{timed} of {len(cases)} cases timed, {d.get('golden_mismatched_tiles', 0)} golden mismatches")
print("; ".join(out))
PY
}
step8() {
  step_begin 8
  local rc
  if [ -n "$EMULATED" ]; then part "bench_gpu needs a real GPU"; step_end n/a; return; fi
  if [ ! -x "$BUILD/bench_gpu" ]; then bad "no bench_gpu beside sdcscreen"; step_end; return; fi
  run_capped "$CUR_DIR/bench.log" "$BUILD/bench_gpu" --patterns "$PATTERNS" --device "$DEVICE" --reps 3 \
    --shapes 4096x4096x4096 --json "$CUR_DIR/bench.json"
  rc=$?
  case $rc in
    0) ok "$(bench_figures "$CUR_DIR/bench.json")" ;;
    124|137) part "bench_gpu did not finish in its cap (exit $rc; figures so far in bench.log)" ;;
    *) bad "bench_gpu exit $rc ($(tail -n 1 "$CUR_DIR/bench.log" | cut -c1-160))" ;;
  esac
  step_end
}

for n in "${SELECTED[@]}"; do
  left=$((T_END - RESERVE - $(date +%s)))
  if [ $left -lt "${MIN_LEFT[$n]}" ]; then
    if [ "$n" = 6 ] || [ "$n" = 8 ]; then
      say_line "$n ${NAMES[$n]} not-run 0 skipped: ${left} s left, it needs ${MIN_LEFT[$n]}${EMU_NOTE}"
      DONE[$n]=1; COUNT_PART=$((COUNT_PART + 1))
    else
      say_line "$n ${NAMES[$n]} not-run 0 deadline: ${left} s left${EMU_NOTE}"
      DONE[$n]=1; COUNT_DEADLINE=$((COUNT_DEADLINE + 1))
    fi
    continue
  fi
  "step$n"
done
trap '' INT TERM HUP
code=0
if [ $COUNT_FAIL -gt 0 ]; then code=1
elif [ $COUNT_DEADLINE -gt 0 ]; then code=4
elif [ $COUNT_PART -gt 0 ]; then code=3; fi
finish $code "not reached"

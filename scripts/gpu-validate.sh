#!/usr/bin/env bash
# GPU validation on a machine with NVIDIA GPUs: GPU tests, bit identity of every exact family with the
# goldens over the whole `standard` profile, injection drills, the benchmark, and the boot profile's
# wall time. Writes a dated record, docs/gpu-validation/<date>-<gpu>.md (or under --out), with the
# device, driver and every figure; commit it.
#
#   scripts/gpu-validate.sh [--build-dir DIR] [--out DIR] [--drills N] [--quick] [--write-recordings]
#                           [--steps LIST]
#
# Build: with --build-dir pointing at an existing CUDA build (for example one made on a developer
# machine and copied over with its libfmt in <build>/lib: `cp /usr/lib/x86_64-linux-gnu/libfmt.so.9
# build/lib/`; the binaries need besides only the C/C++ runtimes, the NVIDIA driver and, for the
# benchmark, cuBLAS), nothing is built; otherwise the script configures and builds into build-gpu,
# which needs the build dependencies (scripts/setup.sh) on this machine.
# --quick: the boot profile instead of standard, 20 drills, fewer benchmark repetitions (a smoke run).
# --write-recordings: merge this node's recordings of the recorded cases into patterns/recordings/
#   (`consensus --write`; provisional while they come from one device) for committing.
# --steps LIST: run only these steps, comma-separated, of: tests (GPU tests), profile (standard or, with
#   --quick, boot profile on every GPU), boot (boot wall time x3), record (record + consensus), drills,
#   bench. Default: all. A partial run's record is named after its steps and lists the others as not run
#   (never as passed), so that a validation can be split over several shorter sessions.
# Exit: 0 when every check run passed, 1 when any failed (the record says which), 2 when no GPU is usable,
#   64 on a bad argument.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=""
OUT=""
DRILLS=120
QUICK=0
WRITE_RECORDINGS=0
ALL_STEPS="tests,profile,boot,record,drills,bench"
STEPS=$ALL_STEPS
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --drills) DRILLS=$2; shift 2 ;;
    --quick) QUICK=1; DRILLS=20; shift ;;
    --write-recordings) WRITE_RECORDINGS=1; shift ;;
    --steps) STEPS=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "gpu-validate: unknown argument '$1' (see --help)" >&2; exit 64 ;;
  esac
done
for st in ${STEPS//,/ }; do
  case ",$ALL_STEPS," in *",$st,"*) ;; *) echo "gpu-validate: unknown step '$st' in --steps (steps: $ALL_STEPS)" >&2; exit 64 ;; esac
done
[ -n "${STEPS//,/}" ] || { echo "gpu-validate: --steps needs at least one of $ALL_STEPS" >&2; exit 64; }
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
NOT_RUN=""
for st in ${ALL_STEPS//,/ }; do want "$st" || NOT_RUN="$NOT_RUN${NOT_RUN:+,}$st"; done

if [ -z "$BUILD" ]; then
  BUILD=build-gpu
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="80-real;90-real;90-virtual" >/dev/null &&
    cmake --build "$BUILD" -j"$(nproc)" --target sdcscreen gpu_tests bench_gpu || { echo "gpu-validate: build failed" >&2; exit 1; }
fi
BIN="$BUILD/sdcscreen"
[ -x "$BIN" ] || { echo "gpu-validate: no $BIN (build first or pass --build-dir)" >&2; exit 1; }

# libfmt carried with the build; cuBLAS for the benchmark and cuBLASLt, which sdcscreen loads at run time for
# the *_cublaslt families: the toolkit's, or the one Python's CUDA wheels carry.
for d in "$BUILD/lib" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

if ! "$BIN" info | grep -q '^gpu:'; then
  "$BIN" info | grep '^gpus:' >&2
  exit 2
fi
DATE=$(date -u +%Y-%m-%d)
GPU_NAME=$("$BIN" info | awk -F'  ' '/^gpu:/{print $1; exit}' | sed 's/^gpu: *cuda:[0-9]* //')
SLUG=$(echo "$GPU_NAME" | tr 'A-Z' 'a-z' | sed 's/nvidia //; s/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
OUT=${OUT:-docs/gpu-validation}
mkdir -p "$OUT"
WORK=$(mktemp -d)
SUFFIX=""
[ -n "$NOT_RUN" ] && SUFFIX="-${STEPS//,/-}"
RECORD="$OUT/$DATE-$SLUG$SUFFIX.md"
PROFILE=standard
[ $QUICK = 1 ] && PROFILE=boot
STATUS=0
note() { echo "$*" >>"$RECORD.tmp"; }
check() {  # check NAME RC: a line in the record, and the overall status
  if [ "$2" = 0 ]; then note "- $1: **pass**"; else note "- $1: **FAIL** (exit $2)"; STATUS=1; fi
}

: >"$RECORD.tmp"
note "# GPU validation, $DATE, $GPU_NAME"
note ""
note "Written by \`scripts/gpu-validate.sh$([ $QUICK = 1 ] && echo ' --quick')$([ -n "$NOT_RUN" ] && echo " --steps $STEPS")\` at git $(git describe --always --dirty 2>/dev/null || echo unknown)."
[ -n "$NOT_RUN" ] && note "" && note "Partial run: steps **not run** here: $NOT_RUN (their checks are in another record, or owed)."
note ""
note "## Device"
note '```'
"$BIN" info >>"$RECORD.tmp" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,ecc.mode.current --format=csv >>"$RECORD.tmp" 2>&1
note '```'
note ""
note "## Checks"
STEP_T0=0
step_begin() { echo "== $1" >&2; STEP_T0=$(date +%s); }
step_end() { note "  - ($1: $(( $(date +%s) - STEP_T0 )) s)"; }

if want tests; then
step_begin "GPU tests"
"$BUILD/gpu_tests" >"$WORK/gpu_tests.log" 2>&1
check "GPU tests (generator, bit identity of every battery case, SM ids, fault hooks, every cuBLASLt algorithm, runner)" $?
# gpu_tests ends its cuBLASLt check with "cublasLt algorithms checked: N over C cases, M mismatched".
LT_COUNT=$(grep '^cublasLt algorithms checked:' "$WORK/gpu_tests.log" | tail -1)
if [ -n "$LT_COUNT" ]; then
  note "- cuBLASLt ${LT_COUNT#cublasLt } (every algorithm the heuristic offers, every exact-integer cuBLASLt case, against the goldens)"
else
  note "- cuBLASLt algorithms: **no count** (gpu_tests did not reach its cuBLASLt check)"
  STATUS=1
fi
LT_REPEAT=$(grep '^cublasLt algorithms repeated on recorded cases:' "$WORK/gpu_tests.log" | tail -1)
[ -n "$LT_REPEAT" ] && note "- cuBLASLt ${LT_REPEAT#cublasLt } (random data: each algorithm run twice must repeat its bits)"
grep -E '^gemm_(bf16|f16)_cublaslt\.' "$WORK/gpu_tests.log" | grep 'distinct results' | sed 's/^/  - /' >>"$RECORD.tmp"
step_end tests
fi

if want profile; then
step_begin "$PROFILE profile on every GPU"
T0=$(date +%s.%N)
"$BIN" run --backend cuda --profile "$PROFILE" --force --output-format json -o "$WORK/profile.json" -q
RC=$?
T1=$(date +%s.%N)
check "\`$PROFILE\` profile, every case on every GPU bit-identical to the CPU goldens ($(python3 -c "import json;r=json.load(open('$WORK/profile.json'));print(r['summary'])" 2>/dev/null))" $RC
step_end profile
fi

if want boot; then
step_begin "boot profile wall time (3 runs, CUDA start-up included)"
BOOT=()
for i in 1 2 3; do
  S=$(date +%s.%N)
  "$BIN" run --backend cuda --profile boot --force -q --devices 0
  rc=$?
  E=$(date +%s.%N)
  BOOT+=("$(python3 -c "print(f'{$E-$S:.2f}')")")
  [ $rc = 0 ] || { STATUS=1; note "- boot run $i: **FAIL** (exit $rc)"; }
done
BOOT_MEDIAN=$(printf '%s\n' "${BOOT[@]}" | sort -n | sed -n 2p)
note "- \`boot\` profile wall time on one GPU, CUDA start-up included: median $BOOT_MEDIAN s (runs: ${BOOT[*]}; target at most 45 s)"
python3 -c "import sys; sys.exit(0 if float('$BOOT_MEDIAN') <= 45 else 1)" || { STATUS=1; note "  - **over the 45 s target**"; }
step_end boot
fi

if want record; then
step_begin "record and consensus of the recorded cases on every GPU"
mkdir -p "$WORK/recordings"
"$BIN" record -o "$WORK/recordings" --force >"$WORK/record.log" 2>&1
check "record: every recorded case run twice or more on every GPU, repeats and GPUs agree ($(grep -c 'wrote' "$WORK/record.log") recording file(s))" $?
if ls "$WORK"/recordings/*.json >/dev/null 2>&1; then
  "$BIN" consensus "$WORK"/recordings/*.json >"$WORK/consensus.log" 2>&1
  check "consensus of this node's recordings: every key accepted, no GPU dissents (one GPU: provisional goldens)" $?
  if [ $WRITE_RECORDINGS = 1 ]; then
    "$BIN" consensus --write --patterns patterns "$WORK"/recordings/*.json >>"$WORK/consensus.log" 2>&1
    check "recordings merged into patterns/recordings (commit them with patterns/manifest.json)" $?
  fi
fi
step_end record
fi

if want drills; then
step_begin "injection drills ($DRILLS)"
python3 scripts/gpu-drills.py --sdcscreen "$BIN" --count "$DRILLS" --json "$WORK/drills.json" >"$WORK/drills.log" 2>&1
RC=$?
check "injection drills: $(tail -1 "$WORK/drills.log")" $RC
step_end drills
fi

if want bench; then
step_begin "benchmark"
REPS=20
[ $QUICK = 1 ] && REPS=5
if [ -x "$BUILD/bench_gpu" ]; then
  "$BUILD/bench_gpu" --reps "$REPS" --json "$WORK/bench.json" >"$WORK/bench.log" 2>&1
  check "benchmark ran and validated before timing" $?
else
  note "- benchmark: **not built** (bench_gpu missing: cuBLAS not found at build time)"
  STATUS=1
fi
step_end bench
fi
section() {  # section TITLE LOG [LINES]: the log's tail in the record, where the step ran
  [ -f "$2" ] || return 0
  note ""
  note "## $1"
  note '```'
  if [ -n "${3:-}" ]; then tail -n "$3" "$2" >>"$RECORD.tmp"; else cat "$2" >>"$RECORD.tmp"; fi
  note '```'
}

section Benchmark "$WORK/bench.log"
section Drills "$WORK/drills.log"
section "Record" "$WORK/record.log" 40
section "Consensus" "$WORK/consensus.log" 40
section "GPU tests" "$WORK/gpu_tests.log" 60
note ""
note "Overall: $([ $STATUS = 0 ] && echo pass || echo FAIL)$([ -n "$NOT_RUN" ] && echo " (steps run: $STEPS; not run: $NOT_RUN)")"
mv "$RECORD.tmp" "$RECORD"
cp "$WORK/profile.json" "$OUT/$DATE-$SLUG-$PROFILE.json" 2>/dev/null
cp "$WORK/bench.json" "$OUT/$DATE-$SLUG-bench.json" 2>/dev/null
echo "gpu-validate: record written to $RECORD (overall: $([ $STATUS = 0 ] && echo pass || echo FAIL))" >&2
exit $STATUS

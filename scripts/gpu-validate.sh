#!/usr/bin/env bash
# GPU validation on a machine with NVIDIA GPUs: GPU tests, bit identity of every exact family with the
# goldens over the whole `standard` profile, the boot profile's wall time, recordings of the recorded
# cases, injection drills and the benchmark. Writes a dated record, <out>/<date>-<gpu>.md (out: --out,
# default docs/gpu-validation), with the device, the build, every check and each step's seconds, and beside
# it the JSON companions (profile report, drills, benchmark) and this node's raw recordings; commit them.
#
#   scripts/gpu-validate.sh [--build-dir DIR] [--out DIR] [--steps LIST] [--drills N] [--quick]
#                           [--write-recordings]
#
# Binaries: those of --build-dir DIR (a build tree or a bundle: DIR/sdcscreen, DIR/gpu_tests, else
#   DIR/tests/gpu_tests, DIR/bench_gpu); without it, when this script lies in a bundle made by
#   scripts/gpu-bundle.sh (an executable sdcscreen in the folder above scripts/), the bundle's; otherwise
#   the script configures and builds into build-gpu, which needs the build dependencies (scripts/setup.sh).
#   Libraries: DIR/lib first (the bundle's libfmt and the like), then the CUDA toolkit's (cuBLAS for the
#   benchmark, cuBLASLt, which sdcscreen loads at run time for the *_cublaslt families). Patterns:
#   DIR/patterns when it exists, else the source tree's; every binary is given that one.
# --steps LIST: only these steps, comma-separated, of: tests (GPU tests), profile (standard or, with
#   --quick, boot profile on every GPU), boot (boot wall time x3 on cuda:0), record (record + consensus),
#   drills, bench. Default: all. A partial run's record is named <date>-<gpu>-<steps>.md and lists the
#   other steps as not run (never as passed); scripts/gpu-merge-records.py merges partial records of one
#   GPU into one dated record, so that a validation can be split over several shorter sessions.
# --drills N: random output-fault drills (default 120, 20 with --quick), then the replay's drills.
# --quick: the boot profile instead of standard, 20 drills, fewer benchmark repetitions (a smoke run).
# --write-recordings: also merge this node's recordings into the pattern directory's recordings/
#   (`consensus --write`; provisional while they come from one device) for committing with its
#   manifest.json (docs/recordings.md).
# Exit: 0 when every check run passed, 1 when any failed or the record could not be written (the record
#   says which) or sdcscreen does not start, 2 when no GPU is usable (no record), 64 on a bad argument,
#   128+N when interrupted by signal N (the record is still written: the interrupted step FAIL, the steps
#   after it not run).
set -uo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ALL_STEPS="tests profile boot record drills bench"

bad() { echo "gpu-validate: $* (see --help)" >&2; exit 64; }
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

BUILD=""
OUT=""
DRILLS=""
QUICK=0
WRITE_RECORDINGS=0
STEPS_ARG=""
STEPS_GIVEN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --build-dir|--out|--drills|--steps)
      if [ $# -lt 2 ] || [ -z "$2" ] || [ "${2#--}" != "$2" ]; then bad "$1 needs a value"; fi
      case "$1" in
        --build-dir) BUILD=$2 ;;
        --out) OUT=$2 ;;
        --drills) DRILLS=$2 ;;
        --steps) STEPS_ARG=$2; STEPS_GIVEN=1 ;;
      esac
      shift 2 ;;
    --quick) QUICK=1; shift ;;
    --write-recordings) WRITE_RECORDINGS=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$SELF"; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
if [ -n "$DRILLS" ]; then
  [[ $DRILLS =~ ^[1-9][0-9]{0,5}$ ]] || bad "--drills '$DRILLS': want a whole number from 1 to 999999"
else
  DRILLS=120
  [ $QUICK = 1 ] && DRILLS=20
fi
STEPS=""  # the steps asked for, in the order they run
if [ $STEPS_GIVEN = 1 ]; then
  for st in ${STEPS_ARG//,/ }; do
    case " $ALL_STEPS " in *" $st "*) ;; *) bad "unknown step '$st' in --steps (steps: ${ALL_STEPS// /,})" ;; esac
  done
  for st in $ALL_STEPS; do
    case ",$STEPS_ARG," in *",$st,"*) STEPS="$STEPS${STEPS:+ }$st" ;; esac
  done
  [ -n "$STEPS" ] || bad "--steps needs at least one of ${ALL_STEPS// /,}"
else
  STEPS=$ALL_STEPS
fi
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ -n "$BUILD" ]; then
  BUILD=$(abs "$BUILD")
  [ -d "$BUILD" ] || bad "--build-dir '$BUILD': no such directory"
fi
[ -n "$OUT" ] && OUT=$(abs "$OUT")

cd "$(dirname "$SELF")/.." || exit 1
ROOT=$(pwd)
if [ -z "$BUILD" ] && [ -f "$ROOT/sdcscreen" ] && [ -x "$ROOT/sdcscreen" ]; then
  BUILD=$ROOT  # the bundle: binaries beside scripts/
fi
if [ -z "$BUILD" ]; then
  BUILD=$ROOT/build-gpu
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="80-real;89-real;90-real;90-virtual" >/dev/null &&
    cmake --build "$BUILD" -j"$(nproc)" --target sdcscreen gpu_tests bench_gpu || { echo "gpu-validate: build failed" >&2; exit 1; }
fi
BIN="$BUILD/sdcscreen"
[ -f "$BIN" ] && [ -x "$BIN" ] || { echo "gpu-validate: no $BIN (build first or pass --build-dir)" >&2; exit 1; }
PATTERNS="$ROOT/patterns"
[ -d "$BUILD/patterns" ] && PATTERNS="$BUILD/patterns"

# The build's own libraries first, then cuBLAS/cuBLASLt: the toolkit's, or the one Python's CUDA wheels carry.
LIBS=""
for d in "$BUILD/lib" /usr/local/cuda/lib64 "/usr/local/cuda/targets/$(uname -m)-linux/lib" \
         /usr/local/cuda/targets/sbsa-linux/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
  [ -d "$d" ] && case ":$LIBS:" in *":$d:"*) ;; *) LIBS="$LIBS${LIBS:+:}$d" ;; esac
done
[ -n "$LIBS" ] && export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

VERSION=$("$BIN" --version 2>/dev/null)
VERSION=${VERSION%%$'\n'*}
[ -n "$VERSION" ] || VERSION="sdcscreen (version unknown: --version failed)"
INFO=$("$BIN" info 2>&1)
INFO_RC=$?
GPU_LINES=$(printf '%s\n' "$INFO" | grep '^gpu:')
if [ $INFO_RC != 0 ]; then  # a binary that does not start (a library missing from the bundle): broken, not "no GPU"
  printf '%s\n' "$INFO" | tail -n 5 >&2
  echo "gpu-validate: $BIN info: exit $INFO_RC" >&2
  exit 1
fi
if [ -z "$GPU_LINES" ]; then
  printf '%s\n' "$INFO" | grep '^gpus:' >&2 || echo "gpu-validate: $BIN info lists no GPU" >&2
  exit 2
fi
# "gpu:      cuda:0 NVIDIA H100 80GB HBM3  GPU-...  00000000:19:00.0  cc 9.0  ...": the fields are separated by
# two spaces, the name (after "cuda:N ") has single ones.
GPU_FIELDS=$(printf '%s\n' "$GPU_LINES" | sed -E 's/^gpu:[[:space:]]+cuda:[0-9]+ //')
GPU_NAME=$(printf '%s\n' "$GPU_FIELDS" | head -n 1 | sed 's/  .*//')
GPU_UUIDS=$(printf '%s\n' "$GPU_FIELDS" | awk -F'  ' '{print $2}' | paste -sd, -)
[ -n "$GPU_NAME" ] || GPU_NAME="unnamed GPU"
SLUG=$(printf '%s\n' "$GPU_NAME" | tr '[:upper:]' '[:lower:]' | sed -E 's/^nvidia //; s/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
[ -n "$SLUG" ] || SLUG=gpu
DATE=$(date -u +%Y-%m-%d)
OUT=${OUT:-$ROOT/docs/gpu-validation}
mkdir -p "$OUT" || { echo "gpu-validate: cannot create $OUT" >&2; exit 1; }
BASE="$DATE-$SLUG"
RECORD="$OUT/$BASE.md"
[ "$STEPS" = "$ALL_STEPS" ] || RECORD="$OUT/$BASE-${STEPS// /-}.md"
PROFILE=standard
[ $QUICK = 1 ] && PROFILE=boot
OPTS=""  # the options that change what is checked, for the record (no paths: the record is committed)
[ $QUICK = 1 ] && OPTS="$OPTS --quick"
[ "$STEPS" = "$ALL_STEPS" ] || OPTS="$OPTS --steps ${STEPS// /,}"
want drills && OPTS="$OPTS --drills $DRILLS"
[ $WRITE_RECORDINGS = 1 ] && OPTS="$OPTS --write-recordings"
SMI=""
command -v nvidia-smi >/dev/null &&
  SMI=$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,ecc.mode.current --format=csv 2>&1)
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT

# Each step writes its lines to $WORK/step-NAME.md; its status is FAIL as soon as one check fails, and a step
# that recorded no check at all fails too (fail closed). The record is put together at the end (finish).
declare -A STEP_STATUS STEP_SECS
CUR=""
CUR_FAIL=0
CUR_T0=0
STATUS=0
line() { printf '%s\n' "$*" >>"$WORK/step-$CUR.md"; }
check() {  # check NAME RC: a line in the step, pass only when RC is 0 (an empty RC fails)
  if [ "$2" = 0 ]; then line "- $1: **pass**"; else line "- $1: **FAIL** (exit ${2:-unknown})"; CUR_FAIL=1; fi
}
fail_line() { line "- $1"; CUR_FAIL=1; }
step_begin() { CUR=$1; CUR_FAIL=0; CUR_T0=$(date +%s); : >"$WORK/step-$CUR.md"; echo "== $1: $2" >&2; }
step_end() {
  [ -s "$WORK/step-$CUR.md" ] || fail_line "no check recorded: **FAIL**"
  STEP_SECS[$CUR]=$(( $(date +%s) - CUR_T0 ))
  if [ $CUR_FAIL = 0 ]; then STEP_STATUS[$CUR]=pass; else STEP_STATUS[$CUR]=FAIL; STATUS=1; fi
  echo "== $CUR: ${STEP_STATUS[$CUR]} (${STEP_SECS[$CUR]} s)" >&2
  CUR=""
}
# section STEP TITLE LOG [LINES]: the log (its tail) in the record, marked as the step's for merging.
section() {
  [ -f "$3" ] || return 0
  {
    echo "<!-- section: $1 begin -->"
    echo "## $2"
    echo '```'
    if [ -n "${4:-}" ]; then tail -n "$4" "$3"; else cat "$3"; fi | sed "s|$WORK/||g"
    echo '```'
    echo "<!-- section: $1 end -->"
    echo
  } >>"$WORK/sections-$1.md"
}
json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
json_list() { local out="" x; for x in "$@"; do out="$out${out:+, }$(json_str "$x")"; done; printf '[%s]' "$out"; }

SIGNALLED=""
on_signal() {  # the step running is a failure, the record is written, exit 128+N
  trap '' INT TERM HUP
  SIGNALLED=$1
  if [ -n "$CUR" ]; then fail_line "interrupted by SIG$1 during this step: **FAIL**"; step_end; fi
  STATUS=1
  finish
  exit $((128 + $2))
}

finish() {
  local st ran=() not_run=() files=() f
  for st in $ALL_STEPS; do
    if [ -n "${STEP_STATUS[$st]:-}" ]; then ran+=("$st"); else not_run+=("$st"); fi
  done
  # The companions, beside the record; one that cannot be copied fails the run.
  local -a copies=("profile.json:$BASE-$PROFILE.json" "drills.json:$BASE-drills.json" "bench.json:$BASE-bench.json")
  for f in "${copies[@]}"; do
    if [ -f "$WORK/${f%%:*}" ]; then
      if cp "$WORK/${f%%:*}" "$OUT/${f#*:}"; then files+=("${f#*:}"); else STATUS=1; COPY_ERRORS="${COPY_ERRORS:-}${f#*:} "; fi
    fi
  done
  if ls "$WORK"/recordings/*.json >/dev/null 2>&1; then
    if mkdir -p "$OUT/$BASE-recordings" && cp "$WORK"/recordings/*.json "$OUT/$BASE-recordings/"; then
      files+=("$BASE-recordings/")
    else
      STATUS=1; COPY_ERRORS="${COPY_ERRORS:-}$BASE-recordings/ "
    fi
  fi
  local overall
  if [ $STATUS != 0 ]; then overall=FAIL
  elif [ ${#not_run[@]} -gt 0 ]; then overall=incomplete
  else overall=pass; fi
  {
    echo "# GPU validation, $DATE, $GPU_NAME"
    echo
    echo "<!-- gpu-validate: {\"format\": \"sdcscreen-gpu-validation\", \"version\": 1, \"date\": \"$DATE\"," \
         "\"gpu\": $(json_str "$GPU_NAME"), \"uuids\": $(json_list ${GPU_UUIDS//,/ }), \"slug\": \"$SLUG\"," \
         "\"tool\": $(json_str "$VERSION"), \"command\": $(json_str "scripts/gpu-validate.sh$OPTS")," \
         "\"written\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"profile\": \"$PROFILE\", \"steps\": $(json_list ${ran[@]+"${ran[@]}"})," \
         "\"not_run\": $(json_list ${not_run[@]+"${not_run[@]}"}), \"files\": $(json_list ${files[@]+"${files[@]}"}), \"overall\": \"$overall\"} -->"
    echo
    echo "Written by \`scripts/gpu-validate.sh$OPTS\` with $VERSION, $(date -u '+%Y-%m-%d %H:%M') UTC."
    if [ ${#not_run[@]} -gt 0 ]; then
      echo
      echo "Partial run: steps **not run** here: ${not_run[*]} (their checks are in another record, or owed)."
    fi
    echo
    echo "## Device"
    echo '```'
    # the host name and the pattern directory's path say nothing about the device and are left out
    printf '%s\n' "$INFO" | grep -v -e '^host:' -e '^patterns:'
    [ -n "$SMI" ] && printf '%s\n' "$SMI"
    echo '```'
    if [ -f "$BUILD/BUNDLE.txt" ]; then
      echo
      echo "Bundle:"
      echo '```'
      cat "$BUILD/BUNDLE.txt"
      echo '```'
    fi
    echo
    echo "## Checks"
    echo
    for st in $ALL_STEPS; do
      if [ -n "${STEP_STATUS[$st]:-}" ]; then
        echo "<!-- step: $st status: ${STEP_STATUS[$st]} seconds: ${STEP_SECS[$st]} -->"
        echo "### $st: ${STEP_STATUS[$st]} (${STEP_SECS[$st]} s)"
        cat "$WORK/step-$st.md"
      else
        echo "<!-- step: $st status: not-run -->"
        echo "### $st: not run"
        if want "$st"; then echo "- **not run**: the run was interrupted before this step (never a pass)"
        else echo "- **not run** here (not in --steps; never a pass)"; fi
      fi
      echo "<!-- step: $st end -->"
      echo
    done
    if [ ${#files[@]} -gt 0 ]; then
      echo "Files beside this record: $(printf '`%s`, ' "${files[@]}" | sed 's/, $//')"
      echo
    fi
    [ -n "${COPY_ERRORS:-}" ] && echo "- **FAIL**: could not copy beside the record: ${COPY_ERRORS}" && echo
    [ -n "$SIGNALLED" ] && echo "- **FAIL**: interrupted by SIG$SIGNALLED" && echo
    for st in bench drills record boot profile tests; do
      [ -f "$WORK/sections-$st.md" ] && cat "$WORK/sections-$st.md"
    done
    case $overall in
      pass) echo "Overall: pass" ;;
      FAIL) echo "Overall: FAIL$( [ ${#not_run[@]} -gt 0 ] && echo " (not run: ${not_run[*]})")" ;;
      *) echo "Overall: incomplete: the steps run passed (${ran[*]}); not run: ${not_run[*]}" ;;
    esac
    echo "<!-- overall: $overall -->"
  } >"$RECORD.tmp" && mv -f "$RECORD.tmp" "$RECORD" ||
    { echo "gpu-validate: cannot write the record $RECORD" >&2; rm -f "$RECORD.tmp"; exit 1; }
  echo "gpu-validate: record written to $RECORD (overall: $overall)" >&2
}
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

if want tests; then
  step_begin tests "GPU tests"
  GPU_TESTS=""
  for c in "$BUILD/gpu_tests" "$BUILD/tests/gpu_tests"; do
    if [ -f "$c" ] && [ -x "$c" ]; then GPU_TESTS=$c; break; fi
  done
  if [ -z "$GPU_TESTS" ]; then
    fail_line "GPU tests: **FAIL** (no gpu_tests in the build dir or its tests/: a build without CUDA, or a bundle without it)"
  else
    "$GPU_TESTS" --patterns "$PATTERNS" >"$WORK/gpu_tests.log" 2>&1
    rc=$?
    [ $rc = 77 ] && echo "gpu_tests: exit 77: it found no usable GPU although sdcscreen info lists one" >>"$WORK/gpu_tests.log"
    check "GPU tests (generator, bit identity of every battery case, SM ids, fault hooks, every cuBLASLt algorithm, GPU executor)" $rc
    # gpu_tests ends its cuBLASLt check with "cublasLt algorithms checked: N over C cases, M mismatched".
    LT_COUNT=$(grep '^cublasLt algorithms checked:' "$WORK/gpu_tests.log" | tail -n 1)
    if [ -n "$LT_COUNT" ]; then
      line "- cuBLASLt ${LT_COUNT#cublasLt } (every algorithm the heuristic offers, every exact-integer cuBLASLt case, against the goldens)"
    else
      fail_line "cuBLASLt algorithms: **no count** (gpu_tests did not reach its cuBLASLt check): **FAIL**"
    fi
    LT_REPEAT=$(grep '^cublasLt algorithms repeated on recorded cases:' "$WORK/gpu_tests.log" | tail -n 1)
    [ -n "$LT_REPEAT" ] && line "- cuBLASLt ${LT_REPEAT#cublasLt } (random data: each algorithm run twice must repeat its bits)"
    grep -E '^gemm_(bf16|f16)_cublaslt\.' "$WORK/gpu_tests.log" | grep 'distinct results' | sed 's/^/  - /' >>"$WORK/step-$CUR.md"
    section tests "GPU tests" "$WORK/gpu_tests.log" 60
  fi
  step_end
fi

if want profile; then
  step_begin profile "$PROFILE profile on every GPU"
  "$BIN" run --backend cuda --profile "$PROFILE" --patterns "$PATTERNS" --force --output-format json \
    -o "$WORK/profile.json" -q >"$WORK/profile.log" 2>&1
  rc=$?
  SUMMARY=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]
print("{tests} tests: {pass} pass, {fail} fail, {error} error, {skip} skip, {na} not applicable, {crash} crash".format(na=s.get("not_applicable", 0), **s))' \
    "$WORK/profile.json" 2>/dev/null)
  check "\`$PROFILE\` profile, every case on every GPU bit-identical to its golden (${SUMMARY:-no report}; \`$BASE-$PROFILE.json\`)" $rc
  [ -f "$WORK/profile.json" ] || fail_line "\`$PROFILE\` profile: no JSON report written: **FAIL**"
  [ $rc = 0 ] || section profile "Profile ($PROFILE)" "$WORK/profile.log" 40
  step_end
fi

if want boot; then
  step_begin boot "boot profile wall time (3 runs on cuda:0, CUDA start-up included)"
  BOOT=()
  for i in 1 2 3; do
    S=$(date +%s.%N)
    "$BIN" run --backend cuda --profile boot --patterns "$PATTERNS" --force -q --devices 0 >"$WORK/boot$i.log" 2>&1
    rc=$?
    E=$(date +%s.%N)
    BOOT+=("$(awk -v s="$S" -v e="$E" 'BEGIN { printf "%.2f", e - s }')")
    if [ $rc != 0 ]; then
      fail_line "boot run $i: **FAIL** (exit $rc)"
      section boot "Boot run $i" "$WORK/boot$i.log" 30
    fi
  done
  BOOT_MEDIAN=$(printf '%s\n' "${BOOT[@]}" | sort -n | sed -n 2p)
  line "- \`boot\` profile wall time on one GPU, CUDA start-up included: median $BOOT_MEDIAN s (runs: ${BOOT[*]}; target at most 45 s)"
  awk -v m="$BOOT_MEDIAN" 'BEGIN { exit !(m != "" && m + 0 <= 45) }' || fail_line "median **over the 45 s target**: **FAIL**"
  step_end
fi

if want record; then
  step_begin record "record and consensus of the recorded cases on every GPU"
  mkdir -p "$WORK/recordings"
  "$BIN" record -o "$WORK/recordings" --patterns "$PATTERNS" --force >"$WORK/record.log" 2>&1
  rc=$?
  N_REC=$(find "$WORK/recordings" -maxdepth 1 -name '*.json' | wc -l)
  check "record: every recorded case run twice or more on every GPU, repeats and GPUs agree ($N_REC recording file(s), \`$BASE-recordings/\`)" $rc
  section record "Record" "$WORK/record.log" 40
  if [ "$N_REC" -gt 0 ]; then
    "$BIN" consensus --patterns "$PATTERNS" "$WORK"/recordings/*.json >"$WORK/consensus.log" 2>&1
    rc=$?
    check "consensus of this node's recordings: every key accepted, no GPU dissents (one GPU: provisional goldens)" $rc
    if [ $WRITE_RECORDINGS = 1 ]; then
      "$BIN" consensus --write --patterns "$PATTERNS" "$WORK"/recordings/*.json >>"$WORK/consensus.log" 2>&1
      rc=$?
      check "recordings merged into the pattern directory's recordings/ (commit them with its manifest.json)" $rc
    fi
    section record "Consensus" "$WORK/consensus.log" 40
  else
    fail_line "consensus: **FAIL** (no recording was written)"
  fi
  step_end
fi

if want drills; then
  step_begin drills "injection drills ($DRILLS)"
  python3 "$ROOT/scripts/gpu-drills.py" --sdcscreen "$BIN" --patterns "$PATTERNS" --count "$DRILLS" \
    --json "$WORK/drills.json" >"$WORK/drills.log" 2>&1
  rc=$?
  check "injection drills: $(tail -n 1 "$WORK/drills.log") (\`$BASE-drills.json\`)" $rc
  section drills Drills "$WORK/drills.log"
  step_end
fi

if want bench; then
  step_begin bench "benchmark"
  REPS=20
  [ $QUICK = 1 ] && REPS=5
  if [ -f "$BUILD/bench_gpu" ] && [ -x "$BUILD/bench_gpu" ]; then
    "$BUILD/bench_gpu" --patterns "$PATTERNS" --reps "$REPS" --json "$WORK/bench.json" >"$WORK/bench.log" 2>&1
    rc=$?
    check "benchmark ran and validated before timing (\`$BASE-bench.json\`)" $rc
    [ -f "$WORK/bench.json" ] || fail_line "benchmark: no JSON written: **FAIL**"
    section bench Benchmark "$WORK/bench.log"
  else
    fail_line "benchmark: **not built** (no bench_gpu: cuBLAS not found at build time): **FAIL**"
  fi
  step_end
fi

trap '' INT TERM HUP  # the steps are over: the record is written whatever comes
finish
exit $STATUS

# Sourced by scripts/gpu-first-light.sh (and shipped beside it in the GPU bundle), never run on its own: the
# summary and the archive, each step's bookkeeping (its result line, its checks, the deadline), commands under
# the step's cap, and the functions over the reports. It reads and sets the variables of the script that sources
# it (OUTDIR, WORK, SUMMARY, ARCHIVE, T_END, BIN, BACKEND, ...).
# shellcheck shell=bash

# ---- the summary, the archive ------------------------------------------------------------------------------
COUNT_PASS=0 COUNT_FAIL=0 COUNT_PART=0 COUNT_DEADLINE=0
declare -A DONE=()
say_line() {  # appends one line to summary.txt (and stderr); a summary that cannot be written ends the run
  printf '%s\n' "$1" >>"$SUMMARY" || { echo "gpu-first-light: cannot append to $SUMMARY" >&2; exit 73; }
  printf '%s\n' "$1" >&2
}
shrink() {  # a file over 4 MiB keeps its first and last 2 MiB: the archive stays far under 16 MiB
  local f
  find "$1" -type f -size +4M 2>/dev/null | while read -r f; do
    { head -c 2097152 "$f"; printf '\n[... %s bytes cut by gpu-first-light ...]\n' "$(stat -c %s "$f")"; tail -c 2097152 "$f"; } \
      >"$f.cut" && mv -f "$f.cut" "$f"
  done
}
archive() {
  cp -f "$SUMMARY" "$WORK/summary.txt" 2>/dev/null
  tar -czf "$ARCHIVE.tmp" -C "$WORK" . 2>/dev/null && mv -f "$ARCHIVE.tmp" "$ARCHIVE" ||
    { rm -f "$ARCHIVE.tmp"; echo "gpu-first-light: cannot write $ARCHIVE" >&2; ARCHIVE_FAILED=1; }
}
ARCHIVE_FAILED=0

# A step: step_begin N; checks (ok/bad/part lines into its DETAIL); step_end.
CUR="" CUR_DIR="" CUR_T0=0 CUR_END=0 ST_FAIL=0 ST_PART=0 ST_OK=0 DETAIL=()
step_begin() {
  CUR=$1; CUR_T0=$(date +%s); ST_FAIL=0; ST_PART=0; ST_OK=0; DETAIL=()
  local cap=${CAPS[$1]} left=$((T_END - RESERVE - CUR_T0))
  [ "$cap" -gt "$left" ] && cap=$left
  CUR_END=$((CUR_T0 + cap))
  CUR_DIR="$WORK/$1-${NAMES[$1]}"
  rm -rf "$CUR_DIR"; mkdir -p "$CUR_DIR"
  echo "== $1 ${NAMES[$1]} (cap ${cap} s, ${left} s left)" >&2
}
ok() { ST_OK=1; DETAIL+=("$*"); }
bad() { ST_FAIL=1; DETAIL+=("FAIL: $*"); }
part() { ST_PART=1; DETAIL+=("not available: $*"); }
step_end() {  # step_end [STATUS]: pass/FAIL/incomplete from the checks, or the status given (n/a)
  local st=${1:-} secs=$(( $(date +%s) - CUR_T0 )) d x
  if [ -z "$st" ]; then
    if [ $ST_FAIL = 1 ]; then st=FAIL
    elif [ $ST_OK = 0 ]; then st=FAIL; DETAIL+=("FAIL: no check recorded"); ST_FAIL=1
    elif [ $ST_PART = 1 ]; then st=incomplete
    else st=pass; fi
  fi
  d=""
  for x in "${DETAIL[@]}"; do d="$d${d:+; }$x"; done
  d=$(printf '%s' "$d" | tr '\n\t' '  ')
  case $st in
    pass) COUNT_PASS=$((COUNT_PASS + 1)) ;;
    FAIL) COUNT_FAIL=$((COUNT_FAIL + 1)) ;;
    *) COUNT_PART=$((COUNT_PART + 1)) ;;
  esac
  shrink "$CUR_DIR"
  say_line "$CUR ${NAMES[$CUR]} $st $secs ${d}${EMU_NOTE}"
  DONE[$CUR]=1
  CUR=""
  archive
}
not_run() {  # not_run N WHY
  say_line "$1 ${NAMES[$1]} not-run 0 $2${EMU_NOTE}"
  DONE[$1]=1
}

# ---- commands under the step's cap, in the background so that a signal is handled at once -------------------
CHILD=""
run_capped() {  # run_capped LOG CMD...: runs CMD until the step's end (never past the deadline); its exit code
  local log=$1 cap=$((CUR_END - $(date +%s))); shift
  if [ $cap -lt 1 ]; then echo "gpu-first-light: no time left in the step's cap" >>"$log"; return 124; fi
  timeout -k 5 "$cap" "$@" >>"$log" 2>&1 &
  CHILD=$!
  wait $CHILD
  local rc=$?
  CHILD=""
  return $rc
}
stop_child() {
  [ -n "$CHILD" ] || return 0
  kill -TERM "$CHILD" 2>/dev/null
  local i
  for i in $(seq 50); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$CHILD" 2>/dev/null
  kill -KILL -- "-$CHILD" 2>/dev/null  # timeout leads its own process group
  wait "$CHILD" 2>/dev/null
  CHILD=""
}

finish() {  # finish CODE: the steps asked for that did not run, the end line, the archive; exit CODE
  local code=$1 why=$2 n
  for n in "${SELECTED[@]}"; do [ -n "${DONE[$n]:-}" ] || not_run "$n" "$why"; done
  say_line "# end: exit $code after $(( $(date +%s) - T0 )) s: $COUNT_PASS pass, $COUNT_FAIL FAIL, $COUNT_PART n/a or incomplete or skipped${EMU_NOTE}"
  archive
  rm -rf "$WORK"
  [ $ARCHIVE_FAILED = 1 ] && [ "$code" -lt 64 ] && code=73
  exit "$code"
}
on_signal() {  # the step running is a FAIL, every other step asked for not run, the archive written
  trap '' INT TERM HUP
  stop_child
  if [ -n "$CUR" ]; then bad "interrupted by SIG$1 during this step"; step_end; fi
  finish $((128 + $2)) "interrupted by SIG$1 before this step"
}
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

# ---- helpers over the reports ------------------------------------------------------------------------------
# report_line JSON: "result (reason)" of the report's one test, or why there is none
report_test() {
  python3 - "$1" <<'EOF' 2>/dev/null || echo "no report"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["tests"]
if len(t) != 1:
    print(f"{len(t)} tests in the report"); sys.exit()
print(t[0]["result"] + (f" ({t[0]['reason']})" if t[0].get("reason") else ""))
EOF
}
in_boot() {  # in_boot CASE: the case exists and is in the boot profile (0-env/list.json)
  python3 - "$WORK/0-env/list.json" "$1" <<'EOF' 2>/dev/null
import json, sys
cases = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}
c = cases.get(sys.argv[2])
sys.exit(0 if c and "boot" in c["iterations"] else 1)
EOF
}
listing() {  # the case listing, made in step 0 and again by any step that needs it
  [ -s "$WORK/0-env/list.json" ] && return 0
  mkdir -p "$WORK/0-env"
  "$BIN" list --patterns "$PATTERNS" --output-format json >"$WORK/0-env/list.json" 2>"$WORK/0-env/list.err"
}
screen() {  # screen LOG ARGS...: sdcscreen run on the device under the step's cap
  local log=$1; shift
  run_capped "$log" "$BIN" run --backend "$BACKEND" --devices "$DEVICE" --patterns "$PATTERNS" --force "$@"
}

{
  echo "# gpu-first-light: started $(date -u +%Y-%m-%dT%H:%M:%SZ), deadline $DEADLINE s, steps $(IFS=,; echo "${SELECTED[*]}"), device $DEVICE${EMU_NOTE}"
} >>"$SUMMARY" || { echo "gpu-first-light: cannot write $SUMMARY" >&2; exit 73; }
archive
GPU_CC=""

"""The GPU runbook's scripts on a machine without a GPU: scripts/gpu-validate.sh against a fake build folder
whose sdcscreen, gpu_tests and bench_gpu are stubs (the stub sdcscreen lists one GPU in `info`, answers
`--version`, `list`, `run` (clean runs and drills, with a JSON report), `record` and `consensus`), then
scripts/gpu-merge-records.py on its partial records, and scripts/gpu-drills.py's choice of SM ids.

Checked: the record is named after the GPU (`h100-80gb-hbm3`, not `gpu`); a failing `record` makes the
record say FAIL and the script exit 1, as does a missing gpu_tests, a failing GPU test and an interrupted
step; a clean run says pass and exits 0; gpu_tests is found under tests/ too; bad arguments exit 64 and
--help 0 from anywhere; partial records (--steps) merge into one record with every step, a step no record
ran is listed as not run and the merge is not a pass; the merge refuses records of two GPUs, a step run
twice (unless --prefer-last) and a file that is not a record; the drills take SM ids from the units that
computed tiles in a clean run (ids that are not 0..SMs-1). Needs neither the build nor a GPU.
"""
import glob
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failures import Failures  # noqa: E402  (common.py needs the built binary; these stubs stand in for it)
import time

SOURCE_DIR = os.environ.get("SDC_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
VALIDATE = os.path.join(SOURCE_DIR, "scripts", "gpu-validate.sh")
MERGE = os.path.join(SOURCE_DIR, "scripts", "gpu-merge-records.py")
DRILLS = os.path.join(SOURCE_DIR, "scripts", "gpu-drills.py")
TMP = tempfile.mkdtemp(prefix="sdcs-gpu-scripts-")

H100 = "NVIDIA H100 80GB HBM3"
H100_UUID = "GPU-8f3c2a1e-0b7d-4c55-9e21-3f6a7d8c9b01"
# The stub GPU's SMs: 8 compute tiles, with ids that are not 0..7 (%nsmid 12, ids 4..7 unused).
SM_IDS = [0, 1, 2, 3, 8, 9, 10, 11]


F = Failures("test_gpu_scripts")

STUB_SDCSCREEN = r'''#!PYTHON
"""A stand-in for sdcscreen on a GPU node: STUB_GPU, STUB_UUID name the GPU; STUB_RECORD_RC is record's
exit code; STUB_RUN_SLEEP makes run sleep; every call is logged to STUB_LOG."""
import json, os, sys, time
E = os.environ
GPU, UUID = E.get("STUB_GPU", "NVIDIA H100 80GB HBM3"), E.get("STUB_UUID", "GPU-stub")
SM_IDS = SM_IDS_HERE
args = sys.argv[1:]
with open(E["STUB_LOG"], "a") as f:
    f.write("sdcscreen " + " ".join(args) + "\n")
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
if args[:1] == ["--version"]:
    print("sdcscreen 9.9.9 (stubgit)"); sys.exit(0)
cmd = args[0] if args else ""
if cmd == "info":
    print("sdcscreen 9.9.9 (stubgit)\nhost:     stubhost\ncpu:      stub cpu")
    print(f"gpu:      cuda:0 {GPU}  {UUID}  00000000:19:00.0  cc 9.0  8 SMs  81559 MiB  ECC on  driver 580.65 (CUDA 13.0)  runtime 13.0")
    print("patterns: /stub/patterns"); sys.exit(0)
# STUB_FAMILIES: the families listed, in order (default gemm_f32); gemm_fp8_exactint is not applicable on this
# GPU (as on one before compute capability 8.9): its runs are skipped with the GPU executor's reason.
FAMILIES = E.get("STUB_FAMILIES", "gemm_f32").split(",")
if cmd == "list":
    cases = [{"id": f"{f}.stub_512", "family": f, "mode": "exact", "iterations": {"boot": 2},
              "geometry": {"output_elements": 65536, "tile_count": 64, "tile_elements": 1024,
                           "elements": [{"element": 5, "tile": 0, "offset": 5}, {"element": 2048, "tile": 2, "offset": 0}]}}
             for f in FAMILIES]
    print(json.dumps({"families": [{"id": f, "backends": ["cpu", "cuda"], "device_side": "kernel"} for f in FAMILIES],
                      "cases": cases})); sys.exit(0)
if cmd == "run" and opt("--enable", "").startswith("gemm_fp8_exactint."):
    with open(opt("-o"), "w") as f:
        json.dump({"devices": [{"index": 0}], "units": [], "injections": [{"fired": False}],
                   "tests": [{"id": opt("--enable"), "result": "skip",
                              "reason": "not applicable: fp8 tensor cores need compute capability 8.9 or newer"}]}, f)
    sys.exit(0)
if cmd == "run":
    time.sleep(float(E.get("STUB_RUN_SLEEP", "0")))
    spec = dict(kv.split("=", 1) for kv in opt("--inject").split(",")) if "--inject" in args else None
    units = [{"kind": "sm", "gpu": 0, "sm": s, "tiles": (8 if s in SM_IDS else 0), "failed_tiles": 0,
              "result": "pass" if s in SM_IDS else "idle"} for s in range(12)]
    rep = {"devices": [{"index": 0, "kind": "cuda", "name": GPU, "uuid": UUID, "sm_count": 8}], "units": units,
           "summary": {"tests": 1, "pass": 1, "fail": 0, "error": 0, "skip": 0, "crash": 0}, "injections": [],
           "tests": [{"id": opt("--enable", "all"), "result": "pass", "failed_tiles": 0, "miscompared_elements": 0,
                      "miscompares": [], "units_failed": []}]}
    code = 0
    if spec:
        element = int(spec["element"])
        count = int(spec.get("count", "1"))  # a cluster: count words from the element's, in its tile
        tile = element // 1024
        sm = int(spec["unit"]) if "unit" in spec else SM_IDS[tile % len(SM_IDS)]
        fired = sm in SM_IDS
        mask = spec["mask"] if "mask" in spec else f"0x{1 << int(spec['bit']):08x}"
        rep["injections"] = [{"fired": fired, "unit": sm, "fired_unit": sm}]
        if fired:
            rep["tests"][0].update(result="fail", failed_tiles=1, miscompared_elements=count, units_failed=[sm],
                                   miscompares=[{"tile": tile, "element": element + k, "xor_mask": mask,
                                                 "unit": {"kind": "sm", "gpu": 0, "sm": sm}} for k in range(count)])
            code = 1
    if opt("-o"):
        with open(opt("-o"), "w") as f:
            json.dump(rep, f)
    sys.exit(code)
if cmd == "record":
    d = opt("-o"); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"stubhost-{UUID}.json"), "w") as f:
        f.write("{}\n")
    print(f"cuda:0: wrote {d}/stubhost-{UUID}.json (3 cases)")
    rc = int(E.get("STUB_RECORD_RC", "0"))
    if rc:
        print("cuda:1: disagrees with the node's majority on gemm_bf16.uniform_1024x1024x1024: not written")
    sys.exit(rc)
if cmd == "consensus":
    print("gemm_bf16.uniform_1024x1024x1024 sm_90: accepted (1 device, provisional)"); sys.exit(0)
sys.exit(64)
'''

STUB_GPU_TESTS = r'''#!/bin/sh
echo "gpu_tests $0 $*" >>"$STUB_LOG"
echo "device cuda:0 stub"
echo "cublasLt algorithms checked: 12 over 3 cases, 0 mismatched"
exit "${STUB_GPU_TESTS_RC:-0}"
'''

STUB_BENCH = r'''#!/bin/sh
echo "bench_gpu $*" >>"$STUB_LOG"
while [ $# -gt 0 ]; do [ "$1" = --json ] && echo '{"stub": true}' >"$2"; shift; done
echo "gemm_f32 vs SGEMM: 0.90 (stub)"
'''


def write_exe(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def fake_build(name, gpu_tests_at="gpu_tests"):
    """A build folder with the stubs; gpu_tests at the path given (None: none)."""
    d = os.path.join(TMP, name)
    write_exe(os.path.join(d, "sdcscreen"),
              STUB_SDCSCREEN.replace("PYTHON", sys.executable).replace("SM_IDS_HERE", repr(SM_IDS)))
    if gpu_tests_at:
        write_exe(os.path.join(d, gpu_tests_at), STUB_GPU_TESTS)
    write_exe(os.path.join(d, "bench_gpu"), STUB_BENCH)
    return d


def runp(cmd, timeout=60, **kw):
    """subprocess.run, text mode; a command that times out is killed and reads as exit code None."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, None, e.stdout or "", f"timed out after {timeout} s")


def validate(build, out, *args, env=None, cwd=None, timeout=60):
    e = dict(os.environ, STUB_LOG=os.path.join(TMP, "calls.log"), STUB_UUID=H100_UUID)
    e.update(env or {})
    return runp(["bash", VALIDATE, "--build-dir", build, "--out", out, *args], env=e, cwd=cwd or TMP, timeout=timeout)


def merge(*args):
    return runp([sys.executable, MERGE, *args])


def records(out):
    return sorted(glob.glob(os.path.join(out, "*.md")))


def read(path):
    with open(path) as f:
        return f.read()


def step_status(text, step):
    m = re.search(rf"^<!-- step: {step} status: (\S+)", text, re.M)
    return m.group(1) if m else None


def overall(text):
    m = re.search(r"^Overall: (.*)$", text, re.M)
    return m.group(1) if m else ""


def calls():
    p = os.path.join(TMP, "calls.log")
    return read(p) if os.path.exists(p) else ""


DATED = r"\d{4}-\d{2}-\d{2}-"
SLUG = "h100-80gb-hbm3"

try:
    build = fake_build("build")

    # --- --help and bad arguments ---------------------------------------------------------------------
    print("-- --help and bad arguments", flush=True)
    p = runp(["bash", VALIDATE, "--help"], cwd=TMP, timeout=30)
    F.check(p.returncode == 0 and "--steps LIST" in p.stdout and "--drills N" in p.stdout and "Exit:" in p.stdout,
            f"--help from another folder: exit {p.returncode}, {p.stdout[:200]!r} {p.stderr[:200]!r}")
    p = runp(["bash", "./gpu-validate.sh", "-h"], cwd=os.path.dirname(VALIDATE), timeout=30)
    F.check(p.returncode == 0 and "--steps LIST" in p.stdout, f"-h from scripts/: exit {p.returncode}")
    for bad in (["--drills"], ["--drills", "abc"], ["--drills", "0"], ["--drills=12x"], ["--steps", "tests,nope"],
                ["--steps", ","], ["--steps"], ["--bogus"], ["--out", "--quick"]):
        # (--out first: a script that took a bad argument for a good one writes nowhere near the source tree)
        p = validate(build, os.path.join(TMP, "out-bad-args"), *bad, timeout=30)
        err = p.stderr.strip()
        F.check(p.returncode == 64 and len(err.splitlines()) == 1 and err.startswith("gpu-validate:")
                and "unbound" not in err, f"{bad}: exit {p.returncode}, want 64 with one line; stderr {err[:300]!r}")
    p = validate(os.path.join(TMP, "nonexistent"), os.path.join(TMP, "out-bad-args"), timeout=30)
    F.check(p.returncode == 64, f"--build-dir of a missing folder: exit {p.returncode}, want 64")

    # --- a full run that passes -----------------------------------------------------------------------
    print("-- a full run that passes", flush=True)
    out = os.path.join(TMP, "out-pass")
    p = validate(build, out, "--drills", "6")
    recs = records(out)
    F.check(p.returncode == 0, f"clean run: exit {p.returncode}, want 0; stderr {p.stderr[-800:]}")
    F.check(len(recs) == 1 and re.fullmatch(DATED + SLUG + r"\.md", os.path.basename(recs[0]) if recs else ""),
            f"clean run: record file {[os.path.basename(r) for r in recs]}, want <date>-{SLUG}.md")
    text = read(recs[0]) if recs else ""
    F.check(overall(text) == "pass" and "**FAIL**" not in text, f"clean run: overall {overall(text)!r}")
    F.check(all(step_status(text, s) == "pass" for s in ("tests", "profile", "boot", "record", "drills", "bench")),
            f"clean run: step statuses {[step_status(text, s) for s in ('tests', 'profile', 'boot', 'record', 'drills', 'bench')]}")
    F.check(text.startswith(f"# GPU validation, ") and text.split("\n")[0].endswith(H100),
            f"clean run: title {text.split(chr(10))[0]!r}")
    F.check("host:     stubhost" not in text and "/stub/patterns" not in text and tempfile.gettempdir() + "/" not in text,
            "clean run: the record carries the host line, the patterns path or a temporary path of this machine")
    F.check(f"\"uuids\": [\"{H100_UUID}\"]" in text, "clean run: the record's metadata does not carry the GPU's UUID")
    F.check("sdcscreen 9.9.9 (stubgit)" in text, "clean run: the record does not name the build (sdcscreen --version)")
    base = os.path.basename(recs[0])[:-3] if recs else "none"
    for comp in (f"{base}-standard.json", f"{base}-drills.json", f"{base}-bench.json",
                 f"{base}-recordings/stubhost-{H100_UUID}.json"):
        F.check(os.path.exists(os.path.join(out, comp)), f"clean run: no {comp} beside the record")
    drills = {}
    if os.path.exists(os.path.join(out, f"{base}-drills.json")):
        drills = json.loads(read(os.path.join(out, f"{base}-drills.json")))
    F.check(drills.get("sm_ids") == SM_IDS, f"drills: SM ids {drills.get('sm_ids')}, want the ones that computed tiles {SM_IDS}")
    units = [int(u) for u in re.findall(r",unit=(\d+)", calls())]
    F.check(bool(units) and all(u in SM_IDS for u in units),
            f"drills: SM drills on {units}, want some, every one of {SM_IDS}")
    F.check(" 6 drills " in text and ": 6 detected and localized, 0 not" in text,
            "clean run: the drills' summary is not in the record")

    # --- a failing record: FAIL and exit 1 (the old script read grep's status instead of record's) ----
    print("-- a failing record: FAIL and exit 1 (the old script read grep's status instead of record's)", flush=True)
    out_rf = os.path.join(TMP, "out-record-fail")
    p = validate(build, out_rf, "--steps", "record", env={"STUB_RECORD_RC": "1"})
    recs = records(out_rf)
    text = read(recs[0]) if recs else ""
    F.check(p.returncode == 1, f"failing record: exit {p.returncode}, want 1")
    F.check(bool(recs) and overall(text).startswith("FAIL") and re.search(r"^- record: .*\*\*FAIL\*\* \(exit 1\)", text, re.M),
            f"failing record: the record says {overall(text)!r}, want FAIL with the record line failed")
    F.check(step_status(text, "record") == "FAIL", f"failing record: step status {step_status(text, 'record')}")
    F.check(bool(recs) and os.path.basename(recs[0]).endswith(f"-{SLUG}-record.md"),
            f"failing record: partial record named {[os.path.basename(r) for r in recs]}")

    # --- a failing GPU test, a missing gpu_tests, gpu_tests under tests/ ------------------------------
    print("-- a failing GPU test, a missing gpu_tests, gpu_tests under tests/", flush=True)
    out_tf = os.path.join(TMP, "out-tests-fail")
    p = validate(build, out_tf, "--steps", "tests", env={"STUB_GPU_TESTS_RC": "1"})
    text = read(records(out_tf)[0]) if records(out_tf) else ""
    F.check(p.returncode == 1 and overall(text).startswith("FAIL"), f"failing gpu_tests: exit {p.returncode}, {overall(text)!r}")
    nobin = fake_build("build-no-gpu-tests", gpu_tests_at=None)
    out_nb = os.path.join(TMP, "out-no-gpu-tests")
    p = validate(nobin, out_nb, "--steps", "tests")
    text = read(records(out_nb)[0]) if records(out_nb) else ""
    F.check(p.returncode == 1 and overall(text).startswith("FAIL") and "no gpu_tests" in text,
            f"no gpu_tests: exit {p.returncode}, want 1 and a FAIL line in the record; {overall(text)!r}")
    old = fake_build("build-old-layout", gpu_tests_at="tests/gpu_tests")
    out_old = os.path.join(TMP, "out-old-layout")
    p = validate(old, out_old, "--steps", "tests")
    text = read(records(out_old)[0]) if records(out_old) else ""
    F.check(p.returncode == 0 and step_status(text, "tests") == "pass", f"gpu_tests under tests/: exit {p.returncode}, "
            f"tests {step_status(text, 'tests')}")
    F.check(f"gpu_tests {old}/tests/gpu_tests" in calls(), "gpu_tests under tests/ was not the one run")

    # --- interrupted in a step: the record says FAIL, the later steps not run -------------------------
    print("-- interrupted in a step: the record says FAIL, the later steps not run", flush=True)
    out_int = os.path.join(TMP, "out-interrupted")
    int_log = os.path.join(TMP, "calls-interrupted.log")
    e = dict(os.environ, STUB_LOG=int_log, STUB_RUN_SLEEP="30", STUB_UUID=H100_UUID)
    proc = subprocess.Popen(["bash", VALIDATE, "--build-dir", build, "--out", out_int, "--steps", "profile,bench"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, cwd=TMP,
                            start_new_session=True)
    deadline = time.monotonic() + 20  # until the profile's screen has started (and sleeps)
    while time.monotonic() < deadline and "sdcscreen run " not in (read(int_log) if os.path.exists(int_log) else ""):
        time.sleep(0.1)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)  # as timeout(1) does: the script and the screen it waits for
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    text = read(records(out_int)[0]) if records(out_int) else ""
    F.check(proc.returncode == 143, f"interrupted: exit {proc.returncode}, want 143")
    F.check(step_status(text, "profile") == "FAIL" and step_status(text, "bench") == "not-run"
            and overall(text).startswith("FAIL"),
            f"interrupted: profile {step_status(text, 'profile')}, bench {step_status(text, 'bench')}, {overall(text)!r}")

    # --- partial records, merged ----------------------------------------------------------------------
    print("-- partial records, merged", flush=True)
    out_p = os.path.join(TMP, "out-partial")
    for steps in ("tests", "boot,record", "profile,bench"):
        p = validate(build, out_p, "--steps", steps)
        F.check(p.returncode == 0, f"--steps {steps}: exit {p.returncode}; {p.stderr[-500:]}")
    parts = records(out_p)
    names = [os.path.basename(r) for r in parts]
    F.check(len(parts) == 3 and all(re.fullmatch(DATED + SLUG + r"-(tests|boot-record|profile-bench)\.md", n) for n in names),
            f"partial records: {names}")
    t = read(next((r for r in parts if r.endswith("-tests.md")), parts[0])) if parts else ""
    F.check(step_status(t, "profile") == "not-run" and "Partial run: steps **not run** here" in t
            and overall(t).startswith("incomplete"), f"the tests partial: profile {step_status(t, 'profile')}, {overall(t)!r}")
    p = merge(*parts)
    merged = [r for r in records(out_p) if r not in parts]
    text = read(merged[0]) if merged else ""
    F.check(p.returncode == 1 and len(merged) == 1 and re.fullmatch(DATED + SLUG + r"\.md", os.path.basename(merged[0])),
            f"merge without drills: exit {p.returncode} (want 1), new files {merged}; {p.stderr.strip()[:300]}")
    F.check(all(step_status(text, s) == "pass" for s in ("tests", "profile", "boot", "record", "bench"))
            and step_status(text, "drills") == "not-run",
            f"merge: statuses {[step_status(text, s) for s in ('tests', 'profile', 'boot', 'record', 'drills', 'bench')]}")
    F.check(overall(text).startswith("incomplete") and "drills" in overall(text) and "Overall: pass" not in text,
            f"merge without drills: overall {overall(text)!r}")
    F.check(all(n in text for n in names), "merge: the merged record does not name every partial record")
    F.check(text.count("## Device") == 1 and text.count(f"gpu:      cuda:0 {H100}") == 1,
            "merge: the device section is not there exactly once")
    F.check("## GPU tests" in text and "## Record" in text and "## Consensus" in text and "## Benchmark" in text,
            "merge: a step's log section is missing")
    links = re.findall(r"`([^`]+\.json)`", text.split("Files (relative to this record):")[-1].split("\n")[0])
    F.check(any(l.endswith("-standard.json") for l in links) and any(l.endswith("-bench.json") for l in links),
            f"merge: the profile and bench JSON are not referenced: {links}")
    # Merging again: the merged record exists (and is matched by the folder's *.md): refused, then --force.
    p = merge(*records(out_p))
    F.check(p.returncode == 64 and "--force" in p.stderr, f"merge again without --force: exit {p.returncode}, want 64")
    p = merge("--force", *records(out_p))
    F.check(p.returncode == 1 and len(records(out_p)) == 4, f"merge again with --force: exit {p.returncode}, "
            f"{[os.path.basename(r) for r in records(out_p)]}; {p.stderr.strip()[:300]}")
    # All steps: pass, into another folder, the companions referenced from there.
    out_d = os.path.join(TMP, "out-drills")
    p = validate(build, out_d, "--steps", "drills", "--drills", "3")
    F.check(p.returncode == 0, f"--steps drills: exit {p.returncode}; {p.stderr[-500:]}")
    out_m = os.path.join(TMP, "out-merged")
    p = merge("--out", out_m, *parts, *records(out_d))
    mrec = records(out_m)
    text = read(mrec[0]) if mrec else ""
    F.check(p.returncode == 0 and overall(text) == "pass", f"merge of every step: exit {p.returncode}, {overall(text)!r}; "
            f"{p.stderr.strip()[:300]}")
    links = re.findall(r"`([^`]+)`", text.split("Files (relative to this record):")[-1].split("\n")[0])
    F.check(len(links) >= 4 and all(os.path.exists(os.path.join(out_m, l)) for l in links),
            f"merge into another folder: the companions {links} do not resolve from it")
    # A failed step makes the merge FAIL.
    p = merge("--out", os.path.join(TMP, "out-merged-fail"), next(r for r in parts if r.endswith("-tests.md")),
              *records(out_rf))
    text = read(records(os.path.join(TMP, "out-merged-fail"))[0]) if records(os.path.join(TMP, "out-merged-fail")) else ""
    F.check(p.returncode == 1 and overall(text).startswith("FAIL") and step_status(text, "record") == "FAIL",
            f"merge with a failed record step: exit {p.returncode}, {overall(text)!r}")

    # A partial that failed outside its steps (its overall FAIL, every step passed: a companion not copied), and a
    # companion missing now: the merge is no pass. The same records untouched: pass (the checks can fail).
    every = [*parts, *records(out_d)]
    bad_meta = os.path.join(TMP, "outside", os.path.basename(every[0]))
    os.makedirs(os.path.dirname(bad_meta))
    with open(bad_meta, "w") as f:
        f.write(re.sub(r'"overall": "[a-z]+"', '"overall": "FAIL"', read(every[0]), count=1))
    for comp in json.loads(re.search(r"<!-- gpu-validate: (.*) -->", read(every[0])).group(1))["files"]:
        src = os.path.join(os.path.dirname(every[0]), comp)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(TMP, "outside", comp.rstrip("/")))
    p = merge("--out", os.path.join(TMP, "m-outside"), bad_meta, *every[1:])
    text = read(records(os.path.join(TMP, "m-outside"))[0]) if records(os.path.join(TMP, "m-outside")) else ""
    F.check(p.returncode == 1 and overall(text).startswith("FAIL") and "outside its steps" in overall(text),
            f"merge with a record failed outside its steps: exit {p.returncode}, {overall(text)!r}")
    gone = next(os.path.join(out_d, f) for f in os.listdir(out_d) if f.endswith("-drills.json"))
    os.rename(gone, gone + ".away")
    p = merge("--out", os.path.join(TMP, "m-missing"), *every)
    text = read(records(os.path.join(TMP, "m-missing"))[0]) if records(os.path.join(TMP, "m-missing")) else ""
    F.check(p.returncode == 1 and overall(text).startswith("FAIL") and "missing" in overall(text),
            f"merge with a companion missing: exit {p.returncode}, {overall(text)!r}")
    os.rename(gone + ".away", gone)
    # A --quick run's step (boot profile instead of standard) never makes a merged pass.
    out_q = os.path.join(TMP, "out-quick")
    validate(build, out_q, "--steps", "profile", "--quick")
    out_b = os.path.join(TMP, "out-bench")
    validate(build, out_b, "--steps", "bench")
    p = merge("--out", os.path.join(TMP, "m-quick"), *[r for r in every if not r.endswith("-profile-bench.md")],
              *records(out_q), *records(out_b))
    text = read(records(os.path.join(TMP, "m-quick"))[0]) if records(os.path.join(TMP, "m-quick")) else ""
    F.check(p.returncode == 1 and overall(text).startswith("incomplete") and "--quick run: profile" in overall(text),
            f"merge with a --quick profile step: exit {p.returncode}, {overall(text)!r}")

    # --- the merge refuses ----------------------------------------------------------------------------
    print("-- the merge refuses", flush=True)
    out_a = os.path.join(TMP, "out-a100")
    p = validate(build, out_a, "--steps", "profile", env={"STUB_GPU": "NVIDIA A100-SXM4-80GB", "STUB_UUID": "GPU-other"})
    a100 = records(out_a)
    F.check(bool(a100) and os.path.basename(a100[0]).endswith("-a100-sxm4-80gb-profile.md"), f"A100 record: {a100}")
    p = merge("--out", os.path.join(TMP, "m1"), parts[0], *a100)
    F.check(p.returncode == 78 and "different GPUs" in p.stderr and len(p.stderr.strip().splitlines()) == 1
            and not records(os.path.join(TMP, "m1")), f"two GPUs: exit {p.returncode}, {p.stderr.strip()[:300]}")
    # the same name, another UUID
    other = os.path.join(TMP, "other-uuid-tests.md")
    tests_part = next(r for r in parts if r.endswith("-tests.md"))
    with open(other, "w") as f:
        f.write(read(tests_part).replace(H100_UUID, "GPU-another"))
    p = merge("--out", os.path.join(TMP, "m2"), next(r for r in parts if r.endswith("-profile-bench.md")), other)
    F.check(p.returncode == 78 and "different GPUs" in p.stderr, f"two UUIDs: exit {p.returncode}, {p.stderr.strip()[:300]}")
    # a step run twice; --prefer-last takes it
    twice = os.path.join(TMP, "twice-tests.md")
    shutil.copy(tests_part, twice)
    p = merge("--out", os.path.join(TMP, "m3"), tests_part, twice)
    F.check(p.returncode == 78 and "ran in both" in p.stderr, f"a step twice: exit {p.returncode}, {p.stderr.strip()[:300]}")
    p = merge("--out", os.path.join(TMP, "m4"), "--prefer-last", tests_part, twice)
    F.check(p.returncode == 1 and records(os.path.join(TMP, "m4")), f"--prefer-last: exit {p.returncode}, {p.stderr.strip()[:300]}")
    # not a record; no record; a missing file
    junk = os.path.join(TMP, "junk.md")
    with open(junk, "w") as f:
        f.write("# notes\n\nOverall: pass\n")
    p = merge("--out", os.path.join(TMP, "m5"), tests_part, junk)
    F.check(p.returncode == 78 and "not a record" in p.stderr, f"not a record: exit {p.returncode}, {p.stderr.strip()[:300]}")
    p = merge()
    F.check(p.returncode == 64, f"merge with no record: exit {p.returncode}, want 64")
    p = merge(os.path.join(TMP, "missing.md"))
    F.check(p.returncode == 64, f"merge of a missing file: exit {p.returncode}, want 64")

    # --- gpu-drills.py: SM ids from the units that computed tiles -------------------------------------
    print("-- gpu-drills.py: SM ids from the units that computed tiles", flush=True)
    spec = importlib.util.spec_from_file_location("gpu_drills", DRILLS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = {"units": [{"kind": "sm", "gpu": 0, "sm": s, "tiles": t, "failed_tiles": 0, "result": "pass" if t else "idle"}
                        for s, t in ((0, 4), (1, 0), (2, 4), (5, 1), (130, 2), (131, 0))]
              # GPU 1's SM in a report of schema_version 14, which named the GPU "device"
              + [{"kind": "sm", "device": 1, "sm": 7, "tiles": 3, "failed_tiles": 0, "result": "pass"},
                 {"kind": "cpu", "cpu": 3, "core": 3, "package": 0, "tiles": 9, "failed_tiles": 0, "result": "pass"}]}
    F.check(mod.device_sm_ids(report, 0) == [0, 2, 5, 130], f"device_sm_ids(device 0): {mod.device_sm_ids(report, 0)}")
    F.check(mod.device_sm_ids(report, 1) == [7], f"device_sm_ids(device 1): {mod.device_sm_ids(report, 1)}")
    F.check(mod.device_sm_ids({"units": []}, 0) == [], "device_sm_ids of a report without units")

    # A family this GPU cannot run (fp8 before 8.9) leaves the draw, is named in the JSON and costs no drill; with
    # nothing else to drill, no drill runs: a failure, never a pass.
    print("-- gpu-drills.py: a family not applicable on the GPU", flush=True)
    drills_env = dict(os.environ, STUB_LOG=os.path.join(TMP, "calls.log"))
    dj = os.path.join(TMP, "na-drills.json")
    p = runp([sys.executable, DRILLS, "--sdcscreen", os.path.join(build, "sdcscreen"), "--count", "4",
              "--replay-drills", "0", "--json", dj], env=dict(drills_env, STUB_FAMILIES="gemm_fp8_exactint,gemm_f32"))
    na = json.loads(read(dj)) if os.path.exists(dj) else {}
    F.check(p.returncode == 0 and "4 detected and localized, 0 not" in p.stdout and
            na.get("not_applicable") == ["gemm_fp8_exactint"] and
            [d["family"] for d in na.get("drills", [])] == ["gemm_f32"] * 4,
            f"drills with fp8 not applicable: exit {p.returncode}, {na.get('not_applicable')}: {p.stdout[-400:]} {p.stderr[-400:]}")
    p = runp([sys.executable, DRILLS, "--sdcscreen", os.path.join(build, "sdcscreen"), "--count", "3",
              "--replay-drills", "0"], env=dict(drills_env, STUB_FAMILIES="gemm_fp8_exactint"))
    F.check(p.returncode == 1 and "no drilled family runs on cuda:0" in p.stderr,
            f"drills with every family not applicable: exit {p.returncode} (want 1): {p.stdout[-300:]} {p.stderr[-300:]}")
finally:
    shutil.rmtree(TMP, ignore_errors=True)
F.finish()

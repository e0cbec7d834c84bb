"""Shared helpers of the end-to-end tests: where the binary and the source tree are, and one way to run it."""
import ctypes
import ctypes.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failures import Failures  # noqa: E402,F401  (the tests use common.Failures)

SDCSCREEN = os.environ.get("SDCSCREEN", "")
SOURCE_DIR = os.environ.get("SDC_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
PATTERNS = os.path.join(SOURCE_DIR, "patterns")
SCHEMA = os.path.join(SOURCE_DIR, "docs", "report.schema.json")

if not SDCSCREEN or not os.access(SDCSCREEN, os.X_OK):
    sys.exit("set SDCSCREEN to the sdcscreen binary (ctest does)")


# Each test process screens under its own lock file, so that tests running in parallel do not refuse
# each other (the node-wide lock is exercised on purpose in test_fail_closed.py).
LOCK_FILE = os.path.join(tempfile.gettempdir(), f"sdcscreen-test-{os.getpid()}.lock")


# The lines of a history directory's history.jsonl, parsed; [] when there is none.
def history_lines(d):
    path = os.path.join(d, "history.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# The throughput probe after the battery takes about a tenth of a second of both CPUs a run (more under a
# sanitizer, and a repeat when a loaded machine makes a unit look slow): most of e2e_injection's time once. A test's
# runs skip it (--no-probe) unless the test is about what the probe measures or shows (KEEP_PROBE = True before
# its first run: test_slow, test_deadline, test_html, test_report_schema, test_alert_rules) or the run itself asks
# for it (--fail-slow, --throughput-floor). Runs started without run() or run_json() keep it, as a node's do.
KEEP_PROBE = False
PROBE_OPTIONS = ("--no-probe", "--fail-slow", "--throughput-floor")


def with_lock(args):
    """A run's arguments with the tests' lock file, and --no-probe where the test does not need the probe."""
    args = list(args)
    if args and args[0] == "run" and "--lock-file" not in args and "--force" not in args:
        args[1:1] = ["--lock-file", LOCK_FILE]
    if args and args[0] == "run" and not KEEP_PROBE and not any(a in PROBE_OPTIONS for a in args):
        args[1:1] = ["--no-probe"]
    return args


_VALIDATOR = []


def report_validator():
    """The validator of docs/report.schema.json (draft 2020-12; python3-jsonschema, which the setup installs)."""
    if not _VALIDATOR:
        try:
            import jsonschema
        except ImportError:
            sys.exit("python3-jsonschema is required (apt-get install python3-jsonschema)")
        with open(SCHEMA) as f:
            _VALIDATOR.append(jsonschema.Draft202012Validator(json.load(f)))
    return _VALIDATOR[0]


def schema_errors(report):
    """Where report breaks the schema: the first three messages with their paths ([] when it validates)."""
    return [f"{e.message} at {list(e.absolute_path)}" for e in report_validator().iter_errors(report)][:3]


def start_until(args, marker, stdout=subprocess.DEVNULL):
    """Starts sdcscreen with args in a process group of its own and reads its stderr up to the first line that
    holds marker; returns the process and what stderr said so far."""
    p = subprocess.Popen([SDCSCREEN, *with_lock(args)], stdout=stdout, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    seen = ""
    for line in p.stderr:
        seen += line
        if marker in line:
            break
    return p, seen


def run(*args, timeout=600):
    """Runs sdcscreen with args; returns the CompletedProcess (text mode). With SDC_TEST_TRACE=1 in the environment
    each run's seconds and arguments go to stderr (where a test's time goes)."""
    t0 = time.time()
    p = subprocess.run([SDCSCREEN, *with_lock(args)], capture_output=True, text=True, timeout=timeout)
    if os.environ.get("SDC_TEST_TRACE") == "1":
        print(f"[trace] {time.time() - t0:7.2f} s  exit {p.returncode}  {' '.join(map(str, args))}", file=sys.stderr,
              flush=True)
    return p


def run_json(*args, timeout=600):
    """Runs 'sdcscreen run ... --output-format json -o FILE -q'; returns (exit code, report dict, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.json")
        p = run("run", *args, "--output-format", "json", "-o", out, "-q", timeout=timeout)
        report = None
        if os.path.exists(out):
            with open(out) as f:
                report = json.load(f)
        return p.returncode, report, p.stderr


def healthcheck_dry_run(screen_args, timeout=300, env=None):
    """Runs deploy/slurm/sdcscreen-healthcheck as slurmd would on node n1, in service (a stub scontrol says
    IDLE), as a dry run (the scontrol updates are logged, not made) with SDCSCREEN_ARGS=screen_args (its own
    lock file is added) and the settings in env (SDCSCREEN_TIMEOUT...); returns the CompletedProcess: the drain
    reason is in its stderr."""
    with tempfile.TemporaryDirectory() as d:
        scontrol = os.path.join(d, "scontrol")
        with open(scontrol, "w") as f:
            f.write("#!/bin/sh\nif [ \"$1\" = show ]; then echo \"NodeName=n1 State=IDLE\"; echo \"   Reason=(null)\"; fi\n")
        os.chmod(scontrol, 0o700)
        env = dict(os.environ, SDCSCREEN=SDCSCREEN, SCONTROL=scontrol, SDCSCREEN_DRY_RUN="1",
                   SDCSCREEN_STATE_DIR=os.path.join(d, "state"), SLURMD_NODENAME="n1",
                   SDCSCREEN_ARGS=f"{screen_args} --lock-file {os.path.join(d, 'lock')}", **(env or {}))
        return subprocess.run(["bash", os.path.join(SOURCE_DIR, "deploy", "slurm", "sdcscreen-healthcheck")],
                              capture_output=True, text=True, timeout=timeout, env=env)


def listing(*args):
    """'sdcscreen list --output-format json' (docs/families.md): the families, and every case with its geometry."""
    p = subprocess.run([SDCSCREEN, "list", "--output-format", "json", *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"sdcscreen list --output-format json: exit {p.returncode} ({p.stderr.strip()[:500]})")
    return json.loads(p.stdout)


def list_sections(text):
    """The text listing ('sdcscreen list') by section: {heading without its colon: [its non-blank lines]}."""
    sections, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
        elif current and line.strip():
            sections[current].append(line)
    return sections


def npd_config(failures):
    """deploy/k8s/npd-sdcscreen.json, the node-problem-detector plugin config; {} (and a failed check) when it
    cannot be read."""
    path = os.path.join(SOURCE_DIR, "deploy", "k8s", "npd-sdcscreen.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        failures.check(False, f"npd: {path}: {e}")
        return {}


def two_cpus(failures, why):
    """This process's two lowest CPUs; with fewer than two, prints a skip that says why two are needed and
    ends the test (failures.finish())."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print(f"SKIP: needs two CPUs ({why})")
        failures.finish()
    return cpus[0], cpus[1]


def table_lines():
    """(kind, family id) of each family line of the family table (kernels/families.def), in its order. A
    tensor-core GEMM line (SDC_GEMM_EXACTINT or SDC_GEMM_RECORDED: id, engine, format) reads as the kind its
    engine makes it: mma as SDC_FAMILY, cublaslt as SDC_FAMILY_LIBRARY."""
    engine_kind = {"mma": "SDC_FAMILY", "cublaslt": "SDC_FAMILY_LIBRARY"}
    lines = []
    with open(os.path.join(SOURCE_DIR, "kernels", "families.def")) as f:
        for l in f:
            m = re.match(r"^(SDC_FAMILY|SDC_FAMILY_CPU|SDC_FAMILY_LIBRARY)\(([a-z0-9_]+)\)$", l.strip())
            if m:
                lines.append((m.group(1), m.group(2)))
                continue
            m = re.match(r"^SDC_GEMM_(?:EXACTINT|RECORDED)\(([a-z0-9_]+), (mma|cublaslt), [a-z0-9_]+\)$", l.strip())
            if m:
                lines.append((engine_kind[m.group(2)], m.group(1)))
    return lines


def table_families():
    """The family ids of the family table, in its order, read from the file itself."""
    return [fid for _, fid in table_lines()]


def table_device_sides():
    """Each family's device side as its table line declares it (the listing's device_side)."""
    side = {"SDC_FAMILY": "kernel", "SDC_FAMILY_LIBRARY": "library", "SDC_FAMILY_CPU": "none"}
    return {fid: side[macro] for macro, fid in table_lines()}


# The binary's own listing: every kernel family it registers (in table order), and every battery case with
# its geometry. test_cli checks the families against the table; test_boot and test_injection cover each of
# those that run on CPUs.
LISTING = listing()
FAMILIES = [f["id"] for f in LISTING["families"]]
CASES = {c["id"]: c for c in LISTING["cases"]}
# Families with no CPU backend (recorded/consensus modes, which have no CPU golden, or a library that
# computes them on GPUs): a CPU run reports their cases as skipped, not applicable ("family ... runs on
# GPUs only"), which leaves the exit code alone; test_boot expects that and the CPU fault drills of
# test_injection leave them out. The CPU-side tests cover the others.
GPU_ONLY_FAMILIES = [f["id"] for f in LISTING["families"] if "cpu" not in f["backends"]]
CPU_FAMILIES = [f for f in FAMILIES if f not in GPU_ONLY_FAMILIES]


# The modes a CPU has goldens for; a case in another mode (recorded) runs on GPUs only, whatever its family.
CPU_GOLDEN_MODES = ("exact", "exact-integer")


def gpu_only_case(case_id):
    """A case a CPU cannot judge: its family has no CPU side, or its mode has no CPU golden (a replay on tensor
    cores, train_step_bf16 in mode recorded)."""
    c = CASES.get(case_id, {})
    return c.get("family") in GPU_ONLY_FAMILIES or c.get("mode") not in CPU_GOLDEN_MODES


def gpu_only_skip(test):
    """A test of a GPU-only case, not applicable on a CPU run (its own result, not a skip), as it must be."""
    return (gpu_only_case(test.get("id")) and test.get("result") == "not_applicable"
            and "runs on GPUs only" in test.get("reason", ""))


def battery():
    with open(os.path.join(PATTERNS, "battery.json")) as f:
        return json.load(f)


def shape_work(case):
    """The product of a battery case's shape values: how costly it is, to compare cases of one family. An
    attention case's `seq` counts twice (every query meets every key: heads x seq^2 x dim), so that a long
    sequence is not taken for a cheap case."""
    work = 1
    for key, v in case["shape"].items():
        work *= max(int(v), 1) ** (2 if key == "seq" else 1)
    return work


class XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def load_xxhash():
    """libxxhash through ctypes (XXH3-128 of pattern files, an implementation independent of the binary's),
    or None when it is not installed."""
    for name in ("libxxhash.so.0", ctypes.util.find_library("xxhash")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.XXH3_128bits.restype = XXH128
        lib.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return lib
    return None

"""Slurm integration against the real daemons on localhost: deploy/slurm/sdcscreen-healthcheck run by slurmd
as its HealthCheckProgram, deploy/slurm/sdcscreen-sweep through srun, and deploy/nhc/sdcscreen.nhc.

A private munged (own key and socket) and a one-node cluster (slurmctld + slurmd, foreground, -f slurm.conf
in a temporary directory, random port pair: slurm_cluster.py) are started here and stopped at the end, even on
failure.

How the health check is triggered: slurmd runs HealthCheckProgram once when it starts, before it registers
(and then every HealthCheckInterval, set to an hour here). So each scenario rewrites the health check's
configuration file and restarts slurmd; the wrapper appends one line per run to healthcheck.log in its state
directory, which proves slurmd ran it and tells when it is done. slurmd runs the program with an environment
that holds only SLURMD_NODENAME, so the HealthCheckProgram is a two-line launcher that names the test's
configuration file (SDCSCREEN_CONFIG, standing in for /etc/default/sdcscreen) and execs the wrapper.

Needs root and the Debian packages slurm-wlm and munge; without them it prints SKIP and passes.
"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
# Checks root and the tools (SKIP without them), then makes the cluster's directory TMP.
from slurm_cluster import (CONF, ENV, NODE, PATH, TMP, elapsed, node_state, settled_state, sh, start,  # noqa: E402
                           stop, wait_for, write_cluster_config)

WRAPPER = os.path.join(common.SOURCE_DIR, "deploy", "slurm", "sdcscreen-healthcheck")
SWEEP = os.path.join(common.SOURCE_DIR, "deploy", "slurm", "sdcscreen-sweep")
NHC_CHECK = os.path.join(common.SOURCE_DIR, "deploy", "nhc", "sdcscreen.nhc")
FAST_CASE = "softmax_f32.special_128x1000"
INJECT = f"case={FAST_CASE},element=5,bit=3"

for f in (WRAPPER, SWEEP, NHC_CHECK):
    if not os.path.isfile(f):
        sys.exit(f"missing {f}")

F = common.Failures("test_slurm")
HC_CONFIG = os.path.join(TMP, "sdcscreen.default")   # what /etc/default/sdcscreen would hold
HC_STATE = os.path.join(TMP, "hc-state")
HC_LOG = os.path.join(HC_STATE, "healthcheck.log")
HC_REPORT = os.path.join(HC_STATE, "healthcheck-report.json")
LOCK = os.path.join(TMP, "lock")
timings = {}


def hc_lines():
    try:
        with open(HC_LOG) as f:
            return [ln.rstrip("\n") for ln in f if ln.strip()]
    except FileNotFoundError:
        return []


def parse_hc_line(line):
    """'<time> node=N exit=E action=A detail=D' -> dict."""
    d = {}
    rest = line.split(" ", 1)[1] if " " in line else ""
    for key in ("node", "exit", "action"):
        if rest.startswith(key + "="):
            val, _, rest = rest[len(key) + 1:].partition(" ")
            d[key] = val
    if rest.startswith("detail="):
        d["detail"] = rest[len("detail="):]
    return d


def write_hc_config(args, extra=""):
    with open(HC_CONFIG, "w") as f:
        f.write(f"SDCSCREEN={common.SDCSCREEN}\n")
        f.write(f"SDCSCREEN_ARGS=\"{args}\"\n")
        f.write(f"SDCSCREEN_STATE_DIR={HC_STATE}\n")
        f.write(f"SLURM_CONF={CONF}\n")
        f.write(extra)


def slurmd_health_check(args, label, extra=""):
    """Restarts slurmd with the health check configured to run 'sdcscreen run ARGS'; waits until slurmd has run
    it (a new line in healthcheck.log) and the node has settled. Returns (log line dict, state, reason)."""
    t = time.monotonic()
    write_hc_config(args, extra)
    n = len(hc_lines())
    stop("slurmd")
    start("slurmd", ["slurmd", "-D", "-f", CONF])
    wait_for(f"slurmd to run the health check ({label})", lambda: len(hc_lines()) > n, 120)
    line = parse_hc_line(hc_lines()[-1])
    state, reason = settled_state()
    timings[label] = time.monotonic() - t
    print(f"[{elapsed():6.1f}s] {label}: health check {line}; node {state!r} reason {reason!r}", flush=True)
    return line, state, reason


def report_units(path):
    with open(path) as f:
        r = json.load(f)
    return r, sorted({u for t in r["tests"] if t["result"] == "fail" for u in t["units_failed"]})


def sweep(*args, outdir):
    p = sh(sys.executable, SWEEP, "-o", outdir, "--sdcscreen", common.SDCSCREEN, *args, timeout=300)
    summary = None
    try:
        with open(os.path.join(outdir, "fleet-summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        F.check(False, f"sweep {args}: no fleet-summary.json ({e}); exit {p.returncode}, stderr {p.stderr[-500:]!r}")
    return p, summary


def node_entry(summary):
    for e in (summary or {}).get("nodes", []):
        if e["node"] == NODE:
            return e
    return {}


def start_slow_drain():
    """The wrapper on its own with stubs (no cluster): a screen that wrote a failing report and then hangs is
    killed at the limit (50 s + 2), leaving 6 s of the wrapper's 58; reading the report (1 s), the node (1 s)
    and the drain (1 s) fit, and a slow resume policy (4 s) must not take the drain's time. Runs beside the
    cluster's scenarios; returns (Popen, scontrol's call log, state dir)."""
    d = os.path.join(TMP, "slow-drain")
    os.makedirs(d)
    calls = os.path.join(d, "scontrol.calls")
    stub = os.path.join(d, "sdcscreen")
    with open(stub, "w") as f:
        f.write("#!/bin/bash\ncase \"$1\" in\n"
                "run) prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && echo '{}' >\"$a\"; prev=$a; done\n"
                "     trap '' TERM; sleep 300 ;;\n"
                "reason) sleep 1; echo 'SDC: cpu 1 softmax_f32'; exit 0 ;;\n"
                "history) sleep 4; echo 'hold: 3 clean standard screens to resume'; exit 1 ;;\n"
                "esac\nexit 2\n")
    scontrol = os.path.join(d, "scontrol")
    with open(scontrol, "w") as f:
        f.write(f"#!/bin/sh\nsleep 1\necho \"$*\" >>{calls}\n"
                "if [ \"$1\" = show ]; then echo 'NodeName=n1 State=IDLE'; echo '   Reason=(null)'; fi\n")
    for x in (stub, scontrol):
        os.chmod(x, 0o755)
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "n1", "SDCSCREEN_CONFIG": os.path.join(d, "none"),
           "SDCSCREEN": stub, "SCONTROL": scontrol, "SDCSCREEN_STATE_DIR": os.path.join(d, "state")}
    t0 = time.monotonic()
    p = subprocess.Popen([WRAPPER], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = {}

    def wait():
        done["out"] = p.communicate(timeout=120)[0]
        done["wall"] = time.monotonic() - t0
    th = threading.Thread(target=wait, daemon=True)
    th.start()
    return th, done, calls, os.path.join(d, "state")


def check_slow_drain(slow):
    th, done, calls, state = slow
    th.join(timeout=120)
    out, wall = done.get("out", ""), done.get("wall", 999.0)
    timings["killed at the limit, slow report and policy (stubs)"] = wall
    try:
        with open(calls) as f:
            made = f.read().splitlines()
    except FileNotFoundError:
        made = []
    with open(os.path.join(state, "healthcheck.log")) as f:
        last = parse_hc_line(f.read().splitlines()[-1])
    F.check(wall < 59, f"slow drain: the wrapper took {wall:.1f} s, past its 58 s")
    F.check("update nodename=n1 state=drain reason=SDC: cpu 1 softmax_f32" in made and last.get("action") == "drained",
            f"slow drain: a screen killed at the limit whose report says fail was not drained: scontrol {made}, "
            f"health check {last}, output {out[-600:]!r}")


def main():
    slow = start_slow_drain()
    os.makedirs(HC_STATE)
    launcher = os.path.join(TMP, "healthcheck")
    with open(launcher, "w") as f:
        f.write(f"#!/bin/sh\nSDCSCREEN_CONFIG={HC_CONFIG} exec {WRAPPER}\n")
    os.chmod(launcher, 0o755)
    port, cpus = write_cluster_config(launcher)

    # --- start the cluster; slurmd runs the health check (boot profile, default arguments) once at start --
    start("slurmctld", ["slurmctld", "-D", "-i", "-f", CONF])
    wait_for("slurmctld", lambda: "UP" in sh("scontrol", "ping", timeout=10).stdout, 60)
    write_hc_config(f"--lock-file {LOCK}")
    t = time.monotonic()
    start("slurmd", ["slurmd", "-D", "-f", CONF])
    wait_for("slurmd's start-up health check", lambda: len(hc_lines()) >= 1, 120)
    state, reason = settled_state()
    wait_for("the node to be idle", lambda: node_state()[0] == "idle", 60)
    timings["start-up (boot profile)"] = time.monotonic() - t
    first = parse_hc_line(hc_lines()[0])
    print(f"[{elapsed():6.1f}s] cluster up (ports {port}/{port + 1}, {cpus} CPUs); start-up health check {first}", flush=True)
    F.check(first.get("node") == NODE, f"start-up: health check ran for node {first.get('node')!r}, expected {NODE!r} (SLURMD_NODENAME)")
    F.check(first.get("exit") == "0" and first.get("action") == "pass", f"start-up: clean boot screen gave {first}")
    F.check(node_state() == ("idle", ""), f"start-up: node {node_state()}, expected idle with no reason")
    try:
        with open(HC_REPORT) as f:
            rep = json.load(f)
        F.check(rep["profile"] == "boot" and rep["exit"]["code"] == 0, f"start-up: report profile {rep['profile']}, exit {rep['exit']}")
        cl = rep["command_line"]
        F.check("--time-budget" in cl and cl[cl.index("--time-budget") + 1] == "42s",
                f"start-up: the wrapper did not pass --time-budget 42s: {cl}")
        F.check("--expect-devices" in cl and cl[cl.index("--expect-devices") + 1] == "pci",
                f"start-up: the wrapper did not pass --expect-devices pci: {cl}")
        F.check(rep["timing"]["duration_s"] < 45, f"start-up: boot screen took {rep['timing']['duration_s']} s")
    except (OSError, ValueError, KeyError) as e:
        F.check(False, f"start-up: no readable report {HC_REPORT}: {e}")

    # --- inconclusive on a healthy node: drains nothing --------------------------------------------------
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --backend cuda", "inconclusive")
    F.check(line.get("exit") == "2" and line.get("action") == "unknown", f"inconclusive: health check {line}")
    F.check((state, reason) == ("idle", ""), f"inconclusive: node {state!r} {reason!r}, expected idle (no drain on exit 2)")

    # --- injected fault: drained with "SDC: cpu N softmax_f32" -------------------------------------------
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --enable {FAST_CASE} --inject {INJECT}", "injected fault")
    F.check(line.get("exit") == "1" and line.get("action") == "drained", f"fault: health check {line}")
    F.check(state in ("drained", "draining"), f"fault: node state {state!r}, expected drained")
    F.check(reason.startswith("SDC:"), f"fault: reason {reason!r} does not start with 'SDC:'")
    F.check("softmax_f32" in reason, f"fault: reason {reason!r} does not name the family softmax_f32")
    F.check(len(reason) <= 100, f"fault: reason {reason!r} is longer than 100 characters")
    try:
        rep, units = report_units(HC_REPORT)
        F.check(rep["exit"]["code"] == 1 and units, f"fault: report exit {rep['exit']}, failed units {units}")
        for u in units:
            F.check(f"cpu {u}" in reason, f"fault: reason {reason!r} does not name the failing unit cpu {u}")
    except (OSError, ValueError, KeyError) as e:
        F.check(False, f"fault: no readable report: {e}")
    fails = [n for n in os.listdir(HC_STATE) if n.startswith("healthcheck-fail-")]
    F.check(len(fails) >= 1, f"fault: no healthcheck-fail-*.json kept in {HC_STATE}: {os.listdir(HC_STATE)}")
    sdc_reason = reason

    # --- inconclusive on an SDC-drained node: neither resumes nor changes it ------------------------------
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --backend cuda", "inconclusive while drained")
    F.check(line.get("exit") == "2", f"inconclusive while drained: health check {line}")
    F.check(state in ("drained", "draining") and reason == sdc_reason,
            f"inconclusive while drained: node {state!r} {reason!r}, expected still drained with {sdc_reason!r}")

    # --- clean screen after an SDC drain: resumed ---------------------------------------------------------
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --enable {FAST_CASE}", "clean after SDC drain")
    F.check(line.get("exit") == "0" and line.get("action") == "resumed", f"clean after SDC drain: health check {line}")
    F.check((state, reason) == ("idle", ""), f"clean after SDC drain: node {state!r} {reason!r}, expected idle")

    # --- drained by an admin for another reason: a clean screen leaves it drained -------------------------
    admin = "admin: replace DIMM B2"
    sh("scontrol", "update", f"nodename={NODE}", "state=drain", f"reason={admin}", check=True)
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --enable {FAST_CASE}", "clean while admin-drained")
    F.check(line.get("exit") == "0" and line.get("action") == "pass-left-drained", f"clean while admin-drained: health check {line}")
    F.check(state in ("drained", "draining") and reason == admin,
            f"clean while admin-drained: node {state!r} {reason!r}, expected drained with {admin!r}")
    # a fault on an admin-drained node keeps the admin's reason first (so it is never auto-resumed) and adds ours
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --enable {FAST_CASE} --inject {INJECT}", "fault while admin-drained")
    F.check(line.get("action") == "drained", f"fault while admin-drained: health check {line}")
    F.check(state in ("drained", "draining") and reason.startswith(admin) and "SDC:" in reason,
            f"fault while admin-drained: node {state!r} {reason!r}, expected {admin!r} first, then the SDC reason")
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK} --enable {FAST_CASE}", "clean after admin+SDC drain")
    F.check(state in ("drained", "draining") and reason.startswith(admin),
            f"clean after admin+SDC drain: node {state!r} {reason!r}, expected still drained by the admin")
    if node_state()[0] != "idle":
        sh("scontrol", "update", f"nodename={NODE}", "state=resume", check=True)
    settled_state()
    wait_for("the node to be idle after the admin resumed it", lambda: node_state()[0] == "idle", 60)

    # --- the wrapper on its own, configured by the environment only: a hung screen is cut off in time -----
    hang = os.path.join(TMP, "hanging-sdcscreen")
    with open(hang, "w") as f:
        f.write("#!/bin/sh\ntrap '' TERM\nsleep 300\n")
    os.chmod(hang, 0o755)
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": NODE, "SDCSCREEN_CONFIG": os.path.join(TMP, "none"),
           "SDCSCREEN": hang, "SDCSCREEN_STATE_DIR": HC_STATE, "SDCSCREEN_TIMEOUT": "3", "SLURM_CONF": CONF}
    t = time.monotonic()
    p = sh(WRAPPER, env=env, timeout=60)
    wall = time.monotonic() - t
    timings["hung screen (SDCSCREEN_TIMEOUT=3)"] = wall
    last = parse_hc_line(hc_lines()[-1])
    F.check(p.returncode == 0, f"hung screen: wrapper exit {p.returncode}, expected 0 always")
    F.check(wall < 15, f"hung screen: wrapper took {wall:.1f} s with SDCSCREEN_TIMEOUT=3")
    F.check(last.get("exit") == "124" and last.get("action") == "unknown" and "time limit" in last.get("detail", ""),
            f"hung screen: health check {last}, expected exit 124 (killed at the time limit), action unknown")
    F.check("Unknown" in p.stderr, f"hung screen: stderr does not say Unknown: {p.stderr[-300:]!r}")
    F.check(node_state() == ("idle", ""), f"hung screen: node {node_state()}, expected idle")

    # --- a screen that exits 0 without writing its report: not a pass (Unknown, no action) ------------------
    silent = os.path.join(TMP, "silent-sdcscreen")
    with open(silent, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(silent, 0o755)
    p = sh(WRAPPER, env=dict(env, SDCSCREEN=silent), timeout=60)
    last = parse_hc_line(hc_lines()[-1])
    F.check(last.get("exit") == "0" and last.get("action") == "unknown" and "without a report" in last.get("detail", ""),
            f"exit 0 without a report: health check {last}, expected unknown; {p.stderr[-300:]!r}")
    nhc_silent = ("die() { echo \"DIE $*\"; }\nlog() { echo \"LOG $*\"; }\ndbg() { :; }\nTIMEOUT=58\n"
                  f". {NHC_CHECK}\ncheck_sdcscreen -b {silent} -s {os.path.join(TMP, 'nhc-silent')} -a ''\n")
    p = sh("bash", "-c", nhc_silent, env=dict(ENV, PATH=PATH), timeout=60)
    F.check("DIE" not in p.stdout and "Unknown" in p.stdout and "no report" in p.stdout,
            f"NHC, exit 0 without a report: expected Unknown, no die: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")

    # --- fleet sweep over the one-node cluster ------------------------------------------------------------
    t = time.monotonic()
    out1 = os.path.join(TMP, "sweep-clean")
    p, s = sweep("-p", "sdctest", "--", "--lock-file", LOCK, "--enable", FAST_CASE, outdir=out1)
    e = node_entry(s)
    F.check(p.returncode == 0, f"sweep clean: exit {p.returncode}, expected 0 (stdout {p.stdout[-500:]!r} stderr {p.stderr[-500:]!r})")
    if s:
        F.check(s["counts"] == {"requested": 1, "screened": 1, "pass": 1, "fail": 0, "unscreened": 0}, f"sweep clean: counts {s['counts']}")
        F.check(e.get("status") == "pass" and e.get("exit_code") == 0, f"sweep clean: node entry {e}")
        F.check(os.path.isfile(os.path.join(out1, f"{NODE}.json")), f"sweep clean: no {NODE}.json in {os.listdir(out1)}")
    F.check(os.path.isfile(os.path.join(out1, "fleet-summary.txt")) and "1 passed" in p.stdout, f"sweep clean: text summary {p.stdout!r}")

    out2 = os.path.join(TMP, "sweep-fault")
    p, s = sweep("-w", NODE, "--", "--lock-file", LOCK, "--enable", FAST_CASE, "--inject", INJECT, outdir=out2)
    e = node_entry(s)
    F.check(p.returncode == 1, f"sweep fault: exit {p.returncode}, expected 1 (stdout {p.stdout[-500:]!r})")
    if s:
        F.check(s["failed"] == [NODE] and s["counts"]["fail"] == 1, f"sweep fault: failed {s['failed']}, counts {s['counts']}")
        fl = (e.get("failures") or [{}])[0]
        try:
            _, units = report_units(os.path.join(out2, f"{NODE}.json"))
        except (OSError, ValueError, KeyError) as ex:
            units = []
            F.check(False, f"sweep fault: no readable {NODE}.json: {ex}")
        F.check(fl.get("family") == "softmax_f32" and fl.get("test") == FAST_CASE, f"sweep fault: failure {fl}")
        F.check(fl.get("xor_masks") == ["0x00000008"], f"sweep fault: xor masks {fl.get('xor_masks')}, expected ['0x00000008'] (bit 3)")
        F.check(units and fl.get("units") == [f"cpu {u}" for u in units], f"sweep fault: units {fl.get('units')}, report says {units}")
        F.check(e.get("fault_injection") is True, f"sweep fault: not marked as a drill: {e}")
        F.check({"family": "softmax_f32", "xor_mask": "0x00000008", "nodes": [NODE]} in s["signatures"], f"sweep fault: signatures {s['signatures']}")
    F.check(f"FAILED {NODE}" in p.stdout and "softmax_f32" in p.stdout and "0x00000008" in p.stdout,
            f"sweep fault: text summary lacks node/family/xor: {p.stdout!r}")

    out3 = os.path.join(TMP, "sweep-inconclusive")
    p, s = sweep("-w", NODE, "--", "--lock-file", LOCK, "--backend", "cuda", outdir=out3)
    e = node_entry(s)
    F.check(p.returncode == 2, f"sweep inconclusive: exit {p.returncode}, expected 2")
    F.check(e.get("status") == "unscreened" and e.get("exit_code") == 2 and "exit 2" in e.get("why", ""),
            f"sweep inconclusive: node entry {e}")
    F.check(f"NOT SCREENED {NODE}" in p.stdout, f"sweep inconclusive: text summary {p.stdout!r}")

    out4 = os.path.join(TMP, "sweep-srun-failure")
    p, s = sweep("-w", f"{NODE},nosuchnode9", "--srun-arg=--partition=nosuchpartition", "--", "--lock-file", LOCK, outdir=out4)
    F.check(p.returncode == 2, f"sweep srun failure: exit {p.returncode}, expected 2")
    if s:
        F.check(s["srun_exit_code"] != 0, f"sweep srun failure: srun exit {s['srun_exit_code']}")
        F.check(sorted(s["unscreened"]) == sorted([NODE, "nosuchnode9"]), f"sweep srun failure: unscreened {s['unscreened']}")
        F.check("srun exit" in node_entry(s).get("why", ""), f"sweep srun failure: node entry {node_entry(s)}")
    timings["four sweeps"] = time.monotonic() - t
    F.check(node_state() == ("idle", ""), f"after the sweeps: node {node_state()}, expected idle")

    # --- the resume policy: a real failure on record, the health check holds, the sweep re-screens ---------
    t = time.monotonic()
    history_file = os.path.join(HC_STATE, "history.jsonl")
    F.check(os.path.isfile(history_file), f"history: the health check wrote no {history_file}")

    def real_failure(unit="cpu 1", path=history_file, day=1):
        """A past, real (not drill) failure of UNIT on record (in January 2026, on DAY), as 'run --history' writes
        it."""
        line = {"v": 1, "time": f"2026-01-{day:02d}T00:00:00Z", "unix": 1767225600 + 86400 * (day - 1), "host": NODE,
                "profile": "boot", "selection": "profile", "drill": False, "exit": 1, "verdict": "fail",
                "screened": {"cpu": "0-1"}, "units": {unit: "fail"},
                "failures": [{"unit": unit, "case": FAST_CASE, "family": "softmax_f32", "result": "fail"}]}
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")

    real_failure()
    base = "SDC: cpu 1 softmax_f32"
    sh("scontrol", "update", f"nodename={NODE}", "state=drain", f"reason={base}", check=True)
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK}", "clean boot screen, real failure on record")
    F.check(line.get("exit") == "0" and line.get("action") == "held", f"policy hold: health check {line}")
    F.check(state in ("drained", "draining") and reason == f"{base}; 3 clean standard screens to resume",
            f"policy hold: node {state!r} {reason!r}, expected drained with the clean screens that remain")

    out5 = os.path.join(TMP, "sweep-rescreen-1")
    # The health check's boot screen above counts at this depth: it, this sweep's and the next one's make 3.
    rescreen = ("--rescreen-drained", "--history-dir", HC_STATE, "--resume-screens", "3", "--resume-profile", "boot",
                "--", "--lock-file", LOCK)
    p, s = sweep(*rescreen, outdir=out5)
    e = node_entry(s)
    state, reason = settled_state()
    F.check(p.returncode == 0 and e.get("status") == "pass", f"rescreen 1: exit {p.returncode}, entry {e}, {p.stdout[-400:]!r} {p.stderr[-400:]!r}")
    F.check((e.get("rescreen") or {}).get("action") == "held", f"rescreen 1: outcome {e.get('rescreen')}")
    F.check(state in ("drained", "draining") and reason == f"{base}; 1 clean boot screen to resume",
            f"rescreen 1: node {state!r} {reason!r}, expected drained with 1 clean boot screen to go")
    resv = sh("scontrol", "show", "reservation", timeout=30).stdout
    F.check("sdcscreen-rescreen" not in resv, f"rescreen 1: the reservation was not deleted: {resv[:300]!r}")
    with open(history_file) as f:
        last = json.loads(f.readlines()[-1])
    F.check(last.get("profile") == "boot" and last.get("selection") == "profile" and last.get("exit") == 0,
            f"rescreen 1: the node's history did not record the boot screen: {last}")

    out6 = os.path.join(TMP, "sweep-rescreen-2")
    p, s = sweep(*rescreen, outdir=out6)
    e = node_entry(s)
    wait_for("the node to be idle after the policy resumed it", lambda: node_state()[0] == "idle", 60)
    F.check((e.get("rescreen") or {}).get("action") == "resumed" and f"RESUMED {NODE}" in p.stdout,
            f"rescreen 2: outcome {e.get('rescreen')}, stdout {p.stdout[-400:]!r}")
    F.check(node_state() == ("idle", ""), f"rescreen 2: node {node_state()}, expected idle")
    F.check(s and s.get("rescreen", {}).get("resumed") == [NODE], f"rescreen 2: summary {s and s.get('rescreen')}")

    # The same unit fails again: never resumed, by any number of clean screens, until it is forgotten.
    real_failure()
    sh("scontrol", "update", f"nodename={NODE}", "state=drain", f"reason={base}", check=True)
    p, s = sweep(*rescreen, outdir=os.path.join(TMP, "sweep-rescreen-3"))
    state, reason = settled_state()
    F.check(state in ("drained", "draining") and reason == f"{base}; cpu 1 failed twice: not resumed",
            f"failed twice: node {state!r} {reason!r}")
    line, state, reason = slurmd_health_check(
        f"--lock-file {LOCK}", "clean boot screen, unit failed twice",
        extra="SDCSCREEN_RESUME_PROFILE=boot\nSDCSCREEN_RESUME_SCREENS=1\n")
    F.check(line.get("action") == "held" and state in ("drained", "draining"),
            f"failed twice, health check: {line}, node {state!r} {reason!r}")
    # After the repair: forgotten; nothing vouches for the node any more, so a non-drill drain stays.
    p = sh(common.SDCSCREEN, "history", HC_STATE, "--forget", "cpu 1")
    F.check(p.returncode == 0, f"forget: exit {p.returncode}: {p.stderr}")
    line, state, reason = slurmd_health_check(
        f"--lock-file {LOCK}", "clean boot screen after forget",
        extra="SDCSCREEN_RESUME_PROFILE=boot\nSDCSCREEN_RESUME_SCREENS=1\n")
    F.check(line.get("action") == "held-no-record" and state in ("drained", "draining"),
            f"after forget: health check {line}, node {state!r} {reason!r}")
    # A real failure with the health check's own policy settings (1 boot screen): resumed by the next one.
    real_failure("cpu 0")
    line, state, reason = slurmd_health_check(
        f"--lock-file {LOCK}", "clean boot screen, 1 needed",
        extra="SDCSCREEN_RESUME_PROFILE=boot\nSDCSCREEN_RESUME_SCREENS=1\n")
    F.check(line.get("action") == "resumed" and (state, reason) == ("idle", ""),
            f"policy resume: health check {line}, node {state!r} {reason!r}")

    # A node in service with a failure on record (the boot unit's, a sweep's): a clean screen does not vouch for
    # it; the policy holds, so the check drains it with the policy's reason.
    def forget_all():
        p = sh(common.SDCSCREEN, "history", HC_STATE, "--forget", "all")
        F.check(p.returncode == 0, f"forget all: exit {p.returncode}: {p.stderr}")

    forget_all()
    real_failure("cpu 0")
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK}", "clean boot screen in service, failure on record")
    F.check(line.get("exit") == "0" and line.get("action") == "drained-on-record",
            f"in service, failure on record: health check {line}")
    F.check(state in ("drained", "draining") and reason == "SDC: failure on record; 3 clean standard screens to resume",
            f"in service, failure on record: node {state!r} {reason!r}, expected drained by the policy")
    # A screen that left no history line (a marker) and no failure on record: said, not drained.
    forget_all()
    sh("scontrol", "update", f"nodename={NODE}", "state=resume", check=True)
    wait_for("the node to be idle again", lambda: node_state()[0] == "idle", 60)
    marker = os.path.join(HC_STATE, "unrecorded-" + "0123456789abcdef" * 2)
    open(marker, "w").close()
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK}", "clean boot screen, a marker alone")
    F.check(line.get("exit") == "0" and line.get("action") == "pass-unrecorded" and (state, reason) == ("idle", ""),
            f"a marker alone: health check {line}, node {state!r} {reason!r}, expected idle (no failure on record)")
    # The marker and a failure on record: drained, until an administrator acknowledges the marker.
    real_failure("cpu 0")
    line, state, reason = slurmd_health_check(f"--lock-file {LOCK}", "clean boot screen, a marker and a failure")
    F.check(line.get("action") == "drained-on-record" and state in ("drained", "draining")
            and reason == "SDC: failure on record; a screen left no history line: not resumed",
            f"a marker and a failure: health check {line}, node {state!r} {reason!r}")
    sh(common.SDCSCREEN, "history", HC_STATE, "--acknowledge")
    forget_all()
    sh("scontrol", "update", f"nodename={NODE}", "state=resume", check=True)
    wait_for("the node to be idle again", lambda: node_state()[0] == "idle", 60)

    # --rescreen-drained, and a node drained again while the sweep ran (here by its screen's wrapper, standing
    # in for a health check's new failure): the policy computed when the screen ended does not resume it, and
    # the newer reason stays.
    real_failure("cpu 0")
    sh("scontrol", "update", f"nodename={NODE}", "state=drain", "reason=SDC: cpu 0 softmax_f32", check=True)
    newer = "SDC: cpu 0 gemm_f32; 3 clean standard screens to resume"
    redrain = os.path.join(TMP, "redraining-sdcscreen")
    with open(redrain, "w") as f:
        f.write(f"#!/bin/bash\nif [ \"$1\" = run ]; then {common.SDCSCREEN} \"$@\"; rc=$?\n"
                f"  scontrol update nodename={NODE} state=drain reason='{newer}'; exit $rc; fi\n"
                f"exec {common.SDCSCREEN} \"$@\"\n")
    os.chmod(redrain, 0o755)
    p, s = sweep("--rescreen-drained", "--history-dir", HC_STATE, "--resume-screens", "1", "--resume-profile", "boot",
                 "--sdcscreen", redrain, "--", "--lock-file", LOCK, outdir=os.path.join(TMP, "sweep-rescreen-redrained"))
    e = node_entry(s)
    state, reason = settled_state()
    F.check((e.get("rescreen") or {}).get("action") == "held" and state in ("drained", "draining") and reason == newer,
            f"drained again during the sweep: outcome {e.get('rescreen')}, node {state!r} {reason!r}, expected "
            f"drained with {newer!r}; {p.stdout[-400:]!r} {p.stderr[-400:]!r}")
    forget_all()
    sh("scontrol", "update", f"nodename={NODE}", "state=resume", check=True)
    wait_for("the node to be idle again", lambda: node_state()[0] == "idle", 60)
    timings["resume policy"] = time.monotonic() - t
    check_slow_drain(slow)

    # --- the NHC check, with NHC's die/log stood in for (NHC itself is not packaged in Debian) -------------
    nhc_state = os.path.join(TMP, "nhc-state")
    shim = ("die() { echo \"DIE $1 ${*:2}\"; exit 7; }\nlog() { echo \"LOG $*\"; }\ndbg() { :; }\nTIMEOUT=58\n"
            f". {NHC_CHECK}\ncheck_sdcscreen -b {common.SDCSCREEN} -s {nhc_state} -a \"$1\"\necho \"RETURNED $?\"\n")
    for label, args, want_die in (("clean", f"--lock-file {LOCK} --enable {FAST_CASE}", False),
                                  ("fault", f"--lock-file {LOCK} --enable {FAST_CASE} --inject {INJECT},unit=0", True),
                                  ("inconclusive", f"--lock-file {LOCK} --backend cuda", False)):
        p = sh("bash", "-c", shim, "nhc-shim", args, env=dict(ENV, PATH=PATH), timeout=120)
        if want_die:
            F.check(p.returncode == 7 and "DIE 1 SDC: cpu 0 softmax_f32" in p.stdout,
                    f"nhc {label}: expected die 1 'SDC: cpu 0 softmax_f32 ...', got exit {p.returncode}: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")
        else:
            F.check(p.returncode == 0 and "RETURNED 0" in p.stdout and "DIE" not in p.stdout,
                    f"nhc {label}: expected no die, got exit {p.returncode}: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")
        if label == "inconclusive":
            F.check("LOG" in p.stdout and "Unknown" in p.stdout, f"nhc inconclusive: not logged as Unknown: {p.stdout[-400:]!r}")
    # A real failure on the node's record: a clean screen does not bring it back (the resume policy holds it).
    real_failure("cpu 1", os.path.join(nhc_state, "history.jsonl"))
    p = sh("bash", "-c", shim, "nhc-shim", f"--lock-file {LOCK} --enable {FAST_CASE}", env=dict(ENV, PATH=PATH), timeout=120)
    F.check(p.returncode == 7 and "DIE 1 SDC: 3 clean standard screens to resume" in p.stdout,
            f"nhc held by the policy: exit {p.returncode}: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")
    # A screen that left no history line (its marker) and no failure on record: logged, not an offline.
    sh(common.SDCSCREEN, "history", nhc_state, "--forget", "all", check=True)
    open(os.path.join(nhc_state, "unrecorded-" + "fedcba9876543210" * 2), "w").close()
    p = sh("bash", "-c", shim, "nhc-shim", f"--lock-file {LOCK} --enable {FAST_CASE}", env=dict(ENV, PATH=PATH), timeout=120)
    F.check(p.returncode == 0 and "RETURNED 0" in p.stdout and "DIE" not in p.stdout and "no history line" in p.stdout,
            f"nhc, a marker alone: expected a log line and no die: exit {p.returncode}: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")
    # The marker beside a failure on record: the node stays out.
    real_failure("cpu 0", os.path.join(nhc_state, "history.jsonl"), day=2)
    p = sh("bash", "-c", shim, "nhc-shim", f"--lock-file {LOCK} --enable {FAST_CASE}", env=dict(ENV, PATH=PATH), timeout=120)
    F.check(p.returncode == 7 and "DIE 1 SDC: a screen left no history line: not resumed" in p.stdout,
            f"nhc, a marker and a failure: exit {p.returncode}: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")


ok = False
try:
    main()
    ok = True
except Exception as e:  # noqa: BLE001 -- report, clean up, fail
    F.check(False, f"{type(e).__name__}: {e}")
finally:
    for name in ("slurmd", "slurmctld", "munged"):
        stop(name)
    if not ok or F.items:
        for name in ("log/slurmctld.log", "log/slurmd.log", "hc-state/healthcheck.log"):
            path = os.path.join(TMP, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    print(f"--- last lines of {name}:\n" + "".join(f.readlines()[-25:]), flush=True)
    if os.environ.get("SDC_KEEP_TMP"):
        print(f"kept {TMP}")
    else:
        shutil.rmtree(TMP, ignore_errors=True)

for k, v in timings.items():
    print(f"time: {k}: {v:.1f} s")
print(f"test_slurm: total {elapsed():.1f} s", flush=True)
F.finish()

"""A verdict is kept whatever ends the screen (no-fail-open, round 2): a miscompare already found survives a
signal to the whole process group, the screen child killed outright, a crash in the report writer and
closed pipes; and the supervisor takes a pass only from a screen that finished (a worker that calls exit(0)
fails its unit). docs/reliability.md lists each path with this test."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import common
from common import Failures, SDCSCREEN, history_lines, with_lock

F = Failures("e2e_kept_verdict")
FAIL_CASE, LONG_CASE = "gemm_f32.special_512", "attention_f32.causal_uniform_16x2048x128"
QUICK = "softmax_f32.special_128x1000"
DRILL = ["--inject", f"case={FAIL_CASE},element=5000,bit=3"]


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def start_failing_screen(d, extra=(), stdout=subprocess.DEVNULL):
    """A screen whose first test fails and whose second runs long, in a process group of its own; returns the
    process once the failing test's -v line is out (the miscompare is found), and what stderr said so far."""
    args = ["run", "--backend", "cpu", "--profile", "standard", "--enable", FAIL_CASE, "--enable", LONG_CASE, *DRILL,
            "-v", "--output-format", "json", "-o", os.path.join(d, "r.json"), "-q", "--history", d, *extra]
    return common.start_until(args, FAIL_CASE, stdout)


def report(d):
    path = os.path.join(d, "r.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


# 1. SIGTERM / SIGINT to the whole process group after a miscompare (systemd's KillMode, timeout, Ctrl-C),
#    then once more: the screen takes the signal from the group and from its supervisor, and a repeat within
#    the grace period does not cut the report short. Exit 1, the report says fail and the interruption, the
#    history has the failure, and the report validates against the schema. (Was 143 or 130: the second signal
#    quit at once, the report in progress.)
for sig in (signal.SIGTERM, signal.SIGINT):
    with tempfile.TemporaryDirectory() as d:
        p, seen = start_failing_screen(d)
        F.check("fail" in seen, f"group {sig.name}: the failing test did not finish first: {seen[-300:]}")
        os.killpg(p.pid, sig)
        time.sleep(0.3)
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:  # the orderly stop already finished: nothing left to cut short
            pass
        rest = p.communicate(timeout=300)[1]
        F.check(p.returncode == 1, f"group {sig.name} after a miscompare: exit {p.returncode}, want 1: {rest[-400:]}")
        r = report(d)
        F.check(r is not None and r["exit"] == {"code": 1, "verdict": "fail"} and
                r["interrupted_by_signal"] == sig.value,
                f"group {sig.name}: report {r and (r['exit'], r['interrupted_by_signal'], r['errors'])}")
        # That report is valid: a fail may carry the signal that stopped the run (the schema refused it).
        if r is not None:
            errs = common.schema_errors(r)
            F.check(not errs, f"group {sig.name}: the report of a failed, interrupted run breaks the schema: {errs}")
            # and the rule still holds elsewhere: an inconclusive (exit 2) report carries no signal.
            bad = dict(r, exit={"code": 2, "verdict": "error"})
            F.check(any("interrupted_by_signal" in e for e in common.schema_errors(bad)),
                    f"group {sig.name}: a signal with exit 2 validates: {common.schema_errors(bad)}")
        h = history_lines(d)
        F.check(len(h) == 1 and json.dumps(h[0]).find(FAIL_CASE) >= 0,
                f"group {sig.name}: history {h}")

# 2. The screen child killed outright (the OOM killer) after a miscompare: the supervisor read the
#    miscompare on the shared progress record and fails the run (exit 1; was 2), and with --npd prints the
#    line the screen never did.
with tempfile.TemporaryDirectory() as d:
    p, seen = start_failing_screen(d, ["--npd"], stdout=subprocess.PIPE)
    kids = children(p.pid)
    F.check(len(kids) == 1, f"SIGKILL: the supervisor has children {kids}")
    for k in kids:
        os.kill(k, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    F.check(p.returncode == 1, f"SIGKILL of the screen after a miscompare: exit {p.returncode}, want 1: {err[-400:]}")
    F.check(out.startswith("SDC: ") and FAIL_CASE in out, f"SIGKILL: NPD line {out!r}")
    F.check("found a miscompare in " + FAIL_CASE in err, f"SIGKILL: stderr does not name the miscompare: {err[-400:]}")
    # The unit as every output spells it ("cpu 3"), not "unit 3".
    F.check(re.search(rf"^SDC: {re.escape(FAIL_CASE)} on cpu \d+ ", out) is not None and " unit " not in out,
            f"SIGKILL: NPD line does not name the CPU: {out!r}")

# 3. A crash in the report writer after a miscompare (the reporting drill): exit 1 (was 2), and the NPD line.
env = dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="1")
for npd in ([], ["--npd"]):
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "-q", *npd, "--inject",
                                               f"case={QUICK},element=5,bit=3"])],
                       capture_output=True, text=True, env=env, timeout=300)
    F.check(p.returncode == 1, f"report crash after a miscompare {npd}: exit {p.returncode}, want 1: {p.stderr}")
    if npd:
        F.check(p.stdout.startswith("SDC: ") and QUICK in p.stdout, f"report crash --npd: NPD line {p.stdout!r}")
    # Without a miscompare it stays what it was: inconclusive, and --npd still says so.
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "-q", *npd])],
                       capture_output=True, text=True, env=env, timeout=300)
    F.check(p.returncode == 2, f"report crash, clean screen {npd}: exit {p.returncode}, want 2: {p.stderr}")
    if npd:
        F.check(p.stdout.startswith("Unknown: "), f"report crash, clean --npd: NPD line {p.stdout!r}")

# 4. Closed pipes: stderr a pipe that is closed (-v writes to it) after a miscompare; stdout a closed pipe
#    with -o. SIGPIPE killed the screen and the supervisor (141), or lost the history line (2).
with tempfile.TemporaryDirectory() as d:
    base = [SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "--inject",
                                   f"case={QUICK},element=5,bit=3"])]
    cmd = " ".join(base) + " -v 2>&1 >/dev/null | true; echo ${PIPESTATUS[0]}"
    rc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300).stdout.strip()
    F.check(rc == "1", f"-v 2>&1 >/dev/null | true after a miscompare: exit {rc}, want 1")
    out = os.path.join(d, "r.json")
    cmd = (" ".join(base) + f" --output-format json -o {out} --history {d} 2>{d}/err | true; echo ${{PIPESTATUS[0]}}")
    rc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300).stdout.strip()
    with open(os.path.join(d, "err")) as f:
        err = f.read()
    F.check(rc == "1", f"stdout a closed pipe with -o after a miscompare: exit {rc}, want 1: {err}")
    F.check("not written" not in err, f"closed stdout: stderr says a report was not written: {err}")
    r = report(d)
    F.check(r is not None and r["exit"]["code"] == 1, f"closed stdout: report {r and r['exit']}")
    F.check(len(history_lines(d)) == 1, f"closed stdout: history {history_lines(d)}")

# 5. A worker that calls exit(0) (the exit drill) is a failure of its unit, never a pass with nothing
#    screened (was exit 0): the supervisor saw no completion record. The other CPUs are screened again.
cpus = sorted(os.sched_getaffinity(0))
victim = cpus[-1]
env = dict(os.environ, SDCSCREEN_DRILL_WORKER_EXIT=str(victim))
for npd in ([], ["--npd"]):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "--output-format",
                                                   "json", "-o", out, "-q", *npd])],
                           capture_output=True, text=True, env=env, timeout=300)
        F.check(p.returncode == 1, f"a worker calls exit(0) {npd}: exit {p.returncode}, want 1: {p.stderr}")
        F.check(f"cpu {victim} called exit()" in p.stderr, f"exit(0): the unit is not named: {p.stderr}")
        r = report(d)
        crashed = [t for t in (r or {}).get("tests", []) if t["result"] == "crash"]
        F.check(len(crashed) == 1 and crashed[0]["units_failed"] == [victim],
                f"exit(0): the report's crash tests {crashed}")
        if npd:
            F.check(p.stdout.startswith(f"SDC: cpu {victim}"), f"exit(0) --npd: NPD line {p.stdout!r}")

# 6. A unit that hangs while its peers finish (the watchdog's hang drill) is a failed unit: exit 1 and the
#    Slurm health check drains with a reason that says hung (was 2, Unknown, left in service). A hang of
#    every unit screened stays inconclusive (2).
hang = ["--enable", QUICK, "--inject", f"case={QUICK},action=hang,unit={victim}"]
if len(cpus) >= 2:
    p = common.healthcheck_dry_run(" ".join(["--backend", "cpu", "--cpuset", f"{cpus[0]},{victim}", *hang]))
    F.check(f"reason=SDC: cpu {victim} hung" in p.stderr, f"hang: the health check's drain: {p.stderr[-800:]}")
p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--cpuset", str(victim), *hang, "--npd"])],
                   capture_output=True, text=True, timeout=300)
F.check(p.returncode == 2 and p.stdout.startswith(f"Unknown: cpu {victim} hung"),
        f"hang of the only unit: exit {p.returncode}, want 2; NPD {p.stdout!r}")

F.finish()

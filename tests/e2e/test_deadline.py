"""run --deadline and the wrappers that judge the report, not only the exit code.

A screen that outlasts its wrapper's limit (a throttled node is the one that overruns; here a fill profile with a
long time budget stands for it) used to be killed by `timeout`: exit 124, "Unknown", the node left in service
while its report said fail. Now:
- --deadline stops the run a margin before the limit, writes the report and exits with the verdict of what ran:
  1 after a miscompare, else 2 (never 0); a screen that does not stop is killed by its supervisor at the deadline.
- the Slurm health check gives the screen --deadline (its limit less 3 s) and reads the verdict from the report
  whatever the exit code: a screen killed at the limit (124) whose report says fail drains the node.
- the NHC check does the same.
- bad --deadline values are a one-line usage error (64), with the --npd line on stdout.
"""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
common.KEEP_PROBE = True  # a deadline must stop the probe too

F = common.Failures("test_deadline")
SDCSCREEN = common.SDCSCREEN
CASE = "softmax_f32.special_128x1000"
# Every limit below scaled by K: under a sanitizer a screen starts and computes several times slower, and six of
# them run here at once.
K = 3 if os.environ.get("SDC_SANITIZED") else 1
D = f"{4 * K}s"  # the screens' own deadline
CPUS = sorted(os.sched_getaffinity(0))[:2]
VICTIM = CPUS[-1]
INJECT = f"case={CASE},element=5,bit=3,unit={VICTIM}"
# A screen far longer than any limit below: the standard profile repeats rounds until its time budget ends.
LONG = ["--backend", "cpu", "--cpuset", ",".join(map(str, CPUS)), "--profile", "standard", "--time-budget", "60s",
        "--enable", CASE, "--retest-on-failure", "0"]


def report_of(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# 1. Bad values: one line on stderr, exit 64; with --npd its line on stdout.
for bad in ["0", "-5s", "abc", "1h1h", "31d", "5 m"]:
    p = common.run("run", "--backend", "cpu", "--enable", CASE, "--deadline", bad, "--npd")
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    F.check(p.returncode == 64, f"--deadline {bad!r}: exit {p.returncode}, want 64")
    F.check(len(lines) == 1 and "--deadline" in lines[0], f"--deadline {bad!r}: stderr {p.stderr!r}")
    F.check(p.stdout.startswith("Unknown: ") and p.stdout.count("\n") == 1, f"--deadline {bad!r}: NPD {p.stdout!r}")
p = common.run("run", "--backend", "cpu", "--deadline", "", "--npd")
F.check(p.returncode == 64 and p.stdout.startswith("Unknown: bad command line"),
        f"--deadline '': exit {p.returncode}, NPD {p.stdout!r}")

# The screens below run side by side (each with a lock file of its own): the test takes about as long as its
# longest screen, a wrapper's 6 s limit.


def deadline_run(inject):
    """2. The deadline stops a long screen: the report is written and says so; 2 without a miscompare, 1 with."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([SDCSCREEN, "run", *LONG, "--deadline", D, *inject, "--lock-file", f"{d}/lock", "-q",
                            "--output-format", "json", "-o", out], capture_output=True, text=True, timeout=120)
        return p.returncode, report_of(out), p.stderr


def stalled_run():
    """3. A screen that does not stop (held here with SIGSTOP) is killed by its supervisor at the deadline."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        proc = subprocess.Popen([SDCSCREEN, "run", *LONG, "--deadline", D, "--npd", "-o", out, "--output-format",
                                 "json", "--lock-file", f"{d}/lock"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = None
        for _ in range(3000 * K):  # the supervisor's child, once it has said that a screen is in progress
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            if kids and os.path.exists(out):
                child = int(kids[0])
                break
            if proc.poll() is not None:
                break
            time.sleep(0.001)
        if child is not None:
            os.kill(child, signal.SIGSTOP)
        stdout, stderr = proc.communicate(timeout=60)
        return child, proc.returncode, stdout, stderr, report_of(out)


def set_up_stalled_run():
    """3b. The deadline passes while the run is still in its set-up (held there by the set-up drill, in the
    supervisor before it forks the screen): the screen it then forks is killed at once, or none is forked, before any
    in-progress file is written. The supervisor replaces the previous screen's pass (report, page, metrics) with a
    report that says what happened: the same path as a screen that stalls in its own set-up (a GPU start-up) and is
    killed at the deadline, whose end the supervisor sees the same way (no in-progress files published)."""
    with tempfile.TemporaryDirectory() as d:
        outs = ["--output-format", "json", "-o", f"{d}/r.json", "--html", f"{d}/r.html", "--prometheus", f"{d}/r.prom",
                "--lock-file", f"{d}/lock", "-q"]
        first = subprocess.run([SDCSCREEN, "run", "--backend", "cpu", "--enable", CASE, "--no-probe", *outs],
                               capture_output=True, text=True, timeout=120)
        p = subprocess.run([SDCSCREEN, "run", *LONG, "--deadline", "1s", *outs], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, SDCSCREEN_DRILL_SETUP_DELAY="3"))
        return first.returncode, p, report_of(f"{d}/r.json"), open(f"{d}/r.html").read(), open(f"{d}/r.prom").read()


def nhc_check(extra):
    """6. The NHC check, sourced as NHC does, with die/log/dbg that print what they are given."""
    with tempfile.TemporaryDirectory() as d:
        script = f"""
die() {{ echo "DIE $1 $2"; }}
log() {{ echo "LOG $*"; }}
dbg() {{ :; }}
TIMEOUT={8 + 6 * K}
. {common.SOURCE_DIR}/deploy/nhc/sdcscreen.nhc
check_sdcscreen -b {SDCSCREEN} -s {d}/state -a "$1"
"""
        return subprocess.run(["bash", "-c", script, "nhc", f"{extra} --lock-file {d}/lock"], capture_output=True,
                              text=True, timeout=120)


args = " ".join([*LONG, "--inject", INJECT])
pool = concurrent.futures.ThreadPoolExecutor(max_workers=6)
runs = {tuple(inject): pool.submit(deadline_run, inject) for inject in ([], ["--inject", INJECT])}
stalled = pool.submit(stalled_run)
set_up_stalled = pool.submit(set_up_stalled_run)
hc_own = pool.submit(common.healthcheck_dry_run, args, 120, {"SDCSCREEN_TIMEOUT": str(8 * K)})
hc_124 = pool.submit(common.healthcheck_dry_run, args + " --deadline 60s", 120, {"SDCSCREEN_TIMEOUT": str(6 * K)})
nhc_124 = pool.submit(nhc_check, args + " --deadline 60s")

for inject, fut in runs.items():
    code, r, err = fut.result()
    want = 1 if inject else 2
    F.check(code == want, f"--deadline {D} {inject}: exit {code}, want {want}: {err[-500:]}")
    if r is None:
        F.check(False, f"--deadline {D} {inject}: no report")
        continue
    F.check(r["exit"]["code"] == want, f"--deadline {D} {inject}: the report's exit {r['exit']}")
    F.check(any(f"--deadline {D}" in e for e in r["errors"]), f"--deadline {D} {inject}: errors {r['errors']}")
    F.check(r["interrupted_by_signal"] is None, f"--deadline {D}: interrupted_by_signal {r['interrupted_by_signal']}")
    t = [x for x in r["tests"] if x["id"] == CASE]
    F.check(len(t) == 1 and t[0]["result"] == ("fail" if inject else "pass"), f"--deadline {D} {inject}: tests {t}")
    F.check(r["throughput"]["probe"].get("not_run") == "the deadline ended the run",
            f"--deadline {D} {inject}: probe {r['throughput']['probe'].get('not_run')!r}")

child, code, stdout, stderr, r = stalled.result()
F.check(child is not None, "stalled screen: no child found")
F.check(code == 2, f"stalled screen: exit {code}, want 2: {stderr[-500:]}")
F.check("did not finish by its deadline" in stderr, f"stalled screen: stderr {stderr[-500:]!r}")
F.check(stdout.startswith("Unknown: the screen did not finish by its deadline") and stdout.count("\n") == 1,
        f"stalled screen: NPD {stdout!r}")
F.check(r is not None and r["exit"]["code"] == 2 and any("in progress" in e for e in r["errors"]),
        f"stalled screen: the report left is not the in-progress one: {r and r['errors']}")

first, p, r, page, prom = set_up_stalled.result()
F.check(first == 0 and p.returncode == 2 and "it ended in its set-up" in p.stderr,
        f"set-up stalled: first exit {first}, then exit {p.returncode}: {p.stderr[-500:]!r}")
F.check(r is not None and r["exit"]["code"] == 2 and any("ended in its set-up" in e for e in r["errors"]),
        f"set-up stalled: the previous report was left in place: {r and (r['exit'], r['errors'])}")
F.check("sdcscreen_healthy 0" in prom and "sdcscreen_exit_code 2" in prom and 'data-verdict="error"' in page,
        "set-up stalled: the previous page or metrics (a pass) were left in place")
if r is not None:
    F.check(not common.schema_errors(r), f"set-up stalled: the supervisor's report: {common.schema_errors(r)[:3]}")

# 4. The Slurm health check with a short limit (8 s): it gives the screen its deadline (5 s), the screen stops in
#    time with the miscompare it found, and the node is drained for SDC.
p = hc_own.result()
F.check(f"state=drain reason=SDC: cpu {VICTIM} softmax_f32 drill" in p.stderr,
        f"health check, short limit: no SDC drain: {p.stderr[-800:]}")
F.check("killed at the time limit" not in p.stderr and "exited 124" not in p.stderr,
        f"health check, short limit: {p.stderr[-800:]}")

# 5. The same, but the screen's own deadline is past the limit (6 s): timeout stops it (124) after it found the
#    miscompare; its report says fail, and the node is drained all the same (was: Unknown, left in service).
p = hc_124.result()
F.check("exited 124 but its report says fail" in p.stderr, f"health check, 124: {p.stderr[-800:]}")
F.check(f"state=drain reason=SDC: cpu {VICTIM} softmax_f32 drill" in p.stderr,
        f"health check, 124: no SDC drain: {p.stderr[-800:]}")

# 6. The NHC check, killed at its limit (NHC TIMEOUT=14: 6 s) after the miscompare: die 1 with the SDC reason.
p = nhc_124.result()
F.check("exited 124 but its report says fail" in p.stdout, f"NHC, 124: {p.stdout[-800:]}")
F.check(f"DIE 1 SDC: cpu {VICTIM} softmax_f32 drill" in p.stdout, f"NHC, 124: no die 1 SDC: {p.stdout[-800:]}")
pool.shutdown()

F.finish()

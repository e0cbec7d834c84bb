"""Retest and classify (--retest-on-failure N): after a test fails on a CPU, its failing tiles are computed
again N times on that CPU with the case's own inputs, N times on each neighbour, and N times with fresh seeds
against a CPU that passed; the CPU is classified persistent, intermittent (with its rate) or not reproduced,
and input-dependent or not, in the text and JSON reports, Prometheus, the NPD line, the Slurm drain reason
and the history. The drills' persist= option makes the faults: once (the default: never again), always
(stuck), input (only on the case's own inputs), 1/K (every K-th computation).
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_retest")
good, bad = common.two_cpus(F, "a failing one and one to compare fresh seeds with")
CASE = "softmax_f32.special_128x1000"  # one tile per 4 rows: 32 tiles
GEMM = "gemm_f32.special_512"


def screen(*args, case=CASE, history=None, budget="1h"):
    """One screen of `case` on {good, bad}; returns (exit, report, text, prometheus, npd line, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        out, prom = os.path.join(d, "r.json"), os.path.join(d, "s.prom")
        extra = ["--history", history] if history else []
        p = common.run("run", "--enable", case, "--cpuset", f"{good},{bad}", "--time-budget", budget, *args, *extra,
                       "--output-format", "json", "-o", out, "--prometheus", prom)
        report = json.load(open(out)) if os.path.exists(out) else None
        promtext = open(prom).read() if os.path.exists(prom) else ""
        npd = common.run("run", "--enable", case, "--cpuset", f"{good},{bad}", "--time-budget", budget, *args, "--npd")
        return p.returncode, report, p.stdout, promtext, npd.stdout.strip(), p.stderr


def retests(report):
    return [x for t in (report or {}).get("tests", []) for x in t.get("retest", [])]


def check_schema(report, what):
    errs = common.schema_errors(report)
    F.check(not errs, f"{what}: report does not match the schema: {errs}")


def drill(persist, case=CASE, element=5):
    return f"case={case},element={element},bit=3,unit={bad},persist={persist}"


# --- no fault: nothing to retest, and nothing classified ------------------------------------------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "3")
F.check(code == 0 and rep and rep["retest_on_failure"] == 3 and not retests(rep),
        f"clean run: exit {code}, retests {retests(rep)} ({err.strip()[:300]})")
F.check("retest on" not in text and "sdcscreen_device_fault_class{" not in prom and npd.startswith("OK:"),
        f"clean run: a classification where nothing failed: {npd}")
check_schema(rep, "clean run")

# --- a stuck fault: persistent, not input-dependent, the neighbour clean ------------------------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "3", "--inject", drill("always"))
r = retests(rep)
F.check(code == 1 and len(r) == 1, f"persist=always: exit {code}, retests {r} ({err.strip()[:300]})")
if r:
    x = r[0]
    F.check(x["unit"] == {"kind": "cpu", "cpu": bad} and x["classification"] == "persistent" and x["rate"] == 1.0,
            f"persist=always: {x}")
    F.check(x["same_seed"] == {"runs": 3, "failed": 3, "same_bits": 3} and x["tiles"] == 1, f"persist=always: {x}")
    F.check(x["fresh_seeds"]["runs"] == 3 and x["fresh_seeds"]["failed"] == 3 and x["input_dependent"] is False
            and x["fresh_seeds"]["compared_with"] == {"kind": "cpu", "cpu": good}, f"persist=always fresh: {x}")
    F.check(len(x["siblings"]) == 1 and x["siblings"][0]["unit"]["cpu"] == good and x["siblings"][0]["runs"] == 3
            and x["siblings"][0]["failed"] == 0 and x["complete"], f"persist=always siblings: {x}")
F.check(f"retest on cpu {bad} (1 failing tile(s), 3 run(s) each way): persistent (3 of 3 failed again, 3 with "
        f"the same bits); fresh seeds: 3 of 3 failed against cpu {good}: not input-dependent" in text,
        f"persist=always: text report:\n{text}")
F.check(f"neighbour cpu {good} (" in text and "): 0 of 3 failed" in text, f"persist=always: neighbours:\n{text}")
# What to do: one next line for the failing CPU (drain; its burn-in retest alone, safe to paste: none of the run's
# outputs; replace or RMA, since the retest found it persistent), after the signature and the retest.
lines = text.splitlines()
nexts = [ln for ln in lines if ln.startswith("next: ")]
want = (f"next: cpu {bad}: drain the node; retest it alone: {common.SDCSCREEN} run --profile burnin --backend cpu "
        f"--cpuset {bad} --history none; persistent: replace or RMA its package")
F.check(len(nexts) == 1 and nexts[0].startswith(want) and "-o" not in nexts[0].split() and "--prometheus" not in nexts[0]
        and nexts[0].endswith(" [drill: the failure was injected]"),
        f"persist=always: next lines {nexts}, want one starting {want!r}")
order = [next((i for i, ln in enumerate(lines) if ln.startswith(p)), -1)
         for p in ("  signature on ", f"  retest on cpu {bad} ", "  iteration ")]
F.check(-1 not in order and order == sorted(order), f"persist=always: signature, retest, elements out of order: {order}")
if nexts:  # the retest line runs as pasted (here cut short by a 1 ms budget: inconclusive, never a usage error)
    cmd = shlex.split(nexts[0].split("retest it alone: ", 1)[1].split("; ")[0])
    p = subprocess.run([cmd[0], *common.with_lock(cmd[1:]), "--time-budget", "1ms", "-q"], capture_output=True,
                       text=True, timeout=120)
    F.check(p.returncode == 2, f"the next line's retest as pasted: exit {p.returncode} {p.stderr[-300:]}")
F.check(f'sdcscreen_device_fault_class{{cpu="{bad}",class="persistent"}} 1' in prom and
        f'sdcscreen_device_fault_rate{{cpu="{bad}"}} 1.0000' in prom, f"persist=always: prometheus:\n{prom}")
F.check(npd == f"SDC: cpu {bad} persistent softmax_f32 [drill]", f"persist=always: npd line '{npd}'")
check_schema(rep, "persist=always")
inj = rep["injections"][0] if rep else {}
F.check(inj.get("persist") == "always" and inj.get("fired"), f"persist=always: injection {inj}")

# --- an input-dependent fault: persistent on its own inputs, silent on fresh seeds -------------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "2", "--inject", drill("input"))
r = retests(rep)
F.check(code == 1 and len(r) == 1 and r[0]["classification"] == "persistent" and r[0]["input_dependent"] is True
        and r[0]["fresh_seeds"] == {"runs": 2, "failed": 0, "compared_with": {"kind": "cpu", "cpu": good}}
        and r[0]["same_seed"]["runs"] == 2, f"persist=input: exit {code}, {r}")
F.check(": input-dependent" in text, f"persist=input: text:\n{text}")

# --- a one-off: not reproduced --------------------------------------------------------------------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "3", "--inject", drill("once"))
r = retests(rep)
F.check(code == 1 and len(r) == 1 and r[0]["classification"] == "not reproduced" and r[0]["rate"] == 0
        and r[0]["same_seed"]["failed"] == 0 and r[0]["input_dependent"] is None
        and r[0]["fresh_seeds"]["failed"] == 0, f"persist=once: exit {code}, {r}")
F.check(npd == f"SDC: cpu {bad} not reproduced softmax_f32 [drill]", f"persist=once: npd line '{npd}'")
F.check(any(ln.startswith(f"next: cpu {bad}: drain the node; ") and "; not reproduced: replace or RMA its package" in ln
            and ln.endswith(" if the retest fails again [drill: the failure was injected]") for ln in text.splitlines()),
        f"persist=once: next line:\n{text}")
F.check(f'sdcscreen_device_fault_class{{cpu="{bad}",class="not_reproduced"}} 1' in prom, "once: prometheus")

# --- an intermittent fault: every other computation; the rate follows from the count -------------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "3", "--inject", drill("1/2"))
r = retests(rep)
test = rep["tests"][0] if rep else {}
its = test.get("iterations", 0)
# The main run's iterations are computations 0..its-1 (it fires in the even ones); the retests are its..its+2.
expected = sum(1 for k in range(its, its + 3) if k % 2 == 0)
F.check(code == 1 and len(r) == 1 and r[0]["classification"] == "intermittent"
        and r[0]["same_seed"]["failed"] == expected and abs(r[0]["rate"] - expected / 3) < 1e-9,
        f"persist=1/2: exit {code}, {its} iterations, expected {expected} of 3: {r}")
F.check(f"intermittent, rate {expected / 3:.2f}" in text, f"persist=1/2: text:\n{text}")
F.check(f"intermittent softmax_f32" in npd, f"persist=1/2: npd '{npd}'")

# --- a case of many tiles, the fault in several of them (an input element every tile reads) -------------------
code, rep, text, prom, npd, err = screen("--retest-on-failure", "2", "--inject",
                                         f"case={GEMM},target=input,tensor=b,element=3,bit=30,unit={bad},persist=always",
                                         case=GEMM)
r = retests(rep)
tiles_failed = {m["tile"] for t in rep["tests"] for m in t["miscompares"]} if rep else set()
F.check(code == 1 and len(r) == 1 and r[0]["classification"] == "persistent" and 1 < r[0]["tiles"] <= 8
        and r[0]["input_dependent"] is False, f"gemm input fault: exit {code}, {r} ({err.strip()[:300]})")

# --- without --retest-on-failure: the profile's default (0 in boot, 3 in standard) ----------------------------
code, rep, text, prom, npd, err = screen("--inject", drill("always"))
F.check(code == 1 and rep and rep["retest_on_failure"] == 0 and not retests(rep) and "persistent" not in npd,
        f"boot default: exit {code}, retest_on_failure {rep and rep['retest_on_failure']}, {retests(rep)}")
code, rep, text, prom, npd, err = screen("--profile", "standard", "--inject", drill("always"), budget="2s")
F.check(code == 1 and rep and rep["retest_on_failure"] == 3 and retests(rep)
        and retests(rep)[0]["classification"] == "persistent",
        f"standard default: exit {code}, retest_on_failure {rep and rep['retest_on_failure']}, {retests(rep)}")
code, rep, text, prom, npd, err = screen("--retest-on-failure", "0", "--profile", "standard", "--inject",
                                         drill("always"), budget="2s")
F.check(code == 1 and rep and rep["retest_on_failure"] == 0 and not retests(rep), f"--retest-on-failure 0: {code}")

# --- one CPU: no neighbour, no unit to compare fresh seeds with; still classified -----------------------------
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.json")
    p = common.run("run", "--enable", CASE, "--cpuset", str(bad), "--retest-on-failure", "2", "--inject",
                   drill("always"), "--output-format", "json", "-o", out)
    rep = json.load(open(out)) if os.path.exists(out) else None
    r = retests(rep)
    F.check(p.returncode == 1 and len(r) == 1 and r[0]["classification"] == "persistent" and r[0]["siblings"] == []
            and r[0]["fresh_seeds"] == {"runs": 0, "failed": 0, "compared_with": None}
            and r[0]["input_dependent"] is None, f"one CPU: exit {p.returncode}, {r}")
    F.check("fresh seeds not run" in p.stdout, f"one CPU: the text does not say fresh seeds did not run:\n{p.stdout}")

# --- the history keeps the classification -------------------------------------------------------------------
with tempfile.TemporaryDirectory() as d:
    screen("--retest-on-failure", "2", "--inject", drill("always"), history=d)
    lines = open(os.path.join(d, "history.jsonl")).read().splitlines()
    rec = json.loads(lines[-1]) if lines else {}
    F.check(any(f.get("class") == "persistent" and f.get("unit") == f"cpu {bad}" for f in rec.get("failures", [])),
            f"history: {rec}")
    # A drill's failure is not counted in the summary: the same line as a real failure's (another screen's) is.
    rec["drill"] = False
    rec["run"] = "0" * 32
    for f in rec.get("failures", []):
        f["drill"] = False
    with open(os.path.join(d, "history.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    p = common.run("history", d)
    F.check(p.returncode == 0 and "retest persistent" in p.stdout, f"history: exit {p.returncode}\n{p.stdout}")
    p = common.run("history", d, "--output-format", "json")
    units = {u["unit"]: u for u in json.loads(p.stdout)["units"]} if p.returncode == 0 else {}
    F.check(units.get(f"cpu {bad}", {}).get("classifications") == ["persistent"], f"history json: {units}")

# --- the Slurm health check's drain reason names the class --------------------------------------------------
p = common.healthcheck_dry_run(f"--enable {CASE} --cpuset {good},{bad} --retest-on-failure 2 --inject {drill('always')}")
F.check(f"state=drain reason=SDC: cpu {bad} persistent softmax_f32 drill" in p.stderr,
        f"slurm health check: exit {p.returncode}, no classified reason in:\n{p.stderr[-1500:]}")

# --- bad input: one line, exit 64 ------------------------------------------------------------------------------
for args, words in ((["--retest-on-failure", "-1"], "--retest-on-failure"),
                    (["--retest-on-failure", "many"], "--retest-on-failure"),
                    (["--retest-on-failure", "101"], "--retest-on-failure"),
                    (["--inject", f"case={CASE},element=5,bit=3,unit={bad},persist=sometimes"], "persist 'sometimes'"),
                    (["--inject", f"case={CASE},element=5,bit=3,unit={bad},persist=1/1"], "persist '1/1'"),
                    (["--inject", f"case={CASE},element=5,bit=3,persist=always"], "needs unit=N"),
                    (["--inject", f"case={CASE},action=hang,unit={bad},persist=always"], "action=hang takes")):
    p = common.run("run", "--enable", CASE, *args)
    F.check(p.returncode == 64 and words in p.stderr and p.stderr.count("\n") <= 2,
            f"{args}: exit {p.returncode}, stderr {p.stderr.strip()[:300]}")

F.finish()

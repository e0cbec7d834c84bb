"""The supervisor writes a failing screen's outputs when the screen died before it did (no-fail-open, round 2),
and names the CPU of a worker that crashes outside any tile.

1. The screen child killed outright (SIGKILL, the OOM killer) after a miscompare: -o (JSON), --prometheus,
   --html and the history line are the supervisor's, say fail (exit 1), say that the supervisor wrote them
   after the screen died of SIGKILL, and the screen's unrecorded marker is gone (its line is written); every CPU
   it was given is in units[] (the others idle) and has its sdcscreen_device_healthy series (0).
2. A crash in the report writer after a miscompare (SDCSCREEN_DRILL_REPORT_CRASH=1), -o in text: the same.
3. A crash after -o and the Prometheus file were written (SDCSCREEN_DRILL_REPORT_CRASH=html): those stay the
   screen's own (with the miscompare's element), the HTML page and the history line are the supervisor's.
4. A worker that crashes while it is pinned but in no tile (SDCSCREEN_DRILL_WORKER_CRASH: while it generates
   inputs, between two tiles, a stack overflow caught on its alternate signal stack): the crash names its
   CPU in the report's units and crash test, the drain reason and the NPD line (was anonymous: exit 2).
5. The report crash after a miscompare on a GPU (two GPUs emulated on the CPU): the supervisor's report names
   that GPU as the screen knew it (a valid report), and the history line's failure is that GPU's.
docs/reliability.md lists each path with this test."""
import glob
import json
import os
import re
import signal
import subprocess
import tempfile

import common
from common import Failures, SDCSCREEN, history_lines, with_lock

F = Failures("e2e_supervisor_outputs")
FAIL_CASE, LONG_CASE = "gemm_f32.special_512", "attention_f32.causal_uniform_16x2048x128"
QUICK = "softmax_f32.special_128x1000"
VALIDATOR = common.report_validator()


def read(path):
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def check_supervisor_report(what, r, case, signame):
    """r: the JSON report the supervisor wrote after the screen died of signame with a miscompare in case."""
    if r is None:
        F.check(False, f"{what}: no report")
        return
    errs = list(VALIDATOR.iter_errors(r))
    F.check(not errs, f"{what}: the supervisor's report does not validate: {[e.message for e in errs[:3]]}")
    F.check(r["exit"] == {"code": 1, "verdict": "fail"}, f"{what}: report exit {r['exit']}")
    said = " ".join(r["errors"])
    F.check("written by the screen's supervisor" in said and signame in said and case in said,
            f"{what}: the report does not say who wrote it and why: {r['errors']}")
    failed = [t for t in r["tests"] if t["result"] == "fail"]
    F.check([t["id"] for t in failed] == [case] and len(failed[0]["units_failed"]) == 1,
            f"{what}: failed tests {[(t['id'], t['units_failed']) for t in failed]}")
    F.check(all(t["result"] == "skip" for t in r["tests"] if t["id"] != case),
            f"{what}: the tests not known are not skip: {[(t['id'], t['result']) for t in r['tests']]}")


def check_history(what, d, case, report_path):
    h = history_lines(d)
    F.check(len(h) == 1 and h[0]["exit"] == 1 and [x["case"] for x in h[0].get("failures", [])] == [case]
            and h[0].get("report") == report_path and h[0].get("run"),
            f"{what}: history {h}")
    F.check(h and all(x.get("drill") for x in h[0].get("failures", [])), f"{what}: the drill's failure is not a drill's")
    F.check(not glob.glob(os.path.join(d, "unrecorded-*")), f"{what}: the unrecorded marker stayed: {os.listdir(d)}")


# 1. SIGKILL of the screen child after its miscompare was found (the -v line of the failing test is out).
with tempfile.TemporaryDirectory() as d:
    out, prom, page = (os.path.join(d, n) for n in ("r.json", "s.prom", "r.html"))
    args = ["run", "--backend", "cpu", "--profile", "standard", "--enable", FAIL_CASE, "--enable", LONG_CASE,
            "--inject", f"case={FAIL_CASE},element=5000,bit=3", "-v", "-q", "--output-format", "json", "-o", out,
            "--prometheus", prom, "--html", page, "--history", d]
    p, seen = common.start_until(args, FAIL_CASE)
    try:
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        kids = []
    F.check(len(kids) == 1 and " fail " in seen, f"SIGKILL: children {kids}, stderr {seen[-300:]}")
    for k in kids:
        os.kill(k, signal.SIGKILL)
    err = p.communicate(timeout=120)[1]
    F.check(p.returncode == 1, f"SIGKILL: exit {p.returncode}, want 1: {err[-400:]}")
    F.check("its supervisor writes the outputs" in err, f"SIGKILL: stderr {err[-400:]}")
    r = json.loads(read(out) or "null")
    check_supervisor_report("SIGKILL", r, FAIL_CASE, "SIGKILL")
    text = read(prom)
    F.check("sdcscreen_exit_code 1\n" in text, f"SIGKILL: Prometheus {text[:300]!r}")
    # Every CPU the screen was given is a unit of the report and a 0 series of sdcscreen_device_healthy (the
    # SilentDataCorruptionUnit alert's), not only the one that failed: what the others computed died with the
    # screen (idle: no tile on record).
    given = sorted(os.sched_getaffinity(0))
    units = {u["cpu"]: u["result"] for u in (r or {}).get("units", []) if u.get("kind") == "cpu"}
    failing = [c for c, res in units.items() if res == "fail"]
    F.check(sorted(units) == given and len(failing) == 1 and
            all(res == "idle" for c, res in units.items() if c not in failing),
            f"SIGKILL: units {units}, want every CPU of {given}: one fail, the others idle")
    healthy = {int(m.group(1)): m.group(2) for m in re.finditer(r'^sdcscreen_device_healthy\{cpu="(\d+)"\} (\d)$',
                                                                   text, re.M)}
    F.check(healthy == {c: "0" for c in given}, f"SIGKILL: sdcscreen_device_healthy {healthy}, want 0 for each of {given}")
    html = read(page)
    F.check('data-verdict="fail"' in html and "written by the screen&#39;s supervisor" in html.replace("'", "&#39;"),
            "SIGKILL: the HTML page is not the supervisor's failing one")
    check_history("SIGKILL", d, FAIL_CASE, os.path.realpath(out))

# 2. A crash in the report writer after a miscompare, the report in text.
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.txt")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "-q", "--inject",
                                               f"case={QUICK},element=5,bit=3", "-o", out, "--history", d])],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="1"))
    F.check(p.returncode == 1, f"report crash, text: exit {p.returncode}: {p.stderr[-400:]}")
    text = read(out)
    F.check("written by the screen's supervisor" in text and "SIGSEGV" in text and QUICK in text
            and "screen in progress" not in text, f"report crash, text: the report {text[:600]!r}")
    check_history("report crash, text", d, QUICK, os.path.realpath(out))

# 3. A crash after -o and the Prometheus file were written: those are the screen's, not replaced.
with tempfile.TemporaryDirectory() as d:
    out, prom, page = (os.path.join(d, n) for n in ("r.json", "s.prom", "r.html"))
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", QUICK, "-q", "--inject",
                                               f"case={QUICK},element=5,bit=3", "--output-format", "json", "-o", out,
                                               "--prometheus", prom, "--html", page, "--history", d])],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="html"))
    F.check(p.returncode == 1, f"crash before --html: exit {p.returncode}: {p.stderr[-400:]}")
    r = json.loads(read(out) or "null")
    F.check(r is not None and r["exit"]["code"] == 1 and not any("supervisor" in e for e in r["errors"])
            and any(t["miscompares"] for t in r["tests"]),
            f"crash before --html: -o is not the screen's own report: {r and (r['exit'], r['errors'])}")
    F.check("sdcscreen_exit_code 1\n" in read(prom), "crash before --html: Prometheus")
    html = read(page)
    F.check('data-verdict="fail"' in html and "supervisor" in html, "crash before --html: the HTML page")
    check_history("crash before --html", d, QUICK, os.path.realpath(out))

# 4. A worker that crashes pinned but outside any tile names its CPU.
cpus = sorted(os.sched_getaffinity(0))
victim = cpus[-1]
for where, said in (("", "while generating the inputs of "), (":between", "between tiles (after tile "),
                    (":stack", "before its first tile")):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--cpuset", ",".join(map(str, cpus[-2:])),
                                                   "--enable", QUICK, "--output-format", "json", "-o", out, "--npd"])],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, SDCSCREEN_DRILL_WORKER_CRASH=f"{victim}{where}"))
        what = f"worker crash{where or ':inputs'}"
        F.check(p.returncode == 1 and f"cpu {victim} died of SIGSEGV" in p.stderr and said in p.stderr,
                f"{what}: exit {p.returncode}, stderr {p.stderr[-400:]}")
        F.check(p.stdout.startswith(f"SDC: cpu {victim} "), f"{what}: NPD line {p.stdout!r}")
        r = json.loads(read(out) or "null") or {"tests": [], "units": []}
        crashed = [t for t in r["tests"] if t["result"] == "crash"]
        F.check(len(crashed) == 1 and crashed[0]["units_failed"] == [victim] and said in crashed[0].get("reason", ""),
                f"{what}: crash tests {crashed}")
        units = {u["cpu"]: u["result"] for u in r["units"]}
        F.check(units.get(victim) == "crash", f"{what}: units {units}")
        F.check(str(r.get("drain_reason", "")).startswith(f"SDC: cpu {victim} crash"),
                f"{what}: drain reason {r.get('drain_reason')!r}")
        F.check(any(w["name"] == "SDCSCREEN_DRILL_WORKER_CRASH" for w in r.get("weakened_by", [])),
                f"{what}: the drill is not named in weakened_by")

# 5. A GPU's miscompare, then the report crash: the GPU is named as the screen knew it.
GEMM = "gemm_bf16_exactint.uniform_256x192x512"
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.json")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:sm_90x4,sm_90x4", "--profile", "boot",
                                               "--enable", GEMM, "--inject", f"case={GEMM},element=0,bit=30,unit=2,device=1",
                                               "-q", "--output-format", "json", "-o", out, "--history", d])],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="1"))
    F.check(p.returncode == 1, f"GPU report crash: exit {p.returncode}: {p.stderr[-400:]}")
    r = json.loads(read(out) or "null")
    check_supervisor_report("GPU report crash", r, GEMM, "SIGSEGV")
    if r:
        F.check([(x["index"], x["kind"], x["uuid"].startswith("EMU-")) for x in r["devices"]] == [(1, "emulated", True)]
                and [t["device"] for t in r["tests"]] == ["cuda:1"] and r["tests"][0]["units_failed"] == [2],
                f"GPU report crash: devices {r['devices']}, tests {[(t['device'], t['units_failed']) for t in r['tests']]}")
        F.check(r.get("drain_reason") == f"SDC: gpu 1 {GEMM.split('.')[0]} drill", f"GPU: drain {r.get('drain_reason')!r}")
    h = history_lines(d)
    F.check(len(h) == 1 and [(x["unit"], x.get("sms")) for x in h[0]["failures"]] == [("gpu 1", [2])],
            f"GPU report crash: history {h}")

F.finish()

"""The node-boot use: 'sdcscreen run' with nothing but -q and a JSON report (default profile boot, default
backend auto, which is the CPU backend here). It must pass, cover every family and every CPU, and finish
well inside Slurm's 60 s health-check limit (wall time measured here, start-up included).
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_boot")
LIMIT_S = 60.0
FAMILIES = common.CPU_FAMILIES

with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "report.json")
    t0 = time.monotonic()
    p = common.run("run", "-q", "--output-format", "json", "-o", out, timeout=300)
    wall = time.monotonic() - t0
    print(f"boot wall time: {wall:.2f} s", flush=True)
    F.check(p.returncode == 0, f"boot: exit {p.returncode}, expected 0 (stderr: {p.stderr.strip()[:500]!r})")
    F.check(p.stdout == "", f"boot: -q printed on stdout: {p.stdout[:300]!r}")
    F.check(wall < LIMIT_S, f"boot: wall time {wall:.1f} s is not under {LIMIT_S:.0f} s")
    report = None
    try:
        with open(out) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        F.check(False, f"boot: no readable JSON report: {e}")

if report:
    F.check(report["profile"] == "boot", f"boot: profile {report['profile']!r}, expected the default 'boot'")
    F.check(report["backend"] == "cpu", f"boot: backend {report['backend']!r}, expected auto to choose cpu here")
    F.check(report["exit"] == {"code": 0, "verdict": "pass"}, f"boot: exit object {report['exit']}")
    F.check(report["errors"] == [], f"boot: errors {report['errors']}")
    F.check(report["fault_injection"] is False, "boot: marked as a fault-injection run")
    F.check(report["timing"]["duration_s"] <= wall, f"boot: reported duration {report['timing']['duration_s']} s > wall {wall:.2f} s")

    tests = report["tests"]
    boot_cases = [c["id"] for c in common.battery()["cases"] if "boot" in c["iterations"]]
    F.check([t["id"] for t in tests] == boot_cases, f"boot: tests {[t['id'] for t in tests]} are not the boot cases {boot_cases}")
    gpu_only = [t for t in tests if t["family"] in common.GPU_ONLY_FAMILIES]
    F.check(len(gpu_only) >= 1, "boot: no test of a GPU-only family (the skip path is not exercised)")
    for t in tests:
        if t in gpu_only:  # not applicable on a CPU: skipped with the reason, never reported as passed
            F.check(t["result"] == "not_applicable" and "GPUs only" in t.get("reason", "") and t["judged_by"] is None
                    and t["iterations"] == 0, f"boot: GPU-only {t['id']} on the CPU backend: {t}")
            continue
        F.check(t["result"] == "pass", f"boot: {t['id']} is {t['result']} ({t.get('reason', '')})")
        F.check(t["judged_by"] == t["mode"], f"boot: {t['id']} ({t['mode']}) judged by {t['judged_by']}")
        F.check(t["iterations"] >= 1 and t["tiles"] >= 1, f"boot: {t['id']} ran {t['iterations']} iterations of {t['tiles']} tiles")
        F.check(t["iterations"] == t["iterations_planned"], f"boot: {t['id']} ran {t['iterations']} of {t['iterations_planned']} iterations")
    present = {t["family"] for t in tests if t["result"] == "pass"}
    for fam in FAMILIES:
        if fam in common.GPU_ONLY_FAMILIES:
            F.check(any(t["family"] == fam for t in tests), f"boot: GPU-only family {fam} has no boot case")
            continue
        F.check(fam in present, f"boot: family {fam} has no passing test in the report")
    s = report["summary"]
    F.check(s["tests"] == len(boot_cases) and s["pass"] == len(boot_cases) - len(gpu_only) and s["fail"] == s["error"] == 0
            and s["not_applicable"] == len(gpu_only) and s["skip"] == 0, f"boot: summary {s}")

    allowed = sorted(os.sched_getaffinity(0))
    units = report["units"]
    F.check(sorted(u["cpu"] for u in units) == allowed, f"boot: units {[u['cpu'] for u in units]} are not the CPUs {allowed}")
    for u in units:
        F.check(u["tiles"] > 0, f"boot: cpu {u['cpu']} computed no tile")
        F.check(u["failed_tiles"] == 0 and u["result"] == "pass", f"boot: cpu {u['cpu']}: {u}")

F.finish()

"""No path from a faulty unit to a node left in service (the reproductions of the no-fail-open issue that
are fixed so far): a failed write to stderr never decides the exit code, a miscompare is never hidden by a
signal that comes after it, and a report that cannot be written after the run is not lost.
docs/reliability.md lists each guarantee with its test."""
import os
import signal
import subprocess
import tempfile
import json

from common import Failures, SDCSCREEN, with_lock

F = Failures("e2e_no_fail_open")


def run_to(args, stderr_to="/dev/full", timeout=600):
    with open(stderr_to, "w") as err:
        return subprocess.run([SDCSCREEN, *with_lock(args)], stdout=subprocess.DEVNULL, stderr=err,
                              timeout=timeout).returncode


# 1. A usage error whose message cannot be written is still a usage error (it aborted: 134).
rc = run_to(["run", "--bogus"])
F.check(rc == 64, f"--bogus 2>/dev/full: exit {rc}, want 64")
rc = run_to(["frobnicate"])
F.check(rc == 64, f"unknown subcommand 2>/dev/full: exit {rc}, want 64")

# 2. Progress lines (-v) that cannot be written change nothing: a pass stays 0, a miscompare stays 1.
case = "softmax_f32.special_128x1000"
rc = run_to(["run", "--backend", "cpu", "--enable", case, "-v", "-q"])
F.check(rc == 0, f"-v 2>/dev/full on a passing screen: exit {rc}, want 0")
rc = run_to(["run", "--backend", "cpu", "--enable", case, "-v", "-q", "--inject", f"case={case},element=5,bit=3"])
F.check(rc == 1, f"-v 2>/dev/full with a miscompare: exit {rc}, want 1")

# 3. A miscompare followed by SIGTERM: exit 1 (not 143), the report says both, Prometheus says 1.
fail_case, long_case = "gemm_f32.special_512", "attention_f32.causal_uniform_16x2048x128"
with tempfile.TemporaryDirectory() as d:
    out, prom = os.path.join(d, "r.json"), os.path.join(d, "sdcscreen.prom")
    p = subprocess.Popen([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--profile", "standard", "--enable",
                                                 fail_case, "--enable", long_case, "--inject",
                                                 f"case={fail_case},element=5000,bit=3", "-v", "--output-format",
                                                 "json", "-o", out, "-q", "--prometheus", prom])],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = ""
    for line in p.stderr:
        seen += line
        if fail_case in line:
            break
    p.send_signal(signal.SIGTERM)
    rest, _ = p.communicate(timeout=300)
    F.check(f"{fail_case} cpu fail" in seen or ("fail" in seen and fail_case in seen),
            f"SIGTERM after a miscompare: the failing test did not finish first: {seen[-300:]}")
    F.check(p.returncode == 1, f"SIGTERM after a miscompare: exit {p.returncode}, want 1")
    if os.path.exists(out):
        with open(out) as f:
            r = json.load(f)
        F.check(r["exit"] == {"code": 1, "verdict": "fail"}, f"SIGTERM after a miscompare: report exit {r['exit']}")
        F.check(r["interrupted_by_signal"] == 15, f"report interrupted_by_signal {r['interrupted_by_signal']}")
    else:
        F.check(False, "SIGTERM after a miscompare: no report")
    if os.path.exists(prom):
        with open(prom) as f:
            text = f.read()
        F.check("sdcscreen_exit_code 1\n" in text, "Prometheus exit code is not 1")
    else:
        F.check(False, "SIGTERM after a miscompare: no Prometheus file")
# 4. A file that cannot be written after the run (a valid 245-character name whose temporary name is too
#    long): the report falls back to stdout (stderr with --npd), the NPD line is still printed, and the exit
#    code is 78, or 1 when there is a miscompare.
drill = ["--inject", f"case={case},element=5,bit=3"]
with tempfile.TemporaryDirectory() as d:
    long_name = os.path.join(d, "r" * 245)
    for extra, want in (([], 78), (drill, 1)):
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "-q",
                                                   "--output-format", "json", "-o", long_name, *extra])],
                           capture_output=True, text=True, timeout=600)
        F.check(p.returncode == want, f"-o after the run failed ({'drill' if extra else 'clean'}): exit "
                                      f"{p.returncode}, want {want}")
        try:
            r = json.loads(p.stdout)
            F.check(any(t["id"] == case for t in r["tests"]) and r["exit"]["code"] == (1 if extra else 0),
                    f"-o fallback: the report on stdout lacks the test or says {r['exit']}")
        except ValueError:
            F.check(False, f"-o fallback: stdout is not the JSON report: {p.stdout[:200]!r}")
        F.check("-o:" in p.stderr and "stdout" in p.stderr, f"-o fallback: stderr says {p.stderr[:200]!r}")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "--npd",
                                               "--output-format", "json", "-o", long_name, *drill])],
                       capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    F.check(p.returncode == 1 and len(lines) == 1 and lines[0].startswith("SDC:"),
            f"--npd with -o failing: exit {p.returncode}, stdout {p.stdout[:200]!r}")
    F.check('"tests"' in p.stderr, "--npd with -o failing: the report is not on stderr")
    for extra, want in (([], 78), (drill, 1)):
        rc = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "-q",
                                                    "--prometheus", long_name + ".prom", *extra])],
                            capture_output=True, text=True, timeout=600).returncode
        F.check(rc == want, f"--prometheus after the run failed ({'drill' if extra else 'clean'}): exit {rc}, "
                            f"want {want}")
# 5. Bad seeds are refused (they were taken: -1 as 2^64 - 1, "" as 0, overflow as something).
for bad in ("-1", "", "18446744073709551616", "12x"):
    rc = run_to(["run", "--backend", "cpu", "--enable", case, "-q", "--seed", bad], stderr_to="/dev/null")
    F.check(rc == 64, f"--seed {bad!r}: exit {rc}, want 64")
rc = run_to(["run", "--backend", "cpu", "--enable", case, "-q", "--seed", "18446744073709551615"])
F.check(rc == 0, f"--seed 2^64-1: exit {rc}, want 0")

# 5b. A bare number is a time budget in seconds.
rc = run_to(["run", "--backend", "cpu", "--enable", case, "-q", "--time-budget", "45"])
F.check(rc == 0, f"--time-budget 45: exit {rc}, want 0")

# 6. The NPD OK line counts passes, not skips; --devices on a host without GPUs does not claim one was found.
gpu_only = "gemm_bf16_cublaslt.uniform_1024x1024x1024"
p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "--enable", gpu_only,
                                           "--npd"])], capture_output=True, text=True, timeout=600)
F.check(p.returncode == 0 and p.stdout.startswith("OK: 1 tests passed, 1 not applicable"),
        f"NPD OK line: exit {p.returncode}, {p.stdout.strip()!r}")
p = subprocess.run([SDCSCREEN, *with_lock(["run", "--devices", "0", "--enable", case])], capture_output=True,
                   text=True, timeout=600)
if p.returncode == 2:  # no usable GPU here (CI): the report must not say one was found
    F.check("a usable GPU was found" not in p.stdout, f"--devices without a GPU: {p.stdout[:300]!r}")

# 7. A drill that fired but changed no output proves nothing: "fired, masked", exit 2.
masked = f"case={case},element=5,bit=30,target=input,tensor=x"
p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "--inject", masked])],
                   capture_output=True, text=True, timeout=600)
F.check(p.returncode == 2 and "fired, masked" in p.stdout, f"masked drill: exit {p.returncode}, {p.stdout[-400:]!r}")

with tempfile.TemporaryDirectory() as d:
    # 8. -o - is stdout (no file named '-'); -o or --prometheus into the pattern directory is refused.
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--enable", case, "-q", "--output-format",
                                               "json", "-o", "-"])], capture_output=True, text=True, timeout=600,
                       cwd=d)
    try:
        F.check(p.returncode == 0 and json.loads(p.stdout)["exit"]["code"] == 0, f"-o -: exit {p.returncode}")
    except ValueError:
        F.check(False, f"-o -: stdout is not the report: {p.stdout[:200]!r}")
    F.check(not os.path.exists(os.path.join(d, "-")), "-o -: a file named '-' was created")
    import shutil
    pat = os.path.join(d, "patterns")
    shutil.copytree(os.path.join(os.environ["SDC_SOURCE_DIR"], "patterns"), pat)
    with open(os.path.join(pat, "manifest.json"), "rb") as f:
        before = f.read()
    for flag in ("-o", "--prometheus"):
        rc = run_to(["run", "--backend", "cpu", "--enable", case, "-q", "--patterns", pat, flag,
                     os.path.join(pat, "manifest.json")], stderr_to="/dev/null")
        F.check(rc == 64, f"{flag} into the pattern directory: exit {rc}, want 64")
    with open(os.path.join(pat, "manifest.json"), "rb") as f:
        F.check(f.read() == before, "the pattern directory's manifest was changed")

    # 9. A lock file planted as a symbolic link is refused, and its target is left alone.
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    link = os.path.join(d, "x.lock")
    os.symlink(victim, link)
    rc = subprocess.run([SDCSCREEN, "run", "--backend", "cpu", "--enable", case, "-q", "--lock-file", link],
                        capture_output=True, text=True, timeout=600).returncode
    F.check(rc == 78, f"symlinked lock file: exit {rc}, want 78")
    with open(victim) as f:
        F.check(f.read() == "precious\n", "the symlinked lock file's target was truncated")
    # ... and so is one planted as a hard link (the same file under a second name).
    hard = os.path.join(d, "h.lock")
    os.link(victim, hard)
    p = subprocess.run([SDCSCREEN, "run", "--backend", "cpu", "--enable", case, "-q", "--lock-file", hard],
                       capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 78 and "hard links" in p.stderr, f"hard-linked lock file: exit {p.returncode} {p.stderr!r}")
    with open(victim) as f:
        F.check(f.read() == "precious\n", "the hard-linked lock file's target was rewritten")
# 10. The Prometheus carry-over takes only a true previous success time: garbage, overflow, a negative or a
#     future timestamp is dropped, a plausible one is kept (a failing screen does not update it).
with tempfile.TemporaryDirectory() as d:
    prom = os.path.join(d, "s.prom")
    for previous, kept in (("abc", False), ("1e400", False), ("-5", False), ("99999999999", False),
                           ("12x", False), ("1000.5", True)):
        with open(prom, "w") as f:
            f.write(f"sdcscreen_last_success_timestamp_seconds {previous}\n")
        rc = run_to(["run", "--backend", "cpu", "--enable", case, "-q", "--prometheus", prom, *drill],
                    stderr_to="/dev/null")
        with open(prom) as f:
            text = f.read()
        has = "sdcscreen_last_success_timestamp_seconds 1000.500" in text
        # What is dropped leaves no series: no screen has passed (the never-passed alert reads its absence).
        stray = "\nsdcscreen_last_success_timestamp_seconds " in text and not has
        F.check(rc == 1 and has == kept and not stray, f"carry-over of {previous!r}: exit {rc}, kept {has}, other {stray}")

# 11. golden refuses one CPU: its two passes must be independent (on two CPUs).
with tempfile.TemporaryDirectory() as d:
    import shutil
    pat = os.path.join(d, "p")
    shutil.copytree(os.path.join(os.environ["SDC_SOURCE_DIR"], "patterns"), pat)
    p = subprocess.run([SDCSCREEN, "golden", "--cpuset", "0", "--patterns", pat], capture_output=True, text=True,
                       timeout=600)
    F.check(p.returncode == 64 and "two different CPUs" in p.stderr, f"golden --cpuset 0: exit {p.returncode}")
    # ... and the installed pattern directory (the package's) without --force.
    os.makedirs(os.path.join(d, "inst", "bin"))
    os.makedirs(os.path.join(d, "inst", "share", "sdcscreen"))
    shutil.copy2(SDCSCREEN, os.path.join(d, "inst", "bin", "sdcscreen"))
    shutil.copytree(pat, os.path.join(d, "inst", "share", "sdcscreen", "patterns"))
    manifest = os.path.join(d, "inst", "share", "sdcscreen", "patterns", "manifest.json")
    before = open(manifest, "rb").read()
    p = subprocess.run([os.path.join(d, "inst", "bin", "sdcscreen"), "golden"], capture_output=True, text=True,
                       timeout=600)
    F.check(p.returncode == 64 and "installed pattern directory" in p.stderr and open(manifest, "rb").read() == before,
            f"golden on the installed patterns: exit {p.returncode}, {p.stderr.strip()[:200]!r}")

# 12. A hung unit is named in every output: the test's reason, units[] (result hung), Prometheus
#     (sdcscreen_device_hung) and the NPD line, which leads with it (it is cut at 80 characters). Its peer
#     finished, so it is a failed unit: exit 1 (test_kept_verdict.py has the drain and the all-hung case).
cpus = sorted(os.sched_getaffinity(0))
if len(cpus) >= 2:
    hung_cpu = cpus[1]
    with tempfile.TemporaryDirectory() as d:
        out, prom = os.path.join(d, "r.json"), os.path.join(d, "s.prom")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "cpu", "--cpuset", f"{cpus[0]},{hung_cpu}",
                                                   "--enable", case, "--inject",
                                                   f"case={case},action=hang,unit={hung_cpu}", "--npd",
                                                   "--output-format", "json", "-o", out, "--prometheus", prom])],
                           capture_output=True, text=True, timeout=600)
        F.check(p.returncode == 1 and p.stdout.startswith(f"SDC: cpu {hung_cpu} hung (watchdog) in {case}"),
                f"hang: exit {p.returncode}, NPD {p.stdout.strip()!r}")
        r = json.load(open(out)) if os.path.exists(out) else {"units": [], "tests": []}
        units = {u["cpu"]: u["result"] for u in r["units"]}
        F.check(units.get(hung_cpu) == "hung" and units.get(cpus[0]) != "hung", f"hang: units {units}")
        with open(prom) as f:
            text = f.read()
        F.check(f'sdcscreen_device_hung{{cpu="{hung_cpu}"}} 1' in text, "hang: Prometheus does not name it")

# 13. A GPU node never passes on its CPUs alone: NVIDIA GPUs on the PCI bus (a faked sysfs tree) that CUDA
#     cannot use make --backend auto exit 2 naming them; --backend cpu still screens the CPUs; a tree with
#     only another vendor's display controller changes nothing.
with tempfile.TemporaryDirectory() as d:
    def device(addr, vendor, cls):
        os.makedirs(os.path.join(d, "bus", "pci", "devices", addr))
        for name, value in (("vendor", vendor), ("class", cls)):
            with open(os.path.join(d, "bus", "pci", "devices", addr, name), "w") as f:
                f.write(value + "\n")
    device("0000:00:02.0", "0x8086", "0x030000")
    env = dict(os.environ, SDCSCREEN_SYSFS_ROOT=d)
    def auto(*extra):
        return subprocess.run([SDCSCREEN, *with_lock(["run", "--enable", case, *extra])], capture_output=True,
                              text=True, timeout=600, env=env)
    p = auto("--npd")
    gpu_usable = p.returncode == 0 and "gpus" in p.stdout
    if not gpu_usable:  # this machine has no usable GPU (CI): the check applies
        F.check(p.returncode == 0, f"auto with no NVIDIA device on the bus: exit {p.returncode} {p.stdout!r}")
        device("0000:1b:00.0", "0x10de", "0x030200")
        p = auto()  # the text report: the NPD line is cut before its [weakened: SDCSCREEN_SYSFS_ROOT] mark
        F.check(p.returncode == 2 and "NVIDIA GPU(s) on the PCI bus (0000:1b:00.0)" in p.stdout,
                f"auto on a GPU node without a usable driver: exit {p.returncode}, {p.stdout!r}")
        p = auto("--backend", "cpu", "-q")
        F.check(p.returncode == 0, f"--backend cpu on that node: exit {p.returncode}")
        # --expect-devices pci (the deploy configs' default): every NVIDIA GPU on the bus must be screened.
        device("0000:1c:00.0", "0x10de", "0x030200")
        p = auto("--expect-devices", "pci", "--backend", "emulated:1")
        F.check(p.returncode == 2 and "--expect-devices pci (2 NVIDIA GPU(s) on the PCI bus): only 1" in p.stdout,
                f"--expect-devices pci with a GPU missing: exit {p.returncode}, {p.stdout!r}")
        p = auto("--expect-devices", "pci", "--backend", "emulated:2", "-q")
        F.check(p.returncode == 0, f"--expect-devices pci with every GPU: exit {p.returncode} {p.stderr!r}")
        p = auto("--expect-devices", "pci", "-q")
        F.check(p.returncode == 2, f"--expect-devices pci, GPUs on the bus, no driver: exit {p.returncode}")
        p = auto("--expect-devices", "pci", "--backend", "cpu")
        F.check(p.returncode == 64 and "--backend cpu does not screen" in p.stderr,
                f"--expect-devices pci with --backend cpu on a GPU node: exit {p.returncode} {p.stderr!r}")
        # --cpuset names CPUs to screen: on this GPU node they are screened (not the GPUs, as auto alone would),
        # and with GPUs expected too the command line contradicts itself (the wrappers add no pci then).
        p = auto("--cpuset", "0", "--output-format", "json", "-o", "-")
        F.check(p.returncode == 0 and '"backend": "cpu"' in p.stdout and '"backend_reason": "--cpuset' in p.stdout,
                f"--cpuset on a GPU node: exit {p.returncode}, {p.stdout[:300]!r} {p.stderr!r}")
        p = auto("--cpuset", "0", "--expect-devices", "pci")
        F.check(p.returncode == 64 and "--cpuset (CPUs) does not screen" in p.stderr,
                f"--cpuset with --expect-devices pci on a GPU node: exit {p.returncode} {p.stderr!r}")
    # On a node without NVIDIA GPUs, --expect-devices pci asks for none: the CPUs are screened.
    os.makedirs(os.path.join(d, "empty", "bus", "pci", "devices"))
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--enable", case, "--expect-devices", "pci", "-q"])],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, SDCSCREEN_SYSFS_ROOT=os.path.join(d, "empty")))
    F.check(p.returncode == 0, f"--expect-devices pci on a CPU node: exit {p.returncode} {p.stderr!r}")
    # A PCI tree that cannot be read is not a bus without GPUs: the screen is inconclusive (2) and says why,
    # with --expect-devices pci and with --backend auto alike (a GPU node would otherwise pass on its CPUs).
    if not gpu_usable:
        for extra in (["--expect-devices", "pci"], []):
            p = subprocess.run([SDCSCREEN, *with_lock(["run", "--enable", case, *extra])],
                               capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, SDCSCREEN_SYSFS_ROOT=os.path.join(d, "nowhere")))
            F.check(p.returncode == 2 and "cannot read the PCI bus" in p.stdout
                    and "WEAKENED VERDICT: SDCSCREEN_SYSFS_ROOT=" in p.stdout,
                    f"unreadable PCI tree {extra}: exit {p.returncode}, {p.stdout!r}")

# 14. A unit that crashes the screen is the unit that failed (crash supervision): a worker takes a real
#     SIGSEGV (the hidden drill action=crash); the report names that CPU, iteration and signal as a `crash`
#     test, every other test passes on the other CPUs, exit 1, in the report, Prometheus and the NPD line.
from common import schema_errors  # noqa: E402
cpus = sorted(os.sched_getaffinity(0))
if len(cpus) >= 2:
    victim_cpu = cpus[1]
    crash_case = "softmax_f32.uniform_256x4096"
    sel = ["--backend", "cpu", "--cpuset", f"{cpus[0]},{victim_cpu}", "--enable", "softmax_f32.*", "--inject",
           f"case={crash_case},action=crash,unit={victim_cpu}"]
    with tempfile.TemporaryDirectory() as d:
        out, prom = os.path.join(d, "r.json"), os.path.join(d, "s.prom")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", *sel, "-q", "--output-format", "json", "-o", out,
                                                   "--prometheus", prom])], capture_output=True, text=True,
                           timeout=600)
        F.check(p.returncode == 1, f"crash: exit {p.returncode}, want 1: {p.stderr[-300:]}")
        F.check(f"cpu {victim_cpu} died of SIGSEGV" in p.stderr, f"crash: stderr {p.stderr[-300:]!r}")
        r = json.load(open(out)) if os.path.exists(out) else {"tests": [], "units": []}
        errs = schema_errors(r)
        F.check(not errs, f"crash: the report does not validate: {errs}")
        crashed = [t for t in r["tests"] if t["result"] == "crash"]
        F.check(len(crashed) == 1 and crashed[0]["id"] == crash_case and crashed[0]["units_failed"] == [victim_cpu]
                and "SIGSEGV" in crashed[0].get("reason", "") and "iteration 0" in crashed[0].get("reason", ""),
                f"crash: crash tests {crashed}")
        others = [t for t in r["tests"] if t["result"] != "crash"]
        F.check(others and all(t["result"] == "pass" for t in others), f"crash: other tests {[t['result'] for t in others]}")
        units = {u["cpu"]: u["result"] for u in r["units"]}
        F.check(units.get(victim_cpu) == "crash" and units.get(cpus[0]) == "pass", f"crash: units {units}")
        F.check(r["summary"].get("crash") == 1, f"crash: summary {r['summary']}")
        # The drain reason names the crashed unit (it used to say "miscompare (no failed test in the report)").
        want = f"SDC: cpu {victim_cpu} crash {crashed[0]['family']}" if crashed else "?"
        want += " drill" if r.get("fault_injection") else ""   # the crash is a drill's
        F.check(r.get("drain_reason") == want, f"crash: drain_reason {r.get('drain_reason')!r}, want {want!r}")
        p = subprocess.run([SDCSCREEN, "reason", out], capture_output=True, text=True, timeout=60)
        F.check(p.returncode == 0 and p.stdout == want + "\n", f"crash: sdcscreen reason: {p.returncode} {p.stdout!r}")
        # diff and fleet read it too: the crash's test beside the case's result on the other CPUs (they refused it as
        # a test listed twice, and fleet showed the failing node's report as not read).
        p = subprocess.run([SDCSCREEN, "diff", out, out], capture_output=True, text=True, timeout=60)
        F.check(p.returncode == 0, f"crash: sdcscreen diff of the report with itself: {p.returncode} {p.stderr!r}")
        p = subprocess.run([SDCSCREEN, "fleet", out], capture_output=True, text=True, timeout=60)
        F.check(p.returncode == 1 and "0 files not read" in p.stdout, f"crash: sdcscreen fleet: {p.returncode} {p.stdout!r}")
        with open(prom) as f:
            text = f.read()
        F.check("sdcscreen_exit_code 1\n" in text and 'sdcscreen_tests{result="crash"} 1' in text,
                "crash: Prometheus does not say exit 1 and one crash")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", *sel, "--npd"])], capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 1 and p.stdout.startswith(f"SDC: cpu {victim_cpu} "), f"crash --npd: {p.stdout!r}")
F.finish()

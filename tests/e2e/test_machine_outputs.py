"""Outputs for fleet machinery: the Prometheus textfile served by a real prometheus-node-exporter, and the
node-problem-detector plugin mode (one line of at most 80 characters, exit 0 OK / 1 NonOK / 2 Unknown): a crash
says so, a run of cases that cannot run here says that nothing ran, a cut line keeps its [drill]."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

from common import Failures, run

f = Failures("machine_outputs")
tmp = tempfile.mkdtemp(prefix="sdc_machine_")
CLEAN = ["--enable", "softmax_f32.special_128x1000"]
FAULT = CLEAN + ["--inject", "case=softmax_f32.special_128x1000,element=5,bit=3,unit=1"]
INCONCLUSIVE = CLEAN + ["--backend", "cuda"]

# --npd: the line and the exit code for pass, fail and inconclusive; nothing else on stdout.
for name, args, code, prefix in (("pass", CLEAN, 0, "OK:"), ("fail", FAULT, 1, "SDC:"),
                                 ("inconclusive", INCONCLUSIVE, 2, "Unknown:")):
    p = run("run", "--npd", *args)
    lines = p.stdout.splitlines()
    f.check(p.returncode == code, f"--npd {name}: exit {p.returncode}, expected {code}")
    f.check(len(lines) == 1 and len(lines[0]) <= 80, f"--npd {name}: stdout must be one line <= 80 chars: {p.stdout!r}")
    f.check(bool(lines) and lines[0].startswith(prefix), f"--npd {name}: line {lines[:1]} should start {prefix}")
    if name == "fail":
        f.check("cpu 1" in lines[0] and "softmax_f32" in lines[0] and "[drill]" in lines[0],
                f"--npd fail: names the CPU, the family and the drill: {lines[0]!r}")
p = run("run", "--npd", "--enable", "softmax_f32.*", "--time-budget", "1ms")
f.check(p.returncode == 2 and p.stdout.startswith("Unknown:"), f"--npd with nothing run is Unknown: {p.returncode} {p.stdout!r}")
# A crashed unit's line says crash, as its drain reason does (docs/fleet.md, the reasons' table).
CRASH = ["--enable", "gemm_f32.special_512", "--inject", "case=gemm_f32.special_512,unit=1,action=crash"]
p = run("run", "--npd", *CRASH)
f.check(p.returncode == 1 and p.stdout.strip() == "SDC: cpu 1 crash gemm_f32 [drill]",
        f"--npd crash: exit {p.returncode}, line {p.stdout!r}")
# Every selected case GPU-only on this CPU run: the line says that nothing ran, and never calls not_applicable a
# skip; the text report says it too, on a line of its own.
p = run("run", "--npd", "--backend", "cpu", "--enable", "gemm_bf16.*")
f.check(p.returncode == 2 and p.stdout.startswith("Unknown: nothing ran: ") and "skip" not in p.stdout
        and len(p.stdout.strip()) <= 80, f"--npd nothing applicable: exit {p.returncode}, line {p.stdout!r}")
p = run("run", "--backend", "cpu", "--enable", "gemm_bf16.*")
f.check(p.returncode == 2 and re.search(r"^error: nothing ran: all \d+ selected cases are not applicable on the cpu "
                                        r"backend", p.stdout, re.M) and p.stdout.rstrip().endswith("exit: error"),
        f"nothing applicable: exit {p.returncode}, text {p.stdout[-600:]!r}")
# A masked drill's line (its error names the whole spec) is cut at 80 characters and keeps [drill].
MASKED = ["--enable", CLEAN[1], "--inject", f"case={CLEAN[1]},element=5,bit=30,target=input,tensor=x"]
p = run("run", "--npd", *MASKED)
line = p.stdout.strip()
f.check(p.returncode == 2 and line.startswith("Unknown: injection ") and len(line) == 80 and line.endswith("... [drill]"),
        f"--npd masked drill: exit {p.returncode}, line {line!r}")

# Progress: on a terminal one line rewritten in place (case, iteration, elapsed, remaining); nothing when
# stderr is not a terminal or with -q.
if shutil.which("script"):
    from common import SDCSCREEN, with_lock
    import shlex
    cmd = shlex.join([SDCSCREEN, *with_lock(["run", "--enable", "gemm_f32.uniform_1024", "--profile", "standard",
                                              "--time-budget", "2s"])])
    tty = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, timeout=60).stdout
    f.check("\x1b[K" in tty and "iteration" in tty and "remaining" in tty and "gemm_f32.uniform_1024" in tty,
            f"progress on a terminal: {tty[:200]!r}")
    quiet = subprocess.run(["script", "-qec", cmd + " -q", "/dev/null"], capture_output=True, text=True, timeout=60).stdout
    f.check(quiet == "", f"-q on a terminal prints nothing: {quiet[:200]!r}")
    p = run("run", "--enable", "gemm_f32.uniform_1024", "--profile", "standard", "--time-budget", "2s")
    f.check("iteration" not in p.stderr and "\x1b[K" not in p.stderr, f"no progress when stderr is not a terminal: {p.stderr[:200]!r}")
else:
    f.check(False, "script (util-linux) is needed to test progress on a terminal")

# --prometheus served by node_exporter's textfile collector.
exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
if not exporter:
    f.check(os.environ.get("SDC_ALLOW_SKIP") == "1", "prometheus-node-exporter is not installed (scripts/setup.sh installs it)")
    f.finish()

textdir = os.path.join(tmp, "textfile")
os.makedirs(textdir)
prom = os.path.join(textdir, "sdcscreen.prom")
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
proc = subprocess.Popen([exporter, "--collector.disable-defaults", "--collector.textfile",
                         f"--collector.textfile.directory={textdir}", f"--web.listen-address=127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def scrape():
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("node_exporter did not answer")


def series(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


try:
    p = run("run", "-q", "--prometheus", prom, *CLEAN)
    f.check(p.returncode == 0, f"clean run with --prometheus: exit {p.returncode} {p.stderr}")
    m = series(scrape())
    f.check(m.get("node_textfile_scrape_error") == 0, f"node_textfile_scrape_error is {m.get('node_textfile_scrape_error')}")
    f.check(m.get("sdcscreen_healthy") == 1 and m.get("sdcscreen_exit_code") == 0, "clean: healthy 1, exit code 0")
    f.check(m.get('sdcscreen_device_healthy{cpu="0"}') == 1 and m.get('sdcscreen_device_healthy{cpu="1"}') == 1,
            "clean: every CPU healthy")
    first_success = m.get("sdcscreen_last_success_timestamp_seconds", 0)
    f.check(abs(first_success - time.time()) < 60, f"last success timestamp is now: {first_success}")
    f.check(m.get("sdcscreen_last_run_timestamp_seconds") == first_success, "clean: last run == last success")
    f.check(m.get('sdcscreen_miscompared_tiles{family="softmax_f32"}') == 0, "clean: no miscompared tiles")
    # The tests' runs pass --no-probe (common.py): the file says the probe did not run.
    f.check(m.get("sdcscreen_probe_ran") == 0, f"--no-probe: sdcscreen_probe_ran is {m.get('sdcscreen_probe_ran')}")
    with open(prom) as fh:
        text = fh.read()
    f.check(all(len(line.split()) == 2 for line in text.splitlines() if not line.startswith("#")),
            "no client timestamps (each sample is name and value)")

    time.sleep(1.1)
    p = run("run", "-q", "--prometheus", prom, *FAULT)
    f.check(p.returncode == 1, f"fault run with --prometheus: exit {p.returncode}")
    m = series(scrape())
    f.check(m.get("node_textfile_scrape_error") == 0, "fault: node_textfile_scrape_error 0")
    f.check(m.get("sdcscreen_healthy") == 0 and m.get("sdcscreen_exit_code") == 1, "fault: healthy 0, exit code 1")
    f.check(m.get('sdcscreen_device_healthy{cpu="1"}') == 0 and m.get('sdcscreen_device_healthy{cpu="0"}') == 1,
            "fault: cpu1 unhealthy, cpu0 healthy")
    f.check(m.get('sdcscreen_miscompared_tiles{family="softmax_f32"}') == 1, "fault: one miscompared softmax tile")
    f.check(m.get("sdcscreen_fault_injection") == 1, "fault: marked as a drill")
    f.check(m.get("sdcscreen_last_success_timestamp_seconds") == first_success,
            "fault: last success carried over from the previous file")
    f.check(m.get("sdcscreen_last_run_timestamp_seconds", 0) > first_success, "fault: last run moved on")
    f.check([n for n in os.listdir(textdir) if n != "sdcscreen.prom"] == [], "no temporary files left in the textfile dir")

    p = run("run", "-q", "--prometheus", os.path.join(tmp, "missing", "x.prom"), *CLEAN)
    f.check(p.returncode == 78 and "x.prom" in p.stderr, f"unwritable --prometheus: exit {p.returncode}")
finally:
    proc.terminate()
    proc.wait(timeout=10)
f.finish()

"""What weakens a verdict is refused or said (docs/reliability.md, "Weakened verdicts"):

- pattern data other than the build's: a copy of patterns/ with 51 of the boot profile's 52 cases taken out and
  its manifest rewritten to match is refused by verify-patterns and run (78, one line naming battery.json and
  both digests); with --accept-patterns the screen runs and is marked in every output (JSON, text, HTML,
  Prometheus, NPD), and the history records it so that the resume policy never counts it as clean (the same
  line without the mark does count). The unmodified copy passes without the option;
- the environment's test switches (SDCSCREEN_SUPERVISE=0, a drill) are named in the report and the NPD line;
  SDCSCREEN_SUPERVISE=1 (the default) is not;
- the deploy wrappers refuse to screen under one (the Slurm health check and the sweep; the NHC check and the
  boot unit list the same switches), unless the tests' SDCSCREEN_ALLOW_WEAKENED=1 says so.
Each screen is one small case on one CPU."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("e2e_weakened")
CASE = "softmax_f32.special_128x1000"
CPU = sorted(os.sched_getaffinity(0))[0]
TMP = tempfile.mkdtemp(prefix="sdc_weakened_")
XXH = common.load_xxhash()
if XXH is None:
    sys.exit("libxxhash not found (the setup installs it)")


def xxh3_128_hex(data):
    h = XXH.XXH3_128bits(data, len(data))
    return f"{h.high64:016x}{h.low64:016x}"


def sdc(*args, env=None):
    return subprocess.run([common.SDCSCREEN, *common.with_lock(args)], capture_output=True, text=True, timeout=600,
                          env=env)


# --- 1. an edited battery, its manifest rewritten to match -----------------------------------------------
copy = os.path.join(TMP, "unchanged")
shutil.copytree(common.PATTERNS, copy)
p = sdc("verify-patterns", "--patterns", copy)
F.check(p.returncode == 0 and "the pattern data is the one this sdcscreen was built with" in p.stdout,
        f"verify-patterns on an unmodified copy: exit {p.returncode} {p.stdout!r} {p.stderr!r}")

pat = os.path.join(TMP, "edited")
shutil.copytree(common.PATTERNS, pat)
with open(os.path.join(pat, "battery.json")) as f:
    battery = json.load(f)
removed = 0
for c in battery["cases"]:
    if c["id"] != CASE and "boot" in c.get("iterations", {}):
        count = c["iterations"].pop("boot")
        if not c["iterations"]:  # a boot-only case (memtest_u32.boot_256m) moves to burn-in: a case has a profile
            c["iterations"]["burnin"] = count
        removed += 1
F.check(removed >= 50, f"only {removed} cases removed from boot: the battery changed under the test")
text = (json.dumps(battery, indent=1) + "\n").encode()
with open(os.path.join(pat, "battery.json"), "wb") as f:
    f.write(text)
with open(os.path.join(pat, "manifest.json")) as f:
    manifest = json.load(f)
manifest["files"]["battery.json"] = {"bytes": len(text), "xxh3_128": xxh3_128_hex(text)}
manifest_text = (json.dumps(manifest, indent=2) + "\n").encode()
with open(os.path.join(pat, "manifest.json"), "wb") as f:
    f.write(manifest_text)
with open(os.path.join(common.PATTERNS, "battery.json"), "rb") as f:
    built = xxh3_128_hex(f.read())
ours = xxh3_128_hex(text)

for args in (["verify-patterns", "--patterns", pat],
             ["run", "--patterns", pat, "--profile", "boot", "--backend", "cpu", "--cpuset", str(CPU), "-q"]):
    p = sdc(*args)
    lines = p.stderr.strip().splitlines()
    F.check(p.returncode == 78 and len(lines) == 1 and "battery.json" in lines[0] and ours in lines[0]
            and built in lines[0] and "--accept-patterns" in lines[0],
            f"{args[0]} on an edited battery: exit {p.returncode}, stderr {p.stderr!r}")
p = sdc("verify-patterns", "--patterns", pat, "--accept-patterns")
F.check(p.returncode == 0 and "NOT the pattern data this sdcscreen was built with" in p.stdout,
        f"verify-patterns --accept-patterns: exit {p.returncode} {p.stdout!r} {p.stderr!r}")

# Accepted: the screen runs (one case: the edited boot profile) and every output says so.
hist = os.path.join(TMP, "history")
out, prom, html = (os.path.join(TMP, n) for n in ("r.json", "s.prom", "r.html"))
run = ["run", "--patterns", pat, "--profile", "boot", "--backend", "cpu", "--cpuset", str(CPU), "--accept-patterns",
       "--history", hist]
p = sdc(*run, "--npd", "--output-format", "json", "-o", out, "--prometheus", prom, "--html", html)
F.check(p.returncode == 0 and p.stdout.startswith("OK: 1 tests passed")
        and p.stdout.rstrip("\n").endswith(" [weakened: --accept-patterns]"),
        f"accepted edited patterns: exit {p.returncode}, NPD {p.stdout!r} {p.stderr[-300:]!r}")
with open(out) as f:
    rep = json.load(f)
names = [w["name"] for w in rep.get("weakened_by", [])]
F.check(names == ["--accept-patterns"] and ours in rep["weakened_by"][0]["effect"]
        and built in rep["weakened_by"][0]["effect"], f"JSON weakened_by: {rep.get('weakened_by')}")
F.check(len(rep["tests"]) == 1, f"the edited boot profile ran {len(rep['tests'])} tests, expected 1")
with open(prom) as f:
    ptext = f.read()
F.check("sdcscreen_weakened 1\n" in ptext and 'sdcscreen_weakened_by{switch="--accept-patterns"} 1' in ptext,
        "Prometheus does not mark the screen as weakened")
with open(html) as f:
    F.check("WEAKENED VERDICT: --accept-patterns" in f.read(), "the HTML report does not mark the screen")
p = sdc(*run[:-2], "--history", "none")
F.check(p.returncode == 0 and "WEAKENED VERDICT: --accept-patterns: the pattern data is not the build's" in p.stdout,
        f"text report: exit {p.returncode} {p.stdout[:600]!r}")

# The history: a failure on record, then the weakened pass: the node stays held; the same line without the
# mark resumes it (the mark alone held it).
with open(os.path.join(hist, "history.jsonl")) as f:
    weak_line = f.read().strip().splitlines()[-1]
weak = json.loads(weak_line)
F.check(weak.get("weakened") == ["--accept-patterns"] and weak.get("selection") == "profile" and weak["exit"] == 0,
        f"history line of the weakened screen: {weak_line}")
failure = dict(weak, exit=1, verdict="fail", units={f"cpu {CPU}": "fail"}, unix=weak["unix"] - 60,
               failures=[{"unit": f"cpu {CPU}", "case": CASE, "family": "softmax_f32", "result": "fail"}])
del failure["weakened"]
clean = dict(weak)
del clean["weakened"]
# Each its own screen (a line's run id counts once).
failure["run"], clean["run"] = "1" * 32, "2" * 32


def policy(lines):
    with open(os.path.join(hist, "history.jsonl"), "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    return sdc("history", hist, "--resume-policy", "--clean-screens", "1", "--min-profile", "boot")


p = policy([failure, weak, weak, weak])
F.check(p.returncode == 1, f"three weakened passes after a failure: policy exit {p.returncode}, want 1 (hold): {p.stdout!r}")
p = policy([failure, weak, clean])
F.check(p.returncode == 0, f"one clean pass after a failure: policy exit {p.returncode}, want 0 (resume): {p.stdout!r}")

# --- 2. environment switches are named -----------------------------------------------------------------
base = ["run", "--backend", "cpu", "--cpuset", str(CPU), "--enable", CASE, "--npd", "--history", "none"]
env = {k: v for k, v in os.environ.items() if not k.startswith("SDCSCREEN_") or k in ("SDCSCREEN_HISTORY",)}
p = sdc(*base, env=env)
F.check(p.returncode == 0 and p.stdout.startswith("OK: 1 tests passed"), f"plain screen: {p.returncode} {p.stdout!r}")
p = sdc(*base, env=dict(env, SDCSCREEN_SUPERVISE="1"))
F.check(p.returncode == 0 and "weakened" not in p.stdout, f"SDCSCREEN_SUPERVISE=1 is the default: {p.stdout!r}")
p = sdc(*base, env=dict(env, SDCSCREEN_SUPERVISE="0"))
F.check(p.returncode == 0 and p.stdout.rstrip("\n").endswith(" [weakened: SDCSCREEN_SUPERVISE]"),
        f"SDCSCREEN_SUPERVISE=0: {p.returncode} {p.stdout!r}")
code, rep, err = common.run_json("--backend", "cpu", "--cpuset", str(CPU), "--enable", CASE, "--history", "none")
F.check(code == 0 and rep and rep["weakened_by"] == [], f"plain screen's weakened_by: {rep and rep['weakened_by']}")
p = sdc(*base, env=dict(env, SDCSCREEN_DRILL_SLOW_NODE="2", SDCSCREEN_SUPERVISE="0"))
F.check(p.stdout.rstrip("\n").endswith(" [weakened: SDCSCREEN_SUPERVISE+1]"), f"two switches: {p.stdout!r}")

# --- 3. the deploy wrappers refuse them ----------------------------------------------------------------
with open(os.path.join(common.SOURCE_DIR, "src", "core", "weakened.cpp")) as f:
    switches = re.findall(r'\{"(SDCSCREEN_[A-Z_]+)", "', f.read())
F.check(len(switches) >= 9, f"switches read from weakened.cpp: {switches}")
for rel in ("deploy/slurm/sdcscreen-healthcheck", "deploy/slurm/sdcscreen-sweep", "deploy/nhc/sdcscreen.nhc",
            "deploy/systemd/sdcscreen-boot.service"):
    with open(os.path.join(common.SOURCE_DIR, rel)) as f:
        body = f.read()
    missing = [s for s in switches if s not in body]
    F.check(not missing, f"{rel} does not know {missing}")
    F.check("--accept-patterns" in body, f"{rel} does not refuse --accept-patterns")
with open(os.path.join(common.SOURCE_DIR, "deploy/systemd/sdcscreen-boot.service")) as f:
    unset = " ".join(l.split("=", 1)[1] for l in f.read().splitlines() if l.startswith("UnsetEnvironment=")).split()
F.check(sorted(unset) == sorted(switches), f"the boot unit's UnsetEnvironment= {unset}")

with tempfile.TemporaryDirectory() as d:
    scontrol = os.path.join(d, "scontrol")
    with open(scontrol, "w") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = show ]; then echo \"NodeName=n1 State=IDLE\"; echo \"   Reason=(null)\"; fi\n")
    os.chmod(scontrol, 0o700)
    hc_env = dict(env, SDCSCREEN=common.SDCSCREEN, SCONTROL=scontrol, SDCSCREEN_DRY_RUN="1",
                  SDCSCREEN_CONFIG=os.path.join(d, "none"), SDCSCREEN_STATE_DIR=os.path.join(d, "state"),
                  SLURMD_NODENAME="n1",
                  SDCSCREEN_ARGS=f"--backend cpu --cpuset {CPU} --enable {CASE} --lock-file {os.path.join(d, 'lock')}")

    def healthcheck(**extra):
        return subprocess.run(["bash", os.path.join(common.SOURCE_DIR, "deploy", "slurm", "sdcscreen-healthcheck")],
                              capture_output=True, text=True, timeout=300, env=dict(hc_env, **extra))

    p = healthcheck(SDCSCREEN_SUPERVISE="0")
    report = os.path.join(d, "state", "healthcheck-report.json")
    F.check(p.returncode == 0 and "refusing to screen" in p.stderr and "SDCSCREEN_SUPERVISE" in p.stderr
            and not os.path.exists(report), f"health check under SDCSCREEN_SUPERVISE=0: {p.returncode} {p.stderr!r}")
    p = healthcheck(SDCSCREEN_ARGS=hc_env["SDCSCREEN_ARGS"] + " --accept-patterns")
    F.check("refusing to screen" in p.stderr and "--accept-patterns" in p.stderr and not os.path.exists(report),
            f"health check with --accept-patterns: {p.stderr!r}")
    with open(os.path.join(d, "config"), "w") as f:  # the file shared with the boot unit
        f.write("SDCSCREEN_DRILL_WORKER_EXIT=3\n")
    p = healthcheck(SDCSCREEN_CONFIG=os.path.join(d, "config"))
    F.check("refusing to screen" in p.stderr and "SDCSCREEN_DRILL_WORKER_EXIT" in p.stderr,
            f"health check with a drill in its config file: {p.stderr!r}")
    p = healthcheck(SDCSCREEN_SUPERVISE="0", SDCSCREEN_ALLOW_WEAKENED="1")
    F.check(p.returncode == 0 and "refusing" not in p.stderr and os.path.exists(report),
            f"health check with the tests' escape: {p.returncode} {p.stderr[-400:]!r}")
    if os.path.exists(report):
        with open(report) as f:
            F.check([w["name"] for w in json.load(f)["weakened_by"]] == ["SDCSCREEN_SUPERVISE"],
                    "the health check's report does not name SDCSCREEN_SUPERVISE")
    p = subprocess.run([sys.executable, os.path.join(common.SOURCE_DIR, "deploy", "slurm", "sdcscreen-sweep"), "-w",
                        "n1", "-n"], capture_output=True, text=True, timeout=60,
                       env=dict(env, SDCSCREEN_DRILL_REPORT_CRASH="1"))
    F.check(p.returncode == 78 and "SDCSCREEN_DRILL_REPORT_CRASH" in p.stderr,
            f"sweep under a drill: exit {p.returncode} {p.stderr!r}")
    # --accept-patterns=DIR, the option's other form, is refused everywhere too.
    if os.path.exists(report):
        os.remove(report)
    p = healthcheck(SDCSCREEN_ARGS=hc_env["SDCSCREEN_ARGS"] + f" --accept-patterns={pat}")
    F.check("refusing to screen" in p.stderr and not os.path.exists(report),
            f"health check with --accept-patterns=: {p.stderr!r}")
    p = subprocess.run([sys.executable, os.path.join(common.SOURCE_DIR, "deploy", "slurm", "sdcscreen-sweep"), "-w",
                        "n1", "-n", "--", f"--accept-patterns={pat}"], capture_output=True, text=True, timeout=60,
                       env=env)
    F.check(p.returncode == 78 and "--accept-patterns" in p.stderr, f"sweep with --accept-patterns=: exit {p.returncode} {p.stderr!r}")
    shim = ("die() { echo \"DIE $*\"; }\nlog() { echo \"LOG $*\"; }\ndbg() { :; }\nTIMEOUT=58\n"
            f". {common.SOURCE_DIR}/deploy/nhc/sdcscreen.nhc\n"
            f"check_sdcscreen -b {common.SDCSCREEN} -s {os.path.join(d, 'nhc')} -a \"$1\"\n")
    p = subprocess.run(["bash", "-c", shim, "nhc", f"--backend cpu --cpuset {CPU} --enable {CASE} --accept-patterns={pat}"],
                       capture_output=True, text=True, timeout=60, env=env)
    F.check("refusing to screen" in p.stdout and not os.path.exists(os.path.join(d, "nhc", "nhc-report.json")),
            f"NHC check with --accept-patterns=: {p.stdout!r} {p.stderr!r}")
    with open(os.path.join(common.SOURCE_DIR, "deploy/systemd/sdcscreen-boot.service")) as f:
        pre = [l.split("=", 1)[1] for l in f.read().splitlines() if l.startswith("ExecStartPre=/bin/sh -c ")]
    F.check(len(pre) == 1, f"the boot unit's --accept-patterns refusal: {pre}")
    for form in ("--accept-patterns /x", "--accept-patterns=/x"):
        script = pre[0][len("/bin/sh -c "):].strip("'").replace("$$", "$") if pre else "exit 0"
        p = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30,
                           env=dict(env, SDCSCREEN_ARGS=f"--expect-devices pci {form}"))
        F.check(p.returncode == 78, f"the boot unit with {form!r}: ExecStartPre exit {p.returncode}, expected 78")

shutil.rmtree(TMP, ignore_errors=True)
F.finish()

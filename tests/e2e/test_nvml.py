"""GPU telemetry through NVML in a run, on GPUs emulated on the CPU (--backend emulated:2, UUIDs EMU-...)
with the tests' fake libnvidia-ml.so.1 (tests/fake_nvml, SDCSCREEN_NVML_LIBRARY: a test path) scripted to
know those UUIDs: a clean run passes with each GPU's identity in every output; an uncorrected ECC increase
during the run fails it (exit 1) naming the GPU in JSON, text, Prometheus and the NPD line; a hardware Xid
fails it; an application-fault Xid makes it inconclusive (exit 2); a GPU above --max-temperature while a
case ran makes that case an error, and so does a GPU's memory (HBM) temperature above it (read through NVML's
field-value API; a GPU without a memory sensor says "not available", never 0), as does a CPU sensor above it
while a CPU case ran; a library that is absent is said and the run goes on; a bad
--max-temperature is a usage error (64).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_nvml")
CASE = "gemm_bf16_exactint.uniform_256x192x512"
FAKE = os.path.join(os.environ.get("SDC_FAKE_NVML_DIR", ""), "fake_nvml", "libnvidia-ml.so.1")
if not os.path.exists(FAKE):
    sys.exit(f"the fake NVML library is not built ({FAKE}): build the unit_tests target")
VALIDATOR = common.report_validator()
UUIDS = [f"EMU-{i:08x}-0000-0000-0000-{i:012x}" for i in range(2)]


def script(extra=""):
    s = "driver 580.65.06\n"
    for i, u in enumerate(UUIDS):
        s += f"gpu {u} emulated:{i}\n"
        for k, v in (("serial", f"16509234567{i}"), ("part", "900-21010-0000-000"), ("vbios", "96.00.5E.00.01"),
                     ("inforom", "G520.0200.00.05"), ("ecc_mode", 1), ("ecc_vol_corr", 0), ("ecc_vol_unc", 0),
                     ("ecc_agg_corr", 0), ("ecc_agg_unc", 0), ("temp", 45), ("sm_clock", 1980),
                     ("mem_clock", 2619), ("power_mw", 80000), ("reasons", 1), ("pcie_gen", 5), ("pcie_width", 16)):
            s += f"{u} {k} {v}\n"
    s += f"{UUIDS[0]} mem_temp 52\n"  # GPU 1 has no memory sensor: NOT_SUPPORTED
    return s + extra


def screen(extra, *args, library=FAKE, npd=True):
    """One run: (exit code, JSON report, text report, Prometheus, NPD line: "" when npd is False)."""
    with tempfile.TemporaryDirectory() as d:
        sc = os.path.join(d, "nvml.txt")
        with open(sc, "w") as f:
            f.write(script(extra))
        env = dict(os.environ, SDCSCREEN_NVML_LIBRARY=library, SDC_FAKE_NVML_SCRIPT=sc)
        out, prom = os.path.join(d, "r.json"), os.path.join(d, "m.prom")
        cmd = [common.SDCSCREEN, *common.with_lock(["run", "--backend", "emulated:sm_90x4,sm_90x4", "--profile",
                                                    "boot", "--enable", CASE, *args])]
        p = subprocess.run(cmd + ["--output-format", "json", "-o", out, "--prometheus", prom],
                           capture_output=True, text=True, timeout=600, env=env)
        report = json.load(open(out)) if os.path.exists(out) else None
        metrics = open(prom).read() if os.path.exists(prom) else ""
        if not npd:
            return p.returncode, report, p.stdout + p.stderr, metrics, ""
        line = subprocess.run(cmd + ["--npd"], capture_output=True, text=True, timeout=600, env=env)
        return p.returncode, report, p.stdout + p.stderr, metrics, line.stdout.strip()


def valid(name, report):
    errs = list(VALIDATOR.iter_errors(report))
    for e in errs[:5]:
        print(f"  {name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
    F.check(not errs, f"{name}: the report does not validate ({len(errs)} errors)")


# --- 1. a clean run: passes, identity in every output -----------------------------------------------------
rc, rep, text, prom, npd = screen("")
F.check(rc == 0, f"clean: exit {rc}, expected 0\n{text[-2000:]}")
if rep:
    valid("clean", rep)
    tel = rep["devices"][0].get("telemetry") or {}
    F.check(tel.get("matched") is True, f"clean: GPU 0 not matched: {tel}")
    F.check((tel.get("identity") or {}).get("serial") == "165092345670", f"clean: serial {tel.get('identity')}")
    F.check((tel.get("before") or {}).get("pcie_generation") == 5, "clean: PCIe generation not read")
    F.check(tel.get("events") == [], f"clean: events {tel.get('events')}")
    F.check(rep["nvml"]["available"] is True, f"clean: nvml {rep['nvml']}")
F.check("serial 165092345671" in text, "clean: the text report has no identity block for GPU 1")
F.check(f'sdcscreen_gpu_temperature_celsius{{uuid="{UUIDS[0]}"}} 45' in prom, "clean: no temperature gauge")
# The memory temperature: read where the GPU has a sensor, "not available" (never 0) where it has none.
if rep:
    b0, b1 = rep["devices"][0]["telemetry"]["before"], rep["devices"][1]["telemetry"]["before"]
    F.check(b0["memory_temperature_c"] == 52 and rep["devices"][0]["telemetry"]["peak"]["memory_temperature_c"] == 52,
            f"clean: GPU 0 memory temperature {b0['memory_temperature_c']}")
    F.check(b1["memory_temperature_c"] is None and any(
        u["what"] == "memory_temperature" and "Not Supported" in u["why"] for u in b1["not_available"]),
            f"clean: GPU 1 memory temperature {b1['memory_temperature_c']}, {b1['not_available']}")
F.check(f'sdcscreen_gpu_memory_temperature_celsius{{uuid="{UUIDS[0]}"}} 52' in prom
        and f'sdcscreen_gpu_memory_temperature_celsius{{uuid="{UUIDS[1]}"}}' not in prom, "clean: memory temperature gauge")
F.check(any("not available:" in line and "memory_temperature" in line for line in text.splitlines()),
        "clean: the text does not say GPU 1's memory temperature is not available")
F.check("hot memory" not in text, "clean: a cool memory is said hot")

# --- 2. an uncorrected ECC error during the run: exit 1, the GPU named everywhere --------------------------
rc, rep, text, prom, npd = screen(f"{UUIDS[1]} ecc_vol_unc 1 from 2\n")
F.check(rc == 1, f"ECC: exit {rc}, expected 1\n{text[-2000:]}")
if rep:
    valid("ECC", rep)
    ev = rep["devices"][1]["telemetry"]["events"]
    F.check(any(e["kind"] == "ecc_uncorrected" and e["severity"] == "failure" for e in ev), f"ECC: events {ev}")
    F.check(rep["devices"][0]["telemetry"]["events"] == [], "ECC: GPU 0 has events too")
    # The schema refuses what no run writes (mutants of this report).
    import copy
    for name, mutate in (
            ("an uncorrected ECC event that is not a failure",
             lambda r: [e.update(severity="info") for e in r["devices"][1]["telemetry"]["events"]]),
            ("a matched GPU without its before reading", lambda r: r["devices"][1]["telemetry"].pop("before")),
            ("an ECC count of -1", lambda r: r["devices"][1]["telemetry"]["after"].update(ecc_volatile_uncorrected=-1)),
            ("an Xid event without its Xid", lambda r: r["devices"][1]["telemetry"]["events"].append(
                {"kind": "xid", "severity": "failure", "time": 0, "text": "Xid"})),
            ("no nvml", lambda r: r.pop("nvml")),
            ("a GPU failure event with exit 0", lambda r: r["exit"].update(code=0, verdict="pass")),
            ("NVML not available without why", lambda r: r["nvml"].update(available=False, why=""))):
        m = copy.deepcopy(rep)
        mutate(m)
        F.check(not VALIDATOR.is_valid(m), f"schema: accepts {name}")
F.check("fail: GPU hardware error during the run" in text and UUIDS[1] in text, "ECC: the text does not say it")
F.check(f'sdcscreen_gpu_ecc_errors{{uuid="{UUIDS[1]}",counter="volatile",type="uncorrected"}} 1' in prom,
        "ECC: no Prometheus gauge")
F.check(f'sdcscreen_device_healthy{{gpu="1",uuid="{UUIDS[1]}"}} 0' in prom
        and f'sdcscreen_device_healthy{{gpu="0",uuid="{UUIDS[0]}"}} 1' in prom, "ECC: device_healthy")
# The NPD line names the GPU by its ordinal and its UUID's first group; the fake NVML weakens the verdict, and the line ends with
# its mark, which the 80-character cut keeps whole.
F.check(npd.startswith("HW: gpu 1 (EMU-00000001): ") and npd.endswith(" [weakened: SDCSCREEN_NVML_LIBRARY]") and len(npd) <= 80
        and "ecc_uncorrected" in text, f"ECC: NPD line {npd!r}")

# --- 3. Xids: a hardware one fails the run, an application fault makes it inconclusive -------------------
rc, rep, text, prom, npd = screen(f"xid {UUIDS[0]} 79\n")
F.check(rc == 1, f"Xid 79: exit {rc}, expected 1")
F.check("Xid 79" in text and npd.startswith("HW: gpu 0 (EMU-00000000): Xid 79") and npd.endswith(" [weakened: SDCSCREEN_NVML_LIBRARY]"),
        f"Xid 79: not said ({npd!r})")
if rep:
    valid("Xid 79", rep)
rc, rep, text, prom, npd = screen(f"xid {UUIDS[0]} 13\n")
F.check(rc == 2, f"Xid 13: exit {rc}, expected 2")
F.check("Xid 13" in text and npd.startswith("Unknown: gpu 0 (EMU-00000000): Xid 13") and npd.endswith(" [weakened: SDCSCREEN_NVML_LIBRARY]"),
        f"Xid 13: not said ({npd!r})")

# --- 4. --max-temperature: a GPU above it while a case ran makes the case an error -----------------------
rc, rep, text, prom, npd = screen(f"{UUIDS[0]} temp 91\n", "--max-temperature", "80")
F.check(rc == 2, f"hot: exit {rc}, expected 2")
if rep:
    valid("hot", rep)
    t0 = [t for t in rep["tests"] if t["device"] == "cuda:0"]
    F.check(t0 and t0[0]["result"] == "error" and "91 C" in t0[0]["reason"], f"hot: {t0[:1]}")
    t1 = [t for t in rep["tests"] if t["device"] == "cuda:1"]
    F.check(t1 and t1[0]["result"] == "pass", "hot: the cool GPU's case is not a pass")
# The memory (HBM) temperature above --max-temperature while a case ran (sampled: cool before): an error too.
rc, rep, text, prom, _ = screen(f"{UUIDS[0]} mem_temp 97 from 2\n", "--max-temperature", "90", npd=False)
F.check(rc == 2, f"hot memory: exit {rc}, expected 2")
if rep:
    valid("hot memory", rep)
    tel = rep["devices"][0]["telemetry"]
    F.check(tel["before"]["memory_temperature_c"] == 52 and tel["peak"]["memory_temperature_c"] == 97,
            f"hot memory: before {tel['before']['memory_temperature_c']}, peak {tel['peak']['memory_temperature_c']}")
    t0 = [t for t in rep["tests"] if t["device"] == "cuda:0"]
    F.check(t0 and t0[0]["result"] == "error" and "GPU memory at 97 C while it ran, above --max-temperature 90 C"
            in t0[0]["reason"], f"hot memory: {t0[:1]}")
    t1 = [t for t in rep["tests"] if t["device"] == "cuda:1"]
    F.check(t1 and t1[0]["result"] == "pass", "hot memory: the other GPU's case is not a pass")
F.check("hot memory: peak 97 C (above --max-temperature 90 C)" in text, "hot memory: the text does not say it")
F.check(f'sdcscreen_gpu_memory_temperature_celsius{{uuid="{UUIDS[0]}"}} 97' in prom, "hot memory: gauge")
for bad in ("0", "-5", "hot", "500"):
    p = subprocess.run([common.SDCSCREEN, "run", "--max-temperature", bad], capture_output=True, text=True)
    F.check(p.returncode == 64, f"--max-temperature {bad}: exit {p.returncode}, expected 64")

# --- 5. SIGTERM mid-run: the sampler is stopped, the after reading taken, the report complete ------------
with tempfile.TemporaryDirectory() as d:
    sc, out = os.path.join(d, "nvml.txt"), os.path.join(d, "r.json")
    with open(sc, "w") as f:
        f.write(script())
    env = dict(os.environ, SDCSCREEN_NVML_LIBRARY=FAKE, SDC_FAKE_NVML_SCRIPT=sc)
    p = subprocess.Popen([common.SDCSCREEN, *common.with_lock(["run", "--backend", "emulated:sm_90x4,sm_90x4",
                                                               "--profile", "standard", "--time-budget", "300",
                                                               "--enable", CASE, "-v", "--output-format", "json",
                                                               "-o", out])],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    # Signalled once a test is done: the screen (and its sampler) is running, whatever the machine's speed.
    for line in p.stderr:
        if line.startswith("[") and CASE in line:
            break
    p.send_signal(signal.SIGTERM)
    p.stderr.read()
    rc = p.wait(timeout=120)
    F.check(rc == 143, f"SIGTERM: exit {rc}, expected 143")
    rep = json.load(open(out)) if os.path.exists(out) else None
    F.check(rep is not None, "SIGTERM: no report")
    if rep:
        valid("SIGTERM", rep)
        tel = rep["devices"][0]["telemetry"]
        F.check(tel["after"] is not None and tel["samples"] >= 1, f"SIGTERM: after {tel['after']}, samples {tel['samples']}")

# --- 6. --max-temperature on CPUs: the hwmon temperatures sampled while the case ran (a fake host tree) -----
with tempfile.TemporaryDirectory() as d:
    hw = os.path.join(d, "sys", "class", "hwmon", "hwmon0")
    os.makedirs(hw)
    for name, text in (("name", "k10temp"), ("temp1_input", "95000"), ("temp1_label", "Tctl")):
        with open(os.path.join(hw, name), "w") as f:
            f.write(text + "\n")
    env = dict(os.environ, SDCSCREEN_HOST_ROOT=d)
    for limit, want in (("90", 2), ("100", 0)):
        p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--backend", "cpu", "--enable",
                                                                 "softmax_f32.special_128x1000", "--max-temperature",
                                                                 limit, "--npd"])],
                           capture_output=True, text=True, timeout=600, env=env)
        F.check(p.returncode == want, f"CPU at 95 C, --max-temperature {limit}: exit {p.returncode}, expected {want}")
        if want == 2:
            F.check(p.stdout.startswith("Unknown: softmax_f32.special_128x1000 error")
                    and p.stdout.rstrip("\n").endswith(" [weakened: SDCSCREEN_HOST_ROOT]"),
                    f"CPU too hot: the NPD line does not say so: {p.stdout.strip()!r}")

# --- 7. no library: the run goes on and says why ------------------------------------------------------------
rc, rep, text, prom, npd = screen("", library="/nonexistent/libnvidia-ml.so.1")
F.check(rc == 0, f"no NVML: exit {rc}, expected 0")
F.check("NVML not available" in text, "no NVML: the text does not say so")
if rep:
    valid("no NVML", rep)
    F.check(rep["nvml"]["available"] is False and "could not be loaded" in rep["nvml"]["why"], f"{rep['nvml']}")

F.finish()

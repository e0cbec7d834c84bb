"""The host's identity and telemetry in a run (src/host): on fake /proc and /sys trees (SDCSCREEN_HOST_ROOT),
an uncorrected EDAC error during the run fails it (exit 1) naming the memory controller in every output,
a corrected one is reported and the run passes; the telemetry drill (SDCSCREEN_DRILL_TELEMETRY_AFTER, the
after-run reading taken from a second tree) is said in every output. The CPU temperatures are sampled during
the run: a case that ran while a CPU sensor was above --max-temperature is an error naming the sensor and its
temperature (the drill SDCSCREEN_DRILL_TELEMETRY_DURING takes the samples from a hot tree while the before and
after readings stay cool), and the same run under a higher limit passes. On this machine's own /proc and /sys
the report is well-formed and says what was not available (nothing here depends on what the machine exposes).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_host_telemetry")
CASE = "softmax_f32.special_128x1000"
VALIDATOR = common.report_validator()

CPUINFO = "".join(
    f"processor\t: {c}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
    f"model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000181\n"
    f"cpu MHz\t\t: 2000.000\nphysical id\t: 0\ncore id\t\t: {c}\n\n" for c in range(2))


def fake_tree(root, ue, ce, celsius=45):
    def write(rel, text):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    write("proc/cpuinfo", CPUINFO)
    write("proc/sys/kernel/osrelease", "6.8.0-test\n")
    write("proc/interrupts", "           CPU0       CPU1\nMCE:          0          0   Machine check exceptions\n")
    write("sys/devices/system/edac/mc/mc0/ue_count", f"{ue}\n")
    write("sys/devices/system/edac/mc/mc0/ce_count", f"{ce}\n")
    write("sys/devices/system/edac/mc/mc1/ue_count", "0\n")
    write("sys/devices/system/edac/mc/mc1/ce_count", "0\n")
    write("sys/class/dmi/id/bios_vendor", "Test BIOS Inc.\n")
    write("sys/class/dmi/id/board_serial", "BOARD-SN-1\n")
    write("sys/class/hwmon/hwmon0/name", "k10temp\n")
    write("sys/class/hwmon/hwmon0/temp1_label", "Tctl\n")
    write("sys/class/hwmon/hwmon0/temp1_input", f"{celsius * 1000}\n")


def screen(env_extra, *args):
    """One run with the given environment: (exit code, JSON report, text report, Prometheus, NPD line)."""
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory() as d:
        out, prom = os.path.join(d, "r.json"), os.path.join(d, "m.prom")
        cmd = [common.SDCSCREEN, *common.with_lock(["run", "--backend", "cpu", "--enable", CASE, *args])]
        p = subprocess.run(cmd + ["--output-format", "json", "-o", out, "--prometheus", prom],
                           capture_output=True, text=True, timeout=600, env=env)
        report = json.load(open(out)) if os.path.exists(out) else None
        metrics = open(prom).read() if os.path.exists(prom) else ""
        # The text report of the same run is the stdout (without -q, -o JSON prints the text).
        npd = subprocess.run(cmd + ["--npd"], capture_output=True, text=True, timeout=600, env=env)
        return p.returncode, report, p.stdout, metrics, npd


def valid(name, report):
    errs = list(VALIDATOR.iter_errors(report))
    for e in errs[:5]:
        print(f"  {name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
    F.check(not errs, f"{name}: the report does not validate ({len(errs)} errors)")


with tempfile.TemporaryDirectory() as d:
    before, ue_after, ce_after, hot = (os.path.join(d, n) for n in ("before", "ue", "ce", "hot"))
    fake_tree(before, 0, 2)
    fake_tree(ue_after, 1, 2)
    fake_tree(ce_after, 0, 5)
    fake_tree(hot, 0, 2, celsius=96)

    # --- 1. an uncorrected error during the run: exit 1, the memory controller named everywhere -----------
    rc, rep, text, prom, npd = screen({"SDCSCREEN_HOST_ROOT": before, "SDCSCREEN_DRILL_TELEMETRY_AFTER": ue_after})
    F.check(rc == 1, f"uncorrected error: exit {rc}, expected 1")
    if rep:
        valid("uncorrected error", rep)
        F.check(all(t["result"] == "pass" for t in rep["tests"]), "uncorrected error: a test did not pass")
        tel = rep["host"]["telemetry"]
        ev = [e for e in tel["events"] if e["fatal"]]
        F.check(len(ev) == 1 and ev[0]["kind"] == "edac_uncorrected" and ev[0]["unit"] == "mc0"
                and ev[0]["before"] == 0 and ev[0]["after"] == 1, f"uncorrected error: events {tel['events']}")
        F.check(tel["uncorrected_errors"] is True, "uncorrected error: uncorrected_errors is not true")
        F.check(tel["drill"] and "SDCSCREEN_DRILL_TELEMETRY_AFTER" in tel["drill"], f"drill not said: {tel['drill']}")
        F.check(rep["exit"] == {"code": 1, "verdict": "fail"}, f"uncorrected error: exit {rep['exit']}")
        ident = rep["host"]["identity"]
        F.check(ident["cpu"]["family"] == 6 and ident["cpu"]["model"] == 143 and ident["cpu"]["stepping"] == 8
                and ident["cpu"]["microcode"] == "0x2b000181" and ident["kernel"] == "6.8.0-test",
                f"identity from the fake tree: {ident['cpu']}, kernel {ident['kernel']}")
        F.check(ident["board"]["serial"] == "BOARD-SN-1" and ident["bios"]["version"] is None,
                f"DMI from the fake tree: {ident['board']}, {ident['bios']}")
        F.check(any(u["what"] == "/sys/class/dmi/id/bios_version" for u in ident["not_available"]),
                "a missing DMI file is not listed as not available")
    else:
        F.check(False, "uncorrected error: no report")
    F.check("HOST ERROR: uncorrected memory error during the run: EDAC memory controller mc0 ue_count 0 -> 1" in text,
            f"uncorrected error: the text report does not say it: {text[:2000]}")
    F.check("TELEMETRY DRILL" in text and text.rstrip().endswith("exit: fail"), "text: drill or exit line missing")
    F.check('sdcscreen_edac_errors_during_run{controller="mc0",type="uncorrected"} 1' in prom
            and "sdcscreen_host_uncorrected_errors 1" in prom and "sdcscreen_exit_code 1" in prom,
            f"uncorrected error: Prometheus: {prom[-1500:]}")
    # The fake tree and the drill weaken the verdict: named last on the NPD line (the cut keeps the mark whole).
    F.check(npd.returncode == 1 and npd.stdout.startswith("HW: mc0 uncorrected memory error")
            and npd.stdout.rstrip("\n").endswith(" [weakened: SDCSCREEN_HOST_ROOT+1]"),
            f"uncorrected error: NPD exit {npd.returncode} line {npd.stdout!r}")

    # --- 2. a corrected error: reported, exit 0 ------------------------------------------------------------
    rc, rep, text, prom, npd = screen({"SDCSCREEN_HOST_ROOT": before, "SDCSCREEN_DRILL_TELEMETRY_AFTER": ce_after})
    F.check(rc == 0, f"corrected error: exit {rc}, expected 0")
    if rep:
        valid("corrected error", rep)
        ev = rep["host"]["telemetry"]["events"]
        F.check([(e["kind"], e["unit"], e["after"] - e["before"], e["fatal"]) for e in ev] ==
                [("edac_corrected", "mc0", 3, False)], f"corrected error: events {ev}")
    F.check("host: corrected memory errors during the run: EDAC memory controller mc0 ce_count 2 -> 5" in text,
            "corrected error: the text report does not say it")
    F.check('sdcscreen_edac_errors_during_run{controller="mc0",type="corrected"} 3' in prom
            and "sdcscreen_host_uncorrected_errors 0" in prom, "corrected error: Prometheus")
    F.check(npd.returncode == 0 and npd.stdout.startswith("OK:"), f"corrected error: NPD {npd.stdout!r}")

    # --- 3. no drill: the same tree before and after, nothing changed; sampled at 45 C, under the limit ----
    rc, rep, text, prom, npd = screen({"SDCSCREEN_HOST_ROOT": before}, "--max-temperature", "90")
    F.check(rc == 0, f"unchanged tree: exit {rc}")
    if rep:
        valid("unchanged tree", rep)
        tel = rep["host"]["telemetry"]
        F.check(tel["events"] == [] and tel["drill"] is None, f"unchanged tree: {tel['events']}")
        F.check(tel["samples"] >= 1 and tel["peak_temperature"]["celsius"] == 45
                and tel["peak_temperature"]["label"] == "Tctl", f"unchanged tree: samples {tel['samples']}, "
                f"peak {tel['peak_temperature']}")
    F.check("host telemetry: no counter that could be read changed" in text, "unchanged tree: text")

    # --- 3b. a CPU above --max-temperature while the case ran (sampled), cool before and after: an error ---
    for limit, want in (("90", 2), ("100", 0)):
        rc, rep, text, prom, npd = screen({"SDCSCREEN_HOST_ROOT": before, "SDCSCREEN_DRILL_TELEMETRY_DURING": hot},
                                          "--max-temperature", limit)
        F.check(rc == want, f"hot CPU, --max-temperature {limit}: exit {rc}, expected {want}")
        if not rep:
            F.check(False, f"hot CPU, --max-temperature {limit}: no report")
            continue
        valid(f"hot CPU {limit}", rep)
        tel = rep["host"]["telemetry"]
        F.check(tel["after"]["temperatures"][0]["celsius"] == 45 and tel["peak_temperature"]["celsius"] == 96,
                f"hot CPU: after {tel['after']['temperatures']}, peak {tel['peak_temperature']}")
        F.check(tel["drill"] and "SDCSCREEN_DRILL_TELEMETRY_DURING" in tel["drill"], f"drill not said: {tel['drill']}")
        results = [(t["result"], t.get("reason", "")) for t in rep["tests"]]
        if want == 2:
            F.check(results and all(r == "error" and "CPU sensor k10temp Tctl at 96 C while it ran, above "
                                    "--max-temperature 90 C" in why for r, why in results), f"hot CPU: {results}")
            # The line names the case; two weakening switches (the fake tree and the drill) leave no room for the
            # sensor, which the report gives (above).
            F.check(npd.returncode == 2 and npd.stdout.startswith("Unknown: softmax_f32.special_128x1000 error")
                    and npd.stdout.rstrip("\n").endswith(" [weakened: SDCSCREEN_HOST_ROOT+1]"),
                    f"hot CPU: NPD exit {npd.returncode} line {npd.stdout!r}")
        else:
            F.check(results and all(r == "pass" for r, _ in results), f"hot CPU under a higher limit: {results}")

# --- 4. this machine's own /proc and /sys: well-formed, and what is missing is listed, never 0 --------
env = {k: v for k, v in os.environ.items() if k not in ("SDCSCREEN_HOST_ROOT", "SDCSCREEN_SYSFS_ROOT")}
p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--backend", "cpu", "--enable", CASE,
                                                         "--output-format", "json", "-o", "-"])],
                   capture_output=True, text=True, timeout=600, env=env)
try:
    rep = json.loads(p.stdout)
except ValueError:
    rep = None
F.check(rep is not None and p.returncode in (0, 1), f"real tree: exit {p.returncode}, report parsed: {rep is not None}")
if rep:
    valid("real tree", rep)
    for when in ("before", "after"):
        s = rep["host"]["telemetry"][when]
        missing = " ".join(u["what"] for u in s["not_available"])
        for key, where in (("edac", "edac"), ("throttle", "thermal_throttle"), ("temperatures", "hwmon"),
                           ("machine_checks", "/proc/interrupts")):
            F.check(s[key] or where in missing, f"real tree {when}: {key} is empty and not listed as not available")
    ev = rep["host"]["telemetry"]["events"]
    F.check(p.returncode == (1 if any(e["fatal"] for e in ev) else 0), f"real tree: exit {p.returncode}, events {ev}")

# --- 5. info --output-format json: the identity of a fake tree, and this machine's --------------------
with tempfile.TemporaryDirectory() as d:
    fake_tree(d, 0, 0)
    for name, extra in (("fake tree", {"SDCSCREEN_HOST_ROOT": d}), ("real tree", {})):
        p = subprocess.run([common.SDCSCREEN, "info", "--output-format", "json"], capture_output=True, text=True,
                           timeout=120, env=dict(env, **extra))
        try:
            info = json.loads(p.stdout)
            F.check(p.returncode == 0 and isinstance(info["host"]["identity"]["not_available"], list)
                    and isinstance(info["telemetry"]["not_available"], list), f"info json ({name}): exit {p.returncode}")
            if extra:
                F.check(info["host"]["identity"]["cpu"]["model"] == 143, f"info json: {info['host']['identity']['cpu']}")
        except (ValueError, KeyError, TypeError) as e:
            F.check(False, f"info --output-format json ({name}): {e}: {p.stdout[:300]} {p.stderr[:300]}")
    p = subprocess.run([common.SDCSCREEN, "info"], capture_output=True, text=True, timeout=120,
                       env=dict(env, SDCSCREEN_HOST_ROOT=d))
    F.check("host identity:" in p.stdout and "family 6 model 143 stepping 8" in p.stdout, f"info text: {p.stdout}")

F.finish()

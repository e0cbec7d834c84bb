"""The shipped alert rules (deploy/prometheus/sdcscreen.rules.yml): `promtool check rules` accepts them, and
`promtool test rules` shows every alert firing on series taken from this tool's own textfiles and silent where
it must be (a healthy node, a drill, too few inconclusive screens, a recent pass). The series are the lines of
real `--prometheus` files written here, with the scrape's labels added; a failing screen that is not a drill
cannot be produced on purpose, so the drill's file stands in for one with its drill flag cleared, and as it is
(where no corruption alert may fire).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
common.KEEP_PROBE = True  # the slow-unit alerts read the probe's metrics

F = common.Failures("test_alert_rules")
RULES = os.path.join(os.environ.get("SDC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                     "deploy", "prometheus", "sdcscreen.rules.yml")
PROMTOOL = shutil.which("promtool")
if not PROMTOOL:
    F.check(False, "promtool is not installed (scripts/setup.sh installs Debian's prometheus package)")
    F.finish()
cpus = sorted(os.sched_getaffinity(0))
CASE = "softmax_f32.special_128x1000"
SEL = ["--cpuset", ",".join(str(c) for c in cpus[:2]), "--enable", CASE, "-q"]

p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True)
F.check(p.returncode == 0 and "SUCCESS: 9 rules found" in p.stdout, f"promtool check rules: {p.stdout}{p.stderr}")
ALERTS = re.findall(r"^\s+- alert: (\w+)", open(RULES).read(), re.M)
ANNOTATIONS = {}  # alert -> (summary, description) templates
for block in open(RULES).read().split("- alert: ")[1:]:
    name = block.split()[0]
    ANNOTATIONS[name] = (re.search(r'summary: "(.*)"', block).group(1), re.search(r'description: "(.*)"', block).group(1))


# Every screen but the slow drill's runs at the lowest throughput floor: the throughput probe measures this
# machine, and a busy CI machine's neighbour can hold one CPU's probe rounds below the default floor (a healthy
# screen's file then says slow, and the slow alert fires where this test wants silence). The slow drill's CPU
# does ten times the work, far below the default floor, which that screen keeps.
LOWEST_FLOOR = ["--throughput-floor", "0.01"]


def textfile(*args, env=None, floor=LOWEST_FLOOR, sel=SEL):
    """Runs a screen with --prometheus into a fresh file; returns (exit code, the file's series lines)."""
    with tempfile.TemporaryDirectory() as d:
        prom = os.path.join(d, "s.prom")
        p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", *sel, *floor, *args, "--prometheus", prom])],
                           capture_output=True, text=True, timeout=600, env=dict(os.environ, **(env or {})))
        lines = [ln for ln in open(prom).read().splitlines() if ln and not ln.startswith("#")] \
            if os.path.exists(prom) else []
    return p.returncode, lines


def series(lines, instance, **override):
    """promtool input_series from a textfile's lines: the node's labels added, every value constant, a value
    replaced where override names the metric."""
    out = []
    for ln in lines:
        name_labels, value = ln.rsplit(" ", 1)
        name = name_labels.split("{")[0]
        value = override.get(name, value)
        extra = f'instance="{instance}",job="node"'
        s = name_labels.replace("{", "{" + extra + ",", 1) if "{" in name_labels else f"{name_labels}{{{extra}}}"
        out.append((s, f"{value}x6000"))
    return out


def labels_of(lines, metric):
    """The label sets of a metric's series in a textfile, as dicts."""
    out = []
    for ln in lines:
        if ln.startswith(metric + "{"):
            out.append(dict(re.findall(r'(\w+)="([^"]*)"', ln.split("}")[0])))
    return out


def expected(alert, instance, labels):
    lab = dict(labels, instance=instance, job="node", severity={"SDCScreenSlowUnit": "info"}.get(
        alert, "critical" if alert in ("SilentDataCorruption", "SilentDataCorruptionUnit", "SDCScreenUnitHung",
                                       "SDCScreenUncorrectedHardwareError") else "warning"))
    summary, description = ANNOTATIONS[alert]
    render = lambda t: t.replace("{{ $labels.instance }}", instance).replace(UNIT_TEMPLATE, unit_text(labels))
    return {"exp_labels": lab, "exp_annotations": {"summary": render(summary), "description": render(description)}}


# How the annotations name a unit from its labels (cpu; gpu and sm), and the same in Python: "cpu 3", "gpu 0 sm 5".
UNIT_TEMPLATE = ("{{ if $labels.cpu }}cpu {{ $labels.cpu }}{{ else }}gpu {{ $labels.gpu }}"
                 "{{ if $labels.sm }} sm {{ $labels.sm }}{{ end }}{{ end }}")
F.check(UNIT_TEMPLATE in open(RULES).read(), "the rules name units with another template than this test renders")


def unit_text(labels):
    if "cpu" in labels:
        return f"cpu {labels['cpu']}"
    return f"gpu {labels.get('gpu', '')}" + (f" sm {labels['sm']}" if "sm" in labels else "")


TESTS = []


def scenario(name, input_series, eval_time, firing):
    """firing: alert -> list of expected alerts; every other alert is checked silent at eval_time."""
    checks = []
    for a in ALERTS:
        checks.append({"eval_time": eval_time, "alertname": a, "exp_alerts": firing.get(a, [])})
    TESTS.append((name, input_series, checks))


# 1. A healthy node: nothing fires (its last success lies in the test clock's future: not stale).
code, ok_lines = textfile()
F.check(code == 0 and ok_lines, f"pass: exit {code}")
scenario("healthy", series(ok_lines, "n1"), "2h", {})
# 2. A miscompare (a drill's file with the drill flag cleared): the node and the failing CPU fire.
code, bad_lines = textfile("--inject", f"case={CASE},element=5,bit=3")
F.check(code == 1, f"miscompare drill: exit {code}")


def unhealthy_in(lines):
    """The device labels of a textfile's units that are not healthy (value 0)."""
    return [dict(re.findall(r'(\w+)="([^"]*)"', ln.split("}")[0])) for ln in lines
            if ln.startswith("sdcscreen_device_healthy{") and ln.endswith("} 0")]


unhealthy = unhealthy_in(bad_lines)
F.check(len(unhealthy) >= 1 and all(set(u) == {"cpu"} for u in unhealthy),
        f"miscompare drill: no unhealthy unit labelled cpu=\"N\" alone in {bad_lines}")
# No pass yet: the last success is absent (not 0), which the never-passed alert reads.
F.check(not any(ln.startswith("sdcscreen_last_success_timestamp_seconds") for ln in bad_lines),
        f"a textfile before any pass has a last success: {[ln for ln in bad_lines if 'success' in ln]}")
F.check(any(ln.startswith("sdcscreen_last_success_timestamp_seconds ") for ln in ok_lines),
        "a passing screen's textfile has no last success")
scenario("miscompare", series(bad_lines, "n1", sdcscreen_fault_injection="0"), "10m",
         {"SilentDataCorruption": [expected("SilentDataCorruption", "n1", {})],
          "SilentDataCorruptionUnit": [expected("SilentDataCorruptionUnit", "n1", u) for u in unhealthy]})
# 3. The same file as the drill wrote it: no corruption alert; never passed (its fresh file has no success) after 1 h.
scenario("drill", series(bad_lines, "n1"), "2h",
         {"SDCScreenNeverPassed": [expected("SDCScreenNeverPassed", "n1", {})]})
# 4. A hung CPU (the hang drill, flag cleared): the unit fires.
code, hang_lines = textfile("--inject", f"case={CASE},action=hang,unit={cpus[-1]}")
# One CPU hung while its peer finished: a failed unit (exit 1); the only CPU hung: inconclusive (2).
F.check(code == (1 if len(cpus) >= 2 else 2), f"hang drill: exit {code}")
hung = labels_of(hang_lines, "sdcscreen_device_hung")
F.check(len(hung) == 1, f"hang drill: one hung unit in {hang_lines}")
scenario("hung", series(hang_lines, "n1", sdcscreen_fault_injection="0"), "10m",
         {"SDCScreenUnitHung": [expected("SDCScreenUnitHung", "n1", u) for u in hung],
          "SilentDataCorruption": [expected("SilentDataCorruption", "n1", {})] if "sdcscreen_exit_code 1" in hang_lines
          else [],
          "SilentDataCorruptionUnit": [expected("SilentDataCorruptionUnit", "n1", u) for u in unhealthy_in(hang_lines)]
          if "sdcscreen_exit_code 1" in hang_lines else []})
# 5. A slow CPU (the probe's drill): the unit fires, as info.
if len(cpus) >= 2:
    code, slow_lines = textfile(env={"SDCSCREEN_DRILL_SLOW_CPU": str(cpus[1])}, floor=[])
    slow = labels_of(slow_lines, "sdcscreen_device_slow")
    F.check(code == 0 and len(slow) == 1, f"slow drill: exit {code}, {slow}")
    scenario("slow", series(slow_lines, "n1"), "10m",
             {"SDCScreenSlowUnit": [expected("SDCScreenSlowUnit", "n1", u) for u in slow]})
# 6. Inconclusive (exit 2: GPUs expected, none here) at every screen of a day: fires; one pass in the day: silent.
# (without --cpuset, which names CPUs to screen: GPUs expected besides are a bad command line)
code, inc_lines = textfile("--expect-devices", "64", sel=[a for a in SEL if a not in SEL[:2]])
F.check(code == 2, f"inconclusive: exit {code}")
inc = [(s, "0+60x6000" if s.startswith("sdcscreen_last_run_timestamp_seconds") else v) for s, v in series(inc_lines, "n1")]
scenario("inconclusive", inc, "1d", {"SDCScreenInconclusive": [expected("SDCScreenInconclusive", "n1", {})],
                                     "SDCScreenNeverPassed": [expected("SDCScreenNeverPassed", "n1", {})]})
mixed = [(s, "0x600 2x5400" if s.startswith("sdcscreen_exit_code") else v) for s, v in inc]
scenario("inconclusive after a pass", mixed, "1d", {"SDCScreenNeverPassed": [expected("SDCScreenNeverPassed", "n1", {})]})
# 7. Stale: the pass's file with its last success at one minute into the test clock: fires after three days.
stale = series(ok_lines, "n1", sdcscreen_last_success_timestamp_seconds="60")
scenario("stale", stale, "3d2h", {"SDCScreenStale": [expected("SDCScreenStale", "n1", {})]})
scenario("not stale yet", stale, "2d", {})
# 8. An uncorrected hardware error (the pass's file with its host flag set): fires.
scenario("uncorrected", series(ok_lines, "n1", sdcscreen_host_uncorrected_errors="1"), "10m",
         {"SDCScreenUncorrectedHardwareError": [expected("SDCScreenUncorrectedHardwareError", "n1", {})]})
# 9. A node exporter without any sdcscreen textfile: never run, after a day; with one: silent.
scenario("never run", [('node_time_seconds{instance="n2",job="node"}', "0+60x6000")], "1d1h",
         {"SDCScreenNeverRun": [expected("SDCScreenNeverRun", "n2", {})]})
scenario("ran", [('node_time_seconds{instance="n1",job="node"}', "0+60x6000")] + series(ok_lines, "n1"), "1d1h", {})


def yaml_quote(s):
    return "'" + str(s).replace("'", "''") + "'"


with tempfile.TemporaryDirectory() as d:
    shutil.copy(RULES, os.path.join(d, "sdcscreen.rules.yml"))
    y = ["rule_files:", "  - sdcscreen.rules.yml", "evaluation_interval: 1m", "tests:"]
    for name, inputs, checks in TESTS:
        y += [f"  # {name}", "  - interval: 1m", "    input_series:"]
        for s, v in inputs:
            y += [f"      - series: {yaml_quote(s)}", f"        values: {yaml_quote(v)}"]
        y += ["    alert_rule_test:"]
        for c in checks:
            y += [f"      - eval_time: {c['eval_time']}", f"        alertname: {c['alertname']}", "        exp_alerts:"]
            if not c["exp_alerts"]:
                y[-1] += " []"
            for a in c["exp_alerts"]:
                y += ["          - exp_labels:"] + [f"              {k}: {yaml_quote(v)}" for k, v in a["exp_labels"].items()]
                y += ["            exp_annotations:"] + [f"              {k}: {yaml_quote(v)}" for k, v in a["exp_annotations"].items()]
    test_file = os.path.join(d, "sdcscreen.rules.test.yml")
    open(test_file, "w").write("\n".join(y) + "\n")
    p = subprocess.run([PROMTOOL, "test", "rules", test_file], capture_output=True, text=True, cwd=d)
    F.check(p.returncode == 0 and "SUCCESS" in p.stdout, f"promtool test rules: {p.stdout[-3000:]}{p.stderr[-3000:]}")
    print(f"promtool test rules: {len(TESTS)} scenarios x {len(ALERTS)} alerts: {p.stdout.strip().splitlines()[-1:]}")
    # The test itself can fail: an alert expected where the rules raise none is reported.
    broken = open(test_file).read().replace("alertname: SDCScreenStale\n        exp_alerts: []",
                                            "alertname: SDCScreenStale\n        exp_alerts:\n          - exp_labels: {}", 1)
    open(test_file, "w").write(broken)
    p = subprocess.run([PROMTOOL, "test", "rules", test_file], capture_output=True, text=True, cwd=d)
    F.check(p.returncode != 0, "promtool test rules passed a test that expects an alert the rules do not raise")
F.finish()

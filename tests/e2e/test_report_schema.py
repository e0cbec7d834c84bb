"""The JSON report against docs/report.schema.json (draft 2020-12, validated with python3-jsonschema).

Validates the reports of a clean run, a run with an output injection (exit 1), a clean run with --digests, a run whose injection never
fires (exit 2), and a --backend cuda run (no CUDA in this build: exit 2, errors[] non-empty); shows the
validator is not vacuous by rejecting mutated reports; and checks that -o replaces an existing file
atomically without leaving temporary files behind.
"""
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
common.KEEP_PROBE = True  # the report's probe fields are part of the schema

try:
    import jsonschema
except ImportError:
    sys.exit("python3-jsonschema is required (apt-get install python3-jsonschema)")

F = common.Failures("test_report_schema")
CASE = "softmax_f32.special_128x1000"  # 2 boot iterations, 128000 output elements

with open(common.SCHEMA) as f:
    SCHEMA = json.load(f)
try:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    F.check(True, "schema is a valid draft 2020-12 schema")
except jsonschema.exceptions.SchemaError as e:
    F.check(False, f"docs/report.schema.json is not a valid draft 2020-12 schema: {e.message}")
    F.finish()
F.check(SCHEMA.get("$schema") == "https://json-schema.org/draft/2020-12/schema", "schema declares draft 2020-12")
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def errors_of(report):
    return sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.absolute_path))


def validate(name, report):
    errs = errors_of(report)
    for e in errs[:5]:
        print(f"  {name}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}")
    F.check(not errs, f"{name}: report does not validate against the schema ({len(errs)} errors)")


def consistent(name, rc, report):
    """What a schema cannot say: counts add up, the exit object is the process exit code."""
    F.check(report["exit"]["code"] == rc, f"{name}: exit.code {report['exit']['code']} != process exit code {rc}")
    counts = {k: sum(1 for t in report["tests"] if t["result"] == k) for k in ("pass", "fail", "error", "skip", "crash", "not_applicable")}
    F.check(report.get("seed_text") == str(report["seed"]), f"{name}: seed_text {report.get('seed_text')} != seed")
    s = report["summary"]
    F.check(s["tests"] == len(report["tests"]), f"{name}: summary.tests {s['tests']} != len(tests) {len(report['tests'])}")
    for k, n in counts.items():
        F.check(s[k] == n, f"{name}: summary.{k} {s[k]} != {n} tests with result {k}")
    F.check(report["fault_injection"] == bool(report["injections"]), f"{name}: fault_injection disagrees with injections[]")
    cpus = {u["cpu"] for u in report["units"]}
    for t in report["tests"]:
        F.check(set(t["units_failed"]) <= cpus, f"{name}: {t['id']}: units_failed {t['units_failed']} not among units {sorted(cpus)}")
        for m in t["miscompares"]:
            xor = int(m["expected"], 16) ^ int(m["actual"], 16)
            F.check(int(m["xor_mask"], 16) == xor, f"{name}: {t['id']}: xor_mask {m['xor_mask']} != expected ^ actual")
            F.check(m["unit"]["cpu"] in t["units_failed"], f"{name}: {t['id']}: miscompare unit {m['unit']} not in units_failed")
        for g in t["signatures"]:
            F.check(g["unit"]["cpu"] in t["units_failed"], f"{name}: {t['id']}: signature unit {g['unit']} not in units_failed")
            F.check(g["signature"].startswith(t["family"] + ":"), f"{name}: {t['id']}: signature {g['signature']!r} not of {t['family']}")


def reported(name, rc, report, err, want):
    """Checks that a run exited `want` and wrote a report that the schema accepts and that agrees with its exit;
    true when it wrote one."""
    F.check(rc == want, f"{name}: exit {rc}, expected {want} (stderr: {err.strip()[:300]})")
    F.check(report is not None, f"{name}: no report written")
    if report:
        validate(name, report)
        consistent(name, rc, report)
    return bool(report)


# --- 1. a clean run -------------------------------------------------------------------------------
rc, clean, err = common.run_json("--enable", "softmax_f32.*")
if reported("clean run", rc, clean, err, 0):
    F.check(clean["exit"] == {"code": 0, "verdict": "pass"}, f"clean run: exit {clean['exit']}")
    F.check(len(clean["tests"]) == 4 and all(t["result"] == "pass" for t in clean["tests"]),
            f"clean run: expected 4 passing softmax tests, got {[(t['id'], t['result']) for t in clean['tests']]}")
    F.check(clean["errors"] == [] and clean["injections"] == [] and clean["fault_injection"] is False,
            "clean run: errors/injections not empty")

# --- 2. an output injection: exit 1 with miscompares ---------------------------------------------
spec = f"case={CASE},element=5,bit=3"
rc, inj, err = common.run_json("--enable", CASE, "--inject", spec)
if reported("output injection", rc, inj, err, 1):
    F.check(inj["fault_injection"] is True, "output injection: fault_injection is not true")
    F.check(len(inj["injections"]) == 1 and inj["injections"][0]["fired"] is True, f"output injection: {inj['injections']}")
    t = inj["tests"][0] if inj["tests"] else {}
    F.check(t.get("result") == "fail", f"output injection: test result {t.get('result')}, expected fail")
    F.check(len(t.get("miscompares", [])) >= 1, "output injection: no miscompares listed")
    if t.get("miscompares"):
        m = t["miscompares"][0]
        F.check(m["element"] == 5 and m["xor_mask"] == "0x00000008" and m["iteration"] == 0,
                f"output injection: miscompare {m} is not element 5, xor 0x00000008, iteration 0")
    sigs = t.get("signatures", [])
    # The injection XORs bit 3, so its direction is the value's; one element flipped by 8 ULPs either way.
    F.check([g.get("signature") for g in sigs] in ([f"softmax_f32:bits=m3:dir={d}:ulp=2^3:cluster=single"]
                                                   for d in ("0to1", "1to0")),
            f"output injection: signatures {[g.get('signature') for g in sigs]}, expected bit m3 in one element")
    # Its one failing tile, which the listed element is in (schema 21: every failing tile, listed or not).
    F.check(t.get("failed_tile_ids") == sorted({m["tile"] for m in t.get("miscompares", [])}) and t.get("failed_tile_ids"),
            f"output injection: failed_tile_ids {t.get('failed_tile_ids')}, miscompares' tiles "
            f"{[m['tile'] for m in t.get('miscompares', [])]}")

# --- 2b. --digests: every tile's digest of the last complete iteration ------------------------------
rc, dig, err = common.run_json("--enable", CASE, "--digests")
if reported("--digests", rc, dig, err, 0):
    t = dig["tests"][0]
    F.check(len(t.get("tile_digests", [])) == t["tiles"] and t.get("digest_iteration") == t["iterations"] - 1,
            f"--digests: {len(t.get('tile_digests', []))} digests for {t['tiles']} tiles, iteration "
            f"{t.get('digest_iteration')} of {t['iterations']}")
    mutant_base = copy.deepcopy(dig)
    for name, change in (("tile_digests without digest_iteration", lambda r: r["tests"][0].pop("digest_iteration")),
                         ("digest_iteration without tile_digests", lambda r: r["tests"][0].pop("tile_digests")),
                         ("a tile digest of 15 hex digits", lambda r: r["tests"][0]["tile_digests"].__setitem__(0, "0" * 15))):
        r = copy.deepcopy(mutant_base)
        change(r)
        F.check(bool(errors_of(r)), f"mutation '{name}' was accepted by the schema")
if clean:
    F.check(all("tile_digests" not in t for t in clean["tests"]), "a run without --digests has tile_digests")

# --- 2c. an integer family's miscompare: read as int32, validated; a float reading of it is refused ------
I8 = next(c["id"] for c in common.battery()["cases"] if c["family"] == "gemm_i8" and "boot" in c["iterations"])
rc, i8, err = common.run_json("--enable", I8, "--inject", f"case={I8},element=7,bit=31")
if reported("int32 output injection", rc, i8, err, 1):
    ms = i8["tests"][0]["miscompares"]
    ok = len(ms) == 1 and "int32" in ms[0]
    if F.check(ok, f"int32 output injection: miscompares {ms}"):
        m = ms[0]
        x, a = (int(m[k], 16) for k in ("expected", "actual"))
        sx, sa = (v - (1 << 32) if v >> 31 else v for v in (x, a))
        F.check(m["int32"] == {"expected": sx, "actual": sa, "difference": sa - sx} and m["ulps"] == abs(sa - sx)
                and abs(sa - sx) >= 1 << 31, f"int32 output injection: a sign flip read as {m['int32']}, ulps {m['ulps']}")
        r = copy.deepcopy(i8)
        r["tests"][0]["miscompares"][0]["int32"]["difference"] = 1.5
        F.check(bool(errors_of(r)), "mutation 'a non-integer int32 difference' was accepted by the schema")
        # Its signature reads int32 bits (schema 18): b31, the difference's bucket, no fp32 fields.
        sigs = i8["tests"][0]["signatures"]
        d = "0to1" if a >> 31 else "1to0"
        F.check([g["signature"] for g in sigs] == [f"{I8.split('.')[0]}:bits=b31:dir={d}:diff=2^31:cluster=single"]
                and sigs[0]["bit_flips"]["format"] == "int32" and "sign" not in sigs[0]["bit_flips"],
                f"int32 output injection: signature {sigs}")
        for name, change in (("an int32 signature with a sign count", lambda g: g["bit_flips"].__setitem__("sign", 1)),
                             ("an int32 signature with 64 positions",
                              lambda g: g["bit_flips"]["zero_to_one"].extend([0] * 32))):
            r = copy.deepcopy(i8)
            change(r["tests"][0]["signatures"][0])
            F.check(bool(errors_of(r)), f"mutation '{name}' was accepted by the schema")

# --- 2d. a binary64 family's signature: a value's 64 bits, named by binary64 field --------------------------
F64 = next(c["id"] for c in common.battery()["cases"] if c["family"] == "gemm_f64" and "boot" in c["iterations"])
rc, f64, err = common.run_json("--enable", F64, "--inject", f"case={F64},element=1,bit=30")  # the .hi word: e10
if reported("binary64 output injection", rc, f64, err, 1):
    sigs = f64["tests"][0]["signatures"]
    F.check(len(sigs) == 1 and sigs[0]["signature"].startswith("gemm_f64:bits=e10:")
            and sigs[0]["bit_flips"]["format"] == "binary64" and len(sigs[0]["bit_flips"]["zero_to_one"]) == 64
            and sigs[0]["bit_flips"]["exponent"] == 1 and sigs[0]["elements"] == 1,
            f"binary64 output injection: signature {sigs}")
    r = copy.deepcopy(f64)
    del r["tests"][0]["signatures"][0]["bit_flips"]["zero_to_one"][32:]
    F.check(bool(errors_of(r)), "mutation 'a binary64 signature with 32 positions' was accepted by the schema")

# --- 2e. a level-3 replay whose parameters become infinite (schema 19): its whole trajectory, a loss that is not
#     finite as null, every distance a number, and its failure mode; a mode the schema does not name is refused --------
L3 = "train_step_f32.l3_tiny_20"
rc, l3, err = common.run_json("--profile", "standard", "--time-budget", "0.2s", "--enable", L3, "--inject",
                              f"case={L3},submodule=lm_head.optimizer,step=5,output=0,element=0,bit=30")
if reported("level-3 replay drill", rc, l3, err, 1):
    t = l3["tests"][0]
    steps = [m for m in t.get("replay_metrics", []) if m["site"].startswith("step ")]
    F.check(len(steps) == 2 * common.CASES[L3]["shape"]["steps"] and
            any(m["metric"] == "loss" and m["value"] is None for m in steps) and
            all(isinstance(m["value"], float) or m["value"] == 0 for m in steps if m["metric"] == "param_distance"),
            f"level-3 replay drill: per-step metrics {steps[:4]}")
    F.check([f["failure_mode"] for f in t.get("replay_failure_modes", [])] == ["spike_and_degrade"],
            f"level-3 replay drill: failure modes {t.get('replay_failure_modes')}")
    for name, change in (("a failure mode 'exploded'", lambda f: f.__setitem__("failure_mode", "exploded")),
                         ("a failure mode without its unit", lambda f: f.pop("unit")),
                         ("a failure mode with its level", lambda f: f.__setitem__("level", 3))):
        r = copy.deepcopy(l3)
        if r["tests"][0].get("replay_failure_modes"):
            change(r["tests"][0]["replay_failure_modes"][0])
            F.check(bool(errors_of(r)), f"mutation '{name}' was accepted by the schema")
    r = copy.deepcopy(l3)
    r["schema_version"] = 18
    F.check(bool(errors_of(r)), "mutation 'schema_version is 18 (before replay_failure_modes)' was accepted by the schema")

# --- 3. an injection that never fires: exit 2 -----------------------------------------------------
rc, nofire, err = common.run_json("--enable", CASE, "--inject", f"case={CASE},element=5,bit=3,iteration=5")
if reported("injection that never fires", rc, nofire, err, 2):
    F.check(nofire["exit"] == {"code": 2, "verdict": "error"}, f"injection that never fires: exit {nofire['exit']}")
    F.check([i["fired"] for i in nofire["injections"]] == [False], f"injection that never fires: {nofire['injections']}")

# --- 4. --backend cuda in a build without CUDA: exit 2, errors[] ---------------------------------
rc, cuda, err = common.run_json("--backend", "cuda", "--enable", CASE)
if reported("--backend cuda", rc, cuda, err, 2):
    F.check(len(cuda["errors"]) >= 1, "--backend cuda: errors[] is empty")
    F.check(cuda["backend"] == "cuda", f"--backend cuda: backend is {cuda['backend']!r}")
    F.check(not any(t["result"] == "pass" for t in cuda["tests"]), "--backend cuda: a test is reported as pass")

# --- 5. the validator is not vacuous ---------------------------------------------------------------
base = inj if inj and inj.get("tests") and inj["tests"][0].get("miscompares") else None
F.check(base is not None, "mutations: need the injected report (with a miscompare) as a base")
if base:
    def mutant(name, change, on=None):
        r = copy.deepcopy(on if on is not None else base)
        change(r)
        F.check(bool(errors_of(r)), f"mutation '{name}' was accepted by the schema")

    def setp(path, value):
        def f(r):
            o = r
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
        return f

    def delp(path):
        def f(r):
            o = r
            for k in path[:-1]:
                o = o[k]
            del o[path[-1]]
        return f

    F.check(not errors_of(copy.deepcopy(base)), "mutations: the unmutated base must validate")
    # wrong types
    mutant("seed is a string", setp(["seed"], str(base["seed"])))
    mutant("schema_version is 1 (the CPU-only format)", setp(["schema_version"], 1))
    mutant("schema_version is 2 (before judged_by)", setp(["schema_version"], 2))
    mutant("schema_version is 3 (before crash)", setp(["schema_version"], 3))
    mutant("schema_version is 4 (before signatures)", setp(["schema_version"], 4))
    mutant("schema_version is 5 (before tile digests)", setp(["schema_version"], 5))
    mutant("schema_version is 6 (before throughput)", setp(["schema_version"], 6))
    mutant("schema_version is 10 (before host identity and telemetry)", setp(["schema_version"], 10))
    mutant("schema_version is 13 (before drain_reason)", setp(["schema_version"], 13))
    mutant("schema_version is 14 (before gpu= units and not_applicable)", setp(["schema_version"], 14))
    mutant("schema_version is 15 (before fault kinds and clusters)", setp(["schema_version"], 15))
    mutant("summary without not_applicable", delp(["summary", "not_applicable"]))
    mutant("a test result 'n/a'", setp(["tests", 0, "result"], "n/a"))
    mutant("schema_version is 12 (before weakened_by)", setp(["schema_version"], 12))
    mutant("schema_version is 14 (before failures_by_iteration)", setp(["schema_version"], 14))
    mutant("no weakened_by", delp(["weakened_by"]))
    mutant("a weakened_by entry without its name", setp(["weakened_by"], [{"value": "0", "effect": "x"}]))
    mutant("schema_version is 11 (before the memory and sampled CPU temperatures)", setp(["schema_version"], 11))
    mutant("throughput is missing", delp(["throughput"]))
    # host identity and telemetry (schema_version 11)
    mutant("no host.identity", delp(["host", "identity"]))
    mutant("no host.telemetry", delp(["host", "telemetry"]))
    mutant("identity cpu family is a string", setp(["host", "identity", "cpu", "family"], "6"))
    mutant("identity without not_available", delp(["host", "identity", "not_available"]))
    mutant("identity ppin not hex", setp(["host", "identity", "cpu", "ppin"], [{"package": 0, "ppin": "zz"}]))
    mutant("telemetry before without not_available", delp(["host", "telemetry", "before", "not_available"]))
    mutant("telemetry without its CPU temperature samples", delp(["host", "telemetry", "samples"]))
    mutant("a negative CPU temperature sample count", setp(["host", "telemetry", "samples"], -1))
    mutant("a CPU peak temperature without its sensor", setp(["host", "telemetry", "peak_temperature"],
                                                             {"label": "Tctl", "celsius": 90, "time": 0}))
    mutant("EDAC count negative", setp(["host", "telemetry", "before", "edac"],
                                       [{"controller": "mc0", "corrected": -1, "uncorrected": 0}]))
    mutant("EDAC controller 'dimm0'", setp(["host", "telemetry", "before", "edac"],
                                           [{"controller": "dimm0", "corrected": 0, "uncorrected": 0}]))
    mutant("an unavailable source with no reason", setp(["host", "telemetry", "before", "not_available"],
                                                        [{"what": "/sys/devices/system/edac/mc", "why": ""}]))
    fatal = {"kind": "edac_uncorrected", "unit": "mc0", "before": 0, "after": 1, "fatal": True,
             "description": "uncorrected memory error during the run: EDAC memory controller mc0 ue_count 0 -> 1"}
    mutant("uncorrected_errors true without a fatal event", setp(["host", "telemetry", "uncorrected_errors"], True))
    mutant("an uncorrected EDAC event that is not fatal", setp(["host", "telemetry", "events"], [dict(fatal, fatal=False)]))
    mutant("a corrected EDAC event that is fatal", setp(["host", "telemetry", "events"],
                                                        [dict(fatal, kind="edac_corrected")]))
    if clean:
        def fatal_event(r):
            r["host"]["telemetry"]["events"] = [fatal]
            r["host"]["telemetry"]["uncorrected_errors"] = True
        mutant("a fatal host event with exit 0", fatal_event, on=clean)
        ok = copy.deepcopy(inj)
        fatal_event(ok)
        F.check(not errors_of(ok), f"a fatal host event in a failing run does not validate: {errors_of(ok)[:1]}")
    mutant("throughput floor is 1", setp(["throughput", "floor"], 1))
    mutant("exit 3 with the verdict pass", setp(["exit"], {"code": 3, "verdict": "pass"}))
    mutant("tests[0] without signatures", delp(["tests", 0, "signatures"]))
    mutant("tests[0] without failures_by_iteration", delp(["tests", 0, "failures_by_iteration"]))
    mutant("schema_version is 20 (before failed_tile_ids)", setp(["schema_version"], 20))
    mutant("tests[0] without failed_tile_ids", delp(["tests", 0, "failed_tile_ids"]))
    mutant("a failed tile id that is negative", setp(["tests", 0, "failed_tile_ids"], [-1]))
    mutant("a failures_by_iteration entry without its elements",
           setp(["tests", 0, "failures_by_iteration"], [{"iteration": 0, "tiles": 1}]))
    mutant("tests[0] without judged_by", delp(["tests", 0, "judged_by"]))
    mutant("tests[0].judged_by 'golden'", setp(["tests", 0, "judged_by"], "golden"))
    mutant("tests[0].library is 0", setp(["tests", 0, "library"], 0))
    mutant("tests[0].iterations is a string", setp(["tests", 0, "iterations"], "2"))
    mutant("tests[0].duration_s is null", setp(["tests", 0, "duration_s"], None))
    mutant("fault_injection is 1", setp(["fault_injection"], 1))
    mutant("units[0].cpu is negative", setp(["units", 0, "cpu"], -1))
    mutant("errors is a string", setp(["errors"], "boom"))
    # missing required keys
    mutant("no exit", delp(["exit"]))
    mutant("no summary", delp(["summary"]))
    mutant("no tests[0].result", delp(["tests", 0, "result"]))
    mutant("no miscompare xor_mask", delp(["tests", 0, "miscompares", 0, "xor_mask"]))
    mutant("no host.hostname", delp(["host", "hostname"]))
    # extra keys
    mutant("extra top-level key", setp(["verdict"], "pass"))
    mutant("extra key in tests[0]", setp(["tests", 0, "color"], "red"))
    mutant("extra key in exit", setp(["exit", "reason"], "x"))
    mutant("extra key in miscompare", setp(["tests", 0, "miscompares", 0, "bits"], 3))
    if base["tests"][0].get("signatures"):
        mutant("signature string with a unit number", setp(["tests", 0, "signatures", 0, "signature"],
                                                           base["tests"][0]["signatures"][0]["signature"] + ":cpu=3"))
        mutant("signature cluster 'blob'", setp(["tests", 0, "signatures", 0, "cluster"], "blob"))
        mutant("signature with 31 bit counts", lambda r: r["tests"][0]["signatures"][0]["bit_flips"]["zero_to_one"].pop())
        mutant("signature stuck_at bit 32", setp(["tests", 0, "signatures", 0, "stuck_at"], {"bit": 32, "value": 1}))
        mutant("signature without tiles", delp(["tests", 0, "signatures", 0, "tiles"]))
    # bad hex strings
    mutant("expected without 0x", setp(["tests", 0, "miscompares", 0, "expected"], "00000000"))
    mutant("actual upper-case", setp(["tests", 0, "miscompares", 0, "actual"], "0x0000000A"))
    mutant("xor_mask too short", setp(["tests", 0, "miscompares", 0, "xor_mask"], "0x8"))
    mutant("injection mask 9 digits", setp(["injections", 0, "mask"], "0x000000008"))
    mutant("mask with a non-hex digit", setp(["injections", 0, "mask"], "0x0000000g"))
    # bad enums and contradictions
    mutant("result 'ok'", setp(["tests", 0, "result"], "ok"))
    mutant("exit.verdict 'usage'", setp(["exit", "verdict"], "usage"))
    mutant("exit code 0 with verdict fail", setp(["exit", "code"], 0))
    mutant("mode 'fast'", setp(["tests", 0, "mode"], "fast"))
    mutant("backend 'auto'", setp(["backend"], "auto"))
    mutant("timing.start not ISO", setp(["timing", "start"], "yesterday"))
    mutant("fault_injection false with injections", setp(["fault_injection"], False))
    mutant("failed test with failed_tiles 0", setp(["tests", 0, "failed_tiles"], 0))
    if clean:
        mutant("skip without a reason", setp(["tests", 0, "result"], "skip"), on=clean)
        mutant("not_applicable without a reason", setp(["tests", 0, "result"], "not_applicable"), on=clean)
        mutant("pass with a reason", setp(["tests", 0, "reason"], "because"), on=clean)
        mutant("pass with a miscompare", lambda r: r["tests"][0]["miscompares"].append(copy.deepcopy(base["tests"][0]["miscompares"][0])), on=clean)
        if base["tests"][0].get("signatures"):
            mutant("pass with a signature", lambda r: r["tests"][0]["signatures"].append(copy.deepcopy(base["tests"][0]["signatures"][0])), on=clean)
        mutant("pass with a failed tile id", setp(["tests", 0, "failed_tile_ids"], [0]), on=clean)
    mutant("input injection without tensor", setp(["injections", 0, "target"], "input"))
    # The GPU shape of a report (schema_version 7), built from the injected CPU report: it validates, and
    # each of its GPU parts is checked (this machine may have no GPU to produce one).
    gpu = copy.deepcopy(base)
    gpu["backend"], gpu["backend_reason"] = "cuda", "--backend cuda"
    gpu["devices"] = [{"index": 0, "kind": "cuda", "name": "NVIDIA H100 80GB HBM3",
                       "uuid": "GPU-0a1b2c3d-0000-1111-2222-333344445555", "pci_bus_id": "00000000:1b:00.0",
                       "compute_capability": "9.0", "architecture": "sm_90", "sm_count": 132,
                       "memory_bytes": 85520809984, "driver": "580.159.04", "driver_cuda": "13.0", "runtime": "13.0",
                       "ecc": "on"}]
    # NVML's telemetry of that GPU (schema 11; the memory temperature 12), as a run with the driver's library writes it.
    reading = {"time": 1.7e9, "ecc_volatile_corrected": 0, "ecc_volatile_uncorrected": 0, "ecc_aggregate_corrected": 2,
               "ecc_aggregate_uncorrected": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
               "retired_pages_pending": False, "remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 0,
               "remap_pending": False, "remap_failed": False, "temperature_c": 41, "memory_temperature_c": 44,
               "sm_clock_mhz": 1980,
               "memory_clock_mhz": 2619, "power_w": 71.25, "throttle_reasons": "gpu_idle", "pcie_generation": 5,
               "pcie_width": 16, "not_available": []}
    gpu["devices"][0]["telemetry"] = {
        "matched": True, "not_matched": "",
        "identity": {"serial": "1650923456789", "board_part_number": "900-21010-0000-000", "vbios": "96.00.5E.00.01",
                     "inforom": "G520.0200.00.05", "driver": "580.159.04", "ecc_enabled": True},
        "before": reading, "after": dict(reading, time=1.7e9 + 30),
        "peak": {"temperature_c": 78, "memory_temperature_c": 71, "power_w": 690.5, "sm_clock_mhz": 1980, "memory_clock_mhz": 2619,
                 "throttle_reasons": "gpu_idle, sw_power_cap"},
        "samples": 30, "xid_events_watched": True,
        "events": [{"kind": "throttle", "severity": "info", "time": 1.7e9 + 30, "text": "throttled (sw_power_cap)"}]}
    gpu["nvml"] = {"available": True, "why": "", "library": "libnvidia-ml.so.1"}
    gpu["units"] = [{"kind": "sm", "gpu": 0, "sm": 17, "tiles": 40, "failed_tiles": 1, "result": "fail"},
                    {"kind": "sm", "gpu": 0, "sm": 18, "tiles": 0, "failed_tiles": 0, "result": "idle"}]
    for t in gpu["tests"]:
        t["device"] = "cuda:0"
        t["library"], t["algorithm"] = "sdcscreen-kernels 1", "mma.sync m16n8k16 f32 accumulators"
        t["units_failed"] = [17] if t["result"] == "fail" else []
        for m in t["miscompares"] + t["signatures"]:
            m["unit"] = {"kind": "sm", "gpu": 0, "sm": 17}
    for i in gpu["injections"]:
        i["device"], i["fired_unit"] = 0, 17
    F.check(not errors_of(copy.deepcopy(gpu)), f"the GPU-shaped report does not validate: {errors_of(copy.deepcopy(gpu))[:1]}")
    mutant("gpu device without uuid", delp(["devices", 0, "uuid"]), on=gpu)
    mutant("gpu uuid not GPU-...", setp(["devices", 0, "uuid"], "0a1b2c3d"), on=gpu)
    mutant("gpu ecc 'maybe'", setp(["devices", 0, "ecc"], "maybe"), on=gpu)
    mutant("sm unit with a cpu key", setp(["units", 0, "cpu"], 3), on=gpu)
    mutant("sm unit without sm", delp(["units", 0, "sm"]), on=gpu)
    mutant("idle sm with tiles", setp(["units", 1, "tiles"], 5), on=gpu)
    mutant("miscompare unit sm without gpu", delp(["tests", 0, "miscompares", 0, "unit", "gpu"]), on=gpu)
    mutant("sm unit naming its GPU 'device' (schema_version 14)",
           lambda r: r["units"][0].update(device=r["units"][0].pop("gpu")), on=gpu)
    mutant("test device 'gpu0'", setp(["tests", 0, "device"], "gpu0"), on=gpu)
    mutant("injection without device", delp(["injections", 0, "device"]), on=gpu)
    mutant("gpu device without telemetry", delp(["devices", 0, "telemetry"]), on=gpu)
    mutant("a GPU reading without its memory temperature",
           delp(["devices", 0, "telemetry", "before", "memory_temperature_c"]), on=gpu)
    mutant("a negative GPU memory temperature",
           setp(["devices", 0, "telemetry", "peak", "memory_temperature_c"], -1), on=gpu)
    mutant("telemetry matched without identity", delp(["devices", 0, "telemetry", "identity"]), on=gpu)
    mutant("telemetry matched with a not_matched reason", setp(["devices", 0, "telemetry", "not_matched"], "x"), on=gpu)
    mutant("unmatched telemetry without a reason", setp(["devices", 0, "telemetry"], {"matched": False, "not_matched": ""}), on=gpu)
    mutant("a negative temperature", setp(["devices", 0, "telemetry", "before", "temperature_c"], -3), on=gpu)
    mutant("an unknown GPU event", setp(["devices", 0, "telemetry", "events", 0, "kind"], "melted"), on=gpu)
    mutant("NVML available false without why", setp(["nvml"], {"available": False, "why": "", "library": ""}), on=gpu)
    # A recorded case judged by consensus, as a GPU without an accepted recording reports it.
    rec = copy.deepcopy(gpu)
    rec["tests"][0]["mode"], rec["tests"][0]["judged_by"] = "recorded", "consensus"
    F.check(not errors_of(copy.deepcopy(rec)), "a recorded test judged by consensus does not validate")
    mutant("gpu test with an algorithm of 3", setp(["tests", 0, "algorithm"], 3), on=gpu)

# --- 6. -o replaces an existing file atomically and leaves no temporary file -----------------------
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "report.json")
    junk = "x" * (1 << 20)  # much longer than a report: a non-truncating write would leave a tail
    with open(out, "w") as f:
        f.write(junk)
    # Held open, the old file keeps its inode (a renamed-over file's number could be reused by the next file).
    old = open(out)
    ino_before = os.fstat(old.fileno()).st_ino
    p = common.run("run", "--enable", CASE, "--output-format", "json", "-o", out, "-q")
    F.check(p.returncode == 0, f"-o over an existing file: exit {p.returncode} (stderr: {p.stderr.strip()[:300]})")
    try:
        with open(out) as f:
            text = f.read()
        rep = json.loads(text)
        F.check(rep.get("schema_version") == 21, "-o over an existing file: replaced content is not the report")
        F.check("xxxx" not in text, "-o over an existing file: old content remains")
        validate("-o over an existing file", rep)
    except (OSError, ValueError) as e:
        F.check(False, f"-o over an existing file: content does not parse as JSON: {e}")
    F.check(os.stat(out).st_ino != ino_before and old.read() == junk,
            "-o over an existing file: rewritten in place, not renamed over")
    old.close()
    F.check(os.stat(out).st_mode & 0o444 == 0o444, f"-o: report mode {oct(os.stat(out).st_mode)} is not readable by all")
    # A second run over the report just written, with the text format.
    p = common.run("run", "--enable", CASE, "-o", out, "-q")
    with open(out) as f:
        text = f.read()
    F.check(p.returncode == 0 and text.rstrip().endswith("exit: pass"), "-o text over a JSON report: not fully replaced")
    leftovers = [n for n in os.listdir(d) if n != "report.json"]
    F.check(not leftovers, f"-o: files left in the directory besides the report: {leftovers}")
    F.check(not any(n.startswith(".") and ".tmp." in n for n in os.listdir(d)), "-o: temporary .*.tmp.* files remain")

F.finish()

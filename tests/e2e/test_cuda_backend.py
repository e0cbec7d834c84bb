"""The CUDA backend from the command line, on whatever machine runs the suite.

Without a usable GPU (every CI machine): --backend cuda is an error run (exit 2) whose every test says why
no GPU is usable, never a pass; --backend auto screens the CPU and the report says why; --devices and
--expect-devices ask for GPUs, so without one they are errors too (2), and they are refused with
--backend cpu (64); device-only injection keys are refused on the CPU (64). Every report validates.

With a usable GPU: a clean GPU run passes with the device identity in the report; --expect-devices one
more than visible is exit 2 naming the shortfall; a --devices index that does not exist is exit 2; an
output injection on an SM is detected (exit 1) and localized to that SM with the injected xor mask.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_cuda_backend")
CASE = "softmax_f32.special_128x1000"
SEL = ["--enable", CASE]


def valid(name, report):
    F.check(report is not None, f"{name}: no report written")
    if report is None:
        return
    errs = common.schema_errors(report)
    F.check(not errs, f"{name}: report does not validate: {errs}")


info = common.run("info")
gpu_lines = [l for l in info.stdout.splitlines() if l.startswith("gpu:")]
F.check(info.returncode == 0, f"info exit {info.returncode}")
F.check(gpu_lines or any(l.startswith("gpus:") for l in info.stdout.splitlines()), "info says nothing about GPUs")

if not gpu_lines:
    print("no usable GPU here: checking that GPU runs fail closed")
    code, rep, err = common.run_json("--backend", "cuda", *SEL)
    F.check(code == 2, f"--backend cuda without a GPU: exit {code}, expected 2")
    valid("--backend cuda", rep)
    if rep:
        F.check(rep["backend"] == "cuda", f"backend {rep['backend']!r}")
        F.check(rep["tests"] and all(t["result"] == "error" and "no usable GPU" in t.get("reason", "") for t in rep["tests"]),
                "tests are not errors naming 'no usable GPU'")
        F.check(any("no usable GPU" in e for e in rep["errors"]), "run-level errors do not say why")
        F.check(rep["exit"]["verdict"] == "error", f"verdict {rep['exit']['verdict']!r}")
    code, rep, err = common.run_json("--backend", "auto", *SEL)
    F.check(code == 0, f"--backend auto without a GPU: exit {code}, expected a CPU pass (0)")
    valid("--backend auto", rep)
    if rep:
        F.check(rep["backend"] == "cpu", f"auto chose {rep['backend']!r}")
        F.check("no usable GPU" in rep.get("backend_reason", ""), f"backend_reason {rep.get('backend_reason')!r}")
    for args in (["--expect-devices", "1"], ["--devices", "0"]):
        code, rep, err = common.run_json(*args, *SEL)
        F.check(code == 2, f"{args} without a GPU: exit {code}, expected 2 (never a CPU pass in their place)")
        valid(str(args), rep)
        if rep:
            F.check(rep["backend"] == "cuda", f"{args}: backend {rep['backend']!r}")
    p = common.run("run", "--backend", "cuda", *SEL)
    F.check(p.returncode == 2 and "exit: error" in p.stdout and "no usable GPU" in p.stdout,
            f"text report of --backend cuda: exit {p.returncode}, {p.stdout[-300:]!r}")
    with tempfile.TemporaryDirectory() as d:
        p = common.run("record", "-o", d)
        F.check(p.returncode == 2 and "no usable GPU" in p.stderr, f"record without a GPU: exit {p.returncode}, {p.stderr!r}")
        F.check(os.listdir(d) == [], f"record without a GPU wrote {os.listdir(d)}")
else:
    print("GPU present:", *gpu_lines, sep="\n  ")
    visible = len(gpu_lines)
    code, rep, err = common.run_json("--backend", "cuda", *SEL)
    F.check(code == 0, f"clean GPU run: exit {code} ({err.strip()[:300]})")
    valid("clean GPU run", rep)
    if rep:
        F.check(len(rep["devices"]) == visible and all(d["kind"] == "cuda" for d in rep["devices"]), "devices")
        F.check(len(rep["tests"]) == visible and all(t["result"] == "pass" for t in rep["tests"]), "one pass per GPU")
        F.check(any(u["kind"] == "sm" and u["tiles"] > 0 for u in rep["units"]), "no SM computed a tile")
    code, rep, err = common.run_json("--backend", "cuda", "--expect-devices", str(visible + 1), *SEL)
    F.check(code == 2, f"--expect-devices {visible + 1}: exit {code}, expected 2")
    valid("--expect-devices", rep)
    if rep:
        F.check(any("missing" in e for e in rep["errors"]), f"errors do not name what is missing: {rep['errors']}")
    code, rep, err = common.run_json("--backend", "cuda", "--devices", str(visible), *SEL)
    F.check(code == 2, f"--devices {visible} (not present): exit {code}, expected 2")
    valid("--devices absent", rep)
    code, rep, err = common.run_json("--backend", "cuda", "--devices", "0", "--enable-any", "gemm_f32.uniform_2048",
                                     "--inject", "case=gemm_f32.uniform_2048,element=140000,bit=30,unit=0")
    F.check(code == 1, f"SM injection: exit {code}, expected 1")
    valid("SM injection", rep)
    if rep:
        inj = rep["injections"][0]
        F.check(inj["fired"] and inj["fired_unit"] == 0 and inj["device"] == 0, f"injection record {inj}")
        ms = rep["tests"][0]["miscompares"]
        F.check(ms and all(m["unit"] == {"kind": "sm", "gpu": 0, "sm": 0} and m["xor_mask"] == "0x40000000" for m in ms),
                f"miscompares not all on SM 0 with xor 0x40000000: {ms[:3]}")
        F.check(rep["tests"][0]["units_failed"] == [0], f"units_failed {rep['tests'][0]['units_failed']}")
    # A recorded case without an accepted recording: judged by consensus, and the report says so.
    REC = "gemm_bf16.uniform_1024x1024x1024"
    code, rep, err = common.run_json("--backend", "cuda", "--enable", REC)
    F.check(code == 0, f"recorded case by consensus: exit {code} ({err.strip()[:300]})")
    valid("recorded by consensus", rep)
    if rep:
        for t in rep["tests"]:
            F.check(t["mode"] == "recorded" and t["judged_by"] == "consensus" and t["iterations"] >= 2
                    and t["library"] and t["algorithm"], f"recorded test {t}")
            F.check(any("no accepted recording" in n for n in t["notes"]), f"notes do not say why: {t['notes']}")
    # A fault in the second run of a consensus case: the repeat disagrees, localized to its tile.
    code, rep, err = common.run_json("--backend", "cuda", "--devices", "0", "--enable", REC,
                                     "--inject", f"case={REC},element=70000,bit=12,iteration=1")
    F.check(code == 1, f"consensus drill: exit {code}, expected 1")
    valid("consensus drill", rep)
    if rep:
        ms = rep["tests"][0]["miscompares"]
        F.check(ms and ms[0]["element"] == 70000 and ms[0]["xor_mask"] == "0x00001000", f"consensus drill miscompares {ms[:2]}")
    # record -> consensus --write -> the same case is judged by the accepted (provisional) recording.
    with tempfile.TemporaryDirectory() as d:
        recs, pat = os.path.join(d, "rec"), os.path.join(d, "patterns")
        os.mkdir(recs)
        shutil.copytree(common.PATTERNS, pat)
        p = common.run("record", "-o", recs, "--enable", REC, "--patterns", pat)
        files = sorted(os.listdir(recs))
        F.check(p.returncode == 0 and len(files) == visible, f"record: exit {p.returncode}, files {files} ({p.stderr[-300:]!r})")
        p = common.run("consensus", "--write", "--patterns", pat, *[os.path.join(recs, f) for f in files])
        F.check(p.returncode == 0, f"consensus --write of the recordings: exit {p.returncode} ({p.stdout[-300:]!r})")
        code, rep, err = common.run_json("--backend", "cuda", "--enable", REC, "--patterns", pat, "--accept-patterns")
        F.check(code == 0, f"recorded case with its recording: exit {code} ({err.strip()[:300]})")
        if rep:
            F.check(all(t["judged_by"] == "recorded" for t in rep["tests"]), f"judged by {[t['judged_by'] for t in rep['tests']]}")

# On any machine: record's command line and output directory are checked before anything runs.
with tempfile.TemporaryDirectory() as d:
    for args, code, word in ((["-o", d, "--repeats", "1"], 64, "--repeats"),
                             (["-o", d, "--enable", "gemm_f32.uniform_1024"], 64, "only recorded cases"),
                             (["-o", d, "--enable", "no_such_case"], 64, "matches no test"),
                             (["-o", d, "--devices", "x"], 64, "--devices"),
                             (["-o", os.path.join(d, "missing")], 78, "not a directory"),
                             ([], 64, "--output-dir")):
        p = common.run("record", *args)
        F.check(p.returncode == code and word in p.stderr, f"record {args}: exit {p.returncode}, expected {code} naming {word!r}: {p.stderr.strip()[:200]!r}")
    F.check(os.listdir(d) == [], f"refused record commands wrote {os.listdir(d)}")

# On any machine: GPU-only flags and keys are refused where they cannot apply.
for args, word in ((["--backend", "cpu", "--devices", "0"], "--devices"),
                   (["--backend", "cpu", "--expect-devices", "2"], "--expect-devices"),
                   (["--backend", "cpu", "--inject", f"case={CASE},element=0,bit=1,device=0"], "device="),
                   (["--devices", "0-"], "--devices"),
                   (["--devices", "x"], "--devices")):
    p = common.run("run", *args, *SEL)
    F.check(p.returncode == 64, f"{args}: exit {p.returncode}, expected 64 ({p.stderr.strip()[:200]})")
    F.check(word in p.stderr, f"{args}: stderr does not name {word!r}: {p.stderr.strip()[:200]!r}")

F.finish()

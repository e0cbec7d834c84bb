"""scripts/gpu-first-light.sh and scripts/gpu-first-light-record.py without a GPU.

  test_gpu_first_light.py stubs      against stub binaries and tools (sdcscreen, gpu_tests, bench_gpu, nvidia-smi,
                                     cuobjdump, compute-sanitizer): every step passing (exit 0) and its record;
                                     a failing step (exit 1, the others still run); no GPU (exit 2, one line, the
                                     other steps not run); the deadline reached mid-step (every finished step in
                                     the summary, the archive present, the rest not run); SIGTERM mid-step (exit
                                     143, the step interrupted FAIL, summary and archive present); a rerun of one
                                     step (--steps) appended and taken by the record; bad arguments (64). Needs
                                     neither the build nor a GPU.
  test_gpu_first_light.py emulated   the script end to end on the emulated device with the built sdcscreen: every
                                     step has its line, those needing a real GPU or a tool not on PATH say n/a or
                                     "not available" (never pass), the others pass; its wall time is printed; the
                                     record refuses an emulated run.
Nothing here depends on the CPU's speed: the stubs' sleeps are far longer or shorter than the caps they meet.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failures import Failures  # noqa: E402

SOURCE_DIR = os.environ.get("SDC_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "gpu-first-light.sh")
RECORD = os.path.join(SOURCE_DIR, "scripts", "gpu-first-light-record.py")
STEPS = ["env", "smoke", "boot", "gpu_tests", "hang", "sass", "sanitizer", "drills", "bench"]
H100 = "NVIDIA H100 80GB HBM3"

STUB_SDCSCREEN = r'''#!PYTHON
"""sdcscreen on a GPU node, for the script: STUB_NO_GPU lists none; STUB_FAIL_CASE miscompares; STUB_RUN_SLEEP."""
import json, os, sys, time
E = os.environ
args = sys.argv[1:]
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
if args[:1] == ["--version"]:
    print("sdcscreen 9.9.9 (stubgit)"); sys.exit(0)
cmd = args[0] if args else ""
SM_IDS = [0, 1, 2, 3, 4, 5, 6, 7]
if cmd == "info":
    print("sdcscreen 9.9.9 (stubgit)\nhost:     stubhost")
    if E.get("STUB_NO_GPU"):
        print("gpus:     none usable: no CUDA-capable device is detected")
    else:
        print("gpu:      cuda:0 NVIDIA H100 80GB HBM3  GPU-8f3c2a1e-0b7d-4c55-9e21-3f6a7d8c9b01  00000000:19:00.0  cc 9.0  "
              "8 SMs  81559 MiB  ECC on  driver 580.65 (CUDA 13.0)  runtime 13.0")
        print("nvml:     libnvidia-ml.so.1")
        print("nvml gpu: cuda:0 GPU-8f3c2a1e-0b7d-4c55-9e21-3f6a7d8c9b01  serial " + E.get("STUB_NVML_SERIAL", "1650923456789")
              + "  part 900-21010-0000-000  vbios 96.00.5E.00.01  inforom G520.0200.00.05  driver 580.65.06  ecc on  "
              "pcie gen 5 x16  temp 41 C")
    print("cublaslt: cublasLt 13.0.2 from /stub/libcublasLt.so.13")
    print("patterns: " + E.get("SDCSCREEN_PATTERNS", "?")); sys.exit(0)
CASES = ["gemm_f32.special_512", "gemm_bf16_exactint.mantissa_walk_128x64x96", "gemm_fp8_exactint.mantissa_walk_128x192x64",
         "gemm_fp8_exactint_cublaslt.mantissa_walk_128x192x64", "reduce_sum_f32.mantissa_walk_64x4097",
         "softmax_f32.special_128x1000", "attention_bf16_exactint.causal_uniform_2x256x64", "gemm_f64.special_256",
         "reduce_sum_f64.mantissa_walk_64x4097"]
if cmd == "list":
    fams = sorted({c.split(".")[0] for c in CASES})
    print(json.dumps({"families": [{"id": f, "backends": ["cpu", "cuda"], "device_side": "kernel"} for f in fams],
                      "cases": [{"id": c, "family": c.split(".")[0], "mode": "exact", "iterations": {"boot": 2},
                                 "geometry": {"output_elements": 65536, "tile_count": 64,
                                              "elements": [{"element": 5, "tile": 0}]}} for c in CASES]}))
    sys.exit(0)
if cmd != "run":
    sys.exit(64)
time.sleep(float(E.get("STUB_RUN_SLEEP", "0")))
case = opt("--enable", "all")
spec = dict(kv.split("=", 1) for kv in opt("--inject").split(",")) if "--inject" in args else None
units = [{"kind": "sm", "gpu": 0, "sm": s, "tiles": 8, "failed_tiles": 0, "result": "pass"} for s in SM_IDS]
test = {"id": case, "result": "pass", "failed_tiles": 0, "miscompared_elements": 0, "miscompares": [], "units_failed": []}
rep = {"devices": [{"index": 0, "sm_count": 8}], "units": units, "injections": [], "tests": [test],
       "summary": {"tests": 1 if case != "all" else 40, "pass": 1 if case != "all" else 40, "fail": 0, "error": 0,
                   "skip": 0, "crash": 0}}
code = 0
if case == E.get("STUB_FAIL_CASE"):
    test.update(result="fail", failed_tiles=1); rep["summary"].update(fail=1, **{"pass": 0}); code = 1
if spec and spec.get("action") == "hang":
    test.update(result="error", reason="watchdog: iteration 0 on cuda:0 did not finish in 10.0 s"); code = 2
elif spec:
    element, bit = int(spec["element"]), int(spec["bit"])
    sm = int(spec["unit"]) if "unit" in spec else SM_IDS[(element // 1024) % len(SM_IDS)]
    rep["injections"] = [{"fired": True, "unit": sm, "fired_unit": sm}]
    test.update(result="fail", failed_tiles=1, miscompared_elements=1, units_failed=[sm],
                miscompares=[{"tile": element // 1024, "element": element, "xor_mask": f"0x{1 << bit:08x}",
                              "unit": {"kind": "sm", "gpu": 0, "sm": sm}}])
    code = 1
if opt("-o"):
    with open(opt("-o"), "w") as f:
        json.dump(rep, f)
print("exit: " + ("pass" if code == 0 else "fail" if code == 1 else "error"))
sys.exit(code)
'''

STUBS = {
    # (the version a real binary would name: GLIBC_2.17)
    "gpu_tests": '#!/bin/sh\n# GLIBC_2.17\necho "device cuda:0 stub"\nsleep "${STUB_GPU_TESTS_SLEEP:-0}"\n'
                 'echo "cublasLt algorithms checked: 12 over 3 cases, 0 mismatched"\n'
                 'echo "gemm_f64 forms checked: 120 runs over 12 shapes, 0 not runnable on this device, 5 values of sm_90 '
                 'forms differing"\nexit "${STUB_GPU_TESTS_RC:-0}"\n',
    # bench.json as the real one is shaped (the fields the summary line reads), its figures made up.
    "bench_gpu": '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --json ] && cat >"$2" <<EOF\n'
                 '{"gemm_vs_cublas": [{"shape": "4096x4096x4096", "ratio": 0.9123, "target": 0.85}],\n'
                 ' "dgemm_vs_cublas": [{"shape": "4096x4096x4096", "ratio": 0.4512, "target": 0.8,\n'
                 '   "forms": [{"instruction": "mma.sync.m8n8k4.f64", "block": 64, "slab": 8, "stages": 2,\n'
                 '              "ratio_vs_cublas": 0.3512, "values_differing_from_family": 0},\n'
                 '             {"instruction": "mma.sync.m16n8k16.f64", "block": 128, "slab": 16, "stages": 3,\n'
                 '              "ratio_vs_cublas": 0.6234, "values_differing_from_family": 2},\n'
                 '             {"instruction": "mma.sync.m16n8k8.f64", "block": 128, "slab": 8, "stages": 2,\n'
                 '              "skipped": "x"}]}],\n'
                 ' "digest_overhead": [{"share": 0.0229}],\n'
                 ' "cublaslt": [{"family": "gemm_bf16_exactint_cublaslt", "shape": "8192x8192x32768",\n'
                 '   "stress_ratio": 0.9587, "digest_share": 0.0413, "mma_sync_vs_cublaslt": 0.164}],\n'
                 ' "cases": [{"case": "a", "ms": 1.0, "sm90_forms": [{"mismatched_tiles": 3}, {"mismatched_tiles": 1}]},\n'
                 '           {"case": "b", "error": "x"}, {"case": "c", "sm90_forms": {"skipped": "x"}}],\n'
                 ' "golden_mismatched_tiles": 0}\n'
                 'EOF\nshift; done\necho "exact fp32 GEMM vs cuBLAS SGEMM"\n',
}
TOOLS = {
    "nvidia-smi": '#!/bin/sh\ncase "$*" in *query-compute-apps*) printf "%s" "${STUB_GPU_APPS:-}" ;;\n'
                  '*query-gpu*) echo "name, driver_version"; echo "NVIDIA H100 80GB HBM3, 580.65" ;;\n'
                  '*-q*) printf "%s\\n" "Driver Version                            : 580.65.06" "Attached GPUs : 1" '
                  '"GPU 00000000:19:00.0" "    Serial Number                         : 1650923456789" '
                  '"    VBIOS Version                         : 96.00.5E.00.01" "    PCI" "        GPU Link Info" '
                  '"            PCIe Generation" "                Max                       : 5" '
                  '"                Current                   : 5" "            Link Width" '
                  '"                Max                       : 16x" "                Current                   : 16x" '
                  '"    ECC Mode" "        Current                           : Enabled" '
                  '"        Pending                           : Enabled" ;;\n'
                  '*) echo "NVIDIA-SMI 580.65" ;; esac\n',
    "cuobjdump": '#!/bin/sh\necho "	code for sm_90"\n'
                 'echo "		Function : _ZN3sdc8exactint10mma_kernelINS0_12DeviceTraitsINS_18gemm_bf16_exactint10Bf16FormatEEEEEvv"\n'
                 'echo "        /*0100*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;"\n'
                 'echo "		Function : _ZN3sdc8gemm_f643gpu11gemm_kernelILNS1_4DmmaE0ELi128EEEvv"\n'
                 'echo "        /*0100*/                   DMMA.884 R4, R8, R12, R4 ;"\n'
                 'echo "		Function : _ZN3sdc8gemm_f643gpu11gemm_kernelILNS1_4DmmaE0ELi64EEEvv"\n'
                 'echo "        /*0100*/                   DMMA.884 R4, R8, R12, R4 ;"\n'
                 'echo "		Function : _ZN3sdc8gemm_f3211gemm_kernelEv"\n'
                 'echo "        /*0100*/                   FFMA R4, R8, R12, R4 ;"\n',
    "compute-sanitizer": '#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; [ "$1" = "${1#-}" ] && shift; done\n'
                         '"$@" >/dev/null; rc=$?\necho "========= ERROR SUMMARY: 0 errors"\nexit $rc\n',
}


def write_exe(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def summary_lines(out):
    p = os.path.join(out, "summary.txt")
    return open(p).read().splitlines() if os.path.exists(p) else []


def steps_of(out):
    """{step number: (status, detail)} of the last run in the summary."""
    res = {}
    for line in summary_lines(out):
        if line.startswith("# gpu-first-light: started"):
            res = {}
        m = re.match(r"^([0-8]) ([a-z_]+) (\S+) (\d+) ?(.*)$", line)
        if m:
            res[int(m.group(1))] = (m.group(3), m.group(5))
    return res


def end_line(out):
    ends = [l for l in summary_lines(out) if l.startswith("# end: ")]
    return ends[-1] if ends else ""


def archived(out):
    p = os.path.join(out, "results.tgz")
    if not os.path.exists(p):
        return set()
    with tarfile.open(p) as t:
        return {os.path.normpath(m.name) for m in t.getmembers() if m.isfile()}


def stubs_mode():
    F = Failures("e2e_gpu_first_light_stubs")
    tmp = tempfile.mkdtemp(prefix="sdcs-first-light-")
    try:
        build = os.path.join(tmp, "build")
        write_exe(os.path.join(build, "sdcscreen"), STUB_SDCSCREEN.replace("PYTHON", sys.executable))
        for n, t in STUBS.items():
            write_exe(os.path.join(build, n), t)
        os.makedirs(os.path.join(build, "patterns"))
        # A bundle: the scripts beside the binaries, and SHA256SUMS (the script runs from it, no --build-dir).
        os.makedirs(os.path.join(build, "scripts"))
        for s in ("gpu-first-light.sh", "gpu-first-light-lib.sh", "gpu-drills.py"):
            shutil.copy(os.path.join(SOURCE_DIR, "scripts", s), os.path.join(build, "scripts", s))
        subprocess.run("find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS", shell=True, cwd=build,
                       check=True)
        bundled = os.path.join(build, "scripts", "gpu-first-light.sh")
        tools = os.path.join(tmp, "tools")
        for n, t in TOOLS.items():
            write_exe(os.path.join(tools, n), t)
        env = dict(os.environ, PATH=tools + os.pathsep + os.environ.get("PATH", ""), CUDA_HOME=os.path.join(tmp, "no-cuda"),
                   TMPDIR=tmp)

        def fl(out, *args, extra=None, timeout=120):
            e = dict(env, **(extra or {}))
            return subprocess.run(["bash", bundled, out, *args], env=e, capture_output=True,
                                  text=True, timeout=timeout)

        # --- bad arguments, --help ---
        print("-- bad arguments, --help", flush=True)
        p = subprocess.run(["bash", SCRIPT, "--help"], capture_output=True, text=True, timeout=30)
        F.check(p.returncode == 0 and "--deadline S" in p.stdout and "Exit:" in p.stdout, f"--help: exit {p.returncode}")
        for bad in ([], ["--deadline", "5"], ["--deadline", "x"], ["--steps", "9"], ["--steps", "nope"],
                    ["--bogus"], ["--device"], ["a", "b"]):
            args = bad if bad in ([], ["a", "b"]) else [os.path.join(tmp, "o-bad"), *bad]
            p = subprocess.run(["bash", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=30)
            F.check(p.returncode == 64 and p.stderr.startswith("gpu-first-light:"),
                    f"{bad}: exit {p.returncode}, want 64: {p.stderr.strip()[:200]}")

        # --- every step passing ---
        print("-- every step passing", flush=True)
        out = os.path.join(tmp, "o-pass")
        p = fl(out)
        st = steps_of(out)
        F.check(p.returncode == 0, f"passing run: exit {p.returncode}, want 0: {p.stderr[-1500:]}")
        F.check([st.get(n, ("none",))[0] for n in range(9)] == ["pass"] * 9, f"passing run: steps {st}")
        F.check("NVML matches nvidia-smi -q: serial vbios driver ecc pcie_gen pcie_width" in st.get(0, ("", ""))[1],
                f"passing run: no NVML comparison in step 0: {st.get(0)}")
        F.check(sorted(os.listdir(out)) == ["results.tgz", "summary.txt"], f"passing run: OUTDIR holds {os.listdir(out)}")
        files = archived(out)
        for f in ("summary.txt", "0-env/info.txt", "0-env/list.json", "1-smoke/gemm_f32.special_512.json",
                  "2-boot/boot.json", "3-gpu_tests/gpu_tests.log", "4-hang/hang.json", "5-sass/sass-summary.txt",
                  "6-sanitizer/memcheck.log", "7-drills/drills.json", "8-bench/bench.json"):
            F.check(f in files, f"passing run: {f} not in results.tgz")
        F.check("glibc" in st.get(0, ("", ""))[1] and "cuBLASLt: cublasLt 13.0.2" in st.get(0, ("", ""))[1],
                f"passing run: step 0 says {st.get(0)}")
        F.check("gemm_bf16_exactint: HMMA.16816.F32.BF16" in st.get(5, ("", ""))[1], f"passing run: step 5 says {st.get(5)}")
        F.check("gemm_f64: DMMA.884;" in st.get(5, ("", ""))[1] + ";", f"passing run: step 5 says {st.get(5)}")
        F.check(st.get(3, ("", ""))[1].endswith("gemm_f64 forms checked: 120 runs over 12 shapes, 0 not runnable on "
                                                 "this device, 5 values of sm_90 forms differing"),
                f"passing run: step 3 says {st.get(3)}")
        F.check("racecheck gemm_f64 forms: ========= ERROR SUMMARY: 0 errors" in st.get(6, ("", ""))[1],
                f"passing run: step 6 says {st.get(6)}")
        F.check(st.get(8, ("", ""))[1] == "gemm_f32 4096x4096x4096 0.912x cuBLAS SGEMM (target 0.85); gemm_f64 "
                "4096x4096x4096 0.451x cuBLAS DGEMM (target 0.8); forms m8n8k4/64/k8/s2 0.351x, m16n8k16/128/k16/s3 0.623x (2 "
                "values and 4 battery tiles differ); digest share "
                "2.29%; bf16 8192x8192x32768 verified 0.959x bare cuBLASLt, share 4.1%, mma.sync 0.16x; 1 of 3 cases "
                "timed, 0 golden mismatches", f"passing run: step 8 says {st.get(8)}")
        F.check("exit 2 after" in st.get(4, ("", ""))[1] and "no process left on the GPU" in st.get(4, ("", ""))[1],
                f"passing run: step 4 says {st.get(4)}")
        F.check(end_line(out).startswith("# end: exit 0 after"), f"passing run: end line {end_line(out)!r}")
        F.check(not [d for d in os.listdir(tmp) if d.startswith("sdcscreen-first-light.")],
                "passing run: its temporary folder is left behind")

        # The record of it; then a rerun of step 3 that fails, appended, taken by the record.
        docs = os.path.join(tmp, "docs")
        p = subprocess.run([sys.executable, RECORD, "--out", docs, out], capture_output=True, text=True, timeout=60)
        recs = [f for f in os.listdir(docs) if f.endswith(".md")] if os.path.isdir(docs) else []
        text = open(os.path.join(docs, recs[0])).read() if recs else ""
        F.check(p.returncode == 0 and len(recs) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\d-h100-80gb-hbm3-first-light\.md", recs[0])
                and "Overall: pass" in text, f"record: exit {p.returncode}, {recs}: {p.stderr.strip()[-400:]}")
        F.check("stubhost" not in text and "GPU-8f3c2a1e" in text and "| 4 hang | pass |" in text,
                "record: the host name is in it, or the UUID or a step line is not")
        base = recs[0][:-3] if recs else "none"
        F.check(os.path.isfile(os.path.join(docs, base, "2-boot", "boot.json")), "record: the files are not beside it")
        p = subprocess.run([sys.executable, RECORD, "--out", docs, out], capture_output=True, text=True, timeout=60)
        F.check(p.returncode == 64 and "--force" in p.stderr, f"record again without --force: exit {p.returncode}")
        p = fl(out, "--steps", "gpu_tests", extra={"STUB_GPU_TESTS_RC": "1"})
        F.check(p.returncode == 1 and steps_of(out).get(3, ("",))[0] == "FAIL" and len(steps_of(out)) == 1,
                f"rerun of step 3: exit {p.returncode}, {steps_of(out)}")
        F.check("1-smoke/gemm_f32.special_512.json" in archived(out), "rerun: the earlier steps' files left the archive")
        p = subprocess.run([sys.executable, RECORD, "--out", docs, "--force", out], capture_output=True, text=True, timeout=60)
        text = open(os.path.join(docs, recs[0])).read() if recs else ""
        F.check(p.returncode == 1 and "Overall: FAIL (failed: gpu_tests)" in text and "| 3 gpu_tests | **FAIL** |" in text
                and "| 2 boot | pass |" in text, f"record after the rerun: exit {p.returncode}: {p.stderr.strip()[-300:]}")

        # --- a failing step: FAIL, the others still run, exit 1 ---
        print("-- a failing step", flush=True)
        out = os.path.join(tmp, "o-fail")
        p = fl(out, extra={"STUB_FAIL_CASE": "gemm_fp8_exactint_cublaslt.mantissa_walk_128x192x64"})
        st = steps_of(out)
        F.check(p.returncode == 1 and st.get(1, ("",))[0] == "FAIL" and "gemm_fp8_exactint_cublaslt.mantissa_walk_128x192x64 exit 1, fail" in st[1][1]
                and all(st.get(n, ("",))[0] == "pass" for n in (0, 2, 3, 4, 5, 6, 7, 8)),
                f"failing smoke case: exit {p.returncode}, {st}")
        F.check(end_line(out).startswith("# end: exit 1"), f"failing step: end line {end_line(out)!r}")

        # --- no GPU: one line, exit 2, nothing else run ---
        print("-- no GPU", flush=True)
        out = os.path.join(tmp, "o-nogpu")
        p = fl(out, extra={"STUB_NO_GPU": "1"})
        st = steps_of(out)
        err = [l for l in p.stderr.splitlines() if l.startswith("gpu-first-light: no usable GPU")]
        F.check(p.returncode == 2 and len(err) == 1 and "no CUDA-capable device" in err[0],
                f"no GPU: exit {p.returncode}, want 2 and one line: {p.stderr[-600:]}")
        F.check(st.get(0, ("",))[0] == "FAIL" and all(st.get(n, ("",))[0] == "not-run" for n in range(1, 9))
                and "0-env/info.txt" in archived(out), f"no GPU: steps {st}, archive {sorted(archived(out))[:5]}")
        p = subprocess.run([sys.executable, RECORD, "--out", os.path.join(tmp, "docs-nogpu"), out], capture_output=True,
                           text=True, timeout=60)
        F.check(p.returncode == 78 and "lists no GPU" in p.stderr, f"record of a run without a GPU: exit {p.returncode}")

        # --- NVML disagreeing with nvidia-smi -q: step 0 fails naming the reading ---
        print("-- NVML differs from nvidia-smi -q", flush=True)
        out = os.path.join(tmp, "o-nvml")
        p = fl(out, "--steps", "env", extra={"STUB_NVML_SERIAL": "999"})
        st = steps_of(out)
        F.check(p.returncode == 1 and st.get(0, ("",))[0] == "FAIL"
                and "serial(NVML '999', nvidia-smi '1650923456789')" in st[0][1]
                and "NVML matches nvidia-smi -q: vbios driver ecc pcie_gen pcie_width" in st[0][1],
                f"NVML mismatch: exit {p.returncode}, {st}")

        # --- the deadline reached mid-step: gpu_tests sleeps far past it ---
        print("-- the deadline reached mid-step", flush=True)
        out = os.path.join(tmp, "o-deadline")
        t0 = time.monotonic()
        p = fl(out, "--deadline", "25", extra={"STUB_GPU_TESTS_SLEEP": "300"})
        took = time.monotonic() - t0
        st = steps_of(out)
        F.check(took < 45, f"deadline 25 s: the script took {took:.0f} s")
        F.check([st.get(n, ("",))[0] for n in range(3)] == ["pass"] * 3 and st.get(3, ("",))[0] == "FAIL"
                and "did not finish in its cap" in st[3][1] and all(st.get(n, ("",))[0] == "not-run" for n in range(4, 9)),
                f"deadline mid-step: steps {st}")
        F.check(p.returncode == 1 and end_line(out).startswith("# end: exit 1"), f"deadline: exit {p.returncode}")
        F.check({"2-boot/boot.json", "3-gpu_tests/gpu_tests.log"} <= archived(out), "deadline: the archive lacks step files")

        # --- SIGTERM mid-step: 143, the step interrupted, the archive written ---
        print("-- SIGTERM mid-step", flush=True)
        out = os.path.join(tmp, "o-signal")
        proc = subprocess.Popen(["bash", bundled, out], env=dict(env, STUB_GPU_TESTS_SLEEP="300"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and 2 not in steps_of(out):
            time.sleep(0.2)
        time.sleep(1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = None
        took = time.monotonic() - t0
        st = steps_of(out)
        F.check(rc == 143 and took < 15, f"SIGTERM: exit {rc} after {took:.1f} s, want 143 at once")
        F.check(st.get(3, ("", ""))[0] == "FAIL" and "interrupted by SIGTERM" in st[3][1]
                and all(st.get(n, ("",))[0] == "not-run" for n in range(4, 9)), f"SIGTERM: steps {st}")
        F.check(end_line(out).startswith("# end: exit 143") and "3-gpu_tests/gpu_tests.log" in archived(out),
                f"SIGTERM: end line {end_line(out)!r}, archive {sorted(archived(out))}")
        left = subprocess.run(["pgrep", "-f", os.path.join(build, "gpu_tests")], capture_output=True, text=True)
        F.check(left.stdout.strip() == "", f"SIGTERM: gpu_tests still running: {left.stdout}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    F.finish()


def emulated_mode():
    F = Failures("e2e_gpu_first_light_emulated")
    sdcscreen = os.environ.get("SDCSCREEN", "")
    if not os.access(sdcscreen, os.X_OK):
        sys.exit("set SDCSCREEN to the sdcscreen binary (ctest does)")
    build = os.path.dirname(os.path.abspath(sdcscreen))
    tmp = tempfile.mkdtemp(prefix="sdcs-first-light-emu-")
    try:
        # No CUDA tools from CUDA_HOME; a tool on PATH itself (cuobjdump beside a distribution's nvcc) is used, and
        # the step is then expected to have run.
        env = dict(os.environ, CUDA_HOME=os.path.join(tmp, "no-cuda"), TMPDIR=tmp)
        path = env.get("PATH", "")
        out = os.path.join(tmp, "out")
        t0 = time.monotonic()
        p = subprocess.run(["bash", SCRIPT, out, "--build-dir", build, "--emulated", "sm_90x8",
                            "--deadline", "600"], env=env, capture_output=True, text=True, timeout=900)
        took = time.monotonic() - t0
        print(f"gpu-first-light.sh on the emulated device: {took:.1f} s wall, exit {p.returncode}")
        print("\n".join(summary_lines(out)))
        st = steps_of(out)
        F.check(sorted(st) == list(range(9)), f"emulated: steps with a line {sorted(st)}, want 0-8")
        F.check(all("[emulated device sm_90x8]" in l for l in summary_lines(out)[1:]),
                "emulated: a line does not say emulated")
        # Not available there: the smoke's cuBLASLt case, the boot profile's GPU-only families and what its 10 s left,
        # the GPU's process list after the hang drill.
        for n in (1, 2, 4, 7):
            want = "pass" if n == 7 else "incomplete"
            F.check(st.get(n, ("",))[0] == want, f"emulated: step {n} {STEPS[n]}: {st.get(n)}, want {want}")
        F.check(st.get(0, ("",))[0] == "incomplete" and "not available: sha256sum -c" in st[0][1],
                f"emulated: step 0 {st.get(0)}, want incomplete (no SHA256SUMS outside a bundle)")
        for n in (3, 6, 8):
            F.check(st.get(n, ("",))[0] == "n/a" and "needs a real GPU" in st[n][1], f"emulated: step {n}: {st.get(n)}")
        sass = st.get(5, ("",))[0]
        if shutil.which("cuobjdump", path=path):
            F.check(sass in ("pass", "FAIL"), f"emulated: cuobjdump is on PATH, yet step 5 says {st.get(5)}")
        else:
            F.check(sass == "n/a" and "not available: cuobjdump" in st[5][1], f"emulated: step 5 {st.get(5)}")
        F.check("exit 2 after" in st.get(4, ("", ""))[1], f"emulated: the hang drill {st.get(4)}")
        F.check("not available: gemm_fp8_exactint_cublaslt" in st.get(1, ("", ""))[1] and " 0 fail, 0 error" in st.get(2, ("", ""))[1],
                f"emulated: smoke {st.get(1)}, boot {st.get(2)}")
        F.check(p.returncode == (1 if sass == "FAIL" else 3), f"emulated: exit {p.returncode}, want 3: {p.stderr[-800:]}")
        F.check(sorted(os.listdir(out)) == ["results.tgz", "summary.txt"], f"emulated: OUTDIR holds {os.listdir(out)}")
        F.check({"2-boot/boot.json", "7-drills/drills.json", "4-hang/hang.json"} <= archived(out),
                f"emulated: archive {sorted(archived(out))}")
        p = subprocess.run([sys.executable, RECORD, "--out", os.path.join(tmp, "docs"), out], capture_output=True,
                           text=True, timeout=60)
        F.check(p.returncode == 78 and "emulated" in p.stderr and not os.path.exists(os.path.join(tmp, "docs")),
                f"record of an emulated run: exit {p.returncode}, want 78: {p.stderr.strip()[:300]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    F.finish()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "stubs":
        stubs_mode()
    elif mode == "emulated":
        emulated_mode()
    else:
        sys.exit("usage: test_gpu_first_light.py stubs|emulated")

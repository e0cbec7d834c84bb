"""The CUDA backend on the emulated device (CTest label emu): the project's CUDA kernel sources, compiled for
the host, and the GPU executor (per-GPU threads and streams, digests, SM localization, fault drills, the
watchdog, consensus across GPUs) run on GPUs emulated on the CPU (--backend emulated:SPEC, a test-only
backend that --help does not show; src/backends/emu/emu_device.h). What this proves, and what only a real
GPU can, is in docs/gpu.md.

  test_emulated.py battery   every exact and exact-integer battery case matches its goldens bit for bit
  test_emulated.py executor  drills, mma.sync faults, sticky errors, out of memory, missing GPUs,
                             consensus, the watchdog and interruption, on one to four emulated GPUs
  test_emulated.py retest    --retest-on-failure on a GPU: persistent, input-dependent, one-off and intermittent
                             SM faults (persist= drills) classified, in JSON, text, Prometheus and NPD
  test_emulated.py replay    the training-step replay's device side: drills inside a submodule found and
                             localized as on a CPU, with the CPU's own numbers; level 3's divergence step
  test_emulated.py hung      a kernel that never ends (not the hang drill, which the GPU executor releases): the
                             watchdog fires, the report is written, the exit code is 2 and the process ends,
                             although the emulated device, like the CUDA runtime, waits for it in cudaFree
                             and at exit()
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import common
from common import CASES, LISTING, Failures, SDCSCREEN, run_json, schema_errors, report_validator, with_lock

EXACT_MODES = ("exact", "exact-integer")


SANITIZED = bool(os.environ.get("SDC_SANITIZED"))


def tests_of(report):
    return report["tests"] if report else []


def battery():
    """Every exact and exact-integer case of every profile, on one emulated GPU: a pass judged by its golden,
    on every tile the device computed (a seeded sample of the blocks of the larger cases, said in a note)."""
    F = Failures("e2e_emu_battery")
    # Families with a CUDA kernel of their own (not cuBLASLt's, not CPU-only ones such as the training-step
    # replay), in every build: a build without CUDA lists no "cuda" backend, yet the emulated device runs them.
    kernel_families = {f["id"] for f in LISTING["families"] if f["device_side"] == "kernel"}
    exact = {cid: c for cid, c in CASES.items() if c["mode"] in EXACT_MODES and c["family"] in kernel_families}
    # The training-step replay's small model runs for many minutes on the emulated device (every output one
    # CPU-emulated thread, 8 replicas of a step of about 10 GFLOP); its tiny cases run the same kernels.
    exact = {cid: c for cid, c in exact.items()
             if not (c["family"].startswith("train_step_") and c["shape"]["preset"] > 0)}
    # Level 12 over four steps runs in e2e_emu_replay's drill (level12_steps_drill), whose healthy replicas pass
    # its golden there: not twice.
    # The bf16 replay's level 3 is its boot case's kernels (level 12, run below) step after step.
    # The tensor-parallel level 3 is its level-12 cases' kernels step after step too (those run here on one GPU, every
    # rank computed by it; e2e_emu_tp runs them over groups of GPUs).
    exact = {cid: c for cid, c in exact.items()
             if cid not in ("train_step_f32.l12_tiny_4", "train_step_bf16.l3_tiny_20", "train_step_f32.l3_tiny_20_tp2")}
    if SANITIZED:  # e2e_emu_tp runs the split level-12 cases' code under the sanitizer (over groups of GPUs)
        exact = {cid: c for cid, c in exact.items() if "tp" not in c["shape"]}
    if not F.check(len(exact) >= 40, f"only {len(exact)} exact cases in the battery"):
        F.finish()  # an empty list would run the whole boot profile: nothing to learn from that
    boot = [cid for cid, c in exact.items() if "boot" in c["iterations"]]
    # The boot profile's cases in one run, as the boot screen runs them (two iterations each). Under a sanitizer a
    # sample of 8 blocks per kernel (the default device, sm_90x8), not 64: the same code, less volume.
    device = "emulated:sm_90x8:sample=8" if SANITIZED else "emulated:1"
    code, report, err = run_json("--backend", device, "--profile", "boot", "--time-budget", "1h",
                                 *[x for cid in boot for x in ("--enable", cid)], timeout=1800)
    F.check(report is not None, f"boot battery: no report (exit {code}): {err[-500:]}")
    seen = {}
    for t in tests_of(report):
        seen[t["id"]] = t
    # The others one run each, with few iterations (the standard profile fills its budget with rounds: 0.1 s, not
    # seconds of them; the first iteration always runs) and a smaller block sample: they are the standard and burn-in
    # profiles' large shapes. Not under a sanitizer (coverage, not volume): the boot run above already runs every
    # family's kernels there, sampled as these are, and the large shapes are the same code with larger bounds; they
    # are taken as passed by the release suite and left out of the checks below.
    others = sorted(set(exact) - set(boot))
    if SANITIZED:
        print(f"sanitizer build: the {len(others)} large cases are the release suite's", flush=True)
        for cid in others:
            del exact[cid]
        others = []
    for cid in others:
        code, report, err = run_json("--backend", "emulated:sm_90x8:sample=8", "--profile", "standard",
                                     "--time-budget", "0.1s", "--enable-any", cid, timeout=1800)
        F.check(report is not None and len(tests_of(report)) == 1, f"{cid}: no report (exit {code}): {err[-500:]}")
        for t in tests_of(report):
            seen[t["id"]] = t
    sampled = 0
    for cid in sorted(exact):
        t = seen.get(cid)
        F.check(t is not None, f"{cid}: did not run")
        if not t:
            continue
        F.check(t["result"] == "pass", f"{cid}: {t['result']} ({t.get('reason', '')}; {t.get('notes')})")
        F.check(t.get("judged_by") == exact[cid]["mode"], f"{cid}: judged by {t.get('judged_by')}")
        F.check(t.get("iterations", 0) >= 1 and t.get("failed_tiles") == 0, f"{cid}: {t.get('iterations')} iterations")
        if any(n.startswith("emulated device: ") and "tiles computed and compared" in n for n in t.get("notes", [])):
            sampled += 1
    F.check(sampled > 0, "no case reported a sample of its tiles (the large cases must be sampled)")
    # fp8's mma.sync on Hopper is emulated by ptxas, not the fp8 tensor cores: the engine says so on sm_90 (the
    # emulated device's default), and not on sm_89, where the instruction is native.
    emulated_note = "the mma.sync e4m3 instruction is emulated"
    fp8 = [t for cid, t in seen.items() if exact[cid]["family"] == "gemm_fp8_exactint"]
    F.check(fp8 and all(emulated_note in t.get("algorithm", "") for t in fp8),
            f"fp8 on sm_90: the engine does not say the instruction is emulated: {[t.get('algorithm') for t in fp8]}")
    F.check(not any(emulated_note in t.get("algorithm", "") for t in seen.values()
                    if exact[t["id"]]["family"] != "gemm_fp8_exactint"), "an engine other than fp8's says it is emulated")
    small_fp8 = "gemm_fp8_exactint.mantissa_walk_128x192x64"
    code, report, err = run_json("--backend", "emulated:sm_89x8", "--profile", "boot", "--enable", small_fp8)
    t = by_device(report, small_fp8).get("cuda:0", {})
    F.check(code == 0 and t.get("algorithm", "").startswith("mma.sync m16n8k32") and
            emulated_note not in t.get("algorithm", ""), f"fp8 on sm_89: exit {code}, engine {t.get('algorithm')}")
    # convert_f32's fp8 conversions: the cvt instructions where the code has them (sm_89 on, the battery's sm_90
    # above), the specification's integer code on sm_80, which passes against the same goldens.
    conv = [t for cid, t in seen.items() if exact[cid]["family"] == "convert_f32"]
    F.check(conv and all("cvt.rn.satfinite.e4m3x2" in t.get("algorithm", "") for t in conv),
            f"convert_f32 on sm_90: not the fp8 instructions: {[t.get('algorithm') for t in conv]}")
    conv_boot = [cid for cid in boot if exact[cid]["family"] == "convert_f32"]
    F.check(bool(conv_boot), "no convert_f32 boot case")
    code, report, err = run_json("--backend", "emulated:sm_80x4", "--profile", "boot",
                                 *[x for cid in conv_boot for x in ("--enable", cid)])
    for cid in conv_boot:
        t = by_device(report, cid).get("cuda:0", {})
        F.check(code == 0 and t.get("result") == "pass" and "fp8 in integer code" in t.get("algorithm", ""),
                f"{cid} on sm_80: exit {code}, {t.get('result')}, engine {t.get('algorithm')}")
    # Library families (cuBLASLt) run only on a real GPU: skipped as not applicable, with the reason.
    lt = "gemm_bf16_exactint_cublaslt.mantissa_walk_128x64x96"
    code, report, err = run_json("--backend", "emulated:1", "--profile", "boot", "--enable", lt, "--enable",
                                 "gemm_bf16_exactint.mantissa_walk_128x64x96")
    t = by_device(report, lt).get("cuda:0", {})
    F.check(code == 0 and t.get("result") == "not_applicable" and "runs only on a real GPU" in t.get("reason", ""),
            f"cuBLASLt on the emulated device: exit {code}, {t.get('result')} ({t.get('reason')})")
    F.finish()


def sample_element(cid):
    """A sample element of the case's listing not on tile 0, and its tile."""
    for e in CASES[cid]["geometry"]["elements"]:
        if e["tile"] % 4 != 0:
            return e["element"], e["tile"]
    raise SystemExit(f"{cid}: the listing has no sample element off SM 0")


def by_device(report, cid):
    return {t["device"]: t for t in tests_of(report) if t["id"] == cid}


def executor():
    F = Failures("e2e_emu_executor")
    gemm = "gemm_bf16_exactint.uniform_256x192x512"  # 4 x 3 tiles of 64 x 64, one block each

    # 1. An output drill on the second of two GPUs: found there, on the SM of the tile's block (block b runs
    #    on SM b % sms; the mma kernel computes tile t in block t), with its element; the other GPU passes.
    element, tile = sample_element(gemm)
    code, report, err = run_json("--backend", "emulated:sm_90x4,sm_90x4", "--profile", "boot", "--enable", gemm,
                                 "--inject", f"case={gemm},element={element},bit=3,device=1")
    t = by_device(report, gemm)
    F.check(code == 1, f"drill: exit {code}, want 1: {err[-300:]}")
    F.check(t.get("cuda:0", {}).get("result") == "pass", f"drill: GPU 0 {t.get('cuda:0', {}).get('result')}")
    t1 = t.get("cuda:1", {})
    F.check(t1.get("result") == "fail" and t1.get("units_failed") == [tile % 4],
            f"drill: GPU 1 {t1.get('result')} units {t1.get('units_failed')}, want fail on SM {tile % 4}")
    mis = t1.get("miscompares", [])
    F.check(any(m.get("element") == element for m in mis), f"drill: element {element} not among {mis[:2]}")

    # 2. An SM-targeted drill: every tile SM 2 computed, and nothing else.
    code, report, err = run_json("--backend", "emulated:sm_90x4", "--profile", "boot", "--enable", gemm,
                                 "--inject", f"case={gemm},element=0,bit=30,unit=2")
    t = by_device(report, gemm).get("cuda:0", {})
    want_tiles = len([b for b in range(CASES[gemm]["geometry"]["tile_count"]) if b % 4 == 2])
    F.check(code == 1 and t.get("units_failed") == [2], f"unit drill: exit {code}, units {t.get('units_failed')}")
    F.check(t.get("failed_tiles") == want_tiles,  # the drill fires in one iteration (the first)
            f"unit drill: {t.get('failed_tiles')} failed tiles, want {want_tiles}")

    # 2b. The digest pass's clusters and stuck-at faults (src/spec/fault.h) on SM 2: a warp-aligned multi-bit
    #     cluster changes exactly 32 words of each of its tiles; the sign bit stuck at 1 and at 0 over the same
    #     words changes each word under exactly one of them.
    spec = f"case={gemm},element=0,mask=0x00400003,count=32,unit=2"
    code, report, err = run_json("--backend", "emulated:sm_90x4", "--profile", "boot", "--enable", gemm, "--inject", spec)
    t = by_device(report, gemm).get("cuda:0", {})
    F.check(code == 1 and t.get("units_failed") == [2] and t.get("miscompared_elements") == 32 * want_tiles,
            f"cluster drill: exit {code}, units {t.get('units_failed')}, {t.get('miscompared_elements')} words, "
            f"want {32 * want_tiles}")
    F.check(all(m.get("xor_mask") == "0x00400003" for m in t.get("miscompares", [])), "cluster drill: a word off the mask")
    stuck = {}
    for v in (0, 1):
        spec = f"case={gemm},element=0,bit=31,stuck={v},count=32,unit=2"
        code, report, err = run_json("--backend", "emulated:sm_90x4", "--profile", "boot", "--enable", gemm, "--inject", spec)
        t = by_device(report, gemm).get("cuda:0", {})
        stuck[v] = t.get("miscompared_elements", 0)
        F.check(all((int(m["actual"], 16) >> 31) == v for m in t.get("miscompares", [])),
                f"stuck-at-{v} drill: a listed word's sign is not {v}")
    F.check(stuck[0] + stuck[1] == 32 * want_tiles and min(stuck.values()) > 0,
            f"stuck-at drills: {stuck} words, want {32 * want_tiles} in all, some under each")

    # 2c. An input drill stuck over three rows of an fp32 reduction: exactly those rows' sums differ, in the
    #     drilled iteration only (the pass restores the tensor's saved words after the kernels).
    rsum = "reduce_sum_f32.mantissa_walk_64x4097"
    cols = 4097
    spec = f"case={rsum},target=input,tensor=x,element={5 * cols},mask=0x7f800000,stuck=1,count=3,stride={cols}"
    code, report, err = run_json("--backend", "emulated:sm_90x4", "--profile", "boot", "--enable", rsum, "--inject", spec)
    t = by_device(report, rsum).get("cuda:0", {})
    mis = t.get("miscompares", [])
    F.check(code == 1 and t.get("miscompared_elements") == 3 and sorted(m["element"] for m in mis) == [5, 6, 7],
            f"input stuck drill: exit {code}, {t.get('miscompared_elements')} words {[m['element'] for m in mis]}")
    F.check(CASES[rsum]["iterations"]["boot"] >= 2 and all(m.get("iteration") == 0 for m in mis),
            f"input stuck drill: a later iteration failed too (the tensor was not restored): {mis[:2]}")

    # 3. One lane of one SM's tensor cores flips a bit of its mma.sync result: every tensor-core case on that
    #    GPU fails on that SM alone; the CUDA-core case and the other GPU pass. Every kernel documents its
    #    thread-to-element map (DeviceProblem::thread_of): a GEMM's miscompares name lane 7, the faulty one, and
    #    the warps that own the failing elements (every warp issues mma.sync, so every warp's lane 7 is hit).
    #    In attention the flipped element of lane 7 (row 1 of each 16-row fragment) also feeds that row's
    #    softmax, so the row's owners fail: lanes 4..7 (4 (row % 8) + column % 8 / 2).
    cases = [gemm, "gemm_tf32_exactint.uniform_192x256x384", "gemm_fp8_exactint.uniform_256x256x128",
             "attention_bf16_exactint.causal_uniform_2x256x64", "reduce_sum_f32.mantissa_walk_64x4097",
             "gemm_f64.heavy_tail_192x256x320", "gemm_i8.mma_uniform_128x128x512"]
    attention = "attention_bf16_exactint.causal_uniform_2x256x64"
    code, report, err = run_json("--backend", "emulated:sm_90x4:mma-fault=1/7/2,sm_90x4", "--profile", "boot",
                                 *[x for c in cases for x in ("--enable", c)])
    F.check(code == 1, f"mma fault: exit {code}: {err[-300:]}")
    for c in cases:
        t = by_device(report, c)
        tensor = not c.startswith("reduce_sum")
        g0, g1 = t.get("cuda:0", {}), t.get("cuda:1", {})
        if tensor:
            F.check(g0.get("result") == "fail" and g0.get("units_failed") == [1],
                    f"mma fault: {c} on GPU 0: {g0.get('result')} units {g0.get('units_failed')}")
            ms = g0.get("miscompares", [])
            lanes = {7} if c != attention else {4, 5, 6, 7}
            warps = range(8) if c.startswith("gemm_f64") else range(4)  # gemm_f64: 8 warps per block
            F.check(ms and all(m.get("lane") in lanes and m.get("warp") in warps for m in ms),
                    f"mma fault: {c}: miscompares name lanes {sorted({m.get('lane') for m in ms})}, want {lanes}")
        else:
            F.check(g0.get("result") == "pass", f"mma fault: {c} (no tensor cores) on GPU 0: {g0.get('result')}")
        F.check(g1.get("result") == "pass", f"mma fault: {c} on GPU 1: {g1.get('result')}")

    # The int8 GEMM's outputs are int32s: its miscompares read as integers, and the fault (bit 2 of an accumulator,
    # flipped at every mma.sync step) moves each by a multiple of 4.
    def s32(h):
        v = int(h, 16)
        return v - (1 << 32) if v >> 31 else v
    ms = by_device(report, "gemm_i8.mma_uniform_128x128x512").get("cuda:0", {}).get("miscompares", [])
    F.check(ms and all(m.get("int32") == {"expected": s32(m["expected"]), "actual": s32(m["actual"]),
                                          "difference": s32(m["actual"]) - s32(m["expected"])}
                       and m["int32"]["difference"] % 4 == 0 and m["ulps"] == abs(m["int32"]["difference"]) for m in ms),
            f"mma fault: gemm_i8's miscompares are not read as int32: {ms[:2]}")

    # 4. A kernel fault that loses GPU 0's context (a sticky error) is that GPU's failure (result crash, exit 1)
    #    and ends its run only: its later tests are errors, GPU 1 passes everything.
    few = [gemm, "softmax_f32.mantissa_walk_128x777", "gemm_f16_exactint.uniform_256x192x256"]
    code, report, err = run_json("--backend", "emulated:sm_90x4:fail-launch=4,sm_90x4", "--profile", "boot",
                                 *[x for c in few for x in ("--enable", c)])
    F.check(code == 1, f"sticky error: exit {code}, want 1 (the GPU failed)")
    g0 = [t for t in tests_of(report) if t["device"] == "cuda:0"]
    g1 = [t for t in tests_of(report) if t["device"] == "cuda:1"]
    lost = [t for t in g0 if t["result"] == "crash"]
    F.check(len(lost) == 1 and "cudaErrorIllegalAddress" in lost[0].get("reason", "")
            and "lost its context" in lost[0].get("reason", ""),
            f"sticky error: GPU 0's results {[(t['result'], t.get('reason')) for t in g0]}")
    after = g0[g0.index(lost[0]) + 1:] if lost else []
    F.check(all(t["result"] == "error" for t in after), f"sticky error: GPU 0 went on: {[t['result'] for t in g0]}")
    F.check(len(g1) == len(few) and all(t["result"] == "pass" for t in g1),
            f"sticky error: GPU 1: {[t['result'] for t in g1]}")
    errs = schema_errors(report or {})
    F.check(not errs, f"sticky error: the report does not validate: {errs}")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:sm_90x4:fail-launch=4,sm_90x4",
                                               "--profile", "boot", *[x for c in few for x in ("--enable", c)],
                                               "--npd"])], capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 1 and p.stdout.startswith("SDC: gpu 0 (EMU-00000000) "), f"sticky error --npd: {p.stdout.strip()!r}")

    # 5. Device memory runs out: that case is an error that says so; the other GPU passes it.
    big = "gemm_f32.uniform_1024"
    code, report, err = run_json("--backend", "emulated:sm_90x4:mem=8,sm_90x4:sample=4", "--profile", "boot",
                                 "--enable", big)
    t = by_device(report, big)
    F.check(code == 2 and t.get("cuda:0", {}).get("result") == "error"
            and "MiB of device memory" in t.get("cuda:0", {}).get("reason", ""),
            f"out of memory: exit {code}, {t.get('cuda:0', {}).get('result')} ({t.get('cuda:0', {}).get('reason')})")
    F.check(t.get("cuda:1", {}).get("result") == "pass", f"out of memory: GPU 1 {t.get('cuda:1', {}).get('result')}")

    # 6. --expect-devices with one GPU missing: an error that names what is there.
    code, report, err = run_json("--backend", "emulated:2", "--expect-devices", "3", "--profile", "boot",
                                 "--enable", "gemm_tf32_exactint.mantissa_walk_128x64x96")
    F.check(code == 2 and report and any("only 2 usable GPU(s) found, 1 missing" in e for e in report["errors"]),
            f"expect-devices: exit {code}, errors {report and report['errors']}")

    # 7. Consensus across GPUs (a recorded family judged without a recording): three GPUs, one dissents; two
    #    GPUs that disagree are a split.
    att = "attention_bf16.causal_2x256x64"
    tile_att = CASES[att]["geometry"]["elements"][0]
    drill = f"case={att},element={tile_att['element']},bit=5,device=2"
    code, report, err = run_json("--backend", "emulated:3", "--profile", "boot", "--enable", att, "--inject", drill)
    t = by_device(report, att)
    F.check(code == 1, f"consensus: exit {code}, want 1")
    F.check(t.get("cuda:2", {}).get("result") == "fail", f"consensus: dissenter {t.get('cuda:2', {}).get('result')}")
    F.check(all(t.get(d, {}).get("result") == "pass" for d in ("cuda:0", "cuda:1")),
            f"consensus: majority {[t.get(d, {}).get('result') for d in ('cuda:0', 'cuda:1')]}")
    drill = f"case={att},element={tile_att['element']},bit=5,device=1,iteration=0"
    code, report, err = run_json("--backend", "emulated:2", "--profile", "boot", "--enable", att, "--inject", drill)
    t = by_device(report, att)
    F.check(code == 1 and all(t.get(d, {}).get("result") == "fail" for d in ("cuda:0", "cuda:1")),
            f"split: exit {code}, {[t.get(d, {}).get('result') for d in ('cuda:0', 'cuda:1')]}")

    # 7b. The SFU family (recorded, no CPU golden): the same consensus, on the emulator's model of the
    #     instructions, which the note names; the dissenting GPU is the one with the flipped word, and the word
    #     is named (y[i].<instruction>). The CPU backend has no golden for it: not applicable.
    sfu = next(cid for cid, c in CASES.items() if c["family"] == "sfu_f32" and "boot" in c["iterations"])
    el = CASES[sfu]["geometry"]["elements"][0]
    code, report, err = run_json("--backend", "emulated:3", "--profile", "boot", "--enable", sfu, "--inject",
                                 f"case={sfu},element={el['element']},bit=3,device=2")
    t = by_device(report, sfu)
    F.check(code == 1 and t.get("cuda:2", {}).get("result") == "fail"
            and all(t.get(d, {}).get("result") == "pass" for d in ("cuda:0", "cuda:1")),
            f"sfu consensus: exit {code}, {[t.get(d, {}).get('result') for d in ('cuda:0', 'cuda:1', 'cuda:2')]}")
    F.check(any("SFU's approximations are the emulator's" in n for n in t.get("cuda:0", {}).get("notes", [])),
            f"sfu consensus: the note does not name the SFU model: {t.get('cuda:0', {}).get('notes')}")
    code, report, err = run_json("--backend", "cpu", "--cpuset", "0", "--profile", "boot", "--enable", sfu)
    t = by_device(report, sfu)
    F.check(any(r.get("result") == "not_applicable" and "GPUs only" in r.get("reason", "") for r in t.values()),
            f"sfu on a CPU: {[(r.get('result'), r.get('reason')) for r in t.values()]}")

    # 8. A kernel that hangs: the watchdog gives up within its deadline (10 s plus the case's share), the test
    #    is an error that says so, and the process ends. The copies back are to pinned memory: a copy to
    #    pageable memory would wait for the hung kernel and never let the watchdog fire.
    small = "gemm_bf16_exactint.mantissa_walk_128x64x96"
    t0 = time.monotonic()
    code, report, err = run_json("--backend", "emulated:1", "--profile", "boot", "--enable", small,
                                 "--inject", f"case={small},action=hang", timeout=120)
    took = time.monotonic() - t0
    t = by_device(report, small).get("cuda:0", {})
    F.check(code == 2 and t.get("result") == "error" and "watchdog" in t.get("reason", ""),
            f"hang: exit {code}, {t.get('result')} ({t.get('reason')})")
    F.check(took < 60, f"hang: the run took {took:.0f} s; the watchdog's deadline is about 10 s")

    # 9. Interrupted by SIGTERM while GPUs compute: exit 143, the report says so.
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([SDCSCREEN, *with_lock(["run", "--backend", "emulated:2", "--profile", "standard",
                                                      "--enable", "gemm_f32.uniform_1024", "--output-format", "json",
                                                      "-o", out, "-q"])])
        time.sleep(3)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=120)
        F.check(rc == 143, f"interrupt: exit {rc}, want 143")
        F.check(os.path.exists(out), "interrupt: no report written")

    # 10. A GPU's compute capability decides what it can run: fp8 tensor cores need 8.9, so on an emulated
    #     sm_80 the fp8 case is not applicable (a skip that leaves the exit code alone), on sm_89 it passes.
    fp8 = "gemm_fp8_exactint.mantissa_walk_128x192x64"
    code, report, err = run_json("--backend", "emulated:sm_80x4,sm_89x4", "--profile", "boot", "--enable", fp8)
    t = by_device(report, fp8)
    F.check(code == 0 and t.get("cuda:0", {}).get("result") == "not_applicable"
            and "compute capability 8.9" in t.get("cuda:0", {}).get("reason", ""),
            f"sm_80: exit {code}, {t.get('cuda:0', {}).get('result')} ({t.get('cuda:0', {}).get('reason')})")
    F.check(t.get("cuda:1", {}).get("result") == "pass", f"sm_89: {t.get('cuda:1', {}).get('result')}")

    # 11. A malformed emulated device is a usage error (exit 64), not a default.
    code, report, err = run_json("--backend", "emulated:sm_90x0")
    F.check(code == 64 and "emulated" in err, f"bad spec: exit {code}: {err.strip()[:200]}")
    F.finish()


def level3_drill(F, l3):
    """Level 3 on an emulated GPU: steps 0..4 match, step 5 on differ (its loss or parameter digest)."""
    code, report, err = run_json("--backend", "emulated:1", "--profile", "standard", "--time-budget", "1s",
                                 "--enable", l3, "--inject",
                                 f"case={l3},submodule=layer0.attn.wo.backward,step=5,element=3,bit=20",
                                 timeout=1800)
    t = by_device(report, l3).get("cuda:0", {})
    names = [m.get("element_name", "") for m in t.get("miscompares", [])]
    steps = sorted({int(n.split("L3 step ")[1].split()[0]) for n in names if "L3 step " in n})
    F.check(code == 1 and t.get("failed_tiles") == 1 and steps and steps[0] == 5,
            f"L3 drill: exit {code}, {t.get('failed_tiles')} failed tiles, diverging steps {steps}, want from 5")
    # The trajectory (every step's loss and parameter distance, computed on the device) and its failure mode are
    # the CPU replay's for the same drill, bit for bit.
    code, cpu_report, err = run_json("--cpuset", "0", "--profile", "standard", "--time-budget", "0.2s", "--enable", l3,
                                     "--inject", f"case={l3},submodule=layer0.attn.wo.backward,step=5,element=3,bit=20")
    cpu_t = by_device(cpu_report, l3).get("cpu", {})
    trajectory = lambda x: [(m["site"], m["metric"], m["value"]) for m in x.get("replay_metrics", [])]
    modes = lambda x: [f["failure_mode"] for f in x.get("replay_failure_modes", [])]
    F.check(code == 1 and len(trajectory(t)) > 40 and trajectory(t) == trajectory(cpu_t) and modes(t) == modes(cpu_t)
            and len(modes(t)) == 1, f"L3 drill: the GPU's trajectory {trajectory(t)[:6]} {modes(t)} is not the CPU's "
            f"{trajectory(cpu_t)[:6]} {modes(cpu_t)}")


def level12_steps_drill(F):
    """Level 12 over four steps on an emulated GPU: a flip at step 2 gives the CPU's metrics bit for bit (L1's per
    submodule over every step with computation sync, L2's summed over the steps with parameter sync and the whole
    model's worst-step gradient ratio)."""
    case = "train_step_f32.l12_tiny_4"
    spec = f"case={case},submodule=layer1.mlp.down.backward,step=2,microbatch=1,output=1,element=7,bit=20"
    code, report, err = run_json("--backend", "emulated:1", "--profile", "standard", "--time-budget", "1s",
                                 "--enable", case, "--inject", spec, timeout=1800)
    t = by_device(report, case).get("cuda:0", {})
    code_cpu, cpu_report, err = run_json("--cpuset", "0", "--profile", "standard", "--time-budget", "0.2s", "--enable",
                                         case, "--inject", spec)
    cpu_t = by_device(cpu_report, case).get("cpu", {})
    metrics = lambda x: [(m["level"], m["site"], m["metric"], m["value"]) for m in x.get("replay_metrics", [])]
    levels = {m[0] for m in metrics(t)}
    F.check(code == 1 and code_cpu == 1 and t.get("failed_tiles") == 1 and t.get("judged_by") == "exact"
            and t.get("iterations") == 1 and levels == {1, 2}
            and ("grad model" in [m[1] for m in metrics(t)]) and metrics(t) == metrics(cpu_t),
            f"L12 over steps: exit {code}/{code_cpu}, the GPU's metrics {metrics(t)[:4]} are not the CPU's "
            f"{metrics(cpu_t)[:4]}")


def tensor_core_replay(F):
    """train_step_bf16 in mode recorded, its matmuls on the tensor cores (mma.sync, the emulator's rounding): three
    emulated GPUs agree and a drill on one makes it the node's dissenter; its losses follow the exact-mode
    trajectory of the same seed (the CPU's) within 1e-3 without equalling it from step 1 on, which the fragment
    maps of the mma kernel must get right for."""
    tc, exact = "train_step_bf16.l3_tiny_8_tc", "train_step_bf16.l3_tiny_20"
    lt = "train_step_bf16.l3_tiny_8_lt"  # the same replay on cuBLASLt (below)
    cases = {c["id"]: c for c in common.battery()["cases"] if c["id"] in (tc, exact, lt)}
    seeds = {cid: c["seed"] for cid, c in cases.items() if cid in (tc, exact)}
    F.check(seeds[tc] == seeds[exact], f"the tensor-core case and the exact one differ in seed: {seeds}")
    spec = f"case={tc},submodule=layer0.mlp.down.forward,step=3,element=5,bit=22"
    code, report, err = run_json("--backend", "emulated:3", "--profile", "standard", "--time-budget", "1s",
                                 "--enable-any", tc, "--inject", f"{spec},device=2", timeout=1800)
    t = by_device(report, tc)
    results = {d: (x.get("result"), x.get("judged_by")) for d, x in t.items()}
    F.check(code == 1 and results == {"cuda:0": ("pass", "consensus"), "cuda:1": ("pass", "consensus"),
                                      "cuda:2": ("fail", "consensus")}
            and any("this GPU is the suspect" in n for n in t.get("cuda:2", {}).get("notes", []))
            and any("the tensor cores' rounding is the emulator's" in n for n in t.get("cuda:0", {}).get("notes", [])),
            f"tensor cores: exit {code}, results {results}: {err[-300:]}")
    # One GPU, two runs, the second drilled at the last step: the first run's healthy trajectory is the reference
    # its failing tile lists; the exact case's reference (a drill on a CPU) is the CPU's trajectory.
    code, report, err = run_json("--backend", "emulated:1", "--profile", "standard", "--time-budget", "8s",
                                 "--enable-any", tc, "--inject", f"case={tc},submodule=loss.forward,element=0,bit=22,"
                                 "step=7,iteration=1", timeout=1800)
    losses = lambda x: [m["reference"] for m in x.get("replay_metrics", []) if m["metric"] == "loss"]
    on_tc = losses(by_device(report, tc).get("cuda:0", {}))
    code_cpu, cpu_report, err = run_json("--cpuset", "0", "--time-budget", "1h", "--enable-any", exact, "--inject",
                                         f"case={exact},submodule=loss.forward,element=0,bit=22,step=19")
    on_cpu = losses(by_device(cpu_report, exact).get("cpu", {}))[:8]
    rel = [abs(a - b) / b for a, b in zip(on_tc, on_cpu)]
    F.check(code == 1 and code_cpu == 1 and len(on_tc) == 8 and len(on_cpu) == 8 and max(rel) < 1e-3
            and all(r > 0 for r in rel[1:]), f"tensor cores: losses {on_tc} against the exact {on_cpu}")
    # The same replay on cuBLASLt (engine 1): a real GPU's alone. The emulated device says so and runs nothing (exit
    # 2), as it does for the cuBLASLt GEMM families; a CPU refuses it as any recorded case.
    lt_case = cases.get(lt, {})
    F.check(lt_case.get("shape", {}).get("engine") == 1 and lt_case.get("seed") == seeds[tc],
            f"{lt}: not the tensor-core case's replay on engine 1: {lt_case}")
    code, report, err = run_json("--backend", "emulated:1", "--profile", "standard", "--time-budget", "1s",
                                 "--enable-any", lt)
    t = by_device(report, lt).get("cuda:0", {})
    F.check(code == 2 and t.get("result") == "not_applicable" and "cuBLASLt engine runs only on a real GPU" in
            t.get("reason", ""), f"{lt} on the emulated device: exit {code}, {t.get('result')} ({t.get('reason')})")


def replay():
    """The training-step replay on an emulated GPU (its battery cases pass in `battery`): a bit flipped inside a
    submodule's output (--inject ...,submodule=), once or at a rate, fails replica 0 alone, the report names that
    submodule at level 1 (at a rate, the micro-batches it hit) and its gradient at level 2, with the same slots,
    values and metrics the CPU replay reports for the same drill; at level 3 the trajectory matches up to the drilled step and diverges from it."""
    F = Failures("e2e_emu_replay")
    l12, l3 = "train_step_f32.l12_tiny", "train_step_f32.l3_tiny_20"
    spec = f"case={l12},submodule=layer1.mlp.down.backward,output=1,element=7,bit=20"
    # The GPU and CPU pair below drill it at a rate (rate=2: micro-batches 0 and 2, in L1 and in L2): the device's
    # replay decides which executions to flip by the host's code, so its slots are the CPU's; the screens after it
    # drill one flip.
    rated = f"{spec},rate=2"
    code, report, err = run_json("--backend", "emulated:2", "--profile", "boot", "--enable", l12, "--inject",
                                 f"{rated},device=1")
    t = by_device(report, l12)
    F.check(code == 1, f"L12 drill: exit {code}, want 1: {err[-300:]}")
    F.check(t.get("cuda:0", {}).get("result") == "pass", f"L12 drill: GPU 0 {t.get('cuda:0', {}).get('result')}")
    gpu = t.get("cuda:1", {})
    F.check(gpu.get("result") == "fail" and gpu.get("failed_tiles") == 1,
            f"L12 drill: GPU 1 {gpu.get('result')} with {gpu.get('failed_tiles')} failed tiles, want replica 0 alone")
    names = [m.get("element_name", "") for m in gpu.get("miscompares", [])]
    l1 = {n.split(": ", 1)[-1].split(" digest.")[0] for n in names if ": L1 " in n and " digest." in n}
    # The listing holds 8 slots a tile (the six digest slots and the submodule's two L1 metrics here); the metrics,
    # never capped, show the gradient at level 2.
    l2 = {m["site"] for m in gpu.get("replay_metrics", []) if m["level"] == 2}
    F.check(l1 == {"L1 layer1.mlp.down.backward mb 0 out 1", "L1 layer1.mlp.down.backward mb 2 out 1"}
            and "grad layer1.mlp.down" in l2, f"L12 drill: slots {names}, level-2 sites {sorted(l2)}")
    F.check(report and all(i.get("fired") for i in report.get("injections", [])), "L12 drill: did not fire")
    # A replay's kernels span the GPU: the failing unit is the GPU (no SM in units_failed, every miscompare on
    # {"kind": "gpu"}), no SM of it failed, the report is valid (a fail with no SM named), and there is no bit
    # signature (the slots are digests and metrics).
    F.check(not schema_errors(report), f"L12 drill: the report breaks the schema: {schema_errors(report)}")
    F.check(gpu.get("units_failed") == [] and gpu.get("miscompares")
            and all(m["unit"] == {"kind": "gpu", "gpu": 1} for m in gpu.get("miscompares", [])),
            f"L12 drill: units_failed {gpu.get('units_failed')}, miscompare units "
            f"{[m.get('unit') for m in gpu.get('miscompares', [])][:3]}")
    F.check(not [u for u in (report or {}).get("units", []) if u.get("result") == "fail"],
            "L12 drill: an SM is failed, but no SM is known to have computed the replay")
    F.check(gpu.get("signatures") == [], f"L12 drill: a replay has bit signatures {gpu.get('signatures')}")
    # The same drill on one CPU: replica 0's slots, values and metrics are the GPU's bit for bit.
    code, cpu_report, err = run_json("--cpuset", "0", "--profile", "boot", "--enable", l12, "--inject", rated)
    cpu_t = by_device(cpu_report, l12).get("cpu", {})
    on_cpu = {(m["element"], m["actual"]) for m in cpu_t.get("miscompares", []) if m.get("tile") == 0}
    on_gpu = {(m["element"], m["actual"]) for m in gpu.get("miscompares", [])}
    F.check(code == 1 and on_gpu and on_gpu == on_cpu,
            f"L12 drill: the GPU's slots {sorted(on_gpu)[:4]} are not the CPU's {sorted(on_cpu)[:4]}")
    # The text report's replay view, Prometheus, the node-problem-detector line and the HTML page name the GPU, not
    # an SM: one screen writes them all (the NPD line on stdout, the text report to -o).
    with tempfile.TemporaryDirectory() as d:
        prom, text, html = os.path.join(d, "s.prom"), os.path.join(d, "report.txt"), os.path.join(d, "r.html")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:1", "--profile", "boot", "--enable",
                                                   l12, "--inject", spec, "--npd", "-o", text, "--prometheus", prom,
                                                   "--html", html])],
                           capture_output=True, text=True, timeout=600)
        report_text = open(text).read() if os.path.exists(text) else ""
        page = open(html).read() if os.path.exists(html) else ""
        # The page draws the GPU failed (its SMs computed no tile of the replay, so they are not what failed), names
        # the GPU as the failing unit, and draws no bit histogram or signature for the replay's slots.
        units_html = page[page.find('<section id="units"'):][:600]
        F.check('<figure class="gpu fail" data-device="cuda:0">' in page and 'class="gpu-failed"' in page
                and "on gpu 0 (its kernels span the GPU)" in page and 'data-failing-units="1"' in page,
                f"L12 drill: the HTML page does not draw gpu 0 failed: {units_html}")
        F.check('<figure class="bits"' not in page and 'class="signature"' not in page,
                "L12 drill: the HTML page draws a bit signature for a replay")
        F.check(p.returncode == 1 and "replay on gpu 0 (its kernels span the GPU): first L1 layer1.mlp.down.backward;"
                in report_text and " sm -1" not in report_text, f"L12 drill: text:\n{report_text[-1500:]}")
        # Every GPU series carries the GPU's uuid beside its device label.
        want = r'sdcscreen_replay_failed\{gpu="0",uuid="EMU-[^"]+",level="1",site="layer1\.mlp\.down\.backward"\} 1'
        F.check(os.path.exists(prom) and re.search(want, open(prom).read()), f"L12 drill: no '{want}' in the Prometheus file")
    F.check(p.stdout.strip() == "SDC: gpu 0 (EMU-00000000) replay L1 layer1.mlp.down.backward [drill]", f"npd: '{p.stdout.strip()}'")
    # Level 3: steps 0..4 match, step 5 on differ (its loss or parameter digest), the final distance too. Not under
    # a sanitizer, where this one screen (8 replicas of twenty steps, each output a CPU-emulated thread) takes over a
    # minute: its kernels are the level-1/2 replay's (the same model and optimizer, step after step) with the same
    # submodule hook, which run instrumented above and in e2e_emu_battery; the level-3 comparison on the host is
    # the CPU replay's, drilled instrumented in e2e_replay.
    if not SANITIZED:
        level3_drill(F, l3)
        level12_steps_drill(F)
        tensor_core_replay(F)
    # Refused: a replay's kernels span the GPU, so a replay drill cannot name an SM.
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:1", "--enable", l12, "--inject",
                                               f"{spec},unit=3", "-q"])], capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 64 and "cannot be pinned to an SM" in p.stderr,
            f"unit= with submodule= on a GPU: exit {p.returncode}, {p.stderr.strip()[:300]}")
    # The GPU runbook's drill script, on the emulated device: a few output drills and replay drills. Not under a
    # sanitizer: the script's code is Python, and the binary's paths it takes (an output drill, a replay drill on
    # an emulated GPU) run instrumented above and in e2e_injection.
    if SANITIZED:
        F.finish()
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu-drills.py")
    count, replays, memory = 2, 4, 2  # the four replay cases: fp32, bf16, tensor-parallel, recorded on tensor cores
    p = subprocess.run([sys.executable, script, "--sdcscreen", SDCSCREEN, "--backend", "emulated:sm_90x8", "--count",
                        str(count), "--replay-drills", str(replays), "--memory-drills", str(memory)],
                       capture_output=True, text=True, timeout=1800)
    F.check(p.returncode == 0 and f"{replays} replay drills and {memory} memory drills: {count + replays + memory} "
            "detected and localized, 0 not" in p.stdout,
            f"gpu-drills.py: exit {p.returncode}\n{p.stdout[-1500:]}{p.stderr[-500:]}")
    F.finish()


def retest():
    """--retest-on-failure on an emulated GPU: an SM drill that repeats (persist=) is classified as the drill
    makes it, the rest of the GPU is its sibling and the fresh seeds are checked against the host; the report
    validates against the schema and the NPD line and Prometheus carry the classification."""
    F = Failures("e2e_emu_retest")
    gemm = "gemm_bf16_exactint.uniform_256x192x512"  # 12 tiles, block b on SM b % 4: SM 1 computes tiles 1, 5, 9
    validator = report_validator()
    want = {  # persist= -> classification, same-seed failures, fresh-seed failures, input_dependent
        "always": ("persistent", 3, 3, False),
        "input": ("persistent", 3, 0, True),
        "once": ("not reproduced", 0, 0, None),
        "1/2": ("intermittent", 2, 1, False),  # fires at iterations 0, retests 2 and 4 (counted 0, 1, 2, ...)
    }
    for persist, (cls, same_failed, fresh_failed, dep) in want.items():
        spec = f"case={gemm},element=5,bit=3,unit=1,device=1,persist={persist}"
        code, report, err = run_json("--backend", "emulated:sm_90x4,sm_90x4", "--profile", "boot", "--enable", gemm,
                                     "--inject", spec, "--retest-on-failure", "3")
        errs = list(validator.iter_errors(report or {}))
        F.check(code == 1 and not errs, f"{persist}: exit {code}, schema {[e.message for e in errs[:3]]}: {err[-300:]}")
        t = by_device(report, gemm)
        F.check(t.get("cuda:0", {}).get("result") == "pass" and "retest" not in t.get("cuda:0", {}),
                f"{persist}: GPU 0 {t.get('cuda:0', {}).get('result')}")
        rt = t.get("cuda:1", {}).get("retest") or [{}]
        x = rt[0]
        F.check(len(rt) == 1 and x.get("unit") == {"kind": "sm", "gpu": 1, "sm": 1} and x.get("tiles") == 3,
                f"{persist}: retest {rt}")
        F.check(x.get("classification") == cls and x.get("same_seed", {}).get("runs") == 3
                and x.get("same_seed", {}).get("failed") == same_failed
                and x.get("same_seed", {}).get("same_bits") == same_failed,
                f"{persist}: {x.get('classification')} {x.get('same_seed')}, want {cls} with {same_failed} of 3")
        fs = x.get("fresh_seeds", {})
        F.check(fs.get("runs") == 3 and fs.get("failed") == fresh_failed and fs.get("compared_with") == {"kind": "host"}
                and x.get("input_dependent") == dep, f"{persist}: fresh seeds {fs}, input_dependent "
                f"{x.get('input_dependent')}, want {fresh_failed} failed, {dep}")
        F.check(x.get("siblings") == [{"unit": {"kind": "gpu", "gpu": 1}, "relation": "other SMs of the GPU",
                                       "runs": 3, "failed": 0}] and x.get("complete") is True,
                f"{persist}: siblings {x.get('siblings')}")
    # The other outputs of a persistent SM fault.
    spec = f"case={gemm},element=5,bit=3,unit=1,persist=always"
    with tempfile.TemporaryDirectory() as d:
        prom = os.path.join(d, "s.prom")
        p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:sm_90x4", "--profile", "boot",
                                                   "--enable", gemm, "--inject", spec, "--retest-on-failure", "2",
                                                   "--prometheus", prom])], capture_output=True, text=True, timeout=600)
        F.check(p.returncode == 1 and "retest on gpu 0 sm 1 (3 failing tile(s), 2 run(s) each way): persistent" in p.stdout
                and "against the host CPU: not input-dependent" in p.stdout
                and "neighbours (other SMs of the GPU): 0 of 2 runs failed" in p.stdout, f"text:\n{p.stdout[-1500:]}")
        line = r'sdcscreen_device_fault_class\{gpu="0",uuid="EMU-[^"]+",sm="1",class="persistent"\} 1'
        F.check(os.path.exists(prom) and re.search(line, open(prom).read()), f"no '{line}' in the Prometheus file")
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:sm_90x4", "--profile", "boot", "--enable",
                                               gemm, "--inject", spec, "--retest-on-failure", "2", "--npd"])],
                       capture_output=True, text=True, timeout=600)
    F.check(p.stdout.strip() == "SDC: gpu 0 sm 1 (EMU-00000000) persistent gemm_bf16_exactint [drill]", f"npd: {p.stdout.strip()!r}")
    # Refused: a GPU input drill cannot repeat on one SM.
    p = subprocess.run([SDCSCREEN, *with_lock(["run", "--backend", "emulated:1", "--enable", gemm, "--inject",
                                               f"case={gemm},target=input,tensor=a,element=0,bit=3,unit=1,persist=always",
                                               "-q"])], capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 64 and p.stderr.strip(), f"persist= on a GPU input drill: exit {p.returncode}, {p.stderr.strip()[:300]}")
    F.finish()


def hung():
    """A kernel launch that never ends and that nothing can release (the emulated device's hang-launch=<n>).
    The watchdog gives up on it; the process must then write its report and exit with its code without
    freeing anything or tearing the runtime down, both of which wait for the device (on a GPU as here)."""
    F = Failures("e2e_emu_hung")
    small = "gemm_bf16_exactint.mantissa_walk_128x64x96"

    class Hung:
        """One screen with a launch that never ends, started at once; finish() waits for it. The five screens
        run at the same time: each waits for its watchdog (about 10 s) on a sleeping emulated block."""

        def __init__(self, backend):
            self.dir = tempfile.TemporaryDirectory()
            self.out = os.path.join(self.dir.name, "report.json")
            self.prom = os.path.join(self.dir.name, "metrics.prom")
            self.t0 = time.monotonic()
            # Its own lock: the screens run at the same time. The NPD line is its stdout.
            self.p = subprocess.Popen([SDCSCREEN, "run", "--lock-file", os.path.join(self.dir.name, "lock"),
                                       "--backend", backend, "--profile", "boot", "--enable", small,
                                       "--output-format", "json", "-o", self.out, "--prometheus", self.prom, "--npd"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

        def finish(self):
            """(exit code or None when it did not end, seconds, report or None, stderr); self.npd and self.metrics
            keep the NPD line and the Prometheus text."""
            try:
                out, err = self.p.communicate(timeout=max(1.0, 90 - (time.monotonic() - self.t0)))
                code = self.p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)  # the screen and its supervisor, which this test started
                out, err = self.p.communicate()
                code = None
            took = time.monotonic() - self.t0
            report = json.load(open(self.out)) if os.path.exists(self.out) else None
            self.npd = out.strip()
            self.metrics = open(self.prom).read() if os.path.exists(self.prom) else ""
            self.dir.cleanup()
            return code, took, report, err

    def hung_units(report, device):
        """The results of a GPU's SM units in the report."""
        return {u["result"] for u in (report or {}).get("units", []) if u["kind"] == "sm" and u["gpu"] == device}

    # Launch 1 is the SM-id query (before any test: a watchdog of its own); 2 and 3 generate the inputs; 4 is the
    # case's first computation; 6 is past the first iteration (compute and digest), in the second.
    # Two GPUs, the first hung: the second's test passes and its memory is left alone too (freeing it would
    # wait for its device only, but a thread's current device may be the stuck one).
    launches = (1, 2, 4, 6)
    screens = [Hung(f"emulated:sm_90x8:hang-launch={launch}") for launch in launches]
    two = Hung("emulated:sm_90x8:hang-launch=4,sm_90x8")
    for launch, screen in zip(launches, screens):
        code, took, report, err = screen.finish()
        t = next((x for x in tests_of(report) if x["id"] == small), {})
        F.check(code == 2, f"launch {launch} hung: exit {code} after {took:.0f} s (2 expected): {err[-400:]}")
        F.check(report is not None and t.get("result") == "error" and "watchdog" in t.get("reason", ""),
                f"launch {launch} hung: report {'written' if report else 'missing'}, test {t.get('result')} "
                f"({t.get('reason')})")
        F.check(report is not None and report.get("exit") == {"code": 2, "verdict": "error"},
                f"launch {launch} hung: the report's exit {report.get('exit') if report else None}")
        # The hung GPU is named: its SMs are hung in units[], Prometheus has sdcscreen_device_hung for it (by ordinal
        # and UUID), the NPD line leads with it.
        uuid = ((report or {}).get("devices") or [{}])[0].get("uuid") or ""
        F.check(hung_units(report, 0) == {"hung"}, f"launch {launch} hung: its SMs are {hung_units(report, 0)}")
        F.check(f'sdcscreen_device_hung{{gpu="0",uuid="{uuid}"}} 1' in screen.metrics and uuid,
                f"launch {launch} hung: Prometheus does not name the GPU ({uuid}): "
                f"{[x for x in screen.metrics.splitlines() if 'hung' in x]}")
        F.check(screen.npd.startswith(f"Unknown: gpu 0 ({uuid[:12]}) hung (watchdog)"),
                f"launch {launch} hung: NPD line {screen.npd!r}")
        F.check(took < 60, f"launch {launch} hung: the process took {took:.0f} s to end; the watchdog's deadline is "
                           "about 10 s")
        print(f"launch {launch} never ends: exit {code} after {took:.1f} s", flush=True)
    code, took, report, err = two.finish()
    by = {x["device"]: x for x in tests_of(report)}
    # A GPU that hangs while its peer finishes is a failed unit, as a CPU's stuck worker is (exit 1: drained).
    F.check(code == 1 and by.get("cuda:0", {}).get("result") == "error" and by.get("cuda:1", {}).get("result") == "pass",
            f"two GPUs, one hung: exit {code} after {took:.0f} s, "
            f"{[(d, x.get('result'), x.get('reason')) for d, x in by.items()]}: {err[-400:]}")
    F.check(hung_units(report, 0) == {"hung"} and "hung" not in hung_units(report, 1),
            f"two GPUs, one hung: SMs {hung_units(report, 0)} and {hung_units(report, 1)}")
    F.check(two.npd.startswith("SDC: ") and " hung (watchdog)" in two.npd and 'gpu="1"' not in
            "".join(x for x in two.metrics.splitlines() if x.startswith("sdcscreen_device_hung")),
            f"two GPUs, one hung: NPD {two.npd!r}")
    F.check(took < 60, f"two GPUs, one hung: the process took {took:.0f} s to end")
    print(f"two GPUs, one never ending: exit {code} after {took:.1f} s", flush=True)
    F.finish()


if __name__ == "__main__":
    {"battery": battery, "executor": executor, "replay": replay, "retest": retest, "hung": hung}[sys.argv[1]]()

#!/usr/bin/env python3
"""Random output-fault drills on a GPU, then drills inside the training-step replay.

Output drills: each runs one battery case with one --inject and checks that
the fault was detected (exit 1) and localized: an element drill must be the only miscompare, at the injected
element, with the injected xor mask, on the SM the injection fired on; an SM drill (unit=SM) must fail on
that SM alone, every listed miscompare with the injected mask; a cluster drill (a multi-bit mask over the 32
words from a tile's offset 0, count=32: a warp-aligned cluster) must change exactly those words of that one tile,
each by the mask, on the SM it fired on. SM drills name only SM ids the device really
uses: those that computed tiles in a clean run of the drilled case with the most tiles (the report's units[];
a GPU's SM ids need not be 0..SMs-1, %smid may skip ids and run up to %nsmid). Input faults are not drilled here: a flipped
input can be masked legitimately (an exp that underflows either way), so "every drill detected" would not
be a property of a correct screen.

Replay drills (--replay-drills N): a bit flipped inside one submodule's output of the training-step replay
(--inject ...,submodule=NAME,device=D): the run must fail, replica 0 alone, and the first failing slot must be
that submodule's level-1 digest (the computation sync puts the reference's output in its place, so nothing
before it may fail). The cases take turns: the fp32 replay, the bf16 one, the tensor-parallel one, whose drills
hit one rank's partial (one GPU computes every rank), and the recorded one on the tensor cores (level 3: its
first failing slot must be step 0's loss or parameter digest; with no recording yet it is judged by its repeats,
so this drill is what shows a recorded replay's repeats disagreeing on a GPU).

Memory drills (--memory-drills N): a word of the memory test's region flipped between a pass's write and its
read (--inject ...,target=memory,element=W,bit=B,pass=P): the run must fail, and the failing slice's reading
(the test's note) must name that pass, the flipped bit, the word's byte offset in the region and the SM that
read it. The word lies inside what the emulated device sweeps too (slices x cpu_slice_words words). A battery
without the memory test's boot case gets none (said in a line; the summary counts them).

  scripts/gpu-drills.py --sdcscreen build/sdcscreen [--count 120] [--replay-drills 12] [--memory-drills 4]
                        [--seed N] [--device 0] [--json FILE]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

# The families drilled: those that run on GPUs with a golden the screen compares an output with on its own
# (exact and exact-integer modes), except the cuBLASLt ones (id suffix _cublaslt): a library kernel cannot
# say which SM computed a tile (src/backends/cuda/lt_gemm_device.h), and these drills localize to SMs.
# Families and geometry come from the binary itself (list --output-format json).
DRILLED_MODES = {"exact", "exact-integer"}


# The replays (train_step_f32, and train_step_bf16 in mixed precision) are drilled apart: their tiles are whole
# replays by the whole GPU, so no SM is named either; their drills flip a submodule's output inside the step,
# taking the two boot cases in turn.
REPLAY_PREFIX = "train_step_"
REPLAY_CASES = ["train_step_f32.l12_tiny", "train_step_bf16.l12_tiny", "train_step_f32.l12_tiny_tp2",
                "train_step_bf16.l3_tiny_8_tc"]
# Submodules every preset has (layer 0 exists in every model), with the output drilled: forward and backward,
# matmuls, norms, attention, the loss, the embedding's scatter-add.
REPLAY_SITES = [("embed.forward", 0), ("layer0.attn_norm.forward", 0), ("layer0.attn.wq.forward", 0),
                ("layer0.attn.rope_k.forward", 0), ("layer0.attn.core.forward", 0), ("layer0.mlp.swiglu.forward", 0),
                ("final_norm.forward", 0), ("loss.forward", 0), ("lm_head.backward", 1), ("layer0.mlp.down.backward", 0),
                ("layer0.attn.core.backward", 2), ("layer0.attn_norm.backward", 1), ("embed.backward", 0)]
# A tensor-parallel case's drills hit one rank's partial (on one GPU, which computes every rank: the report names the
# rank's submodule); its own sites, a forward and a backward split.
TP_SITES = [("layer0.attn.wo.rank1.forward", 0), ("layer0.mlp.gate.rank0.backward", 0), ("layer0.mlp.down.rank1.forward", 0)]
# The recorded tensor-core replay (mode recorded: judged by its recording, or until there is one by its own repeats
# agreeing) compares level 3 only, each step's loss and parameter digest: its drills must fail step 0. Its sites are
# ones no mask can hide (a flip in a query of the first token changes nothing: that token attends to itself alone).
L3_SITES = [("embed.forward", 0), ("final_norm.forward", 0), ("layer0.mlp.down.backward", 0)]


# The memory test's boot case and the passes its drills pick from (kernels/memtest_u32/memtest_u32.h, pass_name).
MEMTEST = "memtest_u32"
MEMTEST_PASSES = ["walking_ones", "walking_zeros", "inversions_00_up", "inversions_ff_down", "inversions_55_up",
                  "inversions_aa_down", "address", "address_inverse"]


def drilled(family):
    # The emulated device (tests) runs the project's kernels in any build, which lists no "cuda" without CUDA.
    on_gpu = "cuda" in family["backends"] or (BACKEND != "cuda" and family["device_side"] == "kernel")
    return on_gpu and not family["id"].endswith("_cublaslt") and not family["id"].startswith(REPLAY_PREFIX)


def listing(binary, patterns):
    p = subprocess.run([binary, "list", "--patterns", patterns, "--output-format", "json"], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        sys.exit(f"gpu-drills: {binary} list --output-format json: exit {p.returncode} {p.stderr.strip()}")
    return json.loads(p.stdout)


BACKEND = "cuda"  # --backend: the tests run this script on the emulated device


def device_sm_ids(report, device):
    """The SM ids that computed tiles on CUDA device `device` in a run's JSON report (units[] of kind sm with
    tiles): the ids the device really uses, in increasing order. units[] lists every id below %nsmid, idle
    ones (no tiles) too, so the count of SMs says nothing about which ids exist."""
    return sorted({u["sm"] for u in report.get("units", [])
                   if u.get("kind") == "sm" and u.get("gpu", u.get("device")) == device and u.get("tiles", 0) > 0})


def id_ranges(ids):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out, start = [], None
    for i, x in enumerate(ids):
        if start is None:
            start = x
        if i + 1 == len(ids) or ids[i + 1] != x + 1:
            out.append(str(start) if start == x else f"{start}-{x}")
            start = None
    return ",".join(out)


def not_applicable(rep):
    """Whether the GPU cannot run the report's one test at all (fp8 before compute capability 8.9)."""
    return bool(rep and rep["tests"] and rep["tests"][0]["result"] in ("not_applicable", "skip")
                and "not applicable" in rep["tests"][0].get("reason", ""))


def drop_family(cases, family, rep, device, inapplicable):
    """A family this GPU cannot run is no drill: its cases leave the draw, and the JSON names it."""
    inapplicable.append(family)
    print(f"n/a {family} on cuda:{device}: {rep['tests'][0]['reason']}", flush=True)
    return [c for c in cases if c["family"] != family]


def settle(drills, bad, spec, why, **extra):
    """One drill's outcome: kept in its list (with `extra`), printed, and its spec added to `bad` when it failed."""
    drills.append({"spec": spec, **extra, "ok": not why, "why": why})
    print(f"{'ok ' if not why else 'BAD'} {spec}{'' if not why else ': ' + '; '.join(why)}", flush=True)
    if why:
        bad.append(spec)


def run(binary, args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([binary, "run", "--backend", BACKEND, "--force", "-q", "--output-format", "json", "-o", out, *args],
                           capture_output=True, text=True, timeout=600)
        rep = json.load(open(out)) if os.path.exists(out) else None
        return p.returncode, rep, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdcscreen", required=True)
    ap.add_argument("--patterns", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "patterns"))
    ap.add_argument("--count", type=int, default=120)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--replay-drills", type=int, default=len(REPLAY_SITES))
    ap.add_argument("--memory-drills", type=int, default=4)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--backend", default="cuda", help=argparse.SUPPRESS)  # tests: emulated:SPEC
    a = ap.parse_args()
    global BACKEND
    BACKEND = a.backend
    rnd = random.Random(a.seed)
    listed = listing(a.sdcscreen, a.patterns)
    on_gpu = {f["id"] for f in listed["families"] if drilled(f)}
    cases = [c for c in listed["cases"] if c["family"] in on_gpu and c["mode"] in DRILLED_MODES and "boot" in c["iterations"]]
    if not cases:
        sys.exit("gpu-drills: no boot case of an exact or exact-integer family runs on GPUs in this build")
    # A clean run of the case with the most tiles (the first of them): it must pass, and the SMs that computed
    # its tiles are the ids SM drills choose from.
    inapplicable = []
    while True:
        if not cases:
            sys.exit(f"gpu-drills: no drilled family runs on cuda:{a.device} (not applicable: {', '.join(inapplicable)})")
        widest = max(cases, key=lambda c: c["geometry"]["tile_count"])
        code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable", widest["id"]])
        if not rep or not rep["devices"]:
            sys.exit(f"gpu-drills: cannot run on cuda:{a.device}: exit {code} {err.strip()}")
        if not_applicable(rep):
            cases = drop_family(cases, widest["family"], rep, a.device, inapplicable)
            continue
        break
    if code != 0:
        sys.exit(f"gpu-drills: the clean run of {widest['id']} on cuda:{a.device} did not pass: exit {code} {err.strip()[:300]}")
    sm_ids = device_sm_ids(rep, a.device)
    if not sm_ids:
        sys.exit(f"gpu-drills: the clean run of {widest['id']} on cuda:{a.device} names no SM that computed a tile")
    sm_count = rep["devices"][0].get("sm_count")
    print(f"cuda:{a.device}: {len(sm_ids)} SM ids computed tiles of {widest['id']} ({sm_count} SMs): "
          f"{id_ranges(sm_ids)}", flush=True)
    results, bad = [], []
    i = 0
    while i < a.count and cases:
        c = cases[i % len(cases)] if i < len(cases) else rnd.choice(cases)
        g = c["geometry"]
        outputs, tiles = g["output_elements"], g["tile_count"]
        # Half the element drills hit an element whose tile the listing names (the report must say that
        # tile too), the others any element of the output.
        sample = rnd.choice(g["elements"]) if rnd.random() < 0.5 else None
        firsts = [e for e in g["elements"] if e.get("offset") == 0]  # tiles' offset 0, as the listing names them
        cluster = i % 4 == 1 and bool(firsts)  # every fourth drill, the second first
        if cluster:
            sample = rnd.choice(firsts)
        element = sample["element"] if sample else rnd.randrange(outputs)
        bit = rnd.randrange(32)
        by_sm = not cluster and tiles >= 4 * len(sm_ids) and rnd.random() < 0.3  # every SM surely gets tiles
        spec = f"case={c['id']},element={element},bit={bit},device={a.device}"
        if cluster:
            count = min(32, g["tile_elements"])
            mask = rnd.randrange(1, 1 << 32) | (1 << rnd.randrange(32))
            while bin(mask).count("1") < 2:
                mask |= 1 << rnd.randrange(32)
            spec = f"case={c['id']},element={element},mask=0x{mask:08x},count={count},device={a.device}"
        if by_sm:
            spec += f",unit={rnd.choice(sm_ids)}"
        code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable", c["id"], "--inject", spec])
        if not_applicable(rep):
            cases = drop_family(cases, c["family"], rep, a.device, inapplicable)
            continue
        i += 1
        why = []
        if code != 1:
            why.append(f"exit {code} ({err.strip()[:200]})")
        if rep:
            inj, t = rep["injections"][0], rep["tests"][0]
            ms = t["miscompares"]
            if not inj["fired"]:
                why.append("did not fire")
            elif cluster:
                ok = (t["failed_tiles"] == 1 and t["miscompared_elements"] == count and ms and
                      all(m["tile"] == sample["tile"] and m["xor_mask"] == f"0x{mask:08x}" and
                          m["unit"] == {"kind": "sm", "gpu": a.device, "sm": inj["fired_unit"]} for m in ms) and
                      t["units_failed"] == [inj["fired_unit"]])
                if not ok:
                    why.append(f"cluster mislocalized: {t['miscompared_elements']} words, want {count}: {json.dumps(ms[:2])}")
            elif by_sm:
                sm = inj["unit"]
                if t["units_failed"] != [sm]:
                    why.append(f"units_failed {t['units_failed']}, injected SM {sm}")
                if not ms or any(m["unit"]["sm"] != sm or m["xor_mask"] != f"0x{1 << bit:08x}" for m in ms):
                    why.append("a miscompare not on the injected SM or with another mask")
            else:
                mask = f"0x{1 << bit:08x}"
                ok = (t["failed_tiles"] == 1 and t["miscompared_elements"] == 1 and len(ms) == 1 and
                      ms[0]["element"] == element and ms[0]["xor_mask"] == mask and
                      ms[0]["unit"] == {"kind": "sm", "gpu": a.device, "sm": inj["fired_unit"]} and
                      t["units_failed"] == [inj["fired_unit"]])
                if ok and sample:
                    ok = ms[0]["tile"] == sample["tile"]
                if not ok:
                    why.append(f"mislocalized: {json.dumps(ms[:2])} units_failed {t['units_failed']} fired_unit {inj['fired_unit']}")
        else:
            why.append("no report")
        settle(results, bad, spec, why, family=c["family"], by_sm=by_sm, cluster=cluster)
    replay = []
    replay_cases = [r for r in REPLAY_CASES if any(c["id"] == r for c in listed["cases"])]
    if a.replay_drills and replay_cases:
        for i in range(a.replay_drills):
            case = replay_cases[i % len(replay_cases)]
            level3 = ".l3_" in case
            sites = TP_SITES if "_tp" in case else L3_SITES if level3 else REPLAY_SITES
            sub, out = sites[i % len(sites)]
            element, bit = rnd.randrange(32), rnd.randrange(18, 23)  # every output has 32 elements or more
            spec = f"case={case},submodule={sub},output={out},element={element},bit={bit},device={a.device}"
            # --enable-any: the tensor-parallel case is not in the boot profile (its standard iterations run).
            code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable-any", case, "--inject", spec])
            why = []
            if code != 1:
                why.append(f"exit {code} ({err.strip()[:200]})")
            if rep:
                t = rep["tests"][0]
                ms = t["miscompares"]
                if not rep["injections"][0]["fired"]:
                    why.append("did not fire")
                if t["failed_tiles"] != 1:
                    why.append(f"{t['failed_tiles']} failed tiles, want replica 0 alone")
                want = "replica 0: L3 step 0 " if level3 else f"replica 0: L1 {sub} mb 0 out {out} digest."
                if not ms or not ms[0]["element_name"].startswith(want):
                    why.append(f"first failing slot {ms[0]['element_name'] if ms else None}, want {want}*")
            else:
                why.append("no report")
            settle(replay, bad, spec, why)
    memory = []
    mem_case = next((c for c in listed["cases"] if c["family"] == MEMTEST and "boot" in c["iterations"]), None)
    for i in range(a.memory_drills if mem_case else 0):
        dims = mem_case["shape"]
        element = rnd.randrange(dims["slices"] * dims["cpu_slice_words"])
        bit, pas = rnd.randrange(32), MEMTEST_PASSES[i % len(MEMTEST_PASSES)]
        spec = f"case={mem_case['id']},target=memory,element={element},bit={bit},pass={pas},device={a.device}"
        code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable", mem_case["id"], "--inject", spec])
        why = []
        if code != 1:
            why.append(f"exit {code} ({err.strip()[:200]})")
        if rep:
            t = rep["tests"][0]
            want = [f"pass {pas} ", f"(bits 0x{1 << bit:08x})", f"region offset 0x{4 * element:x}", "read by SM"]
            if not any(n.startswith("memory test slice") and all(w in n for w in want) for n in t.get("notes", [])):
                why.append(f"no reading naming {want}: {[n for n in t.get('notes', []) if 'memory test' in n][:2]}")
        else:
            why.append("no report")
        settle(memory, bad, spec, why)
    if a.memory_drills and not mem_case:  # a battery without the memory test (the scripts' tests' stub battery)
        print(f"no {MEMTEST} boot case in this battery: no memory drills", flush=True)
    if len(results) < a.count:  # every family left was not applicable: fewer drills ran than asked, never a pass
        print(f"BAD only {len(results)} of {a.count} drills could run on cuda:{a.device}", flush=True)
        bad.append(f"{a.count - len(results)} drills not run")
    families = sorted({r["family"] for r in results})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"drills": results, "replay_drills": replay, "memory_drills": memory, "sm_count": sm_count,
                       "sm_ids": sm_ids,
                       "not_applicable": sorted(set(inapplicable))}, f, indent=1)
    n_sm = sum(r["by_sm"] for r in results)
    n_ok = len(results) + len(replay) + len(memory) - len(bad)
    print(f"{len(results)} drills ({n_sm} on whole SMs) over {len(families)} famil{'y' if len(families) == 1 else 'ies'}, {len(replay)} replay drills "
          f"and {len(memory)} memory drills: {n_ok} detected and localized, {len(bad)} not")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

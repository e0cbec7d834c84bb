#!/usr/bin/env python3
"""Random output-fault drills on a GPU: each drill runs one battery case with one --inject and checks that
the fault was detected (exit 1) and localized: an element drill must be the only miscompare, at the injected
element, with the injected xor mask, on the SM the injection fired on; an SM drill (unit=SM) must fail on
that SM alone, every listed miscompare with the injected mask. Input faults are not drilled here: a flipped
input can be masked legitimately (an exp that underflows either way), so "every drill detected" would not
be a property of a correct screen.

  scripts/gpu-drills.py --sdcscreen build/sdcscreen [--count 120] [--seed N] [--device 0] [--json FILE]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

# Output elements and elements per tile of each family, from the shape (see kernels/<family>/<family>.h).
GEOMETRY = {
    "gemm_f32": lambda s: (s["m"] * s["n"], 4096),
    "attention_f32": lambda s: (s["heads"] * s["seq"] * s["dim"], 32 * s["dim"]),
    "attention_bf16_exactint": lambda s: (s["heads"] * s["seq"] * s["dim"], 64 * s["dim"]),
    "reduce_sum_f32": lambda s: (s["rows"], 16),
    "softmax_f32": lambda s: (s["rows"] * s["cols"], 4 * s["cols"]),
    "rmsnorm_f32": lambda s: (s["rows"] * s["cols"], 4 * s["cols"]),
    "cross_entropy_f32": lambda s: (s["tokens"] + s["tokens"] // 16, 17),
}
ROW_CONTIGUOUS = {"attention_f32", "attention_bf16_exactint", "reduce_sum_f32", "softmax_f32", "rmsnorm_f32"}
for f in ("bf16", "f16", "tf32", "fp8"):
    GEOMETRY[f"gemm_{f}_exactint"] = lambda s: (s["m"] * s["n"], 4096)


def run(binary, args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([binary, "run", "--backend", "cuda", "--force", "-q", "--output-format", "json", "-o", out, *args],
                           capture_output=True, text=True, timeout=600)
        rep = json.load(open(out)) if os.path.exists(out) else None
        return p.returncode, rep, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdcscreen", required=True)
    ap.add_argument("--patterns", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "patterns"))
    ap.add_argument("--count", type=int, default=120)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    battery = json.load(open(os.path.join(a.patterns, "battery.json")))
    cases = [c for c in battery["cases"] if c["family"] in GEOMETRY and "boot" in c["iterations"]]
    code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable", cases[0]["id"]])
    if not rep or not rep["devices"]:
        sys.exit(f"gpu-drills: cannot run on cuda:{a.device}: exit {code} {err.strip()}")
    sms = rep["devices"][0]["sm_count"]
    families = sorted({c["family"] for c in cases})
    results, bad = [], []
    for i in range(a.count):
        c = cases[i % len(cases)] if i < len(cases) else rnd.choice(cases)
        outputs, per_tile = GEOMETRY[c["family"]](c["shape"])
        tiles = outputs // per_tile
        element = rnd.randrange(outputs)
        bit = rnd.randrange(32)
        by_sm = tiles >= 4 * sms and rnd.random() < 0.3  # every SM surely gets tiles
        spec = f"case={c['id']},element={element},bit={bit},device={a.device}"
        if by_sm:
            spec += f",unit={rnd.randrange(sms)}"
        code, rep, err = run(a.sdcscreen, ["--devices", str(a.device), "--enable", c["id"], "--inject", spec])
        why = []
        if code != 1:
            why.append(f"exit {code} ({err.strip()[:200]})")
        if rep:
            inj, t = rep["injections"][0], rep["tests"][0]
            ms = t["miscompares"]
            if not inj["fired"]:
                why.append("did not fire")
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
                      ms[0]["unit"] == {"kind": "sm", "device": a.device, "sm": inj["fired_unit"]} and
                      t["units_failed"] == [inj["fired_unit"]])
                if ok and c["family"] in ROW_CONTIGUOUS:  # tiles are consecutive runs of the output
                    ok = ms[0]["tile"] == element // per_tile
                if not ok:
                    why.append(f"mislocalized: {json.dumps(ms[:2])} units_failed {t['units_failed']} fired_unit {inj['fired_unit']}")
        else:
            why.append("no report")
        results.append({"spec": spec, "family": c["family"], "by_sm": by_sm, "ok": not why, "why": why})
        print(f"{'ok ' if not why else 'BAD'} {spec}{'' if not why else ': ' + '; '.join(why)}", flush=True)
        if why:
            bad.append(spec)
    if a.json:
        json.dump({"drills": results, "sm_count": sms}, open(a.json, "w"), indent=1)
    n_sm = sum(r["by_sm"] for r in results)
    print(f"{len(results)} drills ({n_sm} on whole SMs) over {len(families)} families: "
          f"{len(results) - len(bad)} detected and localized, {len(bad)} not")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

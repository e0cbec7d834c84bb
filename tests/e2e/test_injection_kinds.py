"""The drill kinds beyond one flipped bit (src/spec/fault.h, docs/fleet.md "Drills"), end to end on CPUs, for
every family that runs on them: each is detected, in the tile and on the unit it was aimed at, and changes
exactly the words it names.

Per family, on one boot case:
  * a multi-bit flip over a warp-aligned cluster (count=32 from a tile's offset 0, or the whole tile when it is
    smaller) on cpu 0: exactly that many words differ, all in that tile, each by the mask, on cpu 0;
  * the same bit stuck at 1 and stuck at 0 over a cluster periodic in address (count=8, a stride that spreads it
    over the tile): without knowing the outputs, the two runs' differing words are disjoint and together the whole
    cluster (a word differs under exactly one of them), and each differs as its kind says (actual = expected | mask,
    or expected & ~mask); a run whose stuck-at fault changed nothing says so (fired, masked, exit 2);
  * in an input tensor, a flip of bit 30 and a stuck-at-1 of the exponent bits over a few elements of the tensor:
    detected, and every differing output depends on one of them (the dependency model of injection_model.py).
And malformed drills of the new keys are refused with exit 64 and a line naming the problem.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from injection_model import Geometry, is_f64  # noqa: E402

FAMILIES = [f for f in common.CPU_FAMILIES if not f.startswith("train_step_")]  # a replay's drills: test_replay.py
STUCK_BIT = 22  # a mantissa bit: 0 in some words of a tile and 1 in others


def word(m, key):
    return int(m[key], 16)


def tile_sample(case_id):
    """A tile's offset 0 as the binary lists it (list --output-format json): (element, tile, tile_elements)."""
    geo = common.CASES[case_id]["geometry"]
    firsts = [e for e in geo["elements"] if e["offset"] == 0]
    e = firsts[len(firsts) // 2]
    return e["element"], e["tile"], geo["tile_elements"]


def drill(F, case_id, spec):
    rc, rep, err = common.run_json("--enable", case_id, "--inject", spec, timeout=300)
    tests = (rep or {}).get("tests", [])
    t = tests[0] if len(tests) == 1 else {}
    inj = (rep or {}).get("injections", [{}])
    F.check(len(inj) == 1 and inj[0].get("fired") is True, f"{spec}: not reported as fired: {inj}; {err.strip()[-300:]}")
    # The run's own errors (a masked drill says so there; -q keeps stderr quiet) follow stderr.
    return rc, t, (inj[0] if inj else {}), err + "\n".join((rep or {}).get("errors", []))


def output_cluster(F, g, rng):
    el, tile, te = tile_sample(g.id)
    count = min(32, te)
    while True:
        mask = rng.randrange(1, 1 << 32)
        if bin(mask).count("1") >= 2:
            break
    spec = f"case={g.id},element={el},mask=0x{mask:08x},count={count},unit=0"
    rc, t, inj, err = drill(F, g.id, spec)
    F.check(rc == 1 and t.get("result") == "fail", f"{spec}: ESCAPE: exit {rc}, {t.get('result')}: {err.strip()[-300:]}")
    F.check((inj.get("fault"), inj.get("count"), inj.get("stride")) == ("flip", count, 1),
            f"{spec}: the report's injection says {inj}")
    F.check(t.get("miscompared_elements") == count and t.get("failed_tiles") == 1,
            f"{spec}: {t.get('miscompared_elements')} words in {t.get('failed_tiles')} tiles, want {count} in 1")
    F.check(t.get("units_failed") == [0], f"{spec}: units_failed {t.get('units_failed')}, want [0]")
    mis = t.get("miscompares", [])
    F.check(len(mis) > 0 and all(m["tile"] == tile and word(m, "xor_mask") == mask for m in mis),
            f"{spec}: listed miscompares outside tile {tile} or not by the mask: {mis[:3]}")
    F.check(any(m["element"] == el for m in mis), f"{spec}: the cluster's first word (element {el}) is not listed")
    value64(F, g, spec, mis)


def ulps64(a, b):
    sign = 1 << 63
    ma, mb = a & ~sign, b & ~sign
    return abs(ma - mb) if (a & sign) == (b & sign) else min(ma + mb, (1 << 64) - 1)


def value64(F, g, spec, mis):
    """A binary64 family's miscompare carries its whole value (value64), whose halves are the word's pair."""
    for m in mis:
        v = m.get("value64")
        if not is_f64(g.family):
            F.check(v is None, f"{spec}: an fp32 family's miscompare has value64 {v}")
            continue
        if not F.check(isinstance(v, dict), f"{spec}: {m['element_name']} has no value64"):
            continue
        x, a = int(v["expected"], 16), int(v["actual"], 16)
        shift = 32 if m["element"] % 2 else 0  # .hi is the value's high half
        F.check((x >> shift) & 0xFFFFFFFF == word(m, "expected") and (a >> shift) & 0xFFFFFFFF == word(m, "actual"),
                f"{spec}: {m['element_name']} value64 {v} does not hold its word {m['expected']}/{m['actual']}")
        F.check(int(v["xor_mask"], 16) == x ^ a and v["ulps"] == ulps64(x, a) and x != a,
                f"{spec}: {m['element_name']} value64 {v}: xor or ulps wrong")


def output_stuck_pair(F, g):
    el, tile, te = tile_sample(g.id)
    count = min(8, te)
    stride = max(1, (te - 1) // (count - 1)) if count > 1 else 1
    mask = 1 << STUCK_BIT
    seen = {}
    for stuck in (1, 0):
        spec = f"case={g.id},element={el},bit={STUCK_BIT},stuck={stuck},count={count},stride={stride},unit=1"
        rc, t, inj, err = drill(F, g.id, spec)
        F.check(inj.get("fault") == f"stuck-at-{stuck}", f"{spec}: the report's injection says {inj}")
        n = t.get("miscompared_elements", 0)
        if n == 0:  # every word of the cluster already held the stuck value
            F.check(rc == 2 and "masked" in err, f"{spec}: changed nothing but exit {rc}, not a masked drill: {err[-200:]}")
            seen[stuck] = (0, set())
            continue
        F.check(rc == 1 and t.get("failed_tiles") == 1 and t.get("units_failed") == [1],
                f"{spec}: exit {rc}, {t.get('failed_tiles')} tiles, units {t.get('units_failed')}")
        mis = t.get("miscompares", [])
        for m in mis:
            x, a = word(m, "expected"), word(m, "actual")
            F.check(m["tile"] == tile and a == ((x | mask) if stuck else (x & ~mask)),
                    f"{spec}: {m['element_name']} expected {m['expected']} actual {m['actual']} is not stuck-at-{stuck}")
        seen[stuck] = (n, {m["element"] for m in mis})
    if len(seen) == 2:
        F.check(seen[0][0] + seen[1][0] == count,
                f"{g.id}: stuck-at-0 changed {seen[0][0]} and stuck-at-1 {seen[1][0]} of the cluster's {count} words")
        F.check(not (seen[0][1] & seen[1][1]), f"{g.id}: a word differs under both stuck-at-0 and stuck-at-1")


def input_drills(F, g):
    if not g.tensors:  # the memory test reads no input: its drills in memory are test_memtest.py's
        return
    tensor = sorted(g.tensors)[0]
    n = g.tensors[tensor][1]
    # fp64: the high words (odd elements), which carry the exponent; two words a value.
    first, stride = (1, 2) if is_f64(g.family) else (0, 1)
    first += 2 * (n // 4 // 2)  # away from the tensor's start
    count = 3
    els = [first + k * stride for k in range(count)]
    deps = [g.dependents(tensor, e)[0] for e in els]
    drills = [f"mask=0x7f800000,stuck=1"]  # inf or NaN, in every family
    if g.family != "attention_bf16_exactint":  # its softmax can hide a finite input's change (test_injection.py)
        drills.append("bit=30")  # a value of at least 2 (|x| < 1 before), out of every sum's reach
    for kind in drills:
        spec = f"case={g.id},target=input,tensor={tensor},element={first},{kind},count={count}" + (
            f",stride={stride}" if stride > 1 else "")
        rc, t, inj, err = drill(F, g.id, spec)
        F.check(rc == 1 and t.get("result") == "fail", f"{spec}: ESCAPE: exit {rc}, {t.get('result')}: {err.strip()[-300:]}")
        for m in t.get("miscompares", []):
            F.check(any(d(m["element"]) for d in deps),
                    f"{spec}: {m['element_name']} (element {m['element']}) reads none of {tensor}{els}")


def refused(F):
    g = common.CASES[next(c["id"] for c in common.battery()["cases"] if c["family"] == "gemm_f32")]
    el, tile, te = tile_sample(g["id"])
    bad = {
        f"case={g['id']},element={el},bit=3,stuck=2": "stuck '2' is not 0 or 1",
        f"case={g['id']},element={el},bit=3,count=0": "count '0' is not an integer in 1..1024",
        f"case={g['id']},element={el},bit=3,count=1025": "count '1025' is not an integer in 1..1024",
        f"case={g['id']},element={el},bit=3,stride=4": "stride= needs count=N with N >= 2",
        f"case={g['id']},element={el},bit=3,count=2,stride={te}": "runs past the end of its tile",
        f"case={g['id']},target=input,tensor=a,element=0,bit=3,count=3,stride={1 << 30}": "runs past the end of input a",
    }
    for spec, want in bad.items():
        p = common.run("run", "--enable", g["id"], "--inject", spec)
        F.check(p.returncode == 64 and want in p.stderr and len(p.stderr.strip().splitlines()) == 1,
                f"--inject {spec}: exit {p.returncode}, want 64 and one line with '{want}': {p.stderr.strip()[-300:]}")


def main():
    F = common.Failures("test_injection_kinds")
    cpus = sorted(os.sched_getaffinity(0))
    F.check(0 in cpus and 1 in cpus, f"these drills name cpus 0 and 1 (have {cpus})")
    rng = random.Random(20261126)
    boot = [c for c in common.battery()["cases"] if "boot" in c.get("iterations", {})]
    # Under a sanitizer (SDC_SANITIZED) each family takes one of the three kinds of drill, in turn, so that every
    # kind runs instrumented on several families (coverage, not volume); the release suite drills every family
    # with all three.
    sanitized = bool(os.environ.get("SDC_SANITIZED"))
    drills = (output_cluster, lambda F, g, rng: output_stuck_pair(F, g), lambda F, g, rng: input_drills(F, g))
    for i, f in enumerate(FAMILIES):
        cases = [c for c in boot if c["family"] == f]
        uniform = [c for c in cases if c["distribution"] == "uniform"]
        if not F.check(bool(uniform), f"no uniform boot case of {f}"):
            continue
        g = Geometry(uniform[0])
        for k, drill in enumerate(drills):
            if not sanitized or k == i % len(drills):
                drill(F, g, rng)
        print(f"  {f}: drilled", flush=True)
    refused(F)
    F.finish()


if __name__ == "__main__":
    main()

"""Fault-injection drill, end to end: random single-bit (and a few multi-bit) faults in the outputs and in the
inputs of every boot case family must all be detected (no escape) and attributed to the right tile, element,
unit and iteration (no mislocalization).

Everything expected here is derived independently of the tool, in Python:
  * the output geometry of every family (logical element -> tile) from the kernels' spec headers (and checked
    against the binary's own, 'list --output-format json', which also gives the families to drill);
  * which outputs depend on which input element (the dependency set of an input fault);
  * the input values, by a reimplementation of the counter-based generator (src/spec/generator.h, and
    src/spec/f64.h's for the fp64 families, whose values are two 32-bit words each), used to
    skip input faults that cannot change any output (a flipped zero, a flip absorbed by rounding, a query
    that the causal mask leaves with a single key);
  * the schedule, by a model of the CPU executor's (src/backends/cpu/cpu_executor.cpp): tile t goes to worker
    (t + rotation) mod W, rotation = mix64(seed ^ hash(case id)) + iteration, except that a fault on a named
    unit pins work to it (an output fault its tile, an input fault every tile of the faulty iteration). It
    predicts the unit of faults given without unit=, and which tiles an input fault must make fail.
"""
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from injection_model import (Geometry, attention_bf16_q_exponent, int8_of, is_exactint, ulp_distance,  # noqa: E402
                             uniform_value, uniform_value_f64, uniform_word_i8, visible_input_flip, worker_of)

RNG_SEED = 20261121
# Under a sanitizer (SDC_SANITIZED) 60: every family in outputs and inputs, with and without unit= and mask=,
# twice or more each; what a sanitizer looks for does not grow with the count. The release suite runs 200, the
# count the detection statistics need (the other drill kinds: test_injection_kinds.py).
SANITIZED = bool(os.environ.get("SDC_SANITIZED"))
N_INJECTIONS = 60 if SANITIZED else 200
# These drills run on CPUs: the GPU-only families are drilled on GPUs. The training-step replay has no input
# or output geometry this model knows (a tile is a whole replay): test_replay.py drills it.
FAMILIES = [f for f in common.CPU_FAMILIES if not f.startswith("train_step_")]
# The families whose output words are int32s (Family::int32_outputs), which reports read as integers.
INT32_FAMILIES = ("gemm_i8", "memtest_u32")


# ---- the drill ------------------------------------------------------------------------------------------------

def main():
    fails = common.Failures("test_injection")
    rng = random.Random(RNG_SEED)
    cases = common.battery()["cases"]
    boot = [c for c in cases if "boot" in c.get("iterations", {})]
    cpus = sorted(os.sched_getaffinity(0))
    workers = len(cpus)
    units = [u for u in (0, 1) if u in cpus]
    fails.check(len(units) == 2, f"these tests expect logical CPUs 0 and 1 to be available (have {cpus})")

    by_family = {f: [Geometry(c) for c in boot if c["family"] == f] for f in FAMILIES}
    for f in FAMILIES:
        fails.check(bool(by_family[f]), f"no boot case of family {f}")
        fails.check(any(g.case["distribution"] == "uniform" for g in by_family[f]),
                    f"no uniform-distribution boot case of family {f} (input faults use those)")
        for g in by_family[f]:  # the model agrees with the binary's own geometry (list --output-format json)
            listed = common.CASES[g.id]["geometry"]
            fails.check((listed["tile_count"], listed["output_elements"]) == (g.tiles, g.outputs),
                        f"{g.id}: the model has {g.tiles} tiles of {g.outputs} outputs, the binary lists {listed}")
            fails.check({t["name"]: t["elements"] for t in listed["inputs"]} == {n: e for n, (_, e) in g.tensors.items()},
                        f"{g.id}: the model's inputs {g.tensors} are not the listed {listed['inputs']}")
            for e in listed["elements"]:
                fails.check(g.tile_of(e["element"]) == e["tile"], f"{g.id}: the model puts element {e} in tile "
                                                                  f"{g.tile_of(e['element'])}")
    if fails.items:
        fails.finish()

    totals = {"injections": 0, "detected": 0, "escapes": 0, "mislocalized": 0}
    per_family = {f: [0, 0] for f in FAMILIES}  # output, input
    counters = {"no_unit": 0, "mask": 0, "default_iteration": 0}
    t_start = time.time()

    for n in range(N_INJECTIONS):
        family = FAMILIES[n % len(FAMILIES)]
        # A family without inputs (the memory test: its drills in memory are test_memtest.py's) takes output drills.
        output = (n // len(FAMILIES)) % 2 == 0 or not by_family[family][0].tensors
        seed = rng.randrange(1, 1 << 40)
        kind = rng.random()
        no_unit = kind < 0.15
        default_iteration = 0.15 <= kind < 0.25
        unit = None if no_unit else rng.choice(units)
        iteration = 0 if default_iteration else rng.choice([0, 1])

        if output:
            g = rng.choice(by_family[family])
            el = rng.randrange(g.outputs)
            edge = rng.random()
            if edge < 0.1:  # the first and the last output element
                el = 0 if edge < 0.05 else g.outputs - 1
            elif family == "cross_entropy_f32" and edge < 0.4:  # the per-tile partials, past the token losses
                el = g.tokens + rng.randrange(g.tiles)
            if rng.random() < 0.15:
                while True:
                    mask = rng.randrange(1, 1 << 32)
                    if bin(mask).count("1") >= 2:
                        break
                bitspec = f"mask=0x{mask:08x}"
            else:
                bit = rng.randrange(32)
                mask = 1 << bit
                bitspec = f"bit={bit}"
            spec = f"case={g.id},element={el},{bitspec}"
            tensor = None
        elif family == "attention_bf16_exactint":
            # Provable in this pattern: every exponent bit of one Q element set makes it inf or NaN, so every
            # score of its query row is inf or NaN, the row's softmax NaN (inf - inf, or NaN itself) and each of
            # its dim outputs NaN; no other row reads it. Its exponent comes from the generator's model above.
            g = next(x for x in by_family[family] if x.case["distribution"] == "uniform")
            tensor = "q"
            el = rng.randrange(g.tensors["q"][1])
            mask = ((attention_bf16_q_exponent(g.seed, g.s, g.d, el) + 127) ^ 0xFF) << 23
            mask |= 0x80000000 if rng.random() < 0.3 else 0
            bitspec = f"mask=0x{mask:08x}"
            spec = f"case={g.id},target=input,tensor={tensor},element={el},{bitspec}"
        else:
            g = next(x for x in by_family[family] if x.case["distribution"] == "uniform")
            for _attempt in range(10000):
                tensor = rng.choice(sorted(g.tensors))
                el = rng.randrange(g.tensors[tensor][1])
                r = rng.random()
                mask = 0xC0000000 if r < 0.1 else (1 << 30) if r < 0.3 else 1 << 31
                if not visible_input_flip(g, tensor, el, mask):
                    continue
                break
            else:
                raise RuntimeError("could not draw an input fault")
            bitspec = f"mask=0x{mask:08x}" if mask == 0xC0000000 else f"bit={mask.bit_length() - 1}"
            spec = f"case={g.id},target=input,tensor={tensor},element={el},{bitspec}"
        if unit is not None:
            spec += f",unit={unit}"
        if not default_iteration:
            spec += f",iteration={iteration}"
        counters["no_unit"] += no_unit
        counters["mask"] += "mask=" in bitspec
        counters["default_iteration"] += default_iteration
        per_family[family][0 if output else 1] += 1

        rc, rep, err = common.run_json("--enable", g.id, "--inject", spec, "--seed", str(seed), timeout=300)
        totals["injections"] += 1
        where = f"[{n}] run --enable {g.id} --inject {spec} --seed {seed}"
        tests = (rep or {}).get("tests", [])
        t = tests[0] if len(tests) == 1 else {}
        mis = t.get("miscompares", [])
        detected = rc == 1 and t.get("result") == "fail" and len(mis) > 0
        fails.check(detected, f"{where}: ESCAPE: exit {rc}, result {t.get('result')}, {len(mis)} miscompares; {err.strip()}")
        if not detected:
            totals["escapes"] += 1
            continue
        totals["detected"] += 1

        before = len(fails.items)
        fails.check(len(tests) == 1 and t.get("id") == g.id, f"{where}: expected one test result for {g.id}")
        inj = rep.get("injections", [])
        fails.check(len(inj) == 1 and inj[0].get("fired") is True, f"{where}: injection not reported as fired: {inj}")
        fails.check(rep.get("fault_injection") is True, f"{where}: report not marked fault_injection")
        fails.check(rep.get("summary", {}).get("fail") == 1, f"{where}: summary.fail {rep.get('summary')}")
        unit_cpus = [u["cpu"] for u in rep.get("units", [])]
        fails.check(unit_cpus == cpus, f"{where}: units {unit_cpus}, expected {cpus} (the schedule model needs them)")
        for m in mis:
            fails.check(m.get("iteration") == iteration, f"{where}: miscompare iteration {m.get('iteration')} != {iteration}")
            fails.check(m.get("unit", {}).get("kind") == "cpu", f"{where}: miscompare unit kind {m.get('unit')}")
            e, x, a = m["element"], int(m["expected"], 16), int(m["actual"], 16)
            fails.check(int(m["xor_mask"], 16) == x ^ a and x != a, f"{where}: xor_mask {m['xor_mask']} != expected ^ actual")
            if g.family in INT32_FAMILIES:  # int32 outputs: read as integers, ulps the difference's magnitude
                xi, ai = (v - (1 << 32) if v >> 31 else v for v in (x, a))
                fails.check(m.get("int32") == {"expected": xi, "actual": ai, "difference": ai - xi},
                            f"{where}: int32 reading {m.get('int32')} of expected {x:#x} actual {a:#x}")
                fails.check(m.get("ulps") == abs(ai - xi), f"{where}: ulps {m.get('ulps')} != |{ai} - {xi}|")
            else:
                fails.check("int32" not in m, f"{where}: an fp32 family's miscompare read as int32")
                fails.check(m.get("ulps") == ulp_distance(x, a), f"{where}: ulps {m.get('ulps')} != {ulp_distance(x, a)}")
            fails.check(m.get("tile") == g.tile_of(e), f"{where}: element {e} reported in tile {m.get('tile')}, is in {g.tile_of(e)}")

        if output:
            tile = g.tile_of(el)
            exp_unit = unit if unit is not None else cpus[worker_of(g.id, seed, tile, iteration, workers)]
            fails.check(t.get("failed_tiles") == 1, f"{where}: failed_tiles {t.get('failed_tiles')} != 1")
            fails.check(t.get("miscompared_elements") == 1, f"{where}: miscompared_elements {t.get('miscompared_elements')} != 1")
            fails.check(len(mis) == 1, f"{where}: {len(mis)} miscompares listed, expected 1")
            m = mis[0]
            fails.check(m.get("element") == el, f"{where}: miscompare element {m.get('element')} != injected {el}")
            fails.check(m.get("tile") == tile, f"{where}: miscompare tile {m.get('tile')} != expected {tile}")
            fails.check(m.get("unit", {}).get("cpu") == exp_unit,
                        f"{where}: miscompare unit {m.get('unit')} != expected cpu {exp_unit}"
                        + ("" if unit is not None else " (from the schedule model)"))
            fails.check(int(m.get("xor_mask", "0"), 16) == mask, f"{where}: xor_mask {m.get('xor_mask')} != 0x{mask:08x}")
            fails.check(t.get("units_failed") == [exp_unit], f"{where}: units_failed {t.get('units_failed')} != [{exp_unit}]")
        else:
            dep, dep_tiles = g.dependents(tensor, el)
            eff_tiles = g.effective_tiles(tensor, el, mask)
            for m in mis:
                e, tl, mu = m["element"], m["tile"], m.get("unit", {}).get("cpu")
                fails.check(dep(e), f"{where}: miscompare {m.get('element_name')} (element {e}) does not depend on {tensor}[{el}]")
                fails.check(tl in dep_tiles, f"{where}: miscompare tile {tl} is not among the dependent tiles")
                # An input fault on a named unit pins every tile of its iteration to that unit; without unit=
                # every unit reads the corrupted tensor and the rotation decides.
                model_unit = unit if unit is not None else cpus[worker_of(g.id, seed, tl, iteration, workers)]
                if unit is not None:
                    fails.check(mu == unit, f"{where}: miscompare {m.get('element_name')} attributed to cpu {mu}, fault on {unit}")
                fails.check(mu == model_unit, f"{where}: miscompare tile {tl} attributed to cpu {mu}, schedule model says {model_unit}")
            if unit is not None:
                fails.check(t.get("units_failed") == [unit], f"{where}: units_failed {t.get('units_failed')} != [{unit}]")
            else:
                want = sorted({cpus[worker_of(g.id, seed, tl, iteration, workers)] for tl in eff_tiles})
                fails.check(t.get("units_failed") == want,
                            f"{where}: units_failed {t.get('units_failed')}, schedule model says {want}")
            # Every tile that reads the corrupted element is computed with the fault: each tile where the flip
            # provably changes an output must fail, and no tile outside the dependency set may.
            fails.check(len(eff_tiles) <= t.get("failed_tiles", 0) <= len(dep_tiles),
                        f"{where}: failed_tiles {t.get('failed_tiles')}, expected between {len(eff_tiles)} (tiles the "
                        f"flip must change) and {len(dep_tiles)} (tiles that read it)")
            # Tighter checks where the arithmetic makes the exact effect obvious.
            mx = [int(m["xor_mask"], 16) for m in mis]
            if g.family == "rmsnorm_f32" and mask == 1 << 31:
                fails.check(all(x == 0x80000000 for x in mx), f"{where}: a sign flip of rmsnorm {tensor} must flip output signs only: {mx}")
                if tensor == "x":  # x^2 is unchanged: exactly y[r][j] flips
                    fails.check(t.get("miscompared_elements") == 1 and mis[0]["element"] == el,
                                f"{where}: expected exactly y element {el} to flip, got {t.get('miscompared_elements')} elements")
                else:  # every y[r][j] of column j flips (no x[r][j] is zero: checked when drawn)
                    fails.check(t.get("miscompared_elements") == g.rows,
                                f"{where}: expected all {g.rows} elements of column {el} to flip, got {t.get('miscompared_elements')}")
            if g.family == "rmsnorm_f64" and mask == 1 << 31:
                # Bit 31 of a high word is the value's sign (src/spec/f64.h): as rmsnorm_f32's, in high words only.
                fails.check(all(x == 0x80000000 for x in mx) and all(m["element"] % 2 == 1 for m in mis),
                            f"{where}: a sign flip of rmsnorm_f64 {tensor} must flip the sign bits of high words only: {mx}")
                if tensor == "x":  # x^2 is unchanged: exactly y[r][j].hi flips, the word at x's own index
                    fails.check(t.get("miscompared_elements") == 1 and mis[0]["element"] == el,
                                f"{where}: expected exactly y word {el} to flip, got {t.get('miscompared_elements')} words")
                else:  # y[r][j].hi of every row r (no x[r][j] is zero: checked when drawn)
                    fails.check(t.get("miscompared_elements") == g.rows,
                                f"{where}: expected all {g.rows} values of column {el // 2} to flip, got {t.get('miscompared_elements')}")
            if g.family == "rmsnorm_f32" and mask == 1 << 31 and tensor == "x" and mis:
                # Cross-checks the Python generator: the sign of y[r][j] is sign(x[r][j]) * sign(w[j]).
                xv, wv = uniform_value(g.seed, 0, el), uniform_value(g.seed, 1, el % g.cols)
                fails.check((int(mis[0]["expected"], 16) >> 31) == ((xv < 0) != (wv < 0)),
                            f"{where}: sign of expected y {mis[0]['expected']} disagrees with x={xv}, w={wv}")
            if g.family == "reduce_sum_f32":
                fails.check(t.get("miscompared_elements") == 1 and mis[0]["element"] == el // g.cols,
                            f"{where}: expected exactly y[{el // g.cols}] to differ")
                if mask == 1 << 31 and mis:
                    # Cross-checks the generator and the element: the sum moves by -2 x (up to rounding).
                    xv = uniform_value(g.seed, 0, el)
                    ev, av = (struct.unpack("<f", struct.pack("<I", int(mis[0][k], 16)))[0] for k in ("expected", "actual"))
                    fails.check(abs((av - ev) + 2 * xv) <= 1e-3, f"{where}: y moved by {av - ev}, expected {-2 * xv}")
            if g.family == "reduce_sum_f64" and mis:
                # Cross-checks the fp64 generator and the word layout: the sum moves by -2 x (up to rounding).
                fails.check(all(m["element"] // 2 == el // 2 // g.cols for m in mis),
                            f"{where}: expected only the words of y[{el // 2 // g.cols}] to differ")
                if mask == 1 << 31:
                    xv = uniform_value_f64(g.seed, 0, el // 2)
                    words = {m["element"] % 2: (int(m["expected"], 16), int(m["actual"], 16)) for m in mis}
                    if len(words) == 2:
                        ev, av = (struct.unpack("<d", struct.pack("<II", words[0][i], words[1][i]))[0] for i in (0, 1))
                        fails.check(abs((av - ev) + 2 * xv) <= 1e-9, f"{where}: y moved by {av - ev}, expected {-2 * xv}")
            if g.family == "convert_f32" and mis:
                # Only the element's own 8 words; a sign flip of a uniform value (|x| >= 1/16: no zero, no NaN)
                # flips the sign bit of each of its 4 encodings (bit 15 or 7) and of its 4 widenings (bit 31).
                fails.check(all(m["element"] // 8 == el for m in mis), f"{where}: expected only the words of y[{el}]")
                if mask == 1 << 31:
                    want = {0: 0x8000, 1: 0x8000, 2: 0x80, 3: 0x80, 4: 1 << 31, 5: 1 << 31, 6: 1 << 31, 7: 1 << 31}
                    fails.check(len(mis) == 8 and all(int(m["xor_mask"], 16) == want[m["element"] % 8] for m in mis),
                                f"{where}: a sign flip must flip each word's sign bit: {[m['xor_mask'] for m in mis]}")
            if g.family == "elementwise_f32" and mis:
                # Only the element's own 8 words (exp, log, tanh, gelu, silu, rsqrt, sin, cos). A sign flip of a
                # uniform value (|x| >= 1/16): tanh and sin are odd to the bit (bit 31 flips), cos is even (no
                # change), log and rsqrt trade a finite value for the canonical NaN, exp, gelu and silu move.
                fails.check(all(m["element"] // 8 == el for m in mis), f"{where}: expected only the words of y[{el}]")
                if mask == 1 << 31:
                    words = {m["element"] % 8: m for m in mis}
                    fails.check(sorted(words) == [0, 1, 2, 3, 4, 5, 6], f"{where}: words {sorted(words)} changed, expected 0..6")
                    fails.check(all(int(words[k]["xor_mask"], 16) == 1 << 31 for k in (2, 6) if k in words),
                                f"{where}: tanh and sin must flip their sign bit only")
                    fails.check(all(0x7FFFFFFF in (int(words[k]["expected"], 16), int(words[k]["actual"], 16))
                                    for k in (1, 5) if k in words), f"{where}: log and rsqrt must trade a value for NaN")
            if is_exactint(g.family):  # every output that reads the element changes (see visible_input_flip)
                want = g.n if tensor == "a" else g.m
                fails.check(t.get("miscompared_elements") == want,
                            f"{where}: {t.get('miscompared_elements')} elements differ, expected all {want} that read it")
            if g.family == "gemm_i8":  # exactly the outputs whose exact sum the flipped bytes change, by the difference
                want = g.i8_changed(tensor, el, mask)
                fails.check(t.get("miscompared_elements") == len(want) and all(m["element"] in want for m in mis),
                            f"{where}: {t.get('miscompared_elements')} elements differ, the model changes {len(want)}")
                w = uniform_word_i8(g.seed, g.tensors[tensor][0], el)
                delta = [int8_of(w ^ mask, b) - int8_of(w, b) for b in range(4)]
                for m in mis:
                    i, j = divmod(m["element"], g.n)
                    q = el % g.kq if tensor == "a" else el // g.n
                    other = (uniform_word_i8(g.seed, 1, q * g.n + j) if tensor == "a"
                             else uniform_word_i8(g.seed, 0, i * g.kq + q))
                    d = sum(delta[b] * int8_of(other, b) for b in range(4))
                    fails.check(m.get("int32", {}).get("difference") == d,
                                f"{where}: {m['element_name']} moved by {m.get('int32')}, the model says {d}")
            if g.family == "attention_bf16_exactint":  # exactly the dim outputs of the query row, all NaN
                fails.check(t.get("miscompared_elements") == g.d and all(m["element"] // g.d == el // g.d for m in mis),
                            f"{where}: expected exactly the {g.d} outputs of row {el // g.d} to differ")
                fails.check(all((int(m["actual"], 16) & 0x7FFFFFFF) > 0x7F800000 for m in mis),
                            f"{where}: the outputs of a query row with an inf or NaN input are not all NaN")
            if g.family == "cross_entropy_f32":
                fails.check(any(m["element"] == el // g.vocab for m in mis),
                            f"{where}: loss[{el // g.vocab}] itself not among the miscompares")
        if len(fails.items) > before:
            totals["mislocalized"] += 1

        if (n + 1) % 20 == 0:
            print(f"  {n + 1}/{N_INJECTIONS} injections, {time.time() - t_start:.1f} s", flush=True)

    print(f"per family (output, input): {per_family}; without unit= {counters['no_unit']}, "
          f"with mask= {counters['mask']}, default iteration {counters['default_iteration']}")
    print(f"injections: {totals['injections']}, detected: {totals['detected']}, escapes: {totals['escapes']}, "
          f"mislocalized: {totals['mislocalized']}  ({time.time() - t_start:.1f} s)", flush=True)
    fails.check(totals["injections"] >= (60 if SANITIZED else 200), f"only {totals['injections']} injections")
    fails.check(all(o > 0 and (i > 0 or not by_family[f][0].tensors) for f, (o, i) in per_family.items()),
                f"every family must be drilled in its outputs and its inputs: {per_family}")
    fails.check(totals["escapes"] == 0, f"{totals['escapes']} escapes")
    fails.check(totals["mislocalized"] == 0, f"{totals['mislocalized']} mislocalized")
    fails.check(counters["no_unit"] > 0 and counters["mask"] > 0, "the drill must include faults without unit= and with mask=")
    fails.finish()


if __name__ == "__main__":
    main()

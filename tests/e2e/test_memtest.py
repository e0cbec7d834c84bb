"""The memory test's drill (--inject target=memory, kernels/memtest_u32/memtest_u32.h), end to end: a bit flipped
in one word of the region between a pass's write and its read fails the run, and the failing slice's record names
that pass, that word (its byte offset in the region), the word expected and the word read (and on a GPU the SM
that read it), on the CPU backend and on the emulated device; the same case without the drill passes, and a drill
the case cannot take is refused with one line. The record's values are worked out here from the patterns of the
specification header, not read from the binary.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CASE = "memtest_u32.boot_256m"
SLICE_WORDS = next(c for c in common.battery()["cases"] if c["id"] == CASE)["shape"]["cpu_slice_words"]
# Word 1234 of slice 3 holds 0x55555555 when pass inversions_55_up (pass 5) reads it; bit 7 (0 there) flips.
SLICE, WORD_IN_SLICE, BIT, PASS, PASS_INDEX = 3, 1234, 7, "inversions_55_up", 5
WORD = SLICE * SLICE_WORDS + WORD_IN_SLICE
SPEC = f"case={CASE},target=memory,element={WORD},bit={BIT},pass={PASS}"
EXPECTED = 0x55555555
READ = EXPECTED ^ (1 << BIT)


def record_of(t):
    """The failing slice's record words, by name, as the device (actual) computed them."""
    return {m["element_name"]: int(m["actual"], 16) for m in t.get("miscompares", [])}


def check_drill(F, where, rc, rep, err, unit):
    tests = (rep or {}).get("tests", [])
    t = tests[0] if len(tests) == 1 else {}
    F.check(rc == 1 and t.get("result") == "fail", f"{where}: exit {rc}, {t.get('result')}: {err.strip()[-300:]}")
    F.check(t.get("failed_tiles") == 1 and t.get("units_failed") == [unit],
            f"{where}: {t.get('failed_tiles')} failed tiles on units {t.get('units_failed')}, want 1 on [{unit}]")
    F.check(all(m["tile"] == SLICE for m in t.get("miscompares", [])), f"{where}: a miscompare outside slice {SLICE}")
    got = record_of(t)
    want = {
        f"mismatches.{PASS}[{SLICE}]": 1,
        f"first.pass[{SLICE}]": PASS_INDEX,
        f"first.offset_lo[{SLICE}]": 4 * WORD,
        f"first.offset_hi[{SLICE}]": 0,
        f"first.expected[{SLICE}]": EXPECTED,
        f"first.read[{SLICE}]": READ,
    }
    for name, value in want.items():
        F.check(got.get(name) == value, f"{where}: {name} is {got.get(name)}, want {value:#x} (record {got})")
    line = (f"memory test slice {SLICE}: pass {PASS} read 0x{READ:08x} for 0x{EXPECTED:08x} (bits 0x{1 << BIT:08x}) "
            f"at region offset 0x{4 * WORD:x}")
    F.check(any(n.startswith(line) for n in t.get("notes", [])), f"{where}: no note '{line}...' in {t.get('notes')}")
    errors = common.schema_errors(rep) if rep else ["no report"]
    F.check(not errors, f"{where}: the report does not follow docs/report.schema.json: {errors[:3]}")
    inj = (rep or {}).get("injections", [{}])
    F.check(len(inj) == 1 and inj[0].get("fired") is True and inj[0].get("target") == "memory" and
            inj[0].get("pass") == PASS, f"{where}: the drill is not reported as a fired memory fault of {PASS}: {inj}")
    return got


def main():
    F = common.Failures("test_memtest")
    # The CPU backend: the slice's own buffer on the unit named.
    rc, rep, err = common.run_json("--enable", CASE)
    F.check(rc == 0, f"cpu, no drill: exit {rc}: {err.strip()[-300:]}")
    rc, rep, err = common.run_json("--enable", CASE, "--inject", SPEC + ",unit=1")
    got = check_drill(F, "cpu drill", rc, rep, err, 1)
    F.check(got.get(f"first.sm[{SLICE}]") is None, f"cpu drill: an SM named on the CPU: {got}")

    # The emulated device, 4 SMs: block b runs on SM b % 4. A slice has `parts` blocks (8 blocks per SM in all, at
    # most one per 256 16-byte vectors of the slice: memtest_u32.cu), and the thread that reads vector v is in the
    # slice's block (v // 256) % parts: that block's SM reads the word and is reported.
    parts = max(1, min((4 * 8 + 7) // 8, SLICE_WORDS // 4 // 256))
    sm = (SLICE * parts + (WORD_IN_SLICE // 4 // 256) % parts) % 4
    emu = ("--backend", "emulated:sm_90x4")
    rc, rep, err = common.run_json(*emu, "--enable", CASE)
    notes = [n for t in (rep or {}).get("tests", []) for n in t.get("notes", [])]
    F.check(rc == 0, f"emulated, no drill: exit {rc}: {err.strip()[-300:]}")
    F.check(any(n.startswith("memory test region: ") and "device address 0x" in n for n in notes),
            f"emulated: no note of the region: {notes}")
    rc, rep, err = common.run_json(*emu, "--enable", CASE, "--inject", SPEC)
    got = check_drill(F, "emulated drill", rc, rep, err, sm)
    F.check(got.get(f"first.sm[{SLICE}]") == sm, f"emulated drill: first.sm {got.get(f'first.sm[{SLICE}]')}, want {sm}")

    # A device that runs a sample of the blocks (2 of the case's 32): every sweep, the descending ones too, runs the
    # same blocks over the same words, so the sample passes (a block reading words another wrote would fail it).
    rc, rep, err = common.run_json("--backend", "emulated:sm_90x8:sample=2", "--enable", CASE)
    F.check(rc == 0, f"sampled emulated device: exit {rc}: {err.strip()[-300:]}")

    # Under --max-memory a share of the free memory shrinks to fit (a fixed region would not): the standard case
    # passes with a region the note says was capped, under the cap.
    rc, rep, err = common.run_json(*emu, "--profile", "standard", "--time-budget", "1s", "--enable-any",
                                   "memtest_u32.free_90pct", "--max-memory", "512K")
    notes = [n for t in (rep or {}).get("tests", []) for n in t.get("notes", []) if n.startswith("memory test region")]
    F.check(rc == 0 and len(notes) == 1 and "capped by --max-memory" in notes[0] and
            int(notes[0].split()[3]) <= 512 * 1024, f"--max-memory 512K: exit {rc}, {notes}: {err.strip()[-300:]}")

    # Refused, exit 64 and one line.
    gemm = next(c["id"] for c in common.battery()["cases"] if c["family"] == "gemm_f32")
    bad = [
        ((), f"case={CASE},target=memory,element=5,bit=1,pass=nonesuch", "is no pass of the memory test"),
        ((), f"case={CASE},target=memory,element={8 * SLICE_WORDS},bit=1", "runs past the region"),
        (("--enable", gemm), f"case={gemm},target=memory,element=5,bit=1", "target=memory drills the memory test's"),
        ((), f"case={CASE},element=5,bit=1,pass=address", "pass= applies to target=memory only"),
        (emu, f"case={CASE},target=memory,element=5,bit=1,unit=2", "target=memory cannot be pinned to an SM"),
    ]
    for args, spec, want in bad:
        p = common.run("run", *(args if "--enable" in args else (*args, "--enable", CASE)), "--inject", spec)
        F.check(p.returncode == 64 and want in p.stderr and len(p.stderr.strip().splitlines()) == 1,
                f"--inject {spec}: exit {p.returncode}, want 64 and one line with '{want}': {p.stderr.strip()[-300:]}")
    F.finish()


if __name__ == "__main__":
    main()

"""`sdcscreen consensus` on generated recording files: exit 0 when every key gets a golden, 1 when a device
disagrees with the majority or with itself (named on stdout), 2 for a tie or no majority, 78 for bad
recording data (one stderr line naming the file), 64 for a bad command line. With --write, the accepted
goldens land in recordings/<architecture>/<family>.json of a small pattern directory of the test's own,
the manifest covers them (size and XXH3-128), `verify-patterns`, `golden` and `run` still work, and bad
data leaves the directory untouched.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_consensus")
CRASH_MARKS = ("Traceback", "terminate called", "Aborted", "Segmentation fault", "core dumped", "what():")
M64 = (1 << 64) - 1


# --- digests as src/spec/digest.h computes them ----------------------------------------------------------
def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def digest_key(tile):
    return mix64(0x5DC5C4EE5DC5C4EE ^ mix64(tile))


def output_digest(tiles):
    return sum(mix64(d ^ digest_key(~t & M64)) for t, d in enumerate(tiles)) & M64


XXH = common.load_xxhash()

# --- recordings -----------------------------------------------------------------------------------------
TMP = tempfile.mkdtemp(prefix="sdc_consensus_")
GOOD = [0x1111, 0x2222, 0x3333, 0x4444]
BAD = [0x1111, 0x2222, 0x3333, 0x4445]  # one bit of the last tile
KEY = {"architecture": "sm_90", "family": "gemm_bf16", "case": "gemm_bf16.uniform_256",
       "fingerprint": "0123456789abcdef", "library": "cublasLt 13.0.2", "algorithm": "algo=6 tile=128x128 splitk=1"}
_n = [0]


def entry(digests, **key):
    e = dict(KEY, **key)
    e["tile_digests"] = [f"{d:016x}" for d in digests]
    e["output_digest"] = f"{output_digest(digests):016x}"
    return e


def recording(uuid, *entries, edit=None):
    """Writes one device's recording file; returns its path."""
    doc = {"format": "sdcscreen-recording", "version": 1, "tool": "sdcscreen test",
           "device": {"name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "pci_bus_id": "00000000:1B:00.0",
                      "hostname": f"host-{uuid}", "driver": "580.65"},
           "entries": list(entries) or [entry(GOOD)]}
    text = json.dumps(doc, indent=1)
    if edit:
        text = edit(text)
    _n[0] += 1
    p = os.path.join(TMP, f"rec{_n[0]}-{uuid}.json")
    with open(p, "w") as f:
        f.write(text)
    return p


def consensus(*args):
    return common.run("consensus", *args)


def expect(name, p, code, *stdout_has):
    F.check(p.returncode == code, f"{name}: exit {p.returncode}, expected {code} (stderr {p.stderr.strip()[:300]!r})")
    for s in stdout_has:
        F.check(s in p.stdout, f"{name}: stdout lacks {s!r}: {p.stdout[:800]!r}")
    for mark in CRASH_MARKS:
        F.check(mark not in p.stderr + p.stdout, f"{name}: output contains {mark!r}")


def expect_error(name, p, code, *must_name):
    expect(name, p, code)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    F.check(len(lines) == 1 and lines[0].startswith("sdcscreen: error: "),
            f"{name}: stderr is not one 'sdcscreen: error:' line: {p.stderr[:500]!r}")
    for w in must_name:
        F.check(w in p.stderr, f"{name}: message does not name {w!r}: {p.stderr.strip()!r}")
    F.check("exit: pass" not in p.stdout, f"{name}: stdout says 'exit: pass'")


# --- verdicts and exit codes ----------------------------------------------------------------------------
a, b, c, d = (recording(u) for u in ("GPU-a", "GPU-b", "GPU-c", "GPU-d"))
expect("3 devices agree", consensus(a, b, c), 0, "accepted, 3 of 3 devices agree", "exit: pass")
expect("single device: provisional", consensus(a), 0, "provisional", "exit: pass")
expect("same device twice counts once", consensus(a, a), 0, "1 of 1 devices", "provisional")
bad_d = recording("GPU-d", entry(BAD))
p = consensus(a, b, c, bad_d)
expect("3-1: dissenter named", p, 1, "accepted, 3 of 4 devices agree",
       "dissenters: GPU-d (NVIDIA H100 80GB HBM3, host-GPU-d)", "exit: fail")
expect("unstable device", consensus(a, b, c, d, bad_d), 1, "unstable:   GPU-d", "exit: fail")
bad_c = recording("GPU-c", entry(BAD))
expect("2-2 tie", consensus(a, b, bad_c, bad_d), 2, "tie, no golden", "exit: error")
expect("2-1-1 no majority", consensus(a, b, bad_c, recording("GPU-d", entry([9, 9, 9, 9]))), 2,
       "no majority, no golden (largest group 2 of 4 devices)")
# Keys differing in one field are separate votes: each minority device is alone on its key (provisional).
others = [recording(f"GPU-{f}", entry(BAD, **{f: v})) for f, v in
          (("architecture", "sm_80"), ("library", "cublasLt 12.9.1"), ("algorithm", "algo=7"),
           ("fingerprint", "fedcba9876543210"))]
p = consensus(a, b, *others)
expect("different keys never merged", p, 0, "summary: 5 keys: 5 accepted (4 provisional)")
F.check("dissenters" not in p.stdout, "different keys: a device was counted as a dissenter")

# --- bad recordings: 78, one line naming the file -------------------------------------------------------
bad_files = [
    ("wrong format", lambda t: t.replace('"sdcscreen-recording"', '"sdcscreen-golden"'), "format is"),
    ("wrong version", lambda t: t.replace('"version": 1', '"version": 2'), "version 2"),
    ("bad hex", lambda t: t.replace('"0000000000001111"', '"000000000000111g"'), "tile digest 0"),
    ("digest does not add up", lambda t: t.replace('"0000000000002222"', '"0000000000002223"'), "do not add up"),
    ("extra member", lambda t: t.replace('"tool"', '"colour": "red", "tool"'), "unknown member 'colour'"),
    ("missing member", lambda t: t.replace('"driver": "580.65"', '"drive": "580.65"'), "lacks 'driver'"),
    ("truncated", lambda t: t[: len(t) // 2], "not valid JSON"),
    ("deep nesting", lambda t: "[" * 100000 + "]" * 100000, "nested deeper"),
    ("not JSON", lambda t: "\x00\xff", "not valid JSON"),
]
for name, edit, word in bad_files:
    f = recording("GPU-x", edit=edit)
    expect_error(f"bad recording: {name}", consensus(a, f), 78, f, word)
f = recording("GPU-x", entry(GOOD), entry(GOOD))
expect_error("duplicate key in one file", consensus(f), 78, f, "duplicate key")
f = recording("GPU-x", entry(GOOD[:3]))
expect_error("tile count mismatch", consensus(a, f), 78, f, "3 tile digests")
missing = os.path.join(TMP, "no_such_recording.json")
expect_error("missing file", consensus(a, missing), 78, missing, "missing")

# --- bad command lines: 64 ------------------------------------------------------------------------------
expect_error("no files", consensus(), 64, "FILE")
expect_error("unknown option", consensus("--frobnicate", a), 64, "--frobnicate")
expect_error("empty --patterns", consensus("--patterns", "", a), 64, "--patterns")
p = common.run("frobnicate")
F.check(p.returncode == 64 and "consensus" in p.stderr, f"unknown subcommand does not list consensus: {p.stderr!r}")

# --- --write into a small pattern directory of the test's own ---------------------------------------------
PD = os.path.join(TMP, "patterns")
os.makedirs(os.path.join(PD, "golden"))
with open(os.path.join(PD, "battery.json"), "w") as f:
    json.dump({"format": "sdcscreen-battery", "version": 1,
               "profiles": {"boot": {"description": "test", "time_budget_s": 30}},
               "cases": [{"id": "reduce_sum_f32.uniform_256x64", "family": "reduce_sum_f32", "mode": "exact",
                          "distribution": "uniform", "seed": 1, "shape": {"rows": 256, "cols": 64},
                          "iterations": {"boot": 1}}]}, f)
p = common.run("golden", "--patterns", PD)
F.check(p.returncode == 0, f"golden on the test's pattern directory: exit {p.returncode} {p.stderr[-300:]!r}")
REL = "recordings/sm_90/gemm_bf16.json"


def manifest():
    with open(os.path.join(PD, "manifest.json")) as f:
        return json.load(f)["files"]


def snapshot():
    out = {}
    for root, _, files in os.walk(PD):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, PD)] = f.read()
    return out


before = snapshot()
expect("--write, tie only: nothing written", consensus("--write", "--patterns", PD, a, bad_c), 2, "nothing written")
F.check(snapshot() == before, "--write with no accepted key changed the pattern directory")

k2 = {"case": "gemm_bf16.uniform_512"}
p = consensus("--write", "--patterns", PD, recording("GPU-a", entry(GOOD), entry(GOOD, **k2)), b, c, bad_d)
expect("--write 3-1", p, 1, "wrote ", "updated ")
acc_path = os.path.join(PD, REL)
F.check(os.path.exists(acc_path), f"--write did not write {REL}")
if os.path.exists(acc_path):
    with open(acc_path, "rb") as f:
        raw = f.read()
    acc = json.loads(raw)
    F.check(acc.get("format") == "sdcscreen-recorded-goldens" and acc.get("version") == 1, "accepted file header")
    F.check(acc.get("architecture") == "sm_90" and acc.get("family") == "gemm_bf16", "accepted file arch/family")
    by_case = {e["case"]: e for e in acc.get("entries", [])}
    e1, e2 = by_case.get(KEY["case"], {}), by_case.get(k2["case"], {})
    F.check([v["uuid"] for v in e1.get("voters", [])] == ["GPU-a", "GPU-b", "GPU-c"], f"voters: {e1.get('voters')}")
    F.check([v["uuid"] for v in e1.get("dissenters", [])] == ["GPU-d"], f"dissenters: {e1.get('dissenters')}")
    F.check(e1.get("provisional") is False, "3 voters marked provisional")
    F.check(e1.get("tile_digests") == [f"{x:016x}" for x in GOOD], "accepted tile digests are not the majority's")
    F.check(e2.get("provisional") is True, "single-device key not marked provisional")
    m = manifest().get(REL)
    F.check(m is not None and m.get("bytes") == len(raw), f"manifest entry for {REL}: {m}")
    if XXH and m:
        h = XXH.XXH3_128bits(raw, len(raw))
        F.check(m.get("xxh3_128") == f"{h.high64:016x}{h.low64:016x}", "manifest hash of the accepted file")

# The test's own pattern data is not the build's: refused unless accepted (--accept-patterns).
p = common.run("verify-patterns", "--patterns", PD)
F.check(p.returncode == 78 and "battery.json" in p.stderr, f"verify-patterns on data not the build's: exit {p.returncode}")
p = common.run("verify-patterns", "--patterns", PD, "--accept-patterns")
F.check(p.returncode == 0, f"verify-patterns after --write: exit {p.returncode} {p.stderr.strip()!r}")
p = common.run("run", "--patterns", PD, "--profile", "boot", "-q", "--accept-patterns")
F.check(p.returncode == 0, f"run after --write: exit {p.returncode} {p.stderr.strip()!r}")
p = common.run("golden", "--patterns", PD)
F.check(p.returncode == 0 and REL in manifest(), f"golden dropped {REL} from the manifest (exit {p.returncode})")

# A second round keeps the other key and replaces the recorded one.
p = consensus("--write", "--patterns", PD, recording("GPU-e", entry(BAD, **k2)), recording("GPU-f", entry(BAD, **k2)))
expect("--write second round", p, 0, "0 new, 1 replaced, 1 kept")
with open(acc_path) as f:
    by_case = {e["case"]: e for e in json.load(f)["entries"]}
F.check(by_case.get(k2["case"], {}).get("provisional") is False, "second round did not replace the provisional key")
F.check(KEY["case"] in by_case, "second round dropped the other key")

# Bad data leaves the directory untouched: a modified accepted file, a bad recording, no manifest.
with open(acc_path, "a") as f:
    f.write(" ")
before = snapshot()
expect_error("--write over a modified accepted file", consensus("--write", "--patterns", PD, a), 78, REL, "bytes")
p = common.run("verify-patterns", "--patterns", PD)
F.check(p.returncode == 78 and REL in p.stderr, f"verify-patterns misses a modified accepted file: {p.returncode}")
bad = recording("GPU-x", edit=lambda t: t.replace('"version": 1', '"version": 2'))
expect_error("--write with a bad recording", consensus("--write", "--patterns", PD, a, bad), 78, bad)
F.check(snapshot() == before, "a refused --write changed the pattern directory")
empty = os.path.join(TMP, "empty")
os.makedirs(empty)
expect_error("--write without a manifest", consensus("--write", "--patterns", empty, a), 78, "manifest.json")

shutil.rmtree(TMP, ignore_errors=True)
F.finish()

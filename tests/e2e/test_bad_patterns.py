"""Broken pattern data: each way patterns/ can be damaged, each its own check, on a copy of patterns/ in a
temporary directory. 'run --patterns COPY --enable CASE' and 'verify-patterns --patterns COPY' must both
exit 78 with one stderr line that names the broken file. The unmodified copy passes, so the checks are not
vacuous; a consistent copy that is not the build's data is refused unless --accept-patterns.

Edits that must get past the manifest (a golden of the wrong version, a battery with an unknown family...)
update the manifest's size and XXH3-128 hash of the edited file, computed with libxxhash through ctypes,
the library the tool itself uses (hex: high64 then low64, 16 digits each, as in src/core/patterns.cpp).
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_bad_patterns")
CASE = "softmax_f32.special_128x1000"
GOLDEN = "golden/softmax_f32.json"  # the golden file that holds CASE
CRASH_MARKS = ("Traceback", "terminate called", "Aborted", "Segmentation fault", "core dumped", "what():")


# --- XXH3-128 through libxxhash (common.load_xxhash) ------------------------------------------------
XXH = common.load_xxhash()


def xxh3_128_hex(data: bytes) -> str:
    h = XXH.XXH3_128bits(data, len(data))
    return f"{h.high64:016x}{h.low64:016x}"


# --- a copy of patterns/ and edits of it ----------------------------------------------------------------
TMP = tempfile.mkdtemp(prefix="sdc_bad_patterns_")
_n = [0]


def fresh():
    _n[0] += 1
    d = os.path.join(TMP, f"p{_n[0]}")
    shutil.copytree(common.PATTERNS, d)
    return d


def path(d, rel):
    return os.path.join(d, rel)


def load(d, rel):
    with open(path(d, rel)) as f:
        return json.load(f)


def save(d, rel, obj, indent=1):
    with open(path(d, rel), "w") as f:
        json.dump(obj, f, indent=indent)
        f.write("\n")


def rehash(d, rel):
    """Makes manifest.json agree with the current bytes of rel (the manifest's own layout is kept)."""
    m = load(d, "manifest.json")
    with open(path(d, rel), "rb") as f:
        data = f.read()
    m["files"][rel] = {"bytes": len(data), "xxh3_128": xxh3_128_hex(data)}
    save(d, "manifest.json", m, indent=2)


def edit_json(d, rel, change, update_manifest=True):
    obj = load(d, rel)
    change(obj)
    save(d, rel, obj)
    if update_manifest:
        rehash(d, rel)


def battery_case(b, case_id):
    return next(c for c in b["cases"] if c["id"] == case_id)


def runs(d, *extra):
    """The two commands that load pattern data: (label, CompletedProcess)."""
    return [("run", common.run("run", "--patterns", d, "--enable", CASE, "-q", *extra)),
        ("verify-patterns", common.run("verify-patterns", "--patterns", d, *extra))]


def expect_broken(name, d, names, *more):
    """Both commands exit 78 with one stderr line naming `names` (the broken file) and `more` (the problem)."""
    for label, p in runs(d):
        what = f"{name} [{label}]"
        F.check(p.returncode == 78, f"{what}: exit {p.returncode}, expected 78 (stderr: {p.stderr.strip()[:300]!r})")
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        F.check(len(lines) == 1, f"{what}: stderr has {len(lines)} lines, expected one: {p.stderr[:500]!r}")
        line = lines[0] if lines else ""
        F.check(line.startswith("sdcscreen: error: "), f"{what}: stderr does not start with 'sdcscreen: error: ': {line!r}")
        for word in (names, *more):
            F.check(word in line, f"{what}: message does not name {word!r}: {line!r}")
        for mark in CRASH_MARKS:
            F.check(mark not in p.stderr, f"{what}: stderr contains {mark!r}")
        F.check("exit: pass" not in p.stdout and "patterns ok" not in p.stdout, f"{what}: stdout reports success")


def expect_ok(name, d, *extra):
    for label, p in runs(d, *extra):
        F.check(p.returncode == 0, f"{name} [{label}]: exit {p.returncode}, expected 0 (stderr: {p.stderr.strip()[:300]!r})")


try:
    # --- baseline: the unmodified copy, and the hash helper agrees with the tool -----------------------
    base = fresh()
    expect_ok("unmodified copy", base)
    F.check(XXH is not None, "libxxhash (libxxhash.so.0) not found: cannot update manifest hashes")
    if XXH is None:
        F.finish()
    manifest = load(base, "manifest.json")
    for rel, entry in manifest["files"].items():
        with open(path(base, rel), "rb") as f:
            data = f.read()
        F.check(xxh3_128_hex(data) == entry["xxh3_128"] and len(data) == entry["bytes"],
                f"the test's XXH3-128 of {rel} disagrees with manifest.json: the rehash helper is wrong")
    d = fresh()  # re-serialized files with an updated manifest are still fine: the edits below fail for their reason
    edit_json(d, "battery.json", lambda b: None)
    edit_json(d, GOLDEN, lambda g: None)
    expect_ok("re-serialized battery and golden with the manifest updated", d)  # byte for byte the same data
    # Consistent, but not the data this sdcscreen was built with (a profile's budget changed): refused naming
    # the file and both digests, unless accepted.
    d = fresh()
    edit_json(d, "battery.json", lambda b: b["profiles"]["boot"].update(time_budget_s=44))
    expect_broken("a consistent edit of the battery", d, "battery.json", "this sdcscreen was built with",
                  "--accept-patterns")
    expect_ok("a consistent edit of the battery, accepted", d, "--accept-patterns")

    # --- the manifest -----------------------------------------------------------------------------------
    d = fresh()
    os.remove(path(d, "manifest.json"))
    expect_broken("manifest missing", d, path(d, "manifest.json"), "missing")

    d = fresh()
    with open(path(d, "manifest.json"), "w") as f:
        f.write('{"format": "sdcscreen-manifest", "version": 1, "files": {')
    expect_broken("manifest not JSON", d, path(d, "manifest.json"), "JSON")

    d = fresh()
    with open(path(d, "manifest.json"), "w") as f:
        f.write("")
    expect_broken("manifest empty", d, path(d, "manifest.json"))

    d = fresh()
    edit_json(d, "manifest.json", lambda m: m.update(version=2), update_manifest=False)
    expect_broken("manifest wrong version", d, path(d, "manifest.json"), "version 2")

    d = fresh()
    edit_json(d, "manifest.json", lambda m: m.update(format="sdcscreen-golden"), update_manifest=False)
    expect_broken("manifest wrong format", d, path(d, "manifest.json"), "sdcscreen-golden")

    d = fresh()
    edit_json(d, "manifest.json", lambda m: m["files"].pop("battery.json"), update_manifest=False)
    expect_broken("manifest does not list battery.json", d, path(d, "manifest.json"), "battery.json")

    d = fresh()
    edit_json(d, "manifest.json", lambda m: m["files"].update({"../escape.json": {"bytes": 1, "xxh3_128": "0" * 32}}),
              update_manifest=False)
    expect_broken("manifest lists a file outside the directory", d, path(d, "manifest.json"), "../escape.json")

    d = fresh()
    edit_json(d, "manifest.json", lambda m: m["files"][GOLDEN].pop("xxh3_128"), update_manifest=False)
    expect_broken("manifest entry without a hash", d, path(d, "manifest.json"), "xxh3_128")

    # --- files listed in the manifest ---------------------------------------------------------------------
    d = fresh()
    os.remove(path(d, GOLDEN))
    expect_broken("listed golden file missing", d, path(d, GOLDEN), "missing")

    d = fresh()
    with open(path(d, GOLDEN), "r+b") as f:
        size = len(f.read())
        f.truncate(size // 2)
    expect_broken("golden truncated", d, path(d, GOLDEN), str(size // 2), "bytes")

    d = fresh()
    with open(path(d, GOLDEN), "rb") as f:
        data = bytearray(f.read())
    i = data.index(b'"output_digest": "') + len(b'"output_digest": "')
    data[i] = ord("1") if data[i] != ord("1") else ord("2")  # same size, one hex digit changed
    with open(path(d, GOLDEN), "wb") as f:
        f.write(data)
    expect_broken("golden byte changed, same size", d, path(d, GOLDEN), "hash")

    d = fresh()
    with open(path(d, "battery.json")) as f:
        text = f.read()
    with open(path(d, "battery.json"), "w") as f:
        f.write(text.replace('"seed": 402', '"seed": 403', 1))
    expect_broken("battery.json edited (hash mismatch)", d, path(d, "battery.json"), "hash")

    # --- golden files whose bytes the manifest vouches for -------------------------------------------------
    d = fresh()
    edit_json(d, GOLDEN, lambda g: g.update(version=2))
    expect_broken("golden wrong version", d, path(d, GOLDEN), "version 2")

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g.update(format="sdcscreen-battery"))
    expect_broken("golden wrong format", d, path(d, GOLDEN), "sdcscreen-battery")

    d = fresh()
    with open(path(d, GOLDEN), "w") as f:
        f.write("[1, 2,")
    rehash(d, GOLDEN)
    expect_broken("golden not JSON", d, path(d, GOLDEN), "JSON")

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"].pop(CASE))
    expect_broken("golden missing the selected case", d, path(d, "golden"), CASE)

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"].pop("softmax_f32.uniform_256x4096"))
    expect_broken("golden missing another case", d, path(d, "golden"), "softmax_f32.uniform_256x4096")

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"][CASE]["tile_digests"].__setitem__(0, "zzzzzzzzzzzzzzzz"))
    expect_broken("golden tile digest not hex", d, path(d, GOLDEN), CASE)

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"][CASE]["tile_digests"].__setitem__(3, "0123456789ABCDEF"))
    expect_broken("golden tile digest upper-case hex", d, path(d, GOLDEN), CASE)

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"][CASE].update(output_digest="0x12345678"))
    expect_broken("golden output digest not 16 hex digits", d, path(d, GOLDEN), CASE)

    d = fresh()

    def break_sum(g):
        t = g["cases"][CASE]["tile_digests"]
        t[0] = t[0][:-1] + ("0" if t[0][-1] != "0" else "1")  # valid hex, different value

    edit_json(d, GOLDEN, break_sum)
    expect_broken("golden tile digests do not add up to output_digest", d, path(d, GOLDEN), CASE, "add up")

    d = fresh()
    edit_json(d, GOLDEN, lambda g: g["cases"][CASE].update(tile_digests="none"))
    expect_broken("golden tile_digests of the wrong type", d, path(d, GOLDEN), "tile_digests")

    d = fresh()
    edit_json(d, "battery.json", lambda b: battery_case(b, CASE).update(seed=battery_case(b, CASE)["seed"] + 1000))
    expect_broken("golden fingerprint does not match the case (seed edited)", d, path(d, "golden"), CASE,
                  "another definition")

    # --- battery.json, with the manifest updated -------------------------------------------------------
    first = common.battery()["cases"][0]["id"]
    for what, edit, *needles in (
        ("wrong version", lambda b: b.update(version=2), "version 2"),
        ("unknown family", lambda b: b["cases"][0].update(family="gemm_f128"), "gemm_f128"),
        ("invalid shape (rows not a multiple of the tile)",
         lambda b: battery_case(b, CASE)["shape"].update(rows=130), CASE, "130"),
        ("shape lacks a dimension", lambda b: battery_case(b, CASE)["shape"].pop("cols"), CASE, "cols"),
        ("shape has an unknown dimension", lambda b: battery_case(b, CASE)["shape"].update(depth=3), CASE, "depth"),
        ("duplicate id", lambda b: b["cases"][1].update(id=first), first),
        ("unknown distribution", lambda b: b["cases"][0].update(distribution="gaussian"), "gaussian"),
        ("mode the family lacks", lambda b: b["cases"][0].update(mode="recorded"), "recorded"),
        ("iterations for an unknown profile", lambda b: b["cases"][0]["iterations"].update(nightly=3), "nightly"),
        ("zero iterations", lambda b: b["cases"][0]["iterations"].update(boot=0), first),
        ("id not snake_case", lambda b: b["cases"][0].update(id="Gemm F32"), "Gemm F32"),
        ("seed of the wrong type", lambda b: b["cases"][0].update(seed="101"), "seed"),
    ):
        d = fresh()
        edit_json(d, "battery.json", edit)
        expect_broken("battery " + what, d, path(d, "battery.json"), *needles)

    # --- a member twice in one object: JSON parsers keep the last one, the strict reader refuses it ------------
    # Each first copy is a wrong value placed before the right one: a reader that kept the last value would load
    # the file cleanly, so only the refusal catches it.
    def member_twice(rel, pattern, wrong):
        d = fresh()
        with open(path(d, rel)) as f:
            text = f.read()
        m = re.search(pattern, text)
        with open(path(d, rel), "w") as f:
            f.write(text[:m.start()] + wrong + ", " + m.group(0) + text[m.end():])
        if rel != "manifest.json":
            rehash(d, rel)
        return d

    for rel, pattern, wrong, member in (("battery.json", r'"seed": \d+', '"seed": 1', "seed"),
                                        (GOLDEN, r'"output_digest": "[0-9a-f]{16}"', '"output_digest": "0000000000000000"',
                                         "output_digest"),
                                    ("manifest.json", r'"bytes": \d+', '"bytes": 1', "bytes")):
        d = member_twice(rel, pattern, wrong)
        expect_broken(f"{rel}: member twice in one object", d, path(d, rel), f"'{member}' appears twice")


    # --- --patterns that is not a pattern directory ----------------------------------------------------
    nowhere = os.path.join(TMP, "no", "such", "patterns")
    expect_broken("--patterns nonexistent directory", nowhere, nowhere)
    empty = os.path.join(TMP, "empty")
    os.mkdir(empty)
    expect_broken("--patterns empty directory", empty, path(empty, "manifest.json"))
finally:
    shutil.rmtree(TMP, ignore_errors=True)

F.finish()

"""'sdcscreen list --output-format json' (docs/families.md): one valid JSON document that lists every family of
the family table (kernels/families.def) and every battery case with a geometry that is consistent in itself,
with the battery, with the text listing and with what a run reports; a bad --output-format is exit 64.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_list")
MODES = ["exact", "exact-integer", "recorded", "consensus"]
DISTRIBUTIONS = ["uniform", "heavy_tail", "special", "mantissa_walk"]

p = common.run("list", "--output-format", "json")
F.check(p.returncode == 0 and p.stderr == "", f"list json: exit {p.returncode}, stderr {p.stderr[:300]!r}")
try:
    doc = json.loads(p.stdout)
except ValueError as e:
    doc = None
    F.check(False, f"list json: not valid JSON ({e}): {p.stdout[:300]!r}")
if doc is None:
    F.finish()

bat = common.battery()
F.check(doc.get("format") == "sdcscreen-list" and doc.get("version") == 1, f"list json: format {doc.get('format')} "
        f"version {doc.get('version')}")

# --- families: exactly the table's, in its order, each described ---------------------------------------
table = common.table_families()
fams = {f["id"]: f for f in doc["families"]}
F.check([f["id"] for f in doc["families"]] == table, f"list json: families {list(fams)}, the table has {table}")
for f in doc["families"]:
    F.check(bool(f["description"]) and f["modes"] and set(f["modes"]) <= set(MODES), f"family {f['id']}: {f}")
    F.check(set(f["backends"]) <= {"cpu", "cuda"} and len(set(f["backends"])) == len(f["backends"]),
            f"family {f['id']}: backends {f['backends']}")
    F.check(bool(f["shape_keys"]), f"family {f['id']}: no shape keys")
# fp8's own kernel is emulated on Hopper (docs/gpu.md): its description says so and names the family that does
# exercise the fp8 tensor cores there; no other family says it.
fp8_desc = fams.get("gemm_fp8_exactint", {}).get("description", "")
F.check("sm_90" in fp8_desc and "emulated" in fp8_desc and "gemm_fp8_exactint_cublaslt" in fp8_desc,
        f"list json: gemm_fp8_exactint's description does not say its mma.sync is emulated on sm_90: {fp8_desc}")
F.check(not any("emulated" in f["description"] for f in doc["families"] if f["id"] != "gemm_fp8_exactint"),
        "list json: a family other than gemm_fp8_exactint says it is emulated")
F.check({f["id"]: f["device_side"] for f in doc["families"]} == common.table_device_sides(),
        f"list json: device sides {[(f['id'], f['device_side']) for f in doc['families']]}")
F.check(any("cpu" in f["backends"] for f in doc["families"]), "list json: no family runs on CPUs")
F.check([m["name"] for m in doc["modes"]] == MODES and all(m["description"] for m in doc["modes"]),
        f"list json: modes {doc['modes']}")
for m in doc["modes"]:
    F.check("no family yet" not in m["description"], f"list json: mode {m['name']} says it has no family yet")
F.check([d["name"] for d in doc["distributions"]] == DISTRIBUTIONS, f"list json: distributions {doc['distributions']}")
F.check({p["name"]: (p["description"], p["time_budget_s"], p["fill"]) for p in doc["profiles"]} ==
        {n: (p["description"], p["time_budget_s"], p["fill"]) for n, p in bat["profiles"].items()},
        "list json: profiles differ from the battery's")

# --- cases: the battery's, with a consistent geometry ---------------------------------------------------
F.check([c["id"] for c in doc["cases"]] == [c["id"] for c in bat["cases"]], "list json: cases are not the battery's, in order")
for c, b in zip(doc["cases"], bat["cases"]):
    name = c["id"]
    F.check((c["family"], c["mode"], c["distribution"], c["data_seed"], c["shape"], c["iterations"]) ==
            (b["family"], b.get("mode", "exact"), b["distribution"], b["seed"], b["shape"], b["iterations"]),
            f"{name}: listed as {c}, the battery says {b}")
    fam = fams.get(c["family"], {})
    keys, optional = set(fam.get("shape_keys", [])), set(fam.get("optional_shape_keys", []))
    F.check(keys <= set(c["shape"]) <= keys | optional, f"{name}: shape keys {sorted(c['shape'])}")
    F.check(c["mode"] in fam.get("modes", []), f"{name}: mode {c['mode']} is not one of its family's")
    g = c["geometry"]
    tiles, te, out = g["tile_count"], g["tile_elements"], g["output_elements"]
    F.check(tiles >= 1 and te >= 1 and tiles * te == out, f"{name}: {tiles} tiles of {te} elements, {out} outputs")
    names = [t["name"] for t in g["inputs"]]
    # The memory test writes its own patterns into its region: it alone has no input.
    F.check((names or c["family"] == "memtest_u32") and len(set(names)) == len(names) and
            all(t["elements"] > 0 for t in g["inputs"]), f"{name}: inputs {g['inputs']}")
    F.check([t["tile"] for t in g["tiles"]] == [0, tiles - 1] and all(t["name"] for t in g["tiles"]), f"{name}: tiles {g['tiles']}")
    F.check(tiles == 1 or g["tiles"][0]["name"] != g["tiles"][1]["name"], f"{name}: first and last tile have one name")
    els = g["elements"]
    F.check(len(els) == 3 * min(tiles, 8), f"{name}: {len(els)} sampled elements")
    F.check(els[0]["tile"] == 0 and els[0]["offset"] == 0 and els[-1]["tile"] == tiles - 1 and els[-1]["offset"] == te - 1,
            f"{name}: the samples do not start at tile 0 offset 0 and end at the last offset of the last tile")
    for e in els:
        F.check(0 <= e["element"] < out and 0 <= e["tile"] < tiles and 0 <= e["offset"] < te and e["name"],
                f"{name}: sample {e} outside the output")
    distinct = {(e["tile"], e["offset"]) for e in els}
    F.check(len({e["element"] for e in els}) == len(distinct), f"{name}: two samples name one element")
    F.check(len({e["name"] for e in els}) == len(distinct), f"{name}: two sampled elements have one name")

# --- the text listing names the same families, cases and the families of the recorded mode ----------
t = common.run("list")
sections = common.list_sections(t.stdout)
F.check([l.split()[0] for l in sections.get("families", [])] == table, "list text: families differ from the JSON's")
F.check([l.split()[0] for l in sections.get("cases", [])] == [c["id"] for c in doc["cases"]], "list text: cases differ")
modes_text = "\n".join(sections.get("modes", []))
F.check("no family yet" not in modes_text, f"list text: a mode says it has no family yet:\n{modes_text}")
recorded = [f["id"] for f in doc["families"] if "recorded" in f["modes"]]
F.check(recorded and ", ".join(recorded) in modes_text, f"list text: the recorded mode does not name {recorded}")

# --- the coverage table: each case's value ranges, per family in the JSON and as counts in the text -----
range_names = [r["name"] for r in doc.get("value_ranges", [])]
F.check(range_names == ["near-1", "tiny", "large", "subnormal", "mixed"], f"list json: value ranges {range_names}")
F.check([l.split()[0] for l in sections.get("value ranges", [])] == range_names, "list text: value ranges differ")
F.check([r["family"] for r in doc.get("coverage", [])] == table, "list json: coverage rows are not the families")
for row in doc.get("coverage", []):
    for r in range_names:
        want = [c["id"] for c in doc["cases"] if c["family"] == row["family"] and r in c.get("value_ranges", [])]
        F.check(row["cases"].get(r) == want, f"list json: coverage of {row['family']} in {r}: {row['cases'].get(r)}")
for c in doc["cases"]:
    F.check(set(c.get("value_ranges", [None])) <= set(range_names), f"{c['id']}: value ranges {c.get('value_ranges')}")
    F.check((c["family"].startswith("train_step_") or c["family"] == "memtest_u32") == (c.get("value_ranges") == []),
            f"{c['id']}: value ranges {c.get('value_ranges')} (a replay and the memory test list none, every other "
            f"case some)")
cov_lines = sections.get("coverage", [])
F.check(len(cov_lines) == 2 + len(table) and cov_lines[1].split() == ["family", *range_names],
        f"list text: coverage table {cov_lines[:3]}")
for line, row in zip(cov_lines[2:], doc.get("coverage", [])):
    cells = [str(len(row["cases"][r])) if row["cases"][r] else "-" for r in range_names]
    F.check(line.split() == [row["family"], *cells], f"list text: coverage line {line!r}, the JSON says {cells}")

# --- --profile and a bad format ---------------------------------------------------------------------------
boot = common.listing("--profile", "boot")
F.check([c["id"] for c in boot["cases"]] == [c["id"] for c in bat["cases"] if "boot" in c["iterations"]],
        "list json --profile boot: not the boot cases")
F.check(boot["families"] == doc["families"], "list json --profile boot: families differ")
p = common.run("list", "--output-format", "yaml")
F.check(p.returncode == 64 and "yaml" in p.stderr and p.stdout == "", f"list --output-format yaml: exit {p.returncode}, "
        f"stderr {p.stderr.strip()[:300]!r}")

# --- the geometry is the screen's: an output fault at a sampled element is reported at its tile ---------
CASE = "softmax_f32.special_128x1000"
sample = common.CASES[CASE]["geometry"]["elements"][4]  # the middle of the second sampled tile
rc, rep, err = common.run_json("--enable", CASE, "--cpuset", "0",
                               "--inject", f"case={CASE},element={sample['element']},bit=3")
ms = rep["tests"][0]["miscompares"] if rep else []
F.check(rc == 1 and len(ms) == 1, f"injection at {sample}: exit {rc}, miscompares {ms[:2]} ({err.strip()[:300]})")
if ms:
    F.check(ms[0]["element"] == sample["element"] and ms[0]["tile"] == sample["tile"],
            f"injection at {sample}: reported at element {ms[0]['element']} tile {ms[0]['tile']}")
    F.check(sample["name"] in json.dumps(ms[0]), f"injection at {sample}: the report does not name {sample['name']!r}: {ms[0]}")

F.finish()

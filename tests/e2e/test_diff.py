"""'sdcscreen diff A B' on real reports of the binary: two clean runs agree (exit 0); a clean run against a
drill differs (exit 1) naming the case and the unit; two identical drills share their signature; with
--digests on both, the tile the drill changed is named; seeds that differ are said and verdicts still
compared; a case in one report only differs. A file that is not JSON, JSON that is not a report, a
report of an unknown schema_version, with tests that are not an array, or whose exit code and verdict disagree
are configuration errors (78) named in one line, by diff and by reason alike (one reader); a missing argument
is a command-line error (64).
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_diff")
SOFTMAX = "softmax_f32.special_128x1000"  # 2 boot iterations
GEMM = "gemm_f32.uniform_1024"
DRILL = f"case={SOFTMAX},element=5,bit=3"
TMP = tempfile.mkdtemp(prefix="sdcs-diff-")


def report(name, *args, cases=(SOFTMAX, GEMM), seed="7"):
    """Runs a screen of cases with a fixed seed into TMP/name.json; returns (path, report)."""
    path = os.path.join(TMP, name + ".json")
    enable = [a for c in cases for a in ("--enable", c)]
    p = common.run("run", *enable, "--seed", seed, *args, "--output-format", "json", "-o", path, "-q")
    rep = None
    if os.path.exists(path):
        with open(path) as f:
            rep = json.load(f)
    F.check(rep is not None, f"{name}: no report written (exit {p.returncode}, stderr: {p.stderr.strip()[:300]})")
    return path, rep


def diff(*args):
    return common.run("diff", *args, timeout=60)


def lines_of(p):
    return p.stdout.strip().splitlines()


def case_line(p, case):
    return next((ln for ln in lines_of(p) if ln.startswith(f"{case} on cpu:")), "")


def test_of(rep, case):
    return next((t for t in (rep or {}).get("tests", []) if t["id"] == case), {})


try:
    clean1, c1 = report("clean1")
    clean2, _ = report("clean2")
    drill1, d1 = report("drill1", "--inject", DRILL)
    drill2, _ = report("drill2", "--inject", DRILL)

    # --- two clean runs agree -------------------------------------------------------------------------
    p = diff(clean1, clean2)
    F.check(p.returncode == 0, f"clean vs clean: exit {p.returncode}, expected 0 ({p.stdout[-500:]} {p.stderr[:300]})")
    F.check(lines_of(p)[-1:] == ["diff: agree"], f"clean vs clean: last line {lines_of(p)[-1:]}")
    F.check(lines_of(p)[0].startswith("A: " + clean1) and lines_of(p)[1].startswith("B: " + clean2),
            f"clean vs clean: header {lines_of(p)[:2]}")
    F.check("tile_digests" not in json.dumps(c1), "a report without --digests carries tile digests")

    # --- a clean run against a drill: the case and its unit ------------------------------------------
    sm = test_of(d1, SOFTMAX)
    F.check(sm.get("result") == "fail" and len(sm.get("units_failed", [])) == 1, f"drill1: softmax test {sm}")
    unit = f"cpu {sm['units_failed'][0]}" if sm.get("units_failed") else "cpu ?"
    sig = sm["signatures"][0]["signature"] if sm.get("signatures") else "?"
    p = diff(clean1, drill1)
    F.check(p.returncode == 1, f"clean vs drill: exit {p.returncode}, expected 1 ({p.stderr[:300]})")
    line = case_line(p, SOFTMAX)
    F.check("result A pass, B fail" in line and f"units failed A none, B {unit}" in line,
            f"clean vs drill: the softmax line {line!r} does not name the verdicts and {unit}")
    F.check(f"only in B: {sig} on {unit}" in line, f"clean vs drill: the line {line!r} lacks the signature {sig}")
    F.check(case_line(p, GEMM) == "", f"clean vs drill: gemm agrees but is listed: {case_line(p, GEMM)!r}")
    F.check(lines_of(p)[-1:] == ["diff: differ (1 case)"], f"clean vs drill: last line {lines_of(p)[-1:]}")
    F.check(any(ln.startswith("note: B is a fault-injection run") for ln in lines_of(p)),
            "clean vs drill: no note that B is a drill")

    # --- two identical drills: the signature is shared ----------------------------------------------
    p = diff(drill1, drill2)
    F.check(p.returncode == 0, f"drill vs drill: exit {p.returncode}, expected 0 ({p.stdout[-800:]})")
    out = lines_of(p)
    shared = out[out.index("shared signatures:") + 1:] if "shared signatures:" in out else []
    F.check(any(ln.strip() == f"{sig} in {SOFTMAX} on cpu: A {unit}; B {unit}" for ln in shared),
            f"drill vs drill: {sig} on {unit} not listed as shared: {shared}")
    p = diff("--output-format", "json", drill1, drill2)
    F.check(p.returncode == 0, f"drill vs drill (json): exit {p.returncode}")
    try:
        j = json.loads(p.stdout)
        F.check(j["verdict"] == "agree" and j["differing_cases"] == 0, f"drill vs drill (json): {j['verdict']}")
        F.check([(s["signature"], s["id"], s["units_a"], s["units_b"]) for s in j["shared_signatures"]]
                == [(sig, SOFTMAX, [unit], [unit])], f"drill vs drill (json): shared {j['shared_signatures']}")
    except (ValueError, KeyError) as e:
        F.check(False, f"drill vs drill (json): not the expected JSON: {e!r}: {p.stdout[:300]}")

    # --- the retest's classification: the same drill, once a one-off and once stuck -----------------
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        u = cpus[1]
        once, _ = report("once", "--retest-on-failure", "2", "--inject", f"{DRILL},unit={u},persist=once")
        stuck, _ = report("stuck", "--retest-on-failure", "2", "--inject", f"{DRILL},unit={u},persist=always")
        p = diff(once, stuck)
        line = case_line(p, SOFTMAX)
        F.check(p.returncode == 1 and f"retest A cpu {u} not reproduced, B cpu {u} persistent" in line,
                f"once vs stuck: exit {p.returncode}, line {line!r}")
        p = diff("--output-format", "json", once, stuck)
        try:
            c = [x for x in json.loads(p.stdout)["cases"] if x["id"] == SOFTMAX][0]
            F.check(c["retest"] == {"a": {f"cpu {u}": "not reproduced"}, "b": {f"cpu {u}": "persistent"}},
                    f"once vs stuck (json): {c['retest']}")
        except (ValueError, KeyError, IndexError) as e:
            F.check(False, f"once vs stuck (json): not the expected JSON: {e!r}: {p.stdout[:300]}")
        p = diff(stuck, stuck)
        F.check(p.returncode == 0, f"stuck vs stuck: exit {p.returncode}")

    # --- --digests on both: the tile the drill changed ----------------------------------------------
    # The drill flips the last iteration, the one whose digests a report keeps.
    clean_d, cd = report("clean_digests", "--digests")
    last = test_of(cd, SOFTMAX).get("iterations", 2) - 1
    drill_d, dd = report("drill_digests", "--digests", "--inject", f"{DRILL},iteration={last}")
    t = test_of(cd, SOFTMAX)
    F.check(len(t.get("tile_digests", [])) == t.get("tiles") and t.get("digest_iteration") == last,
            f"--digests: {len(t.get('tile_digests', []))} digests of {t.get('tiles')} tiles, iteration {t.get('digest_iteration')}")
    dm = test_of(dd, SOFTMAX).get("miscompares", [])
    tile = dm[0]["tile"] if dm else -1
    F.check(tile >= 0, f"drill with --digests: no miscompare ({test_of(dd, SOFTMAX)})")
    p = diff(clean_d, drill_d)
    F.check(p.returncode == 1, f"digests clean vs drill: exit {p.returncode}, expected 1")
    line = case_line(p, SOFTMAX)
    F.check(f"tile digests: 1 of {t.get('tiles')} tiles differ (tile {tile})" in line,
            f"digests clean vs drill: tile {tile} not named in {line!r}")
    p = diff("--output-format", "json", clean_d, drill_d)
    try:
        j = json.loads(p.stdout)
        c = next(c for c in j["cases"] if c["id"] == SOFTMAX)
        F.check(c["tile_digests"]["differing"] == 1 and c["tile_digests"]["first_differing"] == [tile],
                f"digests clean vs drill (json): {c['tile_digests']}")
        g = next(c for c in j["cases"] if c["id"] == GEMM)
        F.check(g["tile_digests"]["differing"] == 0 and not g["differs"], f"digests: gemm {g}")
    except (ValueError, KeyError, StopIteration) as e:
        F.check(False, f"digests clean vs drill (json): not the expected JSON: {e!r}: {p.stdout[:300]}")

    # --- another seed: said, verdicts compared, digests not ----------------------------------------
    seed8, _ = report("seed8", "--digests", seed="8")
    p = diff(clean_d, seed8)
    F.check(p.returncode == 0, f"seed 7 vs seed 8 (both clean): exit {p.returncode}, expected 0 ({p.stdout[-500:]})")
    F.check(any(ln.startswith("note: seeds differ (7 and 8)") for ln in lines_of(p)), f"seeds differ not said: {p.stdout[:600]}")
    p = diff(seed8, drill_d)
    F.check(p.returncode == 1 and "tile digests" not in case_line(p, SOFTMAX),
            f"seed 8 vs a seed-7 drill: exit {p.returncode}, line {case_line(p, SOFTMAX)!r} (digests must not be compared)")

    # --- a case in one report only --------------------------------------------------------------------
    only, _ = report("softmax_only", cases=(SOFTMAX,))
    p = diff(clean1, only)
    F.check(p.returncode == 1 and case_line(p, GEMM) == f"{GEMM} on cpu: only in A (pass)",
            f"case only in A: exit {p.returncode}, line {case_line(p, GEMM)!r}")

    # --- what a report holds reaches the terminal as text: a host name's line break and escape shown, not obeyed
    with open(clean1) as f:
        forged = json.load(f)
    forged["host"]["hostname"] = "evil\n\x1b[2Jfake"
    evil = os.path.join(TMP, "evil.json")
    with open(evil, "w") as f:
        json.dump(forged, f)
    p = diff(evil, clean2)
    F.check(p.returncode == 0 and "\x1b" not in p.stdout and "host evil\\n\\x1b[2Jfake  start" in p.stdout,
            f"a host name with control characters: exit {p.returncode}, stdout {p.stdout[:300]!r}")

    # --- not reports: 78, one line naming the file -----------------------------------------------------
    def bad(name, text):
        path = os.path.join(TMP, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    with open(clean1) as f:
        rep = json.load(f)
    rep99 = dict(rep, schema_version=99)
    notests = {k: v for k, v in rep.items() if k != "tests"}
    # One reader decides what a report is, for diff, fleet and reason alike: these were read by reason as reports
    # (exit 0 or 2) while diff and fleet refused them.
    for what, path, says in (
            ("not JSON", bad("text.json", "this is not json\n"), "not valid JSON"),
            ("a JSON array", bad("array.json", "[1, 2]\n"), "not a report: expected a JSON object, found an array"),
            ("JSON null", bad("null.json", "null\n"), "not a report: expected a JSON object, found null"),
            ("exit 0 with the verdict fail", bad("0fail.json", json.dumps(dict(rep, exit={"code": 0, "verdict": "fail"}))),
             "exit.code 0 and exit.verdict 'fail' disagree"),
            ("exit 1 with the verdict pass", bad("1pass.json", json.dumps(dict(rep, exit={"code": 1, "verdict": "pass"}))),
             "exit.code 1 and exit.verdict 'pass' disagree"),
            ("schema_version 999", bad("v999.json", json.dumps(dict(rep, schema_version=999))), "schema_version 999"),
            ("schema_version '1'", bad("vstr.json", json.dumps(dict(rep, schema_version="1"))), 'schema_version "1"'),
            ("tests null", bad("testsnull.json", json.dumps(dict(rep, tests=None))), "'tests' is not an array"),
            ("JSON that is not a report", bad("other.json", json.dumps({"format": "sdcscreen-battery"})), "'schema_version' is missing"),
            ("schema_version 99", bad("v99.json", json.dumps(rep99)), "schema_version 99 is not one this sdcscreen reads"),
            ("a report without tests", bad("notests.json", json.dumps(notests)), "'tests' is missing"),
            ("a missing file", os.path.join(TMP, "absent.json"), "absent.json")):
        for args in ((clean1, path), (path, clean1)):
            p = diff(*args)
            err = p.stderr.strip().splitlines()
            F.check(p.returncode == 78, f"{what} ({'B' if args[0] == clean1 else 'A'}): exit {p.returncode}, expected 78")
            F.check(len(err) == 1 and path in err[0] and says in err[0], f"{what}: stderr {p.stderr.strip()[:300]!r}")
            F.check(p.stdout == "", f"{what}: stdout {p.stdout[:200]!r}")
        p = common.run("reason", path)
        err = p.stderr.strip().splitlines()
        F.check(p.returncode == 78 and len(err) == 1 and path in err[0] and says in err[0] and p.stdout == "",
                f"reason, {what}: exit {p.returncode}, stdout {p.stdout[:200]!r}, stderr {p.stderr.strip()[:300]!r}")

    # --- command-line errors: 64 -------------------------------------------------------------------------
    for args in ((clean1,), (), (clean1, clean2, "--output-format", "xml"), (clean1, clean2, clean1)):
        p = diff(*args)
        F.check(p.returncode == 64, f"diff {' '.join(args)}: exit {p.returncode}, expected 64")
finally:
    shutil.rmtree(TMP, ignore_errors=True)

F.finish()

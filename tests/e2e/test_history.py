"""The node's history and the resume policy, end to end: 'run --history DIR' appends one line per screen,
'sdcscreen history DIR' summarizes per unit, '--resume-policy' decides (exit 0 resume, 1 keep drained, 2 no
failure on record, a missing history too), '--forget' clears a repaired unit; every bad input has its exit code
(--resume-policy with --forget, --acknowledge or JSON is 64). Also the drill for a
screen that dies in its own reporting code: the in-progress files stay, never the previous verdict.

Real failures cannot be made on healthy hardware (and drills do not count for the policy), so the
policy's histories are written here line by line in the format 'run --history' writes (src/core/history.h);
the unit tests (tests/unit/core/test_history.cpp) cover each rule, this covers the binary around them.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_history")
CASE = "softmax_f32.special_128x1000"
TMP = tempfile.mkdtemp(prefix="sdcs-history-")


def lines(d):
    with open(os.path.join(d, "history.jsonl")) as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def history(*args):
    return common.run("history", *args, timeout=60)


def screen(profile="standard", exit=0, failing=(), screened="0-3", drill=False, selection="profile"):
    return {"v": 1, "time": "2026-11-01T00:00:00Z", "unix": 1793491200, "host": "n1", "profile": profile,
            "selection": selection, "drill": drill, "exit": exit, "verdict": "fail" if exit == 1 else "pass",
            "screened": {"cpu": screened}, "units": {u: "fail" for u in failing},
            "failures": [{"unit": u, "case": "gemm_f32.uniform_1024", "family": "gemm_f32", "result": "fail",
                          "signatures": ["gemm_f32:bits=m3:dir=0to1:ulp=2^3:cluster=single"]} for u in failing]}


def write(d, records):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "history.jsonl"), "w") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


try:
    # --- run --history: the directory is made, one line per screen, what it says ------------------------
    h = os.path.join(TMP, "h", "sub")
    os.makedirs(os.path.dirname(h))
    p = common.run("run", "--enable", CASE, "--history", h, "-q")
    F.check(p.returncode == 0, f"run --history: exit {p.returncode}: {p.stderr}")
    p = common.run("run", "--enable", CASE, "--inject", f"case={CASE},element=5,bit=3,unit=1", "--history", h, "-q")
    F.check(p.returncode == 1, f"drill with --history: exit {p.returncode}: {p.stderr}")
    recs = lines(h)
    F.check(len(recs) == 2, f"run --history: {len(recs)} lines, expected 2")
    if len(recs) == 2:
        a, b = recs
        F.check(a["exit"] == 0 and a["selection"] == "custom" and a["drill"] is False and a["units"] == {},
                f"run --history: clean line {a}")
        # Where the CPU sits (package, core) is recorded with its failure when the kernel says.
        place = {k: b["failures"][0].pop(k) for k in ("package", "core") if b["failures"] and k in b["failures"][0]}
        F.check(all(isinstance(v, int) and v >= 0 for v in place.values()), f"run --history: failure place {place}")
        F.check(b["exit"] == 1 and b["drill"] is True and b["units"] == {"cpu 1": "fail"} and
                b["failures"] == [{"unit": "cpu 1", "case": CASE, "family": "softmax_f32", "result": "fail",
                                   "drill": True,
                                   "signatures": ["softmax_f32:bits=m3:dir=0to1:ulp=2^3:cluster=single"]}],
                f"run --history: drill line {b}")
        # Each screen has its own run id, and the line names the digest of the report it rendered.
        hexes = [x.get(k, "") for x in (a, b) for k in ("run", "report_xxh3_128")]
        F.check(all(len(x) == 32 and all(c in "0123456789abcdef" for c in x) for x in hexes) and a["run"] != b["run"],
                f"run --history: run ids and report digests {hexes}")
    F.check(not [n for n in os.listdir(h) if n.startswith("unrecorded-")], f"markers left behind: {os.listdir(h)}")
    p = history(h)
    F.check(p.returncode == 0 and "2 screens" in p.stdout and "1 drill" in p.stdout and "no failure on record" in p.stdout,
            f"history of a drill: exit {p.returncode}: {p.stdout!r}")
    p = history(h, "--resume-policy")
    F.check(p.returncode == 2 and p.stdout.startswith("no-record: only drills failed"),
            f"policy on drills only: exit {p.returncode}: {p.stdout!r}")

    # A drill on cpu 0 and a real crash on cpu 1 in the same screen (its worker calls exit(), not a drill of
    # --inject's): the crash is a failure the policy counts, the drill's is not.
    hd = os.path.join(TMP, "drill-and-crash")
    env = dict(os.environ, SDCSCREEN_DRILL_WORKER_EXIT="1")
    p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--enable", CASE, "--inject",
                                                             f"case={CASE},element=5,bit=3,unit=0", "--history", hd,
                                                             "-q"])], capture_output=True, text=True, env=env, timeout=120)
    rec = lines(hd)[-1] if os.path.exists(os.path.join(hd, "history.jsonl")) else {}
    drills = {(f["unit"], f["result"], f["drill"]) for f in rec.get("failures", [])}
    F.check(p.returncode == 1 and rec.get("drill") is True and
            drills == {("cpu 0", "fail", True), ("cpu 1", "crash", False)},
            f"drill and crash: exit {p.returncode}, failures {drills}: {p.stderr[-300:]!r}")
    p = history(hd, "--resume-policy")
    F.check(p.returncode == 1 and p.stdout.startswith("hold: 3 clean standard screens to resume") and
            "cpu 1 failed in 1 screen" in p.stdout and "cpu 0" not in p.stdout,
            f"policy after a drill and a real crash: exit {p.returncode}: {p.stdout!r}")

    # The history line cannot be written (the drill fails the append as a full disk does): the screen's marker
    # stays, and the policy resumes nothing, not even after clean screens, until an administrator acknowledges.
    hf = os.path.join(TMP, "full")
    write(hf, [dict(screen("standard", 1, ["cpu 2"]), run="0" * 32)] +
          [dict(screen(), run=f"{i:032x}") for i in range(1, 4)])
    p = history(hf, "--resume-policy")
    F.check(p.returncode == 0 and p.stdout.startswith("resume: 3 clean"), f"before the full disk: {p.returncode} {p.stdout!r}")
    env = dict(os.environ, SDCSCREEN_DRILL_HISTORY_FULL="1")
    p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--enable", CASE, "--inject",
                                                             f"case={CASE},element=5,bit=3", "--history", hf, "-q"])],
                       capture_output=True, text=True, env=env, timeout=120)
    F.check(p.returncode == 1 and "cannot append" in p.stderr and "No space left" in p.stderr and
            len(lines(hf)) == 4, f"full disk: exit {p.returncode}: {p.stderr[-300:]!r}")
    markers = [n for n in os.listdir(hf) if n.startswith("unrecorded-")]
    F.check(len(markers) == 1, f"full disk: markers {os.listdir(hf)}")
    # A screen that ends before its first test (here a drill outside the case's output) leaves no marker.
    p = common.run("run", "--enable", CASE, "--inject", f"case={CASE},element=99999999,bit=3", "--history", hf, "-q")
    F.check(p.returncode == 64 and [n for n in os.listdir(hf) if n.startswith("unrecorded-")] == markers,
            f"refused screen: exit {p.returncode}, {os.listdir(hf)}")
    p = common.run("run", "--profile", "boot", "--history", hf, "-q")  # a later screen's line is written
    F.check(p.returncode == 0 and len(lines(hf)) == 5, f"after the full disk: exit {p.returncode}")
    p = history(hf, "--resume-policy", "--min-profile", "boot")
    F.check(p.returncode == 1 and p.stdout.startswith("unrecorded: a screen left no history line: not resumed") and
            (markers and markers[0] in p.stdout) and "--acknowledge" in p.stdout,
            f"policy with a screen unrecorded: exit {p.returncode}: {p.stdout!r}")
    p = history(hf)
    F.check(p.returncode == 0 and "a screen left no line" in p.stdout, f"summary with a screen unrecorded: {p.stdout!r}")
    p = history(hf, "--acknowledge")
    F.check(p.returncode == 0 and "removed" in p.stdout and not [n for n in os.listdir(hf) if n.startswith("unrecorded-")],
            f"acknowledge: exit {p.returncode}: {p.stdout!r}")
    p = history(hf, "--resume-policy", "--min-profile", "boot")
    # (the real boot screen names this host, not the written lines' n1: it does not cover their cpu 2)
    F.check(p.returncode == 0 and p.stdout.startswith("resume: 3 clean"), f"after acknowledge: {p.returncode} {p.stdout!r}")
    # Three copies of one clean line are one screen.
    write(hf, [dict(screen("standard", 1, ["cpu 2"]), run="0" * 32)] + [dict(screen(), run="f" * 32)] * 3)
    p = history(hf, "--resume-policy")
    F.check(p.returncode == 1 and p.stdout.startswith("hold: 2 clean standard screens to resume") and
            "2 lines repeat" in p.stdout, f"three identical lines: exit {p.returncode}: {p.stdout!r}")

    # A full profile screen is recorded as such (a boot screen on two CPUs is quick).
    p = common.run("run", "--profile", "boot", "--history", h, "-q")
    F.check(p.returncode == 0 and lines(h)[-1]["selection"] == "profile" and lines(h)[-1]["profile"] == "boot",
            f"full boot screen: exit {p.returncode}, line {lines(h)[-1]}")

    # --- the policy on written histories ---------------------------------------------------------------
    d = os.path.join(TMP, "policy")
    write(d, [screen(), screen("boot", 1, ["cpu 2"]), screen("standard"), screen("boot")])
    p = history(d, "--resume-policy")
    F.check(p.returncode == 1 and p.stdout.startswith("hold: 2 clean standard screens to resume"),
            f"hold: exit {p.returncode}: {p.stdout!r}")
    p = history(d, "--resume-policy", "--clean-screens", "1")
    F.check(p.returncode == 0 and p.stdout.startswith("resume: "), f"resume: exit {p.returncode}: {p.stdout!r}")
    p = history(d, "--resume-policy", "--clean-screens", "2", "--min-profile", "boot")
    F.check(p.returncode == 0, f"resume at boot depth: exit {p.returncode}: {p.stdout!r}")
    write(d, [screen("boot", 1, ["cpu 2"]), screen("burnin"), screen("boot", 1, ["cpu 2"])] + [screen("burnin")] * 5)
    p = history(d, "--resume-policy")
    F.check(p.returncode == 1 and p.stdout.startswith("never: cpu 2 failed twice: not resumed") and "--forget" in p.stdout,
            f"never: exit {p.returncode}: {p.stdout!r}")
    p = history(d)
    F.check(p.returncode == 0 and "cpu 2" in p.stdout and "25.0%" in p.stdout and "yes (1)" in p.stdout and
            "gemm_f32" in p.stdout and "3 units screened, never failed" in p.stdout and
            "signature gemm_f32:bits=m3:dir=0to1:ulp=2^3:cluster=single" in p.stdout,
            f"summary: {p.stdout!r}")
    p = history(d, "--output-format", "json")
    try:
        j = json.loads(p.stdout)
        u = [x for x in j["units"] if x["unit"] == "cpu 2"][0]
        F.check(j["screens"] == 8 and u["failures"] == 2 and u["flapping"] is True and
                j["resume_policy"]["decision"] == "never", f"summary json: {j}")
    except (ValueError, KeyError, IndexError) as e:
        F.check(False, f"summary json unreadable: {e}: {p.stdout[:300]!r}")
    p = history(d, "--forget", "cpu 2")
    F.check(p.returncode == 0 and lines(d)[-1].get("forget") == "cpu 2", f"forget: exit {p.returncode}: {p.stderr}")
    p = history(d, "--resume-policy")
    F.check(p.returncode == 2 and p.stdout.startswith("no-record"), f"after forget: exit {p.returncode}: {p.stdout!r}")

    # --- refusals -------------------------------------------------------------------------------------
    for args, code, what in (
            (("--forget", "cpu"), 64, "a unit without a number"),
            (("--forget", "core 3"), 64, "not a unit kind"),
            (("--clean-screens", "0"), 64, "zero clean screens"),
            (("--min-profile", "quick"), 64, "an unknown profile"),
            (("--output-format", "xml"), 64, "an unknown format"),
            (("--acknowledge", "--forget", "cpu 1"), 64, "acknowledge and forget at once"),
            # The policy's answer is its exit code: 0 after a forget or an acknowledge would read as 'resume'.
            (("--forget", "cpu 1", "--resume-policy"), 64, "forget with the policy"),
            (("--acknowledge", "--resume-policy"), 64, "acknowledge with the policy"),
            (("--output-format", "json", "--resume-policy"), 64, "the policy in JSON")):
        before = lines(d)
        p = history(d, *args)
        F.check(p.returncode == code and p.stderr.count("\n") == 1 and p.stdout == "",
                f"history {what}: exit {p.returncode}: {p.stdout!r} {p.stderr!r}")
        F.check(lines(d) == before, f"history {what}: the history changed")
    # A missing history: the summary has nothing to show (78); the policy has no failure on record (2, as
    # docs/fleet.md's resume policy says: nothing vouches for the node), and docs/design.md's table says both.
    missing = os.path.join(TMP, "nothing-here")
    p = history(missing)
    F.check(p.returncode == 78 and "no history" in p.stderr, f"summary of a missing history: {p.returncode} {p.stderr!r}")
    p = history(missing, "--resume-policy")
    F.check(p.returncode == 2 and "no screen on record" in p.stdout, f"policy with no history: {p.returncode} {p.stdout!r}")
    with open(os.path.join(common.SOURCE_DIR, "docs", "design.md")) as f:
        row = next((ln for ln in f if ln.startswith("| `history` |")), "")
    F.check("2 no failure on record (a missing history too" in row and "78 a bad history, or a missing one without "
            "`--resume-policy`" in row, f"docs/design.md's history row does not give a missing history's codes: {row!r}")
    bad = os.path.join(TMP, "bad")
    write(bad, [screen(), "{not json", screen()])
    for args in ((), ("--resume-policy",)):
        p = history(bad, *args)
        F.check(p.returncode == 78 and "line 2" in p.stderr, f"corrupt line {args}: exit {p.returncode}: {p.stderr!r}")
    write(bad, [screen(), dict(screen(), v=9)])
    p = history(bad, "--resume-policy")
    F.check(p.returncode == 78 and "format version 9" in p.stderr, f"future version: {p.returncode} {p.stderr!r}")
    with open(os.path.join(bad, "history.jsonl"), "w") as f:   # a write cut short: ignored, said
        f.write(json.dumps(screen("boot", 1, ["cpu 1"])) + "\n" + '{"v":1,"time":"2026')
    p = history(bad, "--resume-policy")
    F.check(p.returncode == 1 and "cut short" in p.stdout, f"torn tail: {p.returncode} {p.stdout!r}")
    notdir = os.path.join(TMP, "a-file")
    open(notdir, "w").close()
    p = common.run("run", "--enable", CASE, "--history", notdir, "-q")
    F.check(p.returncode == 78 and "--history" in p.stderr, f"run --history on a file: {p.returncode} {p.stderr!r}")
    link = os.path.join(TMP, "link")
    os.makedirs(link)
    victim = os.path.join(TMP, "victim")
    with open(victim, "w") as f:
        f.write("untouched\n")
    os.symlink(victim, os.path.join(link, "history.jsonl"))
    p = common.run("run", "--enable", CASE, "--history", link, "-q")
    F.check(p.returncode == 78 and "symbolic link" in p.stderr, f"history.jsonl a symlink: {p.returncode} {p.stderr!r}")
    F.check(open(victim).read() == "untouched\n", "history.jsonl a symlink: the target was written")
    p = common.run("run", "--enable", CASE, "--history", "", "-q")
    F.check(p.returncode == 64, f"run --history '': exit {p.returncode}")

    # --- the default history: $SDCSCREEN_HISTORY (here a directory of the test's), else /var/lib/sdcscreen as root --
    def run_env(value, *args):
        env = dict(os.environ)
        if value is None:
            env.pop("SDCSCREEN_HISTORY", None)
        else:
            env["SDCSCREEN_HISTORY"] = value
        return subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--enable", CASE, "-q", *args])],
                              capture_output=True, text=True, env=env, timeout=120)
    dflt = os.path.join(TMP, "default-history")
    p = run_env(dflt)
    F.check(p.returncode == 0 and len(lines(dflt)) == 1, f"default history: exit {p.returncode}, {p.stderr!r}")
    p = run_env(dflt, "--history", "none")
    F.check(p.returncode == 0 and len(lines(dflt)) == 1, f"--history none: exit {p.returncode}, a line was written")
    p = run_env("none")
    F.check(p.returncode == 0 and len(lines(dflt)) == 1, f"SDCSCREEN_HISTORY=none: exit {p.returncode}")
    p = run_env(notdir)  # a default that cannot be used: said, and the screen's exit code stays
    F.check(p.returncode == 0 and "not recorded in the default history" in p.stderr,
            f"unusable default history: exit {p.returncode}, {p.stderr!r}")
    p = run_env(notdir, "--inject", f"case={CASE},element=5,bit=3")
    F.check(p.returncode == 1, f"unusable default history, a miscompare: exit {p.returncode}")
    p = common.run("run", "--help")
    F.check("/var/lib/sdcscreen when run as root" in p.stdout, "run --help does not say where the default history is")

    # --- the screen dies in its own reporting code: in-progress files stay, never the old verdict ------------
    out = os.path.join(TMP, "r.json")
    prom = os.path.join(TMP, "p.prom")
    p = common.run("run", "--enable", CASE, "-q", "--output-format", "json", "-o", out, "--prometheus", prom)
    F.check(p.returncode == 0, f"report crash drill: first run exit {p.returncode}")
    env = dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="1")
    p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--enable", CASE, "-q", "--output-format", "json",
                                                             "-o", out, "--prometheus", prom, "--history", h])],
                       capture_output=True, text=True, env=env, timeout=120)
    F.check(p.returncode == 2 and "outside any unit's work" in p.stderr,
            f"report crash drill: exit {p.returncode}, stderr {p.stderr!r}")
    try:
        r = json.load(open(out))
        F.check(r["exit"]["code"] == 2 and any("screen in progress" in e for e in r["errors"]),
                f"report crash drill: the report is {r['exit']}, errors {r['errors']}")
    except (OSError, ValueError, KeyError) as e:
        F.check(False, f"report crash drill: no readable report: {e}")
    F.check("sdcscreen_exit_code 2" in open(prom).read(), "report crash drill: the metrics do not say exit 2")
    F.check(lines(h)[-1]["selection"] == "profile", "report crash drill: a history line was written for a screen that died")
finally:
    shutil.rmtree(TMP, ignore_errors=True)

F.finish()

"""Identity everywhere, end to end: 'history' keys a GPU by UUID (a renumbered GPU keeps its record, a replaced
one starts a new one, lines written before identity was recorded still read), shows each GPU failure's SMs and
forgets a GPU by UUID; 'diff' matches a GPU with itself across a renumbering and says when a CPU's microcode
changed; 'bundle' writes a tar.gz of exactly the reports, the history, info, the pattern manifest and the
reproduce commands, and fails with 78 where it cannot write.
"""
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_identity")
CASE = "softmax_f32.special_128x1000"
TMP = tempfile.mkdtemp(prefix="sdcs-identity-")


def gpu_screen(uuids, failing=(), legacy=False):
    line = {"v": 1, "time": "2030-03-15T08:00:00Z", "unix": 1899000000, "host": "g1", "profile": "standard",
            "selection": "profile", "drill": False, "exit": 1 if failing else 0,
            "verdict": "fail" if failing else "pass", "screened": {"gpu": f"0-{len(uuids) - 1}"},
            "units": {u: "fail" for u in failing},
            "failures": [{"unit": u, "case": "gemm_f32.uniform_1024", "family": "gemm_f32", "result": "fail",
                          "sms": [3, 17]} for u in failing]}
    if not legacy:
        line["gpus"] = {f"gpu {i}": {"uuid": u, "serial": None} for i, u in enumerate(uuids)}
    return line


def write(d, records):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "history.jsonl"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def policy(d):
    p = common.run("history", d, "--resume-policy", timeout=60)
    return p.returncode, p.stdout


try:
    # --- history: renumbered, replaced, legacy lines, SMs shown, forget by UUID --------------------------
    d = os.path.join(TMP, "renumbered")
    write(d, [gpu_screen(["GPU-aaaa", "GPU-bbbb"], ["gpu 0"]), gpu_screen(["GPU-bbbb", "GPU-aaaa"], ["gpu 1"])])
    code, out = policy(d)
    F.check(code == 1 and out.startswith("never: gpu 1 failed twice"), f"renumbered GPU: {code} {out!r}")
    p = common.run("history", d, timeout=60)
    F.check(p.returncode == 0 and "uuid GPU-aaaa" in p.stdout and "on sm 3, sm 17" in p.stdout,
            f"history text: no uuid or SMs: {p.stdout!r}")
    p = common.run("history", d, "--output-format", "json", timeout=60)
    try:
        units = {u["id"]: u for u in json.loads(p.stdout)["units"]}
        a = units["uuid GPU-aaaa"]
        F.check(a["failures"] == 2 and a["uuid"] == "GPU-aaaa" and a["serial"] is None and
                a["failure_list"][0]["sms"] == [3, 17], f"history json: {a}")
    except (ValueError, KeyError, IndexError) as e:
        F.check(False, f"history json: {e}: {p.stdout!r}")
    p = common.run("history", d, "--forget", "GPU-aaaa", timeout=60)
    F.check(p.returncode == 0, f"--forget UUID: exit {p.returncode}: {p.stderr}")
    code, out = policy(d)
    F.check(code == 2 and out.startswith("no-record"), f"after --forget UUID: {code} {out!r}")
    p = common.run("history", d, "--forget", "GPU-a;rm -rf /", timeout=60)
    F.check(p.returncode == 64, f"--forget with a bad UUID: exit {p.returncode}")

    d = os.path.join(TMP, "replaced")
    write(d, [gpu_screen(["GPU-aaaa", "GPU-bbbb"], ["gpu 0"]), gpu_screen(["GPU-cccc", "GPU-bbbb"], ["gpu 0"])])
    code, out = policy(d)
    F.check(code == 1 and out.startswith("hold:") and "replaced by GPU-cccc" in out,
            f"replaced GPU: {code} {out!r} (before identity: 'gpu 0 failed twice')")

    d = os.path.join(TMP, "legacy")
    write(d, [gpu_screen(["", ""], ["gpu 0"], legacy=True), gpu_screen(["GPU-aaaa", "GPU-bbbb"], ["gpu 0"])])
    code, out = policy(d)
    F.check(code == 1 and out.startswith("never: gpu 0 failed twice"), f"legacy line: {code} {out!r}")

    # --- diff: the same GPU renumbered is compared with itself; microcode change is said -----------------
    code, rep, err = common.run_json("--enable", CASE)
    F.check(code == 0 and rep is not None, f"run for diff: exit {code}: {err}")
    if rep is not None:
        t = rep["tests"][0]

        def gpu_report(order, failing_uuid, microcode):
            r = json.loads(json.dumps(rep))
            r["devices"] = [{"index": i, "kind": "cuda", "uuid": u} for i, u in enumerate(order)]
            r["tests"] = []
            for i, u in enumerate(order):
                x = dict(t, device=f"cuda:{i}", signatures=[], units_failed=[5] if u == failing_uuid else [],
                         result="fail" if u == failing_uuid else "pass")
                x.pop("tile_digests", None)
                r["tests"].append(x)
            if isinstance(r["host"].get("identity"), dict):
                r["host"]["identity"]["cpu"]["microcode"] = microcode
            return r

        fa, fb, fc = (os.path.join(TMP, n) for n in ("a.json", "b.json", "c.json"))
        for f, r in ((fa, gpu_report(["GPU-aaaa", "GPU-bbbb"], "GPU-bbbb", "0x10")),
                     (fb, gpu_report(["GPU-bbbb", "GPU-aaaa"], "GPU-bbbb", "0x11")),
                     (fc, gpu_report(["GPU-aaaa", "GPU-cccc"], "GPU-cccc", "0x10"))):
            with open(f, "w") as o:
                json.dump(r, o)
        p = common.run("diff", fa, fb, "--output-format", "json", timeout=60)
        F.check(p.returncode == 0, f"diff renumbered: exit {p.returncode} (keyed by ordinal they differ): {p.stdout}")
        try:
            j = json.loads(p.stdout)
            devs = sorted(c["device"] for c in j["cases"])
            F.check(devs == ["cuda:0 in A, cuda:1 in B (GPU-aaaa)", "cuda:1 in A, cuda:0 in B (GPU-bbbb)"],
                    f"diff renumbered: devices {devs}")
            if isinstance(rep["host"].get("identity"), dict):
                F.check(any("microcode differs (A 0x10, B 0x11)" in n for n in j["notes"]), f"no microcode note: {j}")
        except (ValueError, KeyError) as e:
            F.check(False, f"diff json: {e}: {p.stdout!r}")
        p = common.run("diff", fa, fc, "--output-format", "json", timeout=60)
        try:
            devs = sorted(c["device"] for c in json.loads(p.stdout)["cases"])
            F.check("cuda:1 (A GPU-bbbb, B GPU-cccc: another GPU)" in devs, f"diff replaced: {devs}")
        except (ValueError, KeyError) as e:
            F.check(False, f"diff replaced json: {e}: {p.stdout!r}")

    # --- bundle: the archive holds exactly what it says -----------------------------------------------
    h = os.path.join(TMP, "node")
    rj, rt = os.path.join(TMP, "r1.json"), os.path.join(TMP, "r2.txt")
    page, prom = os.path.join(TMP, "r1.html"), os.path.join(TMP, "r1.prom")
    p = common.run("run", "--enable", CASE, "--history", h, "-q", "--output-format", "json", "-o", rj,
                   "--html", page, f"--prometheus={prom}", "--digests")
    F.check(p.returncode == 0, f"run -o json --history: exit {p.returncode}: {p.stderr}")
    p = common.run("run", "--enable", CASE, "--history", h, "-q", "-o", rt)
    F.check(p.returncode == 0, f"run -o text --history: exit {p.returncode}: {p.stderr}")
    with open(os.path.join(h, "history.jsonl")) as f:
        recs = [json.loads(ln) for ln in f if ln.strip()]
    F.check([r.get("report") for r in recs] == [os.path.realpath(rj), os.path.realpath(rt)],
            f"history does not name the reports: {[r.get('report') for r in recs]}")
    out = os.path.join(TMP, "ticket.tar.gz")
    p = common.run("bundle", h, "-o", out, timeout=120)
    F.check(p.returncode == 0 and os.path.isfile(out), f"bundle: exit {p.returncode}: {p.stderr}")
    if os.path.isfile(out):
        with tarfile.open(out, "r:gz") as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            top = names[0].split("/")[0] if names else ""
            F.check(top.startswith("sdcscreen-bundle-"), f"bundle: top directory {top!r}")
            rel = sorted(n[len(top) + 1:] for n in names if n != top)
            want = sorted(["history.jsonl", "info.json", "info.txt", "patterns-manifest.json", "reproduce.txt",
                           "README.txt", "reports", "reports/1-r2.txt", "reports/2-r1.json"])
            F.check(rel == want, f"bundle members: {rel}, expected {want}")
            F.check(all(m.uid == 0 and m.gid == 0 and (m.isfile() or m.isdir()) for m in members),
                    "bundle: a member is not a plain file or directory owned by 0")

            def read(n):
                return tar.extractfile(f"{top}/{n}").read().decode()

            if rel == want:
                F.check(read("history.jsonl") == open(os.path.join(h, "history.jsonl")).read(), "bundle: history")
                F.check(read("reports/2-r1.json") == open(rj).read(), "bundle: the JSON report")
                F.check(read("reports/1-r2.txt") == open(rt).read(), "bundle: the text report")
                F.check(read("patterns-manifest.json") == open(os.path.join(common.PATTERNS, "manifest.json")).read(),
                        "bundle: the pattern manifest")
                info = json.loads(read("info.json"))
                F.check(info["tool"]["name"] == "sdcscreen" and "identity" in info["host"], "bundle: info.json")
                F.check(read("info.txt").startswith("sdcscreen "), "bundle: info.txt")
                repro = read("reproduce.txt")
                F.check(repro.count("sdcscreen run") == 2 and CASE in repro, f"bundle: reproduce.txt {repro!r}")
                readme = read("README.txt")
                F.check("not included" not in readme and "reports/2-r1.json" in readme, f"bundle README: {readme!r}")

    # --- the reproduce line: safe to paste -----------------------------------------------------------------
    # It names the program as invoked, keeps the selection and seed, and leaves out every output and state
    # option (saying so): pasted, it overwrites none of the run's files and adds nothing to its history.
    rep = json.load(open(rj))
    repro = shlex.split(rep.get("reproduce", ""))
    dropped = ["-o", "-q", "--output-format", "--html", "--prometheus", "--history", "--lock-file", "--digests"]
    F.check(repro[:2] == [common.SDCSCREEN, "run"] and CASE in repro and rep["seed_text"] in repro
            and repro[-2:] == ["--history", "none"], f"reproduce: {repro}")
    F.check(not [a for a in repro if a.split("=")[0] in dropped[1:] and a != "--history"]
            and repro.count("--history") == 1 and "-o" not in repro and h not in repro and rj not in repro,
            f"reproduce keeps an output or state option: {repro}")
    F.check(sorted(rep.get("reproduce_left_out", [])) == sorted(dropped), f"reproduce_left_out: {rep.get('reproduce_left_out')}")
    with open(rt) as f:
        lines = f.read().splitlines()
    at = [i for i, ln in enumerate(lines) if ln.startswith("reproduce: ")]
    F.check(len(at) == 1 and lines[at[0] + 1] == "  (outputs and state left out of it: --lock-file --history -q -o)",
            f"text report: no note after the reproduce line: {lines[at[0]:at[0] + 2] if at else lines[-3:]}")
    before = {f: open(f, "rb").read() for f in (rj, rt, page, prom, os.path.join(h, "history.jsonl"))}
    # Pasted as it stands (with this test's own lock file, so that parallel tests do not refuse it).
    p = subprocess.run(repro + ["--lock-file", common.LOCK_FILE], capture_output=True, text=True, timeout=600)
    F.check(p.returncode == 0 and "exit: pass" in p.stdout and CASE in p.stdout,
            f"reproduce pasted: exit {p.returncode}: {p.stdout[-300:]!r} {p.stderr[-300:]!r}")
    for f, content in before.items():
        F.check(open(f, "rb").read() == content, f"reproduce pasted: {f} changed")

    # 'reason': a report that passed has no drain reason (2, nothing printed); a text report is no JSON one (78).
    p = common.run("reason", rj, timeout=60)
    F.check(p.returncode == 2 and p.stdout == "" and "no drain reason" in p.stderr, f"reason of a pass: {p.returncode} {p.stdout!r}")
    p = common.run("reason", rt, timeout=60)
    F.check(p.returncode == 78 and p.stdout == "", f"reason of a text report: {p.returncode} {p.stdout!r} {p.stderr!r}")

    # A history line naming a file that is no report (edited by hand, or forged) brings nothing of it along.
    secret = os.path.join(TMP, "secret.txt")
    with open(secret, "w") as f:
        f.write("root:password-hash\n")
    forged = os.path.join(TMP, "forged")
    line = dict(recs[-1], report=secret)
    os.makedirs(forged)
    with open(os.path.join(forged, "history.jsonl"), "w") as f:
        f.write(json.dumps(line) + "\n")
    out3 = os.path.join(TMP, "forged.tar.gz")
    p = common.run("bundle", forged, "-o", out3, timeout=120)
    F.check(p.returncode == 0, f"bundle of a forged history: exit {p.returncode}: {p.stderr}")
    if os.path.isfile(out3):
        with tarfile.open(out3, "r:gz") as tar:
            names = tar.getnames()
            F.check(not [n for n in names if "/reports/" in n], f"bundle took a file that is no report: {names}")
            body = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
            F.check(b"password-hash" not in body, "bundle: the forged report's content is in the archive")
            readme = tar.extractfile([n for n in names if n.endswith("README.txt")][0]).read().decode()
            F.check("not an sdcscreen report" in readme, f"bundle README does not say why: {readme!r}")

    # A missing history is said, and what exists is still bundled.
    out2 = os.path.join(TMP, "nohist.tar.gz")
    p = common.run("bundle", os.path.join(TMP, "nowhere"), "-o", out2, timeout=120)
    F.check(p.returncode == 0 and "no history" in p.stderr, f"bundle without history: {p.returncode} {p.stderr!r}")
    if os.path.isfile(out2):
        with tarfile.open(out2, "r:gz") as tar:
            rel = sorted(n.split("/", 1)[1] for n in tar.getnames() if "/" in n)
            F.check(rel == sorted(["info.json", "info.txt", "patterns-manifest.json", "reproduce.txt", "README.txt",
                                   "reports"]), f"bundle without history: {rel}")
            readme = tar.extractfile([n for n in tar.getnames() if n.endswith("README.txt")][0]).read().decode()
            F.check("no history" in readme and "no report" in readme, f"bundle without history: README {readme!r}")

    # Where it cannot write: 78, one line, nothing left behind.
    for bad in (os.path.join(TMP, "missing-dir", "x.tar.gz"), TMP):
        p = common.run("bundle", h, "-o", bad, timeout=120)
        F.check(p.returncode == 78 and p.stderr.count("\n") == 1 and "-o" in p.stderr,
                f"bundle -o {bad}: exit {p.returncode}: {p.stderr!r}")
    ro = os.path.join(TMP, "ro")
    os.makedirs(ro)
    os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() != 0:  # root writes anywhere
        p = common.run("bundle", h, "-o", os.path.join(ro, "x.tar.gz"), timeout=120)
        F.check(p.returncode == 78, f"bundle -o read-only dir: exit {p.returncode}: {p.stderr!r}")
    F.check(not [n for n in os.listdir(TMP) if ".partial-" in n], "bundle left a partial archive")
    # A name with shell metacharacters is a file name, nothing more.
    odd = os.path.join(TMP, "a b;$(touch pwned)'.tar.gz")
    p = common.run("bundle", h, "-o", odd, timeout=120)
    F.check(p.returncode == 0 and os.path.isfile(odd) and not os.path.exists("pwned") and
            not os.path.exists(os.path.join(TMP, "pwned")), f"bundle -o odd name: {p.returncode} {p.stderr!r}")
finally:
    shutil.rmtree(TMP, ignore_errors=True)

F.finish()

"""'sdcscreen fleet' on reports of the binary: four real screens (a pass on the CPU, a drill failing a CPU, a drill
failing an SM of an emulated GPU with a retest (another bit: another signature), an inconclusive screen missing
a GPU) are the shapes; 2,000 reports are built from them by changing host names and start times (30 nodes
share the CPU drill's signature, 21 the GPU's, 22 are inconclusive, 50 are stale, and 50 have an older
failing report besides their newest). Checked: the table, the JSON, the grouping by
signature, the stale list, the newest report winning, the exit codes (a failure wins over inconclusive and
stale), files that are not reports (listed, not fatal; an exit code and verdict that disagree, a JSON array, an
empty host name), a host name's control characters shown visibly, a report dated in the future never hiding a
newer one, a missing PATH (78), nothing readable (78), and the HTML
page in headless Chromium (grid cells by verdict, each failing node linked to its details; skipped without
Chromium). The 2,000-report run's wall time and peak memory are printed, never asserted.
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_fleet")
SOFTMAX = "softmax_f32.special_128x1000"  # 2 boot iterations, 32 tiles
TMP = tempfile.mkdtemp(prefix="sdcs-fleet-")
NOW = time.time()


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def screen(name, *args):
    path = os.path.join(TMP, name + ".json")
    p = common.run("run", "--enable", SOFTMAX, "--seed", "7", *args, "--output-format", "json", "-o", path, "-q")
    rep = json.load(open(path)) if os.path.exists(path) else None
    F.check(rep is not None, f"{name}: no report (exit {p.returncode}: {p.stderr.strip()[-300:]})")
    return rep or {}


def as_node(rep, host, age_s):
    r = copy.deepcopy(rep)
    r["host"]["hostname"] = host
    r["timing"]["start"] = iso(NOW - age_s)
    return r


def write(d, name, rep):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        json.dump(rep, f)


def fleet(*args):
    return common.run("fleet", *args, timeout=120)


def fleet_json(*args):
    p = fleet(*args, "--output-format", "json")
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        F.check(False, f"fleet {args}: not JSON (exit {p.returncode}): {p.stdout[:200]} {p.stderr[:300]}")
        return p, {}


def node(j, name):
    return next((n for n in j.get("nodes", []) if n["node"] == name), {})


try:
    pass_r = screen("pass")
    cpu_r = screen("cpu-fail", "--inject", f"case={SOFTMAX},element=5,bit=3")
    gpu_r = screen("gpu-fail", "--backend", "emulated:1", "--inject",
                   f"case={SOFTMAX},element=5,bit=4,unit=1,persist=always", "--retest-on-failure", "2")
    inc_r = screen("inconclusive", "--backend", "emulated:1", "--expect-devices", "2")
    F.check([r.get("exit", {}).get("code") for r in (pass_r, cpu_r, gpu_r, inc_r)] == [0, 1, 1, 2],
            "the four screens did not exit 0, 1, 1, 2")
    cpu_t = next(t for t in cpu_r["tests"] if t["id"] == SOFTMAX)
    cpu_sig, cpu_unit = cpu_t["signatures"][0]["signature"], f"cpu {cpu_t['units_failed'][0]}"
    gpu_uuid = gpu_r["devices"][0]["uuid"]

    # --- four nodes, one of each ---------------------------------------------------------------------------
    small = os.path.join(TMP, "small")
    for name, rep in (("a-pass", pass_r), ("b-cpu", cpu_r), ("c-gpu", gpu_r), ("d-inc", inc_r)):
        write(small, name + ".json", as_node(rep, name, 60))
    p, j = fleet_json(small)
    F.check(p.returncode == 1, f"small fleet: exit {p.returncode}, want 1 (a node failed): {p.stderr[:300]}")
    F.check([n["node"] for n in j.get("nodes", [])] == ["a-pass", "b-cpu", "c-gpu", "d-inc"], "small: node order")
    F.check([node(j, n).get("status") for n in ("a-pass", "b-cpu", "c-gpu", "d-inc")] ==
            ["pass", "fail", "fail", "inconclusive"], f"small: statuses {[n.get('status') for n in j['nodes']]}")
    cf = node(j, "b-cpu").get("failures", [])
    F.check(cf == [{"identity": cpu_unit, "test": SOFTMAX, "signature": cpu_sig, "classification": None}],
            f"small: the CPU node's failures {cf}")
    gf = node(j, "c-gpu").get("failures", [])
    F.check(len(gf) == 1 and gf[0]["identity"] == f"gpu 0 sm 1 ({gpu_uuid})" and gf[0]["classification"] == "persistent",
            f"small: the GPU node's failures {gf} (want gpu 0 sm 1 ({gpu_uuid}), persistent)")
    F.check(node(j, "a-pass").get("version") == pass_r["tool"]["version"], "small: the version column")
    F.check(j.get("exit") == {"code": 1, "verdict": "fail"} and j.get("counts", {}).get("stale") == 0,
            f"small: exit {j.get('exit')} counts {j.get('counts')}")
    p = fleet(small)
    row = next((ln for ln in p.stdout.splitlines() if ln.startswith("c-gpu ")), "")
    F.check(" fail " in row and "1 failing" in row, f"small text: the c-gpu row {row!r}")
    F.check(any(gpu_uuid in ln and "persistent" in ln for ln in p.stdout.splitlines()),
            "small text: no line names the GPU's UUID and its classification")
    F.check(p.stdout.splitlines()[-1] == "fleet: fail (2 fail, 1 inconclusive, 1 pass; 0 stale)",
            f"small text: last line {p.stdout.splitlines()[-1:]}")

    # --- exit codes: pass 0; inconclusive 2; stale 2; a failure wins ---------------------------------------
    ok = os.path.join(TMP, "ok")
    write(ok, "x.json", as_node(pass_r, "x", 60))
    F.check(fleet(ok).returncode == 0, "one passing node: exit not 0")
    F.check(fleet(ok, "--stale", "30s").returncode == 2, "a stale passing node: exit not 2")
    F.check(fleet(ok, os.path.join(small, "d-inc.json")).returncode == 2, "pass + inconclusive: exit not 2")
    F.check(fleet(ok, os.path.join(small, "b-cpu.json"), "--stale", "30s").returncode == 1,
            "stale + fail: the failure does not win")
    # The newest report of a node wins, whichever order the files come in; the count says how many were read.
    write(ok, "x-old-fail.json", as_node(cpu_r, "x", 3600))
    p, j = fleet_json(ok)
    F.check(p.returncode == 0 and node(j, "x").get("reports") == 2 and node(j, "x").get("status") == "pass",
            f"newest wins: exit {p.returncode}, {node(j, 'x')}")
    write(ok, "x-new-fail.json", as_node(cpu_r, "x", 10))
    p, j = fleet_json(ok)
    F.check(p.returncode == 1 and node(j, "x").get("reports") == 3 and node(j, "x").get("status") == "fail",
            f"a newer failure wins: exit {p.returncode}, {node(j, 'x')}")

    # --- bad inputs ----------------------------------------------------------------------------------------
    bad = os.path.join(TMP, "bad")
    write(bad, "y.json", as_node(pass_r, "y", 60))
    with open(os.path.join(bad, "corrupt.json"), "w") as f:
        f.write('{"schema_version": 12, "tool": ')
    write(bad, "other.json", {"format": "something else"})
    with open(os.path.join(bad, "notes.txt"), "w") as f:
        f.write("not a report, and not *.json: not read")
    p, j = fleet_json(bad)
    got = {os.path.basename(x["path"]): x["reason"] for x in j.get("not_read", [])}
    F.check(p.returncode == 0 and set(got) == {"corrupt.json", "other.json"},
            f"bad files: exit {p.returncode}, not read {got} (want corrupt.json and other.json, exit 0)")
    F.check("not valid JSON" in got.get("corrupt.json", "") and "schema_version" in got.get("other.json", ""),
            f"bad files: reasons {got}")
    p = fleet(os.path.join(TMP, "no-such-dir"))
    F.check(p.returncode == 78 and "no-such-dir: no such file or directory" in p.stderr,
            f"missing PATH: exit {p.returncode}, stderr {p.stderr.strip()!r}")
    p = fleet(os.path.join(bad, "corrupt.json"))
    F.check(p.returncode == 78 and "no report could be read" in p.stderr, f"only a corrupt file: exit {p.returncode}")
    p = fleet(ok, "--stale", "soon")
    F.check(p.returncode == 64 and "--stale" in p.stderr, f"--stale soon: exit {p.returncode} {p.stderr.strip()!r}")
    F.check(fleet().returncode == 64, "no PATH: exit not 64")

    # One reader decides what a report is: a report whose exit code and verdict disagree was shown as 'fail' in
    # the table and counted as a pass; a JSON array was "not a report (a JSON object)".
    odd = os.path.join(TMP, "odd")
    write(odd, "z.json", as_node(pass_r, "z", 60))
    write(odd, "mixed.json", dict(as_node(pass_r, "w", 60), exit={"code": 0, "verdict": "fail"}))
    write(odd, "array.json", [pass_r])
    write(odd, "null.json", None)
    write(odd, "nohost.json", as_node(pass_r, "", 60))
    p, j = fleet_json(odd)
    got = {os.path.basename(x["path"]): x["reason"] for x in j.get("not_read", [])}
    F.check(p.returncode == 0 and [n["node"] for n in j.get("nodes", [])] == ["z"] and
            set(got) == {"mixed.json", "array.json", "null.json", "nohost.json"},
            f"odd files: exit {p.returncode}, nodes {[n['node'] for n in j.get('nodes', [])]}, not read {got}")
    F.check("exit.code 0 and exit.verdict 'fail' disagree" in got.get("mixed.json", "") and
            got.get("array.json") == "not a report: expected a JSON object, found an array" and
            got.get("null.json") == "not a report: expected a JSON object, found null" and
            "host.hostname is empty" in got.get("nohost.json", ""), f"odd files: reasons {got}")

    # A host name with a newline and escape sequences: shown visibly, one row, nothing raw on the terminal.
    esc_dir = os.path.join(TMP, "escapes")
    write(esc_dir, "e.json", as_node(cpu_r, "evil\n\x1b[2Jfake-node  2026-01-01  pass", 60))
    p = fleet(esc_dir)
    F.check("\x1b" not in p.stdout and "\r" not in p.stdout and
            any(ln.startswith("evil\\n\\x1b[2Jfake-node ") and " fail " in ln for ln in p.stdout.splitlines()) and
            not any(ln.startswith("fake-node") for ln in p.stdout.splitlines()),
            f"escapes: the host name reached the table raw: {p.stdout[:600]!r}")

    # A report dated in the future (a boot before NTP set the clock) never hides the node's newer reports.
    fut = os.path.join(TMP, "future")
    write(fut, "x-future-pass.json", as_node(pass_r, "x", -(2099 - 2026) * 365 * 86400))
    write(fut, "x-real-fail.json", as_node(cpu_r, "x", 600))
    p, j = fleet_json(fut)
    x = node(j, "x")
    F.check(p.returncode == 1 and x.get("status") == "fail" and x.get("file", "").endswith("x-real-fail.json") and
            x.get("age_s", -1) > 0 and (x.get("dated_in_future") or {}).get("reports") == 1 and
            j.get("counts", {}).get("dated_in_future") == 1,
            f"future pass beside a newer fail: exit {p.returncode}, node {x}")
    os.remove(os.path.join(fut, "x-real-fail.json"))
    write(fut, "x-real-pass.json", as_node(pass_r, "x", 600))
    htmlf = os.path.join(TMP, "future.html")
    p, j = fleet_json(fut, "--html", htmlf)
    x = node(j, "x")
    F.check(p.returncode == 2 and x.get("status") == "inconclusive" and x.get("file", "").endswith("x-real-pass.json")
            and j.get("exit") == {"code": 2, "verdict": "inconclusive"} and
            [(d["node"], d["shown"]) for d in j.get("dated_in_future", [])] == [("x", False)],
            f"future pass beside a real pass: exit {p.returncode}, node {x}, {j.get('dated_in_future')}")
    page = open(htmlf, encoding="utf-8").read() if os.path.exists(htmlf) else ""
    F.check("Dated in the future" in page and "x-future-pass.json" in page, "future: the HTML page does not say it")
    p = fleet(fut)
    F.check(p.returncode == 2 and "dated in the future" in p.stdout and
            p.stdout.splitlines()[-1] == "fleet: inconclusive (0 fail, 1 inconclusive, 0 pass; 0 stale; 1 dated in the "
            "future)", f"future, text: exit {p.returncode}: {p.stdout[-500:]!r}")

    # --- 2,000 reports from the real shapes ----------------------------------------------------------------
    big = os.path.join(TMP, "big")
    shapes = {"pass": pass_r, "cpu": cpu_r, "gpu": gpu_r, "inc": inc_r}
    plan = {}  # node -> (shape, age_s)
    for i in range(1950):
        kind = "cpu" if i % 65 == 7 else "gpu" if i % 97 == 3 else "inc" if i % 89 == 5 else "pass"
        plan[f"node{i:04d}"] = (kind, 3 * 86400 if i % 39 == 11 and kind == "pass" else 600 + i)
    want_cpu = sorted(n for n, (k, _) in plan.items() if k == "cpu")
    want_stale = sorted(n for n, (_, a) in plan.items() if a > 86400)
    F.check(len(want_cpu) == 30, f"the plan has {len(want_cpu)} nodes with the shared signature, want 30")
    for idx, (name, (kind, age)) in enumerate(sorted(plan.items())):
        write(os.path.join(big, f"rack{idx % 20:02d}"), name + ".json", as_node(shapes[kind], name, age))
    for i in range(50):  # an older failing report of 50 passing nodes: superseded by the newest
        name = f"node{i * 37 + 1:04d}"
        write(os.path.join(big, "old"), name + "-old.json", as_node(cpu_r, name, 5 * 86400))
    htmlf = os.path.join(TMP, "fleet.html")
    out = os.path.join(TMP, "fleet.json")
    start = time.monotonic()
    child = subprocess.Popen([common.SDCSCREEN, "fleet", big, "--output-format", "json", "-o", out, "--html", htmlf],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    child.stdout.close()
    child.stderr.close()
    print(f"fleet of 2,000 reports (1,950 nodes): {wall:.2f} s wall, {usage.ru_utime + usage.ru_stime:.2f} s CPU, "
          f"peak RSS {usage.ru_maxrss / 1024:.1f} MiB")
    j = json.load(open(out)) if os.path.exists(out) else {}
    F.check(code == 1 and j.get("reports_read") == 2000 and len(j.get("nodes", [])) == 1950,
            f"2,000 reports: exit {code}, {j.get('reports_read')} reports, {len(j.get('nodes', []))} nodes")
    counts = j.get("counts", {})
    kinds = [k for k, _ in plan.values()]
    want = {"fail": sum(k in ("cpu", "gpu") for k in kinds), "inconclusive": kinds.count("inc"),
            "stale": len(want_stale)}
    F.check(all(counts.get(k) == v for k, v in want.items()), f"2,000 reports: counts {counts}, want {want}")
    group = next((g for g in j.get("signatures", []) if g["signature"] == cpu_sig), {})
    F.check(group.get("node_count") == 30 and [x["node"] for x in group.get("nodes", [])] == want_cpu
            and all(x["units"] == cpu_unit for x in group.get("nodes", [])),
            f"2,000 reports: the shared signature's group {str(group)[:300]}")
    F.check(j.get("signatures", [{}])[0].get("signature") == cpu_sig, "the most widespread signature is not first")
    F.check(sorted(x["node"] for x in j.get("stale", [])) == want_stale, "2,000 reports: the stale list")
    F.check(plan["node0001"][0] == "pass" and node(j, "node0001").get("reports") == 2
            and node(j, "node0001").get("status") == "pass", f"2,000 reports: node0001 {node(j, 'node0001')}")

    # --- the HTML page in a browser ------------------------------------------------------------------------
    text = open(htmlf, encoding="utf-8").read() if os.path.exists(htmlf) else ""
    for bad_ref in ("<script", "<link", "@import", "url(", "http://", "https://", "<img", "<iframe"):
        F.check(bad_ref not in text, f"the page contains {bad_ref!r}: it must need nothing outside itself")
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    if chromium is None:
        print("SKIP (browser part): chromium is not installed")
    else:
        class Dom(HTMLParser):
            def __init__(self, s):
                super().__init__()
                self.elements = []
                self.feed(s)

            def handle_starttag(self, tag, attrs):
                a = dict(attrs)
                self.elements.append((tag, a, set((a.get("class") or "").split())))

        with tempfile.TemporaryDirectory() as profile:
            p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--user-data-dir={profile}", "--dump-dom", "file://" + htmlf],
                               capture_output=True, text=True, timeout=180)
        F.check(p.returncode == 0, f"chromium: exit {p.returncode}: {p.stderr[-300:]}")
        dom = Dom(p.stdout)
        cells = [(t, a, c) for t, a, c in dom.elements if "cell" in c and a.get("title")]
        by = {s: [x for x in cells if s in x[2]] for s in ("pass", "fail", "inconclusive", "stale")}
        F.check(len(cells) == 1950 and len(by["fail"]) == want["fail"] and len(by["inconclusive"]) ==
                want["inconclusive"] and len(by["stale"]) == want["stale"],
                f"page: {len(cells)} cells, {[(s, len(v)) for s, v in by.items()]}, want 1950 and {want}")
        ids = {a.get("id"): a for _, a, _ in dom.elements if a.get("id")}
        links = [a for t, a, c in by["fail"] if t == "a"]
        F.check(len(links) == want["fail"], f"page: {len(links)} failing cells are links, want {want['fail']}")
        F.check(all(a.get("href", "").startswith("#")
                    and ids.get(a["href"][1:], {}).get("data-node") == a.get("data-node") for a in links),
                "page: a failing node's link does not lead to its details section")
        F.check(all(t == "span" for t, _, _ in by["pass"]), "page: a passing node's cell is a link")
        F.check(any(a.get("data-signature") == cpu_sig for _, a, _ in dom.elements),
                "page: no row for the shared signature")
finally:
    shutil.rmtree(TMP, ignore_errors=True)
F.finish()

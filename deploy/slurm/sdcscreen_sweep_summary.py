"""The fleet summary of sdcscreen-sweep (installed beside it): each node's tagged output read back from srun's
stdout, its report and stderr written to OUTDIR, its failures analyzed, and fleet-summary.json / .txt.
"""
import base64
import binascii
import datetime
import json
import os
import re
import sys

TAG = "@@SDCSCREEN"  # the task script's (sdcscreen-sweep) tag of every line it prints


def unit_label(device, unit):
    dev = str(device or "")
    if isinstance(unit, dict):
        if unit.get("kind") == "cpu" and "cpu" in unit:
            return f"cpu {unit['cpu']}"
        for key in ("gpu", "device", "index"):
            if key in unit:
                return f"gpu {unit[key]}"
    m = re.match(r"^(?:cuda|gpu)[:\s_-]*(\d+)", dev)
    if m:
        return f"gpu {m.group(1)}" + (f" sm {unit}" if isinstance(unit, int) else "")
    if dev in ("", "cpu"):
        return f"cpu {unit}"
    return f"{dev} {unit}"


def says_fail(report):
    """Whether a node's report says fail (its own exit code 1): judged so whatever the screen's exit code (a
    screen killed at the job's time limit after it found a miscompare)."""
    e = report.get("exit") if isinstance(report, dict) else None
    return isinstance(e, dict) and e.get("verdict") == "fail" and e.get("code") == 1


def analyze(report):
    """Failures of one report: [{test, family, device, units, xor_masks, miscompared_elements}]."""
    failures = []
    for t in report.get("tests", []):
        if t.get("result") != "fail":
            continue
        units = [unit_label(t.get("device"), u) for u in (t.get("units_failed") or [])]
        if not units:
            units = sorted({unit_label(t.get("device"), m.get("unit")) for m in t.get("miscompares", [])})
        masks = []
        for m in t.get("miscompares", []):
            x = m.get("xor_mask")
            if x and x not in masks:
                masks.append(x)
        failures.append({
            "test": t.get("id"), "family": t.get("family"), "device": t.get("device"), "units": units,
            "xor_masks": masks, "miscompared_elements": t.get("miscompared_elements"),
        })
    return failures


def parse_chunks(out):
    """Each node's output from its tagged lines (lines of different nodes may interleave)."""
    chunks = {}   # node -> {"R": [...], "E": [...], "END": rc, "POLICY": (rc, line), "REASON": (rc, reason)}
    for line in out.splitlines():
        if not line.startswith(TAG + " "):
            continue
        parts = line.split(" ", 3)
        if len(parts) < 3:
            continue
        node, kind, data = parts[1], parts[2], (parts[3] if len(parts) > 3 else "")
        c = chunks.setdefault(node, {"R": [], "E": [], "END": None})
        if kind in ("R", "E"):
            c[kind].append(data.strip())
        elif kind == "END":
            c["END"] = data.split()[0] if data.split() else None
        elif kind in ("POLICY", "REASON"):
            rc, _, rest = data.partition(" ")
            c[kind] = (int(rc) if rc.isdigit() else None, rest.strip())
    return chunks


def decode_report(c):
    try:
        return json.loads(base64.b64decode("".join(c.get("R") or []), validate=True)) if c.get("R") else None
    except (binascii.Error, ValueError):
        return None


def finish(args, outdir, started, srun_shown, srun_rc, out, err, requested, unscreened, outcome):
    """Writes every node's report and the fleet summary, prints it, and exits."""
    with open(os.path.join(outdir, "srun.stderr"), "w") as f:
        f.write(err)

    chunks = parse_chunks(out)

    srun_note = ""
    if srun_rc != 0:
        lines = [ln for ln in err.splitlines() if ln.strip() and "lacks support for cpu binding" not in ln]
        srun_note = f"srun exit {srun_rc}" + (f": {lines[-1].strip()[:200]}" if lines else "")

    nodes = []
    for n in requested:
        entry = {"node": n}
        if n in unscreened:
            entry.update(status="unscreened", why=unscreened[n])
            nodes.append(entry)
            continue
        c = chunks.get(n)
        if c is None or c["END"] is None:
            entry.update(status="unscreened", why=("no output from the node" + (f" ({srun_note})" if srun_note else "")))
            nodes.append(entry)
            continue
        try:
            rc = int(c["END"])
        except ValueError:
            rc = None
        entry["exit_code"] = rc
        if c["E"]:
            try:
                text = base64.b64decode("".join(c["E"])).decode("utf-8", "replace")
                with open(os.path.join(outdir, f"{n}.stderr"), "w") as f:
                    f.write(text)
                entry["stderr"] = text.strip().splitlines()[-1][:300] if text.strip() else ""
            except (binascii.Error, ValueError):
                pass
        report = None
        if c["R"]:
            try:
                raw = base64.b64decode("".join(c["R"]), validate=True)
                report = json.loads(raw)
                with open(os.path.join(outdir, f"{n}.json"), "wb") as f:
                    f.write(raw)
                entry["report"] = f"{n}.json"
            except (binascii.Error, ValueError) as e:
                entry["report_error"] = f"unreadable report: {e}"
        if report is not None:
            entry["verdict"] = report.get("exit", {}).get("verdict")
            entry["fault_injection"] = bool(report.get("fault_injection"))
            entry["reproduce"] = report.get("reproduce")
            units = report.get("units", [])
            online = report.get("host", {}).get("cpus_online")
            entry["units_screened"] = len(units)
            if report.get("backend") == "cpu" and online and len(units) < online:
                entry["note"] = f"screened {len(units)} of {online} online CPUs"
        if rc == 1 or says_fail(report):
            entry["status"] = "fail"
            entry["failures"] = analyze(report) if report is not None else []
        elif rc == 0 and report is not None:
            entry["status"] = "pass"
        else:
            why = {2: "inconclusive (exit 2)", 64: "usage error (exit 64)", 78: "configuration error (exit 78)",
                   125: "no temporary directory on the node", 126: "sdcscreen not executable",
                   127: "sdcscreen not found"}.get(rc, f"exit {rc}")
            if rc == 0:
                why = "exit 0 but no report"
            errors = (report or {}).get("errors") or []
            detail = errors[0] if errors else entry.get("stderr", "")
            entry.update(status="unscreened", why=why + (f": {detail[:200]}" if detail else ""))
        if n in outcome:
            entry["rescreen"] = outcome[n]
        nodes.append(entry)

    failed = [e for e in nodes if e["status"] == "fail"]
    passed = [e for e in nodes if e["status"] == "pass"]
    unscr = [e for e in nodes if e["status"] == "unscreened"]
    signatures = {}
    for e in failed:
        for fl in e.get("failures", []):
            for x in (fl["xor_masks"] or ["?"]):
                signatures.setdefault((fl["family"], x), set()).add(e["node"])
    summary = {
        "kind": "sdcscreen-fleet-summary", "version": 1,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "srun": srun_shown,
        "srun_exit_code": srun_rc,
        "counts": {"requested": len(requested), "screened": len(passed) + len(failed), "pass": len(passed),
                   "fail": len(failed), "unscreened": len(unscr)},
        "failed": [e["node"] for e in failed],
        "unscreened": [e["node"] for e in unscr],
        "signatures": [{"family": f, "xor_mask": x, "nodes": sorted(ns)} for (f, x), ns in sorted(signatures.items())],
        "nodes": nodes,
    }
    if args.rescreen_drained:
        summary["rescreen"] = {"resume_screens": args.resume_screens, "resume_profile": args.resume_profile,
                               "history_dir": args.history_dir,
                               "resumed": [e["node"] for e in nodes if e.get("rescreen", {}).get("action", "")
                                           .startswith("resumed")],
                               "held": [e["node"] for e in nodes if e.get("rescreen", {}).get("action") == "held"]}
    with open(os.path.join(outdir, "fleet-summary.json.tmp"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    os.replace(os.path.join(outdir, "fleet-summary.json.tmp"), os.path.join(outdir, "fleet-summary.json"))

    c = summary["counts"]
    lines = [f"sdcscreen sweep: {c['requested']} node(s) requested, {c['screened']} screened, "
             f"{c['pass']} passed, {c['fail']} FAILED, {c['unscreened']} not screened"]
    for e in failed:
        inj = " [fault-injection drill]" if e.get("fault_injection") else ""
        if not e.get("failures"):
            lines.append(f"FAILED {e['node']}: miscompare (no readable report){inj}")
        for fl in e.get("failures", []):
            lines.append(f"FAILED {e['node']}: {','.join(fl['units']) or '?'} {fl['family']} ({fl['test']}) "
                         f"xor {','.join(fl['xor_masks']) or '?'}{inj}")
    for e in unscr:
        lines.append(f"NOT SCREENED {e['node']}: {e['why']}")
    for e in passed:
        if e.get("note"):
            lines.append(f"note {e['node']}: {e['note']}")
    for e in nodes:
        o = e.get("rescreen")
        if o:
            word = "RESUMED" if o["action"].startswith("resumed") else o["action"].upper()
            lines.append(f"{word} {e['node']}: {o.get('policy') or ''}"
                         + (f" (reason now: {o['reason']})" if o.get("reason") else ""))
    if summary["signatures"]:
        lines.append("signatures (family xor_mask: nodes):")
        for s in summary["signatures"]:
            lines.append(f"  {s['family']} {s['xor_mask']}: {','.join(s['nodes'])}")
    lines.append(f"reports and fleet-summary.json in {outdir}")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "fleet-summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    sys.exit(1 if failed else (2 if unscr else 0))

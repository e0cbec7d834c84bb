#!/usr/bin/env python3
"""Turns what scripts/gpu-first-light.sh brought back (summary.txt and results.tgz) into the dated record.

  scripts/gpu-first-light-record.py [--out DIR] [--force] RUN...

RUN: a folder holding summary.txt and results.tgz (one call of the script; a rerun of some steps, in a later
session, is another RUN given after it). Writes into --out (default: docs/gpu-validation beside this script):
  <date>-<gpu>-first-light.md   the device (sdcscreen info less the host name and paths, nvidia-smi, the
                                bundle), one line per step from the latest run that ran it, the runs it came
                                from and an Overall line
  <date>-<gpu>-first-light/     the archives' files, per step (N-NAME/), those over 1 MiB left out and named
The date is the latest run's start (UTC). A step that no run ran (or ran as not-run) reads **not run**, never
passed; Overall is pass only when every step 0-8 passed, FAIL when one failed, else incomplete. The runs must
be of one GPU model and one build (same `sdcscreen --version`); a run on the emulated device (the script's
tests) is refused: it is no GPU's record.

Exit: 0 the record says pass; 1 it says FAIL or incomplete (written either way), or it could not be written;
64 a bad command line (no RUN, a RUN without its two files, the record exists without --force); 78 a file
that is not the script's (summary lines, an archive with paths outside itself), runs of different GPUs or
builds, an emulated run.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("gpu_merge_records", os.path.join(HERE, "gpu-merge-records.py"))
merge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(merge)
merge.PROG = "gpu-first-light-record"
fail, write_atomic = merge.fail, merge.write_atomic

STEPS = ["env", "smoke", "boot", "gpu_tests", "hang", "sass", "sanitizer", "drills", "bench"]
STATUSES = ("pass", "FAIL", "incomplete", "n/a", "not-run")
FORMAT = "sdcscreen-gpu-first-light"
MAX_FILE = 1 << 20
STEP_LINE = re.compile(r"^([0-8]) ([a-z_]+) (pass|FAIL|incomplete|n/a|not-run) (\d+) ?(.*)$")
START_LINE = re.compile(r"^# gpu-first-light: started (\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})Z, (.*)$")
END_LINE = re.compile(r"^# end: exit (\d+) after (\d+) s")


def slug(name):
    s = re.sub(r"^nvidia ", "", name.lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def read_run(folder):
    """One call's summary (its runs: one per start line) and archive (path -> bytes)."""
    summary, archive = os.path.join(folder, "summary.txt"), os.path.join(folder, "results.tgz")
    for f in (summary, archive):
        if not os.path.isfile(f):
            fail(64, f"{f}: no such file (a RUN is a folder with summary.txt and results.tgz)")
    runs = []
    with open(summary, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if m := START_LINE.match(line):
                runs.append({"date": m.group(1), "time": m.group(2), "how": m.group(3), "steps": {}, "end": None,
                             "emulated": "emulated device" in line})
            elif not runs:
                fail(78, f"{summary}:{n}: not a summary of scripts/gpu-first-light.sh (no start line first)")
            elif m := END_LINE.match(line):
                runs[-1]["end"] = line[2:]
            elif line.startswith("#") or not line.strip():
                continue
            elif m := STEP_LINE.match(line):
                num, name = int(m.group(1)), m.group(2)
                if STEPS[num] != name:
                    fail(78, f"{summary}:{n}: step {num} is {STEPS[num]}, not {name}")
                runs[-1]["steps"][num] = {"status": m.group(3), "secs": int(m.group(4)), "detail": m.group(5)}
                runs[-1]["emulated"] |= "[emulated device" in line
            else:
                fail(78, f"{summary}:{n}: not a step line of scripts/gpu-first-light.sh: {line[:120]!r}")
    if not runs:
        fail(78, f"{summary}: no run in it")
    files = {}
    try:
        with tarfile.open(archive, "r:gz") as t:
            for m in t.getmembers():
                name = os.path.normpath(m.name)
                if name.startswith(("/", "..")) or m.issym() or m.islnk() or m.isdev():
                    fail(78, f"{archive}: {m.name!r} is not a plain file inside the archive")
                if m.isfile():
                    files[name] = t.extractfile(m).read()
    except (tarfile.TarError, OSError, EOFError) as e:
        fail(78, f"{archive}: cannot be read: {e}")
    for r in runs:
        r["folder"] = folder
    return runs, files


def text(files, path):
    return files.get(path, b"").decode("utf-8", "replace")


def main():
    ap = merge.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="RUN")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "gpu-validation"))
    ap.add_argument("--force", action="store_true", help="replace an existing record of the same date and GPU")
    a = ap.parse_args()

    runs, files = [], {}
    for folder in a.runs:
        r, f = read_run(folder)
        runs += r
        files.update(f)  # a later RUN's files of a step replace an earlier one's (the script reruns whole steps)
    if any(r["emulated"] for r in runs):
        fail(78, "a run on the emulated device (the script's tests) is no GPU's record")
    info = text(files, "0-env/info.txt")
    dev = re.search(r"^device (\d+)", runs[-1]["how"].split(", ")[-1])
    device = dev.group(1) if dev else "0"
    gpu = re.search(rf"^gpu: +cuda:{device} (.+?)  (GPU-[0-9a-fA-F-]+)  ", info, re.M)
    if not gpu:
        fail(78, f"the archive's 0-env/info.txt lists no GPU cuda:{device} (a run that stopped at step 0 is no record)")
    name = gpu.group(1)
    uuids = sorted(set(re.findall(rf"^gpu: +cuda:{device} {re.escape(name)}  (GPU-[0-9a-fA-F-]+)", info, re.M)))
    version = text(files, "0-env/version.txt").strip().splitlines()
    version = version[0] if version else "sdcscreen (version unknown)"
    # Every run's own identity sits in its step 0; a later RUN folder that reran step 0 replaced it in `files`, so
    # compare the RUN folders' archives one by one.
    for folder in a.runs[1:]:
        _, f = read_run(folder)
        i = text(f, "0-env/info.txt")
        if i and not re.search(rf"^gpu: +cuda:\d+ {re.escape(name)}  ", i, re.M):
            fail(78, f"{folder}: another GPU than {name}")
        v = text(f, "0-env/version.txt").strip().splitlines()
        if v and v[0] != version:
            fail(78, f"{folder}: another build ({v[0]}) than {version}")
        uuids = sorted(set(uuids) | set(re.findall(rf"^gpu: +cuda:\d+ {re.escape(name)}  (GPU-[0-9a-fA-F-]+)", i, re.M)))

    # Each step from the latest run that ran it (a not-run line does not replace a result).
    source = {}
    for i, r in enumerate(runs):
        for num, s in r["steps"].items():
            if s["status"] != "not-run" or num not in source:
                source[num] = (i, s)
    date = max(r["date"] for r in runs)
    base = f"{date}-{slug(name)}-first-light"
    os.makedirs(a.out, exist_ok=True)
    out, out_files = os.path.join(a.out, base + ".md"), os.path.join(a.out, base)
    if os.path.exists(out) and not a.force:
        fail(64, f"{out} exists (give --force to replace it)")

    failed = [STEPS[n] for n, (_, s) in sorted(source.items()) if s["status"] == "FAIL"]
    short = [STEPS[n] for n in range(len(STEPS)) if n not in source or source[n][1]["status"] not in ("pass", "FAIL")]
    unended = [i + 1 for i, r in enumerate(runs) if not r["end"]]
    if failed:
        overall = "FAIL"
        line = f"Overall: FAIL (failed: {', '.join(failed)}" + (f"; not passed: {', '.join(short)})" if short else ")")
    elif short or unended:
        overall = "incomplete"
        why = ([f"not run or not complete: {', '.join(short)}"] if short else []) + \
              ([f"run {', '.join(map(str, unended))} ended without its end line"] if unended else [])
        line = f"Overall: incomplete ({'; '.join(why)}; the steps run passed)"
    else:
        overall, line = "pass", "Overall: pass"

    # The files, beside the record: every archived file of 1 MiB or less; the others named.
    if os.path.isdir(out_files):
        shutil.rmtree(out_files)
    kept, left_out = [], []
    for path, data in sorted(files.items()):
        if path == "summary.txt":
            continue
        if len(data) > MAX_FILE:
            left_out.append(f"{path} ({len(data)} bytes)")
            continue
        dst = os.path.join(out_files, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        kept.append(path)

    meta = {"format": FORMAT, "version": 1, "date": date, "gpu": name, "uuids": uuids, "slug": slug(name),
            "tool": version, "runs": [f"{r['date']}T{r['time']}Z" for r in runs],
            "steps": {STEPS[n]: s["status"] for n, (_, s) in sorted(source.items())},
            "not_run": [STEPS[n] for n in range(len(STEPS)) if n not in source], "files": base + "/",
            "overall": overall}
    o = [f"# GPU first light, {date}, {name}", "", f"<!-- gpu-first-light: {json.dumps(meta)} -->", "",
         f"Written by `scripts/gpu-first-light-record.py` from {len(runs)} run(s) of `scripts/gpu-first-light.sh` "
         f"with {version}:"]
    for i, r in enumerate(runs, 1):
        o.append(f"- run {i}: started {r['date']} {r['time']} UTC, {r['how']}; "
                 + (r["end"] if r["end"] else "**no end line** (the run was killed before it could write one)"))
    o += ["", "## Device", "```"]
    o += [l for l in info.splitlines() if not l.startswith(("host:", "patterns:"))]
    smi = text(files, "0-env/nvidia-smi.csv").strip()
    if smi:
        o += [smi]
    o.append("```")
    bundle = text(files, "0-env/BUNDLE.txt").strip()
    if bundle:
        o += ["", "Bundle:", "```", bundle, "```"]
    o += ["", "## Steps", "", "| step | status | s | run | result |", "|---|---|---|---|---|"]
    for n, st in enumerate(STEPS):
        if n in source:
            i, s = source[n]
            status = s["status"] if s["status"] == "pass" else f"**{s['status']}**"
            detail = s["detail"].replace("|", "\\|") or "-"
            o.append(f"| {n} {st} | {status} | {s['secs']} | {i + 1} | {detail} |")
        else:
            o.append(f"| {n} {st} | **not run** | - | - | not in any run (never a pass) |")
    o += ["", f"Files (relative to this record, per step): `{base}/`"
          + (f"; left out (over 1 MiB): {', '.join(left_out)}" if left_out else ""), "", line,
          f"<!-- overall: {overall} -->", ""]
    write_atomic(out, "\n".join(o))
    print(f"gpu-first-light-record: {out} written from {len(runs)} run(s), {len(kept)} file(s) beside it "
          f"(overall: {overall})", file=sys.stderr)
    sys.exit(0 if overall == "pass" else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Merges partial GPU validation records (scripts/gpu-validate.sh --steps ...) of one GPU into one record.

  scripts/gpu-merge-records.py [--out DIR] [--prefer-last] [--force] RECORD.md...

Writes <date>-<gpu>.md into --out (default: the folder of the first record), the date being the latest of
the inputs': the device section once, every step's checks and log sections from the record that ran it, the
records it came from, the JSON companions and recordings beside them (paths relative to the merged record),
and an Overall line. A step that no input ran is listed as **not run**, never as passed; Overall is pass only
when every step (tests, profile, boot, record, drills, bench) ran and passed, FAIL when one failed, else
incomplete. The records must be of one GPU (same name and UUIDs) and one build (same sdcscreen version); a
step run in two records is refused unless --prefer-last (the later record on the command line wins). An
existing merged record is replaced only with --force, and is then no input (so `--force DIR/*.md` merges again).

Exit: 0 the merged record says pass; 1 it says FAIL or incomplete (it is written either way), or it could not
be written; 64 bad command
line (no record, a file given twice or missing, the output exists without --force); 78 an input that is not
a record of gpu-validate.sh, records of different GPUs or builds, a step run twice.
"""
import argparse
import json
import os
import re
import sys
import tempfile

STEPS = ["tests", "profile", "boot", "record", "drills", "bench"]
SECTION_ORDER = ["bench", "drills", "record", "boot", "profile", "tests"]  # as gpu-validate.sh writes them
FORMAT = "sdcscreen-gpu-validation"

META_RE = re.compile(r"^<!-- gpu-validate: (\{.*\}) -->$", re.M)
STEP_RE = re.compile(r"^<!-- step: ([a-z]+) status: (pass|FAIL|not-run)(?: seconds: (\d+))? -->\n(.*?)^<!-- step: \1 end -->$",
                     re.M | re.S)
SECTION_RE = re.compile(r"^<!-- section: ([a-z]+) begin -->\n.*?^<!-- section: \1 end -->\n", re.M | re.S)


PROG = "gpu-merge-records"  # the name messages start with (scripts/gpu-first-light-record.py sets its own)


def fail(code, msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def write_atomic(path, text):
    """Writes text to path through a temporary file in the same folder (a reader never sees half a record);
    exit 1 when it cannot."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".merge-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        fail(1, f"cannot write {path}: {e}")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # a bad command line is 64, as everywhere in the project
        fail(64, f"{message} (see --help)")


def parse(path):
    """One record: its metadata, device block, steps {name: (status, seconds, body)} and sections."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        fail(64, f"{path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        fail(78, f"{path}: cannot be read as a record: {e}")
    m = META_RE.search(text)
    try:
        meta = json.loads(m.group(1)) if m else None
    except json.JSONDecodeError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fail(78, f"{path}: not a record of scripts/gpu-validate.sh (no '<!-- gpu-validate: ... -->' line of {FORMAT})")
    if meta.get("version") != 1:
        fail(78, f"{path}: record version {meta.get('version')!r}, this script reads version 1")
    for key, kind in (("date", str), ("gpu", str), ("uuids", list), ("slug", str), ("tool", str), ("files", list)):
        if not isinstance(meta.get(key), kind):
            fail(78, f"{path}: the record's metadata has no valid '{key}'")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", meta["date"]) or not re.fullmatch(r"[a-z0-9-]+", meta["slug"]):
        fail(78, f"{path}: the record's metadata has a bad date or GPU slug")
    dev = re.search(r"^## Device\n(.*?)^## Checks\n", text, re.M | re.S)
    if not dev:
        fail(78, f"{path}: not a record of scripts/gpu-validate.sh (no Device and Checks sections)")
    steps = {}
    for s in STEP_RE.finditer(text):
        name, status, secs, body = s.group(1), s.group(2), s.group(3), s.group(4)
        if name not in STEPS:
            fail(78, f"{path}: unknown step '{name}'")
        if name in steps:
            fail(78, f"{path}: step '{name}' appears twice")
        steps[name] = (status, secs, body)
    if not steps:
        fail(78, f"{path}: not a record of scripts/gpu-validate.sh (no step)")
    sections = {}
    for s in SECTION_RE.finditer(text):
        sections.setdefault(s.group(1), []).append(s.group(0))
    return {"path": path, "meta": meta, "device": dev.group(1).strip("\n"), "steps": steps, "sections": sections}


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+", metavar="RECORD.md")
    ap.add_argument("--out", help="folder of the merged record (default: the first record's)")
    ap.add_argument("--prefer-last", action="store_true", help="a step run in several records: take the last one's")
    ap.add_argument("--force", action="store_true", help="replace an existing merged record")
    a = ap.parse_args()

    real = [os.path.realpath(p) for p in a.records]
    if len(set(real)) != len(real):
        fail(64, "a record is given twice")
    recs = [parse(p) for p in a.records]

    first = recs[0]
    ident = (first["meta"]["gpu"], sorted(first["meta"]["uuids"]))
    for r in recs[1:]:
        other = (r["meta"]["gpu"], sorted(r["meta"]["uuids"]))
        if other != ident:
            fail(78, f"records of different GPUs: {first['path']} is {ident[0]} {','.join(ident[1])}, "
                     f"{r['path']} is {other[0]} {','.join(other[1])}")
        if r["meta"]["tool"] != first["meta"]["tool"]:
            fail(78, f"records of different builds: {first['path']} by {first['meta']['tool']}, "
                     f"{r['path']} by {r['meta']['tool']}")

    out_dir = a.out or os.path.dirname(os.path.abspath(a.records[0]))
    os.makedirs(out_dir, exist_ok=True)
    date = max(r["meta"]["date"] for r in recs)
    slug = first["meta"]["slug"]
    out = os.path.join(out_dir, f"{date}-{slug}.md")
    if os.path.exists(out) and not a.force:
        fail(64, f"{out} exists{' and is one of the inputs' if os.path.realpath(out) in real else ''} "
                 f"(give --force to replace it)")
    if os.path.realpath(out) in real:  # --force: the record being replaced (an earlier merge) is no input
        print(f"gpu-merge-records: {out} is replaced, not merged", file=sys.stderr)
        recs = [r for r in recs if os.path.realpath(r["path"]) != os.path.realpath(out)]
        if not recs:
            fail(64, f"{out} is the only input")
        first = recs[0]

    # Each step from the record that ran it (pass or FAIL); never from one that did not run it. With
    # --prefer-last, "last" is the record written last (its metadata's time), whatever the order given.
    source, superseded = {}, []
    for r in (sorted(recs, key=lambda r: str(r["meta"].get("written", ""))) if a.prefer_last else recs):
        for name, (status, _, _) in r["steps"].items():
            if status == "not-run":
                continue
            if name in source:
                if not a.prefer_last:
                    fail(78, f"step '{name}' ran in both {source[name]['path']} and {r['path']} "
                             f"(give --prefer-last to take the later one)")
                superseded.append((name, source[name]["path"]))
            source[name] = r

    def rel(path):
        return os.path.relpath(path, out_dir)

    files = []
    for r in recs:
        for f in r["meta"]["files"]:
            p = os.path.join(os.path.dirname(os.path.abspath(r["path"])), f)
            shown = rel(p) + ("/" if f.endswith("/") else "")
            if shown not in [x for x, _ in files]:
                files.append((shown, os.path.exists(p)))

    ran = [s for s in STEPS if s in source]
    not_run = [s for s in STEPS if s not in source]
    failed = [s for s in ran if source[s]["steps"][s][0] == "FAIL"]
    used = [r for r in recs if any(source.get(s) is r for s in STEPS)]
    # A record that failed outside its steps (a companion it could not copy, an interruption between steps), a
    # companion missing now, or a step of a --quick run (boot profile, 20 drills) keeps the merge from a pass.
    outside = [rel(os.path.abspath(r["path"])) for r in used
               if r["meta"].get("overall") == "FAIL" and not any(st[0] == "FAIL" for st in r["steps"].values())]
    missing = [x for x, ok in files if not ok]
    quick = [s for s in ran if "--quick" in str(source[s]["meta"].get("command", ""))]
    problems = failed + [f"{x} (outside its steps)" for x in outside] + [f"{x} missing" for x in missing]
    if problems:
        overall, line = "FAIL", f"Overall: FAIL (failed: {', '.join(problems)}" + \
            (f"; not run: {', '.join(not_run)})" if not_run else ")")
    elif not_run or quick:
        why = ([f"not run: {', '.join(not_run)}"] if not_run else []) + \
              ([f"from a --quick run: {', '.join(quick)}"] if quick else [])
        overall, line = "incomplete", f"Overall: incomplete ({'; '.join(why)}; the steps run passed)"
    else:
        overall, line = "pass", "Overall: pass"
    meta = {"format": FORMAT, "version": 1, "date": date, "gpu": first["meta"]["gpu"], "uuids": first["meta"]["uuids"],
            "slug": slug, "tool": first["meta"]["tool"], "command": "scripts/gpu-merge-records.py",
            "merged_from": [rel(os.path.abspath(r["path"])) for r in recs], "profile": source["profile"]["meta"].get("profile") if "profile" in source else None,
            "steps": ran, "not_run": not_run, "files": [x for x, _ in files], "overall": overall}
    o = [f"# GPU validation, {date}, {first['meta']['gpu']}", "",
         f"<!-- gpu-validate: {json.dumps(meta)} -->", "",
         f"Merged by `scripts/gpu-merge-records.py` from {len(recs)} record(s) of this GPU, all by {first['meta']['tool']}:"]
    for r in recs:
        took = [s for s in STEPS if source.get(s) is r]
        o.append(f"- `{rel(os.path.abspath(r['path']))}` (`{r['meta'].get('command', '?')}`, {r['meta'].get('written', '?')}): "
                 f"steps {', '.join(took) if took else 'none taken'}")
    for name, path in superseded:
        o.append(f"- step {name} of `{rel(os.path.abspath(path))}` superseded by a later record (--prefer-last)")
    if not_run:
        o += ["", f"Steps **not run** in any of them: {', '.join(not_run)} (never counted as passed)."]
    o += ["", "## Device", first["device"], "", "## Checks", ""]
    for s in STEPS:
        if s in source:
            status, secs, body = source[s]["steps"][s]
            o.append(f"<!-- step: {s} status: {status} seconds: {secs or 0} -->")
            lines = body.rstrip("\n").split("\n")
            o += lines[:1] + [f"- from `{rel(os.path.abspath(source[s]['path']))}`"] + lines[1:]
        else:
            o += [f"<!-- step: {s} status: not-run -->", f"### {s}: not run",
                  "- **not run** in any of the merged records (never a pass)"]
        o += [f"<!-- step: {s} end -->", ""]
    if files:
        o.append("Files (relative to this record): " +
                 " ".join(f"`{x}`" + ("" if ok else " (**missing**)") for x, ok in files))
        o.append("")
    for s in SECTION_ORDER:
        if s in source:
            o += [sec.rstrip("\n") + "\n" for sec in source[s]["sections"].get(s, [])]
    o += [line, f"<!-- overall: {overall} -->", ""]

    write_atomic(out, "\n".join(o))
    print(f"gpu-merge-records: {out} written from {len(recs)} record(s) (overall: {overall})", file=sys.stderr)
    sys.exit(0 if overall == "pass" else 1)


if __name__ == "__main__":
    main()

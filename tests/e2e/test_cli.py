"""The command line: every class of bad input has its own check with the exact exit code (64 bad command line,
78 bad configuration or unwritable -o) and a one-line message on stderr that names the problem; help,
list, info, verify-patterns and --version work; a time budget too small to run anything is not a pass.
"""
import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_cli")
CASE = "softmax_f32.special_128x1000"  # input tensor 'x', 2 boot iterations
SEL = ["--enable", CASE]
OUTPUTS = common.CASES[CASE]["geometry"]["output_elements"]  # the first element out of range
INPUTS = {t["name"]: t["elements"] for t in common.CASES[CASE]["geometry"]["inputs"]}
CRASH_MARKS = ("Traceback", "terminate called", "Aborted", "Segmentation fault", "core dumped", "what():")


def one_line_error(name, p, code, *must_name):
    """Exit code, exactly one non-empty stderr line 'sdcscreen: error: ...' naming the problem, nothing that
    looks like a crash, and no verdict on stdout."""
    F.check(p.returncode == code, f"{name}: exit {p.returncode}, expected {code} (stderr: {p.stderr.strip()[:300]!r})")
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    F.check(len(lines) == 1, f"{name}: stderr has {len(lines)} lines, expected one: {p.stderr[:500]!r}")
    first = lines[0] if lines else ""
    F.check(first.startswith("sdcscreen: error: "), f"{name}: stderr does not start with 'sdcscreen: error: ': {first!r}")
    for word in must_name:
        F.check(word in first, f"{name}: message does not name {word!r}: {first!r}")
    for mark in CRASH_MARKS:
        F.check(mark not in p.stderr and mark not in p.stdout, f"{name}: output contains {mark!r}")
    F.check("exit: pass" not in p.stdout, f"{name}: stdout says 'exit: pass'")
    F.check(p.stdout.strip() == "", f"{name}: stdout is not empty: {p.stdout[:300]!r}")


def usage(name, args, *must_name):
    one_line_error(name, common.run(*args), 64, *must_name)


# --- bad command lines: 64 ------------------------------------------------------------------------
usage("no subcommand", [], "subcommand")
usage("unknown subcommand", ["frobnicate"], "frobnicate")
usage("unknown option", ["run", "--frobnicate"], "--frobnicate")
usage("unknown option of list", ["list", "--color"], "--color")
usage("option without its value", ["run", "--profile"], "--profile")
usage("unknown test id for --enable", ["run", "--enable", "gemm_f32.no_such_case"], "gemm_f32.no_such_case")
usage("unknown glob for --enable", ["run", "--enable", "nosuch_*"], "nosuch_*")
usage("unknown test id for --disable", ["run", "--disable", "softmax_f32.no_such_case"], "softmax_f32.no_such_case")
usage("--disable removes everything", ["run", "--enable", CASE, "--disable", "softmax_f32"], "no test selected")
# --enable selects within the profile; a case of another profile comes in by --enable-any, and the error says so.
usage("--enable of a case outside the profile", ["run", "--profile", "boot", "--enable", "gemm_f32.uniform_2048"],
      "'gemm_f32.uniform_2048' matches no case of profile boot", "profile standard, burnin",
      "--enable-any 'gemm_f32.uniform_2048'")
usage("unknown glob for --enable-any", ["run", "--enable-any", "nosuch_*"], "nosuch_*")
ATTENTION = {c: v for c, v in common.CASES.items() if v["family"] == "attention_f32"}
F.check(any("boot" not in v["iterations"] for v in ATTENTION.values()), "no attention_f32 case outside boot")
for opt, want in (("--enable", sorted(c for c, v in ATTENTION.items() if "boot" in v["iterations"])),
                  ("--enable-any", sorted(ATTENTION))):
    # A budget too small for more than the first case: the report lists every case selected, and its
    # reproduce line carries the selection.
    rc, rep, err = common.run_json("--profile", "boot", opt, "attention_f32.*", "--time-budget", "1ms")
    got = sorted(t["id"] for t in rep["tests"]) if rep else None
    F.check(rc == 2 and got == want, f"{opt} 'attention_f32.*' in boot: exit {rc}, selected {got}, expected {want} "
                                     f"({err.strip()[:300]})")
    F.check(rep is not None and f" {opt} 'attention_f32.*' " in rep.get("reproduce", ""),
            f"{opt}: reproduce line {rep and rep.get('reproduce')!r}")
usage("unknown profile", ["run", "--profile", "nightly"], "nightly")
usage("unknown profile for list", ["list", "--profile", "nightly"], "nightly")
usage("bad --seed", ["run", *SEL, "--seed", "abc"], "--seed")

# --inject: syntax, then against the battery and the run's selection
inject_cases = [
    ("missing case", "element=5,bit=3", "case"),
    ("bit 32", f"case={CASE},element=5,bit=32", "bit '32'"),
    ("negative bit", f"case={CASE},element=5,bit=-1", "bit '-1'"),
    ("unknown key", f"case={CASE},element=5,bit=3,color=red", "color"),
    ("item without '='", f"case={CASE},element=5,bit=3,oops", "oops"),
    ("bad mask (not hex)", f"case={CASE},element=5,mask=0xZZ", "0xZZ"),
    ("bad mask (no 0x)", f"case={CASE},element=5,mask=ff", "mask 'ff'"),
    ("bad mask (zero)", f"case={CASE},element=5,mask=0x00000000", "0x00000000"),
    ("bad mask (over 32 bits)", f"case={CASE},element=5,mask=0x100000000", "0x100000000"),
    ("bit and mask", f"case={CASE},element=5,bit=3,mask=0x1", "bit or mask"),
    ("key given twice", f"case={CASE},element=5,bit=3,bit=4", "'bit' given twice"),
    ("missing element", f"case={CASE},bit=3", "element"),
    ("missing bit", f"case={CASE},element=5", "bit"),
    ("element not a number", f"case={CASE},element=five,bit=3", "five"),
    ("element out of range", f"case={CASE},element={OUTPUTS},bit=3", str(OUTPUTS)),
    ("input element out of range", f"case={CASE},element={INPUTS['x']},bit=3,target=input,tensor=x", str(INPUTS["x"])),
    ("unknown tensor", f"case={CASE},element=5,bit=3,target=input,tensor=zz", "'zz'"),
    ("input without tensor", f"case={CASE},element=5,bit=3,target=input", "tensor"),
    ("bad target", f"case={CASE},element=5,bit=3,target=weights", "weights"),
    ("unknown case", "case=softmax_f32.no_such_case,element=5,bit=3", "softmax_f32.no_such_case"),
    ("unit not selected", f"case={CASE},element=5,bit=3,unit=7", "unit=7: cpu 7 is not"),
    ("case not selected", "case=softmax_f32.uniform_256x4096,element=5,bit=3", "softmax_f32.uniform_256x4096"),
    ("empty spec", "", "--inject"),
]
for name, spec, word in inject_cases:
    usage(f"--inject {name}", ["run", *SEL, "--inject", spec], word)
usage("--inject unit outside --cpuset", ["run", *SEL, "--cpuset", "0", "--inject", f"case={CASE},element=5,bit=3,unit=1"], "unit=1: cpu 1 is not")

# --cpuset
usage("--cpuset letters", ["run", *SEL, "--cpuset", "ab"], "--cpuset", "ab")
usage("--cpuset reversed range", ["run", *SEL, "--cpuset", "1-0"], "--cpuset", "1-0")
usage("--cpuset empty item", ["run", *SEL, "--cpuset", "0,,1"], "--cpuset", "0,,1")
usage("--cpuset trailing comma", ["run", *SEL, "--cpuset", "0,"], "--cpuset")
usage("--cpuset CPU 4095", ["run", *SEL, "--cpuset", "4095"], "--cpuset", "4095")
usage("--cpuset CPU 1000 (valid number, absent)", ["run", *SEL, "--cpuset", "1000"], "--cpuset", "1000")
usage("--cpuset half range", ["run", *SEL, "--cpuset", "0-"], "--cpuset", "0-")

# --time-budget
# (a bare number is seconds: "45" is accepted, test_no_fail_open.py; repeated or misordered units are not)
for name, value in [("zero", "0s"), ("bare zero", "0"), ("garbage", "garbage"), ("negative", "-5s"),
                    ("unknown unit", "5x"), ("unit only", "s"), ("repeated unit", "1h1h"), ("misordered", "1s5m")]:
    usage(f"--time-budget {name}", ["run", *SEL, "--time-budget", value], "--time-budget", value)

# Values that would otherwise be a silent default: NaN passes CLI11's range check (a limit nothing exceeds), a size
# under one byte is 0 (no limit), an empty profile selects no profile.
usage("--max-temperature nan", ["run", *SEL, "--max-temperature", "nan"], "--max-temperature")
for value in ("0.5", "1e-300G", "0x10M", "+5M", "1" + "0" * 400):
    usage(f"--max-memory {value}", ["run", *SEL, "--max-memory", value], "--max-memory", value)
usage("empty --profile", ["run", *SEL, "--profile", ""], "--profile")
usage("empty --profile for list", ["list", "--profile", ""], "--profile")
# --cpuset names CPUs to screen: a GPU backend would screen the GPUs and leave them out
usage("--cpuset with a GPU backend", ["run", *SEL, "--backend", "cuda", "--cpuset", "0"], "--cpuset", "--backend cuda")

# --no-probe leaves nothing for --fail-slow or --throughput-floor to act on
usage("--no-probe with --fail-slow", ["run", *SEL, "--no-probe", "--fail-slow"], "--fail-slow", "--no-probe")
usage("--no-probe with --throughput-floor", ["run", *SEL, "--no-probe", "--throughput-floor", "0.5"],
      "--throughput-floor", "--no-probe")

# enumerated values
usage("bad --backend", ["run", *SEL, "--backend", "opencl"], "--backend", "opencl")
usage("bad --output-format", ["run", *SEL, "--output-format", "xml"], "--output-format", "xml")

# A rejected command line writes no report.
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.json")
    p = common.run("run", "--enable", "nosuch_case", "--output-format", "json", "-o", out)
    F.check(p.returncode == 64 and not os.path.exists(out), "a rejected command line still wrote the -o report")

# --- outputs that are one file: 64, before anything is written ----------------------------------------
with tempfile.TemporaryDirectory() as d:
    same, hist = os.path.join(d, "same"), os.path.join(d, "h")
    usage("-o and --html one file", ["run", *SEL, "-q", "-o", same, "--html", same], "-o and --html", same)
    with open(same, "w") as f:  # an earlier page, and a link to it
        f.write("old")
    os.symlink(same, os.path.join(d, "alias"))
    usage("--prometheus and --html one file through a link",
          ["run", *SEL, "-q", "--html", same, "--prometheus", os.path.join(d, "alias")], "--html and --prometheus")
    usage("-o over the history file", ["run", *SEL, "-q", "--history", hist, "-o", os.path.join(hist, "history.jsonl")],
          "the node's history")
    usage("--html over the lock file", ["run", *SEL, "-q", "--html", common.LOCK_FILE], "lock file")
    F.check(open(same).read() == "old" and not os.path.exists(hist), "a refused command line wrote an output or a history")

# --- an output that is not a regular file: 78, never replaced; a link is never followed ---------------
with tempfile.TemporaryDirectory() as d:
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    one_line_error("-o a FIFO", common.run("run", *SEL, "-q", "-o", fifo), 78, fifo, "not a regular file")
    F.check(stat.S_ISFIFO(os.stat(fifo).st_mode), "-o a FIFO: replaced by a file")
    os.makedirs(os.path.join(d, "real"))
    target, link = os.path.join(d, "real", "r.json"), os.path.join(d, "link.json")
    with open(target, "w") as f:
        f.write("old")
    os.symlink(target, link)
    # (root writing through a link planted in a shared directory would replace the file it names)
    one_line_error("-o a symbolic link", common.run("run", *SEL, "-q", "-o", link), 78, link, "symbolic link")
    F.check(os.path.islink(link) and open(target).read() == "old", "-o a symbolic link: the link or its target changed")
    one_line_error("--prometheus /dev/null", common.run("run", *SEL, "-q", "--prometheus", "/dev/null"), 78,
                   "/dev/null", "not a regular file")
    F.check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is no longer a character device")

# --- unwritable -o: 78 with the path named ----------------------------------------------------------
with tempfile.TemporaryDirectory() as d:
    missing = os.path.join(d, "no", "such", "dir", "report.json")
    one_line_error("-o in a nonexistent directory", common.run("run", *SEL, "-q", "-o", missing), 78, missing)
    one_line_error("-o is a directory", common.run("run", *SEL, "-q", "-o", d), 78, d)
    ro = os.path.join(d, "ro")
    os.mkdir(ro)
    os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
    target = os.path.join(ro, "report.json")
    if os.geteuid() == 0:
        print("SKIP: -o in a read-only directory: running as root, permission bits do not stop root from writing")
    else:
        one_line_error("-o in a read-only directory", common.run("run", *SEL, "-q", "-o", target), 78, target)
        F.check(not os.path.exists(target), "-o in a read-only directory: the report exists anyway")
    os.chmod(ro, stat.S_IRWXU)

# --- help, version, list, info, verify-patterns -----------------------------------------------------
for args in (["--help"], ["run", "--help"]):
    p = common.run(*args)
    name = "sdcscreen " + " ".join(args)
    F.check(p.returncode == 0, f"{name}: exit {p.returncode}")
    F.check(not any(m in p.stderr for m in CRASH_MARKS), f"{name}: crash marks on stderr")
    text = p.stdout.lower()
    missing = [w for w in ("example", "sdcscreen run", "boot", "automation", "triage") if w not in text]
    F.check(not missing, f"{name}: the help does not show examples for node boot, fleet automation and triage "
                         f"(missing {missing})")

p = common.run("--version")
F.check(p.returncode == 0 and re.match(r"^sdcscreen \d+\.\d+\.\d+", p.stdout), f"--version: exit {p.returncode}, {p.stdout!r}")
p = common.run("run", "--version")
if p.returncode == 0:
    F.check(re.match(r"^sdcscreen \d+\.\d+\.\d+", p.stdout) is not None, f"run --version: prints {p.stdout!r}")
else:
    one_line_error("run --version", p, 64, "--version")

# The commit in --version is read at every build, not at configure time: cmake/git_version.cmake, run on a
# scratch repository, names each new commit and leaves its header untouched while the commit stays.
if shutil.which("git") and shutil.which("cmake"):
    with tempfile.TemporaryDirectory() as repo:
        header = os.path.join(repo, "out", "sdc_git.h")
        script = os.path.join(common.SOURCE_DIR, "cmake", "git_version.cmake")
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t")

        def stamp():
            subprocess.run(["cmake", f"-DSRC={repo}", f"-DOUT={header}", "-P", script], check=True, capture_output=True)
            with open(header) as f:
                return f.read(), os.stat(header).st_mtime_ns

        def commit(n):
            with open(os.path.join(repo, "f"), "w") as f:
                f.write(str(n))
            for args in (["add", "f"], ["commit", "-q", "-m", str(n)]):
                subprocess.run(["git", "-C", repo] + args, check=True, capture_output=True, env=env)
            return subprocess.run(["git", "-C", repo, "rev-parse", "--short=12", "HEAD"], check=True,
                                  capture_output=True, text=True).stdout.strip()

        subprocess.run(["git", "init", "-q", repo], check=True, capture_output=True)
        first = commit(1)
        text1, mtime1 = stamp()
        F.check(f'"{first}"' in text1, f"git_version.cmake: header {text1!r} does not name the commit {first}")
        os.utime(header, ns=(mtime1 - 10**9, mtime1 - 10**9))
        text_again, mtime_again = stamp()
        F.check(text_again == text1 and mtime_again == mtime1 - 10**9,
                "git_version.cmake: rewrote the header with the commit unchanged (every build would recompile)")
        second = commit(2)
        text2, _ = stamp()
        F.check(f'"{second}"' in text2 and second != first,
                f"git_version.cmake: after a new commit the header says {text2!r}, not {second}")

p = common.run("list")
F.check(p.returncode == 0, f"list: exit {p.returncode} ({p.stderr.strip()[:300]})")
sections = {k: [line.split()[0] for line in v] for k, v in common.list_sections(p.stdout).items()}
bat = common.battery()
# The registry lists exactly the family table's families (kernels/families.def), in its order, and the
# battery has cases of every one of them.
table = common.table_families()
families = sorted({c["family"] for c in bat["cases"]})
F.check(len(table) >= 20, f"kernels/families.def: only {len(table)} families read from the table")
F.check(sections.get("families", []) == table, f"list: families {sections.get('families')}, expected exactly {table}")
F.check(families == sorted(table), f"battery has cases of {families}, expected {sorted(table)}")
for prof in ["boot", "standard", "burnin"]:
    F.check(prof in sections.get("profiles", []), f"list: profile {prof} not listed under 'profiles:'")
for c in bat["cases"]:
    F.check(c["id"] in sections.get("cases", []), f"list: case {c['id']} not listed under 'cases:'")
p = common.run("list", "--profile", "boot")
boot_ids = {c["id"] for c in bat["cases"] if "boot" in c["iterations"]}
listed = {l.split()[0] for l in common.list_sections(p.stdout).get("cases", [])}
F.check(p.returncode == 0 and listed == boot_ids, f"list --profile boot: exit {p.returncode}, lists {sorted(listed ^ boot_ids)} wrongly")



def result_column(line):
    """The offset of a table row's fourth field (the result column), None when it has fewer."""
    m = re.match(r"^(\S+\s+){3}", line)
    return m.end() if m else None


# The text listing's case rows line up whatever the length of the case ids.
p = common.run("list")
rows = common.list_sections(p.stdout).get("cases", [])
second = {re.match(r"^\s*\S+\s+", l).end() for l in rows}
longest = max(len(l.split()[0]) for l in rows) if rows else 0
F.check(len(second) == 1 and min(second) > 2 + longest,
        f"list: the case rows' second column starts at offsets {sorted(second)} (longest case id {longest})")
p = common.run("info")
F.check(p.returncode == 0, f"info: exit {p.returncode} ({p.stderr.strip()[:300]})")
F.check(p.stdout.startswith("sdcscreen ") and "cpu" in p.stdout, f"info: unexpected output {p.stdout[:300]!r}")
# Where cuBLASLt comes from: a CUDA build finds the toolkit's own (it was built with one, whatever the loader's
# path says); a build without CUDA says it has none.
lt = [line for line in p.stdout.splitlines() if line.startswith("cublaslt: ")]
if "no CUDA backend" in p.stdout:
    F.check(lt == ["cublaslt: none: this build of sdcscreen has no CUDA backend"], f"info without CUDA: {lt}")
else:
    F.check(len(lt) == 1 and lt[0].startswith("cublaslt: cublasLt 13.") and " from /" in lt[0]
            and os.path.isfile(lt[0].split(" from ", 1)[1]), f"info: cuBLASLt line {lt}")

p = common.run("verify-patterns")
F.check(p.returncode == 0, f"verify-patterns on the source patterns: exit {p.returncode} ({p.stderr.strip()[:300]})")
F.check("patterns ok" in p.stdout, f"verify-patterns: {p.stdout[:300]!r}")

# --- a time budget too small to run everything is not a pass ----------------------------------------
rc, rep, err = common.run_json("--time-budget", "1ms")
F.check(rc == 2, f"--time-budget 1ms (boot): exit {rc}, expected 2 (stderr: {err.strip()[:300]})")
if rep:
    F.check(rep["exit"]["verdict"] != "pass", f"--time-budget 1ms: exit verdict {rep['exit']}")
    skipped = [t for t in rep["tests"] if t["result"] == "skip" and not common.gpu_only_skip(t)]
    F.check(len(skipped) >= 1, "--time-budget 1ms: no test was skipped for time, so this check proves nothing")
    for t in rep["tests"]:
        if t["iterations"] == 0 or t["tiles"] == 0:
            F.check(t["result"] != "pass", f"--time-budget 1ms: {t['id']} ran no iteration yet is reported pass")
        if t["result"] == "skip":
            F.check(bool(t.get("reason")), f"--time-budget 1ms: skipped {t['id']} gives no reason")
    gpu_only = sum(1 for t in rep["tests"] if common.gpu_only_skip(t))
    F.check(rep["summary"]["pass"] < rep["summary"]["tests"] - gpu_only, f"--time-budget 1ms: summary {rep['summary']}")
    boot_cases = [c["id"] for c in bat["cases"] if "boot" in c["iterations"]]
    F.check([t["id"] for t in rep["tests"]] == boot_cases, "--time-budget 1ms: not every boot case is in the report")
else:
    F.check(False, "--time-budget 1ms: no report written")
p = common.run("run", "--time-budget", "1ms")
last = p.stdout.rstrip().splitlines()[-1] if p.stdout.strip() else ""
F.check(p.returncode == 2 and last == "exit: error", f"--time-budget 1ms text: exit {p.returncode}, last line {last!r}")
F.check("exit: pass" not in p.stdout, "--time-budget 1ms text: says 'exit: pass'")


# --- the text report at a glance ----------------------------------------------------------------------
def table_rows(text):
    """The header and the case rows of a text report's table of tests."""
    table = text.split("\ntest ", 1)[-1].split("\n\n", 1)[0].splitlines()
    return ["test " + table[0]] + [l for l in table[1:] if l.split() and l.split()[0] in common.CASES]


def check_aligned(name, text):
    rows = table_rows(text)
    offsets = {result_column(l) for l in rows}
    F.check(len(rows) > 1 and len(offsets) == 1,
            f"{name}: table rows not aligned (result column at offsets {sorted(offsets, key=str)})")


# The time-budget skips keep their rows and skip lines, aligned with the others.
check_aligned("--time-budget 1ms text", p.stdout)
F.check("  skip: time budget" in p.stdout, "--time-budget 1ms text: the cases skipped for time lost their skip lines")
# A CPU run of the boot profile: the GPU-only cases are one line, not a row and a skip line each.
p = common.run("run", "--profile", "boot")
first = p.stdout.splitlines()[0] if p.stdout else ""
F.check(p.returncode == 0, f"boot text: exit {p.returncode} ({p.stderr.strip()[:300]})")
if "  backend cpu  " in first:
    boot_cases = [c["id"] for c in bat["cases"] if "boot" in c["iterations"]]
    gpu_only = [c for c in boot_cases if common.CASES[c]["family"] in common.GPU_ONLY_FAMILIES]
    collapsed = [l for l in p.stdout.splitlines() if "not applicable" in l and not l.startswith("summary: ")]
    F.check(len(gpu_only) >= 2 and len(collapsed) == 1 and
            collapsed[0].startswith(f"{len(gpu_only)} GPU-only cases not applicable on the cpu backend (families "),
            f"boot text: the {len(gpu_only)} GPU-only cases are not one line: {collapsed!r}")
    # and the summary counts them apart: not applicable is not a skip.
    summary = [l for l in p.stdout.splitlines() if l.startswith("summary: ")]
    F.check(len(summary) == 1 and f" 0 skip, {len(gpu_only)} not applicable;" in summary[0],
            f"boot text: summary {summary}")
    F.check("runs on GPUs only" not in p.stdout and "  skip: " not in p.stdout,
            "boot text: a 'skip: family ... runs on GPUs only' line is left")
    rows = table_rows(p.stdout)
    shown = [l.split()[0] for l in rows[1:]]
    expected = [c for c in boot_cases if c not in gpu_only]
    F.check(shown == expected, f"boot text: table rows differ from the boot cases that run on CPUs: extra "
                               f"{sorted(set(shown) - set(expected))}, missing {sorted(set(expected) - set(shown))}")
    check_aligned("boot text", p.stdout)
    F.check(p.stdout.rstrip().splitlines()[-1] == "exit: pass", "boot text: last line is not 'exit: pass'")

# bundle -o and fleet -o/--html inside the pattern directory: refused (64, one line, nothing written) as run's
# outputs are; they used to write there.
with tempfile.TemporaryDirectory() as d:
    pat = os.path.join(d, "patterns")
    shutil.copytree(common.PATTERNS, pat)
    env = dict(os.environ, SDCSCREEN_PATTERNS=pat)
    before = sorted(os.listdir(pat))
    for what, argv in (("bundle -o", ["bundle", os.path.join(d, "hist"), "-o", os.path.join(pat, "b.tar.gz")]),
                       ("bundle -o (relative)", ["bundle", os.path.join(d, "hist"), "-o", "patterns/b.tar.gz"]),
                       ("fleet -o", ["fleet", d, "-o", os.path.join(pat, "fleet.txt")]),
                       ("fleet --html", ["fleet", d, "--html", os.path.join(pat, "golden", "fleet.html")])):
        p = subprocess.run([common.SDCSCREEN, *argv], capture_output=True, text=True, timeout=120, env=env, cwd=d)
        one_line_error(f"{what} inside the pattern directory", p, 64, "inside the pattern directory")
    F.check(sorted(os.listdir(pat)) == before and not os.path.exists(os.path.join(pat, "golden", "fleet.html")),
            f"outputs inside the pattern directory: written anyway: {sorted(set(os.listdir(pat)) - set(before))}")
    p = subprocess.run([common.SDCSCREEN, "bundle", os.path.join(d, "hist"), "-o", os.path.join(d, "b.tar.gz")],
                       capture_output=True, text=True, timeout=120, env=env)
    F.check(p.returncode == 0 and os.path.isfile(os.path.join(d, "b.tar.gz")),
            f"bundle -o outside the pattern directory: exit {p.returncode}: {p.stderr[-300:]}")

# --npd prints its one line (stdout, at most 80 characters) on every path, a command line that does not parse
# and a held lock included: node-problem-detector shows nothing else.
with tempfile.TemporaryDirectory() as d:
    lock = os.path.join(d, "lock")
    held = open(lock, "w")
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    for what, argv, code in [
        ("an unknown option", ["run", "--npd", "--bogus"], 64),
        ("an empty option value", ["run", "--npd", "--deadline", ""], 64),
        ("a bad seed", ["run", "--seed", "-1", "--npd"], 64),
        ("a bad --deadline", ["run", "--npd", "--deadline", "1s5m"], 64),
        ("no pattern directory", ["run", "--npd", "--patterns", os.path.join(d, "none")], 78),
        ("a held lock", ["run", "--npd", "--backend", "cpu", "--lock-file", lock], 2),
    ]:
        p = subprocess.run([common.SDCSCREEN, *argv], capture_output=True, text=True, timeout=120)
        F.check(p.returncode == code, f"--npd, {what}: exit {p.returncode}, want {code}: {p.stderr[-300:]}")
        F.check(p.stdout.startswith("Unknown: ") and p.stdout.count("\n") == 1 and len(p.stdout) <= 81,
                f"--npd, {what}: stdout {p.stdout!r}, want one Unknown line")
    held.close()

F.finish()

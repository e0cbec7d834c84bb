"""bench_cpu_gemm says whose choice OpenBLAS's kernels are, and measures against OpenBLAS's own choice too when
the environment forces them (OPENBLAS_CORETYPE set before it starts): a ratio against a kernel family older than
the CPU flatters the exact code. On tiny shapes, with --min-ratio 0: nothing here reads a timing, only which
lines are printed and the exit codes.

  - left to OpenBLAS: one line naming the kernels "OpenBLAS's own choice for this CPU", no child run;
  - OPENBLAS_CORETYPE=Prescott (SSE3 kernels, which every x86-64 CPU runs): the kernels "forced by
    OPENBLAS_CORETYPE=Prescott in the environment", then the child's lines (indented, with the variable
    cleared: the first run's kernels), then one line per shape and precision (fp32, then fp64 as f64:SHAPE)
    with both ratios, in the order of the shapes;
  - a malformed --shape: exit 64 with one line naming it.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failures import Failures  # noqa: E402

BENCH = os.environ["BENCH_CPU_GEMM"]
ARGS = ["--shape", "96x64x130", "--shape", "64x64x64", "--reps", "5", "--min-ratio", "0", "--no-thp"]
RATIOS = ["96x64x130", "f64:96x64x130", "64x64x64", "f64:64x64x64"]


def run(env_extra, args):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "SDC_BENCH_CORETYPE_SET")}
    env.update(env_extra)
    return subprocess.run([BENCH, *args], env=env, capture_output=True, text=True, timeout=120)


def main():
    F = Failures("bench_cpu_choice")
    p = run({}, ARGS)
    out = p.stdout
    own = re.findall(r"^openblas kernels (\S+) \((.*)\)$", out, re.M)
    F.check(p.returncode == 0, f"left to OpenBLAS: exit {p.returncode}: {p.stderr[-400:]}")
    # Where OpenBLAS falls back to kernels slower than the CPU allows, the benchmark names the better family
    # itself and says so; either way the line says whose choice it is.
    F.check(len(own) == 1 and (own[0][1] == "OpenBLAS's own choice for this CPU" or "set by this benchmark" in own[0][1]),
            f"left to OpenBLAS: the kernels' line is {own}")
    F.check("  | " not in out and "against OpenBLAS's own choice" not in out,
            "left to OpenBLAS: a second run against OpenBLAS's own choice was made")
    F.check(re.findall(r"^ratio (\S+) [0-9.]+$", out, re.M) == RATIOS,
            f"left to OpenBLAS: ratio lines {re.findall(r'^ratio .*$', out, re.M)}")
    auto_core = own[0][0] if own else "?"

    p = run({"OPENBLAS_CORETYPE": "Prescott"}, ARGS)
    out = p.stdout
    F.check(p.returncode == 0, f"forced: exit {p.returncode}: {p.stderr[-400:]}")
    F.check(re.search(r"^openblas kernels Prescott \(forced by OPENBLAS_CORETYPE=Prescott in the environment\)$", out,
                      re.M) is not None, f"forced: no line naming the forced kernels:\n{out[:600]}")
    child = [l[4:] for l in out.splitlines() if l.startswith("  | ")]
    F.check(any(l.startswith(f"openblas kernels {auto_core} (") for l in child),
            f"forced: the child run did not use the kernels of a run left to OpenBLAS ({auto_core}): {child[:4]}")
    F.check(re.findall(r"^ratio (\S+) [0-9.]+$", "\n".join(child), re.M) == RATIOS,
            f"forced: the child's ratio lines: {child}")
    both = re.findall(r"^ratio (\S+): [0-9.]+ against Prescott \(forced\), [0-9.]+ against (\S+) \(OpenBLAS's own choice\)$",
                      out, re.M)
    F.check(both == [(r, auto_core) for r in RATIOS], f"forced: both-ratio lines {both}")
    F.check("MISMATCH" not in out, "forced: a result disagreed with the exact one")
    F.check(out.count("bit-exact to the specification") == 4,
            "the fp64 products were not checked against the specification in both runs and shapes")

    p = run({}, ["--shape", "64x64"])
    F.check(p.returncode == 64 and p.stderr.strip().count("\n") == 0 and "--shape" in p.stderr and "64x64" in p.stderr,
            f"bad --shape: exit {p.returncode}: {p.stderr!r}")
    F.finish()


if __name__ == "__main__":
    main()

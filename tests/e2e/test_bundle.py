"""The GPU bundle (scripts/gpu-bundle.sh) runs from anywhere, on a machine without the source or the build.

The bundle is written from the test's build tree (SDC_BUILD_DIR, a CUDA build), copied to a fresh temporary
directory, and run there with the source tree and the build directory hidden (an empty tmpfs mounted over each
in a private mount namespace, where `unshare -m` is allowed; otherwise they stay visible and the test says so):
- `sdcscreen info` finds the bundle's own patterns, next to the executable;
- a CPU boot screen passes (exit 0) and its JSON report says so;
- `gpu_tests` walks the battery's plan and then skips, with no GPU (exit 77); `bench_gpu` says no usable device
  (exit 2); `gpu-validate.sh --help` exits 0, and without a GPU the script exits 2 without building anything;
- the lookup refuses what it cannot use: SDCSCREEN_PATTERNS naming nothing is exit 78 naming it; with patterns/
  moved away, exit 78 naming where it looked;
- every bundled binary resolves its libraries from lib/ or the system's C library, driver and CUDA; the bundle
  is under 64 MiB and SHA256SUMS checks;
- BUNDLE.txt states the highest glibc symbol version the bundle's files need, the same as objdump -T finds
  here, file by file; a portable build (SDC_PORTABLE_BINARIES) bundles no C++ runtime and needs glibc 2.34 at
  most; no binary links cuBLAS or cuBLASLt (both are loaded at run time).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_bundle")
SRC = os.path.realpath(common.SOURCE_DIR)
BUILD = os.path.realpath(os.environ.get("SDC_BUILD_DIR") or os.path.dirname(os.path.abspath(common.SDCSCREEN)))


def can_hide():
    p = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return p.returncode == 0


HIDE = can_hide()


def hidden(cmd, cwd, env=None, timeout=600):
    """Runs cmd in cwd with the source tree and the build directory hidden (when the namespace is allowed)."""
    if HIDE:
        mounts = " && ".join(f"mount -t tmpfs sdcscreen-hidden {d}" for d in (BUILD, SRC) if os.path.isdir(d))
        cmd = ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$@"', "sh", *cmd]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def glibc_needed(path):
    """The highest GLIBC_ symbol version the file takes from the C library (objdump -T), as a tuple, or None."""
    p = subprocess.run(["objdump", "-T", path], capture_output=True, text=True)
    versions = [tuple(int(x) for x in v.split(".")) for line in p.stdout.splitlines() if "*UND*" in line
                for v in re.findall(r"\(GLIBC_([0-9.]+)\)", line)]
    return max(versions) if versions else None


def cache_value(name):
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def main():
    if not os.path.exists(os.path.join(BUILD, "gpu_tests")):
        print(f"SKIP: {BUILD} is not a CUDA build (no gpu_tests): there is no GPU bundle to make")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="sdc-bundle-") as tmp:
        stage = os.path.join(tmp, "stage", "gpu-bundle")
        p = subprocess.run(["bash", os.path.join(SRC, "scripts", "gpu-bundle.sh"), "--no-build", "--build-dir", BUILD,
                            "--out", stage], capture_output=True, text=True, timeout=600)
        F.check(p.returncode == 0 and p.stdout.strip() == stage, f"gpu-bundle.sh: exit {p.returncode}: {p.stderr[-800:]}")
        if p.returncode != 0:
            F.finish()
        print(p.stderr.strip().splitlines()[-1])
        # Relocated: a copy elsewhere, the staging folder gone.
        root = os.path.join(tmp, "elsewhere", "gpu-bundle")
        shutil.copytree(stage, root, symlinks=True)
        shutil.rmtree(os.path.join(tmp, "stage"))
        if not HIDE:
            print("NOTE: unshare -m is not allowed here: the source tree and the build directory stay visible")

        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
        F.check(size < 64 << 20, f"the bundle is {size >> 20} MiB, over 64 MiB")
        for f in ("sdcscreen", "gpu_tests", "bench_gpu", "scripts/gpu-validate.sh", "scripts/gpu-drills.py",
                  "scripts/gpu-first-light.sh", "scripts/gpu-first-light-lib.sh",
                  "patterns/battery.json", "patterns/manifest.json", "docs/gpu-validation/README.md", "BUNDLE.txt"):
            F.check(os.path.isfile(os.path.join(root, f)), f"the bundle lacks {f}")
        F.check(not any(os.path.islink(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs),
                "the bundle holds a symbolic link (to the build or source tree?)")
        p = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=root, capture_output=True, text=True)
        F.check(p.returncode == 0, f"SHA256SUMS does not check: {p.stdout[-300:]} {p.stderr[-300:]}")
        bundle_txt = open(os.path.join(root, "BUNDLE.txt")).read()
        portable = cache_value("SDC_PORTABLE_BINARIES") == "ON"
        F.check("GLIBC" in bundle_txt and ("libfmt" in bundle_txt) != portable, f"BUNDLE.txt: {bundle_txt}")
        # The glibc it states: the highest any of its files needs, as objdump sees it here, and each file's.
        files = ["sdcscreen", "gpu_tests", "bench_gpu"] + [os.path.join("lib", f)
                                                          for f in sorted(os.listdir(os.path.join(root, "lib")))]
        needs = {f: glibc_needed(os.path.join(root, f)) for f in files}
        top = max(v for v in needs.values() if v)
        top_text = ".".join(map(str, top))
        F.check(f"\nglibc:         {top_text} (" in bundle_txt, f"BUNDLE.txt does not state glibc {top_text}: {bundle_txt}")
        for f, v in needs.items():
            if v:
                F.check(re.search(rf"^  {re.escape(f)} +GLIBC_{re.escape('.'.join(map(str, v)))} \S", bundle_txt, re.M),
                        f"BUNDLE.txt lacks {f}'s line (GLIBC_{'.'.join(map(str, v))} and its symbols)")
        print(f"glibc needed: {top_text} ({'portable' if portable else 'not a portable'} build); per file: "
              + ", ".join(f"{f} {'.'.join(map(str, v))}" for f, v in needs.items() if v))
        if portable:
            F.check(os.listdir(os.path.join(root, "lib")) == [], f"a portable bundle's lib/ holds "
                                                                 f"{os.listdir(os.path.join(root, 'lib'))}")
            F.check(top <= (2, 34), f"a portable bundle needs glibc {top_text}, more than 2.34")

        env = dict(os.environ, SDCSCREEN_HISTORY="none")
        env.pop("SDCSCREEN_PATTERNS", None)
        patterns = os.path.join(root, "patterns")

        # Every library resolved: from lib/, or what the machine provides (C library, driver, CUDA's cuBLAS).
        for b in ("sdcscreen", "gpu_tests", "bench_gpu"):
            p = hidden(["ldd", os.path.join(root, b)], root, env)
            missing = [line.strip() for line in p.stdout.splitlines() if "not found" in line]
            F.check(p.returncode == 0 and not missing, f"ldd {b}: exit {p.returncode}, missing {missing}")
            fmt = [line for line in p.stdout.splitlines() if "libfmt" in line or "libstdc++" in line]
            if portable:
                F.check(not fmt, f"{b}: a portable build links {fmt}")
            else:
                F.check(fmt and all(os.path.join(root, "lib") in line for line in fmt),
                        f"{b}: libfmt or libstdc++ is not the bundle's own: {fmt}")
            cublas = [line.strip() for line in p.stdout.splitlines() if "libcublas" in line]
            F.check(not cublas, f"{b} links {cublas}: cuBLAS and cuBLASLt are loaded at run time")

        p = hidden(["./sdcscreen", "info"], root, env)
        F.check(p.returncode == 0 and f"patterns: {patterns} (next to the executable)" in p.stdout,
                f"info: exit {p.returncode}: {p.stdout[-600:]} {p.stderr[-300:]}")

        report = os.path.join(tmp, "boot.json")
        p = hidden(["./sdcscreen", "run", "--backend", "cpu", "--profile", "boot", "--force", "-q", "--output-format",
                    "json", "-o", report], root, env)
        verdict = json.load(open(report))["exit"] if os.path.exists(report) else None
        F.check(p.returncode == 0 and verdict == {"code": 0, "verdict": "pass"},
                f"CPU boot screen from the bundle: exit {p.returncode}, report {verdict}: {p.stderr[-600:]}")

        p = hidden(["./gpu_tests"], root, env)
        F.check(p.returncode == 77 and "SKIP: no usable GPU" in p.stdout,
                f"gpu_tests without a GPU: exit {p.returncode}: {p.stdout[-300:]} {p.stderr[-300:]}")
        p = hidden(["./gpu_tests", "--patterns", os.path.join(tmp, "nowhere")], root, env)
        F.check(p.returncode == 78 and "nowhere" in p.stderr, f"gpu_tests --patterns nowhere: exit {p.returncode}")
        p = hidden(["./bench_gpu"], root, env)
        F.check(p.returncode == 2 and "no usable CUDA device" in p.stdout,
                f"bench_gpu without a GPU: exit {p.returncode}: {p.stdout[-300:]} {p.stderr[-300:]}")

        p = hidden(["bash", "scripts/gpu-validate.sh", "--help"], root, env)
        F.check(p.returncode == 0 and "gpu-validate" in p.stdout, f"gpu-validate.sh --help: exit {p.returncode}")
        out = os.path.join(tmp, "validation")
        p = hidden(["bash", "scripts/gpu-validate.sh", "--out", out], root, env, timeout=300)
        F.check(p.returncode == 2 and "cmake" not in (p.stdout + p.stderr).lower(),
                f"gpu-validate.sh without a GPU: exit {p.returncode} (2 expected, nothing built): {p.stderr[-600:]}")

        # The first-light script from the bundle without a GPU: step 0 checks the bundle (SHA256SUMS) and stops, exit 2,
        # with its two files.
        fl_out = os.path.join(tmp, "first-light")
        p = hidden(["bash", "scripts/gpu-first-light.sh", fl_out], root, env, timeout=300)
        summary = open(os.path.join(fl_out, "summary.txt")).read() if os.path.exists(os.path.join(fl_out, "summary.txt")) else ""
        F.check(p.returncode == 2 and "sha256sum -c: every bundle file intact" in summary
                and sorted(os.listdir(fl_out)) == ["results.tgz", "summary.txt"],
                f"gpu-first-light.sh without a GPU: exit {p.returncode} (want 2): {summary[-800:]} {p.stderr[-400:]}")

        # The lookup's refusals.
        p = hidden(["./sdcscreen", "list"], root, dict(env, SDCSCREEN_PATTERNS=os.path.join(tmp, "no-such-patterns")))
        F.check(p.returncode == 78 and "no-such-patterns" in p.stderr,
                f"SDCSCREEN_PATTERNS naming nothing: exit {p.returncode}: {p.stderr[-300:]}")
        p = hidden(["./sdcscreen", "list"], root, dict(env, SDCSCREEN_PATTERNS=patterns))
        F.check(p.returncode == 0, f"SDCSCREEN_PATTERNS naming the bundle's patterns: exit {p.returncode}")
        os.rename(patterns, os.path.join(tmp, "patterns-moved"))
        p = hidden(["./sdcscreen", "list"], root, env)
        F.check(p.returncode == 78 and "no pattern directory found" in p.stderr and patterns in p.stderr,
                f"no patterns anywhere: exit {p.returncode}: {p.stderr[-400:]}")
        p = hidden(["./sdcscreen", "run", "--backend", "cpu", "--force", "--npd"], root, env)
        F.check(p.returncode == 78 and "no pattern directory found" in p.stderr and "Unknown" in p.stdout
                and "no pattern directory found" in p.stdout,
                f"run --npd with no patterns: exit {p.returncode}, stdout {p.stdout[-300:]!r}")
        p = hidden(["./sdcscreen", "run", "--inject", "nonsense", "--force"], root, env)
        F.check(p.returncode == 64, f"a bad --inject with no patterns: exit {p.returncode} (the usage error first)")
        p = hidden(["./sdcscreen", "list", "--patterns", os.path.join(tmp, "patterns-moved")], root, env)
        F.check(p.returncode == 0, f"--patterns with patterns/ moved away: exit {p.returncode}: {p.stderr[-300:]}")
    F.finish()


main()

"""The GPU's and the emulated device's copies of the device code never share a symbol that depends on the target.

Every kernel file is compiled twice into one library (src/backends/cuda/cuda_target.h): by nvcc for the GPU
(namespace gpu) and as C++ for the emulated device (namespace emu). A template or inline function outside those
namespaces, instantiated by both with the same types, is one weak symbol twice, and the linker keeps one copy for
both: if its body depends on the target (a launch, a device pass, anything under SDC_EMU), a GPU runs the
emulator's copy on device pointers. The emulated device's tests cannot see that (they may get the right copy);
a GPU did (row families' shared device class, 2026-11-26). So: the weak symbols that a GPU object and an
emulated object of sdccore both define are read with nm and each must be one this list knows to be the same
on both targets (the device problem's defaults, the CUDA error type, the families' specification constants and
host-device functions, which come from headers that do not look at the target). A shared symbol not on the list
fails, named; a list entry that no shared symbol matches fails too (the list stays true).

Arguments: the sdccore object folder (CMakeFiles/sdccore.dir). Skipped (77) when it holds no GPU objects.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failures import Failures  # noqa: E402

# What both targets may define once: target-independent by construction.
SAME_ON_BOTH = [
    r"(typeinfo (name )?for |vtable for )?sdc::cuda::DeviceProblem\b.*",
    r"(typeinfo (name )?for |vtable for )?sdc::cuda::CudaError\b.*",
    r"sdc::[a-z0-9_]+_f32::(ROW_FAMILY|input_window\(.*\))",          # rows/row_family.h descriptions
    r"sdc::recorded_gemm::(F16|BF16)",                                  # recorded_gemm formats' constants
    r"sdc::exactint::FormatTraits<.*>::FORMAT",                        # exactint/formats.h: a format's numbers
    r"sdc::train_step_f32::ReplaySpec::~ReplaySpec\(\)",                # the replay's specification
    r"DW\.ref\.__gxx_personality_v0",
]
IGNORED = re.compile(r"^(std::|__gnu_cxx::|fmt::|nlohmann::|void std::|bool std::|operator |typeinfo (name )?for std::|"
                     r"vtable for std::|guard variable for std::)")


def weak_symbols(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3 and f[1] in ("W", "V", "u")}


def main():
    F = Failures("target_symbols")
    objdir = sys.argv[1]
    gpu, emu = [], []
    for d, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".cu.o"):
                gpu.append(os.path.join(d, f))
            elif f.endswith(".emu.cpp.o"):
                emu.append(os.path.join(d, f))
    if not gpu:
        print("no GPU objects (a build without the CUDA backend): skipped")
        sys.exit(77)
    F.check(len(emu) >= len(gpu) // 2, f"{len(gpu)} GPU objects but {len(emu)} emulated ones: wrong folder?")
    g, e = set(), set()
    for o in gpu:
        g |= weak_symbols(o)
    for o in emu:
        e |= weak_symbols(o)
    shared = sorted(g & e)
    names = subprocess.run(["c++filt"], input="\n".join(shared), capture_output=True, text=True,
                           check=True).stdout.splitlines() if shared else []
    names = [n for n in names if not IGNORED.match(n)]
    print(f"{len(gpu)} GPU objects, {len(emu)} emulated objects, {len(names)} weak symbols of the project in both")
    used = set()
    for n in names:
        hit = next((p for p in SAME_ON_BOTH if re.fullmatch(p, n)), None)
        if hit:
            used.add(hit)
        F.check(hit is not None, f"both targets define {n}: one copy will serve both (move it into the target's "
                                 f"namespace, or list it here if its code cannot depend on the target)")
    for p in SAME_ON_BOTH:
        F.check(p in used, f"no shared symbol matches {p!r}: take it off the list")
    F.finish()


if __name__ == "__main__":
    main()

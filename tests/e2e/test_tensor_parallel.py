"""Tensor parallelism across a node's GPUs, on the emulated device (CTest e2e_emu_tp, label emu): the training-step
replay's level-12 cases split 2 and 4 ways (train_step_f32.h, TENSOR PARALLELISM) run as groups of consecutive GPUs,
each GPU one rank (docs/gpu.md, "Tensor parallelism across GPUs").

  healthy     3 GPUs, tp 2: GPUs 0 and 1 form a group, GPU 2 computes every rank alone; all pass the CPU's golden
  drills      4 GPUs, tp 4: a flip in rank 2's partial on GPU 2 (the GPU that computes it) and the same flip in the
              copy GPU 0 received: GPUs 2 and 0 fail, each at the rank-2 submodule alone at level 1, GPUs 1 and 3
              pass; GPU 2's slots are the CPU's for the same drill bit for bit
  lost peer   2 GPUs, GPU 1 loses its context during level 1: GPU 1's test is a crash, GPU 0's an error that names
              GPU 1 (never a pass, never a hang); GPU 1 without the memory the case needs: its error, and GPU 0's test
              not run with GPU 1's reason (it does not wait for a GPU that will never come)

Under a sanitizer only the lost peers run (seconds): the first exchanges many partials before GPU 1's launch faults,
so the exchange's host code runs instrumented on its normal and its error paths; the healthy and drill runs (about
45 s there, four GPUs emulated on two cores) add the same code with other data.
"""
import os

import common
from common import Failures, run_json

SANITIZED = bool(os.environ.get("SDC_SANITIZED"))

TP2, TP4 = "train_step_f32.l12_tiny_tp2", "train_step_f32.l12_tiny_tp4"
SITE = "submodule=layer0.attn.wo.rank2.forward,microbatch=1,element=77,bit=20"


def tests_by_device(report, case):
    return {t["device"]: t for t in (report or {}).get("tests", []) if t["id"] == case}


def l1_sites(test):
    return {m["site"] for m in test.get("replay_metrics", []) if m["level"] == 1}


def tp_note(test):
    return next((n for n in test.get("notes", []) if n.startswith("tensor parallelism:")), "")


def main():
    F = Failures("e2e_emu_tp")
    if not SANITIZED:
        healthy(F)
        drills(F)
    lost_peer(F)
    F.finish()


def healthy(F):
    code, report, err = run_json("--backend", "emulated:3", "--profile", "boot", "--enable-any", TP2)
    t = tests_by_device(report, TP2)
    F.check(code == 0 and [t.get(f"cuda:{i}", {}).get("result") for i in range(3)] == ["pass"] * 3,
            f"healthy: exit {code}, results {[(d, x.get('result'), x.get('reason')) for d, x in t.items()]}: {err[-300:]}")
    for i, rank in ((0, 0), (1, 1)):
        note = tp_note(t.get(f"cuda:{i}", {}))
        F.check(note.startswith(f"tensor parallelism: rank {rank} of the group gpu 0, gpu 1:"), f"healthy: GPU {i}'s note {note!r}")
    note = tp_note(t.get("cuda:2", {}))
    F.check("no group of 2" in note and "computes every rank's partial itself" in note, f"healthy: GPU 2's note {note!r}")


def drills(F):

    code, report, err = run_json("--backend", "emulated:4", "--profile", "boot", "--enable-any", TP4,
                                 "--inject", f"case={TP4},{SITE},device=2", "--inject", f"case={TP4},{SITE},device=0")
    t = tests_by_device(report, TP4)
    results = [t.get(f"cuda:{i}", {}).get("result") for i in range(4)]
    F.check(code == 1 and results == ["fail", "pass", "fail", "pass"], f"drills: exit {code}, results {results}: {err[-300:]}")
    F.check(report and len(report.get("injections", [])) == 2 and all(i.get("fired") for i in report["injections"]),
            f"drills: injections {report and report.get('injections')}")
    for i in (0, 2):
        gpu = t.get(f"cuda:{i}", {})
        F.check(l1_sites(gpu) == {"layer0.attn.wo.rank2.forward"} and gpu.get("failed_tiles") == 1,
                f"drills: GPU {i} failed {gpu.get('failed_tiles')} tiles, level-1 sites {sorted(l1_sites(gpu))}")
    # The same drill on one CPU, which computes every rank: replica 0's slots and values are GPU 2's.
    code, cpu_report, err = run_json("--cpuset", "0", "--profile", "boot", "--enable-any", TP4, "--inject", f"case={TP4},{SITE}")
    cpu = tests_by_device(cpu_report, TP4).get("cpu", {})
    on_cpu = {(m["element"], m["actual"]) for m in cpu.get("miscompares", []) if m.get("tile") == 0}
    on_gpu = {(m["element"], m["actual"]) for m in t.get("cuda:2", {}).get("miscompares", [])}
    F.check(code == 1 and on_cpu and on_gpu == on_cpu, f"drills: GPU 2's slots {sorted(on_gpu)[:4]} are not the CPU's {sorted(on_cpu)[:4]}")
    metrics = lambda x: {(m["site"], m["metric"], m["value"]) for m in x.get("replay_metrics", [])}
    F.check(metrics(t.get("cuda:2", {})) == metrics(cpu), "drills: GPU 2's metrics are not the CPU's")


def lost_peer(F):

    # The 500th launch of GPU 1 faults (inside level 1's first replica): GPU 0, waiting for its partial, stops.
    code, report, err = run_json("--backend", "emulated:sm_90x8,sm_90x8:fail-launch=500", "--profile", "boot",
                                 "--enable-any", TP2)
    t = tests_by_device(report, TP2)
    g0, g1 = t.get("cuda:0", {}), t.get("cuda:1", {})
    F.check(g1.get("result") == "crash" and "lost its context" in g1.get("reason", ""),
            f"lost peer: GPU 1 {g1.get('result')}: {g1.get('reason')}")
    F.check(g0.get("result") == "error" and g0.get("reason", "").startswith(
        "tensor-parallel exchange: gpu 1 (rank 1) stopped before sending its partial: "),
            f"lost peer: GPU 0 {g0.get('result')}: {g0.get('reason')}")
    F.check(code != 0, f"lost peer: exit {code}")
    code, report, err = run_json("--backend", "emulated:sm_90x8,sm_90x8:mem=2", "--profile", "boot", "--enable-any", TP2)
    t = tests_by_device(report, TP2)
    g0, g1 = t.get("cuda:0", {}), t.get("cuda:1", {})
    F.check(code == 2 and g1.get("result") == "error" and g0.get("result") == "skip" and g0.get("reason") ==
            f"not run: gpu 1 (rank 1 of the tensor-parallel group) did not run the case: {g1.get('reason')}",
            f"peer without memory: exit {code}, GPU 0 {g0.get('result')}: {g0.get('reason')}; GPU 1 {g1.get('result')}: "
            f"{g1.get('reason')}")


if __name__ == "__main__":
    main()

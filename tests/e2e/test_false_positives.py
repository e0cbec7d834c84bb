"""No false positives: clean runs (no injection) on every CPU selection and under many schedule seeds must pass
every case, bit for bit against the golden digests.

A case-run is one test result in a report. The boot profile runs with --cpuset 0, --cpuset 1, --cpuset 0-1 and
no --cpuset, each with several --seed values (the seed rotates which CPU computes which tile, so every tile is
checked as computed by each CPU); then the cases that belong to no boot profile (bigger shapes) run alone with
--enable-any (--enable selects within the profile) on both CPUs (two iterations or more put every tile on each CPU), and the standard profile runs once
with a short budget that it fills with rounds. Every result must be a pass with no miscompare, and the per-unit
tile accounting must add up. Under a sanitizer (SDC_SANITIZED) the same paths run with less volume: one seed
per selection, the least costly non-boot case of each family (in three screens), the three least costly boot cases
in the standard profile.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SANITIZED = bool(os.environ.get("SDC_SANITIZED"))
# Under a sanitizer one seed per selection, a different one each (the largest, 2^62 + 7, on the two-CPU selection):
# what it looks for (memory and undefined behaviour) does not depend on which CPU computes which tile. The release
# suite runs two per selection, each seed on two selections (all four over the four): the boot profile's two
# iterations already put every tile on both CPUs in each run (the rotation advances by one per iteration), and the
# seeds vary which CPU comes first and the workers' interleaving.
BOOT_SEEDS = [1, 2, 12345, 2**62 + 7]
CPUSETS = [None, "0", "1", "0-1"]
MIN_CASE_RUNS = 200


def expected_iterations(case, profile):
    its = case.get("iterations", {})
    return its[profile] if profile in its else min(its.values())


def main():
    fails = common.Failures("test_false_positives")
    cases = {c["id"]: c for c in common.battery()["cases"]}
    allowed = sorted(os.sched_getaffinity(0))
    fails.check({0, 1} <= set(allowed), f"these tests expect logical CPUs 0 and 1 to be available (have {allowed})")
    stats = {"case_runs": 0, "false_positives": 0, "invocations": 0, "extra_rounds": 0}
    fills = {name: p.get("fill", False) for name, p in common.battery()["profiles"].items()}
    t_start = time.time()
    sanitized = SANITIZED
    # case id -> the longest seconds per iteration that a boot run on two CPUs or more measured (duration_s /
    # iterations; the first iteration's set-up included): the standard profile below runs on both CPUs
    per_iteration = {}

    def cpus_of(cpuset):
        if cpuset is None:
            return allowed
        lo, _, hi = cpuset.partition("-")
        return list(range(int(lo), int(hi or lo) + 1))

    def clean_run(profile, cpuset, seed, enable_any=(), budget=None, disable=()):
        args = ["--profile", profile]
        if budget is not None:
            args += ["--time-budget", budget]
        for e in enable_any:
            args += ["--enable-any", e]
        for d in disable:
            args += ["--disable", d]
        if cpuset is not None:
            args += ["--cpuset", cpuset]
        if seed is not None:
            args += ["--seed", str(seed)]
        where = "run " + " ".join(args)
        t0 = time.time()
        rc, rep, err = common.run_json(*args, timeout=600)
        dt = time.time() - t0
        stats["invocations"] += 1
        fails.check(rc == 0, f"{where}: exit {rc}, expected 0; {err.strip()}")
        if rep is None:
            fails.check(False, f"{where}: no report written")
            stats["false_positives"] += 1
            return dt
        expect_ids = list(enable_any) if enable_any else [c for c, v in cases.items()
                                                  if profile in v.get("iterations", {}) and c not in disable]
        tests = rep.get("tests", [])
        fails.check(sorted(t.get("id") for t in tests) == sorted(expect_ids),
                    f"{where}: ran {[t.get('id') for t in tests]}, expected {expect_ids}")
        summary = rep.get("summary", {})
        gpu_only = [t for t in tests if common.gpu_only_case(t.get("id"))]
        for t in gpu_only:  # not applicable on a CPU (not a skip), never passed
            fails.check(t.get("result") == "not_applicable" and t.get("iterations") == 0 and "GPUs only" in t.get("reason", ""),
                        f"{where}: GPU-only {t.get('id')} on the CPU backend: {t}")
        tests = [t for t in tests if t not in gpu_only]
        fails.check(summary.get("fail") == 0 and summary.get("error") == 0 and summary.get("not_applicable") == len(gpu_only) and summary.get("skip") == 0
                    and summary.get("pass") == len(tests) == summary.get("tests") - len(gpu_only),
                    f"{where}: summary {summary}")
        fails.check(rep.get("errors") == [], f"{where}: errors {rep.get('errors')}")
        fails.check(rep.get("fault_injection") is False and rep.get("injections") == [], f"{where}: marked as injected")
        fails.check(rep.get("exit", {}).get("code") == 0, f"{where}: report exit {rep.get('exit')}")
        if seed is not None:
            fails.check(rep.get("seed") == seed, f"{where}: report seed {rep.get('seed')} != {seed}")
        else:
            fails.check(isinstance(rep.get("seed"), int) and f"--seed {rep.get('seed')}" in rep.get("reproduce", ""),
                        f"{where}: a run without --seed must report the seed it drew and a reproduce line with it")
        units = rep.get("units", [])
        want_cpus = cpus_of(cpuset)
        fails.check([u.get("cpu") for u in units] == want_cpus, f"{where}: units {[u.get('cpu') for u in units]} != {want_cpus}")
        tile_total = 0
        for t in tests:
            stats["case_runs"] += 1
            if t.get("iterations") and t.get("duration_s") is not None and profile == "boot" and len(want_cpus) >= 2:
                per_iteration[t.get("id")] = max(per_iteration.get(t.get("id"), 0.0), t["duration_s"] / t["iterations"])
            tid = t.get("id")
            clean = (t.get("result") == "pass" and t.get("failed_tiles") == 0 and t.get("miscompared_elements") == 0
                     and t.get("miscompares") == [] and t.get("units_failed") == [])
            fails.check(clean, f"{where}: FALSE POSITIVE in {tid}: result {t.get('result')}, failed_tiles "
                               f"{t.get('failed_tiles')}, miscompared_elements {t.get('miscompared_elements')}, "
                               f"units_failed {t.get('units_failed')}, reason {t.get('reason')!r}, notes {t.get('notes')}")
            if not clean:
                stats["false_positives"] += 1
            if tid in cases:
                n_it = expected_iterations(cases[tid], profile)
                if fills.get(profile):
                    # A profile that fills its budget repeats rounds: at least the battery's count.
                    fails.check(t.get("iterations", 0) >= n_it,
                                f"{where}: {tid} ran {t.get('iterations')} iterations, the battery gives {n_it}")
                    stats["extra_rounds"] += t.get("iterations", 0) > n_it
                else:
                    fails.check(t.get("iterations") == t.get("iterations_planned") == n_it,
                                f"{where}: {tid} ran {t.get('iterations')} of {t.get('iterations_planned')} "
                                f"iterations, the battery gives {n_it}")
            tile_total += (t.get("tiles") or 0) * (t.get("iterations") or 0)
        fails.check(all(u.get("result") == "pass" and u.get("failed_tiles") == 0 and u.get("tiles", 0) > 0 for u in units),
                    f"{where}: units {units}")
        fails.check(sum(u.get("tiles", 0) for u in units) == tile_total,
                    f"{where}: units computed {sum(u.get('tiles', 0) for u in units)} tiles, tests account for {tile_total}")
        return dt

    # 1. The boot profile on every CPU selection, under several schedule seeds (and once with a drawn seed).
    for n, cpuset in enumerate(CPUSETS):
        t0 = time.time()
        seeds = [BOOT_SEEDS[n]] if sanitized else [BOOT_SEEDS[n], BOOT_SEEDS[(n + 1) % len(BOOT_SEEDS)]]
        for seed in seeds:
            clean_run("boot", cpuset, seed)
        print(f"  boot --cpuset {cpuset or '(all)'}: {len(seeds)} seeds, {time.time() - t0:.1f} s; "
              f"{stats['case_runs']} case-runs so far", flush=True)
    clean_run("boot", None, None)

    # 2. Cases outside the boot profile (bigger shapes), alone, on both CPUs. The schedule rotates by one worker
    # per iteration (tile t goes to worker (t + rotation + iteration) mod W), so with two workers and at least two
    # iterations every tile is computed by each CPU: the single-CPU selections add the one-worker path, which the
    # boot cases above run on every selection.
    # Alone, a GPU-only case leaves nothing to run on CPUs (exit 2, as it must): those are not enabled alone.
    others = [c for c, v in cases.items()
              if "boot" not in v.get("iterations", {}) and not common.gpu_only_case(c)]
    fails.check(len(others) > 0, "the battery has no case outside the boot profile")
    # Under a sanitizer the training-step replays of the small model (seconds per replay, tens of seconds per
    # run in the release build) would add many minutes: their code is the tiny replays' code, which runs here
    # and in test_replay.py under the sanitizer too.
    big = [c for c in others if cases[c]["family"].startswith("train_step_") and cases[c]["shape"].get("preset", 0) > 0]
    if sanitized:
        others = [c for c in others if c not in big]
        # A sanitizer run needs coverage, not volume: the bigger shapes run the same code as the boot cases with
        # larger loop bounds (no index here comes near 2^31), and the release suite runs every one of them. Here
        # each family's least costly case outside the boot profile runs, so that every family's code for shapes
        # the boot profile lacks runs instrumented once.
        def cost(cid):
            return common.shape_work(cases[cid]) * expected_iterations(cases[cid], "boot")
        cheapest = {}
        for cid in others:
            fam = cases[cid]["family"]
            if fam not in cheapest or cost(cid) < cost(cheapest[fam]):
                cheapest[fam] = cid
        print(f"  sanitizer build: {len(cheapest)} of {len(others)} cases outside the boot profile, the least costly "
              f"of each family ({', '.join(sorted(cheapest.values()))})", flush=True)
        others = sorted(cheapest.values())
    # A case of one iteration and one tile runs once on each CPU instead.
    t0 = time.time()
    if sanitized:  # the same cases in three screens instead of one or two each: the sanitizer's start-up is slow
        several = [c for c in others if expected_iterations(cases[c], "boot") >= 2]
        once = [c for c in others if c not in several]
        for j, (cpuset, ids) in enumerate((("0-1", several), ("0", once), ("1", once))):
            if ids:
                clean_run("boot", cpuset, 1000 + j, enable_any=ids, budget="1200s")
    # A training-step replay's tiles are replicas of one replay: with two of them or more, one iteration on both CPUs
    # gives each CPU a whole replay (half the work of a run on each CPU alone).
    def both_cpus_once(cid):
        replicas = cases[cid]["shape"].get("replicas", 0) if cases[cid]["family"].startswith("train_step_") else 0
        return expected_iterations(cases[cid], "boot") >= 2 or replicas >= 2
    for i, cid in enumerate(others if not sanitized else []):
        selections = ["0-1"] if both_cpus_once(cid) else ["0", "1"]
        for j, cpuset in enumerate(selections):
            clean_run("boot", cpuset, 1000 + 10 * i + j, enable_any=[cid], budget="600s")
    print(f"  {len(others)} non-boot cases, every tile on each CPU: {time.time() - t0:.1f} s", flush=True)

    # 3. The standard profile once, on both CPUs: it fills its budget with rounds, every case clean after each.
    # The cases outside the boot profile ran alone above with the same iteration count (the standard profile's)
    # and are left out; under a sanitizer one boot case of each family stays (the rounds' logic is the same
    # for every case). The budget leaves room for a first round and a few more.
    t0 = time.time()
    boot_members = [c for c, v in cases.items() if "boot" in v.get("iterations", {})]
    left_out = [c for c, v in cases.items() if "standard" in v.get("iterations", {}) and c not in boot_members]
    if sanitized:  # the three least costly boot cases, as the boot runs measured them: the rounds' logic is the
        # same for every case (the first three of the battery, two GEMMs among them, took about 30 s a round)
        measured = [c for c in boot_members if not common.gpu_only_case(c)
                    and c in per_iteration and "standard" in cases[c]["iterations"]]
        kept = sorted(measured, key=lambda c: (per_iteration[c], c))[:3]
        fails.check(len(kept) == 3, f"standard profile: fewer than three measured boot cases ({kept})")
        left_out += [c for c in boot_members if c not in kept]
    # The budget must hold a first round and more on any machine, however slow or loaded: it is sized from what the
    # boot runs above measured of these very cases (seconds per iteration times the standard profile's iterations,
    # the first iteration's set-up counted in each): two rounds and a margin, and at least 15 s (10 s under a
    # sanitizer, whose three cases are the least costly: a round of them took under a second there).
    members = [c for c, v in cases.items() if "standard" in v.get("iterations", {}) and c not in left_out
               and not common.gpu_only_case(c)]
    round_s = sum(per_iteration.get(c, 0.0) * expected_iterations(cases[c], "standard") for c in members)
    fails.check(all(c in per_iteration for c in members),
                f"standard profile: no boot measurement of {[c for c in members if c not in per_iteration]}")
    budget_s = max(10 if sanitized else 15, int(2 * round_s + 5))
    print(f"  standard profile: {len(members)} cases, a round measured at {round_s:.1f} s: budget {budget_s} s",
          flush=True)
    clean_run("standard", "0-1", 4242, budget=f"{budget_s}s", disable=left_out)
    fails.check(stats["extra_rounds"] > 0, "the standard profile did not fill its budget with more rounds")
    print(f"  standard profile: {time.time() - t0:.1f} s", flush=True)

    print(f"clean case-runs: {stats['case_runs']}, false positives: {stats['false_positives']}  "
          f"({stats['invocations']} invocations, {time.time() - t_start:.1f} s)", flush=True)
    fails.check(stats["case_runs"] >= MIN_CASE_RUNS, f"only {stats['case_runs']} case-runs (need {MIN_CASE_RUNS})")
    fails.check(stats["false_positives"] == 0, f"{stats['false_positives']} false positives")
    fails.finish()


if __name__ == "__main__":
    main()

// The result objects of a run. Every output (text, JSON) is written from these and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/host/gpu_telemetry.h"
#include "src/host/host_state.h"
#include "src/core/device_info.h"
#include "src/core/inject.h"
#include "src/core/weakened.h"
#include "src/core/signature.h"

namespace sdc {

// crash: the unit's work killed the screen (a fatal signal in its worker); a failure like fail.
enum class Verdict { pass, fail, error, skip, crash };
const char* verdict_name(Verdict v);
struct TestResult;
// A test's result as every output names it: its verdict's name, or "not_applicable" for a skip of a case this
// backend or device cannot run (counted apart: it is neither a skip of something that should have run nor a pass).
const char* result_name(const TestResult& t);
// The results in the order the reports count them (the JSON summary, the Prometheus result label, the text summary).
constexpr const char* RESULT_NAMES[] = {"pass", "fail", "error", "skip", "crash", "not_applicable"};

// Exit codes (docs/design.md, "Verdicts and exit codes"): the fleet reads them.
enum ExitCode : int {
  EXIT_PASS = 0,
  EXIT_FAIL = 1,
  EXIT_INCONCLUSIVE = 2,
  EXIT_SLOW = 3,  // with --fail-slow only: every test passed, but a unit is slow
  EXIT_USAGE = 64,
  EXIT_CONFIG = 78
};

struct Miscompare {
  int iteration = 0;
  uint64_t tile = 0;
  int unit = -1;  // logical CPU, or SM of the GPU the test ran on
  uint64_t element = 0;
  std::string element_name;
  uint32_t expected = 0, actual = 0;
  uint64_t ulps = 0;
  // A binary64 family's word (Family::value_words 2): the whole value it is half of, and its ulps.
  bool binary64 = false;
  uint64_t expected64 = 0, actual64 = 0, ulps64 = 0;
  // An integer family's word (Family::int32_outputs): expected and actual are int32 values, read as signed
  // integers by the reports, and ulps is |actual - expected| (an integer's last place is 1).
  bool int32 = false;
  // On a GPU whose kernel documents its thread-to-element map (DeviceProblem::thread_of): the warp of the
  // tile's block and the lane that computed the element; -1 otherwise.
  int warp = -1, lane = -1;
};

// actual - expected, both words read as int32 (a Miscompare with int32).
inline int64_t int32_difference(uint32_t expected, uint32_t actual) {
  return static_cast<int64_t>(static_cast<int32_t>(actual)) - static_cast<int32_t>(expected);
}

// One of the paper's metrics as a failing unit of a training-step replay computed it (ReplayMetricSlot,
// src/core/family.h): per unit, from its first failing tile, every metric that differs from the reference's
// and level 3's final distance and spike flag always; never capped.
struct ReplayMetric {
  int unit = -1;  // logical CPU, or SM (-1 on a GPU: the replay's kernels span it)
  int iteration = 0;
  uint64_t tile = 0;
  int level = 0;  // 2 or 3
  std::string site, metric;
  float value = 0, reference = 0;  // the unit's, and what a healthy unit computes
};

// The failure mode of a failing unit's training-step trajectory (ReplayProblem::failure_mode), from the
// tile its replay metrics come from.
struct ReplayFailureMode {
  int unit = -1;  // as ReplayMetric's
  int iteration = 0;
  uint64_t tile = 0;
  std::string mode;  // "spike_and_recover", "spike_and_degrade", "silent_degradation", "gradual_drift", "none"
};

// What one unit did of one test: its tiles and the time its worker spent computing them (CPU backend).
struct UnitSpeed {
  int unit = -1;  // logical CPU
  uint64_t tiles = 0;
  double busy_s = 0;
};

// The retest of a unit that failed a test (--retest-on-failure N; src/core/scheduler.h): the tiles it got
// wrong, computed again N times by it with the case's own inputs, N times by each sibling (the other
// logical CPUs of its core, or another core of its package), and N times with fresh seeds by it and by a
// unit that did not fail, compared with each other. A test's retests come from its first failing round.
// On a GPU (device >= 0) the unit is an SM: every retest run recomputes the whole case, the SM's failing
// tiles are those it computed in that run, its sibling is the rest of the GPU (unit -1, "other SMs of the
// GPU"), and fresh seeds are compared with the host CPU's computation of its tiles (fresh_reference -1,
// fresh_on_host).
struct SiblingRetest {
  int unit = -1;
  std::string relation;  // "same core", "same package"; on a GPU "other SMs of the GPU"
  int runs = 0, failed = 0;
};
struct UnitRetest {
  int device = -1;     // the GPU (its CUDA index, cuda:N) whose SM `unit` is; -1: a CPU
  int unit = -1;       // logical CPU, or SM
  uint64_t tiles = 0;  // the failing tiles it computed again, each run (at most RETEST_TILES)
  int same_seed_runs = 0, same_seed_failed = 0;
  int same_bits = 0;  // same-seed runs whose every tile came out wrong exactly as in the failure
  int fresh_seed_runs = 0, fresh_seed_failed = 0;
  int fresh_reference = -1;    // the unit whose results the fresh seeds were compared with; -1: none (one CPU)
  bool fresh_on_host = false;  // a GPU's: compared with the host CPU's computation of the same tiles
  std::vector<SiblingRetest> siblings;
  bool complete = true;  // false: a stop, the time budget or the watchdog cut it short
  // persistent: failed every same-seed run with the same bits; intermittent: failed some (rate);
  // not reproduced: failed none.
  const char* classification() const;
  double rate() const { return same_seed_runs ? static_cast<double>(same_seed_failed) / same_seed_runs : 0; }
  // 1: fails with its own inputs and never with fresh seeds; 0: fails with fresh seeds too; -1: unknown.
  int input_dependent() const;
};
constexpr uint64_t RETEST_TILES = 8;
// The data seed of a retest's k-th fresh run (k from 0), the same on every backend.
inline uint64_t fresh_retest_seed(uint64_t data_seed, int k) {
  return mix64(data_seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(k + 1)));
}

struct TestResult {
  std::string id, family, mode, distribution;
  std::string device = "cpu";  // "cpu" or "cuda:N"
  int device_index = -1;       // into RunResult::devices, -1 for the CPU backend
  Verdict verdict = Verdict::skip;
  std::string reason;           // why error or skip
  bool not_applicable = false;  // skip: the device lacks what the case needs (does not make the run inconclusive)
  int iterations_planned = 0;
  int iterations_done = 0;
  uint64_t tiles = 0;             // per iteration
  bool tiles_without_sm = false;  // GPU: its kernels do not say which SM computed a tile (a library's, a replay's)
  TileGrid tile_grid;             // where the tiles lie over the output (rows 0: the test did not run)
  double duration_s = 0;
  // Wall-clock (Unix time) start and end of each round it ran, for the telemetry sampled meanwhile; not reported.
  std::vector<std::pair<double, double>> ran_unix;
  double gflops = 0;
  double time_to_fail_s = -1;  // since the run started; -1: did not fail
  uint64_t failed_tiles = 0;   // summed over iterations
  uint64_t miscompared_elements = 0;
  std::vector<int> units_failed;                        // logical CPUs, or SMs of the test's GPU
  std::vector<Miscompare> miscompares;                  // the first ones, with full localization
  std::vector<ReplayMetric> replay_metrics;             // a replay family's (Family::replay): all, by unit
  std::vector<ReplayFailureMode> replay_failure_modes;  // a replay family's, per failing unit with a trajectory
  // Per unit, in unit order, accumulated over every differing element (not only the listed ones); a tile
  // judged by digests alone (no element values: node consensus, a recorded golden) adds nothing.
  std::vector<UnitSignature> signatures;
  std::vector<UnitSpeed> unit_speed;  // per unit that computed tiles, over every iteration (CPU backend)
  std::vector<UnitRetest> retests;    // --retest-on-failure: per failing unit, in unit order
  std::vector<std::string> notes;
  // What judged it (docs/design.md, "Modes"): "exact", "exact-integer", "recorded" (an accepted recording), or
  // "consensus" (repeats and the node's GPUs; also a recorded case whose architecture and engine have no
  // accepted recording). Empty when nothing ran.
  std::string judged_by;
  std::string library, algorithm;  // the engine that computed it (GPU tests)
  // run --digests: every tile's digest in the last complete iteration, in tile order, so that two reports can be
  // compared tile by tile (sdcscreen diff) even when both fail. Empty without --digests.
  std::vector<uint64_t> tile_digests;
  int digest_iteration = -1;
};

// A unit that computes tiles: a logical CPU, or one SM of one GPU.
struct UnitResult {
  cpu::LogicalCpu cpu;  // kind cpu
  int device = -1;      // kind sm: index into RunResult::devices
  int sm = -1;
  uint64_t tiles = 0;
  uint64_t failed_tiles = 0;
  int crash_signal = 0;  // its work killed the screen with this signal (crash supervision)
  bool hung = false;     // the watchdog gave up on it: it never finished its share of an iteration
  bool is_sm() const { return device >= 0; }
};

// The throughput probe's measurements (src/core/probe.h): one fixed work item, `reps` times per round, on
// every unit at once; seconds[round][unit] is what a unit's reps took (a CPU: its worker thread's CPU time,
// so that other processes on the node do not make it look slow; a GPU: wall time of its stream).
struct ProbeRun {
  std::string work;                       // what one work item is
  uint64_t reps = 0;                      // work items per unit and round, calibrated to the target time
  double target_s = 0;                    // the time a round was sized to take on the median unit
  std::vector<std::string> units;         // "cpu 3", "gpu 1"
  std::vector<std::vector<double>> seconds;  // [round][unit]
  std::string not_run;                    // why no probe ran (one unit, an interruption, the watchdog...); "" when it ran
};

// A unit's throughput relative to its peers on the node, from the probe alone (assess_throughput).
struct UnitThroughput {
  std::string unit;       // "cpu 3", "gpu 1" (unit_text, src/core/unit_name.h)
  double rate = 0;        // work items per second, median over the rounds
  double relative = 0;    // median over the rounds of its rate / the median rate of its peers in that round
  double low = 0, high = 0;  // the least and greatest of those per-round figures (the spread)
  int rounds = 0;         // rounds measured
  int below_floor = 0;    // rounds in which it was below the floor
  bool failed = false;    // it failed (miscompare, crash, hang): not judged for speed
  bool slow = false;      // not failed, relative below the floor, and below it in at least 2/3 of the rounds
};
// The median of v (the mean of the middle two for an even count); v not empty.
double median(std::vector<double> v);
// The fewest probe rounds from which a unit is judged slow.
constexpr int PROBE_MIN_ROUNDS = 5;

struct RunResult {
  std::string backend = "cpu";
  std::string backend_reason;  // why --backend auto chose what it chose
  std::vector<DeviceInfo> devices;
  std::string profile;
  uint64_t seed = 0;
  double time_budget_s = 0;
  std::string patterns_dir;
  std::vector<std::string> argv;
  std::string program;  // the name the tool was invoked by (the reproduce and retest lines begin with it)
  std::string reproduce;
  std::vector<std::string> reproduce_left_out;  // the options of outputs and state the reproduce line leaves out
  double start_unix = 0, end_unix = 0;
  std::vector<TestResult> tests;
  std::vector<UnitResult> units;
  std::vector<Injection> injections;
  int interrupted_by = 0;                  // signal number, 0 when not interrupted
  bool deadline_reached = false;           // the deadline stopped the run before it finished (never a pass)
  bool watchdog_fired = false;             // a job overran its deadline: the run ended early
  bool workers_abandoned = false;          // some worker may still be running: end the process, do not unwind
  std::vector<std::string> errors;         // run-level problems (set-up failures)
  // What weakened this screen's verdict (weakened.h): test switches in the environment, pattern data other
  // than the build's. Said in every output; such a screen never counts toward resuming a node.
  std::vector<Weakening> weakened_by;
  double throughput_floor = 0.85;          // a unit below this fraction of its peers' median throughput is slow
  bool fail_slow = false;                  // --fail-slow: a slow unit makes a passing run exit 3
  ProbeRun probe;                          // the throughput probe's measurements
  std::vector<UnitThroughput> throughput;  // every unit the probe measured (assess_throughput)
  int retest = 0;                          // --retest-on-failure N in effect
  // The host's identity and its telemetry before and after the run (src/host): an uncorrected error during
  // the run (EDAC, machine check) fails the run like a miscompare; corrected errors and throttling are said.
  host::HostTelemetry host;
  // Each GPU's identity and telemetry through NVML (src/host/nvml.h): a hardware failure it reports (an
  // uncorrected ECC error, a hardware Xid) fails the run (exit 1); an application-fault Xid makes it
  // inconclusive (exit 2).
  host::NvmlTelemetry nvml;
  double max_temperature_c = 0;  // --max-temperature (0: none)
  int exit_code() const;
  bool any_slow() const;
  // A drill that fired but changed no output (an input flip the computation absorbed): no test of its case
  // failed, so it proves nothing about detection.
  bool masked(const Injection& i) const;
  // Adds a run-level error for every masked drill (the run is then inconclusive unless something failed).
  void flag_masked_injections();
  // Adds a run-level error when every selected test is not applicable here (a GPU-only battery on a CPU node):
  // nothing ran, so the run is inconclusive (exit_code), and every output says why in one line.
  void flag_nothing_applicable();
  const char* exit_word() const;  // verdict_of_exit_code(exit_code())
};

// The verdict an exit code reads as, in the report's exit.verdict and the text's last line: 0 pass, 1 fail, 2
// error, 3 slow, 129 to 255 interrupted; "" for a code no screen ends with (the report reader refuses it).
const char* verdict_of_exit_code(int64_t code);

// Slow units, from the probe (r.probe): per round, each unit's rate against the median rate of its peers
// (the node's other measured units); a unit's relative throughput is the median of that over the rounds.
// It is slow when it did not fail, was measured in at least PROBE_MIN_ROUNDS rounds, its median is below
// r.throughput_floor and at least two thirds of its rounds were: one noisy round cannot flag a unit, and a
// unit that failed is reported as failed, not also as slow. Slowness never changes the exit code by itself
// (--fail-slow makes it 3 when everything passed).
void assess_throughput(RunResult& r);

}  // namespace sdc

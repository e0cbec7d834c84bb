// The runner: selects cases, runs them on the CPU workers for the time budget, compares every tile's
// digest with its golden digest, localizes miscompares, and fills a RunResult.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "patterns.h"
#include "result.h"

namespace sdc {

// Set by the signal handler; the runner stops at the next tile when it is non-zero.
extern std::atomic<int> g_stop_signal;

struct Selection {
  std::vector<const Case*> cases;
  std::vector<int> iterations;  // per case
};

// Selects the cases of a profile, narrowed by --enable and --disable globs (matched against case ids
// and family ids). Returns "" or what is wrong (an unknown profile, a glob that matches nothing, an
// empty selection).
std::string select_cases(const Battery& battery, const std::string& profile, const std::vector<std::string>& enable,
                         const std::vector<std::string>& disable, Selection& out);

struct RunOptions {
  uint64_t seed = 0;
  double time_budget_s = 0;
  std::vector<int> cpus;
  std::vector<Injection> injections;
  uint64_t max_memory_bytes = 0;  // 0: no limit
  bool fill_budget = false;       // repeat rounds of every case until the time budget ends
  // `record`: recorded cases are judged by their repeats and the node's GPUs only, never by an accepted
  // recording (the run produces the digests a recording keeps).
  bool recording = false;
  std::function<void(const TestResult&, size_t index, size_t count)> on_test_done;  // after round 0
  std::function<void(const Case&, size_t index, size_t count, int iteration, int iterations)> on_progress;
};

void run_screen(const PatternSet& patterns, const Selection& sel, const RunOptions& opt, RunResult& result);

// Computes the golden digests of the given cases on the CPU workers. Every tile is computed twice, on
// two different workers when there are two, and must agree; a disagreement throws std::runtime_error
// naming the case and tile (the machine generating goldens is itself suspect).
std::map<std::string, GoldenCase> compute_goldens(const std::vector<const Case*>& cases, const std::vector<int>& cpus,
                                                  const std::function<void(const Case&)>& on_case);

// Lists the elements of a failing tile that differ from the expected values (recomputed on this CPU
// into `expected` unless it already holds them, and checked against the golden digest: a note says
// when even the recomputation disagrees). At most a few elements per tile and per test are listed;
// all are counted.
void analyse_tile(const Problem& problem, const std::vector<std::vector<float>>& inputs, uint64_t golden_digest,
                  uint64_t tile, const float* actual, int iteration, int unit, Workspace& ws,
                  std::vector<float>& expected, TestResult& r);

// Float helpers for reports.
uint64_t ulp_distance(uint32_t a, uint32_t b);

}  // namespace sdc

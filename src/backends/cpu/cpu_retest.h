// The retest of a CPU that failed a test (--retest-on-failure; src/core/result.h UnitRetest): its failing
// tiles computed again by it with the case's own inputs, by its neighbours, and with fresh seeds against a
// CPU that passed. Internal to the CPU backend (cpu_executor.cpp calls it after a failing round).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "src/core/result.h"
#include "src/backends/cpu/cpu_case.h"

namespace sdc::cpu {

// What a retest uses of the executor and its prepared case.
struct RetestEnv {
  WorkerPool& pool;
  std::vector<Workspace>& ws;
  const StopToken& stop;
  Clock::time_point deadline;           // the run's time budget: a retest past it is cut short
  uint64_t max_memory;                  // --max-memory (0: none): fresh seeds need a second copy of the case
  CaseState& state;                     // the prepared case, its own inputs
  const std::vector<uint64_t>& golden;  // its golden tile digests
  bool& stuck;                          // set when a job did not finish: the pool takes no more work
  // The faults of case c that fire when logical CPU `cpu` computes it in a retest, resolved against s
  // (fresh: on a fresh seed's inputs).
  std::function<void(const Case& c, CaseState& s, std::vector<ActiveFault>& out, int cpu, bool fresh)> activate;
};

// Retests worker w, which computed the failing `tiles` of case c wrong (`wrong`: each tile's first wrong
// digest), n times each way, into u; false when a stop, the budget or the watchdog cut it short.
// units_failed: the test's failing CPUs (never a reference for the fresh seeds).
bool retest_unit(RetestEnv& env, const Case& c, const std::vector<int>& units_failed, uint32_t w,
                 const std::vector<uint64_t>& tiles, const std::map<uint64_t, uint64_t>& wrong, int n, UnitRetest& u);

}  // namespace sdc::cpu

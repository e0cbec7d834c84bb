// The CPU backend's executor: the selected logical CPUs as one device, one pinned worker each. Every
// iteration computes every tile of a case once, tile t on worker (t + rotation) mod W, digests it and
// compares it with the case's golden digest; a failing tile's elements are listed (src/core/miscompare.h).
// The scheduler (src/core/scheduler.h) owns rounds, the time budget and verdicts.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../core/patterns.h"
#include "../../core/scheduler.h"

namespace sdc::cpu {

// Runs the selection on the CPUs of opt.cpus and fills result: one test per case, one unit per CPU.
// Throws std::runtime_error when a worker cannot be pinned.
void run_screen(const PatternSet& patterns, const Selection& sel, const RunOptions& opt, RunResult& result);

// Computes the golden digests of the given cases on the CPU workers. Every tile is computed twice, on
// two different workers when there are two, and must agree; a disagreement throws std::runtime_error
// naming the case and tile (the machine generating goldens is itself suspect), and so does a stop.
std::map<std::string, GoldenCase> compute_goldens(const std::vector<const Case*>& cases, const std::vector<int>& cpus,
                                                  const StopToken& stop,
                                                  const std::function<void(const Case&)>& on_case);

}  // namespace sdc::cpu

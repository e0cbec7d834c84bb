// The CPU backend's executor: the selected logical CPUs as one device, one pinned worker each. Every
// iteration computes every tile of a case once, tile t on worker (t + rotation) mod W, digests it and
// compares it with the case's golden digest; a failing tile's elements are listed (src/core/miscompare.h).
// The scheduler (src/core/scheduler.h) owns rounds, the time budget and verdicts.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/core/patterns.h"
#include "src/core/scheduler.h"

namespace sdc::cpu {

// The CPU backend (run_screen, src/core/scheduler.h): the CPUs of RunOptions::cpus as one executor, one test
// per case, one unit per CPU. Making its executor throws std::runtime_error when a worker cannot be pinned.
// `patterns` must outlive the backend.
std::unique_ptr<Backend> make_backend(const PatternSet& patterns);

// Computes the golden digests of the given cases on the CPU workers. Every tile is computed twice, on
// two different workers when there are two, and must agree; a disagreement throws std::runtime_error
// naming the case and tile (the machine generating goldens is itself suspect), and so does a stop.
std::map<std::string, GoldenCase> compute_goldens(const std::vector<const Case*>& cases, const std::vector<int>& cpus,
                                                  const StopToken& stop,
                                                  const std::function<void(const Case&)>& on_case);

}  // namespace sdc::cpu

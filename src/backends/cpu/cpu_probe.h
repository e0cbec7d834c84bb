// The CPU's work item for the throughput probe (src/core/probe.h): one 64 x 64 output tile of the exact
// fp32 GEMM with k = 256 (1 Mi fused multiply-adds on the vectorized path most of the battery runs), from
// inputs generated once and read by every worker, each worker writing its own output. A unit's time is
// its worker thread's CPU time: another process sharing the CPU does not make it look slow, a core that
// computes slowly (throttled, degraded) does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/family.h"

namespace sdc::cpu {

class ProbeWork {
 public:
  explicit ProbeWork(size_t workers);
  static std::string description();
  // Computes the work item `reps` times on worker w's own buffers; returns the CPU seconds it took.
  double run(size_t w, uint64_t reps);

 private:
  std::unique_ptr<Problem> problem_;
  std::vector<std::vector<float>> inputs_;
  std::vector<const float*> in_;
  std::vector<std::vector<float>> out_;  // per worker
  std::vector<Workspace> ws_;            // per worker
};

// The drills for the probe, compiled in and off unless asked, like the other drills:
// SDCSCREEN_DRILL_SLOW_CPU=N: logical CPU N does ten times the work (ten times slower; -1 when not asked);
// SDCSCREEN_DRILL_SLOW_NODE=K (2 to 1000): every CPU does K times the work, a node K times slower than this one.
int slow_drill_cpu();
uint64_t slow_drill_node();

}  // namespace sdc::cpu

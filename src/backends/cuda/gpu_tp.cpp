// The GPU executor's part in a tensor-parallel group (tp_exchange.h; docs/gpu.md, "Tensor parallelism across
// GPUs"): which group a split case puts this GPU in, and the start of each iteration together with its peers.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "src/backends/cuda/gpu_executor.h"

namespace sdc::cuda {

void GpuExecutor::link_group(const Case& c, TestResult& r) {
  tp_.reset();
  tp_started_ = 0;
  const auto ranks = static_cast<size_t>(dc_->device->tp_ranks());
  if (ranks <= 1) return;
  const size_t gpus = sh_.gpu_names.size(), group = g_.slot / ranks;
  std::string note;
  if ((group + 1) * ranks > gpus) {
    note = fmt::format("tensor parallelism: this GPU is in no group of {} (groups are consecutive GPUs of the run's "
                       "{}, from the first): it computes every rank's partial itself",
                       ranks, gpus);
  } else {
    const auto first = sh_.gpu_names.begin() + static_cast<std::ptrdiff_t>(group * ranks);
    const std::vector<std::string> names(first, first + static_cast<std::ptrdiff_t>(ranks));
    tp_ = sh_.tp.get(c.id, static_cast<int>(group), names);
    tp_link_.exchange = tp_.get();
    tp_link_.rank = static_cast<int>(g_.slot % ranks);
    tp_link_.seq = 0;
    tp_cases_.insert(c.id);
    note = fmt::format("tensor parallelism: rank {} of the group {}: at level 1 this GPU computes its rank's partials "
                       "and receives its peers' through host memory (each GPU syncs its own before it sends it, so a "
                       "fault is the GPU's that made it); at level 2 it computes every rank, as a free-running group "
                       "would carry one GPU's fault into its peers; run in the first round only",
                       tp_link_.rank, fmt::join(names, ", "));
  }
  if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
}

bool GpuExecutor::join_group(int it, TestResult& r) {
  // Peers reach the case when their earlier cases are done: no watchdog applies to that wait, only the run's stop,
  // a peer that ends the case (or its run) first, and a bound against a bug past the time budget.
  const auto limit = std::max(sh_.run->deadline, Clock::now()) + std::chrono::minutes(10);
  std::string why;
  if (tp_->join(tp_link_.rank, tp_started_, limit, [this] { return sh_.run->stopping(); }, why)) {
    ++tp_started_;
    return true;
  }
  r.iterations_planned = r.iterations_done;  // not owed to the time budget: the settled note would say so
  if (r.iterations_done == 0)
    r.reason = "not run: " + why;
  else
    r.notes.push_back(fmt::format("iteration {} not run: {}", it, why));
  return false;
}

}  // namespace sdc::cuda

// The GPU executor (src/core/scheduler.h): one per GPU, made by the GPU backend (gpu_backend.cpp) and run by
// the scheduler in a host thread of its own with one stream. Its iterations and probe are gpu_executor.cpp's,
// its retest gpu_retest.cpp's, the comparison of an iteration with its reference cuda_compare.cpp's. Internal
// to the CUDA backend.
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/core/unit_name.h"
#include "src/backends/cuda/gpu_state.h"

namespace sdc::cuda {

// Allocates a case's buffers and generates its inputs; false when the watchdog gave up.
// fresh_seed: a retest's copy of the case with another data seed (no golden; its reference is not checked).
bool prepare_case(const Shared& sh, Gpu& g, const Case& c, DeviceCase& dc, uint64_t max_memory, TestResult& r,
                  bool fresh_seed = false);

// The faults of iteration `it`, or (retest) of a retest run with the case's own inputs or fresh ones: an output
// drill that repeats (persist=) fires as fires_now says; every other drill at its iteration only.
IterationFaults faults_for(Shared& sh, const Gpu& g, const Case& c, const DeviceCase& dc, int it, bool retest = false,
                           bool fresh = false);

// Enqueues one iteration and waits for it; false when the watchdog gave up.
bool run_device_iteration(Gpu& g, DeviceCase& dc, const IterationFaults& f, Clock::time_point deadline);

class GpuExecutor final : public Executor {
 public:
  GpuExecutor(Shared& sh, const DeviceInfo& info, size_t slot, int sm_ids) : sh_(sh), g_(info, slot, 0, sm_ids) {}
  Gpu& gpu() { return g_; }

  std::string device() const override { return g_.info.label(); }
  int device_index() const override { return static_cast<int>(g_.slot); }
  // One unit per SM id the GPU can report (%nsmid, usually the SM count).
  std::vector<UnitResult> units() const override;
  void attach(RunContext& ctx, size_t unit_base) override {
    sh_.run = &ctx;
    g_.unit_base = unit_base;
  }
  void open() override;
  std::string unusable() const override {
    return g_.dead.empty() ? "" : fmt::format("{} is unusable: {}", unit_text(UnitName::of_gpu(g_.info.index)), g_.dead);
  }
  bool stuck() const override { return g_.stuck; }
  SkipReasons skip_reasons() const override {
    return {"not run: the watchdog ended this GPU's run", "interrupted before it ran",
            "time budget ran out before it ran"};
  }
  bool repeats_failed() const override { return false; }

  bool applicable(const Case& c, TestResult& r) const override;
  // One iteration covers the GPU (every tile on the SMs it chose); consensus compares runs with each other:
  // at least two, until a first run is kept.
  std::optional<PreparedCase> prepare(const Case& c, TestResult& r) override;

  bool run_iteration(const Case& c, int it, TestResult& r) override;
  void compare(const Case&, int it, TestResult& r) override {
    compare_iteration(sh_, g_, *dc_, faults_, it, ref_, expected_cache_, ws_, r);
  }
  // --retest-on-failure N on a GPU (gpu_retest.cpp).
  void retest(const Case& c, TestResult& r) override;
  void release_case() override;
  bool repeats(const Case& c) const override { return !tp_cases_.count(c.id); }
  void close() override { sh_.tp.close(g_.slot); }
  // A lost context (a kernel fault, an uncorrectable ECC error, a contained error) ends this GPU's run and is
  // this GPU's failure: what the unit computed made the device unusable, as a crash does a CPU's.
  Verdict error_verdict(const std::exception& e) const override;
  std::string error_reason(const std::exception& e) override;
  // A pass needs one complete iteration; a consensus test needs a second run (or another GPU of the
  // node that agrees: apply_node_consensus).
  bool settle(TestResult& r) const override;
  // The throughput probe (src/core/probe.h) on a GPU: the GPU as one unit, its work item one exact fp32
  // GEMM over the whole device (gemm_f32, 2048 x 2048 x 2048; 128 cubed on the emulated device), timed by
  // this host thread from the first launch to the stream's event (the emulated device: by its stream
  // thread's CPU time, DeviceRuntime::stream_cpu_seconds). Launches are paced as the replay's are,
  // so that a hung kernel cannot block this thread in a full launch queue past the deadline.
  std::vector<std::string> probe_units() const override;
  std::string probe_work() const override;
  std::string probe(uint64_t reps, Clock::time_point deadline, std::vector<double>& seconds) override;
  // A kernel may still run: its stream, event, flag and device stay.
  void abandon() override;

 private:
  // A case split over tensor-parallel ranks: this GPU's group, when the node has one for it (else it computes
  // every rank), and its note; run_iteration's part (every rank starts each iteration together).
  void link_group(const Case& c, TestResult& r);
  std::string error_text(const std::exception& e);  // error_reason's text
  bool join_group(int it, TestResult& r);
  // One retest run of dc (the case's own buffers, or a fresh seed's) with the faults a retest fires; false
  // when the watchdog gave up (the GPU is then stuck).
  bool retest_run(const Case& c, DeviceCase& dc, bool fresh);

  Shared& sh_;
  Gpu g_;
  // The prepared case.
  std::unique_ptr<DeviceCase> dc_;
  Reference ref_;
  IterationFaults faults_;
  std::map<uint64_t, std::vector<float>> expected_cache_;
  Workspace ws_;
  double work_ = 0;
  std::unique_ptr<DeviceCase> probe_case_;  // the throughput probe's case, prepared when it first runs
  // The prepared case's tensor-parallel group (null: none), the iterations it started, the link its computations
  // exchange through (with this GPU's rank); the cases linked to a group (run in the first round only).
  std::shared_ptr<TpExchange> tp_;
  uint64_t tp_started_ = 0;
  TpLink tp_link_;
  std::set<std::string> tp_cases_;
  std::string case_id_, not_prepared_;  // the prepared case, and why it could not be prepared ("" when it was)
};

}  // namespace sdc::cuda

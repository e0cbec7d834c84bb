// The GPU backend (cuda_backend.h): its factory opens every selected GPU and makes one GPU executor for each
// (gpu_executor.h); its finishing step marks the SMs of a GPU the watchdog gave up on as hung and judges the
// consensus tests across the node's GPUs.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/gpu_executor.h"

namespace sdc::cuda {

std::unique_ptr<DeviceRuntime> open_runtime(const DeviceInfo& gpu) {
  return gpu.emulated ? open_emulated_runtime(gpu) : open_cuda_runtime(gpu);
}

namespace {

class GpuBackend final : public Backend {
 public:
  GpuBackend(const PatternSet& patterns, const std::vector<DeviceInfo>& gpus, std::vector<FirstRun>* first_runs)
      : sh_{patterns, nullptr, {}, {}}, gpus_(gpus), first_runs_(first_runs) {}

  // A kernel the watchdog gave up on may still run (a real hang, which nothing releases): no executor is
  // destroyed, on any GPU. Their destructors would free device memory, and cudaFree waits for the device,
  // which may be the stuck one (this thread's current device may be any of them). The caller writes its
  // outputs and ends the process without unwinding (workers_abandoned), skipping the runtime's teardown too.
  ~GpuBackend() override {
    if (abandoned_)
      for (auto& ex : run_) (void)ex.release();
  }

  // A GPU on which even the query of its SM ids fails is kept, with the error, and its tests become
  // `error`.
  std::vector<Executor*> make_executors(const RunOptions&, RunResult& result) override {
    result.devices = gpus_;
    for (const DeviceInfo& d : gpus_) sh_.gpu_names.push_back(unit_text(UnitName::of_gpu(d.index)));
    std::vector<Executor*> executors;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      int sm_ids = gpus_[i].sm_count;
      std::string dead;
      bool hung = false;
      std::unique_ptr<DeviceRuntime> rt;
      try {
        rt = open_runtime(gpus_[i]);
        rt->make_current();
        sm_ids = std::max(sm_ids, rt->sm_id_limit());
      } catch (const CudaError& e) {
        dead = e.what();
        hung = e.kind() == CudaError::Kind::hung;  // its first kernel may still run: as after the watchdog
      }
      run_.push_back(std::make_unique<GpuExecutor>(sh_, result.devices[i], i, sm_ids));
      run_.back()->gpu().stuck = hung;
      run_.back()->gpu().rt = std::move(rt);
      run_.back()->gpu().dead = dead.empty() && !run_.back()->gpu().rt ? "the device could not be opened" : dead;
      executors.push_back(run_.back().get());
    }
    return executors;
  }

  void finish(RunResult& result, Clock::time_point start) override {
    // A GPU the watchdog gave up on (a kernel, an input generation, the probe, its opening): every SM of it
    // is hung in the units, as a CPU's stuck worker is (its outputs name the GPU).
    for (UnitResult& u : result.units)
      if (u.is_sm() && u.device >= 0 && static_cast<size_t>(u.device) < run_.size() &&
          run_[static_cast<size_t>(u.device)]->gpu().stuck)
        u.hung = true;
    // The node's GPUs judge their consensus tests together.
    std::vector<FirstRun> firsts(result.tests.size());
    for (size_t i = 0; i < result.tests.size() && !run_.empty(); ++i) {
      auto& kept = run_[i % run_.size()]->gpu().first_runs;
      if (const auto it = kept.find(result.tests[i].id); it != kept.end()) firsts[i] = std::move(it->second);
    }
    apply_node_consensus(result, firsts, seconds_since(start));
    if (first_runs_) *first_runs_ = std::move(firsts);
    abandoned_ = result.workers_abandoned;
  }

 private:
  Shared sh_;
  const std::vector<DeviceInfo> gpus_;
  std::vector<FirstRun>* first_runs_;
  std::vector<std::unique_ptr<GpuExecutor>> run_;
  bool abandoned_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const PatternSet& patterns, const std::vector<DeviceInfo>& gpus,
                                      std::vector<FirstRun>* first_runs) {
  return std::make_unique<GpuBackend>(patterns, gpus, first_runs);
}

}  // namespace sdc::cuda

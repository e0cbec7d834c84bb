// A GPU screen's NVML telemetry: identity and a reading before the run, a sampler thread during it, a
// reading after it; then each GPU test judged by the samples taken while it ran (hot, throttled, above
// --max-temperature). Without NVML the screen goes on and every output says why it is not available.
#pragma once

#include <memory>
#include <vector>

#include "src/core/result.h"
#include "src/host/nvml.h"

namespace sdc {

class GpuWatch {
 public:
  // Starts watching the screen's GPUs, which become r.devices in this order: r.nvml is filled.
  GpuWatch(RunResult& r, const std::vector<DeviceInfo>& gpus);
  ~GpuWatch();  // stops the sampler on any way out (finish() not reached: an exception)
  GpuWatch(const GpuWatch&) = delete;
  GpuWatch& operator=(const GpuWatch&) = delete;
  // Stops the sampler, reads the after state and judges the GPU tests.
  void finish();

 private:
  RunResult& r_;
  std::unique_ptr<host::Nvml> nvml_;
  std::vector<nvmlDevice_t> handles_;
  std::unique_ptr<host::GpuSampler> sampler_;
};

// One NVML reading of each of these GPUs now (sdcscreen info): identity and the counters, or why not.
host::NvmlTelemetry read_nvml_now(const std::vector<DeviceInfo>& gpus);
// info's lines: "nvml:     ..." (the library, or why not), then one "nvml gpu: cuda:N UUID  serial ..." per GPU
// with the values nvidia-smi -q also shows (the first-light script compares them).
std::string nvml_info_text(const host::NvmlTelemetry& t, const std::vector<DeviceInfo>& gpus);

// Each GPU test, by the samples of its GPU taken while it ran (within a sampling interval of it): a note when
// the GPU throttled or was hot, and an error when it was above r.max_temperature_c (a pass cannot be trusted).
void judge_gpu_tests(RunResult& r);

}  // namespace sdc

// The CUDA backend as the command line sees it: is a GPU usable (and if not, why), which GPUs there
// are, and the backend that screens the selected GPUs. Plain C++. In a build without CUDA the first three
// answer "this build has no CUDA backend" (cuda_stub.cpp); the backend is in every build, for emulated GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/core/device_info.h"
#include "src/core/node_consensus.h"
#include "src/core/scheduler.h"

namespace sdc::cuda {

struct Availability {
  bool usable = false;
  std::string reason;  // why not: no driver, driver older than the runtime, no device, ...
  int device_count = 0;
};

// Never throws; initializes the CUDA runtime.
Availability probe();

// Identity of every visible device (call after probe() said usable). Throws CudaError.
std::vector<DeviceInfo> list_devices();

// For `info`: "cublasLt 13.0.2 from /path/libcublasLt.so.13", or why it did not load (cublaslt.h: where it
// looks). Never throws.
std::string cublaslt_summary();

// The GPU backend (run_screen, src/core/scheduler.h; gpu_backend.cpp): every GPU in `gpus` at once, one
// executor, host thread and stream per GPU; one test per case and GPU, one unit per SM. A per-device failure
// never throws: that device's tests become `error` and the other GPUs finish. After the schedule the node's
// GPUs judge their consensus tests together (apply_node_consensus); first_runs, when given, receives each
// test's first complete run (one per test of the result, empty for a test that kept none), what `record`
// writes. `patterns` must outlive the backend.
std::unique_ptr<Backend> make_backend(const PatternSet& patterns, const std::vector<DeviceInfo>& gpus,
                                      std::vector<FirstRun>* first_runs = nullptr);

}  // namespace sdc::cuda

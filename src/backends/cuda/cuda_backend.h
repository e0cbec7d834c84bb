// The CUDA backend as the command line sees it: is a GPU usable (and if not, why), which GPUs there
// are, and the screen on the selected GPUs. Plain C++; in a build without CUDA every entry answers
// "this build has no CUDA backend" (cuda_stub.cpp).
#pragma once

#include <string>
#include <vector>

#include "../../core/device_info.h"
#include "../../core/node_consensus.h"
#include "../../core/scheduler.h"

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

// Runs the selected cases on every GPU in `gpus` at once (one host thread and stream per GPU) and fills
// result: one test per case and GPU, one unit per SM. Never throws for a per-device failure: that
// device's tests become `error` and the other GPUs finish. The node's GPUs judge their consensus tests
// together (apply_node_consensus); first_runs, when given, receives each test's first complete run (one
// per test of result, empty for a test that kept none), what `record` writes.
void run_screen(const PatternSet& patterns, const Selection& sel, const RunOptions& opt,
                const std::vector<DeviceInfo>& gpus, RunResult& result, std::vector<FirstRun>* first_runs = nullptr);

}  // namespace sdc::cuda

// The CUDA backend of a build without nvcc: nothing is usable, and the reason says so.
#include "cuda_backend.h"

namespace sdc::cuda {

Availability probe() { return {false, "this build of sdcscreen has no CUDA backend (built without nvcc)", 0}; }

std::vector<DeviceInfo> list_devices() { return {}; }

void run_screen(const PatternSet&, const Selection&, const RunOptions&, const std::vector<DeviceInfo>&, RunResult& r,
                std::vector<FirstRun>*) {
  r.errors.push_back("this build of sdcscreen has no CUDA backend");
}

}  // namespace sdc::cuda

// The CUDA runtime of a build without nvcc: nothing is usable, and the reason says so. The GPU executor itself is
// compiled in every build: it drives emulated devices (src/backends/emu) there too.
#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/device_runtime.h"

namespace sdc::cuda {

Availability probe() { return {false, "this build of sdcscreen has no CUDA backend (built without nvcc)", 0}; }

std::vector<DeviceInfo> list_devices() { return {}; }

std::string cublaslt_summary() { return "none: this build of sdcscreen has no CUDA backend"; }

std::unique_ptr<DeviceRuntime> open_cuda_runtime(const DeviceInfo&) {
  throw CudaError("this build of sdcscreen has no CUDA backend", CudaError::Kind::other);
}

}  // namespace sdc::cuda

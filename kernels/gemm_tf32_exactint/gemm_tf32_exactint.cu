// gemm_tf32_exactint on CUDA: tf32 tensor cores (mma.sync m16n8k8, f32 accumulators) on exact-integer inputs.
// The kernel, the generation of the narrow inputs and the geometry are the exact-integer GEMMs' shared ones
// (kernels/exactint/exactint_mma.cuh), bound to the format's traits (kernels/exactint/exactint_device.cuh).
#include "../exactint/exactint_device.cuh"
#include "../exactint/formats.h"

namespace sdc::gemm_tf32_exactint::SDC_TARGET {

struct MmaTraits : exactint::DeviceTraits<Tf32> {};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return exactint::prepare_mma<MmaTraits>(c); }

}  // namespace sdc::gemm_tf32_exactint::SDC_TARGET

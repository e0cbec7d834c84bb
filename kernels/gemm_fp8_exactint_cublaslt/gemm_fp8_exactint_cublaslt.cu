// gemm_fp8_exactint_cublaslt on CUDA: cuBLASLt's pinned algorithm on gemm_fp8_exactint's exact-integer inputs
// (fp32 accumulation and output). Generation and plan are the shared ones (kernels/exactint/exactint_lt.cuh),
// bound to the format's traits (kernels/exactint/exactint_device.cuh).
#include "../exactint/exactint_device.cuh"
#include "../exactint/formats.h"

namespace sdc::gemm_fp8_exactint_cublaslt::SDC_TARGET {

struct LtTraits : exactint::DeviceTraits<gemm_fp8_exactint::E4m3> {};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return exactint::prepare_lt<LtTraits>(c); }

}  // namespace sdc::gemm_fp8_exactint_cublaslt::SDC_TARGET

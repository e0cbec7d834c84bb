// gemm_f16_cublaslt on CUDA: cuBLASLt's pinned algorithm (fp16 in, fp32 accumulation and output) on gemm_f16's
// random full-precision inputs, generated on the device by the shared kernel
// (kernels/recorded_gemm/recorded_gemm_device.cuh). What the library's tensor-core kernel does inside one
// instruction and how it splits K are its own, hence recordings keyed by the library's version and the
// pinned algorithm.
#include "../recorded_gemm/recorded_gemm_device.cuh"

namespace sdc::gemm_f16_cublaslt::SDC_TARGET {

struct Traits : recorded_gemm::DtypeTraits<cuda::LtDtype::fp16> {};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return recorded_gemm::make_lt_device<Traits>(c); }

}  // namespace sdc::gemm_f16_cublaslt::SDC_TARGET

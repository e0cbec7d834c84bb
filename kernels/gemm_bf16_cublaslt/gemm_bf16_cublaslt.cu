// gemm_bf16_cublaslt on CUDA: cuBLASLt's pinned algorithm (bf16 in, fp32 accumulation and output) on gemm_bf16's
// random full-precision inputs, generated on the device by the shared kernel (kernels/exactint/exactint_lt.cuh).
// What the library's tensor-core kernel does inside one instruction and how it splits K are its own, hence
// recordings keyed by the library's version and the pinned algorithm.
#include "../exactint/exactint_lt.cuh"
#include "../recorded_gemm/recorded_gemm_ref.h"

namespace sdc::gemm_bf16_cublaslt {

struct LtTraits {
  using Storage = uint16_t;
  using Pattern = recorded_gemm::Pattern;
  static constexpr cuda::LtDtype DTYPE = cuda::LtDtype::bf16;
  SDC_HD static Storage bits(const Pattern& p, uint32_t tensor, uint64_t i) {
    return recorded_gemm::element_bits(p, tensor, i);
  }
};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  return exactint::make_lt_device<LtTraits>(c, recorded_gemm::case_pattern(recorded_gemm::BF16, c));
}

}  // namespace sdc::gemm_bf16_cublaslt

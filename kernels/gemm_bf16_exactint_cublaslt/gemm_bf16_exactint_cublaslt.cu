// gemm_bf16_exactint_cublaslt on CUDA: cuBLASLt's pinned algorithm on gemm_bf16_exactint's exact-integer inputs (bf16
// in, fp32 accumulation and output). Generation and plan are the shared ones (kernels/exactint/exactint_lt.cuh); this
// file binds the encoding and the library's input type.
#include "../exactint/exactint_lt.cuh"
#include "../gemm_bf16_exactint/gemm_bf16_exactint.h"

namespace sdc::gemm_bf16_exactint_cublaslt {

struct LtTraits {
  using Storage = gemm_bf16_exactint::Storage;
  using Pattern = exactint::Pattern;
  static constexpr cuda::LtDtype DTYPE = cuda::LtDtype::bf16;
  SDC_HD static Storage bits(const exactint::Pattern& p, uint32_t tensor, uint64_t i) {
    return gemm_bf16_exactint::element_bits(p, tensor, i);
  }
};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  return exactint::make_lt_device<LtTraits>(c, exactint::case_pattern(gemm_bf16_exactint::FORMAT, c));
}

}  // namespace sdc::gemm_bf16_exactint_cublaslt

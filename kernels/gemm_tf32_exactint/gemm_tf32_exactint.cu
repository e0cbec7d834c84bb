// gemm_tf32_exactint on CUDA: tf32 tensor cores (mma.sync m16n8k8, f32 accumulators) on exact-integer inputs.
// The kernel, the generation of the narrow inputs and the geometry are the exact-integer GEMMs' shared
// ones (kernels/exactint/exactint_mma.cuh); this file binds the encoding and the instruction.
#include "../exactint/exactint_mma.cuh"
#include "gemm_tf32_exactint.h"

namespace sdc::gemm_tf32_exactint {

struct MmaTraits {
  using Storage = gemm_tf32_exactint::Storage;
  using Pattern = exactint::Pattern;
  static constexpr bool fp8 = false;
  static constexpr const char* ALGORITHM = "mma.sync m16n8k8 f32 accumulators, 64x64 tile per block, k in stages of 32";
  SDC_HD static Storage bits(const exactint::Pattern& p, uint32_t tensor, uint64_t i) {
    return element_bits(p, tensor, i);
  }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) { exactint::mma_tf32(d, a, b); }
};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return exactint::make_device<MmaTraits>(c, exactint::case_pattern(FORMAT, c)); }

}  // namespace sdc::gemm_tf32_exactint

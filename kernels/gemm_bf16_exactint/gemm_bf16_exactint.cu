// gemm_bf16_exactint on CUDA: bf16 tensor cores (mma.sync m16n8k16, f32 accumulators) on exact-integer inputs.
// The kernel, the generation of the narrow inputs and the geometry are the exact-integer GEMMs' shared
// ones (kernels/exactint/exactint_mma.cuh); this file binds the encoding and the instruction.
#include "../exactint/exactint_mma.cuh"
#include "gemm_bf16_exactint.h"

namespace sdc::gemm_bf16_exactint {

struct MmaTraits {
  using Storage = gemm_bf16_exactint::Storage;
  static constexpr bool fp8 = false;
  static constexpr const char* ALGORITHM = "mma.sync m16n8k16 f32 accumulators, 64x64 tile per block, k in stages of 32";
  SDC_HD static Storage bits(const exactint::Pattern& p, uint32_t tensor, uint64_t i) {
    return element_bits(p, tensor, i);
  }
  // D = A * B + D on a 16 x 16 bf16 A fragment and a 16 x 8 bf16 B fragment
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return exactint::make_device<MmaTraits>(FORMAT, c); }

}  // namespace sdc::gemm_bf16_exactint

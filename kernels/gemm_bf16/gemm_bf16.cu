// gemm_bf16 on CUDA: bf16 tensor cores (mma.sync m16n8k16, f32 accumulators) on random full-precision inputs.
// The kernel is the exact-integer GEMMs' (kernels/exactint/exactint_mma.cuh): only the inputs differ. Its
// accumulation order is fixed (each warp's fragments in k order, stage by stage), so a GPU repeats its
// own bits; what the tensor cores do inside one instruction is the architecture's, hence recordings.
#include "../exactint/exactint_mma.cuh"
#include "../recorded_gemm/recorded_gemm_ref.h"

namespace sdc::gemm_bf16 {

struct MmaTraits {
  using Storage = uint16_t;
  using Pattern = recorded_gemm::Pattern;
  static constexpr bool fp8 = false;
  static constexpr const char* ALGORITHM = "mma.sync m16n8k16 f32 accumulators, 64x64 tile per block, k in stages of 32";
  SDC_HD static Storage bits(const Pattern& p, uint32_t tensor, uint64_t i) {
    return recorded_gemm::element_bits(p, tensor, i);
  }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) { exactint::mma_bf16(d, a, b); }
};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  return exactint::make_device<MmaTraits>(c, recorded_gemm::case_pattern(recorded_gemm::BF16, c));
}

}  // namespace sdc::gemm_bf16

// The device side of the exact-integer GEMM formats: one traits type per format (the family header's, e.g.
// exactint::formats::bf16) bound to both engines, the project's mma.sync kernel (exactint_mma.cuh) and
// cuBLASLt's pinned algorithm (exactint_lt.cuh). Each family's .cu derives its own type from
// DeviceTraits<F> (one line): the kernels are templates on the traits, and a distinct type per translation
// unit keeps every kernel instantiation in one .cu file (the same instantiation in two whole-program
// translation units is a launch-time hazard on some toolkits).
#pragma once

#include <memory>

#if defined(SDC_EMU)  // cuBLASLt runs only on a real GPU
#include "src/backends/cuda/lt_dtype.h"
#else
#include "kernels/exactint/exactint_lt.cuh"
#endif
#include "kernels/exactint/exactint_mma.cuh"

namespace sdc::exactint {

template <class F>
struct DeviceTraits : F {
  using Storage = typename F::Storage;
  using Pattern = exactint::Pattern;
  static constexpr bool fp8 = F::TYPE == Narrow::e4m3;
  // One mma.sync takes 8 words of k: 16 bf16/fp16, 8 tf32 or 32 e4m3 elements.
  static constexpr const char* ALGORITHM =
      F::TYPE == Narrow::tf32   ? "mma.sync m16n8k8 f32 accumulators, 64x64 tile per block, k in stages of 32"
      : F::TYPE == Narrow::e4m3 ? "mma.sync m16n8k32 f32 accumulators, 64x64 tile per block, k in stages of 32"
                                : "mma.sync m16n8k16 f32 accumulators, 64x64 tile per block, k in stages of 32";
  static constexpr cuda::LtDtype DTYPE = F::TYPE == Narrow::bf16   ? cuda::LtDtype::bf16
                                         : F::TYPE == Narrow::f16  ? cuda::LtDtype::fp16
                                         : F::TYPE == Narrow::tf32 ? cuda::LtDtype::tf32
                                                                   : cuda::LtDtype::fp8_e4m3;
  SDC_HD static Storage bits(const Pattern& p, uint32_t tensor, uint64_t i) { return element_bits<F>(p, tensor, i); }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    if constexpr (F::TYPE == Narrow::bf16)
      mma_bf16(d, a, b);
    else if constexpr (F::TYPE == Narrow::f16)
      mma_f16(d, a, b);
    else if constexpr (F::TYPE == Narrow::tf32)
      mma_tf32(d, a, b);
    else
      mma_e4m3(d, a, b);
  }
};

// A validated case of gemm_<f>_exactint on the project's mma.sync kernel; Traits derives from DeviceTraits.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> prepare_mma(const Case& c) {
  return make_device<Traits>(c, case_pattern(Traits::FORMAT, c));
}

#if !defined(SDC_EMU)
// A validated case of gemm_<f>_exactint_cublaslt on cuBLASLt's pinned algorithm; Traits derives from
// DeviceTraits.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> prepare_lt(const Case& c) {
  return make_lt_device<Traits>(c, case_pattern(Traits::FORMAT, c));
}
#endif

}  // namespace sdc::exactint

// The device side shared by the recorded tensor-core GEMMs: recorded_gemm's random bf16/fp16 inputs bound to
// the project's mma.sync kernel (gemm_bf16, gemm_f16: kernels/exactint/exactint_mma.cuh) and to cuBLASLt's
// pinned algorithm (gemm_bf16_cublaslt, gemm_f16_cublaslt: kernels/exactint/exactint_lt.cuh). The element
// encoding travels in the Pattern, so one set of traits per dtype serves both. Each family's .cu derives its
// own traits type from DtypeTraits (one line): the kernels are templates on the traits, and a distinct type
// per translation unit keeps every kernel instantiation in one .cu file (the same instantiation in two
// whole-program translation units is a launch-time hazard on some toolkits).
#pragma once

#include <memory>

#if defined(SDC_EMU)  // cuBLASLt runs only on a real GPU
#include "src/backends/cuda/lt_dtype.h"
#else
#include "kernels/exactint/exactint_lt.cuh"
#endif
#include "kernels/exactint/exactint_mma.cuh"
#include "kernels/recorded_gemm/recorded_gemm_ref.h"

namespace sdc::recorded_gemm {

template <cuda::LtDtype D>
struct DtypeTraits {
  static_assert(D == cuda::LtDtype::bf16 || D == cuda::LtDtype::fp16, "recorded GEMMs are bf16 or fp16");
  using Storage = uint16_t;
  using Pattern = recorded_gemm::Pattern;
  static constexpr cuda::LtDtype DTYPE = D;
  static constexpr bool fp8 = false;
  static constexpr const char* ALGORITHM =
      "mma.sync m16n8k16 f32 accumulators, 64x64 tile per block, k in stages of 32";
  static constexpr const Encoding& ENCODING = D == cuda::LtDtype::bf16 ? BF16 : F16;
  SDC_HD static Storage bits(const Pattern& p, uint32_t tensor, uint64_t i) { return element_bits(p, tensor, i); }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    if constexpr (D == cuda::LtDtype::bf16)
      exactint::mma_bf16(d, a, b);
    else
      exactint::mma_f16(d, a, b);
  }
};

// A validated case on the project's mma.sync kernel; Traits derives from DtypeTraits.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> make_mma_device(const Case& c) {
  return exactint::make_device<Traits>(c, case_pattern(Traits::ENCODING, c));
}

#if !defined(SDC_EMU)
// A validated case on cuBLASLt's pinned algorithm; Traits derives from DtypeTraits.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> make_lt_device(const Case& c) {
  return exactint::make_lt_device<Traits>(c, case_pattern(Traits::ENCODING, c));
}
#endif

}  // namespace sdc::recorded_gemm

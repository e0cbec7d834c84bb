// The GEMM families on cuBLASLt: the same inputs as their mma.sync twins, generated on the device by the same
// kernel (exactint_mma.cuh's generate_kernel, bound to a family's Traits: Storage, Pattern, bits() and the cuBLASLt
// input type DTYPE), and computed by cuBLASLt's pinned algorithm through a generic LtGemmDevice.
//  * gemm_*_exactint_cublaslt: any algorithm the library may choose sums exactly (exactint.h, bound (*): any order,
//    any grouping, split-K included), so the golden is the twin's CPU reference;
//  * gemm_{bf16,f16}_cublaslt: random full-precision inputs (kernels/recorded_gemm/), judged by recordings keyed
//    by the library's version and the pinned algorithm, or by consensus.
#pragma once

#include <memory>

#include "src/backends/cuda/lt_gemm_device.h"
#include "kernels/exactint/exactint_mma.cuh"

namespace sdc::exactint {

// c is a validated case of an M x N x K GEMM family; `pat` generates its inputs.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> make_lt_device(const Case& c, typename Traits::Pattern pat) {
  static_assert(sizeof(typename Traits::Storage) == cuda::lt_element_bytes(Traits::DTYPE), "encoding width");
  const int64_t m = dim(c, "m"), n = dim(c, "n"), k = dim(c, "k");
  auto generate = [pat, m, n, k](size_t tensor, void* dst, cudaStream_t s) {
    const uint64_t count = static_cast<uint64_t>((tensor == 0 ? m : n) * k);
    cuda::launch("exactint generate_kernel", generate_kernel<Traits>, cuda::grid_for(count, 256), 256, s,
                 static_cast<typename Traits::Storage*>(dst), count, pat, static_cast<uint32_t>(tensor));
  };
  return std::make_unique<cuda::LtGemmDevice>(Traits::DTYPE, m, n, k, generate);
}

}  // namespace sdc::exactint

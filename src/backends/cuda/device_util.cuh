// Device helpers every family's kernels share, and the generic passes (input generation, digests,
// input faults) that the runner launches. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include "../../spec/generator.h"
#include "cuda_check.h"
#include "device_problem.h"

namespace sdc::cuda {

// The SM this thread runs on (PTX %smid): recorded per tile, so a miscompare names its SM.
__device__ __forceinline__ uint32_t sm_id() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// Blocks for a grid-stride loop over n items: enough to fill any current GPU, never more than needed.
inline unsigned grid_for(uint64_t n, unsigned block) {
  const uint64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

// dst[i] = pattern_value(d, w, key, i) for i < n: the host generator's bits, on the device.
void generate_pattern(float* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s);

}  // namespace sdc::cuda

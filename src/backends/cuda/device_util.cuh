// Device helpers every family's kernels share, and the launch of a kernel. Included by .cu files only,
// which are compiled for the GPU by nvcc and for the emulated device as C++ (cuda_target.h).
#pragma once

#include <tuple>
#include <utility>

#include "src/spec/f64.h"
#include "src/spec/generator.h"
#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_problem.h"

namespace sdc::cuda {

// The SM this thread runs on (PTX %smid): recorded per tile, so a miscompare names its SM.
__device__ __forceinline__ uint32_t sm_id() {
#if defined(SDC_EMU)
  return ::sdc::emu::here().sm;
#else
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
#endif
}

// Blocks for a grid-stride loop over n items: enough to fill any current GPU, never more than needed.
inline unsigned grid_for(uint64_t n, unsigned block) {
  const uint64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

namespace SDC_TARGET {
// Enqueues `kernel` on stream s as a 1-D grid of `grid` blocks of `block` threads and checks the launch
// (a bad configuration shows here, an asynchronous fault at the next synchronization). `what` names the
// kernel in an error. The one place a kernel is launched: the triple-chevron syntax for the GPU, the
// emulated device's queue for the emulation (the arguments are copied, as the GPU copies them).
template <class... P, class... A>
void launch(const char* what, void (*kernel)(P...), unsigned grid, unsigned block, cudaStream_t s, A&&... args) {
#if defined(SDC_EMU)
  ::sdc::emu::launch(what, grid, block, s,
                     [kernel, params = std::tuple<P...>(std::forward<A>(args)...)]() { std::apply(kernel, params); });
  check(cudaGetLastError(), what, __FILE__, __LINE__);
#else
  // clang-format splits the closing chevrons in a .cuh file
  // clang-format off
  kernel<<<grid, block, 0, s>>>(std::forward<A>(args)...);
  // clang-format on
  check(cudaGetLastError(), what, __FILE__, __LINE__);
#endif
}
}  // namespace SDC_TARGET
// In the target's namespace (cuda_target.h): kernels of the same signature launched by both targets would
// otherwise instantiate one `launch` twice under one name, and the linker would keep one target's for both.
using SDC_TARGET::launch;

namespace SDC_TARGET {
// dst[i] = pattern_value(d, w, key, i) for i < n: the host generator's bits, on the device.
void generate_pattern(float* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s);
// The fp64 tensor of n elements (2 n words, src/spec/f64.h): dst[i] = pattern_value_f64(d, w, key, i).
void generate_pattern_f64(void* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s);
}  // namespace SDC_TARGET

}  // namespace sdc::cuda

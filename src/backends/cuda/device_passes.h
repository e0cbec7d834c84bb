// The generic device passes the GPU executor launches around a family's kernels (device_util.cu), once per
// target that source is compiled for: `gpu` (nvcc, a CUDA build only) and `emu` (the emulated device,
// every build). Plain C++ declarations: the runtimes (device_runtime.h) call their own target's.
#pragma once

#include <cstdint>

#include "src/backends/cuda/device_problem.h"

#define SDC_DEVICE_PASSES                                                                                  \
  /* digests[t] = tile_digest(t, elements of tile t in offset order, tile_elements) for every tile, the    \
     elements read where `layout` puts them, applying `fault` first (see DeviceFault). Integer sums: the   \
     reduction order does not matter, the host digest matches. */                                          \
  void digest_tiles(float* out, const OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,        \
                    const uint32_t* tile_sm, DeviceFault fault, uint64_t* digests, cudaStream_t s);        \
  /* An input fault drill on a device tensor of 32-bit elements: the words `fault` hits from element       \
     `first` take it, their values saved first in `saved` (fault.count words of device memory); restore:   \
     they get the saved values back. */                                                                    \
  void input_fault(void* tensor, uint64_t first, WordFault fault, void* saved, bool restore, cudaStream_t s); \
  /* %nsmid of the current device: SM ids a kernel can see lie in [0, sm_id_limit()), which PTX does not   \
     promise to equal the SM count. Synchronizes. */                                                       \
  int sm_id_limit();                                                                                       \
  /* A kernel that never returns until *release is non-zero: the watchdog drill (action=hang). */          \
  void launch_hang(const volatile int* release, cudaStream_t s);

namespace sdc::cuda::gpu {
SDC_DEVICE_PASSES
}  // namespace sdc::cuda::gpu

namespace sdc::cuda::emu {
SDC_DEVICE_PASSES
}  // namespace sdc::cuda::emu

#undef SDC_DEVICE_PASSES

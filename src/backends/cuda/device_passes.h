// The generic device passes the CUDA runner launches around a family's kernels. Plain C++ declarations
// (implemented in device_util.cu), so host code compiled without nvcc can call them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_problem.h"

namespace sdc::cuda {

// digests[t] = tile_digest(t, elements of tile t in offset order, tile_elements) for every tile, the
// elements read where `layout` puts them, applying `fault` first (see DeviceFault). Integer sums: the
// reduction order does not matter, the host digest matches.
void digest_tiles(float* out, const OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,
                  const uint32_t* tile_sm, DeviceFault fault, uint64_t* digests, cudaStream_t s);

// Xors mask into the bits of element `index` of a device tensor of 32-bit elements (input fault drills;
// applying it twice restores the tensor).
void flip_bits(void* tensor, uint64_t index, uint32_t mask, cudaStream_t s);

// %nsmid of the current device: SM ids a kernel can see lie in [0, sm_id_limit()), which PTX does not
// promise to equal the SM count. Synchronizes.
int sm_id_limit();

// A kernel that never returns until *release is non-zero: the watchdog drill (action=hang).
void launch_hang(const volatile int* release, cudaStream_t s);

}  // namespace sdc::cuda

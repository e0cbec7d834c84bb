// gemm_f64's kernel as a call (gemm_f64.cu), for the family's device problem and for the benchmark, which also
// times the sm_90 form of the same kernel.
#pragma once

#include <cstdint>

#include "src/backends/cuda/cuda_target.h"

namespace sdc::gemm_f64::SDC_TARGET {

// The fp64 tensor-core instruction the kernel issues per full slab of 8 k:
//  m8n8k4:  mma.sync.m8n8k4.f64 (sm_80 and later), whose order was measured (one fma chain in increasing k from C)
//           and which the family runs;
//  m16n8k8: mma.sync.m16n8k8.f64 (sm_90 and later, one instruction per 16 x 8 block and slab), assumed to chain
//           the same way; no GPU has confirmed it, so only the benchmark runs it, and counts where its result
//           differs from the m8n8k4 kernel's.
enum class Dmma { m8n8k4, m16n8k8 };

// The block the kernel takes on a GPU of `sms` SMs: 128 (rows and columns: 2 x 2 tiles, 8 warps) when that
// still gives every SM a block, else 64 (one tile, 2 warps), so that small products spread over the whole GPU.
// Only speed and which warp stores an element depend on it.
int block_rows(int64_t m, int64_t n, int sms);

// Enqueues C = A B (gemm_f64.h's shapes and output tiles) on stream s with blocks of bm x bm outputs (64 or 128).
// Returns false, launching nothing, for another bm or when the current device cannot run `instr` (m16n8k8
// below compute capability 9.0); a launch error is thrown as the backend's launches are (device_util.cuh).
bool launch_gemm(Dmma instr, int bm, const double* a, const double* b, float* out, uint32_t* tile_sm, int64_t m,
                 int64_t n, int64_t k, cudaStream_t s);

}  // namespace sdc::gemm_f64::SDC_TARGET

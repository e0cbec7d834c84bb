// cross_entropy_f32 on CUDA: per token m = fold_max(x), s = pairwise_sum(sdc_expf(x - m)),
// loss = (m + sdc_logf(s)) - x[target], and per tile the pairwise sum of its 16 losses, bit-identical to
// compute_tile_scalar. Shapes: tokens x vocab row-major, vocab <= 2^18 (battery: 256x32000, 128x50257,
// 64x4096, 64x1000, 512x128256).
// Work split: one block of 1024 threads per tile (16 tokens), so the block's SM computed the whole tile;
// the 32 warps form 16 groups of 2, one token per group. Each token takes two passes over its group's
// segments (chunked_reduce.h): the leftmost maximum, then the exp sum by the fixed tree, both evaluated
// in parallel in ways proved (and tested on the host) to give the specification's bits. The tile's partial
// (output 16) is the specification's pairwise_sum over the 16 losses, on one thread.
#include <memory>

#include "kernels/cross_entropy_f32/cross_entropy_f32.h"
#include "kernels/rows/row_device.cuh"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"
#include "src/spec/fpmath.h"

namespace sdc::cross_entropy_f32::SDC_TARGET {

using Block = cuda::SDC_TARGET::RowBlock<TILE_ROWS>;  // one token per group
constexpr uint32_t THREADS = Block::THREADS;
constexpr uint32_t TILE_OUT = TILE_ROWS + 1;  // 16 losses, then the tile's partial
constexpr int UNROLL = 2;                     // segments in flight per warp: sdc_expf needs registers too

__global__ void __launch_bounds__(THREADS)
    cross_entropy_kernel(const float* logits, uint32_t vocab, uint64_t seed, float* out, uint32_t* tile_sm) {
  __shared__ float red[Block::GROUPS][Block::GROUP_WARPS];
  __shared__ float loss[TILE_ROWS];
  const Block b(vocab);
  b.for_rows([&](uint32_t r, uint64_t token) {
    const float* x = logits + token * vocab;
    const bool vec = chunked::aligned16(x);

    const auto ignore_e = [](uint32_t, uint32_t, const float(&)[4]) {};
    const auto [m, s] = cuda::SDC_TARGET::max_exp_sum<UNROLL>(b, x, vocab, vec, red[b.group], ignore_e);
    if (b.wig == 0 && b.lane == 0) {
      const float l = (m + sdc_logf(s)) - x[target(seed, token, vocab)];
      loss[r] = l;
      out[b.tile * TILE_OUT + r] = l;  // by lane 0 of the group's first warp (warp 2r of the block)
    }
  });
  __syncthreads();
  if (threadIdx.x == 0)  // the tile's partial sum: thread 0
    out[b.tile * TILE_OUT + TILE_ROWS] = pairwise_sum([&](uint32_t j) { return loss[j]; }, TILE_ROWS);
  b.record_sm(tile_sm);
}

SDC_ROW_PREPARE_CUDA("cross_entropy_f32 cross_entropy_kernel", cross_entropy_kernel, l.x(), l.cols, l.seed, l.out,
                     l.tile_sm)

}  // namespace sdc::cross_entropy_f32::SDC_TARGET

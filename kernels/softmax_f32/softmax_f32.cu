// softmax_f32 on CUDA: per row m = fold_max(x), e = sdc_expf(x - m), s = pairwise_sum(e), y = e / s,
// bit-identical to compute_tile_scalar. Shapes: rows x cols row-major, cols <= 2^17 (battery: 256x4096,
// 128x1000, 64x32768, 128x777).
// Work split: one block of 1024 threads per tile (4 rows), so the block's SM computed the whole tile; the
// 32 warps form 4 groups of 8, one row per group. Each row takes three passes over its group's segments
// (chunked_reduce.h): the leftmost maximum, then e written to y while its fixed tree is summed, then y / s
// on the same elements by the same threads. Max and sum are evaluated in parallel in ways proved (and
// tested on the host) to give the specification's bits.
#include <memory>

#include "kernels/rows/row_device.cuh"
#include "kernels/softmax_f32/softmax_f32.h"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"
#include "src/spec/fpmath.h"

namespace sdc::softmax_f32::SDC_TARGET {

using Block = cuda::SDC_TARGET::RowBlock<TILE_ROWS>;  // one row per group
constexpr uint32_t THREADS = Block::THREADS;
constexpr int UNROLL = 2;  // segments in flight per warp: sdc_expf needs registers too

__global__ void __launch_bounds__(THREADS)
    softmax_kernel(const float* x, uint32_t cols, float* out, uint32_t* tile_sm) {
  __shared__ float red[Block::GROUPS][Block::GROUP_WARPS];
  const Block b(cols);
  b.for_row_pairs(x, out, cols, [&](const float* xr, float* yr, bool vec) {
    // e is written to y as it is summed, then divided by s on the same elements by the same threads: y[r][c] is
    // stored by the lane whose span of segment c / 128 holds c, in the warp of group r that owns the segment
    const auto write_e = [&](uint32_t i, uint32_t count, const float(&e)[4]) {
      chunked::store_span(yr, i, count, vec, e);
    };
    const float s = cuda::SDC_TARGET::max_exp_sum<UNROLL>(b, xr, cols, vec, red[b.group], write_e).s;

    b.for_spans(cols, [&](uint32_t first, uint32_t count) {
      float e[4];
      chunked::load_span(yr, first, count, vec, e);  // written by this thread in the sum pass
      for (uint32_t k = 0; k < count; ++k) e[k] = e[k] / s;
      chunked::store_span(yr, first, count, vec, e);
    });
  });
  b.record_sm(tile_sm);
}

SDC_ROW_PREPARE_CUDA("softmax_f32 softmax_kernel", softmax_kernel, l.x(), l.cols, l.out, l.tile_sm)

}  // namespace sdc::softmax_f32::SDC_TARGET

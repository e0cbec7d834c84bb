// rmsnorm_f32 on CUDA: per row ms = pairwise_sum(x * x) / cols, inv = 1 / sqrtf(ms + EPS),
// y = (x * inv) * w, bit-identical to compute_tile_scalar. Shapes: rows x cols row-major, w of cols,
// cols <= 2^14 (battery: 256x4096, 128x8192, 512x5120, 64x1023).
// Work split: one block of 1024 threads per tile (4 rows), so the block's SM computed the whole tile; the
// 32 warps form 4 groups of 8, one row per group. The sum of squares runs over the group's segments as
// chunked_reduce.h proves equal to the fixed tree; the scaling pass is elementwise on the same segments.
// Division and square root are IEEE (nvcc -prec-div=true -prec-sqrt=true), never rsqrtf.
#include <memory>

#include "kernels/rmsnorm_f32/rmsnorm_f32.h"
#include "kernels/rows/row_device.cuh"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"

namespace sdc::rmsnorm_f32::SDC_TARGET {

using Block = cuda::SDC_TARGET::RowBlock<TILE_ROWS>;  // one row per group
constexpr uint32_t THREADS = Block::THREADS;
constexpr int UNROLL = 4;

__global__ void __launch_bounds__(THREADS)
    rmsnorm_kernel(const float* x, const float* w, uint32_t cols, float* out, uint32_t* tile_sm) {
  __shared__ float red[Block::GROUPS][Block::GROUP_WARPS];
  const Block b(cols);
  const auto row = [&](const float* xr, float* yr, bool vec) {
    const float wsum = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) {
          chunked::load_span(xr, i, count, vec, e);
          for (uint32_t k = 0; k < count; ++k) e[k] = e[k] * e[k];
        },
        cols, b.wr.begin, b.wr.end, b.lane);
    const float ms = chunked::group_sum<Block::GROUP_WARPS>(wsum, red[b.group], b.wig, b.lane, b.sp.warps) /
                     static_cast<float>(cols);
    const float inv = 1.0f / sqrtf(ms + EPS);

    b.for_spans(cols, [&](uint32_t first, uint32_t count) {
      float e[4], g[4];
      chunked::load_span(xr, first, count, vec, e);
      chunked::load_span(w, first, count, vec, g);
      for (uint32_t k = 0; k < count; ++k) e[k] = (e[k] * inv) * g[k];
      // y[r][c]: the lane whose span of segment c / 128 holds c, in the warp of group r that owns the segment
      chunked::store_span(yr, first, count, vec, e);
    });
  };
  b.for_row_pairs(x, out, cols, row, w);  // vec: x's and y's rows and w 16-byte aligned
  b.record_sm(tile_sm);
}

// Tensor 0 is x (rows x cols), tensor 1 is w (cols).
SDC_ROW_PREPARE_CUDA("rmsnorm_f32 rmsnorm_kernel", rmsnorm_kernel, l.x(), l.w(), l.cols, l.out, l.tile_sm)

}  // namespace sdc::rmsnorm_f32::SDC_TARGET

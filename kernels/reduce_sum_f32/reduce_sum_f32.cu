// reduce_sum_f32 on CUDA: y[r] = pairwise_sum(X[r][0..cols)), bit-identical to compute_tile_scalar.
// Shapes: rows x cols row-major, cols <= 2^16 (battery: 256x16384, 128x65536, 1024x3000, 64x4097).
// Work split: one block of 1024 threads per tile (16 rows), so the block's SM computed the whole tile;
// the 32 warps form 16 groups of 2, one row per group. Inside a row the fixed tree is evaluated in
// parallel as chunked_reduce.h proves: each warp folds 128-element segments (a coalesced float4 per lane,
// butterfly across lanes) of its power-of-two share of the row, and the group's two warp results meet in
// one more butterfly.
#include <memory>

#include "kernels/reduce_sum_f32/reduce_sum_f32.h"
#include "kernels/rows/row_device.cuh"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"

namespace sdc::reduce_sum_f32::SDC_TARGET {

using Block = cuda::SDC_TARGET::RowBlock<TILE_ROWS>;  // one row per group
constexpr uint32_t THREADS = Block::THREADS;
constexpr int UNROLL = 4;  // segments in flight per warp

__global__ void __launch_bounds__(THREADS) reduce_kernel(const float* x, uint32_t cols, float* out, uint32_t* tile_sm) {
  __shared__ float red[Block::GROUPS][Block::GROUP_WARPS];
  const Block b(cols);
  b.for_rows([&](uint32_t, uint64_t row_index) {
    const float* row = x + row_index * cols;
    const bool vec = chunked::aligned16(row);
    const float w = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) { chunked::load_span(row, i, count, vec, e); }, cols, b.wr.begin,
        b.wr.end, b.lane);
    const float s = chunked::group_sum<Block::GROUP_WARPS>(w, red[b.group], b.wig, b.lane, b.sp.warps);
    // tile t's outputs are rows 16t..16t+15; row r's is stored by lane 0 of its group's first warp (warp 2r)
    if (b.wig == 0 && b.lane == 0) out[row_index] = s;
  });
  b.record_sm(tile_sm);
}

SDC_ROW_PREPARE_CUDA("reduce_sum_f32 reduce_kernel", reduce_kernel, l.x(), l.cols, l.out, l.tile_sm)

}  // namespace sdc::reduce_sum_f32::SDC_TARGET

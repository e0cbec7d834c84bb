// reduce_sum_f32 on CUDA: y[r] = pairwise_sum(X[r][0..cols)), bit-identical to compute_tile_scalar.
// Shapes: rows x cols row-major, cols <= 2^16 (battery: 256x16384, 128x65536, 1024x3000, 64x4097).
// Work split: one block of 1024 threads per tile (16 rows), so the block's SM computed the whole tile;
// the 32 warps form 16 groups of 2, one row per group. Inside a row the fixed tree is evaluated in
// parallel as chunked_reduce.h proves: each warp folds 128-element segments (a coalesced float4 per lane,
// butterfly across lanes) of its power-of-two share of the row, and the group's two warp results meet in
// one more butterfly.
#include <memory>

#include "../../src/backends/cuda/row_device.cuh"
#include "../../src/spec/chunked_reduce.h"
#include "../../src/core/family.h"
#include "reduce_sum_f32.h"

namespace sdc::reduce_sum_f32 {
namespace {

constexpr uint32_t THREADS = 1024;
constexpr uint32_t WARPS = THREADS / chunked::WARP;
constexpr uint32_t GROUPS = TILE_ROWS;  // one row per group
constexpr uint32_t GROUP_WARPS = WARPS / GROUPS;
static_assert(WARPS % GROUPS == 0, "groups must split the block evenly");
constexpr int UNROLL = 4;  // segments in flight per warp
static_assert(MAX_COLS <= chunked::MAX_ROW, "a row must fit the warp's streaming accumulator");

__global__ void __launch_bounds__(THREADS) reduce_kernel(const float* x, uint32_t cols, float* out,
                                                         uint32_t* tile_sm) {
  __shared__ float red[GROUPS][GROUP_WARPS];
  const uint64_t tile = blockIdx.x;
  const uint32_t warp = threadIdx.x / chunked::WARP, lane = threadIdx.x % chunked::WARP;
  const uint32_t group = warp / GROUP_WARPS, wig = warp % GROUP_WARPS;
  const chunked::RowSplit sp = chunked::row_split(cols, GROUP_WARPS);
  const chunked::WarpRange wr = chunked::warp_range(sp, wig);
  for (uint32_t r = group; r < static_cast<uint32_t>(TILE_ROWS); r += GROUPS) {
    const uint64_t row_index = tile * TILE_ROWS + r;
    const float* row = x + row_index * cols;
    const bool vec = chunked::aligned16(row);
    const float w = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) { chunked::load_span(row, i, count, vec, e); }, cols,
        wr.begin, wr.end, lane);
    const float s = chunked::group_sum<GROUP_WARPS>(w, red[group], wig, lane, sp.warps);
    if (wig == 0 && lane == 0) out[row_index] = s;  // tile t's outputs are rows 16t..16t+15
  }
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

class ReduceDevice final : public cuda::RowDevice {
 public:
  explicit ReduceDevice(const Case& c) : RowDevice(c, "rows", "cols", 1, TILE_ROWS, 0) {}
  ExponentWindow window(uint32_t) const override { return input_window(dist_); }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t stream) const override {
    reduce_kernel<<<tiles(), THREADS, 0, stream>>>(static_cast<const float*>(in[0]), cols_, out, tile_sm);
    SDC_CUDA_CHECK_LAUNCH("reduce_sum_f32 reduce_kernel");
  }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<ReduceDevice>(c); }

}  // namespace sdc::reduce_sum_f32

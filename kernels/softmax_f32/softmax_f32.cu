// softmax_f32 on CUDA: per row m = fold_max(x), e = sdc_expf(x - m), s = pairwise_sum(e), y = e / s,
// bit-identical to compute_tile_scalar. Shapes: rows x cols row-major, cols <= 2^17 (battery: 256x4096,
// 128x1000, 64x32768, 128x777).
// Work split: one block of 1024 threads per tile (4 rows), so the block's SM computed the whole tile; the
// 32 warps form 4 groups of 8, one row per group. Each row takes three passes over its group's segments
// (chunked_reduce.h): the leftmost maximum, then e written to y while its fixed tree is summed, then y / s
// on the same elements by the same threads. Max and sum are evaluated in parallel in ways proved (and
// tested on the host) to give the specification's bits.
#include <memory>
#include <stdexcept>

#include "../../src/backends/cuda/row_device.cuh"
#include "../../src/spec/chunked_reduce.h"
#include "../../src/core/family.h"
#include "../../src/spec/fpmath.h"
#include "softmax_f32.h"

namespace sdc::softmax_f32 {
namespace {

constexpr uint32_t THREADS = 1024;
constexpr uint32_t WARPS = THREADS / chunked::WARP;
constexpr uint32_t GROUPS = TILE_ROWS;  // one row per group
constexpr uint32_t GROUP_WARPS = WARPS / GROUPS;
static_assert(WARPS % GROUPS == 0, "groups must split the block evenly");
constexpr int UNROLL = 2;  // segments in flight per warp: sdc_expf needs registers too

__global__ void __launch_bounds__(THREADS) softmax_kernel(const float* x, uint32_t cols, float* out,
                                                          uint32_t* tile_sm) {
  __shared__ float red[GROUPS][GROUP_WARPS];
  const uint64_t tile = blockIdx.x;
  const uint32_t warp = threadIdx.x / chunked::WARP, lane = threadIdx.x % chunked::WARP;
  const uint32_t group = warp / GROUP_WARPS, wig = warp % GROUP_WARPS;
  const chunked::RowSplit sp = chunked::row_split(cols, GROUP_WARPS);
  const chunked::WarpRange wr = chunked::warp_range(sp, wig);
  for (uint32_t r = group; r < static_cast<uint32_t>(TILE_ROWS); r += GROUPS) {
    const uint64_t row_index = tile * TILE_ROWS + r;
    const float* xr = x + row_index * cols;
    float* yr = out + row_index * cols;  // tile t holds rows 4t..4t+3, row-major: the row's own offset
    const bool vec = chunked::aligned16(xr) && chunked::aligned16(yr);

    const float wm = chunked::warp_max<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) { chunked::load_span(xr, i, count, vec, e); }, cols,
        wr.begin, wr.end, lane);
    const float m = chunked::max_finish(xr[0], chunked::group_max<GROUP_WARPS>(wm, red[group], wig, lane));

    const float ws = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) {
          chunked::load_span(xr, i, count, vec, e);
          for (uint32_t k = 0; k < count; ++k) e[k] = sdc_expf(e[k] - m);
          chunked::store_span(yr, i, count, vec, e);
        },
        cols, wr.begin, wr.end, lane);
    const float s = chunked::group_sum<GROUP_WARPS>(ws, red[group], wig, lane, sp.warps);

    for (uint32_t seg = wr.begin; seg < wr.end; ++seg) {
      const chunked::LaneSpan ls = chunked::lane_span(cols, seg, lane);
      if (ls.count == 0) continue;
      float e[4];
      chunked::load_span(yr, ls.first, ls.count, vec, e);  // written by this thread in the sum pass
      for (uint32_t k = 0; k < ls.count; ++k) e[k] = e[k] / s;
      chunked::store_span(yr, ls.first, ls.count, vec, e);
    }
  }
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

class SoftmaxDevice final : public cuda::RowDevice {
 public:
  explicit SoftmaxDevice(const Case& c) : RowDevice(c, "rows", "cols", 1, TILE_ROWS, chunked::MAX_ROW) {}
  ExponentWindow window(uint32_t) const override { return input_window(dist_); }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t stream) const override {
    softmax_kernel<<<tiles(), THREADS, 0, stream>>>(static_cast<const float*>(in[0]), cols_, out, tile_sm);
    SDC_CUDA_CHECK_LAUNCH("softmax_f32 softmax_kernel");
  }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<SoftmaxDevice>(c); }

}  // namespace sdc::softmax_f32

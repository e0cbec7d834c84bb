// rmsnorm_f32 on CUDA: per row ms = pairwise_sum(x * x) / cols, inv = 1 / sqrtf(ms + EPS),
// y = (x * inv) * w, bit-identical to compute_tile_scalar. Shapes: rows x cols row-major, w of cols,
// cols <= 2^14 (battery: 256x4096, 128x8192, 512x5120, 64x1023).
// Work split: one block of 1024 threads per tile (4 rows), so the block's SM computed the whole tile; the
// 32 warps form 4 groups of 8, one row per group. The sum of squares runs over the group's segments as
// chunked_reduce.h proves equal to the fixed tree; the scaling pass is elementwise on the same segments.
// Division and square root are IEEE (nvcc -prec-div=true -prec-sqrt=true), never rsqrtf.
#include <memory>

#include "../../src/backends/cuda/row_device.cuh"
#include "../../src/spec/chunked_reduce.h"
#include "../../src/core/family.h"
#include "rmsnorm_f32.h"

namespace sdc::rmsnorm_f32 {
namespace {

constexpr uint32_t THREADS = 1024;
constexpr uint32_t WARPS = THREADS / chunked::WARP;
constexpr uint32_t GROUPS = TILE_ROWS;  // one row per group
constexpr uint32_t GROUP_WARPS = WARPS / GROUPS;
static_assert(WARPS % GROUPS == 0, "groups must split the block evenly");
constexpr int UNROLL = 4;
static_assert(MAX_COLS <= chunked::MAX_ROW, "a row must fit the warp's streaming accumulator");

__global__ void __launch_bounds__(THREADS) rmsnorm_kernel(const float* x, const float* w, uint32_t cols, float* out,
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
    const bool vec = chunked::aligned16(xr) && chunked::aligned16(yr) && chunked::aligned16(w);

    const float wsum = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) {
          chunked::load_span(xr, i, count, vec, e);
          for (uint32_t k = 0; k < count; ++k) e[k] = e[k] * e[k];
        },
        cols, wr.begin, wr.end, lane);
    const float ms = chunked::group_sum<GROUP_WARPS>(wsum, red[group], wig, lane, sp.warps) / static_cast<float>(cols);
    const float inv = 1.0f / sqrtf(ms + EPS);

    for (uint32_t seg = wr.begin; seg < wr.end; ++seg) {
      const chunked::LaneSpan ls = chunked::lane_span(cols, seg, lane);
      if (ls.count == 0) continue;
      float e[4], g[4];
      chunked::load_span(xr, ls.first, ls.count, vec, e);
      chunked::load_span(w, ls.first, ls.count, vec, g);
      for (uint32_t k = 0; k < ls.count; ++k) e[k] = (e[k] * inv) * g[k];
      chunked::store_span(yr, ls.first, ls.count, vec, e);
    }
  }
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

// Tensor 0 is x (rows x cols), tensor 1 is w (cols).
class RmsnormDevice final : public cuda::RowDevice {
 public:
  explicit RmsnormDevice(const Case& c) : RowDevice(c, "rows", "cols", 2, TILE_ROWS, 0) {}
  ExponentWindow window(uint32_t tensor) const override { return input_window(tensor, dist_); }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t stream) const override {
    rmsnorm_kernel<<<tiles(), THREADS, 0, stream>>>(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                                                    cols_, out, tile_sm);
    SDC_CUDA_CHECK_LAUNCH("rmsnorm_f32 rmsnorm_kernel");
  }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<RmsnormDevice>(c); }

}  // namespace sdc::rmsnorm_f32

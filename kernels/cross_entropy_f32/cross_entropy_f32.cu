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
#include <stdexcept>

#include "../../src/backends/cuda/row_device.cuh"
#include "../../src/spec/chunked_reduce.h"
#include "../../src/core/family.h"
#include "../../src/spec/fpmath.h"
#include "cross_entropy_f32.h"

namespace sdc::cross_entropy_f32 {
namespace {

constexpr uint32_t THREADS = 1024;
constexpr uint32_t WARPS = THREADS / chunked::WARP;
constexpr uint32_t GROUPS = TILE_ROWS;  // one token per group
constexpr uint32_t GROUP_WARPS = WARPS / GROUPS;
static_assert(WARPS % GROUPS == 0, "groups must split the block evenly");
constexpr uint32_t TILE_OUT = TILE_ROWS + 1;  // 16 losses, then the tile's partial
constexpr int UNROLL = 2;                      // segments in flight per warp: sdc_expf needs registers too

__global__ void __launch_bounds__(THREADS) cross_entropy_kernel(const float* logits, uint32_t vocab, uint64_t seed,
                                                                float* out, uint32_t* tile_sm) {
  __shared__ float red[GROUPS][GROUP_WARPS];
  __shared__ float loss[TILE_ROWS];
  const uint64_t tile = blockIdx.x;
  const uint32_t warp = threadIdx.x / chunked::WARP, lane = threadIdx.x % chunked::WARP;
  const uint32_t group = warp / GROUP_WARPS, wig = warp % GROUP_WARPS;
  const chunked::RowSplit sp = chunked::row_split(vocab, GROUP_WARPS);
  const chunked::WarpRange wr = chunked::warp_range(sp, wig);
  for (uint32_t r = group; r < static_cast<uint32_t>(TILE_ROWS); r += GROUPS) {
    const uint64_t token = tile * TILE_ROWS + r;
    const float* x = logits + token * vocab;
    const bool vec = chunked::aligned16(x);

    const float wm = chunked::warp_max<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) { chunked::load_span(x, i, count, vec, e); }, vocab, wr.begin,
        wr.end, lane);
    const float m = chunked::max_finish(x[0], chunked::group_max<GROUP_WARPS>(wm, red[group], wig, lane));

    const float ws = chunked::warp_sum<UNROLL>(
        [&](uint32_t i, uint32_t count, float(&e)[4]) {
          chunked::load_span(x, i, count, vec, e);
          for (uint32_t k = 0; k < count; ++k) e[k] = sdc_expf(e[k] - m);
        },
        vocab, wr.begin, wr.end, lane);
    const float s = chunked::group_sum<GROUP_WARPS>(ws, red[group], wig, lane, sp.warps);
    if (wig == 0 && lane == 0) {
      const float l = (m + sdc_logf(s)) - x[target(seed, token, vocab)];
      loss[r] = l;
      out[tile * TILE_OUT + r] = l;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out[tile * TILE_OUT + TILE_ROWS] = pairwise_sum([&](uint32_t j) { return loss[j]; }, TILE_ROWS);
    tile_sm[tile] = cuda::sm_id();
  }
}

class CrossEntropyDevice final : public cuda::RowDevice {
 public:
  explicit CrossEntropyDevice(const Case& c) : RowDevice(c, "tokens", "vocab", 1, TILE_ROWS, chunked::MAX_ROW) {}
  ExponentWindow window(uint32_t) const override { return input_window(dist_); }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t stream) const override {
    cross_entropy_kernel<<<tiles(), THREADS, 0, stream>>>(static_cast<const float*>(in[0]), cols_, seed_, out, tile_sm);
    SDC_CUDA_CHECK_LAUNCH("cross_entropy_f32 cross_entropy_kernel");
  }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<CrossEntropyDevice>(c); }

}  // namespace sdc::cross_entropy_f32

// attention_f32 on CUDA: O = softmax(scale * Q K^T, causal mask optional) V per head, bit-identical to
// compute_tile_scalar. Shapes: Q, K, V are heads x seq x dim row-major, seq a multiple of 32 up to 8192,
// dim <= 128 (battery: up to 16 heads x 2048 x 128, causal and full).
// Work split: one block of 32 warps per tile (32 query rows of one head), so the block's SM computed the
// whole tile; warp w owns query row i0 + w. The block walks the keys in tiles of 32 staged in shared
// memory (coalesced loads, shared by the 32 rows):
//   1. scores: lane l computes s[j0 + l] as its own fma chain over d = 0..D-1 from +0, then * scale, into
//      the row's scratch in global memory (the whole row is needed before the softmax: the spec is naive);
//   2. softmax on the warp's row: the leftmost maximum and the fixed exp-sum tree by chunked_reduce.h
//      (group of one warp), p = sdc_expf(s - m) written back over the scores;
//   3. P V: lane l owns dims l, l+32, l+64, l+96; each is one fma chain over j = 0..n-1 in order from +0,
//      p[j] broadcast by shuffle, V rows from shared memory; then / l.
// Causal rows take keys j < i + 1 only: masked keys take part in no operation. Scratch: the blocks of the
// grid (at most MAX_SLOTS, grid-striding over tiles) each own 32 rows of seq floats.
#include <cmath>
#include <memory>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"
#include "src/spec/fpmath.h"
#include "kernels/attention_f32/attention_f32.h"

namespace sdc::attention_f32::SDC_TARGET {
namespace {

constexpr uint32_t ROWS = TILE_ROWS;  // query rows per tile = warps per block
constexpr uint32_t THREADS = ROWS * chunked::WARP;
constexpr uint32_t KEYS = 32;  // keys per shared-memory tile: one per lane in the score pass
// Row stride of the staged Q and K tiles: a multiple of 4 floats (float4 reads) that is 4 mod 8, so the
// 8 lanes of a quarter-warp reading row l at the same d hit distinct 16-byte bank groups.
constexpr uint32_t stride_for(uint32_t dim) { return (dim + 7) / 8 * 8 + 4; }
constexpr uint32_t MAX_STRIDE = stride_for(MAX_DIM);
constexpr uint32_t MAX_SLOTS = 512;  // blocks in the grid, each with its own score rows
constexpr int UNROLL = 2;
static_assert(MAX_SEQ <= chunked::MAX_ROW, "a score row must fit the warp's streaming accumulator");
static_assert(MAX_DIM <= 4 * chunked::WARP, "a lane holds at most four output dims");

struct Args {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  uint32_t* tile_sm;
  float* scores;
  uint64_t tiles;
  uint32_t seq, dim, stride;
  bool causal;
  float scale;
};

// rows x dim of src (row-major, dim floats per row) into dst with the padded stride.
__device__ __forceinline__ void stage(float* dst, const float* src, uint32_t rows, uint32_t dim, uint32_t stride) {
  for (uint32_t idx = threadIdx.x; idx < rows * dim; idx += THREADS) dst[idx / dim * stride + idx % dim] = src[idx];
}

// The score's fma chain over d = 0..dim-1 in order from +0 (four steps per shared-memory read).
__device__ __forceinline__ float dot_chain(const float* a, const float* b, uint32_t dim) {
  float acc = 0.0f;
  uint32_t d = 0;
  for (; d + 4 <= dim; d += 4) {
    const float4 x = *reinterpret_cast<const float4*>(a + d);
    const float4 y = *reinterpret_cast<const float4*>(b + d);
    acc = fmaf(x.x, y.x, acc);
    acc = fmaf(x.y, y.y, acc);
    acc = fmaf(x.z, y.z, acc);
    acc = fmaf(x.w, y.w, acc);
  }
  for (; d < dim; ++d) acc = fmaf(a[d], b[d], acc);
  return acc;
}

__global__ void __launch_bounds__(THREADS) attention_kernel(Args a) {
  __shared__ __align__(16) float qs[ROWS * MAX_STRIDE];
  __shared__ __align__(16) float kv[KEYS * MAX_STRIDE];
  const uint32_t warp = threadIdx.x / chunked::WARP, lane = threadIdx.x % chunked::WARP;
  const uint32_t dim = a.dim, seq = a.seq, stride = a.stride;
  const uint32_t row_tiles = seq / ROWS;
  float* s = a.scores + (static_cast<uint64_t>(blockIdx.x) * ROWS + warp) * seq;
  const bool vec = chunked::aligned16(s);
  for (uint64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const uint64_t head_base = tile / row_tiles * seq * dim;
    const uint32_t i0 = static_cast<uint32_t>(tile % row_tiles) * ROWS;
    const uint32_t i = i0 + warp;
    const uint32_t n = a.causal ? i + 1 : seq;         // this row's keys
    const uint32_t keys = a.causal ? i0 + ROWS : seq;  // the widest row's keys: the block's key loop
    __syncthreads();                                   // the previous tile is done with qs and kv
    stage(qs, a.q + head_base + static_cast<uint64_t>(i0) * dim, ROWS, dim, stride);

    for (uint32_t j0 = 0; j0 < keys; j0 += KEYS) {
      __syncthreads();
      stage(kv, a.k + head_base + static_cast<uint64_t>(j0) * dim, KEYS, dim, stride);
      __syncthreads();
      if (j0 + lane < n) s[j0 + lane] = dot_chain(qs + warp * stride, kv + lane * stride, dim) * a.scale;
    }
    __syncwarp();  // scores written by lane j % 32 are read below by other lanes

    const uint32_t segments = chunked::row_split(n, 1).segments;
    const float m = chunked::max_finish(
        s[0], chunked::warp_max<UNROLL>(
                  [&](uint32_t j, uint32_t count, float(&e)[4]) { chunked::load_span(s, j, count, vec, e); }, n, 0,
                  segments, lane));
    __syncwarp();  // every lane has read s[0] before lane 0 overwrites it with p[0]
    const float l = chunked::warp_sum<UNROLL>(
        [&](uint32_t j, uint32_t count, float(&e)[4]) {
          chunked::load_span(s, j, count, vec, e);
          for (uint32_t k = 0; k < count; ++k) e[k] = sdc_expf(e[k] - m);
          chunked::store_span(s, j, count, vec, e);
        },
        n, 0, segments, lane);
    __syncwarp();  // p written by the segment owners is read below by lane j % 32

    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // dims lane + 32c
    for (uint32_t j0 = 0; j0 < keys; j0 += KEYS) {
      __syncthreads();
      stage(kv, a.v + head_base + static_cast<uint64_t>(j0) * dim, KEYS, dim, stride);
      __syncthreads();
      if (j0 >= n) continue;  // warp-uniform
      const uint32_t count = n - j0 < KEYS ? n - j0 : KEYS;
      const float p_lane = lane < count ? s[j0 + lane] : 0.0f;
      for (uint32_t jj = 0; jj < count; ++jj) {
        const float p = __shfl_sync(chunked::FULL_MASK, p_lane, jj);
        const float* vr = kv + jj * stride;
#pragma unroll
        for (uint32_t c = 0; c < 4; ++c) {
          const uint32_t d = lane + chunked::WARP * c;
          if (d < dim) acc[c] = fmaf(p, vr[d], acc[c]);
        }
      }
    }
    // tile t: rows i0..i0+31 of one head, row-major; thread 32 w + l stores the tile's words w dim + d for
    // d = l, l + 32, l + 64, l + 96 below dim (AttentionDevice::thread_of).
    float* o = a.out + tile * (ROWS * dim) + warp * dim;
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) {
      const uint32_t d = lane + chunked::WARP * c;
      if (d < dim) o[d] = acc[c] / l;
    }
    if (threadIdx.x == 0) a.tile_sm[tile] = cuda::sm_id();
  }
}

class AttentionDevice final : public cuda::DeviceProblem {
 public:
  explicit AttentionDevice(const Case& c)
      : heads_(static_cast<uint64_t>(c.shape.dims.at("heads"))),
        seq_(static_cast<uint32_t>(c.shape.dims.at("seq"))),
        dim_(static_cast<uint32_t>(c.shape.dims.at("dim"))),
        causal_(c.shape.dims.at("causal") != 0),
        scale_(1.0f / std::sqrt(static_cast<float>(dim_))),  // the CPU's two IEEE operations
        dist_(c.distribution),
        seed_(c.data_seed) {}

  uint64_t input_bytes(size_t) const override { return heads_ * seq_ * dim_ * sizeof(float); }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS, "simt fp32, one warp per query row, fixed trees (exact)"};
  }
  uint64_t scratch_bytes() const override { return slots() * ROWS * seq_ * sizeof(float); }
  // attention_kernel's store of O: warp w writes the tile's row w, lane l its dims l + 32 c.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    warp = static_cast<int>(offset / dim_);
    lane = static_cast<int>(offset % dim_ % chunked::WARP);
    return true;
  }
  void generate(size_t tensor, void* dst, cudaStream_t stream) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern(static_cast<float*>(dst), heads_ * seq_ * dim_, dist_, input_window(t, dist_),
                                       tensor_key(seed_, t), stream);
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void* scratch,
               cudaStream_t stream) const override {
    const Args a{static_cast<const float*>(in[0]),
                 static_cast<const float*>(in[1]),
                 static_cast<const float*>(in[2]),
                 out,
                 tile_sm,
                 static_cast<float*>(scratch),
                 tiles(),
                 seq_,
                 dim_,
                 stride_for(dim_),
                 causal_,
                 scale_};
    cuda::launch("attention_f32 attention_kernel", attention_kernel, static_cast<unsigned>(slots()), THREADS, stream,
                 a);
  }

 private:
  uint64_t tiles() const { return heads_ * (seq_ / ROWS); }
  uint64_t slots() const { return tiles() < MAX_SLOTS ? tiles() : MAX_SLOTS; }

  uint64_t heads_;
  uint32_t seq_, dim_;
  bool causal_;
  float scale_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<AttentionDevice>(c); }

}  // namespace sdc::attention_f32::SDC_TARGET

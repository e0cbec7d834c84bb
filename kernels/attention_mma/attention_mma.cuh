// The device side of the bf16 tensor-core attention families: input generation in bf16 and one fused
// kernel, parametrized by a family's Spec:
//   Params                          copied by value into the kernels
//   bits(params, tensor, i)         SDC_HD: the bf16 bits of input element i
//   scale(params, head)             SDC_HD: the score scale of a head
//   weight(p)                       SDC_HD: the bf16-representable weight of an unnormalized probability
//   ALGORITHM                       the Engine algorithm text
//
// Work split: one block of 4 warps per tile (64 query rows of one head), grid-striding over the tiles, so
// the block's SM computed the whole tile (every product and the softmax): the SM a miscompare names is
// the one that computed it. The block's slot of global scratch holds its 64 score rows (fp32, seq each)
// and its 64 rows of P (bf16, seq each). Phases, each ended by a block barrier:
//   1. scores: the Q tile is staged in shared memory once, then K in blocks of 64 keys; each 64 x 64
//      block is dim / 16 mma k-steps (score_fragments), scaled, written to the score rows. Causal tiles
//      stop at the diagonal block (keys = i0 + 64); entries past a row's own keys are never read.
//   2. softmax: warp w takes rows 16w..16w+15, one at a time: the leftmost maximum and the fixed exp-sum
//      tree of chunked_reduce.h (a group of one warp, as attention_f32), p written over the scores, then
//      P[j] = weight(p[j]) for j < n and +0 for n <= j < keys (a zero weight adds nothing to an exact sum);
//      l goes to shared memory.
//   3. P . V: the P block (64 x 64) and the V block (64 keys x dim) are staged per key block; warp w
//      accumulates rows 16w..16w+15 over every dim column (pv_a_fragment, pv_b_fragment), then O = acc / l.
// The fragment maps are attention_mma.h's SDC_HD functions, which tests/unit/kernels/test_attention_bf16.cpp runs
// on the host with an emulated mma.sync over every lane. Thread 0 records the SM after the tile is written.
#pragma once

#include <memory>
#include <string>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/shape.h"
#include "src/spec/chunked_reduce.cuh"
#include "kernels/attention_mma/attention_mma.h"

namespace sdc::attention_mma {

constexpr int WARPS = 4;
constexpr int THREADS = WARPS * 32;
constexpr int ROWS_PER_WARP = TILE_ROWS / WARPS;
constexpr int MAX_NI = static_cast<int>(MAX_DIM) / 8;  // n8 fragments of P . V per warp
static_assert(MAX_SEQ <= chunked::MAX_ROW, "a score row must fit the warp's streaming accumulator");
static_assert(TILE_ROWS == KEY_BLOCK && TILE_ROWS == 64, "the score block is 64 x 64 on a 2 x 2 warp grid");

// D = A * B + D on a 16 x 16 bf16 A fragment and a 16 x 8 bf16 B fragment, f32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(SDC_EMU)
  ::sdc::emu::mma(::sdc::emu::MmaType::bf16, d, a, b);
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

struct Args {
  const uint32_t* q;  // bf16 pairs: heads x seq x dim / 2 words
  const uint32_t* k;
  const uint32_t* v;
  float* out;
  uint32_t* tile_sm;
  float* scores;    // per block: 64 x seq fp32
  uint16_t* probs;  // per block: 64 x seq bf16
  uint64_t tiles;
  uint32_t seq, dim;
  bool causal;
};

// 64 rows of `words` 32-bit words (a multiple of 4) from src (rows src_stride words apart) into a
// shared-memory buffer of LD words per row, 16 bytes per copy. Copy idx moves 16-byte column (idx / 8) % vecs of
// row 8 (idx / (8 vecs)) + idx % 8: the 8 lanes of a quarter-warp (one wavefront of 16-byte stores) take 8
// consecutive rows at one column, LD = 4 (mod 32) words apart: the 32 banks once, for every dim. (Row-major
// copies put pieces of two or more rows in a quarter-warp whenever a row is not a multiple of 128 bytes, dims 16,
// 32, 48, 80, 96 and 112, and those pieces shared banks: up to 2 wavefronts for 1.) A warp's pieces pair up at even
// columns (vecs is even): whole 32-byte sectors of global memory, as many as row-major copies read.
__device__ __forceinline__ void stage_rows(uint32_t* dst, const uint32_t* src, uint64_t src_stride, uint32_t words) {
  const uint32_t vecs = words / 4;
  for (uint32_t idx = threadIdx.x; idx < TILE_ROWS * vecs; idx += THREADS) {
    const uint32_t run = idx / 8;  // a run of 8 rows at one column
    const uint32_t row = run / vecs * 8 + idx % 8, col = run % vecs * 4;
    *reinterpret_cast<uint4*>(dst + row * LD + col) = *reinterpret_cast<const uint4*>(src + row * src_stride + col);
  }
}

template <class Spec>
__global__ void __launch_bounds__(THREADS) attention_kernel(Args a, typename Spec::Params sp) {
  __shared__ __align__(16) uint32_t buf[2][TILE_ROWS * LD];
  __shared__ float row_sum[TILE_ROWS];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const uint32_t seq = a.seq, dim = a.dim, words = dim / 2;
  const uint32_t row_tiles = seq / TILE_ROWS;
  const int steps = static_cast<int>(dim / DIM_STEP), ni_count = static_cast<int>(dim / 8);
  float* const s_rows = a.scores + static_cast<uint64_t>(blockIdx.x) * TILE_ROWS * seq;
  uint16_t* const p_rows = a.probs + static_cast<uint64_t>(blockIdx.x) * TILE_ROWS * seq;

  for (uint64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const uint64_t head = tile / row_tiles;
    const uint32_t i0 = static_cast<uint32_t>(tile % row_tiles) * TILE_ROWS;
    const uint64_t head_words = head * seq * words;
    const uint32_t keys = a.causal ? i0 + TILE_ROWS : seq;
    const float scale = Spec::scale(sp, static_cast<int64_t>(head));

    // 1. scores
    __syncthreads();  // the previous tile is done with buf and row_sum
    stage_rows(buf[0], a.q + head_words + static_cast<uint64_t>(i0) * words, words, words);
    for (uint32_t j0 = 0; j0 < keys; j0 += KEY_BLOCK) {
      __syncthreads();  // the previous key block's fragments are read
      stage_rows(buf[1], a.k + head_words + static_cast<uint64_t>(j0) * words, words, words);
      __syncthreads();
      float acc[2][4][4] = {};
      for (int step = 0; step < steps; ++step) {
        uint32_t af[2][4], bf[4][2];
        score_fragments(buf[0], buf[1], warp, step, lane, af, bf);
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) mma_bf16(acc[mi][ni], af[mi], bf[ni]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int c = 0; c < 4; ++c)
            s_rows[static_cast<uint64_t>(score_row(warp, mi, lane, c)) * seq + j0 + score_key(warp, ni, lane, c)] =
                acc[mi][ni][c] * scale;
    }
    __syncthreads();  // every score row is written (global memory, visible to the block after the barrier)

    // 2. softmax, one warp per row
    for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
      const int r = warp * ROWS_PER_WARP + rr;
      const uint32_t n = a.causal ? i0 + r + 1 : seq;
      float* s = s_rows + static_cast<uint64_t>(r) * seq;
      const bool vec = chunked::aligned16(s);
      const uint32_t segments = chunked::row_split(n, 1).segments;
      const float m = chunked::max_finish(
          s[0], chunked::warp_max<2>(
                    [&](uint32_t j, uint32_t count, float(&e)[4]) { chunked::load_span(s, j, count, vec, e); }, n, 0,
                    segments, static_cast<uint32_t>(lane)));
      __syncwarp();  // every lane has read s[0] before it is overwritten with p[0]
      const float l = chunked::warp_sum<2>(
          [&](uint32_t j, uint32_t count, float(&e)[4]) {
            chunked::load_span(s, j, count, vec, e);
            for (uint32_t k = 0; k < count; ++k) e[k] = sdc_expf(e[k] - m);
            chunked::store_span(s, j, count, vec, e);
          },
          n, 0, segments, static_cast<uint32_t>(lane));
      __syncwarp();  // p written by the segment owners is read below by other lanes
      uint16_t* p = p_rows + static_cast<uint64_t>(r) * seq;
      for (uint32_t j = static_cast<uint32_t>(lane); j < keys; j += 32)
        p[j] = j < n ? bf16_bits(Spec::weight(s[j])) : uint16_t{0};
      if (lane == 0) row_sum[r] = l;
    }
    __syncthreads();  // every P row and row_sum is written

    // 3. P . V
    float acc[MAX_NI][4] = {};
    for (uint32_t j0 = 0; j0 < keys; j0 += KEY_BLOCK) {
      stage_rows(buf[0], reinterpret_cast<const uint32_t*>(p_rows + j0), seq / 2, KEY_BLOCK / 2);
      stage_rows(buf[1], a.v + head_words + static_cast<uint64_t>(j0) * words, words, words);
      __syncthreads();
#pragma unroll
      for (int step = 0; step < KEY_BLOCK / 16; ++step) {
        uint32_t af[4];
        pv_a_fragment(buf[0], warp, step, lane, af);
#pragma unroll
        for (int ni = 0; ni < MAX_NI; ++ni) {
          if (ni >= ni_count) break;
          uint32_t bf[2];
          pv_b_fragment(reinterpret_cast<const uint16_t*>(buf[1]), step, ni, lane, bf);
          mma_bf16(acc[ni], af, bf);
        }
      }
      __syncthreads();  // the block's fragments are read before the next stage overwrites them
    }
    // tile t: 64 rows x dim, row-major (the CPU path's offsets). Lane l of warp w stores its D fragments' elements:
    // rows 16 w + l / 4 (+ 8), columns 8 ni + 2 (l % 4) (+ 1) (AttentionDevice::thread_of), the two adjacent columns
    // of a row in one 8-byte store (dim is even: aligned), so that a warp's store fills each sector it touches.
    float* o = a.out + tile * TILE_ROWS * dim;
#pragma unroll
    for (int ni = 0; ni < MAX_NI; ++ni) {
      if (ni >= ni_count) break;
#pragma unroll
      for (int c = 0; c < 4; c += 2) {
        const int row = pv_row(warp, lane, c);
        const float l = row_sum[row];
        *reinterpret_cast<float2*>(&o[static_cast<uint64_t>(row) * dim + pv_col(ni, lane, c)]) =
            make_float2(acc[ni][c] / l, acc[ni][c + 1] / l);
      }
    }
    if (threadIdx.x == 0) a.tile_sm[tile] = cuda::sm_id();
  }
}

template <class Spec>
__global__ void generate_kernel(uint16_t* dst, uint64_t n, typename Spec::Params sp, uint32_t tensor) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = Spec::bits(sp, tensor, i);
}

template <class Spec>
class AttentionDevice final : public cuda::DeviceProblem {
 public:
  AttentionDevice(const Case& c, typename Spec::Params params)
      : heads_(static_cast<uint64_t>(dim(c, "heads"))),
        seq_(static_cast<uint32_t>(dim(c, "seq"))),
        dim_(static_cast<uint32_t>(dim(c, "dim"))),
        causal_(dim(c, "causal") != 0),
        params_(params) {
    const int sms = cuda::sm_count();
    // Four resident blocks per SM (35 KiB of shared memory and 128 threads each): every SM is busy
    // whenever the case has that many tiles, and scratch stays bounded by the GPU, not by the case.
    const uint64_t tiles = heads_ * (seq_ / TILE_ROWS), most = 4 * static_cast<uint64_t>(sms > 0 ? sms : 1);
    slots_ = tiles < most ? tiles : most;
  }

  uint64_t input_bytes(size_t) const override { return heads_ * seq_ * dim_ * sizeof(uint16_t); }
  cuda::Engine engine() const override { return {cuda::OWN_KERNELS, Spec::ALGORITHM}; }
  uint64_t scratch_bytes() const override { return slots_ * TILE_ROWS * seq_ * (sizeof(float) + sizeof(uint16_t)); }
  // The store of O (pv_row, pv_col): element (row, col) of the tile is warp row / 16's, lane 4 (row % 8) + (col % 8)
  // / 2.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const int row = static_cast<int>(offset / dim_), col = static_cast<int>(offset % dim_);
    warp = row / ROWS_PER_WARP;
    lane = (row % 8) * 4 + (col % 8) / 2;
    return true;
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const uint64_t n = heads_ * seq_ * dim_;
    cuda::launch("attention_mma generate_kernel", generate_kernel<Spec>, cuda::grid_for(n, 256), 256, s,
                 static_cast<uint16_t*>(dst), n, params_, static_cast<uint32_t>(tensor));
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void* scratch, cudaStream_t s) const override {
    float* scores = static_cast<float*>(scratch);
    const Args a{static_cast<const uint32_t*>(in[0]),
                 static_cast<const uint32_t*>(in[1]),
                 static_cast<const uint32_t*>(in[2]),
                 out,
                 tile_sm,
                 scores,
                 reinterpret_cast<uint16_t*>(scores + slots_ * TILE_ROWS * seq_),
                 heads_ * (seq_ / TILE_ROWS),
                 seq_,
                 dim_,
                 causal_};
    cuda::launch("attention_mma attention_kernel", attention_kernel<Spec>, static_cast<unsigned>(slots_), THREADS, s, a,
                 params_);
  }

 private:
  uint64_t heads_;
  uint32_t seq_, dim_;
  bool causal_;
  typename Spec::Params params_;
  uint64_t slots_ = 1;
};

}  // namespace sdc::attention_mma

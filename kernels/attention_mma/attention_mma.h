// What the bf16 tensor-core attention families (attention_bf16_exactint, attention_bf16) share between
// host and device: the geometry, the fp32 softmax of one score row, the weights that enter P . V, and the
// mma.sync fragment maps that the kernel (attention_mma.cuh) and its host emulation (the unit test) use.
//
// Shapes: Q, K, V are heads x seq x dim row-major bf16 (tensors 0, 1, 2). Output tiles are 64 query rows
// of one head (64 x dim fp32, row-major), numbered head-major: tile t is head t / (seq / 64), rows
// (t % (seq / 64)) * 64 .. + 64. seq is a multiple of 64, dim a multiple of 16 (one mma k-step) up to 128.
//
// Query row i of head h, with n = causal ? i + 1 : seq keys (keys j >= n take part in no operation):
//   s[j] = (Q[h][i] . K[h][j]) * scale(h)        the dot product on tensor cores (fp32 accumulators)
//   m    = fold_max(s[0..n))                      fpmath.h, left fold
//   p[j] = sdc_expf(s[j] - m)                     in [0, 1]: the row's largest score gives 1
//   l    = pairwise_sum(p[0..n))                  fpmath.h, fixed tree; l >= 1
//   w[j] = weight(p[j])                           a value exactly representable in bf16
//   O[h][i][d] = (sum_j w[j] * V[h][j][d]) / l    the sum on tensor cores, then one IEEE division
// weight() is the family's: a fixed-point grid in the exact-integer family, bf16 rounding in the recorded
// one. P is not normalized before it is weighted (as flash attention keeps it), so the largest weight is 1.
#pragma once

#include "src/spec/fpmath.h"
#include "src/spec/generator.h"

namespace sdc::attention_mma {

constexpr int TILE_ROWS = 64;      // query rows per tile (one block)
constexpr int KEY_BLOCK = 64;      // keys per staged block of K, V and P
constexpr int64_t MAX_DIM = 128;   // a warp holds dim / 8 <= 16 n8 accumulator fragments of P . V
constexpr int64_t MAX_SEQ = 8192;  // the score row of one query fits chunked_reduce.h's streaming sum
constexpr int64_t DIM_STEP = 16;   // one m16n8k16 k-step of Q . K^T

// ---- bf16 ----

SDC_HD float bf16_value(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// The bf16 nearest to a finite x, ties to even (the upper half of the fp32 bits after rounding).
SDC_HD uint16_t bf16_round(float x) {
  const uint32_t u = float_bits(x);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The bf16 bits of x when x is exactly representable (its low 16 bits are zero).
SDC_HD uint16_t bf16_bits(float x) { return static_cast<uint16_t>(float_bits(x) >> 16); }

// ---- the exact-integer weight grid ----

constexpr int GRID_BITS = 8;  // w = k / 2^8, k in 0..256

// round-to-nearest-even(p * 2^8) / 2^8, capped at 1: the multiplication by 2^8 is exact, adding and
// subtracting 1.5 * 2^23 rounds a value in [0, 2^22] to an integer (the sum's ulp is 1, ties to even), the
// division by 2^8 is exact. The cap makes w <= 1 a property of the grid, not of sdc_expf's accuracy at 0.
// k <= 255 has at most 8 significant bits and 256 is a power of two: every w is a bf16. A NaN (only from
// a corrupted input) stays NaN, so it reaches the output.
SDC_HD float grid_weight(float p) {
  const float shifter = 12582912.0f;
  const float k = (p * 256.0f + shifter) - shifter;
  const float w = k * 0.00390625f;
  return w > 1.0f ? 1.0f : w;
}

// ---- mma.sync m16n8k16 fragments (PTX ISA, "Matrix fragments for mma.m16n8k16", bf16) ----
// In 32-bit words of two consecutive k (low half = lower k), as kernels/exactint/exactint_mma.cuh states
// them: groupID g = lane / 4, threadID_in_group t = lane % 4.
//   A register r (16 x 16): row g + 8 * (r & 1), word (r >> 1) * 4 + t
//   B register r (16 x 8):  column g,            word r * 4 + t
//   D element c (16 x 8):   row g + 8 * (c >> 1), column 2 * t + (c & 1)

SDC_HD int a_row(int lane, int r) { return lane / 4 + 8 * (r & 1); }
SDC_HD int a_word(int lane, int r) { return (r >> 1) * 4 + lane % 4; }
SDC_HD int b_col(int lane) { return lane / 4; }
SDC_HD int b_word(int lane, int r) { return r * 4 + lane % 4; }
SDC_HD int d_row(int lane, int c) { return lane / 4 + 8 * (c >> 1); }
SDC_HD int d_col(int lane, int c) { return 2 * (lane % 4) + (c & 1); }

// Shared-memory staging: 64 rows of up to MAX_DIM bf16 (MAX_DIM / 2 words) at LD words per row. LD = 4
// mod 32, so the 8 rows x 4 words of one fragment load fall in 32 different banks; LD * 4 bytes is a
// multiple of 16 (uint4 stores). V is read as halfwords: LD_HALF = 2 * LD per row.
constexpr int LD = static_cast<int>(MAX_DIM) / 2 + 4;
constexpr int LD_HALF = 2 * LD;

// Q . K^T of one 64 x 64 (query x key) block: warp w owns rows (w >> 1) * 32 .. + 32 and keys
// (w & 1) * 32 .. + 32 as 2 m16 x 4 n8 fragments. qs and ks hold 64 rows each, dim along the row;
// step is the k16-step (words step * 8 .. + 8).
SDC_HD void score_fragments(const uint32_t* qs, const uint32_t* ks, int warp, int step, int lane, uint32_t (&a)[2][4],
                            uint32_t (&b)[4][2]) {
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
  for (int mi = 0; mi < 2; ++mi)
    for (int r = 0; r < 4; ++r) a[mi][r] = qs[(wm + mi * 16 + a_row(lane, r)) * LD + step * 8 + a_word(lane, r)];
  for (int ni = 0; ni < 4; ++ni)
    for (int r = 0; r < 2; ++r) b[ni][r] = ks[(wn + ni * 8 + b_col(lane)) * LD + step * 8 + b_word(lane, r)];
}

// Where score fragment (mi, ni) element c of a lane lies in the 64 x 64 block: (row, key).
SDC_HD int score_row(int warp, int mi, int lane, int c) { return (warp >> 1) * 32 + mi * 16 + d_row(lane, c); }
SDC_HD int score_key(int warp, int ni, int lane, int c) { return (warp & 1) * 32 + ni * 8 + d_col(lane, c); }

// P . V of one key block: warp w owns output rows w * 16 .. + 16 and every dim column (dim / 8 n8
// fragments). ps holds the 64 x 64 block of P (32 words per row), vs the block's 64 V rows as halfwords.
SDC_HD void pv_a_fragment(const uint32_t* ps, int warp, int step, int lane, uint32_t (&a)[4]) {
  for (int r = 0; r < 4; ++r) a[r] = ps[(warp * 16 + a_row(lane, r)) * LD + step * 8 + a_word(lane, r)];
}

// B's word r holds keys k, k + 1 (k = step * 16 + 2 * word) of column d: V is key-major, so the two halves
// come from two rows (the transpose the B operand needs, done in the load).
SDC_HD void pv_b_fragment(const uint16_t* vs, int step, int ni, int lane, uint32_t (&b)[2]) {
  const int d = ni * 8 + b_col(lane);
  for (int r = 0; r < 2; ++r) {
    const int k = step * 16 + 2 * b_word(lane, r);
    b[r] = static_cast<uint32_t>(vs[k * LD_HALF + d]) | (static_cast<uint32_t>(vs[(k + 1) * LD_HALF + d]) << 16);
  }
}

SDC_HD int pv_row(int warp, int lane, int c) { return warp * 16 + d_row(lane, c); }
SDC_HD int pv_col(int ni, int lane, int c) { return ni * 8 + d_col(lane, c); }

}  // namespace sdc::attention_mma

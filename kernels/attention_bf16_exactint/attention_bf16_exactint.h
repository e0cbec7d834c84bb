// attention_bf16_exactint: attention forward on bf16 tensor cores (mma.sync m16n8k16, fp32 accumulators),
// exact-integer mode. The computation and the geometry are kernels/attention_mma/attention_mma.h's with
//   scale(h)  = 2^-(qb(h) + kb(h) + shift)          an exact power of two
//   weight(p) = grid_weight(p) = rne(p * 2^8) / 2^8  capped at 1: k / 256, k in 0..256
// and inputs for which both tensor-core products are exact in any order; this header proves that.
//
// The pattern, for head h (block exponents qb, kb, vb drawn per head from the windows, as
// kernels/exactint/exactint.h draws them per tile):
//   Q[h][i][d] = (-1)^s * m * 2^(qb + eq - 7),  m in [128, 255] (a full 8-bit significand), eq in [0, q_count)
//   K[h][j][d] = (-1)^s * 2^(kb + ek),           ek in [0, k_count)
//   V[h][j][d] = (-1)^s * 2^(vb + ev),           ev in [0, v_count)
//
// (S) Q . K^T. Every product is an integer multiple of 2^us, us = qb - 7 + kb, of magnitude at most
//     255 * 2^Ds * 2^us with Ds = (q_count - 1) + (k_count - 1). Any partial sum of the dim products of one
//     score, in any order or grouping, is a multiple of 2^us below dim * 255 * 2^Ds * 2^us. This is the
//     bound (*) of exactint.h with K = dim and bf16's Format (kernels/exactint/formats.h: p = 8, W = 24): Ds is
//     exactint::exponent_budget(FORMAT, dim), largest for the smallest dim. dim = 16: 4080 * 2^12 =
//     16711680 < 2^24 (Ds = 12, 7 exponents of Q and 7 of K); dim = 128: 32640 * 2^9 = 16711680 < 2^24
//     (Ds = 9: 6 and 5). So every partial sum is exact in a 24-bit accumulator and s is exact before the
//     scale. The windows are gemm_bf16_exactint's (Q's leading exponents in [-56, 56], K's in [-56, 48]):
//     inputs are normal bf16, us >= -56 - 7 - 56 = -119 >= -126 and sums stay below 2^(24 + 97) = 2^121.
// (T) The scale. qb + kb lies in [-112, 104] and shift in [1, 16] (score_shift below), so the scale's
//     exponent lies in [-120, 111]: pow2f builds it exactly. The scaled score is a multiple of
//     2^(us - qb - kb - shift) = 2^(-7 - shift) >= 2^-23 below 2^(24 - 7 - shift) <= 2^16: a normal fp32
//     times a power of two that keeps it normal, so the product is exact. shift is chosen from dim and the
//     exponent counts so that the scaled scores' spread is about 1 to 4 (their rms lies in [1, 2) up to
//     the shape of the distribution): the softmax is neither one-hot nor flat, and P takes many values
//     of the grid (tests/unit/kernels/test_attention_bf16.cpp measures it on every battery case).
// (P) P . V. Every weight is k * 2^-8 with 0 <= k <= 256, every V a power of two, so every product is an
//     integer multiple of 2^(vb - 8) of magnitude at most 256 * 2^Dv * 2^(vb - 8), Dv = v_count - 1. A row
//     has n <= seq keys, so any partial sum, in any order, is a multiple of 2^(vb - 8) below
//     seq * 2^(8 + Dv) * 2^(vb - 8). v_budget(seq) is the largest Dv with seq * 2^(8 + Dv) < 2^24: exact in
//     24 bits. seq = 64: Dv = 9; seq = 1024: Dv = 5; MAX_SEQ = 8192: 8192 * 2^10 = 2^23 < 2^24, Dv = 2
//     (and seq up to 65535 would still admit Dv = 0). V's window [-40, 40]: the unit 2^(vb - 8) >= 2^-48,
//     sums below 2^(16 + 40) and O = sum / l with 1 <= l <= seq (p = 1 at the maximum, every p >= 0) is a
//     normal number or zero.
// Largest shapes: dim 16..128 (a multiple of 16), seq 64..8192 (a multiple of 64); the bounds above hold
// for every such shape, causal or not (a causal row has fewer keys).
#pragma once

#include "kernels/attention_mma/attention_mma.h"
#include "kernels/exactint/exactint.h"
#include "kernels/exactint/formats.h"

namespace sdc::attention_bf16_exactint {

inline constexpr exactint::Format FORMAT = exactint::formats::bf16::FORMAT;
constexpr int V_EXP_MIN = -40, V_EXP_MAX = 40;
constexpr int64_t MAX_SEQ = attention_mma::MAX_SEQ;
constexpr int64_t MAX_DIM = attention_mma::MAX_DIM;

// The largest Dv >= 0 with seq * 2^(8 + Dv) < 2^24 (P . V bound (P)), or -1 when there is none.
SDC_HD constexpr int v_budget(int64_t seq) {
  const int64_t limit = int64_t{1} << 24;
  if (seq < 1 || (seq << 8) >= limit) return -1;
  int d = 0;
  while ((seq << (8 + d + 1)) < limit) ++d;
  return d;
}
static_assert(v_budget(64) == 9 && v_budget(1024) == 5 && v_budget(MAX_SEQ) == 2);
static_assert(exactint::exponent_budget(FORMAT, 16) == 12 && exactint::exponent_budget(FORMAT, MAX_DIM) == 9);

struct Pattern {
  int64_t seq, dim;
  int q_count, k_count, v_count;
  int shift;  // scale(h) = 2^-(qb(h) + kb(h) + shift)
  bool walk;  // mantissa_walk: Q's fraction bits walk along d; uniform: they are random
  uint64_t key_q, key_k, key_v, key_scale;
};

// shift = floor(log2(rms)) for the rms of an unscaled score in units of 2^(qb + kb): a score is a sum of
// dim terms of random sign with E[(m / 128)^2] ~ 7/3 and E[4^e] = (4^count - 1) / (3 * count) per
// operand. Integer arithmetic (dim <= 128, counts <= 7: no overflow), so it is the same everywhere.
constexpr int score_shift(int64_t dim, int q_count, int k_count) {
  const int64_t sq = (int64_t{1} << (2 * q_count)) - 1, sk = (int64_t{1} << (2 * k_count)) - 1;
  const int64_t mean_square = dim * 7 * sq * sk / (27 * q_count * k_count);
  int log2 = 0;
  while ((int64_t{1} << (log2 + 1)) <= mean_square) ++log2;
  return log2 / 2;
}

// (T) for every dim the family admits.
constexpr bool shifts_ok() {
  for (int64_t dim = attention_mma::DIM_STEP; dim <= MAX_DIM; dim += attention_mma::DIM_STEP) {
    const int ds = exactint::exponent_budget(FORMAT, dim);
    const int s = score_shift(dim, ds - ds / 2 + 1, ds / 2 + 1);
    if (s < 1 || s > 16 || FORMAT.a_exp_max - FORMAT.a_exp_min < ds - ds / 2 ||
        FORMAT.b_exp_max - FORMAT.b_exp_min < ds / 2)
      return false;
  }
  return true;
}
static_assert(shifts_ok(), "(T): shift in [1, 16] and the windows hold every exponent span");

// Only for a validated shape (exponent_budget(FORMAT, dim) >= 0, v_budget(seq) >= 0).
inline Pattern make_pattern(int64_t seq, int64_t dim, uint64_t seed, bool walk) {
  const int ds = exactint::exponent_budget(FORMAT, dim);
  Pattern p{};
  p.seq = seq;
  p.dim = dim;
  p.q_count = ds - ds / 2 + 1;
  p.k_count = ds / 2 + 1;
  p.v_count = v_budget(seq) + 1;
  p.shift = score_shift(dim, p.q_count, p.k_count);
  p.walk = walk;
  p.key_q = tensor_key(seed, 0);
  p.key_k = tensor_key(seed, 1);
  p.key_v = tensor_key(seed, 2);
  p.key_scale = tensor_key(seed, 3);
  return p;
}

SDC_HD int q_block_exp(const Pattern& p, int64_t head) {
  return exactint::block_exp(p.key_scale, 3 * head, FORMAT.a_exp_min, FORMAT.a_exp_max, p.q_count);
}
SDC_HD int k_block_exp(const Pattern& p, int64_t head) {
  return exactint::block_exp(p.key_scale, 3 * head + 1, FORMAT.b_exp_min, FORMAT.b_exp_max, p.k_count);
}
SDC_HD int v_block_exp(const Pattern& p, int64_t head) {
  return exactint::block_exp(p.key_scale, 3 * head + 2, V_EXP_MIN, V_EXP_MAX, p.v_count);
}

// Element `index` = (head * seq + row) * dim + d of tensor 0 (q), 1 (k) or 2 (v).
SDC_HD exactint::Element element(const Pattern& p, uint32_t tensor, uint64_t index) {
  const int64_t head = static_cast<int64_t>(index / static_cast<uint64_t>(p.seq * p.dim));
  const uint64_t key = tensor == 0 ? p.key_q : tensor == 1 ? p.key_k : p.key_v;
  const uint64_t h = element_hash(key, index);
  const auto pick = [h](int count) { return static_cast<int>((h >> 32) % static_cast<uint64_t>(count)); };
  if (tensor == 1) return {static_cast<uint32_t>(h & 1u), k_block_exp(p, head) + pick(p.k_count), 0u};
  if (tensor == 2) return {static_cast<uint32_t>(h & 1u), v_block_exp(p, head) + pick(p.v_count), 0u};
  uint32_t frac = static_cast<uint32_t>(h >> 1) & 0x7fu;
  if (p.walk) {  // walking one, then walking zero: each of the 7 fraction bits set alone and cleared alone
    const uint32_t bit = 1u << static_cast<uint32_t>(index % 7u);
    frac = ((index / 7u) & 1u) == 0 ? bit : (0x7fu ^ bit);
  }
  return {static_cast<uint32_t>(h & 1u), q_block_exp(p, head) + pick(p.q_count), frac};
}

SDC_HD uint16_t element_bits(const Pattern& p, uint32_t tensor, uint64_t index) {
  return exactint::encode<exactint::formats::bf16>(element(p, tensor, index));
}

SDC_HD float score_scale(const Pattern& p, int64_t head) {
  return pow2f(-(q_block_exp(p, head) + k_block_exp(p, head) + p.shift));
}

}  // namespace sdc::attention_bf16_exactint

// The exact-integer GEMM pattern shared by the tensor-core families gemm_{bf16,f16,tf32,fp8}_exactint
// (docs/design.md, the determinism contract, mode exact-integer). formats.h fixes each format's Format
// (significand width, accumulator bound, exponent windows) and proves its numbers; this header defines the
// pattern and the general argument.
//
// Shapes: A is M x K row-major, B is N x K row-major (both contiguous in k: the "TN" layout that fp8
// tensor cores require), C[i][j] = sum_k A[i][k] * B[j][k] is fp32, M x N. Output tiles are 64 x 64
// blocks of C numbered row-major over the block grid; tile t holds C[r0 + r][c0 + c] at offset r * 64 + c.
// Tensors: 0 = a, 1 = b. The block scales use generator tensor ids 2 (A's row blocks) and 3 (B's column
// blocks); they are not inputs.
//
// The pattern, for the tile of row block R and column block Q:
//   A[i][k] = (-1)^s * m * 2^(e - (p-1)),  m in [2^(p-1), 2^p - 1] (full p-bit significand),
//             e = a_block(R) + ea,  ea in [0, a_count - 1]
//   B[j][k] = (-1)^s * 2^(b_block(Q) + eb),  eb in [0, b_count - 1]
// Every product is an integer multiple of the tile's unit 2^u, u = a_block(R) - (p-1) + b_block(Q), and
//   |A[i][k] * B[j][k]| <= (2^p - 1) * 2^(a_count - 1) * 2^(b_count - 1) * 2^u = (2^p - 1) * 2^D * 2^u
// with D = (a_count - 1) + (b_count - 1) the tile's exponent budget. Any partial sum, of any subset of the
// K products of one output in any order or grouping (split-K included), is an integer multiple of 2^u
// and its magnitude is at most the sum of all K magnitudes:
//   |partial| <= K * (2^p - 1) * 2^D * 2^u < 2^(W + u)                                             (*)
// where D is the largest budget that makes (*) strict (exponent_budget below). An accumulator keeping W
// significand bits holds every integer multiple of 2^u below 2^(W + u) exactly, whatever it aligns to
// and however it truncates; so every product and partial sum is exact and every correct device, order
// and algorithm produces the exact sum. formats.h proves the remaining conditions from each format's
// windows: every input is a normal number of the narrow type, u >= -126 (a nonzero partial sum is at
// least 2^-126: a normal fp32 even on hardware that flushes subnormals) and W + u <= 128 (no sum
// reaches the fp32 overflow threshold).
#pragma once

#include "src/spec/generator.h"

namespace sdc::exactint {

constexpr int TILE = 64;
// K is a multiple of 32: one m16n8k32 fp8 step, two bf16/fp16 k16 steps, four tf32 k8 steps.
constexpr int64_t K_STEP = 32;
constexpr int64_t MAX_MN = 16384;
constexpr int64_t MAX_TENSOR_ELEMENTS = int64_t{1} << 28;  // 1 GiB of host floats per input

struct Format {
  int significand_bits;  // p, the leading one included
  int bound_bits;        // W: accumulator significand bits that every partial sum must fit in
  int a_exp_min;         // window of A's leading-bit exponents over all tiles (e in the pattern)
  int a_exp_max;
  int b_exp_min;  // window of B's exponents over all tiles
  int b_exp_max;
};

// The largest D >= 0 with K * (2^p - 1) * 2^D < 2^W, or -1 when not even D = 0 satisfies (*).
SDC_HD constexpr int exponent_budget(const Format& f, int64_t k) {
  const int64_t limit = int64_t{1} << f.bound_bits;
  const int64_t worst = k * ((int64_t{1} << f.significand_bits) - 1);  // K <= 2^30, p <= 11: no overflow
  if (k < 1 || worst >= limit) return -1;
  int d = 0;
  while ((worst << (d + 1)) < limit) ++d;
  return d;
}

// The largest K (a multiple of K_STEP) that (*) admits with D = 0.
constexpr int64_t max_k(const Format& f) {
  int64_t k = K_STEP;
  while (exponent_budget(f, k + K_STEP) >= 0) k += K_STEP;
  return k;
}

// What formats.h proves from each format's windows, checked again by the compiler: u >= -126 and
// W + u <= 128 for every tile, and each window holds the widest span any K can ask for (at K = K_STEP).
constexpr bool windows_ok(const Format& f) {
  const int d = exponent_budget(f, K_STEP);
  return f.a_exp_min - (f.significand_bits - 1) + f.b_exp_min >= -126 &&
         f.bound_bits + f.a_exp_max - (f.significand_bits - 1) + f.b_exp_max <= 128 &&
         f.a_exp_max - f.a_exp_min >= d - d / 2 && f.b_exp_max - f.b_exp_min >= d / 2;
}

// One case's pattern: everything an element needs, copied by value into kernels.
struct Pattern {
  Format f;
  int64_t k;
  int a_count;  // exponents per tile of A: ea in [0, a_count - 1]
  int b_count;
  bool walk;  // mantissa_walk: A's fraction bits walk; uniform: they are random
  uint64_t key_a, key_b, key_scale_a, key_scale_b;
};

// Splits the budget: A gets the larger half (its significands make its exponents the more valuable).
// Call only with exponent_budget(f, k) >= 0.
SDC_HD Pattern make_pattern(const Format& f, int64_t k, uint64_t seed, bool walk) {
  const int d = exponent_budget(f, k);
  Pattern p{};
  p.f = f;
  p.k = k;
  p.a_count = d - d / 2 + 1;
  p.b_count = d / 2 + 1;
  p.walk = walk;
  p.key_a = tensor_key(seed, 0);
  p.key_b = tensor_key(seed, 1);
  p.key_scale_a = tensor_key(seed, 2);
  p.key_scale_b = tensor_key(seed, 3);
  return p;
}

// An element: value = (-1)^sign * (2^(p-1) + frac) * 2^(exp - (p-1)); frac has p - 1 bits (0 for B).
struct Element {
  uint32_t sign;
  int exp;
  uint32_t frac;
};

// The smallest exponent of a block, spread over the window so that magnitudes change from tile to tile;
// the block's largest exponent (block + count - 1) stays inside the window.
SDC_HD int block_exp(uint64_t key, int64_t block, int lo, int hi, int count) {
  const uint64_t choices = static_cast<uint64_t>(hi - lo - (count - 1) + 1);
  return lo + static_cast<int>(element_hash(key, static_cast<uint64_t>(block)) % choices);
}

SDC_HD int a_block_exp(const Pattern& p, int64_t row_block) {
  return block_exp(p.key_scale_a, row_block, p.f.a_exp_min, p.f.a_exp_max, p.a_count);
}
SDC_HD int b_block_exp(const Pattern& p, int64_t col_block) {
  return block_exp(p.key_scale_b, col_block, p.f.b_exp_min, p.f.b_exp_max, p.b_count);
}

// A's element `index` = i * K + k.
SDC_HD Element a_element(const Pattern& p, uint64_t index) {
  const uint64_t h = element_hash(p.key_a, index);
  const int fb = p.f.significand_bits - 1;
  const uint32_t all = (1u << fb) - 1;
  uint32_t frac = static_cast<uint32_t>(h >> 1) & all;
  if (p.walk) {  // walking one, then walking zero, along k: every fraction bit set alone and cleared alone
    const uint32_t bit = 1u << static_cast<uint32_t>(index % static_cast<uint64_t>(fb));
    frac = ((index / static_cast<uint64_t>(fb)) & 1u) == 0 ? bit : (all ^ bit);
  }
  const int64_t row = static_cast<int64_t>(index / static_cast<uint64_t>(p.k));
  const int e = a_block_exp(p, row / TILE) + static_cast<int>((h >> 32) % static_cast<uint64_t>(p.a_count));
  return {static_cast<uint32_t>(h & 1u), e, frac};
}

// B's element `index` = j * K + k: a signed power of two.
SDC_HD Element b_element(const Pattern& p, uint64_t index) {
  const uint64_t h = element_hash(p.key_b, index);
  const int64_t row = static_cast<int64_t>(index / static_cast<uint64_t>(p.k));
  const int e = b_block_exp(p, row / TILE) + static_cast<int>((h >> 32) % static_cast<uint64_t>(p.b_count));
  return {static_cast<uint32_t>(h & 1u), e, 0u};
}

// The element as an fp32 value (exact: p <= 24 and the windows keep exp in fp32's normal range).
SDC_HD float element_value(const Format& f, Element e) {
  return float_with_exponent(e.sign, e.exp, e.frac << (24 - f.significand_bits));
}

SDC_HD Element tensor_element(const Pattern& p, uint32_t tensor, uint64_t index) {
  return tensor == 0 ? a_element(p, index) : b_element(p, index);
}

// The tile's unit: every product of the tile is an integer multiple of 2^tile_unit.
SDC_HD int tile_unit(const Pattern& p, int64_t row_block, int64_t col_block) {
  return a_block_exp(p, row_block) - (p.f.significand_bits - 1) + b_block_exp(p, col_block);
}

// The narrow input types of the tensor cores. Each format's traits type (FormatTraits below; the table of
// formats is formats.h) names one; both engines, mma.sync and cuBLASLt, and the CPU side read the same traits.
enum class Narrow { bf16, f16, tf32, e4m3 };

// The name of a narrow type in descriptions.
constexpr const char* narrow_name(Narrow t) {
  switch (t) {
    case Narrow::bf16: return "bf16";
    case Narrow::f16: return "fp16";
    case Narrow::tf32: return "tf32";
    case Narrow::e4m3: return "fp8 e4m3";
  }
  return "?";
}

// A format's traits type F (formats.h: one line each):
//   Storage      the narrow element's bits (uint16_t, uint32_t for tf32, uint8_t)
//   TYPE         its Narrow; NAME its name in descriptions ("bf16")
//   EXP_BIAS     the exponent field's bias; the field ends at bit EXP_SHIFT (the sign is the top bit)
//   FORMAT       the exact-integer pattern's numbers: p, W and the windows, which formats.h proves
//   MAX_K        the largest K the format's bound admits
// (Class-type template arguments would say FORMAT in one argument, but nvcc's host stubs cannot spell them.)
template <class S, Narrow T, int BIAS, int SHIFT, int P, int W, int A_MIN, int A_MAX, int B_MIN, int B_MAX>
struct FormatTraits {
  using Storage = S;
  static constexpr Narrow TYPE = T;
  static constexpr const char* NAME = narrow_name(T);
  static constexpr int EXP_BIAS = BIAS, EXP_SHIFT = SHIFT;
  static constexpr Format FORMAT{P, W, A_MIN, A_MAX, B_MIN, B_MAX};
  static constexpr int64_t MAX_K = max_k(FORMAT);
};

// F's bits of an element: sign, exponent biased by EXP_BIAS, then the top p - 1 fraction bits.
template <class F>
SDC_HD typename F::Storage encode(Element e) {
  constexpr int SIGN_SHIFT = 8 * static_cast<int>(sizeof(typename F::Storage)) - 1;
  constexpr int FRAC_SHIFT = F::EXP_SHIFT - (F::FORMAT.significand_bits - 1);
  static_assert(FRAC_SHIFT >= 0 && F::EXP_SHIFT < SIGN_SHIFT, "the fields fit the storage");
  return static_cast<typename F::Storage>(
      (e.sign << SIGN_SHIFT) | (static_cast<uint32_t>(e.exp + F::EXP_BIAS) << F::EXP_SHIFT) | (e.frac << FRAC_SHIFT));
}

// The device's input element `index` of tensor 0 (a) or 1 (b), in F's encoding.
template <class F>
SDC_HD typename F::Storage element_bits(const Pattern& p, uint32_t tensor, uint64_t index) {
  return encode<F>(tensor_element(p, tensor, index));
}

}  // namespace sdc::exactint

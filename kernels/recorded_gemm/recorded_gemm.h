// The recorded tensor-core GEMMs (gemm_bf16, gemm_f16): C = A * B^T on full-precision random bf16 or fp16
// operands with fp32 accumulation. A is M x K, B is N x K, both row-major (K-contiguous); C is fp32 M x N
// in 64 x 64 tiles (the exact-integer GEMMs' geometry, kernels/exactint/exactint.h).
//
// No golden can be computed off the device: tensor cores align, truncate and group the products of one
// instruction in ways that differ between GPU generations and are not specified. The golden is recorded
// on known-good devices of the same architecture and engine (`record`, `consensus`), or the case is judged
// by consensus (repeats agree bit for bit, the node's GPUs agree). What this header fixes is the input:
// every element is a pure function of (seed, tensor, index), the same bits on host and device.
//
// Elements: a random sign, a random exponent in the distribution's window and every fraction bit random
// (full significands: the alignment and truncation of the tensor cores are exercised on every product).
// Windows keep everything normal and finite: uniform |x| in [2^-2, 2^2); heavy_tail spans the format's
// normal range up to 2^15 (fp16) or 2^30 (bf16), so |x| < 2^31, a product stays below 2^62 and a sum of
// K <= 2^16 of them below 2^78, far from fp32's 2^128; the smallest product, 2^-28 (fp16) or 2^-60
// (bf16), is normal in fp32.
#pragma once

#include "src/core/family.h"
#include "src/spec/generator.h"

namespace sdc::recorded_gemm {

constexpr int TILE = 64;
constexpr int64_t K_STEP = 32;
constexpr int64_t MAX_K = 65536;
constexpr int64_t MAX_MN = 16384;
constexpr int64_t MAX_TENSOR_ELEMENTS = int64_t{1} << 28;

// A 16-bit floating-point encoding: 1 sign bit, then the exponent field, then frac_bits fraction bits.
struct Encoding {
  int frac_bits;           // 7 for bf16, 10 for fp16
  int bias;                // 127, 15
  int heavy_lo, heavy_hi;  // the heavy_tail exponent window
};
inline constexpr Encoding BF16{7, 127, -30, 30};
inline constexpr Encoding F16{10, 15, -14, 15};

struct Pattern {
  Encoding e;
  int exp_lo, exp_count;  // exponents exp_lo .. exp_lo + exp_count - 1
  uint64_t key_a, key_b;
};

SDC_HD Pattern make_pattern(const Encoding& e, uint64_t seed, bool heavy) {
  Pattern p{};
  p.e = e;
  p.exp_lo = heavy ? e.heavy_lo : -2;
  p.exp_count = heavy ? e.heavy_hi - e.heavy_lo + 1 : 4;
  p.key_a = tensor_key(seed, 0);
  p.key_b = tensor_key(seed, 1);
  return p;
}

// The bits of element i of tensor 0 (a) or 1 (b): hash bits 0..frac_bits-1 the fraction, bit 63 the sign,
// bits 32..62 (31 bits) pick the exponent (the modulo's bias is below 2^-25: immaterial for a screen).
SDC_HD uint16_t element_bits(const Pattern& p, uint32_t tensor, uint64_t i) {
  const uint64_t h = element_hash(tensor == 0 ? p.key_a : p.key_b, i);
  const uint32_t frac = static_cast<uint32_t>(h) & ((1u << p.e.frac_bits) - 1);
  const int exp = p.exp_lo + static_cast<int>(((h >> 32) & 0x7fffffffu) % static_cast<uint64_t>(p.exp_count));
  const uint32_t sign = static_cast<uint32_t>(h >> 63);
  return static_cast<uint16_t>((sign << 15) | (static_cast<uint32_t>(exp + p.e.bias) << p.e.frac_bits) | frac);
}

// The value of a (normal) element as fp32: exact, every bf16 and normal fp16 is an fp32.
SDC_HD float element_value(const Pattern& p, uint16_t bits) {
  const uint32_t sign = bits >> 15;
  const int exp = static_cast<int>((bits >> p.e.frac_bits) & ((1u << (15 - p.e.frac_bits)) - 1)) - p.e.bias;
  const uint32_t frac = bits & ((1u << p.e.frac_bits) - 1);
  return bits_float((sign << 31) | (static_cast<uint32_t>(exp + 127) << 23) | (frac << (23 - p.e.frac_bits)));
}

}  // namespace sdc::recorded_gemm

// elementwise_f32: the project's own fp32 elementwise functions (src/spec/fpmath.h), exact mode.
//
// Input: x, n fp32 values (tensor 0). Output: 8 words per input element, element i's at words 8 i .. 8 i + 7,
// the fp32 bits of:
//   word 0  sdc_expf(x[i])     y[i].exp        word 4  sdc_siluf(x[i])    y[i].silu
//   word 1  sdc_logf(x[i])     y[i].log        word 5  sdc_rsqrtf(x[i])   y[i].rsqrt
//   word 2  sdc_tanhf(x[i])    y[i].tanh       word 6  sdc_sinf(x[i])     y[i].sin
//   word 3  sdc_geluf(x[i])    y[i].gelu       word 7  sdc_cosf(x[i])     y[i].cos
// Every NaN result is stored as the canonical NaN 0x7FFFFFFF (a NaN's payload is not portable: CPUs propagate
// an operand's, GPUs give their own), so the outputs' NaNs are defined (Family::defined_nans). The functions'
// algorithms, constants and measured error bounds are in fpmath.h; each is built from IEEE add, mul, fma,
// div and sqrt in a fixed order, so every correct CPU and GPU computes the same bits.
// Output tiles: TILE = 512 consecutive elements (TILE_WORDS = 4096 words); logical output word e is word e % 8
// of element e / 8, in tile e / 4096.
//
// Inputs: `special` is the sweep below (sweep_bits), every other distribution the shared generator over the
// whole fp32 exponent range (pattern_value, window -149..127).
#pragma once

#include "src/spec/fpmath.h"
#include "src/spec/generator.h"

namespace sdc::elementwise_f32 {

constexpr int TILE = 512;  // elements per tile
constexpr int WORDS = 8;   // output words per element
constexpr uint32_t TILE_WORDS = TILE * WORDS;
constexpr int64_t MAX_N = int64_t{1} << 24;
constexpr uint32_t CANONICAL_NAN = 0x7FFFFFFFu;

enum Word : int { EXP, LOG, TANH, GELU, SILU, RSQRT, SIN, COS };

SDC_HD uint32_t stored(float v) { return v != v ? CANONICAL_NAN : float_bits(v); }

// The 8 output words of x, in Word order.
SDC_HD void outputs(float x, uint32_t* w) {
  w[EXP] = stored(sdc_expf(x));
  w[LOG] = stored(sdc_logf(x));
  w[TANH] = stored(sdc_tanhf(x));
  w[GELU] = stored(sdc_geluf(x));
  w[SILU] = stored(sdc_siluf(x));
  w[RSQRT] = stored(sdc_rsqrtf(x));
  w[SIN] = stored(sdc_sinf(x));
  w[COS] = stored(sdc_cosf(x));
}

// ---- the input sweep (distribution `special`) ---------------------------------------------------------------
//
// Element i is of kind i % 8, its other bits from h = element_hash(key, i), so every tile holds every kind:
//   0  fp32 exponent field (i / 8) % 256 with a random significand and sign: every exponent of every
//      function's domain, both signs, subnormals and zeros (field 0), infinities and NaNs (field 255);
//   1  exponent field (i / 8) % 256, sign random, the significand within 8 ulps of a binade's edge (a power of
//      two: rsqrt's and log's binades, the subnormal and overflow edges);
//   2  special_bits((i / 8) % SPECIAL_COUNT): zeros, infinities, NaNs, the extremes, 1 and -1;
//   3  within 8 ulps of k ln2 / 2, k in [-300, 260]: exp's reduction boundaries (the rounding of x / ln2);
//   4  within 8 ulps of k pi / 4: sin's and cos's quadrant and reduction boundaries, |k| below 2^s for s
//      random in 0..23 (small k most often, up to the range's end and far beyond);
//   5  within 8 ulps of sqrt(1/2) 2^e, e any exponent, sign random: log's split of the significand;
//   6  within 8 ulps of a threshold of a branch (threshold_bits), sign random;
//   7  an exponent in [-30, 30] and a random significand and sign (the functions' busy range).
// "Within 8 ulps": the magnitude's bits plus an offset in [-8, 8] (kept within 0 .. infinity's bits).
SDC_HD uint32_t near_bits(uint32_t u, uint64_t h) {
  const int64_t d = static_cast<int64_t>((h >> 40) % 17u) - 8;
  int64_t mag = static_cast<int64_t>(u & 0x7FFFFFFFu) + d;
  mag = mag < 0 ? 0 : (mag > 0x7F800000 ? 0x7F800000 : mag);
  return (u & 0x80000000u) | static_cast<uint32_t>(mag);
}

constexpr uint32_t SPECIAL_COUNT = 16;
SDC_HD uint32_t special_bits(uint32_t k) {
  const uint32_t table[SPECIAL_COUNT] = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA5A5A5u,
      0x00000001u, 0x807FFFFFu, 0x00800000u, 0x80800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u,
  };
  return table[k % SPECIAL_COUNT];
}

// The branch points of fpmath.h's functions (fp32 values, the sweep gives both signs): exp's clamps and
// overflow threshold (-104, 88.8, 88.72283...), tanh's and sin's small-argument cut 2^-12, tanh's 0.625 and 9,
// sdc_times_sigmoid's -17 (SiLU's switch; GELU's where 2u = -17, x = -5.0146...), SiLU's subnormal e^x edge
// (-87.33...), sin's and cos's valid range 8192 and the reduction's 2^22 / (2/pi) and 2^23 / (2/pi) switches,
// the clamp 0.80078125, the smallest normal 2^-126 (log's scaling), 1 (log's zero).
constexpr uint32_t THRESHOLD_COUNT = 16;
SDC_HD uint32_t threshold_bits(uint32_t k) {
  const uint32_t table[THRESHOLD_COUNT] = {
      0x42D00000u,  // 104
      0x42B1999Au,  // 88.8
      0x42B17217u,  // 88.72283172607421875
      0x39800000u,  // 2^-12
      0x3F200000u,  // 0.625
      0x41100000u,  // 9
      0x41880000u,  // 17
      0x40A077C5u,  // 5.01462 (GELU's 2u = -17)
      0x42AEAC50u,  // 87.33654 (e^-x at the smallest normal)
      0x46000000u,  // 8192
      0x4AC90FDBu,  // 2^22 pi / 2
      0x4B490FDBu,  // 2^23 pi / 2
      0x3F4D0000u,  // 0.80078125
      0x00800000u,  // 2^-126
      0x3F800000u,  // 1
      0x4E800000u,  // 2^30 (sin's quadrant from a multiple of 4)
  };
  return table[k % THRESHOLD_COUNT];
}

SDC_HD uint32_t sweep_bits(uint64_t key, uint64_t i) {
  const uint64_t h = element_hash(key, i);
  const uint32_t sign = static_cast<uint32_t>(h & 1u) << 31;
  const uint32_t r = static_cast<uint32_t>(h >> 32);
  const uint32_t field = static_cast<uint32_t>((i / 8u) % 256u) << 23;
  switch (i % 8u) {
    case 0: return sign | field | (r & 0x7FFFFFu);
    case 1: return near_bits(sign | field, h);
    case 2: return special_bits(static_cast<uint32_t>(i / 8u));
    case 3: {
      const int k = static_cast<int>((h >> 8) % 561u) - 300;
      return near_bits(float_bits(static_cast<float>(k) * 0.346573590279972655f), h);
    }
    case 4: {
      const uint32_t s = static_cast<uint32_t>((h >> 8) % 24u);
      const int k = static_cast<int>((h >> 13) & ((1u << s) - 1u));
      return near_bits(sign | float_bits(static_cast<float>(k) * 0.785398163397448310f), h);
    }
    case 5: {
      const uint32_t e = static_cast<uint32_t>((h >> 8) % 254u) + 1u;  // normal fields 1..254
      return near_bits(sign | (e << 23) | 0x3504F3u, h);
    }
    case 6: return near_bits(sign | threshold_bits(static_cast<uint32_t>((h >> 8) % THRESHOLD_COUNT)), h);
    default: {
      const int e = -30 + static_cast<int>((h >> 8) % 61u);
      return sign | (static_cast<uint32_t>(e + 127) << 23) | (r & 0x7FFFFFu);
    }
  }
}

// Input element i of a case (tensor key `key`), as fp32 bits.
SDC_HD uint32_t input_bits(Distribution d, uint64_t key, uint64_t i) {
  if (d == Distribution::special) return sweep_bits(key, i);
  return float_bits(pattern_value(d, ExponentWindow{-149, 127}, key, i));
}

}  // namespace sdc::elementwise_f32

// Binary64 data in a battery built of 32-bit words. The screen's buffers, digests, comparisons, injected
// faults and reports all work on 32-bit words; an fp64 family stores each binary64 value as two words, the
// low half of its bits first (element e's bits 31..0 at word 2e, bits 63..32 at word 2e + 1: the machine's
// own little-endian layout, so a buffer of words is the buffer of doubles). Its inputs, its tiles and its
// logical output count words: an output word is named `C[i][j].lo` or `.hi`, and a fault drilled into a
// `.hi` word reaches the sign (bit 31), the exponent (30..20) and the top 20 fraction bits.
//
// The fp64 input generator: the counter-based generator of generator.h (same keys, same element hash)
// drawing binary64 values, built from bits so that the host and the device produce the same ones.
#pragma once

#include "src/spec/generator.h"

namespace sdc {

SDC_HD uint64_t double_bits(double x) { return bit_cast_hd<uint64_t>(x); }
SDC_HD double bits_double(uint64_t u) { return bit_cast_hd<double>(u); }

// 2^e as a double for e in [-1022, 1023] (normal range): built from bits, exact everywhere.
SDC_HD double pow2d(int e) { return bits_double(static_cast<uint64_t>(e + 1023) << 52); }

// Multiples of 2^-53 in [-1, 1): 54 bits of the hash, so every fraction bit of the values in [0.5, 1) toggles.
SDC_HD double uniform_value_f64(uint64_t h) {
  const int64_t u = static_cast<int64_t>(h >> 10) - (int64_t{1} << 53);  // 54 bits, centred
  return static_cast<double>(u) * pow2d(-53);                            // exact: |u| <= 2^53
}

// A double with unbiased exponent e (e < -1022: subnormal with its leading bit at 2^e), fraction bits m.
SDC_HD double double_with_exponent(uint64_t sign, int e, uint64_t m) {
  constexpr uint64_t FRAC = (uint64_t{1} << 52) - 1;
  m &= FRAC;
  if (e >= -1022) return bits_double((sign << 63) | (static_cast<uint64_t>(e + 1023) << 52) | m);
  return bits_double((sign << 63) | (((FRAC + 1) | m) >> (-1022 - e)));
}

// The distributions of generator.h over binary64 (ExponentWindow in binary64 exponents: lo >= -1074,
// hi <= 1023). uniform: uniform_value_f64. heavy_tail: uniform with 1 in 64 elements scaled by 2^4..2^12
// (a second hash of the element decides, as the uniform value uses the first one's top 54 bits).
// special: exponents over the window, half of them within 8 binades of either end, random fraction.
// mantissa_walk: walking-one / walking-zero fractions over all 52 bits.
SDC_HD double pattern_value_f64(Distribution d, ExponentWindow w, uint64_t key, uint64_t index) {
  const uint64_t h = element_hash(key, index);
  const uint64_t g = mix64(h);
  switch (d) {
    case Distribution::uniform: return uniform_value_f64(h);
    case Distribution::heavy_tail: {
      const double v = uniform_value_f64(h);
      if ((g & 63u) != 0) return v;
      return v * pow2d(4 + static_cast<int>((g >> 8) % 9u));
    }
    case Distribution::special: {
      const int e = special_exponent(w, g >> 8, 16);
      return double_with_exponent(g & 1u, e, h >> 12);
    }
    case Distribution::mantissa_walk: {
      const uint32_t bit = static_cast<uint32_t>(index % 52u);
      const bool walking_one = ((index / 52u) & 1u) == 0;
      const uint64_t one = uint64_t{1} << bit;
      const uint64_t m = walking_one ? one : (((uint64_t{1} << 52) - 1) ^ one);
      const int e = window_exponent(w, g >> 8);
      return double_with_exponent(g & 1u, e, m);
    }
  }
  return 0.0;
}

// Word `word` of an fp64 tensor in the word layout above: the low or the high half of element word / 2.
SDC_HD uint32_t f64_word(double v, uint64_t word) {
  const uint64_t u = double_bits(v);
  return static_cast<uint32_t>((word & 1u) ? u >> 32 : u);
}

}  // namespace sdc

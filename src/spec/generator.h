// The input generator: every input element is a pure function of (seed, tensor id, element index).
// Counter-based (no state), integer arithmetic plus exact bit construction of floats, so the host and
// the device produce the same bits and any element can be regenerated alone (to recompute one tile).
#pragma once

#include "src/spec/hd.h"

namespace sdc {

// The splitmix64 finalizer: a bijection on 64-bit words with good avalanche.
SDC_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Key of one tensor of one case: computed once per tensor, then element_hash is one mix per element.
SDC_HD uint64_t tensor_key(uint64_t seed, uint32_t tensor) {
  return mix64(mix64(seed) ^ (0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(tensor) + 1)));
}

SDC_HD uint64_t element_hash(uint64_t key, uint64_t index) { return mix64(key ^ mix64(index)); }

enum class Distribution : uint8_t {
  uniform,        // multiples of 2^-23 in [-1, 1)
  heavy_tail,     // uniform with 1 in 64 elements an outlier scaled by 2^4..2^12 (LLM activations)
  special,        // exponents over a window reaching subnormals and (per tensor) near overflow
  mantissa_walk,  // walking-one / walking-zero significands: every significand bit set and cleared
};

// Exponent window of the special and mantissa-walk distributions. Each family chooses a window per
// tensor so that no intermediate of its arithmetic can reach inf - inf (a NaN has no portable bits).
struct ExponentWindow {
  int lo;  // smallest unbiased exponent; below -126 means subnormals
  int hi;  // largest unbiased exponent, at most 127
};

// An exponent drawn over the window from the hash bits `pick`.
SDC_HD int window_exponent(ExponentWindow w, uint64_t pick) {
  return w.lo + static_cast<int>(pick % static_cast<uint64_t>(w.hi - w.lo + 1));
}

// The special distribution's exponent from hash bits r: over the window (bits 0..), but when bit `edge` is set,
// within 8 binades of either end (bit edge + 1 picks the low end, bits edge + 2 .. the offset): the edges are
// the point.
SDC_HD int special_exponent(ExponentWindow w, uint64_t r, int edge) {
  int e = window_exponent(w, r);
  if ((r >> edge) & 1u) {
    const int off = static_cast<int>((r >> (edge + 2)) % 8u);
    e = ((r >> (edge + 1)) & 1u) ? w.lo + off : w.hi - off;
    if (e > w.hi) e = w.hi;
    if (e < w.lo) e = w.lo;
  }
  return e;
}

SDC_HD float uniform_value(uint64_t h) {
  const int32_t u = static_cast<int32_t>(h >> 40) - (1 << 23);  // 24 bits, centred
  return static_cast<float>(u) * pow2f(-23);                    // exact: |u| <= 2^23
}

// A float with unbiased exponent e (e < -126: subnormal with its leading bit at 2^e), significand bits m.
SDC_HD float float_with_exponent(uint32_t sign, int e, uint32_t m) {
  m &= 0x7fffffu;
  if (e >= -126) return bits_float((sign << 31) | (static_cast<uint32_t>(e + 127) << 23) | m);
  return bits_float((sign << 31) | ((0x800000u | m) >> (-126 - e)));
}

SDC_HD float pattern_value(Distribution d, ExponentWindow w, uint64_t key, uint64_t index) {
  const uint64_t h = element_hash(key, index);
  switch (d) {
    case Distribution::uniform: return uniform_value(h);
    case Distribution::heavy_tail: {
      const float v = uniform_value(h);
      if (((h >> 8) & 63u) != 0) return v;
      return v * pow2f(4 + static_cast<int>((h >> 16) % 9u));
    }
    case Distribution::special: {
      const int e = special_exponent(w, h >> 8, 12);
      return float_with_exponent(static_cast<uint32_t>(h & 1u), e, static_cast<uint32_t>(h >> 41));
    }
    case Distribution::mantissa_walk: {
      const uint32_t bit = static_cast<uint32_t>(index % 23u);
      const bool walking_one = ((index / 23u) & 1u) == 0;
      const uint32_t m = walking_one ? (1u << bit) : (0x7fffffu ^ (1u << bit));
      const int e = window_exponent(w, h >> 8);
      return float_with_exponent(static_cast<uint32_t>(h & 1u), e, m);
    }
  }
  return 0.0f;
}

}  // namespace sdc

// Helpers the families' CPU code shares: filling an input range from the generator, shape checks.
#pragma once

#include <cstring>

#include "src/spec/f64.h"
#include "src/spec/generator.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc {

inline void fill_pattern(Distribution d, ExponentWindow w, uint64_t key, uint64_t begin, uint64_t end, float* dst) {
  for (uint64_t i = begin; i < end; ++i) dst[i - begin] = pattern_value(d, w, key, i);
}

// Words [begin, end) of an fp64 tensor (two words per element, low half first: src/spec/f64.h), from the fp64
// generator.
inline void fill_pattern_f64(Distribution d, ExponentWindow w, uint64_t key, uint64_t begin, uint64_t end,
                             float* dst) {
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t u = f64_word(pattern_value_f64(d, w, key, i / 2), i);
    std::memcpy(dst + (i - begin), &u, sizeof u);
  }
}

// Whether the output words out[0..n) hold a NaN, read as the family's values (Family::value_words: fp32, or
// binary64 as two words, low half first). A NaN's bits are not portable, so no golden may hold one, unless the
// family defines them (Family::defined_nans): then its NaNs are values like any other and this is false. An
// integer family's words are int32s (Family::int32_outputs): none is a NaN.
inline bool output_has_nan(const Family& f, const float* out, size_t n) {
  if (f.defined_nans || f.int32_outputs) return false;
  if (f.value_words == 2) {
    for (size_t i = 0; i + 1 < n; i += 2) {
      double v;
      std::memcpy(&v, out + i, sizeof v);
      if (v != v) return true;
    }
    return false;
  }
  for (size_t i = 0; i < n; ++i)
    if (out[i] != out[i]) return true;
  return false;
}

}  // namespace sdc

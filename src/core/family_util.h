// Helpers the families' CPU code shares: filling an input range from the generator, shape checks.
#pragma once

#include "src/spec/generator.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc {

inline void fill_pattern(Distribution d, ExponentWindow w, uint64_t key, uint64_t begin, uint64_t end, float* dst) {
  for (uint64_t i = begin; i < end; ++i) dst[i - begin] = pattern_value(d, w, key, i);
}

}  // namespace sdc

// reduce_sum_f64: row sums in IEEE binary64 by the fixed pairwise tree of fpmath.h, exact mode.
// X is rows x cols row-major; y[r] = pairwise_sum<double>(X[r][0..cols)): sum(x[0..n)) = sum(x[0..h)) +
// sum(x[h..n)) with h the largest power of two below n, one element its own sum. The tree depends on cols
// alone, never on threads, blocks or SMs. Every tensor is stored as 32-bit words, two per value, low half
// first (src/spec/f64.h): x has 2 rows cols words. Output tiles: 16 consecutive rows, 32 words (y[r] at
// words 2 (r % 16) and the one after); logical output word 2 r + h is half h of y[r] (`y[r].lo`, `.hi`).
// Tensor 0 = x.
#pragma once

#include "src/spec/f64.h"

namespace sdc::reduce_sum_f64 {

constexpr int TILE_ROWS = 16;
constexpr int64_t MAX_COLS = 1 << 16;
constexpr uint32_t TILE_WORDS = 2 * TILE_ROWS;

// special: |x| < 2^1007 and at most 2^16 terms, so every partial sum is below 2^1023: no inf, no inf - inf.
SDC_HD ExponentWindow input_window(uint32_t, Distribution d) {
  return d == Distribution::special ? ExponentWindow{-1074, 1006} : ExponentWindow{-3, 3};
}

// The device splits a row of n elements into 32 spans of span(n) elements (a power of two, the smallest
// with 32 spans covering the row), one per lane, and sums each span by the serial tree; the row's sum is
// the serial tree over the k = ceil(n / span) span sums. By chunked_reduce.h's (A) (chunks of a power-of-
// two size C: pairwise_sum(x, n) = pairwise_sum of the chunk sums), that is the same tree as the
// specification's, addition for addition.
SDC_HD uint32_t span(uint32_t n) {
  uint32_t s = 1;
  while (s * 32u < n) s *= 2;
  return s;
}

}  // namespace sdc::reduce_sum_f64

// rmsnorm_f64: RMS normalization in IEEE binary64, exact mode; rmsnorm_f32 with double throughout. X is
// rows x cols row-major, w has cols elements; for each row, every operation a binary64 one:
//   q[j] = x[j] * x[j]
//   ms   = pairwise_sum<double>(q) / cols   the fixed tree of fpmath.h, then IEEE division
//   inv  = 1 / sqrt(ms + EPS)               IEEE square root and division
//   y[j] = (x[j] * inv) * w[j]
// Every tensor is stored as 32-bit words, two per value, low half first (src/spec/f64.h): x has 2 rows cols
// words, w 2 cols. Output tiles: 4 consecutive rows, 8 cols words; y[r][c] at tile offsets
// 2 ((r % 4) cols + c) and the one after; logical output word 2 (r cols + c) + h is half h of y[r][c]
// (`y[r][c].lo`, `.hi`). Tensors: 0 = x, 1 = w.
#pragma once

#include "src/spec/f64.h"

namespace sdc::rmsnorm_f64 {

constexpr int TILE_ROWS = 4;
constexpr double EPS = 1e-6;
constexpr int64_t MAX_COLS = 1 << 14;

// special: |x| < 2^504, so every square is below 2^1008 and a sum of at most 2^14 of them (every partial
// sum of the tree too: the terms are not negative) below 2^1022; ms + EPS >= EPS > 0, so the square root is
// positive and finite and inv at most 1 / sqrt(EPS) = 1000. |x[j] * inv| <= |x[j]| / sqrt(x[j]^2 / cols)
// = sqrt(cols) <= 2^7 up to rounding, and |w| < 2^101, so |y| < 2^109. Nothing overflows, nothing divides
// by zero, no NaN. The other distributions stay below 2^13 (f64.h).
SDC_HD ExponentWindow input_window(uint32_t tensor, Distribution d) {
  if (d == Distribution::special) return tensor == 0 ? ExponentWindow{-1074, 503} : ExponentWindow{-100, 100};
  return ExponentWindow{-3, 3};
}

// The device gives each row ROW_THREADS threads and cuts the row into spans of span(cols) elements (a
// power of two, the smallest with ROW_THREADS spans covering the row), one per thread, which sums its
// span's squares by the serial tree; lane 0 of each warp then sums its warp's 32 span sums, and one thread
// the warps' sums, each by the serial tree. By chunked_reduce.h's (A), applied with C = 32 span(cols) (a
// warp's chunk) and, inside each chunk, with C = span(cols), that is the specification's tree, addition
// for addition.
constexpr uint32_t ROW_THREADS = 256;
SDC_HD uint32_t span(uint32_t n) {
  uint32_t s = 1;
  while (s * ROW_THREADS < n) s *= 2;
  return s;
}

}  // namespace sdc::rmsnorm_f64

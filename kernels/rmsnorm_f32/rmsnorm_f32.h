// rmsnorm_f32: RMS normalization in IEEE binary32, exact mode. X is rows x cols row-major, w has cols
// elements; for each row:
//   q[j] = x[j] * x[j]
//   ms   = pairwise_sum(q) / cols          fixed tree, then IEEE division
//   inv  = 1 / sqrtf(ms + EPS)             IEEE square root and division
//   y[j] = (x[j] * inv) * w[j]
// Output tiles: 4 consecutive rows. Tensors: 0 = x, 1 = w.
#pragma once

#include "src/spec/generator.h"
#include "kernels/rows/row_family.h"

namespace sdc::rmsnorm_f32 {

constexpr int TILE_ROWS = 4;
constexpr float EPS = 1e-6f;
constexpr int64_t MAX_COLS = 1 << 14;

// special: x below 2^56, so every square is below 2^112 and a sum of at most 2^14 of them below 2^126;
// w within 2^-20..2^20. Nothing overflows, nothing divides by zero (EPS > 0).
SDC_HD ExponentWindow input_window(uint32_t tensor, Distribution d) {
  if (d == Distribution::special) return tensor == 0 ? ExponentWindow{-149, 55} : ExponentWindow{-20, 20};
  return ExponentWindow{-3, 3};
}

// The family: x of rows x cols and w of cols, a tile of 4 rows, y[row][col].
inline constexpr RowLayout LAYOUT{"rows", "cols", 1, {"x", "w"}, true, 0, "y", ""};
inline constexpr RowFamily ROW_FAMILY{
    "rmsnorm_f32", TILE_ROWS, MAX_COLS,
    input_window,  LAYOUT,    "fp32 RMS normalization: pairwise sum of squares, IEEE sqrt and division, weight"};

}  // namespace sdc::rmsnorm_f32

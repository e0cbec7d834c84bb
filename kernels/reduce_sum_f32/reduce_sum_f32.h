// reduce_sum_f32: row sums in IEEE binary32 by the fixed pairwise tree of fpmath.h, exact mode.
// X is rows x cols row-major; y[r] = pairwise_sum(X[r][0..cols)). The tree depends on cols alone, never
// on threads, blocks or SMs. Output tiles: 16 consecutive rows. Tensor 0 = x.
#pragma once

#include "src/spec/generator.h"
#include "kernels/rows/row_family.h"

namespace sdc::reduce_sum_f32 {

constexpr int TILE_ROWS = 16;
constexpr int64_t MAX_COLS = 1 << 16;

// special: |x| < 2^111 and at most 2^16 terms, so every partial sum is below 2^127: no inf, no inf - inf.
SDC_HD ExponentWindow input_window(uint32_t, Distribution d) {
  return d == Distribution::special ? ExponentWindow{-149, 110} : ExponentWindow{-3, 3};
}

// The family: x of rows x cols, a tile of 16 rows, y[row].
inline constexpr RowLayout LAYOUT{"rows", "cols", 1, {"x", ""}, false, 0, "y", ""};
inline constexpr RowFamily ROW_FAMILY{
    "reduce_sum_f32", TILE_ROWS, MAX_COLS,
    input_window,     LAYOUT,    "fp32 row sums by a fixed pairwise tree that depends on the length alone"};

}  // namespace sdc::reduce_sum_f32

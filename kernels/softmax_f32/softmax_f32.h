// softmax_f32: row-wise softmax in IEEE binary32, exact mode. X is rows x cols row-major; for each row:
//   m = fold_max(x)          left fold, fpmath.h
//   e[j] = sdc_expf(x[j] - m)
//   s = pairwise_sum(e)      fixed tree, fpmath.h
//   y[j] = e[j] / s          IEEE division
// Output tiles: 4 consecutive rows. Tensor 0 = x.
#pragma once

#include "src/spec/generator.h"
#include "kernels/rows/row_family.h"

namespace sdc::softmax_f32 {

constexpr int TILE_ROWS = 4;

// special: the whole exponent range. x - m may overflow to -inf, whose exp is +0; s >= 1 (the maximum
// contributes e^0): no NaN can arise.
SDC_HD ExponentWindow input_window(uint32_t, Distribution d) {
  return d == Distribution::special ? ExponentWindow{-149, 127} : ExponentWindow{-3, 3};
}

// The family: x of rows x cols, a tile of 4 rows, y[row][col].
inline constexpr RowLayout LAYOUT{"rows", "cols", 1, {"x", ""}, true, 0, "y", ""};
inline constexpr RowFamily ROW_FAMILY{
    "softmax_f32", TILE_ROWS, 1 << 17,
    input_window,  LAYOUT,    "fp32 row-wise softmax: fold max, the project's exp, pairwise sum, IEEE division"};

}  // namespace sdc::softmax_f32

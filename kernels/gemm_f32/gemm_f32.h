// gemm_f32: C = A * B in IEEE binary32, exact mode.
// A is M x K row-major, B is K x N row-major, C is M x N. The k-chain of C[i][j] runs k = 0..K-1 with
// one fused multiply-add per step, starting from +0: acc = fmaf(A[i][k], B[k][j], acc).
// Output tiles are 64 x 64 blocks of C, numbered row-major over the block grid; M and N are multiples
// of 64. Tensors: 0 = a, 1 = b.
#pragma once

#include "src/spec/generator.h"

namespace sdc::gemm_f32 {

constexpr int TILE = 64;
constexpr int64_t MAX_K = 8192;

// special: A spans the whole exponent range (subnormals to 2^127, so |a| < 2^128), B stays in
// [2^-149, 2^-20), so every product is below 2^108; a chain of at most MAX_K = 8192 = 2^13 of them has
// every partial sum below 2^121 * (1 + 2^-24)^8192 < 2^122 (each rounding grows it by at most a factor
// 1 + 2^-24): no inf, hence no inf - inf.
// mantissa_walk: exponents -3..3. Other distributions ignore the window.
SDC_HD ExponentWindow input_window(uint32_t tensor, Distribution d) {
  if (d == Distribution::special) return tensor == 0 ? ExponentWindow{-149, 127} : ExponentWindow{-149, -21};
  return ExponentWindow{-3, 3};
}

}  // namespace sdc::gemm_f32

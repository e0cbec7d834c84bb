// gemm_f64: C = A * B in IEEE binary64, exact mode (the fp64 tensor cores and units: DGEMM-shaped).
// A is M x K row-major, B is K x N row-major, C is M x N. The k-chain of C[i][j] runs k = 0..K-1 with
// one fused multiply-add per step, starting from +0: acc = fma(A[i][k], B[k][j], acc).
// Every tensor is stored as 32-bit words, two per element, low half first (src/spec/f64.h): input a has
// 2 M K words, b 2 K N. Output tiles are 64 x 64 blocks of C, numbered row-major over the block grid (M and
// N are multiples of 64); within a tile, C[i][j] is words 2 ((i % 64) 64 + j % 64) and the one after, and
// logical output word 2 (i N + j) + h is its half h (0: `.lo`, 1: `.hi`). Tensors: 0 = a, 1 = b.
#pragma once

#include "src/spec/f64.h"

namespace sdc::gemm_f64 {

constexpr int TILE = 64;
constexpr int64_t MAX_K = 8192;
constexpr uint32_t TILE_WORDS = 2 * TILE * TILE;

// special: A spans the whole binary64 range (subnormals to 2^1023, so |a| < 2^1024), B stays in
// [2^-1074, 2^-20), so every product is below 2^1004; a chain of at most MAX_K = 2^13 of them has every
// partial sum below 2^1017 * (1 + 2^-53)^8192 < 2^1018: no inf, hence no inf - inf.
// mantissa_walk: exponents -3..3. Other distributions ignore the window.
SDC_HD ExponentWindow input_window(uint32_t tensor, Distribution d) {
  if (d == Distribution::special) return tensor == 0 ? ExponentWindow{-1074, 1023} : ExponentWindow{-1074, -21};
  return ExponentWindow{-3, 3};
}

}  // namespace sdc::gemm_f64

// attention_f32: single-head attention forward in IEEE binary32, exact mode, for H independent heads.
// Q, K, V are H x S x D row-major; O = softmax(scale * Q K^T, causal mask optional) V, computed naively
// (the whole score row, then the softmax, then P V) in this order for query row i of head h:
//   n      = causal ? i + 1 : S                         keys j >= n take no part in any operation
//   s[j]   = dot(Q[h][i], K[h][j]) * scale              dot: fma chain over d = 0..D-1 from +0
//   m      = fold_max(s[0..n))                          left fold, fpmath.h
//   p[j]   = sdc_expf(s[j] - m)
//   l      = pairwise_sum(p[0..n))                      fixed tree, fpmath.h
//   O[h][i][d] = chain(d) / l                           chain: fma over j = 0..n-1 of p[j] * V[h][j][d] from +0
// scale = 1 / sqrtf(D), both IEEE operations. Output tiles: 32 query rows of one head (32 x D elements),
// numbered head-major. Tensors: 0 = q, 1 = k, 2 = v.
#pragma once

#include "src/spec/generator.h"

namespace sdc::attention_f32 {

constexpr int TILE_ROWS = 32;
constexpr int64_t MAX_DIM = 128;
constexpr int64_t MAX_SEQ = 8192;

// special: Q and K below 2^51, so with D <= 2^7 every score is below 2^110 and finite; V below 2^101,
// so a chain of at most 2^13 products p * v (p <= 1) stays below 2^114: no inf, hence no inf - inf.
SDC_HD ExponentWindow input_window(uint32_t tensor, Distribution d) {
  if (d == Distribution::special) return tensor == 2 ? ExponentWindow{-149, 100} : ExponentWindow{-149, 50};
  return ExponentWindow{-2, 2};
}

}  // namespace sdc::attention_f32

// cross_entropy_f32: the token losses of LLM training and their reduction, IEEE binary32, exact mode.
// Logits are tokens x vocab row-major; the target of token t is element_hash(tensor_key(seed, 1), t)
// modulo vocab. For each token:
//   m    = fold_max(x)                    left fold, fpmath.h
//   s    = pairwise_sum(sdc_expf(x[j] - m))
//   loss = (m + sdc_logf(s)) - x[target]
// Output tiles: 16 consecutive tokens, their 16 losses followed by their pairwise sum (the tile's
// partial of the batch loss; all tiles together form the fixed tree of the whole batch sum, because
// 16 is a power of two). Logical output: loss[tokens] then partial[tokens / 16]. Tensor 0 = logits.
#pragma once

#include "src/spec/generator.h"
#include "kernels/rows/row_family.h"

namespace sdc::cross_entropy_f32 {

constexpr int TILE_ROWS = 16;

// special: logits below 2^101: m + log(s) and the difference stay finite; s >= 1 so log(s) >= 0 and
// every loss is >= 0 (rounding is monotone), so the partial sums never meet inf - inf.
SDC_HD ExponentWindow input_window(uint32_t, Distribution d) {
  return d == Distribution::special ? ExponentWindow{-149, 100} : ExponentWindow{-3, 3};
}

SDC_HD uint64_t target(uint64_t seed, uint64_t token, uint64_t vocab) {
  return element_hash(tensor_key(seed, 1), token) % vocab;
}

// The family: logits of tokens x vocab (vocab >= 2), a tile of 16 tokens, loss[token], then the tile's
// partial sum.
inline constexpr RowLayout LAYOUT{"tokens", "vocab", 2, {"logits", ""}, false, 1, "loss", "partial"};
inline constexpr RowFamily ROW_FAMILY{
    "cross_entropy_f32",
    TILE_ROWS,
    1 << 18,
    input_window,
    LAYOUT,
    "fp32 token losses (log-sum-exp minus the target logit) and their pairwise batch reduction"};

}  // namespace sdc::cross_entropy_f32

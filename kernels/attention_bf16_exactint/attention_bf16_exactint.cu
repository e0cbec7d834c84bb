// attention_bf16_exactint on CUDA: the bf16 tensor-core attention kernel (kernels/attention_mma/
// attention_mma.cuh) bound to this family's pattern, power-of-two score scale and 2^-8 weight grid.
#include "kernels/attention_mma/attention_mma.cuh"
#include "kernels/attention_bf16_exactint/attention_bf16_exactint.h"

namespace sdc::attention_bf16_exactint::SDC_TARGET {
namespace {

struct Spec {
  using Params = Pattern;
  static constexpr const char* ALGORITHM =
      "mma.sync m16n8k16 bf16 f32 accumulators; 64 query rows per block of 4 warps, keys in blocks of 64; "
      "scores and P through global scratch; fp32 softmax, one warp per row, fixed trees; P on a 2^-8 grid (exact)";
  SDC_HD static uint16_t bits(const Pattern& p, uint32_t tensor, uint64_t i) { return element_bits(p, tensor, i); }
  SDC_HD static float scale(const Pattern& p, int64_t head) { return score_scale(p, head); }
  SDC_HD static float weight(float p) { return attention_mma::grid_weight(p); }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  return std::make_unique<attention_mma::AttentionDevice<Spec>>(
      c, make_pattern(dim(c, "seq"), dim(c, "dim"), c.data_seed, c.distribution == Distribution::mantissa_walk));
}

}  // namespace sdc::attention_bf16_exactint::SDC_TARGET

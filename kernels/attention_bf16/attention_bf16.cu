// attention_bf16 on CUDA: the bf16 tensor-core attention kernel (kernels/attention_mma/attention_mma.cuh)
// bound to random bf16 inputs, the 1 / sqrt(dim) scale and P rounded to bf16.
#include "kernels/attention_mma/attention_mma.cuh"
#include "kernels/attention_bf16/attention_bf16.h"

namespace sdc::attention_bf16::SDC_TARGET {
namespace {

struct Spec {
  using Params = attention_bf16::Params;
  static constexpr const char* ALGORITHM =
      "mma.sync m16n8k16 bf16 f32 accumulators; 64 query rows per block of 4 warps, keys in blocks of 64; "
      "scores and P through global scratch; fp32 softmax, one warp per row, fixed trees; P rounded to bf16";
  SDC_HD static uint16_t bits(const Params& p, uint32_t tensor, uint64_t i) { return element_bits(p, tensor, i); }
  SDC_HD static float scale(const Params& p, int64_t) { return p.scale; }
  SDC_HD static float weight(float p) { return attention_bf16::weight(p); }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  return std::make_unique<attention_mma::AttentionDevice<Spec>>(c, make_params(c.data_seed, dim(c, "dim")));
}

}  // namespace sdc::attention_bf16::SDC_TARGET

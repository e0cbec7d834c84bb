// attention_bf16 on the CPU: the family's registration, shape checks, geometry and input generation (the
// reports name tiles and elements and show input values with them). There is no CPU reference: the
// tensor cores' accumulation order is not specified, so recorded and consensus cases are judged on GPUs
// only (the CPU executor skips them as not applicable, `golden` leaves them out).
#include <stdexcept>

#include "kernels/attention_mma/attention_problem.h"
#include "kernels/attention_bf16/attention_bf16.h"

namespace sdc::attention_bf16 {
namespace {

class RecordedAttention final : public attention_mma::AttentionGeometry {
 public:
  explicit RecordedAttention(const Case& c)
      : AttentionGeometry(c), params_(make_params(c.data_seed, dim(c, "dim"))), id_(c.id) {}

  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    for (uint64_t i = begin; i < end; ++i) dst[i - begin] = attention_mma::bf16_value(element_bits(params_, t, i));
  }
  void compute_tile(const float* const*, uint64_t, float*, Workspace&) const override { no_reference(); }
  void compute_tile_scalar(const float* const*, uint64_t, float*) const override { no_reference(); }

 private:
  [[noreturn]] void no_reference() const {
    throw std::logic_error("case " + id_ +
                           ": attention_bf16 has no CPU reference (tensor-core accumulation order is unspecified); "
                           "recorded and consensus cases are judged on GPUs");
  }

  Params params_;
  std::string id_;
};

std::string validate(const Case& c) {
  if (std::string err = attention_mma::validate_shape(c); !err.empty()) return err;
  if (c.distribution != Distribution::uniform)
    return fmt::format("case {}: attention_bf16 draws its own random bf16 inputs: distribution uniform only", c.id);
  return "";
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<RecordedAttention>(c); }

}  // namespace

// No "cpu" backend: only GPUs run the family (a build without CUDA cannot).
Family family() {
  return {"attention_bf16",
          "bf16 tensor-core attention forward on random inputs (P rounded to bf16): recorded on known-good GPUs, "
          "or consensus of repeats and the node's GPUs",
          {Mode::recorded, Mode::consensus},
          {"cuda"},
          {"heads", "seq", "dim", "causal"},
          validate,
          prepare};
}

}  // namespace sdc::attention_bf16

// The recorded tensor-core GEMMs on the CPU: geometry and inputs only (recorded_gemm.h says why there is
// no CPU reference). Tiles and element names follow the exact-integer GEMMs, so reports read the same.
#include "kernels/recorded_gemm/recorded_gemm_ref.h"

#include <fmt/format.h>

#include <stdexcept>

#include "src/core/gemm_tiles.h"
#include "src/core/shape.h"

namespace sdc::recorded_gemm {
namespace {

static_assert(GemmTiles::T == TILE);

class RecordedGemmProblem final : public GemmTiles {
 public:
  RecordedGemmProblem(const Encoding& e, const Case& c) : GemmTiles(c), pat_(case_pattern(e, c)), id_(c.id) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * k_)}, {"b", static_cast<uint64_t>(n_ * k_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    for (uint64_t i = begin; i < end; ++i) dst[i - begin] = element_value(pat_, element_bits(pat_, t, i));
  }
  void compute_tile(const float* const*, uint64_t, float*, Workspace&) const override { no_reference(); }
  void compute_tile_scalar(const float* const*, uint64_t, float*) const override { no_reference(); }

 private:
  [[noreturn]] void no_reference() const {
    throw std::logic_error(
        fmt::format("case {}: a recorded tensor-core GEMM has no CPU reference (its golden is "
                    "recorded on GPUs)",
                    id_));
  }

  Pattern pat_;
  std::string id_;
};

}  // namespace

std::string validate(const Case& c) {
  if (std::string err =
          check_shape(c, {{"m", TILE, MAX_MN, TILE}, {"n", TILE, MAX_MN, TILE}, {"k", K_STEP, MAX_K, K_STEP}});
      !err.empty())
    return err;
  if (dim(c, "m") * dim(c, "k") > MAX_TENSOR_ELEMENTS || dim(c, "n") * dim(c, "k") > MAX_TENSOR_ELEMENTS)
    return fmt::format("case {}: an input of more than 2^28 elements", c.id);
  if (c.distribution != Distribution::uniform && c.distribution != Distribution::heavy_tail)
    return fmt::format("case {}: recorded GEMM patterns define the distributions uniform and heavy_tail only", c.id);
  return "";
}

Pattern case_pattern(const Encoding& e, const Case& c) {
  return make_pattern(e, c.data_seed, c.distribution == Distribution::heavy_tail);
}

std::unique_ptr<Problem> prepare(const Encoding& e, const Case& c) {
  return std::make_unique<RecordedGemmProblem>(e, c);
}

}  // namespace sdc::recorded_gemm

// The recorded tensor-core GEMMs on the CPU: geometry and inputs only (recorded_gemm.h says why there is
// no CPU reference). Tiles and element names follow the exact-integer GEMMs, so reports read the same.
#include "recorded_gemm_ref.h"

#include <fmt/format.h>

#include <stdexcept>

#include "../../src/core/shape.h"

namespace sdc::recorded_gemm {
namespace {

class RecordedGemmProblem final : public Problem {
 public:
  RecordedGemmProblem(const Encoding& e, const Case& c)
      : m_(dim(c, "m")), n_(dim(c, "n")), k_(dim(c, "k")), pat_(case_pattern(e, c)), id_(c.id) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * k_)}, {"b", static_cast<uint64_t>(n_ * k_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    for (uint64_t i = begin; i < end; ++i) dst[i - begin] = element_value(pat_, element_bits(pat_, t, i));
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>((m_ / TILE) * (n_ / TILE)); }
  uint32_t tile_elements() const override { return TILE * TILE; }
  void compute_tile(const float* const*, uint64_t, float*, Workspace&) const override { no_reference(); }
  void compute_tile_scalar(const float* const*, uint64_t, float*) const override { no_reference(); }
  uint64_t output_elements() const override { return static_cast<uint64_t>(m_ * n_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const int64_t i = static_cast<int64_t>(e) / n_, j = static_cast<int64_t>(e) % n_;
    tile = static_cast<uint64_t>((i / TILE) * (n_ / TILE) + j / TILE);
    offset = static_cast<uint32_t>((i % TILE) * TILE + j % TILE);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    const int64_t rb = static_cast<int64_t>(tile) / (n_ / TILE), cb = static_cast<int64_t>(tile) % (n_ / TILE);
    return static_cast<uint64_t>((rb * TILE + offset / TILE) * n_ + cb * TILE + offset % TILE);
  }
  std::string element_name(uint64_t e) const override {
    return fmt::format("C[{}][{}]", static_cast<int64_t>(e) / n_, static_cast<int64_t>(e) % n_);
  }
  std::string tile_name(uint64_t tile) const override {
    const int64_t r0 = static_cast<int64_t>(tile) / (n_ / TILE) * TILE, c0 = static_cast<int64_t>(tile) % (n_ / TILE) * TILE;
    return fmt::format("C[{}:{}][{}:{}]", r0, r0 + TILE, c0, c0 + TILE);
  }
  double tile_flops() const override { return 2.0 * TILE * TILE * static_cast<double>(k_); }

 private:
  [[noreturn]] void no_reference() const {
    throw std::logic_error(fmt::format("case {}: a recorded tensor-core GEMM has no CPU reference (its golden is "
                                       "recorded on GPUs)",
                                       id_));
  }

  int64_t m_, n_, k_;
  Pattern pat_;
  std::string id_;
};

}  // namespace

std::string validate(const Case& c) {
  if (std::string err = check_shape(c, {{"m", TILE, MAX_MN, TILE}, {"n", TILE, MAX_MN, TILE}, {"k", K_STEP, MAX_K, K_STEP}});
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

std::unique_ptr<Problem> prepare(const Encoding& e, const Case& c) { return std::make_unique<RecordedGemmProblem>(e, c); }

}  // namespace sdc::recorded_gemm

// gemm_f32 on the CPU: the family's registration, the screen's tile computation (gemm_f32_cpu.cpp's fast
// path) and the plain specification beside it.
#include <fmt/format.h>

#include "../../src/core/family_util.h"
#include "gemm_f32.h"
#include "gemm_f32_cpu.h"

namespace sdc::gemm_f32 {
namespace {

class GemmProblem final : public Problem {
 public:
  explicit GemmProblem(const Case& c)
      : m_(dim(c, "m")), n_(dim(c, "n")), k_(dim(c, "k")), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * k_)}, {"b", static_cast<uint64_t>(k_ * n_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>((m_ / TILE) * (n_ / TILE)); }
  uint32_t tile_elements() const override { return TILE * TILE; }
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    tile_fast(in[0], in[1], k_, n_, row0(tile), col0(tile), TILE, TILE, out, ws.f);
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    tile_scalar(in[0], in[1], k_, n_, row0(tile), col0(tile), TILE, TILE, out);
  }
  uint64_t output_elements() const override { return static_cast<uint64_t>(m_ * n_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const int64_t i = static_cast<int64_t>(e) / n_, j = static_cast<int64_t>(e) % n_;
    tile = static_cast<uint64_t>((i / TILE) * (n_ / TILE) + j / TILE);
    offset = static_cast<uint32_t>((i % TILE) * TILE + j % TILE);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    return static_cast<uint64_t>((row0(tile) + offset / TILE) * n_ + col0(tile) + offset % TILE);
  }
  std::string element_name(uint64_t e) const override {
    return fmt::format("C[{}][{}]", static_cast<int64_t>(e) / n_, static_cast<int64_t>(e) % n_);
  }
  std::string tile_name(uint64_t tile) const override {
    return fmt::format("C[{}:{}][{}:{}]", row0(tile), row0(tile) + TILE, col0(tile), col0(tile) + TILE);
  }
  double tile_flops() const override { return 2.0 * TILE * TILE * static_cast<double>(k_); }

 private:
  int64_t row0(uint64_t tile) const { return static_cast<int64_t>(tile) / (n_ / TILE) * TILE; }
  int64_t col0(uint64_t tile) const { return static_cast<int64_t>(tile) % (n_ / TILE) * TILE; }

  int64_t m_, n_, k_;
  Distribution dist_;
  uint64_t seed_;
};

std::string validate(const Case& c) {
  return check_shape(c, {{"m", TILE, 16384, TILE}, {"n", TILE, 16384, TILE}, {"k", 1, MAX_K, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<GemmProblem>(c); }

}  // namespace

Family family() {
  return {"gemm_f32", "fp32 matrix product, every output one fma chain over k in order (CUDA cores, CPU cores)",
          {Mode::exact}, {"cpu"}, {"m", "n", "k"}, validate, prepare};
}

}  // namespace sdc::gemm_f32

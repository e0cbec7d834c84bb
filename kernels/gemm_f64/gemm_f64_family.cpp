// gemm_f64 on the CPU: the family's registration, the screen's tile computation (kernels/gemm_cpu's fast
// path) and the plain specification beside it. The output geometry is the GEMMs' 64 x 64 tiles of C, two
// 32-bit words per element (gemm_f64.h).
#include <fmt/format.h>

#include <cstring>

#include "src/core/family_util.h"
#include "src/core/gemm_tiles.h"
#include "kernels/gemm_f64/gemm_f64.h"
#include "kernels/gemm_cpu/gemm_cpu.h"

namespace sdc::gemm_f64 {
namespace {

class GemmProblem final : public Problem {
 public:
  explicit GemmProblem(const Case& c)
      : m_(dim(c, "m")), n_(dim(c, "n")), k_(dim(c, "k")), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(2 * m_ * k_)}, {"b", static_cast<uint64_t>(2 * k_ * n_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern_f64(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>((m_ / TILE) * (n_ / TILE)); }
  uint32_t tile_elements() const override { return TILE_WORDS; }
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    ws.dt.resize(TILE * TILE);
    gemm_cpu::tile_fast(doubles(in[0]), doubles(in[1]), k_, n_, row0(tile), col0(tile), TILE, TILE, ws.dt.data(), ws.d);
    std::memcpy(out, ws.dt.data(), TILE_WORDS * sizeof(float));
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    std::vector<double> t(TILE * TILE);
    gemm_cpu::tile_scalar(doubles(in[0]), doubles(in[1]), k_, n_, row0(tile), col0(tile), TILE, TILE, t.data());
    std::memcpy(out, t.data(), TILE_WORDS * sizeof(float));
  }
  uint64_t output_elements() const override { return static_cast<uint64_t>(2 * m_ * n_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const int64_t v = static_cast<int64_t>(e / 2), i = v / n_, j = v % n_;
    tile = static_cast<uint64_t>((i / TILE) * (n_ / TILE) + j / TILE);
    offset = static_cast<uint32_t>(2 * ((i % TILE) * TILE + j % TILE) + e % 2);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    const uint32_t v = offset / 2;
    return static_cast<uint64_t>(2 * ((row0(tile) + v / TILE) * n_ + col0(tile) + v % TILE) + offset % 2);
  }
  std::string element_name(uint64_t e) const override {
    const int64_t v = static_cast<int64_t>(e / 2);
    return fmt::format("C[{}][{}].{}", v / n_, v % n_, e % 2 ? "hi" : "lo");
  }
  std::string tile_name(uint64_t tile) const override {
    const int64_t r0 = row0(tile), c0 = col0(tile);
    return fmt::format("C[{}:{}][{}:{}]", r0, r0 + TILE, c0, c0 + TILE);
  }
  double tile_flops() const override { return 2.0 * TILE * TILE * static_cast<double>(k_); }
  TileGrid tile_grid() const override {
    return {static_cast<uint64_t>(m_ / TILE), static_cast<uint64_t>(n_ / TILE),
            "C in 64 x 64 blocks: rows of C down, columns across"};
  }

 private:
  // The inputs are word buffers holding binary64 values (src/spec/f64.h); the kernels read them through
  // vector loads and memcpy only.
  static const double* doubles(const float* words) { return reinterpret_cast<const double*>(words); }
  int64_t row0(uint64_t tile) const { return static_cast<int64_t>(tile) / (n_ / TILE) * TILE; }
  int64_t col0(uint64_t tile) const { return static_cast<int64_t>(tile) % (n_ / TILE) * TILE; }

  int64_t m_, n_, k_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

Family family() {
  Family f = plain_gemm_family<GemmProblem, MAX_K>(
      "gemm_f64", "fp64 matrix product, every output one fma chain over k in order (fp64 units, CPU cores)");
  f.value_words = 2;
  return f;
}

}  // namespace sdc::gemm_f64

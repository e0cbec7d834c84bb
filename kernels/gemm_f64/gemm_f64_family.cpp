// gemm_f64 on the CPU: the family's registration, the screen's tile computation (kernels/gemm_cpu's fast
// path) and the plain specification beside it. The output geometry is the GEMMs' 64 x 64 tiles of C, two
// 32-bit words per element (gemm_f64.h).
#include <cstring>

#include "kernels/gemm_cpu/gemm_cpu.h"
#include "kernels/gemm_f64/gemm_f64.h"
#include "src/core/family_util.h"
#include "src/core/gemm_tiles.h"

namespace sdc::gemm_f64 {
namespace {

static_assert(GemmTiles::T == TILE && TILE_WORDS == 2 * TILE * TILE);

class GemmProblem final : public GemmTiles {
 public:
  explicit GemmProblem(const Case& c) : GemmTiles(c, 2), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(2 * m_ * k_)}, {"b", static_cast<uint64_t>(2 * k_ * n_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern_f64(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
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

 private:
  // The inputs are word buffers holding binary64 values (src/spec/f64.h); the kernels read them through
  // vector loads and memcpy only.
  static const double* doubles(const float* words) { return reinterpret_cast<const double*>(words); }

  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

Family family() {
  Family f = plain_gemm_family<GemmProblem, MAX_K>(
      "gemm_f64", "fp64 matrix product, every output one fma chain over k in order (fp64 tensor cores, CPU cores)");
  f.value_words = 2;
  return f;
}

}  // namespace sdc::gemm_f64

// gemm_f32 on the CPU: the family's registration, the screen's tile computation (gemm_cpu.cpp's fast
// path) and the plain specification beside it. The output geometry is the GEMMs' (src/core/gemm_tiles.h).
#include "src/core/family_util.h"
#include "src/core/gemm_tiles.h"
#include "kernels/gemm_f32/gemm_f32.h"
#include "kernels/gemm_cpu/gemm_cpu.h"

namespace sdc::gemm_f32 {
namespace {

static_assert(GemmTiles::T == TILE);

class GemmProblem final : public GemmTiles {
 public:
  explicit GemmProblem(const Case& c) : GemmTiles(c), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * k_)}, {"b", static_cast<uint64_t>(k_ * n_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    gemm_cpu::tile_fast(in[0], in[1], k_, n_, row0(tile), col0(tile), TILE, TILE, out, ws.f);
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    gemm_cpu::tile_scalar(in[0], in[1], k_, n_, row0(tile), col0(tile), TILE, TILE, out);
  }

 private:
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

Family family() {
  return plain_gemm_family<GemmProblem, MAX_K>(
      "gemm_f32", "fp32 matrix product, every output one fma chain over k in order (CUDA cores, CPU cores)");
}

}  // namespace sdc::gemm_f32

// rmsnorm_f32 on the CPU: fast path on vector lanes, specification beside it.
#include <cmath>

#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/rmsnorm_f32/rmsnorm_f32.h"

namespace sdc::rmsnorm_f32 {
namespace {

class RmsnormProblem final : public RowTiledProblem {
 public:
  explicit RmsnormProblem(const Case& c) : RowTiledProblem(c, ROW_FAMILY) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const auto n = static_cast<uint32_t>(cols_);
    ws.g.resize(n);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* x = in[0] + (first_row(tile) + r) * cols_;
      lanes::square(x, ws.g.data(), n);
      const float ms = lanes::pairwise_sum(ws.g.data(), n, ws.h) / static_cast<float>(n);
      lanes::scale_mul(x, 1.0f / std::sqrt(ms + EPS), in[1], out + r * cols_, n);
    }
  }
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const auto n = static_cast<uint32_t>(cols_);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* x = in[0] + (first_row(tile) + r) * cols_;
      const float ms = pairwise_sum([x](uint32_t j) { return x[j] * x[j]; }, n) / static_cast<float>(n);
      const float inv = 1.0f / std::sqrt(ms + EPS);
      for (uint32_t j = 0; j < n; ++j) out[r * cols_ + j] = (x[j] * inv) * in[1][j];
    }
  }
  double tile_flops() const override { return 4.0 * TILE_ROWS * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, RmsnormProblem>(); }

}  // namespace sdc::rmsnorm_f32

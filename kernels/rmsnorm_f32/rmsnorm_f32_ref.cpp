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
  using RowTiledProblem::RowTiledProblem;

  void row_fast(const float* x, const float* const* in, int64_t, float* y, Workspace& ws) const override {
    lanes::square(x, ws.g.data(), n());
    const float ms = lanes::pairwise_sum(ws.g.data(), n(), ws.h) / static_cast<float>(n());
    lanes::scale_mul(x, 1.0f / std::sqrt(ms + EPS), in[1], y, n());
  }
  __attribute__((optimize("no-tree-vectorize"))) void row_spec(const float* x, const float* const* in, int64_t,
                                                               float* y) const override {
    const float ms = pairwise_sum([x](uint32_t j) { return x[j] * x[j]; }, n()) / static_cast<float>(n());
    const float inv = 1.0f / std::sqrt(ms + EPS);
    for (uint32_t j = 0; j < n(); ++j) y[j] = (x[j] * inv) * in[1][j];
  }
  double tile_flops() const override { return 4.0 * TILE_ROWS * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, RmsnormProblem>(); }

}  // namespace sdc::rmsnorm_f32

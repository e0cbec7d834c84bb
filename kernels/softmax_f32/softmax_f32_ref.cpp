// softmax_f32 on the CPU: fast path on vector lanes, specification beside it.
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/softmax_f32/softmax_f32.h"

namespace sdc::softmax_f32 {
namespace {

class SoftmaxProblem final : public RowTiledProblem {
 public:
  using RowTiledProblem::RowTiledProblem;

  void row_fast(const float* x, const float* const*, int64_t, float* y, Workspace& ws) const override {
    lanes::exp_shifted(x, lanes::fold_max(x, n()), y, n());
    lanes::divide(y, lanes::pairwise_sum(y, n(), ws.h), y, n());
  }
  __attribute__((optimize("no-tree-vectorize"))) void row_spec(const float* x, const float* const*, int64_t,
                                                               float* y) const override {
    const float m = fold_max([x](uint32_t j) { return x[j]; }, n());
    for (uint32_t j = 0; j < n(); ++j) y[j] = sdc_expf(x[j] - m);
    const float s = pairwise_sum([y](uint32_t j) { return y[j]; }, n());
    for (uint32_t j = 0; j < n(); ++j) y[j] = y[j] / s;
  }
  double tile_flops() const override { return 4.0 * TILE_ROWS * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, SoftmaxProblem>(); }

}  // namespace sdc::softmax_f32

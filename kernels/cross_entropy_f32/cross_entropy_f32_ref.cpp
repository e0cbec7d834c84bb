// cross_entropy_f32 on the CPU: fast path on vector lanes, specification beside it.
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/cross_entropy_f32/cross_entropy_f32.h"

namespace sdc::cross_entropy_f32 {
namespace {

class CrossEntropyProblem final : public RowTiledProblem {
 public:
  using RowTiledProblem::RowTiledProblem;

  // A row's loss: log-sum-exp of the row less its target logit.
  void row_fast(const float* x, const float* const*, int64_t t, float* y, Workspace& ws) const override {
    const float m = lanes::fold_max(x, n());
    lanes::exp_shifted(x, m, ws.g.data(), n());
    const float s = lanes::pairwise_sum(ws.g.data(), n(), ws.h);
    *y = (m + sdc_logf(s)) - x[target_of(t)];
  }
  __attribute__((optimize("no-tree-vectorize"))) void row_spec(const float* x, const float* const*, int64_t t,
                                                               float* y) const override {
    const float m = fold_max([x](uint32_t j) { return x[j]; }, n());
    const float s = pairwise_sum([x, m](uint32_t j) { return sdc_expf(x[j] - m); }, n());
    *y = (m + sdc_logf(s)) - x[target_of(t)];
  }
  // The tile's loss: the fixed tree's sum of its rows' losses.
  void finish_tile(float* out, Workspace& ws) const override {
    out[TILE_ROWS] = lanes::pairwise_sum(out, TILE_ROWS, ws.h);
  }
  __attribute__((optimize("no-tree-vectorize"))) void finish_tile_spec(float* out) const override {
    out[TILE_ROWS] = pairwise_sum([out](uint32_t j) { return out[j]; }, TILE_ROWS);
  }
  double tile_flops() const override { return 3.0 * TILE_ROWS * static_cast<double>(cols_); }

 private:
  uint64_t target_of(int64_t t) const { return target(seed_, static_cast<uint64_t>(t), static_cast<uint64_t>(cols_)); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, CrossEntropyProblem>(); }

}  // namespace sdc::cross_entropy_f32

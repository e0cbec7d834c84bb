// reduce_sum_f32 on the CPU: the fast path reduces each level of the tree on vector lanes; the
// specification walks the tree element by element.
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/reduce_sum_f32/reduce_sum_f32.h"

namespace sdc::reduce_sum_f32 {
namespace {

class ReduceProblem final : public RowTiledProblem {
 public:
  using RowTiledProblem::RowTiledProblem;

  void row_fast(const float* x, const float* const*, int64_t, float* y, Workspace& ws) const override {
    *y = lanes::pairwise_sum(x, n(), ws.h);
  }
  void row_spec(const float* x, const float* const*, int64_t, float* y) const override {
    *y = pairwise_sum([x](uint32_t j) { return x[j]; }, n());
  }
  double tile_flops() const override { return static_cast<double>(TILE_ROWS) * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, ReduceProblem>(); }

}  // namespace sdc::reduce_sum_f32

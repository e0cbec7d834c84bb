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
  explicit ReduceProblem(const Case& c) : RowTiledProblem(c, ROW_FAMILY) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    for (int r = 0; r < TILE_ROWS; ++r)
      out[r] = lanes::pairwise_sum(in[0] + (first_row(tile) + r) * cols_, static_cast<uint32_t>(cols_), ws.h);
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* x = in[0] + (first_row(tile) + r) * cols_;
      out[r] = pairwise_sum([x](uint32_t j) { return x[j]; }, static_cast<uint32_t>(cols_));
    }
  }
  double tile_flops() const override { return static_cast<double>(TILE_ROWS) * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, ReduceProblem>(); }

}  // namespace sdc::reduce_sum_f32

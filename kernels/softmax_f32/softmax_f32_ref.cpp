// softmax_f32 on the CPU: fast path on vector lanes, specification beside it.
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/softmax_f32/softmax_f32.h"

namespace sdc::softmax_f32 {
namespace {

class SoftmaxProblem final : public RowTiledProblem {
 public:
  explicit SoftmaxProblem(const Case& c) : RowTiledProblem(c, ROW_FAMILY) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const auto n = static_cast<uint32_t>(cols_);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* x = in[0] + (first_row(tile) + r) * cols_;
      float* y = out + r * cols_;
      lanes::exp_shifted(x, lanes::fold_max(x, n), y, n);
      lanes::divide(y, lanes::pairwise_sum(y, n, ws.h), y, n);
    }
  }
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const auto n = static_cast<uint32_t>(cols_);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* x = in[0] + (first_row(tile) + r) * cols_;
      float* y = out + r * cols_;
      const float m = fold_max([x](uint32_t j) { return x[j]; }, n);
      for (uint32_t j = 0; j < n; ++j) y[j] = sdc_expf(x[j] - m);
      const float s = pairwise_sum([y](uint32_t j) { return y[j]; }, n);
      for (uint32_t j = 0; j < n; ++j) y[j] = y[j] / s;
    }
  }
  double tile_flops() const override { return 4.0 * TILE_ROWS * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, SoftmaxProblem>(); }

}  // namespace sdc::softmax_f32

// cross_entropy_f32 on the CPU: fast path on vector lanes, specification beside it.
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rows/row_problem.h"
#include "kernels/cross_entropy_f32/cross_entropy_f32.h"

namespace sdc::cross_entropy_f32 {
namespace {

class CrossEntropyProblem final : public RowTiledProblem {
 public:
  explicit CrossEntropyProblem(const Case& c) : RowTiledProblem(c, ROW_FAMILY) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const auto n = static_cast<uint32_t>(cols_);
    ws.g.resize(n);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const int64_t t = first_row(tile) + r;
      const float* x = in[0] + t * cols_;
      const float m = lanes::fold_max(x, n);
      lanes::exp_shifted(x, m, ws.g.data(), n);
      const float s = lanes::pairwise_sum(ws.g.data(), n, ws.h);
      out[r] = (m + sdc_logf(s)) - x[target(seed_, static_cast<uint64_t>(t), static_cast<uint64_t>(cols_))];
    }
    out[TILE_ROWS] = lanes::pairwise_sum(out, TILE_ROWS, ws.h);
  }
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const auto n = static_cast<uint32_t>(cols_);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const int64_t t = first_row(tile) + r;
      const float* x = in[0] + t * cols_;
      const float m = fold_max([x](uint32_t j) { return x[j]; }, n);
      const float s = pairwise_sum([x, m](uint32_t j) { return sdc_expf(x[j] - m); }, n);
      out[r] = (m + sdc_logf(s)) - x[target(seed_, static_cast<uint64_t>(t), static_cast<uint64_t>(cols_))];
    }
    out[TILE_ROWS] = pairwise_sum([out](uint32_t j) { return out[j]; }, TILE_ROWS);
  }
  double tile_flops() const override { return 3.0 * TILE_ROWS * static_cast<double>(cols_); }
};

}  // namespace

Family family() { return row_family<ROW_FAMILY, CrossEntropyProblem>(); }

}  // namespace sdc::cross_entropy_f32

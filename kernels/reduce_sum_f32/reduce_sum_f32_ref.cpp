// reduce_sum_f32 on the CPU: the fast path reduces each level of the tree on vector lanes; the
// specification walks the tree element by element.
#include "../../src/core/row_problem.h"
#include "../../src/spec/fpmath.h"
#include "../../src/spec/lanes.h"
#include "reduce_sum_f32.h"

namespace sdc::reduce_sum_f32 {
namespace {

class ReduceProblem final : public RowTiledProblem {
 public:
  explicit ReduceProblem(const Case& c)
      : RowTiledProblem(c, dim(c, "rows"), dim(c, "cols"), TILE_ROWS, 1, 0, "y", "") {}

  std::vector<TensorInfo> inputs() const override { return {{"x", static_cast<uint64_t>(rows_ * cols_)}}; }
  void generate_input(size_t, uint64_t begin, uint64_t end, float* dst) const override {
    fill(0, input_window(dist_), begin, end, dst);
  }
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

std::string validate(const Case& c) {
  return check_shape(c, {{"rows", TILE_ROWS, 1 << 20, TILE_ROWS}, {"cols", 1, MAX_COLS, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<ReduceProblem>(c); }

}  // namespace

Family family() {
  return {"reduce_sum_f32", "fp32 row sums by a fixed pairwise tree that depends on the length alone",
          {Mode::exact},    {"cpu", "cuda"},
          {"rows", "cols"}, validate,
          prepare};
}

}  // namespace sdc::reduce_sum_f32

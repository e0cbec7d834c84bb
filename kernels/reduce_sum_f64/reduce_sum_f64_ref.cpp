// reduce_sum_f64 on the CPU: the fast path reduces each level of the tree on vector lanes (lanes.h); the
// specification walks the tree element by element. Registration, inputs and output geometry here too: a
// tile of 16 rows, two words per value (reduce_sum_f64.h).
#include <fmt/format.h>

#include <cstring>

#include "src/core/family_util.h"
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/reduce_sum_f64/reduce_sum_f64.h"

namespace sdc::reduce_sum_f64 {
namespace {

class ReduceProblem final : public Problem {
 public:
  explicit ReduceProblem(const Case& c)
      : rows_(dim(c, "rows")), cols_(dim(c, "cols")), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override { return {{"x", static_cast<uint64_t>(2 * rows_ * cols_)}}; }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern_f64(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(rows_ / TILE_ROWS); }
  uint32_t tile_elements() const override { return TILE_WORDS; }
  TileGrid tile_grid() const override {
    return {tile_count(), 1, fmt::format("the input's rows in blocks of {}, top to bottom", TILE_ROWS)};
  }
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    double y[TILE_ROWS];
    for (int r = 0; r < TILE_ROWS; ++r)
      y[r] = lanes::pairwise_sum(row(in[0], tile, r), static_cast<uint32_t>(cols_), ws.d);
    std::memcpy(out, y, sizeof y);
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    double y[TILE_ROWS];
    for (int r = 0; r < TILE_ROWS; ++r) {
      const double* x = row(in[0], tile, r);
      y[r] = pairwise_sum<double>(
          [x](uint32_t j) {
            double v;
            std::memcpy(&v, x + j, sizeof v);
            return v;
          },
          static_cast<uint32_t>(cols_));
    }
    std::memcpy(out, y, sizeof y);
  }
  uint64_t output_elements() const override { return static_cast<uint64_t>(2 * rows_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    tile = e / TILE_WORDS;
    offset = static_cast<uint32_t>(e % TILE_WORDS);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * TILE_WORDS + offset; }
  std::string element_name(uint64_t e) const override { return fmt::format("y[{}].{}", e / 2, e % 2 ? "hi" : "lo"); }
  std::string tile_name(uint64_t tile) const override {
    const auto r0 = static_cast<int64_t>(tile) * TILE_ROWS;
    return fmt::format("rows {}:{}", r0, r0 + TILE_ROWS);
  }
  double tile_flops() const override { return static_cast<double>(TILE_ROWS) * static_cast<double>(cols_); }

 private:
  // Row r of the tile in the word buffer x (read through memcpy and the lanes' copy only).
  const double* row(const float* x, uint64_t tile, int r) const {
    return reinterpret_cast<const double*>(x) + (static_cast<int64_t>(tile) * TILE_ROWS + r) * cols_;
  }

  int64_t rows_, cols_;
  Distribution dist_;
  uint64_t seed_;
};

std::string validate(const Case& c) {
  return check_shape(c, {{"rows", TILE_ROWS, 1 << 20, TILE_ROWS}, {"cols", 1, MAX_COLS, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<ReduceProblem>(c); }

}  // namespace

Family family() {
  Family f{"reduce_sum_f64",
           "fp64 row sums by a fixed pairwise tree that depends on the length alone",
           {Mode::exact},
           {"cpu", "cuda"},
           {"rows", "cols"},
           validate,
           prepare};
  f.value_words = 2;
  return f;
}

}  // namespace sdc::reduce_sum_f64

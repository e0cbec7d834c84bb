// rmsnorm_f64 on the CPU: the fast path squares and scales on vector lanes and reduces each level of the
// tree on them (lanes.h); the specification walks the tree element by element. Registration, inputs and
// output geometry here too: a tile of 4 rows, two words per value (rmsnorm_f64.h).
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "src/core/family_util.h"
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/rmsnorm_f64/rmsnorm_f64.h"

namespace sdc::rmsnorm_f64 {
namespace {

class RmsnormProblem final : public Problem {
 public:
  explicit RmsnormProblem(const Case& c)
      : rows_(dim(c, "rows")), cols_(dim(c, "cols")), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"x", static_cast<uint64_t>(2 * rows_ * cols_)}, {"w", static_cast<uint64_t>(2 * cols_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern_f64(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(rows_ / TILE_ROWS); }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(2 * TILE_ROWS * cols_); }
  TileGrid tile_grid() const override {
    return {tile_count(), 1, fmt::format("the input's rows in blocks of {}, top to bottom", TILE_ROWS)};
  }
  // The word buffers are copied into doubles (ws.dt: w, x's row, then its squares and y over them; ws.d: the
  // tree's scratch) and y back into words as bytes: the words hold doubles (f64.h), read through memcpy only.
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const auto n = static_cast<uint32_t>(cols_);
    ws.dt.resize(3 * static_cast<size_t>(n));
    double *w = ws.dt.data(), *x = w + n, *y = x + n;
    std::memcpy(w, in[1], n * sizeof(double));
    for (int r = 0; r < TILE_ROWS; ++r) {
      std::memcpy(x, row(in[0], tile, r), n * sizeof(double));
      lanes::square(x, y, n);
      const double ms = lanes::pairwise_sum(y, n, ws.d) / static_cast<double>(n);
      lanes::scale_mul(x, 1.0 / std::sqrt(ms + EPS), w, y, n);
      std::memcpy(out + 2 * r * cols_, y, n * sizeof(double));
    }
  }
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const auto n = static_cast<uint32_t>(cols_);
    for (int r = 0; r < TILE_ROWS; ++r) {
      const float* xr = row(in[0], tile, r);
      const double ms = pairwise_sum<double>(
                            [xr](uint32_t j) {
                              const double v = value(xr, j);
                              return v * v;
                            },
                            n) /
                        static_cast<double>(n);
      const double inv = 1.0 / std::sqrt(ms + EPS);
      for (uint32_t j = 0; j < n; ++j) {
        const double y = (value(xr, j) * inv) * value(in[1], j);
        std::memcpy(out + 2 * (r * cols_ + j), &y, sizeof y);
      }
    }
  }
  uint64_t output_elements() const override { return static_cast<uint64_t>(2 * rows_ * cols_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const uint64_t per_tile = tile_elements();
    tile = e / per_tile;
    offset = static_cast<uint32_t>(e % per_tile);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * tile_elements() + offset; }
  std::string element_name(uint64_t e) const override {
    const uint64_t v = e / 2, cols = static_cast<uint64_t>(cols_);
    return fmt::format("y[{}][{}].{}", v / cols, v % cols, e % 2 ? "hi" : "lo");
  }
  std::string tile_name(uint64_t tile) const override {
    const auto r0 = static_cast<int64_t>(tile) * TILE_ROWS;
    return fmt::format("rows {}:{}", r0, r0 + TILE_ROWS);
  }
  double tile_flops() const override { return 4.0 * TILE_ROWS * static_cast<double>(cols_); }

 private:
  // Row r of the tile in x's word buffer: its first word.
  const float* row(const float* x, uint64_t tile, int r) const {
    return x + 2 * (static_cast<int64_t>(tile) * TILE_ROWS + r) * cols_;
  }
  // Value j of a word buffer.
  static double value(const float* words, uint32_t j) {
    double v;
    std::memcpy(&v, words + 2 * static_cast<size_t>(j), sizeof v);
    return v;
  }

  int64_t rows_, cols_;
  Distribution dist_;
  uint64_t seed_;
};

std::string validate(const Case& c) {
  return check_shape(c, {{"rows", TILE_ROWS, 1 << 20, TILE_ROWS}, {"cols", 1, MAX_COLS, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<RmsnormProblem>(c); }

}  // namespace

Family family() {
  Family f{"rmsnorm_f64",
           "fp64 RMS normalization: pairwise sum of squares, IEEE sqrt and division, weight",
           {Mode::exact},
           {"cpu", "cuda"},
           {"rows", "cols"},
           validate,
           prepare};
  f.value_words = 2;
  return f;
}

}  // namespace sdc::rmsnorm_f64

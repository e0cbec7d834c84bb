// The CPU side every row-wise family shares (softmax, rmsnorm, reduce_sum, cross_entropy), from its
// description (row_family.h): the registration and shape check, the inputs, the output geometry and the walk
// over a tile's rows. A family adds its arithmetic on one row (fast path and specification) and, where its
// tiles have further outputs, on the tile's row outputs.
#pragma once

#include <fmt/format.h>

#include <memory>

#include "src/core/family_util.h"
#include "kernels/rows/row_family.h"

namespace sdc {

class RowTiledProblem : public Problem {
 public:
  std::vector<TensorInfo> inputs() const override {
    std::vector<TensorInfo> t{{family_.layout.input_names[0], static_cast<uint64_t>(rows_ * cols_)}};
    if (family_.layout.tensors() > 1) t.push_back({family_.layout.input_names[1], static_cast<uint64_t>(cols_)});
    return t;
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern(dist_, family_.window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(rows_ / rows_per_tile_); }
  TileGrid tile_grid() const override {
    return {tile_count(), 1, fmt::format("the input's rows in blocks of {}, top to bottom", rows_per_tile_)};
  }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(rows_per_tile_ * per_row_ + extra_); }
  uint64_t output_elements() const override {
    return static_cast<uint64_t>(rows_ * per_row_) + tile_count() * static_cast<uint64_t>(extra_);
  }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const auto row_outputs = static_cast<uint64_t>(rows_ * per_row_);
    const auto per_tile = static_cast<uint64_t>(rows_per_tile_ * per_row_);
    if (e < row_outputs) {
      tile = e / per_tile;
      offset = static_cast<uint32_t>(e % per_tile);
    } else {
      tile = (e - row_outputs) / static_cast<uint64_t>(extra_);
      offset = static_cast<uint32_t>(per_tile + (e - row_outputs) % static_cast<uint64_t>(extra_));
    }
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    const auto per_tile = static_cast<uint64_t>(rows_per_tile_ * per_row_);
    if (offset < per_tile) return tile * per_tile + offset;
    return static_cast<uint64_t>(rows_ * per_row_) + tile * static_cast<uint64_t>(extra_) + (offset - per_tile);
  }
  std::string element_name(uint64_t e) const override {
    const auto row_outputs = static_cast<uint64_t>(rows_ * per_row_);
    if (e >= row_outputs) return fmt::format("{}[{}]", extra_name_, e - row_outputs);
    if (per_row_ == 1) return fmt::format("{}[{}]", out_name_, e);
    return fmt::format("{}[{}][{}]", out_name_, e / static_cast<uint64_t>(per_row_),
                       e % static_cast<uint64_t>(per_row_));
  }
  std::string tile_name(uint64_t tile) const override {
    const auto r0 = static_cast<int64_t>(tile) * rows_per_tile_;
    return fmt::format("rows {}:{}", r0, r0 + rows_per_tile_);
  }

  // Each row of the tile in turn (row_fast, row_spec) into its outputs, then the tile's own outputs after the
  // rows' (finish_tile and finish_tile_spec, which only families with tile_extra outputs override).
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const final {
    ws.g.resize(static_cast<size_t>(cols_));
    for (int r = 0; r < rows_per_tile_; ++r) {
      const int64_t t = first_row(tile) + r;
      row_fast(in[0] + t * cols_, in, t, out + r * per_row_, ws);
    }
    finish_tile(out, ws);
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const final {
    for (int r = 0; r < rows_per_tile_; ++r) {
      const int64_t t = first_row(tile) + r;
      row_spec(in[0] + t * cols_, in, t, out + r * per_row_);
    }
    finish_tile_spec(out);
  }

  // A family's problem inherits this constructor (row_family makes it from a validated case and F).
  RowTiledProblem(const Case& c, const RowFamily& f)
      : family_(f),
        rows_(dim(c, f.layout.rows_key)),
        cols_(dim(c, f.layout.cols_key)),
        rows_per_tile_(f.tile_rows),
        per_row_(f.layout.elementwise ? cols_ : 1),
        extra_(f.layout.tile_extra),
        out_name_(f.layout.out_name),
        extra_name_(f.layout.extra_name),
        dist_(c.distribution),
        seed_(c.data_seed) {}

 protected:
  // Row t of the input x (t counts rows from the input's start; x points at its cols elements; in: all the
  // inputs, for rmsnorm's w) into y, its per_row outputs: the fast path (ws.g holds cols floats of scratch)
  // and the specification written plainly, bit-identical to it.
  virtual void row_fast(const float* x, const float* const* in, int64_t t, float* y, Workspace& ws) const = 0;
  virtual void row_spec(const float* x, const float* const* in, int64_t t, float* y) const = 0;
  // The tile's extra outputs, after its rows' outputs `out`.
  virtual void finish_tile(float*, Workspace&) const {}
  virtual void finish_tile_spec(float*) const {}

  int64_t first_row(uint64_t tile) const { return static_cast<int64_t>(tile) * rows_per_tile_; }
  uint32_t n() const { return static_cast<uint32_t>(cols_); }

  const RowFamily& family_;
  int64_t rows_, cols_;
  int rows_per_tile_;
  int64_t per_row_;
  int extra_;
  const char* out_name_;
  const char* extra_name_;
  Distribution dist_;
  uint64_t seed_;
};

// The registration of the row family F: exact mode, on CPUs and CUDA, shape keys rows and cols (F's names),
// rows a multiple of tile_rows up to 2^20 and cols in [min_cols, max_cols]; P, the family's problem, is made
// from a validated case.
template <const RowFamily& F>
std::string validate_rows(const Case& c) {
  return check_shape(c, {{F.layout.rows_key, F.tile_rows, 1 << 20, F.tile_rows},
                         {F.layout.cols_key, F.layout.min_cols, F.max_cols, 1}});
}
template <const RowFamily& F, class P>
std::unique_ptr<Problem> prepare_rows(const Case& c) {
  return std::make_unique<P>(c, F);
}
template <const RowFamily& F, class P>
Family row_family() {
  return {F.id,
          F.description,
          {Mode::exact},
          {"cpu", "cuda"},
          {F.layout.rows_key, F.layout.cols_key},
          validate_rows<F>,
          prepare_rows<F, P>};
}

}  // namespace sdc

// The geometry shared by the row-wise families (softmax, rmsnorm, reduce_sum, cross_entropy): an input
// of rows x cols, a tile of consecutive rows, per_row outputs per row stored row-major, and optionally
// one extra output per tile (a per-tile reduction) stored after all row outputs.
#pragma once

#include <fmt/format.h>

#include "family_util.h"

namespace sdc {

class RowTiledProblem : public Problem {
 public:
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

 protected:
  RowTiledProblem(const Case& c, int64_t rows, int64_t cols, int rows_per_tile, int64_t per_row, int extra,
                  const char* out_name, const char* extra_name)
      : rows_(rows),
        cols_(cols),
        rows_per_tile_(rows_per_tile),
        per_row_(per_row),
        extra_(extra),
        out_name_(out_name),
        extra_name_(extra_name),
        dist_(c.distribution),
        seed_(c.data_seed) {}

  int64_t first_row(uint64_t tile) const { return static_cast<int64_t>(tile) * rows_per_tile_; }
  void fill(uint32_t tensor, ExponentWindow w, uint64_t begin, uint64_t end, float* dst) const {
    fill_pattern(dist_, w, tensor_key(seed_, tensor), begin, end, dst);
  }

  int64_t rows_, cols_;
  int rows_per_tile_;
  int64_t per_row_;
  int extra_;
  const char* out_name_;
  const char* extra_name_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace sdc

// The host side the bf16 tensor-core attention families share: shape checks and the output geometry
// (attention_mma.h: tiles of 64 query rows x dim of one head, head-major, contiguous in the output).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "src/core/family.h"
#include "src/core/shape.h"
#include "kernels/attention_mma/attention_mma.h"

namespace sdc::attention_mma {

inline std::string validate_shape(const Case& c) {
  if (std::string err = check_shape(c, {{"heads", 1, 4096, 1},
                                        {"seq", TILE_ROWS, MAX_SEQ, KEY_BLOCK},
                                        {"dim", DIM_STEP, MAX_DIM, DIM_STEP},
                                        {"causal", 0, 1, 1}});
      !err.empty())
    return err;
  if (dim(c, "heads") * dim(c, "seq") * dim(c, "dim") > (int64_t{1} << 28))
    return fmt::format("case {}: an input of more than 2^28 elements", c.id);
  return "";
}

class AttentionGeometry : public Problem {
 public:
  explicit AttentionGeometry(const Case& c)
      : h_(dim(c, "heads")), s_(dim(c, "seq")), d_(dim(c, "dim")), causal_(dim(c, "causal") != 0) {}

  std::vector<TensorInfo> inputs() const override {
    const auto n = static_cast<uint64_t>(h_ * s_ * d_);
    return {{"q", n}, {"k", n}, {"v", n}};
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(h_ * (s_ / TILE_ROWS)); }
  TileGrid tile_grid() const override {
    return {static_cast<uint64_t>(h_), static_cast<uint64_t>(s_ / TILE_ROWS),
            fmt::format("heads down, query rows across in blocks of {}", TILE_ROWS)};
  }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(TILE_ROWS * d_); }
  uint64_t output_elements() const override { return static_cast<uint64_t>(h_ * s_ * d_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    tile = e / tile_elements();  // tiles are contiguous row blocks of the heads x seq x dim output
    offset = static_cast<uint32_t>(e % tile_elements());
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * tile_elements() + offset; }
  std::string element_name(uint64_t e) const override {
    const auto ee = static_cast<int64_t>(e);
    return fmt::format("O[{}][{}][{}]", ee / (s_ * d_), ee / d_ % s_, ee % d_);
  }
  std::string tile_name(uint64_t tile) const override {
    const int64_t i0 = first_row(tile);
    return fmt::format("O[{}][{}:{}][:]", head(tile), i0, i0 + TILE_ROWS);
  }
  double tile_flops() const override {  // two products of 64 rows x keys x dim multiply-adds
    const double keys = causal_ ? static_cast<double>(s_) / 2 : static_cast<double>(s_);
    return 4.0 * TILE_ROWS * keys * static_cast<double>(d_);
  }

 protected:
  int64_t head(uint64_t tile) const { return static_cast<int64_t>(tile) / (s_ / TILE_ROWS); }
  int64_t first_row(uint64_t tile) const { return static_cast<int64_t>(tile) % (s_ / TILE_ROWS) * TILE_ROWS; }
  // Keys of query row i (absolute row index within the head).
  int64_t keys_of(int64_t i) const { return causal_ ? i + 1 : s_; }

  int64_t h_, s_, d_;
  bool causal_;
};

}  // namespace sdc::attention_mma

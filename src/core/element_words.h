// The CPU problem of a family with one fp32 input x[n] and WORDS output words per input element, in tiles of
// TILE elements, first to last (convert_f32, elementwise_f32): its input, output geometry and names. A family
// derives from it and adds the tile's arithmetic (compute_tile, compute_tile_scalar) and its flop count. `Bits`
// gives the bits of input element i from the family's generator (its specification header, shared with the
// device).
#pragma once

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/core/family_util.h"

namespace sdc {

template <int TILE, int WORDS, uint32_t (*Bits)(Distribution, uint64_t, uint64_t)>
class ElementWordsProblem : public Problem {
 public:
  static constexpr uint32_t TILE_WORDS = static_cast<uint32_t>(TILE) * WORDS;

  // word_names[k]: the name of word k of an element ("y[i].<name>"); WORDS of them, static.
  ElementWordsProblem(const Case& c, const char* const* word_names)
      : n_(dim(c, "n")), dist_(c.distribution), seed_(c.data_seed), word_names_(word_names) {}

  std::vector<TensorInfo> inputs() const override { return {{"x", static_cast<uint64_t>(n_)}}; }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const uint64_t key = tensor_key(seed_, static_cast<uint32_t>(tensor));
    for (uint64_t i = begin; i < end; ++i) {
      const uint32_t u = Bits(dist_, key, i);
      std::memcpy(dst + (i - begin), &u, sizeof u);
    }
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(n_ / TILE); }
  uint32_t tile_elements() const override { return TILE_WORDS; }
  TileGrid tile_grid() const override {
    return {tile_count(), 1, fmt::format("the input in blocks of {} elements, first to last", TILE)};
  }
  uint64_t output_elements() const override { return static_cast<uint64_t>(n_) * WORDS; }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    tile = e / TILE_WORDS;
    offset = static_cast<uint32_t>(e % TILE_WORDS);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * TILE_WORDS + offset; }
  std::string element_name(uint64_t e) const override {
    return fmt::format("y[{}].{}", e / WORDS, word_names_[e % WORDS]);
  }
  std::string tile_name(uint64_t tile) const override {
    const uint64_t i0 = tile * TILE;
    return fmt::format("x[{}:{}]", i0, i0 + TILE);
  }

 private:
  int64_t n_;
  Distribution dist_;
  uint64_t seed_;
  const char* const* word_names_;
};

}  // namespace sdc

// The output geometry shared by the GEMM families (gemm_f32, gemm_f64, the exact-integer and the recorded
// tensor-core GEMMs): C is M x N (fp32, or binary64 in two words) in 64 x 64 tiles, tile t = row block t / (N/64),
// column block t % (N/64), offsets row-major in the tile. Families derive from it and add their inputs and arithmetic;
// M and N are multiples of 64 (each family's validation says so).
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>

#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc {

class GemmTiles : public Problem {
 public:
  static constexpr int T = 64;
  // words: 32-bit words per element of C, 1 (fp32) or 2 (binary64, low word first: src/spec/f64.h). Offsets in a
  // tile and logical elements count words; a two-word element is named C[i][j].lo or .hi.
  explicit GemmTiles(const Case& c, int words = 1) : m_(dim(c, "m")), n_(dim(c, "n")), k_(dim(c, "k")), w_(words) {}

  uint64_t tile_count() const override { return static_cast<uint64_t>((m_ / T) * (n_ / T)); }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(T * T * w_); }
  uint64_t output_elements() const override { return static_cast<uint64_t>(m_ * n_ * w_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const int64_t v = static_cast<int64_t>(e) / w_, i = v / n_, j = v % n_;
    tile = static_cast<uint64_t>((i / T) * (n_ / T) + j / T);
    offset = static_cast<uint32_t>(((i % T) * T + j % T) * w_ + static_cast<int64_t>(e) % w_);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    const int64_t v = offset / w_;
    return static_cast<uint64_t>(((row_block(tile) * T + v / T) * n_ + col_block(tile) * T + v % T) * w_ + offset % w_);
  }
  std::string element_name(uint64_t e) const override {
    const int64_t v = static_cast<int64_t>(e) / w_;
    if (w_ == 1) return fmt::format("C[{}][{}]", v / n_, v % n_);
    return fmt::format("C[{}][{}].{}", v / n_, v % n_, e % 2 ? "hi" : "lo");
  }
  std::string tile_name(uint64_t tile) const override {
    const int64_t r0 = row_block(tile) * T, c0 = col_block(tile) * T;
    return fmt::format("C[{}:{}][{}:{}]", r0, r0 + T, c0, c0 + T);
  }
  double tile_flops() const override { return 2.0 * T * T * static_cast<double>(k_); }
  TileGrid tile_grid() const override {
    return {static_cast<uint64_t>(m_ / T), static_cast<uint64_t>(n_ / T),
            "C in 64 x 64 blocks: rows of C down, columns across"};
  }

 protected:
  int64_t row0(uint64_t tile) const { return row_block(tile) * T; }
  int64_t col0(uint64_t tile) const { return col_block(tile) * T; }
  int64_t row_block(uint64_t tile) const { return static_cast<int64_t>(tile) / (n_ / T); }
  int64_t col_block(uint64_t tile) const { return static_cast<int64_t>(tile) % (n_ / T); }

  int64_t m_, n_, k_;
  int w_;
};

// The registration of a plain GEMM family (gemm_f32, gemm_f64): exact mode on the CPU and CUDA, dimensions m, n,
// k with M and N multiples of the tile up to 16384 and K from 1 to MaxK; P is its problem, built from a case.
template <class P, int64_t MaxK>
Family plain_gemm_family(const char* id, const char* description) {
  const auto validate = [](const Case& c) {
    return check_shape(
        c, {{"m", GemmTiles::T, 16384, GemmTiles::T}, {"n", GemmTiles::T, 16384, GemmTiles::T}, {"k", 1, MaxK, 1}});
  };
  const auto prepare = [](const Case& c) -> std::unique_ptr<Problem> { return std::make_unique<P>(c); };
  return {id, description, {Mode::exact}, {"cpu", "cuda"}, {"m", "n", "k"}, validate, prepare};
}

}  // namespace sdc

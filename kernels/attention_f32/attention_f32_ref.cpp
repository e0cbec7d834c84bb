// attention_f32 on the CPU. The fast path runs the two products through gemm_f32's exact tile kernel
// (the same fma chains in the same order) and the softmax through the vectorized lanes.
//
// Causal tiles in the fast path: the keys below the tile's first row are seen by every row of the tile,
// so their part of every P V chain runs through the gemm kernel; each row then continues its own chain
// over the keys of the diagonal block up to itself. Masked keys take no part, as the specification says
// (so a corrupted V row never reaches the rows that do not attend to it).
#include <fmt/format.h>

#include <cmath>

#include "src/core/family_util.h"
#include "src/spec/fpmath.h"
#include "src/spec/lanes.h"
#include "kernels/gemm_cpu/gemm_cpu.h"
#include "kernels/attention_f32/attention_f32.h"

namespace sdc::attention_f32 {
namespace {

// Copies the first cols columns of a rows x ld matrix into dst as a dense rows x cols matrix.
void pack_rows(const float* src, int64_t ld, int64_t cols, std::vector<float>& dst) {
  dst.resize(static_cast<size_t>(TILE_ROWS * cols));
  for (int r = 0; r < TILE_ROWS; ++r) std::copy(src + r * ld, src + r * ld + cols, dst.data() + r * cols);
}

class AttentionProblem final : public Problem {
 public:
  explicit AttentionProblem(const Case& c)
      : h_(dim(c, "heads")),
        s_(dim(c, "seq")),
        d_(dim(c, "dim")),
        causal_(dim(c, "causal") != 0),
        scale_(1.0f / std::sqrt(static_cast<float>(d_))),
        dist_(c.distribution),
        seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    const auto n = static_cast<uint64_t>(h_ * s_ * d_);
    return {{"q", n}, {"k", n}, {"v", n}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    fill_pattern(dist_, input_window(t, dist_), tensor_key(seed_, t), begin, end, dst);
  }
  uint64_t tile_count() const override { return static_cast<uint64_t>(h_ * (s_ / TILE_ROWS)); }
  TileGrid tile_grid() const override {
    return {static_cast<uint64_t>(h_), static_cast<uint64_t>(s_ / TILE_ROWS),
            fmt::format("heads down, query rows across in blocks of {}", TILE_ROWS)};
  }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(TILE_ROWS * d_); }

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const int64_t head = static_cast<int64_t>(tile) / (s_ / TILE_ROWS);
    const int64_t i0 = static_cast<int64_t>(tile) % (s_ / TILE_ROWS) * TILE_ROWS;
    const int64_t keys = causal_ ? i0 + TILE_ROWS : s_;  // widest key range of the tile
    const int64_t shared_keys = causal_ ? i0 : s_;       // keys every row of the tile attends to
    const float* q = in[0] + head * s_ * d_;
    const float* k = in[1] + head * s_ * d_;
    const float* v = in[2] + head * s_ * d_;
    // ws.g: K^T (D x keys), then scores/probabilities (TILE_ROWS x keys), then the P V chains.
    const size_t kt_size = static_cast<size_t>(d_ * keys), p_size = static_cast<size_t>(TILE_ROWS * keys);
    ws.g.resize(kt_size + p_size + static_cast<size_t>(TILE_ROWS * d_));
    float* kt = ws.g.data();
    float* p = kt + kt_size;
    float* o = p + p_size;
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t d = 0; d < d_; ++d) kt[d * keys + j] = k[j * d_ + d];
    gemm_cpu::tile_fast(q, kt, d_, keys, i0, 0, TILE_ROWS, keys, p, ws.f);
    float l[TILE_ROWS];
    for (int r = 0; r < TILE_ROWS; ++r) {
      float* row = p + r * keys;
      const auto n = static_cast<uint32_t>(causal_ ? i0 + r + 1 : s_);
      lanes::scale(row, scale_, row, n);
      const float m = lanes::fold_max(row, n);
      lanes::exp_shifted(row, m, row, n);
      l[r] = lanes::pairwise_sum(row, n, ws.h);
    }
    if (shared_keys > 0) {
      // The kernel wants P dense over the shared keys (leading dimension shared_keys).
      const float* pa = p;
      if (shared_keys != keys) {
        pack_rows(p, keys, shared_keys, ws.h);
        pa = ws.h.data();
      }
      gemm_cpu::tile_fast(pa, v, shared_keys, d_, 0, 0, TILE_ROWS, d_, o, ws.f);
    } else {
      std::fill(o, o + TILE_ROWS * d_, 0.0f);
    }
    for (int r = 0; causal_ && r < TILE_ROWS; ++r)
      for (int64_t j = shared_keys; j <= i0 + r; ++j)
        lanes::fma_accumulate(o + r * d_, p[r * keys + j], v + j * d_, static_cast<uint32_t>(d_));
    for (int r = 0; r < TILE_ROWS; ++r) lanes::divide(o + r * d_, l[r], out + r * d_, static_cast<uint32_t>(d_));
  }

  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const int64_t head = static_cast<int64_t>(tile) / (s_ / TILE_ROWS);
    const int64_t i0 = static_cast<int64_t>(tile) % (s_ / TILE_ROWS) * TILE_ROWS;
    const float* q = in[0] + head * s_ * d_;
    const float* k = in[1] + head * s_ * d_;
    const float* v = in[2] + head * s_ * d_;
    std::vector<float> s(static_cast<size_t>(s_));
    for (int64_t i = i0; i < i0 + TILE_ROWS; ++i) {
      const auto n = static_cast<uint32_t>(causal_ ? i + 1 : s_);
      for (uint32_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t d = 0; d < d_; ++d) acc = std::fma(q[i * d_ + d], k[j * d_ + d], acc);
        s[j] = acc * scale_;
      }
      const float m = fold_max([&](uint32_t j) { return s[j]; }, n);
      for (uint32_t j = 0; j < n; ++j) s[j] = sdc_expf(s[j] - m);
      const float l = pairwise_sum([&](uint32_t j) { return s[j]; }, n);
      for (int64_t d = 0; d < d_; ++d) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < n; ++j) acc = std::fma(s[j], v[j * d_ + d], acc);
        out[(i - i0) * d_ + d] = acc / l;
      }
    }
  }

  uint64_t output_elements() const override { return static_cast<uint64_t>(h_ * s_ * d_); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    const uint64_t per_tile = static_cast<uint64_t>(TILE_ROWS * d_);  // tiles are contiguous row blocks
    tile = e / per_tile;
    offset = static_cast<uint32_t>(e % per_tile);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override {
    return tile * static_cast<uint64_t>(TILE_ROWS * d_) + offset;
  }
  std::string element_name(uint64_t e) const override {
    const auto ee = static_cast<int64_t>(e);
    return fmt::format("O[{}][{}][{}]", ee / (s_ * d_), ee / d_ % s_, ee % d_);
  }
  std::string tile_name(uint64_t tile) const override {
    const int64_t head = static_cast<int64_t>(tile) / (s_ / TILE_ROWS);
    const int64_t i0 = static_cast<int64_t>(tile) % (s_ / TILE_ROWS) * TILE_ROWS;
    return fmt::format("O[{}][{}:{}][:]", head, i0, i0 + TILE_ROWS);
  }
  double tile_flops() const override {
    const double keys = causal_ ? static_cast<double>(s_) / 2 : static_cast<double>(s_);
    return 4.0 * TILE_ROWS * keys * static_cast<double>(d_);
  }

 private:
  int64_t h_, s_, d_;
  bool causal_;
  float scale_;
  Distribution dist_;
  uint64_t seed_;
};

std::string validate(const Case& c) {
  return check_shape(
      c, {{"heads", 1, 4096, 1}, {"seq", TILE_ROWS, MAX_SEQ, TILE_ROWS}, {"dim", 1, MAX_DIM, 1}, {"causal", 0, 1, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<AttentionProblem>(c); }

}  // namespace

Family family() {
  return {"attention_f32",
          "fp32 attention forward per head: scores, row softmax with the project's exp, P.V (causal or not)",
          {Mode::exact},
          {"cpu", "cuda"},
          {"heads", "seq", "dim", "causal"},
          validate,
          prepare};
}

}  // namespace sdc::attention_f32

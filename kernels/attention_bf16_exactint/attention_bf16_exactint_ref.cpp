// attention_bf16_exactint on the CPU: the exact reference (the golden and the CPU backend's kernel).
//
// Both products are summed in double in a fixed order (scores over d = 0..dim-1, P . V over j = 0..n-1),
// each rounded once to fp32. For the pattern's inputs this is the exact result the tensor cores must give
// (attention_bf16_exactint.h): every product of two pattern elements is exact in double (8 x 1 significant
// bits) and every partial sum is a multiple of the unit below 2^24 units, far inside double's 53 bits, so
// no addition rounds and the final conversion to fp32 is exact. An input outside the pattern (only a
// corrupted one: a fault drill, or memory that flipped) still gives a deterministic result that depends
// on it, because both paths use the same order. tests/unit/kernels/test_attention_bf16.cpp recomputes tiles with
// int64 sums of the pattern's integers and compares bit for bit.
#include <vector>

#include "src/core/family_util.h"
#include "src/spec/lanes.h"
#include "kernels/attention_mma/attention_problem.h"
#include "kernels/attention_bf16_exactint/attention_bf16_exactint.h"

namespace sdc::attention_bf16_exactint {
namespace {

using attention_mma::TILE_ROWS;

class ExactAttention final : public attention_mma::AttentionGeometry {
 public:
  explicit ExactAttention(const Case& c)
      : AttentionGeometry(c),
        pat_(make_pattern(dim(c, "seq"), dim(c, "dim"), c.data_seed, c.distribution == Distribution::mantissa_walk)) {}

  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    for (uint64_t i = begin; i < end; ++i) dst[i - begin] = attention_mma::bf16_value(element_bits(pat_, t, i));
  }

  // The fast path: K transposed to d-major doubles so that the score chains of a row run side by side
  // (each chain still over d in order), the softmax on the vector lanes, and P . V with the chains of the
  // dim outputs side by side (each over j in order). Bit-identical to the specification below.
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const int64_t i0 = first_row(tile), keys = keys_of(i0 + TILE_ROWS - 1);
    const float* q = in[0] + head(tile) * s_ * d_;
    const float* k = in[1] + head(tile) * s_ * d_;
    const float* v = in[2] + head(tile) * s_ * d_;
    const float scale = score_scale(pat_, head(tile));
    std::vector<double> kt(static_cast<size_t>(d_ * keys)), acc(static_cast<size_t>(keys > d_ ? keys : d_));
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t d = 0; d < d_; ++d) kt[d * keys + j] = k[j * d_ + d];
    ws.f.resize(static_cast<size_t>(2 * keys));
    float* s = ws.f.data();
    float* p = s + keys;
    for (int r = 0; r < TILE_ROWS; ++r) {
      const int64_t i = i0 + r, n = keys_of(i);
      std::fill(acc.begin(), acc.begin() + n, 0.0);
      for (int64_t d = 0; d < d_; ++d) {
        const double qd = q[i * d_ + d];
        const double* kd = kt.data() + d * keys;
        for (int64_t j = 0; j < n; ++j) acc[j] += qd * kd[j];
      }
      for (int64_t j = 0; j < n; ++j) s[j] = static_cast<float>(acc[j]) * scale;
      const auto nn = static_cast<uint32_t>(n);
      lanes::exp_shifted(s, lanes::fold_max(s, nn), p, nn);
      const float l = lanes::pairwise_sum(p, nn, ws.h);
      std::fill(acc.begin(), acc.begin() + d_, 0.0);
      for (int64_t j = 0; j < n; ++j) {
        const double w = attention_mma::grid_weight(p[j]);
        const float* vj = v + j * d_;
        for (int64_t d = 0; d < d_; ++d) acc[d] += w * vj[d];
      }
      for (int64_t d = 0; d < d_; ++d) out[r * d_ + d] = static_cast<float>(acc[d]) / l;
    }
  }

  // The specification written plainly (attention_mma.h, this family's scale and weight).
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const int64_t i0 = first_row(tile);
    const float* q = in[0] + head(tile) * s_ * d_;
    const float* k = in[1] + head(tile) * s_ * d_;
    const float* v = in[2] + head(tile) * s_ * d_;
    const float scale = score_scale(pat_, head(tile));
    std::vector<float> s(static_cast<size_t>(s_));
    for (int64_t i = i0; i < i0 + TILE_ROWS; ++i) {
      const auto n = static_cast<uint32_t>(keys_of(i));
      for (uint32_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t d = 0; d < d_; ++d) acc += static_cast<double>(q[i * d_ + d]) * static_cast<double>(k[j * d_ + d]);
        s[j] = static_cast<float>(acc) * scale;
      }
      const float m = fold_max([&](uint32_t j) { return s[j]; }, n);
      for (uint32_t j = 0; j < n; ++j) s[j] = sdc_expf(s[j] - m);
      const float l = pairwise_sum([&](uint32_t j) { return s[j]; }, n);
      for (int64_t d = 0; d < d_; ++d) {
        double acc = 0.0;
        for (uint32_t j = 0; j < n; ++j)
          acc += static_cast<double>(attention_mma::grid_weight(s[j])) * static_cast<double>(v[j * d_ + d]);
        out[(i - i0) * d_ + d] = static_cast<float>(acc) / l;
      }
    }
  }

 private:
  Pattern pat_;
};

std::string validate(const Case& c) {
  if (std::string err = attention_mma::validate_shape(c); !err.empty()) return err;
  if (c.distribution != Distribution::uniform && c.distribution != Distribution::mantissa_walk)
    return fmt::format("case {}: exact-integer patterns define the distributions uniform and mantissa_walk only", c.id);
  return "";
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<ExactAttention>(c); }

}  // namespace

Family family() {
  return {"attention_bf16_exactint",
          "bf16 tensor-core attention forward (scores, fp32 softmax with the project's exp, P on a 2^-8 grid, "
          "P.V) on inputs whose every partial sum is exact",
          {Mode::exact_integer},
          {"cpu", "cuda"},
          {"heads", "seq", "dim", "causal"},
          validate,
          prepare};
}

}  // namespace sdc::attention_bf16_exactint

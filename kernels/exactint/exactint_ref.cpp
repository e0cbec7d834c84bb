// The exact reference of the exact-integer GEMM families (the golden and the CPU backend's kernel).
//
// Specification of C[i][j] for the tile of row block R, column block Q (u = tile_unit(R, Q)):
//  * each A element of row i is read as an integer a = A / 2^(a_block(R) - (p-1)) and each B element of
//    row j as b = B / 2^b_block(Q); the row is "in bound" when every element is such an integer with
//    |a| <= (2^p - 1) * 2^(a_count-1), |b| <= 2^(b_count-1) (the generator's elements always are);
//  * when rows i and j are in bound, C[i][j] = (sum_k a * b) * 2^u: the sum in int64, exactly; by the
//    bound (*) of exactint.h |sum| < 2^W <= 2^24, so the conversion to fp32 and the scaling are exact;
//  * otherwise (only a corrupted input does that: a fault drill, or memory that flipped) C[i][j] is the
//    double-precision sum of A[i][k] * B[j][k] in k order, rounded once to fp32: deterministic, and a
//    changed input still changes the output, where a rejected integer conversion would hide it.
// The double sum of in-bound rows is exact too (each product has at most 48 significant bits, each
// partial sum is a multiple of 2^u below 2^(u+24)), so it equals the integer result: a path may compute
// a whole tile in double when any of its rows is out of bound without changing any in-bound output.
#include "kernels/exactint/exactint_ref.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "src/core/gemm_tiles.h"
#include "src/core/shape.h"
#include "src/spec/clones.h"

namespace sdc::exactint {
namespace {

constexpr int KC = 128;  // k per chunk of the fast path: two 32 KiB integer panels stay in L1/L2

// The scaling and the cap of one operand block: x is in bound when x * inv_unit is an integer within cap.
struct Operand {
  double inv_unit;  // 2^-unit, exact in double: |unit| < 200
  double cap;
};

// x in units of the block, when it is in bound. x * 2^-unit is exact in double (a float times a power of
// two in [2^-200, 2^200] stays far inside double's normal range), so no rounding can fake an integer.
inline bool to_units(float x, const Operand& op, int32_t& v) {
  const double s = static_cast<double>(x) * op.inv_unit;
  if (!(std::fabs(s) <= op.cap) || s != std::trunc(s)) return false;  // NaN fails the first test
  v = static_cast<int32_t>(s);                                        // |s| <= cap < 2^24
  return true;
}

static_assert(GemmTiles::T == TILE);

class ExactIntProblem final : public GemmTiles {
 public:
  ExactIntProblem(const Format& f, const Case& c) : GemmTiles(c), pat_(case_pattern(f, c)) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * k_)}, {"b", static_cast<uint64_t>(n_ * k_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    for (uint64_t i = begin; i < end; ++i) dst[i - begin] = element_value(pat_.f, tensor_element(pat_, t, i));
  }
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace&) const override;
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override;

 private:
  Operand a_operand(int64_t rb) const {
    const int unit = a_block_exp(pat_, rb) - (pat_.f.significand_bits - 1);
    return {std::ldexp(1.0, -unit), std::ldexp(double((1 << pat_.f.significand_bits) - 1), pat_.a_count - 1)};
  }
  Operand b_operand(int64_t cb) const {
    return {std::ldexp(1.0, -b_block_exp(pat_, cb)), std::ldexp(1.0, pat_.b_count - 1)};
  }
  float scale(int64_t sum, uint64_t tile) const {
    return static_cast<float>(sum) * pow2f(tile_unit(pat_, row_block(tile), col_block(tile)));
  }
  // The out-of-bound rule: the double sum in k order, rounded once.
  float double_sum(const float* a, const float* b) const {
    double s = 0.0;
    for (int64_t k = 0; k < k_; ++k) s += static_cast<double>(a[k]) * static_cast<double>(b[k]);
    return static_cast<float>(s);
  }
  void tile_in_double(const float* A, const float* B, uint64_t tile, float* out) const {
    const int64_t r0 = row_block(tile) * TILE, c0 = col_block(tile) * TILE;
    for (int r = 0; r < TILE; ++r)
      for (int c = 0; c < TILE; ++c) out[r * TILE + c] = double_sum(A + (r0 + r) * k_, B + (c0 + c) * k_);
  }

  Pattern pat_;
};

// acc[r][c] += sum over the chunk of pa[r][kk] * pb[kk][c]. The chunk's sums are partial sums of
// in-bound products, below 2^W <= 2^24 by (*), so int32 holds them exactly before they join the int64
// totals; integer addition is associative, so vectorizing over c (AVX2 where the CPU has it) changes no bit.
SDC_TARGET_CLONES("avx2", "default") void accumulate_chunk(const int32_t* pa, const int32_t* pb, int kc, int64_t* acc) {
  for (int r = 0; r < TILE; ++r) {
    int32_t part[TILE] = {};
    for (int kk = 0; kk < kc; ++kk) {
      const int32_t a = pa[r * KC + kk];
      const int32_t* b = pb + kk * TILE;
      for (int c = 0; c < TILE; ++c) part[c] += a * b[c];
    }
    for (int c = 0; c < TILE; ++c) acc[r * TILE + c] += part[c];
  }
}

// The fast path: chunks of KC k-steps converted to integer panels (A as rows, B transposed so that the
// innermost loop runs over 64 contiguous outputs), products in int32 (|a * b| < 2^W, see (*)), sums in
// int64. Any out-of-bound element sends the whole tile to the double rule (same bits, see above).
void ExactIntProblem::compute_tile(const float* const* in, uint64_t tile, float* out, Workspace&) const {
  const int64_t r0 = row_block(tile) * TILE, c0 = col_block(tile) * TILE;
  const Operand opa = a_operand(row_block(tile)), opb = b_operand(col_block(tile));
  const float* A = in[0] + r0 * k_;
  const float* B = in[1] + c0 * k_;
  alignas(64) int64_t acc[TILE * TILE] = {};
  alignas(64) int32_t pa[TILE * KC];
  alignas(64) int32_t pb[KC * TILE];
  for (int64_t k0 = 0; k0 < k_; k0 += KC) {
    const int kc = static_cast<int>(k_ - k0 < KC ? k_ - k0 : KC);
    bool ok = true;
    for (int r = 0; r < TILE; ++r)
      for (int kk = 0; kk < kc; ++kk) {
        ok &= to_units(A[r * k_ + k0 + kk], opa, pa[r * KC + kk]);
        ok &= to_units(B[r * k_ + k0 + kk], opb, pb[kk * TILE + r]);
      }
    if (!ok) return tile_in_double(in[0], in[1], tile, out);
    accumulate_chunk(pa, pb, kc, acc);
  }
  for (int e = 0; e < TILE * TILE; ++e) out[e] = scale(acc[e], tile);
}

// The specification written plainly: per output, both rows converted, then one int64 sum over k.
__attribute__((optimize("no-tree-vectorize"))) void ExactIntProblem::compute_tile_scalar(const float* const* in,
                                                                                         uint64_t tile,
                                                                                         float* out) const {
  const int64_t r0 = row_block(tile) * TILE, c0 = col_block(tile) * TILE;
  const Operand opa = a_operand(row_block(tile)), opb = b_operand(col_block(tile));
  // Rows of the tile as integers, with whether each is in bound.
  std::vector<int32_t> ia(static_cast<size_t>(TILE * k_)), ib(static_cast<size_t>(TILE * k_));
  bool ok_a[TILE], ok_b[TILE];
  for (int r = 0; r < TILE; ++r) {
    ok_a[r] = ok_b[r] = true;
    for (int64_t k = 0; k < k_; ++k) {
      ok_a[r] = to_units(in[0][(r0 + r) * k_ + k], opa, ia[r * k_ + k]) && ok_a[r];
      ok_b[r] = to_units(in[1][(c0 + r) * k_ + k], opb, ib[r * k_ + k]) && ok_b[r];
    }
  }
  for (int r = 0; r < TILE; ++r)
    for (int c = 0; c < TILE; ++c) {
      if (!ok_a[r] || !ok_b[c]) {
        out[r * TILE + c] = double_sum(in[0] + (r0 + r) * k_, in[1] + (c0 + c) * k_);
        continue;
      }
      int64_t sum = 0;
      for (int64_t k = 0; k < k_; ++k) sum += static_cast<int64_t>(ia[r * k_ + k]) * ib[c * k_ + k];
      out[r * TILE + c] = scale(sum, tile);
    }
}

}  // namespace

Pattern case_pattern(const Format& f, const Case& c) {
  return make_pattern(f, dim(c, "k"), c.data_seed, c.distribution == Distribution::mantissa_walk);
}

std::string validate(const Format& f, const Case& c) {
  if (std::string err = check_shape(
          c, {{"m", TILE, MAX_MN, TILE}, {"n", TILE, MAX_MN, TILE}, {"k", K_STEP, int64_t{1} << 30, K_STEP}});
      !err.empty())
    return err;
  const int64_t k = dim(c, "k");
  if (exponent_budget(f, k) < 0)
    return fmt::format("case {}: k = {} leaves no room for exact sums: k * (2^{} - 1) must stay below 2^{} (k <= {})",
                       c.id, k, f.significand_bits, f.bound_bits, max_k(f));
  if (dim(c, "m") * k > MAX_TENSOR_ELEMENTS || dim(c, "n") * k > MAX_TENSOR_ELEMENTS)
    return fmt::format("case {}: an input of more than 2^28 elements", c.id);
  if (c.distribution != Distribution::uniform && c.distribution != Distribution::mantissa_walk)
    return fmt::format("case {}: exact-integer patterns define the distributions uniform and mantissa_walk only", c.id);
  return "";
}

std::unique_ptr<Problem> prepare(const Format& f, const Case& c) { return std::make_unique<ExactIntProblem>(f, c); }

}  // namespace sdc::exactint

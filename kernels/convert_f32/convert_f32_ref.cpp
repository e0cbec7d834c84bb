// convert_f32 on the CPU. The fast path moves bits (narrow_bits, widen_bits of convert_f32.h, which the device
// also runs where it lacks an instruction); the specification is written from the definition instead: each
// format's finite values listed in order, x's nearest found among them by search, a tie resolved to the even
// encoding, overflow judged against the value one step past the largest (2^(emax + 1) for the IEEE formats),
// and the widening computed from sign, exponent and significand as a value. Registration, inputs and output
// geometry here too (convert_f32.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/convert_f32/convert_f32.h"
#include "src/core/element_words.h"

namespace sdc::convert_f32 {
namespace {

// ---- the specification ----------------------------------------------------------------------------------------

// The value of f's non-negative finite encoding k: significand times a power of two.
double value_of(const Narrow& f, uint32_t k) {
  const uint32_t ef = k >> f.man_bits, m = k & ((1u << f.man_bits) - 1u);
  const double sig = ef == 0 ? m : m + std::ldexp(1.0, f.man_bits);
  return std::ldexp(sig, (ef == 0 ? 1 : static_cast<int>(ef)) - f.bias - f.man_bits);
}

// f's non-negative finite values, by encoding (increasing), and one more: the value a step past the largest.
struct Values {
  std::vector<double> v;
  explicit Values(Narrow f) {
    for (uint32_t k = 0; k <= f.max_finite(); ++k) v.push_back(value_of(f, k));
    v.push_back(2 * v.back() - v[v.size() - 2]);
  }
};

const Values& values(int format) {
  static const Values bf16(fmt_bf16()), f16(fmt_f16()), e4m3(fmt_e4m3()), e5m2(fmt_e5m2());
  switch (format) {
    case BF16: return bf16;
    case F16: return f16;
    case E4M3: return e4m3;
    default: return e5m2;
  }
}

Narrow format_of(int format) {
  switch (format) {
    case BF16: return fmt_bf16();
    case F16: return fmt_f16();
    case E4M3: return fmt_e4m3();
    default: return fmt_e5m2();
  }
}

uint32_t narrow_spec(int format, float x) {
  const Narrow f = format_of(format);
  const std::vector<double>& v = values(format).v;
  if (std::isnan(x)) return f.nan;
  const uint32_t sign = std::signbit(x) ? f.sign_bit() : 0u;
  const uint32_t top = f.max_finite();
  const uint32_t overflow = f.satfinite ? top : f.inf();
  if (std::isinf(x)) return sign | overflow;
  const double a = std::fabs(static_cast<double>(x));
  // k: the last value <= a (v[top + 1] is the step past the largest finite value).
  const auto it = std::upper_bound(v.begin(), v.end(), a);
  if (it == v.end()) return sign | overflow;  // beyond even the step past the largest
  const uint32_t k = static_cast<uint32_t>(it - v.begin()) - 1u;
  const double below = a - v[k], above = v[k + 1] - a;  // exact: neighbours of a within a binade or two
  uint32_t r = below < above ? k : below > above ? k + 1 : ((k & 1u) ? k + 1 : k);
  if (r > top) return sign | overflow;
  return sign | r;
}

uint32_t widen_spec(int format, uint32_t b) {
  const Narrow f = format_of(format);
  const bool negative = (b & f.sign_bit()) != 0;
  const uint32_t mag = b & (f.sign_bit() - 1u);
  if (mag > f.max_finite()) {
    const bool inf = f.ieee && mag == f.inf();
    if (!inf) return format == BF16 ? b << 16 : F32_CANONICAL_NAN;  // bf16: the rule is its bits, shifted
    return float_bits(negative ? -INFINITY : INFINITY);
  }
  const double v = values(format).v[mag];
  return float_bits(static_cast<float>(negative ? -v : v));
}

// ---- the problem ------------------------------------------------------------------------------------------------

constexpr const char* WORD_NAMES[WORDS] = {"bf16",     "f16",     "e4m3",     "e5m2",
                                           "bf16_f32", "f16_f32", "e4m3_f32", "e5m2_f32"};

class ConvertProblem final : public ElementWordsProblem<TILE, WORDS, input_bits> {
 public:
  explicit ConvertProblem(const Case& c) : ElementWordsProblem(c, WORD_NAMES) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace&) const override {
    const float* x = in[0] + tile * TILE;
    uint32_t w[WORDS];
    for (int i = 0; i < TILE; ++i) {
      uint32_t u;
      std::memcpy(&u, x + i, sizeof u);
      w[BF16] = narrow_bits(fmt_bf16(), u);
      w[F16] = narrow_bits(fmt_f16(), u);
      w[E4M3] = narrow_bits(fmt_e4m3(), u);
      w[E5M2] = narrow_bits(fmt_e5m2(), u);
      w[BF16_F32] = widen_bits(fmt_bf16(), w[BF16]);
      w[F16_F32] = widen_bits(fmt_f16(), w[F16]);
      w[E4M3_F32] = widen_bits(fmt_e4m3(), w[E4M3]);
      w[E5M2_F32] = widen_bits(fmt_e5m2(), w[E5M2]);
      std::memcpy(out + i * WORDS, w, sizeof w);
    }
  }
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    const float* x = in[0] + tile * TILE;
    for (int i = 0; i < TILE; ++i) {
      float v;
      std::memcpy(&v, x + i, sizeof v);
      for (int k = 0; k < 4; ++k) {
        const uint32_t b = narrow_spec(k, v), wide = widen_spec(k, b);
        std::memcpy(out + i * WORDS + k, &b, sizeof b);
        std::memcpy(out + i * WORDS + 4 + k, &wide, sizeof wide);
      }
    }
  }
  double tile_flops() const override { return static_cast<double>(TILE) * WORDS; }  // conversions
};

std::string validate(const Case& c) { return check_shape(c, {{"n", TILE, MAX_N, TILE}}); }

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<ConvertProblem>(c); }

}  // namespace

// The specification's conversions, for the unit tests: format 0..3 (Word BF16 .. E5M2).
uint32_t narrow_reference(int format, float x) { return narrow_spec(format, x); }
uint32_t widen_reference(int format, uint32_t b) { return widen_spec(format, b); }

Family family() {
  Family f{
      "convert_f32", "fp32 to bf16, fp16, fp8 e4m3 and e5m2 (round to nearest even, satfinite fp8) and back, bit-exact",
      {Mode::exact}, {"cpu", "cuda"},
      {"n"},         validate,
      prepare};
  f.defined_nans = true;
  return f;
}

}  // namespace sdc::convert_f32

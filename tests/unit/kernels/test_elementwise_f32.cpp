// elementwise_f32's functions (src/spec/fpmath.h): special values to the bit, each function against a long
// double reference over every fp32 exponent of both signs and over the family's sweep (the error bounds that
// fpmath.h states, asserted: a wrong constant or branch moves them by far more), and the sweep reaching what
// it promises.
#include <cmath>
#include <cstring>
#include <set>

#include "kernels/elementwise_f32/elementwise_f32.h"
#include "tests/unit/catch.h"

using namespace sdc;
using namespace sdc::elementwise_f32;

namespace {

float f_of(uint32_t u) { return bits_float(u); }
uint32_t b_of(float x) { return float_bits(x); }

// |got - ref| in units of the last place of ref's binade as an fp32 (subnormals: 2^-149); a NaN, an infinity
// or a zero must match exactly (0 ulps) or counts as a huge error.
double ulps(float got, long double ref) {
  if (std::isnan(got) || std::isnan(static_cast<double>(ref)))
    return std::isnan(got) && std::isnan(static_cast<double>(ref)) ? 0 : 1e30;
  const float rf = static_cast<float>(ref);
  if (std::isinf(rf) || ref == 0) return got == rf ? 0 : 1e30;
  int e = 0;
  std::frexp(static_cast<double>(std::fabs(ref)), &e);
  const int ue = e - 1 - 23 < -149 ? -149 : e - 1 - 23;
  return static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / std::ldexp(1.0L, ue));
}

constexpr long double PI_L = 3.141592653589793238462643383279502884L;
long double gelu_ref(long double x) {  // 0.5 x (1 + tanh u) = x / (1 + e^{-2u})
  const long double u = std::sqrt(2.0L / PI_L) * (x + 0.044715L * x * x * x);
  return x / (1.0L + std::exp(-2.0L * u));
}
long double silu_ref(long double x) { return x / (1.0L + std::exp(-x)); }

// The inputs the bounds are checked on: every exponent field of both signs with random significands, and
// the family's sweep.
std::vector<float> test_inputs() {
  std::vector<float> xs;
  for (uint32_t field = 0; field < 256; ++field)
    for (uint64_t k = 0; k < 96; ++k) {
      const uint64_t h = element_hash(0x5eed, field * 1000 + k);
      xs.push_back(f_of((static_cast<uint32_t>(h & 1u) << 31) | (field << 23) | (static_cast<uint32_t>(h >> 20) & 0x7FFFFFu)));
    }
  const uint64_t key = tensor_key(4242, 0);
  for (uint64_t i = 0; i < 65536; ++i) xs.push_back(f_of(sweep_bits(key, i)));
  return xs;
}

}  // namespace

TEST_CASE("elementwise_f32: special values, to the bit", "[elementwise_f32]") {
  const float inf = INFINITY, nan = NAN;
  CHECK(b_of(sdc_expf(0.0f)) == 0x3F800000u);
  CHECK(b_of(sdc_expf(-0.0f)) == 0x3F800000u);
  CHECK(b_of(sdc_expf(-inf)) == 0u);
  CHECK(b_of(sdc_expf(inf)) == 0x7F800000u);
  CHECK(b_of(sdc_expf(f_of(0x42B17217u))) == 0x7F7FFF84u);  // 88.7228...: the largest finite result
  CHECK(b_of(sdc_expf(f_of(0x42B17218u))) == 0x7F800000u);
  CHECK(b_of(sdc_logf(1.0f)) == 0u);
  CHECK(b_of(sdc_logf(0.0f)) == 0xFF800000u);
  CHECK(b_of(sdc_logf(-0.0f)) == 0xFF800000u);
  CHECK(std::isnan(sdc_logf(-1.0f)));
  CHECK(b_of(sdc_logf(inf)) == 0x7F800000u);
  CHECK(b_of(sdc_tanhf(-0.0f)) == 0x80000000u);
  CHECK(b_of(sdc_tanhf(f_of(0x80000001u))) == 0x80000001u);
  CHECK(sdc_tanhf(inf) == 1.0f);
  CHECK(sdc_tanhf(-inf) == -1.0f);
  CHECK(sdc_tanhf(9.0f) == 1.0f);
  CHECK(sdc_tanhf(-20.0f) == -1.0f);
  CHECK(sdc_tanhf(f_of(0x410FFFFFu)) < 1.0f);  // just below 9: still 1 - 2 / (e^{2x} + 1)
  CHECK(std::isnan(sdc_tanhf(nan)));
  CHECK(b_of(sdc_geluf(0.0f)) == 0u);
  CHECK(b_of(sdc_geluf(-inf)) == 0x80000000u);
  CHECK(b_of(sdc_geluf(-1e30f)) == 0x80000000u);
  CHECK(sdc_geluf(inf) == inf);
  CHECK(sdc_geluf(1e30f) == 1e30f);
  CHECK(b_of(sdc_siluf(-inf)) == 0x80000000u);
  CHECK(sdc_siluf(inf) == inf);
  CHECK(b_of(sdc_siluf(-0.0f)) == 0x80000000u);
  CHECK(sdc_siluf(-100.0f) < 0.0f);  // x e^x, not -0: the branch below -17 keeps the tail's digits
  CHECK(b_of(sdc_rsqrtf(inf)) == 0u);
  CHECK(std::isnan(sdc_rsqrtf(-1.0f)));
  CHECK(std::isnan(sdc_rsqrtf(-inf)));
  CHECK(b_of(sdc_rsqrtf(0.0f)) == 0x7F800000u);
  CHECK(b_of(sdc_rsqrtf(-0.0f)) == 0xFF800000u);
  CHECK(sdc_rsqrtf(4.0f) == 0.5f);
  CHECK(sdc_rsqrtf(0.25f) == 2.0f);
  CHECK(b_of(sdc_rsqrtf(f_of(0x00800000u))) == 0x5F000000u);  // 2^-126 -> 2^63
  CHECK(b_of(sdc_sinf(-0.0f)) == 0x80000000u);
  CHECK(b_of(sdc_sinf(0.0f)) == 0u);
  CHECK(b_of(sdc_sinf(f_of(0x80000001u))) == 0x80000001u);
  CHECK(sdc_cosf(0.0f) == 1.0f);
  CHECK(sdc_cosf(-0.0f) == 1.0f);
  CHECK(std::isnan(sdc_sinf(inf)));
  CHECK(std::isnan(sdc_cosf(-inf)));
  CHECK(std::isnan(sdc_cosf(nan)));
  // The quadrants: sin and cos at pi/2, pi, 3 pi/2 (the nearest floats) have the right signs and sizes.
  CHECK(sdc_sinf(1.57079637f) == 1.0f);
  CHECK(sdc_cosf(3.14159274f) == -1.0f);
  CHECK(sdc_sinf(4.71238899f) == -1.0f);
  CHECK(std::fabs(sdc_cosf(1.57079637f) + 4.37113883e-8f) < 1e-14f);
  // Beyond the valid range every result is still a defined finite value in [-1, 1].
  for (float x : {1e10f, -3.4e38f, 3.4028235e38f, 8388609.0f, 6588397.5f}) {
    CHECK(std::fabs(sdc_sinf(x)) <= 1.0f);
    CHECK(std::fabs(sdc_cosf(x)) <= 1.0f);
  }
  // Stored words: every NaN is the canonical one, whatever the payload.
  uint32_t w[WORDS];
  outputs(f_of(0xFFA5A5A5u), w);
  for (uint32_t v : w) CHECK(v == CANONICAL_NAN);
  outputs(-1.0f, w);
  CHECK(w[LOG] == CANONICAL_NAN);
  CHECK(w[RSQRT] == CANONICAL_NAN);
  CHECK(w[EXP] == b_of(sdc_expf(-1.0f)));
}

TEST_CASE("elementwise_f32: each function within its stated bound of a long double reference",
          "[elementwise_f32]") {
  double worst[12] = {};
  for (const float x : test_inputs()) {
    const long double X = x;
    auto up = [&](int k, double d) { worst[k] = d > worst[k] ? d : worst[k]; };
    up(0, ulps(sdc_expf(x), std::exp(X)));
    up(1, ulps(sdc_logf(x), std::log(X)));
    up(2, ulps(sdc_tanhf(x), std::tanh(X)));
    if (!std::isinf(x)) {  // the references' inf / inf (the special values above check the infinities)
      up(x >= -3.0f ? 3 : 4, ulps(sdc_geluf(x), gelu_ref(X)));
      up(x >= -87.0f ? 5 : 6, ulps(sdc_siluf(x), silu_ref(X)));
    }
    up(7, ulps(sdc_rsqrtf(x), 1.0L / std::sqrt(X)));
    if (std::isfinite(x) && std::fabs(x) <= 8192.0f) {
      for (int f = 0; f < 2; ++f) {
        const float y = f == 0 ? sdc_sinf(x) : sdc_cosf(x);
        const long double r = f == 0 ? std::sin(X) : std::cos(X);
        up(8, static_cast<double>(std::fabs(y - r)));
        if (std::fabs(r) >= 1.0L / 1024) up(9, ulps(y, r));
      }
    }
  }
  CHECK(worst[0] <= 1.0);    // exp
  CHECK(worst[1] <= 1.0);    // log
  CHECK(worst[2] <= 1.25);   // tanh
  CHECK(worst[3] <= 12.0);   // GELU, x >= -3
  CHECK(worst[4] <= 170.0);  // GELU, x < -3
  CHECK(worst[5] <= 2.5);    // SiLU, x >= -87
  CHECK(worst[6] <= 53.0);   // SiLU, x < -87 (e^x subnormal)
  CHECK(worst[7] <= 1.5);    // rsqrt
  CHECK(worst[8] <= 9.1e-8);  // sin, cos: absolute, |x| <= 8192
  CHECK(worst[9] <= 1.55);    // sin, cos: where the result is at least 2^-10
  // The bounds are not vacuous: each function's error was measured on these inputs.
  INFO("worst: exp " << worst[0] << ", log " << worst[1] << ", tanh " << worst[2] << ", gelu " << worst[3] << " / "
                     << worst[4] << ", silu " << worst[5] << " / " << worst[6] << ", rsqrt " << worst[7]
                     << ", sin/cos " << worst[8] << " abs, " << worst[9] << " ulps");
  CHECK(worst[0] > 0.5);
  CHECK(worst[9] > 0.5);
}

TEST_CASE("elementwise_f32: the sweep reaches every exponent and each branch point", "[elementwise_f32]") {
  const uint64_t key = tensor_key(99, 0);
  std::set<uint32_t> fields;
  int negative = 0;
  int near_pi4 = 0, near_ln2 = 0, near_split = 0, nan_in = 0, subnormal = 0;
  for (uint64_t i = 0; i < 8 * 512; ++i) {
    const uint32_t u = sweep_bits(key, i);
    const float x = f_of(u);
    if (i % 8 == 0) {
      fields.insert((u >> 23) & 0xFFu);
      negative += static_cast<int>(u >> 31);
    }
    if (std::isnan(x)) ++nan_in;
    if (((u >> 23) & 0xFFu) == 0 && (u & 0x7FFFFFu)) ++subnormal;
    const long double a = std::fabs(static_cast<long double>(x));
    const long double k4 = std::nearbyint(a / (PI_L / 4)), k2 = std::nearbyint(a / (0.6931471805599453094L / 2));
    if (k4 > 0 && std::fabs(a - k4 * PI_L / 4) <= 16 * std::ldexp(1.0L, std::ilogb(x) - 23)) ++near_pi4;
    if (k2 > 0 && std::fabs(a - k2 * 0.6931471805599453094L / 2) <= 16 * std::ldexp(1.0L, std::ilogb(x) - 23)) ++near_ln2;
    if (i % 8 == 5 && ((u & 0x7FFFFFu) >= 0x3504F3u - 8 && (u & 0x7FFFFFu) <= 0x3504F3u + 8)) ++near_split;
  }
  CHECK(fields.size() == 256);  // every exponent field, 0 and 255 included
  CHECK(negative > 128);
  CHECK(negative < 384);
  CHECK(near_pi4 >= 400);
  CHECK(near_ln2 >= 400);
  CHECK(near_split == 512);
  CHECK(nan_in > 0);
  CHECK(subnormal > 0);
}

// The project's exp and log (accuracy, special cases) and the fixed reduction tree (its shape, and the
// vectorized CPU path equal to the specification bit for bit).
#include <cmath>
#include <functional>
#include <vector>

#include "tests/unit/catch.h"
#include "src/core/signature.h"
#include "src/spec/fpmath.h"
#include "src/spec/generator.h"
#include "src/spec/lanes.h"

using namespace sdc;

namespace {
// Distance in units in the last place (the reports' measure, signature.h).
uint64_t ulps(float a, float b) { return ulp_distance(float_bits(a), float_bits(b)); }

// The recursive definition the iterative trees must equal.
float recursive_sum(const float* x, uint32_t n) {
  if (n == 0) return 0.0f;
  if (n == 1) return x[0];
  uint32_t h = 1;
  while (h * 2 < n) h *= 2;
  return recursive_sum(x, h) + recursive_sum(x + h, n - h);
}
}  // namespace

TEST_CASE("sdc_expf is within 2 ulp of the correctly rounded exp", "[fpmath]") {
  uint64_t worst = 0;
  for (float x = -103.0f; x < 88.7f; x += 0.0137f) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    if (want < 1.2e-38f) continue;  // subnormal results: checked separately
    worst = std::max(worst, ulps(sdc_expf(x), want));
  }
  REQUIRE(worst <= 2);
}

TEST_CASE("sdc_expf special cases", "[fpmath]") {
  REQUIRE(sdc_expf(0.0f) == 1.0f);
  REQUIRE(sdc_expf(-0.0f) == 1.0f);
  REQUIRE(sdc_expf(-INFINITY) == 0.0f);
  REQUIRE(float_bits(sdc_expf(-200.0f)) == 0u);
  REQUIRE(sdc_expf(INFINITY) == INFINITY);
  REQUIRE(sdc_expf(89.0f) == INFINITY);
  REQUIRE(std::isnan(sdc_expf(NAN)));
  const float sub = sdc_expf(-100.0f);  // e^-100 = 3.7e-44: subnormal, kept
  REQUIRE(std::fpclassify(sub) == FP_SUBNORMAL);
  REQUIRE(std::fabs(sub - 3.720075976e-44f) <= 1.5e-45f);
  REQUIRE(sdc_expf(88.72283172607421875f) < INFINITY);  // the largest x whose e^x is below FLT_MAX + ulp/2
  REQUIRE(sdc_expf(88.72283935546875f) == INFINITY);
}

TEST_CASE("sdc_logf is within 2 ulp of the correctly rounded log", "[fpmath]") {
  uint64_t worst = 0;
  for (float x = 1e-30f; x < 1e30f; x *= 1.0173f) {
    const float want = static_cast<float>(std::log(static_cast<double>(x)));
    worst = std::max(worst, ulps(sdc_logf(x), want));
  }
  for (float x = 0.5f; x < 2.0f; x += 0.000731f) {
    const float want = static_cast<float>(std::log(static_cast<double>(x)));
    if (std::fabs(want) > 1e-6f) worst = std::max(worst, ulps(sdc_logf(x), want));
  }
  REQUIRE(worst <= 2);
  REQUIRE(sdc_logf(1.0f) == 0.0f);
  REQUIRE(sdc_logf(0.0f) == -INFINITY);
  REQUIRE(sdc_logf(INFINITY) == INFINITY);
  REQUIRE(std::isnan(sdc_logf(-1.0f)));
  REQUIRE(ulps(sdc_logf(1e-40f), static_cast<float>(std::log(1e-40))) <= 2);
}

TEST_CASE("pairwise_sum follows the recursive tree for every length", "[fpmath]") {
  std::vector<float> x(1100);
  const uint64_t key = tensor_key(11, 0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = pattern_value(Distribution::heavy_tail, {0, 0}, key, i);
  std::vector<float> scratch;
  for (uint32_t n = 0; n <= x.size(); ++n) {
    const float want = recursive_sum(x.data(), n);
    REQUIRE(float_bits(pairwise_sum([&](uint32_t i) { return x[i]; }, n)) == float_bits(want));
    REQUIRE(float_bits(lanes::pairwise_sum(x.data(), n, scratch)) == float_bits(want));
  }
}

TEST_CASE("the tree is not sequential summation (the test can tell them apart)", "[fpmath]") {
  const float x[4] = {1.0f, 1e8f, -1e8f, 1.0f};
  // ((1 + 1e8) + (-1e8 + 1)) = 0 but sequential (((1 + 1e8) - 1e8) + 1) = 1
  REQUIRE(pairwise_sum([&](uint32_t i) { return x[i]; }, 4) == 0.0f);
  float seq = 0;
  for (float v : x) seq += v;
  REQUIRE(seq == 1.0f);
}

TEST_CASE("vector lanes equal the scalar specification", "[fpmath]") {
  const uint32_t n = 1037;
  std::vector<float> x(n), y(n), w(n), out(n);
  const uint64_t key = tensor_key(13, 0);
  for (Distribution d :
       {Distribution::uniform, Distribution::heavy_tail, Distribution::special, Distribution::mantissa_walk}) {
    for (uint32_t i = 0; i < n; ++i) {
      x[i] = pattern_value(d, {-149, 127}, key, i);
      w[i] = pattern_value(d, {-20, 20}, key ^ 1, i);
    }
    const float m = lanes::fold_max(x.data(), n);
    lanes::exp_shifted(x.data(), m, out.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(float_bits(out[i]) == float_bits(sdc_expf(x[i] - m)));
    lanes::exp_shifted(x.data(), 0.0f, out.data(), n);  // includes overflow and underflow
    for (uint32_t i = 0; i < n; ++i) REQUIRE(float_bits(out[i]) == float_bits(sdc_expf(x[i])));
    lanes::square(x.data(), out.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(float_bits(out[i]) == float_bits(x[i] * x[i]));
    lanes::scale_mul(x.data(), 0.37f, w.data(), out.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(float_bits(out[i]) == float_bits((x[i] * 0.37f) * w[i]));
    lanes::divide(x.data(), 3.0f, out.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(float_bits(out[i]) == float_bits(x[i] / 3.0f));
  }
}

TEST_CASE("fold_max fixes the sign of a zero maximum by order", "[fpmath]") {
  const float a[2] = {0.0f, -0.0f}, b[2] = {-0.0f, 0.0f};
  REQUIRE(float_bits(fold_max([&](uint32_t i) { return a[i]; }, 2)) == float_bits(0.0f));
  REQUIRE(float_bits(fold_max([&](uint32_t i) { return b[i]; }, 2)) == float_bits(-0.0f));
}

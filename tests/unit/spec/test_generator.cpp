// The input generator: deterministic, in range, and each distribution covers what it promises.
#include <cmath>
#include <cstring>
#include <set>

#include "tests/unit/catch.h"
#include "src/spec/f64.h"
#include "src/spec/generator.h"

using namespace sdc;

namespace {
int exponent_of(float x) {  // unbiased; subnormals report the exponent of their leading bit
  const uint32_t u = float_bits(x) & 0x7fffffffu;
  if (u == 0) return -1000;
  if ((u >> 23) == 0) return -150 + (32 - __builtin_clz(u));
  return static_cast<int>(u >> 23) - 127;
}

// A uniform sample: in [-1, 1) and a whole multiple of 2^-fraction_bits (float: 23, double: 53).
template <class T>
void require_uniform_sample(T v, int fraction_bits) {
  REQUIRE(v >= T(-1));
  REQUIRE(v < T(1));
  REQUIRE(std::ldexp(v, fraction_bits) == std::trunc(std::ldexp(v, fraction_bits)));
}
}  // namespace

TEST_CASE("values are a pure function of seed, tensor and index", "[generator]") {
  const uint64_t k1 = tensor_key(42, 0), k2 = tensor_key(42, 1), k3 = tensor_key(43, 0);
  REQUIRE(k1 != k2);
  REQUIRE(k1 != k3);
  for (uint64_t i = 0; i < 1000; ++i)
    REQUIRE(float_bits(pattern_value(Distribution::uniform, {0, 0}, k1, i)) ==
            float_bits(pattern_value(Distribution::uniform, {0, 0}, k1, i)));
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    same += pattern_value(Distribution::uniform, {0, 0}, k1, i) == pattern_value(Distribution::uniform, {0, 0}, k2, i);
  REQUIRE(same < 5);
  // Pinned: a change of the generator invalidates every golden, and the GPU must reproduce these.
  REQUIRE(float_bits(pattern_value(Distribution::uniform, {0, 0}, tensor_key(1, 0), 0)) == 0xbf600964u);
  REQUIRE(float_bits(pattern_value(Distribution::heavy_tail, {0, 0}, tensor_key(2, 1), 12345)) == 0xbef61bd8u);
  REQUIRE(float_bits(pattern_value(Distribution::special, {-149, 127}, tensor_key(3, 2), 999)) == 0x407a9856u);
  REQUIRE(float_bits(pattern_value(Distribution::mantissa_walk, {-3, 3}, tensor_key(4, 0), 77)) == 0x417ffeffu);
}

TEST_CASE("uniform: multiples of 2^-23 in [-1, 1), both signs", "[generator]") {
  const uint64_t key = tensor_key(9, 0);
  int neg = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = pattern_value(Distribution::uniform, {0, 0}, key, i);
    require_uniform_sample(v, 23);
    neg += v < 0;
  }
  REQUIRE(neg > 45000);
  REQUIRE(neg < 55000);
}

TEST_CASE("heavy_tail: mostly uniform, about 1 in 64 an outlier up to 2^12", "[generator]") {
  const uint64_t key = tensor_key(9, 0);
  int outliers = 0;
  float biggest = 0;
  for (uint64_t i = 0; i < 64000; ++i) {
    const float v = std::fabs(pattern_value(Distribution::heavy_tail, {0, 0}, key, i));
    REQUIRE(v < 4096.0f);
    outliers += v >= 1.0f;
    biggest = std::max(biggest, v);
  }
  REQUIRE(outliers > 500);
  REQUIRE(outliers < 1000);
  REQUIRE(biggest >= 1024.0f);
}

TEST_CASE("special: reaches subnormals and both ends of the window, never inf or NaN", "[generator]") {
  const uint64_t key = tensor_key(3, 0);
  int subnormal = 0, top = 0, bottom = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = pattern_value(Distribution::special, {-149, 127}, key, i);
    REQUIRE(std::isfinite(v));
    const int e = exponent_of(v);
    REQUIRE(e >= -149);
    REQUIRE(e <= 127);
    subnormal += std::fpclassify(v) == FP_SUBNORMAL;
    top += e >= 120;
    bottom += e <= -142;
  }
  REQUIRE(subnormal > 10000);
  REQUIRE(top > 10000);
  REQUIRE(bottom > 10000);
  for (uint64_t i = 0; i < 10000; ++i) {
    const int e = exponent_of(pattern_value(Distribution::special, {-149, -21}, key, i));
    REQUIRE(e <= -21);
  }
}

TEST_CASE("mantissa_walk: every significand bit is set alone and cleared alone", "[generator]") {
  const uint64_t key = tensor_key(5, 0);
  std::set<uint32_t> ones, zeros;
  for (uint64_t i = 0; i < 46; ++i) {
    const float v = pattern_value(Distribution::mantissa_walk, {-3, 3}, key, i);
    const uint32_t m = float_bits(v) & 0x7fffffu;
    REQUIRE((__builtin_popcount(m) == 1 || __builtin_popcount(m) == 22));  // one bit set, or one cleared
    if (__builtin_popcount(m) == 1)
      ones.insert(m);
    else
      zeros.insert(m);
    REQUIRE(exponent_of(v) >= -3);
    REQUIRE(exponent_of(v) <= 3);
  }
  REQUIRE(ones.size() == 23);
  REQUIRE(zeros.size() == 23);
}

TEST_CASE("float_with_exponent builds subnormals exactly", "[generator]") {
  REQUIRE(float_with_exponent(0, -149, 0) == std::ldexp(1.0f, -149));
  REQUIRE(float_with_exponent(0, -127, 0) == std::ldexp(1.0f, -127));
  REQUIRE(float_with_exponent(1, -126, 0) == -std::ldexp(1.0f, -126));
  REQUIRE(float_with_exponent(0, 127, 0x7fffff) == 3.4028234663852886e38f);
}

// ---- the fp64 generator (src/spec/f64.h) ----

TEST_CASE("fp64 uniform: multiples of 2^-53 in [-1, 1), both signs, all 52 fraction bits used", "[generator]") {
  const uint64_t key = tensor_key(7, 0);
  bool neg = false, pos = false;
  uint64_t low_bits = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    const double v = pattern_value_f64(Distribution::uniform, {0, 0}, key, i);
    require_uniform_sample(v, 53);
    neg |= v < 0;
    pos |= v > 0;
    if (std::fabs(v) >= 0.5) low_bits |= double_bits(v) & 0xffffffffull;  // the low word's bits are random
  }
  REQUIRE((neg && pos));
  REQUIRE(low_bits == 0xffffffffull);
}

TEST_CASE("fp64 special: subnormals to the window's top, never inf or NaN; mantissa_walk walks 52 bits",
          "[generator]") {
  const uint64_t key = tensor_key(8, 1);
  bool subnormal = false, top = false;
  for (uint64_t i = 0; i < 20000; ++i) {
    const double v = pattern_value_f64(Distribution::special, {-1074, 1023}, key, i);
    REQUIRE(std::isfinite(v));
    subnormal |= std::fpclassify(v) == FP_SUBNORMAL;
    top |= std::fabs(v) >= std::ldexp(1.0, 1023);
  }
  REQUIRE((subnormal && top));
  std::set<uint64_t> ones, zeros;
  const uint64_t frac = (uint64_t{1} << 52) - 1;
  for (uint64_t i = 0; i < 2 * 52; ++i) {
    const uint64_t m = double_bits(pattern_value_f64(Distribution::mantissa_walk, {-3, 3}, key, i)) & frac;
    if (__builtin_popcountll(m) == 1) ones.insert(m);
    if (__builtin_popcountll(m) == 51) zeros.insert(m);
  }
  REQUIRE(ones.size() == 52);
  REQUIRE(zeros.size() == 52);
}

TEST_CASE("fp64 words: low half first, as the machine stores a double", "[generator]") {
  const double v = -3.0625;
  uint32_t w[2];
  std::memcpy(w, &v, sizeof v);
  REQUIRE(f64_word(v, 0) == w[0]);
  REQUIRE(f64_word(v, 1) == w[1]);
  REQUIRE(f64_word(v, 1) >> 31 == 1u);  // the sign is in the high word
  REQUIRE(bits_double(double_bits(v)) == v);
  REQUIRE(pow2d(-1022) == std::ldexp(1.0, -1022));
  REQUIRE(double_with_exponent(0, -1074, 0) == std::ldexp(1.0, -1074));
}

// The value-range classifier behind list's coverage table (src/core/coverage.h): values placed on each side of
// every range's bounds land where the definitions say, a range needs its share of the values, a group of 32
// values counts as mixed only when its own magnitudes span the width, and binary64 values are read as pairs of
// words; and over the battery, the special distribution's cases reach the ranges it is for.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tests/unit/catch.h"
#include "src/core/coverage.h"
#include "src/core/patterns.h"

using namespace sdc;

namespace {

std::vector<ValueRange> ranges_of(const std::vector<float>& v) {
  RangeTally t;
  t.add(v.data(), v.size(), 1);
  return t.covered();
}

bool has(const std::vector<ValueRange>& rs, ValueRange r) { return std::find(rs.begin(), rs.end(), r) != rs.end(); }

}  // namespace

TEST_CASE("each value lands in the ranges its magnitude says", "[coverage]") {
  struct One {
    float x;
    std::vector<ValueRange> want;
  };
  const float sub = std::numeric_limits<float>::denorm_min() * 5;
  const One ones[] = {
      {1.0f, {ValueRange::near_one}},
      {-0.0625f, {ValueRange::near_one}},          // 2^-4: the lower bound is in
      {0.0624f, {}},                               // just below it
      {15.99f, {ValueRange::near_one}},
      {16.0f, {}},                                 // 2^4: out
      {std::ldexp(1.0f, -21), {ValueRange::tiny}},  // 2^-21
      {std::ldexp(1.0f, -20), {}},                 // 2^-20 is not tiny
      {std::ldexp(1.0f, 20), {ValueRange::large}},
      {std::ldexp(1.9f, 19), {}},
      {3.0e38f, {ValueRange::large}},
      {sub, {ValueRange::subnormal}},               // subnormal, not tiny
      {std::numeric_limits<float>::min(), {ValueRange::tiny}},
  };
  for (const One& o : ones) {
    CAPTURE(o.x);
    CHECK(ranges_of({o.x}) == o.want);
  }
  // Zeros, infinities and NaNs are in no range and count for none.
  CHECK(ranges_of({0.0f, -0.0f, std::numeric_limits<float>::infinity(), std::nanf("")}).empty());
}

TEST_CASE("a range needs at least 1 in RANGE_SHARE of the values", "[coverage]") {
  std::vector<float> v(RANGE_SHARE, 1.0f);
  v[0] = std::ldexp(1.0f, 30);  // 1 large value in 1000
  CHECK(has(ranges_of(v), ValueRange::large));
  v.push_back(1.0f);  // 1 in 1001
  CHECK_FALSE(has(ranges_of(v), ValueRange::large));
}

TEST_CASE("mixed counts groups of 32 consecutive values spanning 2^20", "[coverage]") {
  std::vector<float> v(64, 1.0f);
  v[10] = std::ldexp(1.0f, 20);  // spans 2^20 with the 1s of its group
  CHECK(has(ranges_of(v), ValueRange::mixed));
  v[10] = std::ldexp(1.0f, 19);
  CHECK_FALSE(has(ranges_of(v), ValueRange::mixed));
  // A large value and a small one in different groups: no group spans the width.
  std::vector<float> w(64, 1.0f);
  for (int i = 0; i < 32; ++i) w[i] = std::ldexp(1.0f, 25);
  CHECK_FALSE(has(ranges_of(w), ValueRange::mixed));
  w[40] = std::ldexp(1.0f, 25);  // now group 2 has both
  CHECK(has(ranges_of(w), ValueRange::mixed));
}

TEST_CASE("binary64 values are read as pairs of words", "[coverage]") {
  const double vals[] = {1e-310 /* subnormal in binary64, a normal float's bits in neither word */, 1.5};
  std::vector<float> words(4);
  std::memcpy(words.data(), vals, sizeof vals);
  RangeTally t;
  t.add(words.data(), words.size(), 2);
  CHECK(t.values == 2);
  CHECK(t.covered() == std::vector<ValueRange>{ValueRange::near_one, ValueRange::subnormal, ValueRange::mixed});  // 2^-1030 and 1.5 in one group
  RangeTally t1;  // the same words as fp32 values say something else
  t1.add(words.data(), words.size(), 1);
  CHECK(t1.covered() != t.covered());
}

TEST_CASE("the battery's special cases reach subnormals or tiny values, its uniform ones stay near 1",
          "[coverage]") {
  const Battery b = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns", false).battery;
  int special = 0;
  for (const Case& c : b.cases) {
    const Family& f = *find_family(c.family);
    const auto problem = f.prepare(c);
    if (f.replay || problem->inputs().empty()) continue;  // no input of the case's own (the memory test has none)
    const auto r = case_ranges(f, *problem);
    CAPTURE(c.id);
    if (c.distribution == Distribution::special && c.mode == Mode::exact) {
      ++special;
      CHECK((has(r, ValueRange::subnormal) || has(r, ValueRange::tiny)));
      CHECK(has(r, ValueRange::mixed));
    }
    if (c.distribution == Distribution::uniform && c.mode == Mode::exact) {
      CHECK(has(r, ValueRange::near_one));
      CHECK_FALSE(has(r, ValueRange::large));
      CHECK_FALSE(has(r, ValueRange::subnormal));
    }
  }
  CHECK(special > 0);
}

TEST_CASE("int8 inputs are read as the integers their bytes hold", "[coverage]") {
  // gemm_i8's words pack 4 int8 values: read as fp32 words, random bytes would look like every range (large,
  // tiny, subnormal, mixed); read as integers, the battery's int8 cases reach near-1 only.
  const Battery b = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns", false).battery;
  int cases = 0;
  for (const Case& c : b.cases) {
    const Family& f = *find_family(c.family);
    if (!f.int8_inputs) continue;
    ++cases;
    CAPTURE(c.id);
    const auto r = case_ranges(f, *f.prepare(c));
    CHECK(r == std::vector<ValueRange>{ValueRange::near_one});
  }
  CHECK(cases > 0);
  // What the integer reading avoids: a word of bytes 1, -1, 16, -128 read as an fp32 is a subnormal.
  const uint32_t word = 0x8010FF01u;
  float w;
  std::memcpy(&w, &word, sizeof w);
  CHECK(ranges_of({w}) == std::vector<ValueRange>{ValueRange::subnormal});
}

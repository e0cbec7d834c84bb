// The parallel reduction trees of chunked_reduce.h give the bits of the serial specification (fpmath.h):
// each proof step (chunks, absent leaves, the streaming accumulator, the max monoid) and the whole split of
// the device kernels, emulated on the host, for every length up to 3000, lengths of the battery and beyond,
// data with signed-zero ties, heavy tails and subnormals, and every group size the kernels use.
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "src/spec/chunked_reduce.h"
#include "src/spec/fpmath.h"
#include "src/spec/generator.h"

using namespace sdc;
using namespace sdc::chunked;

namespace {

// Group sizes of the kernels: 1 (attention's warp per row), 2 (reduce_sum, cross_entropy), 8 (softmax,
// rmsnorm), 32 (a whole block), and 4 and 16 for good measure.
const uint32_t GROUPS[] = {1, 2, 4, 8, 16, 32};
const uint32_t LARGE[] = {4095, 4096, 4097, 5120, 8191, 32000, 50257, 65535, 65536, 65537, 128256, 131072, 262144};

enum class Data { uniform, mixed, zero_ties, cancel };

// Finite values only for sums (inf - inf would make NaN, whose bits the test could not compare).
std::vector<float> make_data(Data d, uint32_t n, uint64_t seed) {
  std::vector<float> x(n);
  const uint64_t key = tensor_key(seed, 7);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t h = element_hash(key, i);
    const float u = uniform_value(h);
    switch (d) {
      case Data::uniform: x[i] = u; break;
      case Data::mixed: {
        const uint32_t kind = static_cast<uint32_t>((h >> 4) & 63u);
        if (kind < 4)
          x[i] = (h & 1u) ? -0.0f : 0.0f;  // signed zeros
        else if (kind < 6)
          x[i] = u * pow2f(12 + static_cast<int>((h >> 12) % 9u));  // heavy tail
        else if (kind < 8)
          x[i] = float_with_exponent(static_cast<uint32_t>(h & 1u), -140, static_cast<uint32_t>(h >> 41));  // subnormal
        else
          x[i] = u * pow2f(static_cast<int>((h >> 12) % 41u) - 20);
        break;
      }
      case Data::zero_ties:  // the maximum is a zero, reached by both signs many times
        x[i] = ((h >> 4) & 7u) == 0 ? ((h & 1u) ? -0.0f : 0.0f) : -std::fabs(u) - 1.0f;
        break;
      case Data::cancel:  // small integers and signed zeros: many partial sums are exactly +0 or -0
        x[i] = static_cast<float>(static_cast<int>((h >> 8) % 5u) - 2) * ((h & 1u) ? -1.0f : 1.0f);
        break;
    }
  }
  return x;
}

bool same(float a, float b) { return float_bits(a) == float_bits(b); }

float spec_sum(const std::vector<float>& x, uint32_t n) {
  return pairwise_sum([&](uint32_t j) { return x[j]; }, n);
}
float spec_max(const std::vector<float>& x, uint32_t n) {
  return fold_max([&](uint32_t j) { return x[j]; }, n);
}

// (B) directly: a perfect tree over `slots` leaf slots with the first m present.
float absent_tree(const float* x, uint32_t m, uint32_t slots) {
  if (slots == 1) return x[0];
  const float left = absent_tree(x, m, slots / 2);
  if (m <= slots / 2) return left;
  return left + absent_tree(x + slots / 2, m - slots / 2, slots / 2);
}

std::vector<uint32_t> lengths() {
  std::vector<uint32_t> ns;
  for (uint32_t n = 1; n <= 3000; ++n) ns.push_back(n);
  for (uint32_t n : LARGE) ns.push_back(n);
  return ns;
}

// The first n elements of x summed in chunks of c: pairwise_sum of each chunk (the last one shorter), then
// pairwise_sum of the chunks' sums.
float chunked_sum(const std::vector<float>& x, uint32_t n, uint32_t c) {
  return pairwise_sum(
      [&](uint32_t i) {
        const uint32_t len = n - i * c < c ? n - i * c : c;
        return pairwise_sum([&](uint32_t j) { return x[i * c + j]; }, len);
      },
      (n + c - 1) / c);
}

// The device's split of a row (emulate_row_max when max, else emulate_row_sum) of x's first n elements, for
// every length and group size, is its specification's value bit for bit (fold_max, pairwise_sum), and the
// emulated lanes agree.
void require_split_is_spec(const std::vector<float>& x, bool max) {
  const auto elem = [&](uint32_t j) { return x[j]; };
  for (uint32_t g : GROUPS) {
    uint64_t bad = 0;
    bool agree = true;
    for (uint32_t n : lengths())
      bad += max ? !same(emulate_row_max(elem, n, g, agree), spec_max(x, n))
                 : !same(emulate_row_sum(elem, n, g, agree), spec_sum(x, n));
    INFO("group " << g);
    REQUIRE(agree);
    REQUIRE(bad == 0);
  }
}

}  // namespace

TEST_CASE("(A) pairwise_sum is the pairwise sum of its power-of-two chunks", "[chunked]") {
  for (Data d : {Data::uniform, Data::mixed}) {
    const std::vector<float> x = make_data(d, 262144, 1);
    for (uint32_t c = 1; c <= 1024; c *= 2) {
      uint64_t bad = 0;
      for (uint32_t n : lengths()) bad += !same(chunked_sum(x, n, c), spec_sum(x, n));
      INFO("chunk " << c);
      REQUIRE(bad == 0);
    }
  }
}

TEST_CASE("(A) needs power-of-two chunks: the test can tell a wrong split", "[chunked]") {
  const std::vector<float> x = make_data(Data::uniform, 3000, 2);
  uint64_t differ = 0;
  for (uint32_t n = 1; n <= 3000; ++n) differ += !same(chunked_sum(x, n, 96), spec_sum(x, n));
  REQUIRE(differ > 100);
}

TEST_CASE("(B) a perfect tree with absent leaves is pairwise_sum", "[chunked]") {
  const std::vector<float> x = make_data(Data::mixed, 4096, 3);
  for (uint32_t slots = 1; slots <= 4096; slots *= 2) {
    uint64_t bad = 0;
    for (uint32_t m = 1; m <= slots; ++m) bad += !same(absent_tree(x.data(), m, slots), spec_sum(x, m));
    INFO("slots " << slots);
    REQUIRE(bad == 0);
  }
}

namespace {
// Checks PairwiseStream<LEVELS> against pairwise_sum for every count up to `up_to`; returns mismatches.
template <int LEVELS>
uint64_t stream_mismatches(const std::vector<float>& x, uint32_t up_to) {
  uint64_t bad = 0;
  PairwiseStream<LEVELS> acc;
  for (uint32_t n = 1; n <= up_to; ++n) {
    acc.push(x[n - 1]);
    const bool check = n <= 3000 || (n & (n - 1)) == 0 || ((n + 1) & n) == 0 || n % 4099 == 0;
    if (check) bad += !same(acc.finish(), spec_sum(x, n));
  }
  return bad;
}
}  // namespace

TEST_CASE("(C) the streaming accumulator is pairwise_sum up to its capacity", "[chunked]") {
  const std::vector<float> x = make_data(Data::mixed, 262144, 4);
  PairwiseStream<STREAM_LEVELS> empty;
  REQUIRE(same(empty.finish(), 0.0f));
  REQUIRE(stream_mismatches<STREAM_LEVELS>(x, (1u << STREAM_LEVELS) - 1) == 0);
  REQUIRE(stream_mismatches<18>(x, 262143) == 0);
  // Past its capacity (2^LEVELS - 1 pushes) the top block is lost: the check can fail.
  REQUIRE(stream_mismatches<10>(x, 1500) > 0);
}

TEST_CASE("(D) max_combine is the leftmost maximum: fold_max by any bracketing", "[chunked]") {
  // Signed zeros, NaN (the identity, and at x[0] the fold's sticky start), infinities.
  const float vals[] = {0.0f, -0.0f, 1.0f, -1.0f, NAN, -INFINITY, INFINITY, 2.0f};
  uint64_t bad = 0;
  for (uint32_t code = 0; code < 8 * 8 * 8 * 8; ++code) {
    const float x[4] = {vals[code % 8], vals[code / 8 % 8], vals[code / 64 % 8], vals[code / 512 % 8]};
    const float spec = fold_max([&](uint32_t j) { return x[j]; }, 4);
    const float left = max_finish(x[0], max_combine(max_combine(max_combine(x[0], x[1]), x[2]), x[3]));
    const float pairs = max_finish(x[0], max_combine(max_combine(x[0], x[1]), max_combine(x[2], x[3])));
    const float right = max_finish(x[0], max_combine(x[0], max_combine(x[1], max_combine(x[2], x[3]))));
    bad += !same(spec, left) + !same(spec, pairs) + !same(spec, right);
  }
  REQUIRE(bad == 0);
}

TEST_CASE("the device split of a row sum equals pairwise_sum", "[chunked]") {
  for (Data d : {Data::uniform, Data::mixed, Data::zero_ties, Data::cancel}) {
    INFO("data " << static_cast<int>(d));
    require_split_is_spec(make_data(d, 262144, 5 + static_cast<uint64_t>(d)), false);
  }
}

TEST_CASE("rows of -0 sum to -0 in every split: no +0 enters the tree", "[chunked]") {
  const std::vector<float> x(262144, -0.0f);
  for (uint32_t g : GROUPS) {
    uint64_t bad = 0;
    bool agree = true;
    for (uint32_t n : lengths()) bad += !same(emulate_row_sum([&](uint32_t j) { return x[j]; }, n, g, agree), -0.0f);
    INFO("group " << g);
    REQUIRE(agree);
    REQUIRE(bad == 0);
  }
}

TEST_CASE("the device split of a row max equals fold_max, signs of zero and NaN included", "[chunked]") {
  for (Data d : {Data::uniform, Data::mixed, Data::zero_ties}) {
    std::vector<float> x = make_data(d, 262144, 9 + static_cast<uint64_t>(d));
    for (int variant = 0; variant < 3; ++variant) {
      if (variant == 1)  // NaN at segment and lane starts and elsewhere: skipped by the fold
        for (uint32_t j = 5; j < x.size(); j += 1237) x[j & ~3u] = NAN;
      if (variant == 2) x[0] = NAN;  // a NaN start sticks
      INFO("data " << static_cast<int>(d) << " variant " << variant);
      require_split_is_spec(x, true);
    }
  }
}

TEST_CASE("a rightmost maximum would differ: the max test can fail", "[chunked]") {
  const std::vector<float> x = make_data(Data::zero_ties, 3000, 13);
  uint64_t differ = 0;
  for (uint32_t n = 1; n <= 3000; ++n) {
    float m = x[0];
    for (uint32_t j = 1; j < n; ++j) m = x[j] >= m ? x[j] : m;
    differ += !same(m, spec_max(x, n));
  }
  REQUIRE(differ > 100);
}

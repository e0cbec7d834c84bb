// The digest's promise: any change to any single element of a tile changes the tile's digest, and the
// digest depends on position. Checked exhaustively for every bit of every element of a tile.
#include <vector>

#include "tests/unit/catch.h"
#include "src/spec/digest.h"
#include "src/spec/generator.h"

using namespace sdc;

namespace {
std::vector<float> sample_tile(uint32_t n) {
  std::vector<float> v(n);
  const uint64_t key = tensor_key(7, 0);
  for (uint32_t i = 0; i < n; ++i) v[i] = pattern_value(Distribution::uniform, {-3, 3}, key, i);
  return v;
}
}  // namespace

TEST_CASE("every single-bit flip of every element changes the tile digest", "[digest]") {
  const uint32_t n = 64 * 64;
  std::vector<float> tile = sample_tile(n);
  const uint64_t clean = tile_digest(3, tile.data(), n);
  uint64_t unchanged = 0;
  for (uint32_t e = 0; e < n; ++e)
    for (int b = 0; b < 32; ++b) {
      const float saved = tile[e];
      tile[e] = bits_float(float_bits(saved) ^ (1u << b));
      unchanged += tile_digest(3, tile.data(), n) == clean;
      tile[e] = saved;
    }
  REQUIRE(unchanged == 0);
  REQUIRE(tile_digest(3, tile.data(), n) == clean);
}

TEST_CASE("the digest is position-sensitive", "[digest]") {
  const uint32_t n = 256;
  std::vector<float> tile = sample_tile(n);
  const uint64_t clean = tile_digest(0, tile.data(), n);
  SECTION("swapping two different elements changes it") {
    REQUIRE(tile[10] != tile[11]);
    std::swap(tile[10], tile[11]);
    REQUIRE(tile_digest(0, tile.data(), n) != clean);
  }
  SECTION("the same data in another tile digests differently") { REQUIRE(tile_digest(1, tile.data(), n) != clean); }
  SECTION("-0 and +0 differ") {
    tile[5] = 0.0f;
    const uint64_t pos = tile_digest(0, tile.data(), n);
    tile[5] = -0.0f;
    REQUIRE(tile_digest(0, tile.data(), n) != pos);
  }
}

TEST_CASE("output digest depends on every tile digest and its position", "[digest]") {
  std::vector<uint64_t> d = {1, 2, 3, 4};
  const uint64_t clean = output_digest(d.data(), d.size());
  d[2] ^= 1;
  REQUIRE(output_digest(d.data(), d.size()) != clean);
  d[2] ^= 1;
  std::swap(d[0], d[1]);
  REQUIRE(output_digest(d.data(), d.size()) != clean);
}

TEST_CASE("the digest function is pinned (GPU code must reproduce these values)", "[digest]") {
  // Changing the digest invalidates every golden: these constants catch an accidental change.
  const float v[4] = {1.0f, -2.5f, 0.0f, 3.0e-40f};
  REQUIRE(digest_term(digest_key(0), 0, float_bits(1.0f)) ==
          mix64((static_cast<uint64_t>(0x3f800000u) << 32) ^ digest_key(0)));
  const uint64_t d = tile_digest(5, v, 4);
  uint64_t expect = 0;
  for (uint32_t i = 0; i < 4; ++i)
    expect += mix64(((static_cast<uint64_t>(float_bits(v[i])) << 32) | i) ^ digest_key(5));
  REQUIRE(d == expect);
  REQUIRE(mix64(0) == 0);
  REQUIRE(mix64(1) == 0x5692161d100b05e5ULL);
}

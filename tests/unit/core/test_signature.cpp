// Bit signatures of a failure (src/core/signature.h) on synthetic miscompare sets: each classifier (bits and
// fields, direction, stuck bits, ULP buckets, elements per tile, the layout of a tile's elements and a unit's
// reading of its tiles), the one-line string's stability under any input order and any split into merged
// parts, that different faults read differently, and that analyse_tile signs every differing element of a
// tile, not only the few it lists.
#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>

#include "src/core/miscompare.h"
#include "src/core/signature.h"
#include "tests/unit/catch.h"

using namespace sdc;

namespace {

struct El {
  int iteration;
  uint64_t tile;
  uint64_t row;
  int64_t col;
  uint32_t expected, actual;
};

Signature sign(const std::vector<El>& els) {
  Signature g;
  for (const El& e : els) g.add(e.iteration, e.tile, {e.row, e.col}, e.expected, e.actual);
  return g;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// n distinct values with bit `bit` clear, and the same with it set: a stuck-at-1 output bit.
std::vector<El> stuck_at_one(int bit, int n, uint64_t tile = 0) {
  std::vector<El> out;
  std::mt19937 rng(7);
  for (int i = 0; i < n; ++i) {
    const uint32_t x = (bits_of(1.0f + static_cast<float>(i) / 64.0f) ^ (rng() & 0x7fu)) & ~(1u << bit);
    out.push_back({0, tile, static_cast<uint64_t>(i / 64), i % 64, x, x | (1u << bit)});
  }
  return out;
}

// A data-dependent fault: several low mantissa bits, both directions, anywhere in several tiles.
std::vector<El> wandering(int n, uint32_t seed) {
  std::vector<El> out;
  std::mt19937 rng(seed);
  for (int i = 0; i < n; ++i) {
    const uint32_t x = 0x3f800000u | (rng() & 0x7fffffu);
    uint32_t flip = rng() & 0xfffu;
    if (!flip) flip = 1;
    out.push_back({static_cast<int>(rng() % 2), rng() % 4, rng() % 64, static_cast<int64_t>(rng() % 64), x, x ^ flip});
  }
  // Both directions and more than three positions for sure.
  out.push_back({0, 0, 1, 1, 0x3f800000u, 0x3f80000fu});
  out.push_back({0, 0, 2, 9, 0x3f80000fu, 0x3f800000u});
  return out;
}

}  // namespace

TEST_CASE("ulp distance, ULP buckets and bit names", "[signature]") {
  CHECK(ulp_distance(0x3f800000u, 0x3f800001u) == 1);
  CHECK(ulp_distance(0x3f800001u, 0x3f800000u) == 1);
  CHECK(ulp_distance(0x80000000u, 0x00000000u) == 0);                        // -0 against +0
  CHECK(ulp_distance(0x80000001u, 0x00000001u) == 2);                        // across zero
  CHECK(ulp_distance64(0x3ff0000000000000ull, 0x3ff0000000000001ull) == 1);  // binary64
  CHECK(ulp_distance64(0x3ff0000000000000ull, 0x3fefffffffffffffull) == 1);  // across a binade
  CHECK(ulp_distance64(0x8000000000000000ull, 0) == 0);                      // -0 against +0
  CHECK(ulp_distance64(0x8000000000000001ull, 1) == 2);                      // across zero
  CHECK(ulp_distance64(0x7fefffffffffffffull, 0xffefffffffffffffull) == 0xffdffffffffffffeull);
  CHECK(ulp_distance64(0x7fffffffffffffffull, 0xffffffffffffffffull) == ~uint64_t{0} - 1);  // the farthest
  CHECK(Signature::ulp_bucket(0) == 0);
  CHECK(Signature::ulp_bucket(1) == 1);
  CHECK(Signature::ulp_bucket(7) == 3);
  CHECK(Signature::ulp_bucket(8) == 4);
  CHECK(Signature::ulp_bucket(~uint64_t{0}) == 64);
  CHECK(bit_label(31) == "s");
  CHECK(bit_label(30) == "e7");
  CHECK(bit_label(23) == "e0");
  CHECK(bit_label(22) == "m22");
  CHECK(bit_label(0) == "m0");
}

TEST_CASE("an element's row and column from its name", "[signature]") {
  const ElementPosition a = position_from_name("C[3][17]"), b = position_from_name("C[3][40]"),
                        c = position_from_name("C[4][17]");
  CHECK(a.col == 17);
  CHECK(b.col == 40);
  CHECK(a.row == b.row);
  CHECK(a.row != c.row);
  // 3-D: the rows are (head, query row); the last index is the column.
  const ElementPosition o1 = position_from_name("O[1][40][7]"), o2 = position_from_name("O[2][40][7]");
  CHECK(o1.col == 7);
  CHECK(o1.row != o2.row);
  // 1-D: one row; two outputs of one family's tile apart by name.
  CHECK(position_from_name("y[5]").row == position_from_name("y[900]").row);
  CHECK(position_from_name("y[5]").col == 5);
  CHECK(position_from_name("loss[3]").row != position_from_name("partial[3]").row);
  CHECK(position_from_name("x").col == 0);
}

TEST_CASE("a single element: one mantissa bit set", "[signature]") {
  const uint32_t x = bits_of(1.5f);
  const Signature g = sign({{0, 12, 3, 17, x, x | 8u}});
  CHECK(g.elements() == 1);
  CHECK(g.rises()[3] == 1);
  CHECK(g.flips(BitField::mantissa) == 1);
  CHECK(g.flips(BitField::exponent) == 0);
  CHECK(g.rises_total() == 1);
  CHECK(g.falls_total() == 0);
  CHECK(g.ulp_buckets()[4] == 1);  // 8 ULPs: [8, 16)
  CHECK(g.tiles() == 1);
  CHECK(g.min_elements_per_tile() == 1);
  CHECK(g.max_elements_per_tile() == 1);
  CHECK(g.cluster() == Cluster::single);
  CHECK(!g.stuck_at());  // one element is as well a transient flip
  CHECK(g.text("gemm_f32") == "gemm_f32:bits=m3:dir=0to1:ulp=2^3:cluster=single");
}

TEST_CASE("the layout of a tile's elements", "[signature]") {
  const uint32_t x = 0x3f800000u, y = x | 1u;
  std::vector<El> row, col, lanes, wide, scattered, same;
  for (int c = 0; c < 64; c += 3) row.push_back({0, 0, 5, c, x, y});
  for (int r = 0; r < 64; r += 5) col.push_back({0, 0, static_cast<uint64_t>(r), 17, x, y});
  for (int c = 32; c < 64; ++c) lanes.push_back({0, 0, 9, c, x, y});  // 32 adjacent columns
  wide = lanes;
  wide.push_back({0, 0, 9, 64, x, y});  // 33 columns: wider than a warp
  scattered = {{0, 0, 1, 1, x, y}, {0, 0, 2, 2, x, y}, {0, 0, 1, 2, x, y}};
  same = {{0, 0, 4, 4, x, y}, {1, 0, 4, 4, x, y}};  // the same element in two iterations: two single tiles
  CHECK(sign(row).cluster() == Cluster::row);
  CHECK(sign(col).cluster() == Cluster::column);
  CHECK(sign(lanes).cluster() == Cluster::warp_lanes);
  CHECK(sign(lanes).max_elements_per_tile() == 32);
  CHECK(sign(wide).cluster() == Cluster::row);
  CHECK(sign(scattered).cluster() == Cluster::scattered);
  CHECK(sign(same).cluster() == Cluster::single);
  CHECK(sign(same).tiles() == 2);
  CHECK(sign({{0, 0, 9, 10, x, y}, {0, 0, 9, 11, x, y}}).cluster() == Cluster::warp_lanes);  // two lanes
  CHECK(sign(lanes).text("f").ends_with(":cluster=warp_lanes"));
}

TEST_CASE("a unit's layout is the widest reading over its tiles", "[signature]") {
  const uint32_t x = 0x3f800000u, y = x ^ 2u;
  // tile 0: single; tile 1: warp lanes; tile 2: a row; tile 3: a column; tile 4: scattered.
  const std::vector<El> t0{{0, 0, 1, 1, x, y}}, t1{{0, 1, 1, 1, x, y}, {0, 1, 1, 20, x, y}},
      t2{{0, 2, 1, 1, x, y}, {0, 2, 1, 60, x, y}}, t3{{0, 3, 1, 1, x, y}, {0, 3, 7, 1, x, y}},
      t4{{0, 4, 1, 1, x, y}, {0, 4, 7, 60, x, y}};
  auto join = [](std::initializer_list<std::vector<El>> parts) {
    std::vector<El> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return sign(out);
  };
  CHECK(join({t0}).cluster() == Cluster::single);
  CHECK(join({t0, t1}).cluster() == Cluster::warp_lanes);
  CHECK(join({t0, t1, t2}).cluster() == Cluster::row);
  CHECK(join({t0, t3}).cluster() == Cluster::column);
  CHECK(join({t2, t3}).cluster() == Cluster::scattered);  // rows and columns: no one reading
  CHECK(join({t0, t4}).cluster() == Cluster::scattered);
  const Signature all = join({t0, t1, t2, t3, t4});
  const auto n = all.tiles_by_cluster();
  CHECK(n == std::array<uint64_t, CLUSTERS>{1, 1, 1, 1, 1});
  CHECK(all.tiles() == 5);
  CHECK(all.min_elements_per_tile() == 1);
  CHECK(all.max_elements_per_tile() == 2);
}

TEST_CASE("a stuck-at-1 bit across many elements", "[signature]") {
  const Signature g = sign(stuck_at_one(5, 200));
  CHECK(g.elements() == 200);
  CHECK(g.rises()[5] == 200);
  CHECK(g.falls_total() == 0);
  const StuckAt st = g.stuck_at();
  REQUIRE(st);
  CHECK(st.bit == 5);
  CHECK(st.value == 1);
  CHECK(g.cluster() == Cluster::scattered);  // 64 columns by 4 rows of one tile
  CHECK(g.text("gemm_f32") == "gemm_f32:bits=m5:dir=0to1:ulp=2^5:cluster=scattered");
  // The same bit stuck at 0.
  std::vector<El> zero = stuck_at_one(5, 50);
  for (El& e : zero) std::swap(e.expected, e.actual);
  const StuckAt z = sign(zero).stuck_at();
  REQUIRE(z);
  CHECK(z.value == 0);
  CHECK(sign(zero).text("gemm_f32") == "gemm_f32:bits=m5:dir=1to0:ulp=2^5:cluster=row");  // 50 columns of row 0
}

TEST_CASE("mixed directions are not a stuck bit", "[signature]") {
  const uint32_t x = 0x40000000u;
  const Signature g = sign({{0, 0, 0, 0, x, x | 16u}, {0, 0, 0, 1, x | 16u, x}});
  CHECK(g.rises_total() == 1);
  CHECK(g.falls_total() == 1);
  CHECK(!g.stuck_at());
  CHECK(g.text("f") == "f:bits=m4:dir=both:ulp=2^4:cluster=warp_lanes");
  // One direction but two positions: not one stuck bit either.
  CHECK(!sign({{0, 0, 0, 0, x, x | 16u}, {0, 0, 0, 1, x, x | 32u}}).stuck_at());
}

TEST_CASE("sign, exponent and mantissa flips", "[signature]") {
  const uint32_t x = bits_of(3.0f);  // 0x40400000: exponent 128
  const Signature sgn = sign({{0, 0, 0, 0, x, x ^ 0x80000000u}});
  CHECK(sgn.flips(BitField::sign) == 1);
  CHECK(sgn.text("f") == "f:bits=s:dir=0to1:ulp=2^31:cluster=single");  // 3 to -3: 2 * 0x40400000 ULPs
  const Signature exp = sign({{0, 0, 0, 0, x, x ^ (1u << 23)}});        // e0 is clear in 128: 0 -> 1
  CHECK(exp.flips(BitField::exponent) == 1);
  CHECK(exp.flips(BitField::mantissa) == 0);
  CHECK(exp.text("f") == "f:bits=e0:dir=0to1:ulp=2^23:cluster=single");
  const Signature hi = sign({{0, 0, 0, 0, x, x ^ (1u << 30)}});  // e7 set in 128: 1 -> 0
  CHECK(hi.text("f") == "f:bits=e7:dir=1to0:ulp=2^30:cluster=single");
  // Up to three positions are listed, highest first.
  const Signature three = sign({{0, 0, 0, 0, x, x ^ 0x80800001u}});
  CHECK(three.text("f").starts_with("f:bits=s+e0+m0:"));
  // More are summarized per field: a field's single bit by name, several as field*.
  const Signature many = sign({{0, 0, 0, 0, x, x ^ 0x00000f00u}});
  CHECK(many.text("f").starts_with("f:bits=m*:"));
  const Signature fields = sign({{0, 0, 0, 0, x, x ^ 0x81800003u}});
  CHECK(fields.text("f").starts_with("f:bits=s+e*+m*:"));
  const Signature one_each = sign({{0, 0, 0, 0, x, x ^ 0x80800003u}});
  CHECK(one_each.text("f").starts_with("f:bits=s+e0+m*:"));
  // +0 against -0 is 0 ULPs apart.
  CHECK(sign({{0, 0, 0, 0, 0u, 0x80000000u}}).text("f") == "f:bits=s:dir=0to1:ulp=0:cluster=single");
}

TEST_CASE("the string's ULPs are the largest distance's bucket", "[signature]") {
  const uint32_t x = 0x3f800000u;
  const Signature g = sign({{0, 0, 0, 0, x, x | 1u}, {0, 1, 0, 0, x, x | 0x1000u}});
  CHECK(g.ulp_buckets()[1] == 1);
  CHECK(g.ulp_buckets()[13] == 1);
  CHECK(g.text("f") == "f:bits=m12+m0:dir=0to1:ulp=2^12:cluster=single");
  // A +0/-0 difference beside a real one does not hide it.
  CHECK(sign({{0, 0, 0, 0, 0u, 0x80000000u}, {0, 1, 0, 0, x, x | 4u}}).text("f") ==
        "f:bits=s+m2:dir=0to1:ulp=2^2:cluster=single");
}

TEST_CASE("the string does not depend on input order or on how the parts were merged", "[signature]") {
  std::vector<El> els = wandering(500, 11);
  const Signature ref = sign(els);
  const std::string text = ref.text("gemm_f32");
  CHECK(text == "gemm_f32:bits=m*:dir=both:ulp=2^11:cluster=scattered");
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(els.begin(), els.end(), rng);
    CHECK(sign(els).text("gemm_f32") == text);
    // Split into up to 4 parts at random points, accumulate apart, merge in a random order.
    std::vector<Signature> parts(1 + rng() % 4);
    for (const El& e : els) parts[rng() % parts.size()].add(e.iteration, e.tile, {e.row, e.col}, e.expected, e.actual);
    std::shuffle(parts.begin(), parts.end(), rng);
    Signature merged;
    for (const Signature& p : parts) merged.merge(p);
    CHECK(merged.text("gemm_f32") == text);
    CHECK(merged.elements() == ref.elements());
    CHECK(merged.rises() == ref.rises());
    CHECK(merged.falls() == ref.falls());
    CHECK(merged.ulp_buckets() == ref.ulp_buckets());
    CHECK(merged.tiles() == ref.tiles());
    CHECK(merged.tiles_by_cluster() == ref.tiles_by_cluster());
    CHECK(merged.min_elements_per_tile() == ref.min_elements_per_tile());
    CHECK(merged.max_elements_per_tile() == ref.max_elements_per_tile());
  }
  // A tile split across two parts is one tile after the merge, with the layout of all its elements.
  const uint32_t x = 0x3f800000u;
  Signature a = sign({{0, 7, 3, 0, x, x | 1u}}), b = sign({{0, 7, 3, 40, x, x | 1u}});
  a.merge(b);
  CHECK(a.tiles() == 1);
  CHECK(a.cluster() == Cluster::row);
  // Merging an empty accumulator changes nothing, either way round.
  Signature e;
  e.merge(ref);
  CHECK(e.text("gemm_f32") == text);
  Signature r2 = ref;
  r2.merge(Signature{});
  CHECK(r2.text("gemm_f32") == text);
  CHECK(Signature{}.text("gemm_f32").empty());
}

TEST_CASE("different faults give different strings", "[signature]") {
  const uint32_t x = 0x3f800000u;
  std::set<std::string> texts;
  const std::vector<std::vector<El>> faults = {
      stuck_at_one(5, 100),
      stuck_at_one(6, 100),
      {{0, 0, 0, 0, x, x | 32u}},                             // one flip of the same bit
      {{0, 0, 0, 0, x, x ^ (1u << 23)}},                      // an exponent bit
      {{0, 0, 0, 0, x, x ^ 0x80000000u}},                     // the sign
      {{0, 0, 0, 0, x | 32u, x}},                             // the same bit cleared
      {{0, 0, 0, 0, x, x | 32u}, {0, 0, 0, 5, x, x | 32u}},   // two lanes
      {{0, 0, 0, 0, x, x | 32u}, {0, 0, 0, 50, x, x | 32u}},  // a row
      {{0, 0, 0, 0, x, x | 32u}, {0, 0, 9, 0, x, x | 32u}},   // a column
      wandering(300, 5),
  };
  for (const auto& f : faults) texts.insert(sign(f).text("gemm_f32"));
  CHECK(texts.size() == faults.size());
  // The family is part of it: the same bits in another kernel are another fault.
  CHECK(sign(faults[0]).text("gemm_f32") != sign(faults[0]).text("attention_f32"));
}

TEST_CASE("per-unit signatures stay in unit order", "[signature]") {
  std::vector<UnitSignature> list;
  signature_of(list, 7).add(0, 0, {0, 0}, 1u, 3u);
  signature_of(list, 2).add(0, 0, {0, 0}, 1u, 3u);
  signature_of(list, 7).add(0, 1, {0, 0}, 1u, 3u);
  signature_of(list, -1).add(0, 1, {0, 0}, 1u, 3u);
  REQUIRE(list.size() == 3);
  CHECK(list[0].unit == -1);
  CHECK(list[1].unit == 2);
  CHECK(list[2].unit == 7);
  CHECK(list[2].signature.elements() == 2);
}

namespace {

// One 8 x 64 tile whose expected values are known (analyse_tile is given them, so nothing is recomputed).
class OneTile : public Problem {
 public:
  std::vector<TensorInfo> inputs() const override { return {}; }
  void generate_input(size_t, uint64_t, uint64_t, float*) const override {}
  uint64_t tile_count() const override { return 1; }
  uint32_t tile_elements() const override { return 8 * 64; }
  void compute_tile(const float* const*, uint64_t, float* out, Workspace&) const override {
    for (uint32_t i = 0; i < tile_elements(); ++i) out[i] = 1.0f + static_cast<float>(i);
  }
  void compute_tile_scalar(const float* const* in, uint64_t t, float* out) const override {
    Workspace ws;
    compute_tile(in, t, out, ws);
  }
  uint64_t output_elements() const override { return tile_elements(); }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    tile = 0;
    offset = static_cast<uint32_t>(e);
  }
  uint64_t logical_element(uint64_t, uint32_t offset) const override { return offset; }
  std::string element_name(uint64_t e) const override {
    return "C[" + std::to_string(e / 64) + "][" + std::to_string(e % 64) + "]";
  }
  std::string tile_name(uint64_t) const override { return "C[0:8][0:64]"; }
  double tile_flops() const override { return 0; }
};

}  // namespace

TEST_CASE("analyse_tile signs every differing element, listed or not", "[signature]") {
  const OneTile p;
  Workspace ws;
  std::vector<float> expected(p.tile_elements());
  p.compute_tile(nullptr, 0, expected.data(), ws);
  std::vector<float> actual = expected;
  for (int c = 0; c < 64; ++c) {  // row 2: bit 4 set wherever it was clear
    uint32_t u;
    std::memcpy(&u, &actual[2 * 64 + c], 4);
    u |= 16u;
    std::memcpy(&actual[2 * 64 + c], &u, 4);
  }
  TestResult r;
  r.family = "gemm_f32";
  analyse_tile(p, {}, 0, 0, actual.data(), 0, 3, ws, expected, r);
  REQUIRE(r.signatures.size() == 1);
  const Signature& g = r.signatures[0].signature;
  CHECK(r.signatures[0].unit == 3);
  CHECK(r.miscompares.size() < r.miscompared_elements);  // only a few listed
  CHECK(g.elements() == r.miscompared_elements);         // all signed
  CHECK(g.text(r.family) == "gemm_f32:bits=m4:dir=0to1:ulp=2^4:cluster=row");
  REQUIRE(g.stuck_at());
  CHECK(g.stuck_at().bit == 4);
}

TEST_CASE("bit names, fields and distances in the binary64 and int32 formats", "[signature]") {
  CHECK(bit_label(63, WordFormat::binary64) == "s");
  CHECK(bit_label(62, WordFormat::binary64) == "e10");
  CHECK(bit_label(52, WordFormat::binary64) == "e0");
  CHECK(bit_label(51, WordFormat::binary64) == "m51");
  CHECK(bit_label(31, WordFormat::binary64) == "m31");  // a low word's top bit is a fraction bit
  CHECK(bit_label(31, WordFormat::int32) == "b31");
  CHECK(bit_label(0, WordFormat::int32) == "b0");
  CHECK(bit_field(30, WordFormat::int32) == BitField::integer);
  CHECK(format_bits(WordFormat::binary64) == 64);
  CHECK(format_bits(WordFormat::int32) == 32);

  Signature d(WordFormat::binary64);  // 1.0 with its sign flipped, and 1.0 one ulp up: s+m0, ulp bucket of 2^62
  d.add(0, 0, {0, 0}, 0x3ff0000000000000ull, 0xbff0000000000000ull);
  d.add(0, 1, {0, 0}, 0x3ff0000000000000ull, 0x3ff0000000000001ull);
  CHECK(d.rises().size() == 64);
  CHECK(d.flips(BitField::sign) == 1);
  CHECK(d.flips(BitField::mantissa) == 1);
  CHECK(d.flips(BitField::exponent) == 0);
  CHECK(d.text("gemm_f64") == "gemm_f64:bits=s+m0:dir=0to1:ulp=2^62:cluster=single");

  Signature i(WordFormat::int32);
  i.add(0, 0, {0, 0}, 100u, 100u + 128u);                // bit 7 set: +128
  i.add(0, 1, {0, 0}, static_cast<uint32_t>(-5), 123u);  // a wider difference, both ways
  CHECK(i.rises().size() == 32);
  CHECK(i.flips(BitField::integer) == i.rises_total() + i.falls_total());
  CHECK(i.flips(BitField::sign) == 0);
  CHECK(i.text("gemm_i8") == "gemm_i8:bits=b*:dir=both:diff=2^7:cluster=single");
  Signature one(WordFormat::int32);
  one.add(0, 0, {0, 0}, 100u, 100u + 128u);
  one.add(0, 1, {0, 0}, 7u, 7u + 128u);
  CHECK(one.text("gemm_i8") == "gemm_i8:bits=b7:dir=0to1:diff=2^7:cluster=single");
  CHECK(one.stuck_at().bit == 7);
  Signature top(WordFormat::int32);  // the sign bit of 5: 5 - 2^31, a difference of 2^31
  top.add(0, 0, {0, 0}, 5u, 5u | 0x80000000u);
  CHECK(top.text("gemm_i8") == "gemm_i8:bits=b31:dir=0to1:diff=2^31:cluster=single");

  Signature empty;  // takes the other's format
  empty.merge(one);
  CHECK(empty.format() == WordFormat::int32);
  CHECK(empty.text("gemm_i8") == one.text("gemm_i8"));
  Signature f32;
  f32.add(0, 0, {0, 0}, 0x3f800000u, 0x3f800001u);
  CHECK_THROWS_AS(f32.merge(one), std::logic_error);
}

TEST_CASE("analyse_tile signs a binary64 value once and an int32 word as an integer", "[signature]") {
  const OneTile p;
  Workspace ws;
  std::vector<float> expected(p.tile_elements());
  p.compute_tile(nullptr, 0, expected.data(), ws);
  auto flip = [](std::vector<float>& v, size_t word, uint32_t mask) {
    uint32_t u;
    std::memcpy(&u, &v[word], 4);
    u ^= mask;
    std::memcpy(&v[word], &u, 4);
  };
  {  // gemm_f64: words 4 and 5 are one value; both flipped is one element, a high-word flip alone another
    std::vector<float> actual = expected;
    flip(actual, 4, 1u);
    flip(actual, 5, 0x80000000u);
    flip(actual, 9, 0x00100000u);  // the high word of value 4: exponent bit 0
    TestResult r;
    r.family = "gemm_f64";
    analyse_tile(p, {}, 0, 0, actual.data(), 0, 0, ws, expected, r);
    REQUIRE(r.signatures.size() == 1);
    const Signature& g = r.signatures[0].signature;
    CHECK(r.miscompared_elements == 3);  // words
    CHECK(g.elements() == 2);            // values
    CHECK(g.format() == WordFormat::binary64);
    CHECK(g.flips(BitField::sign) == 1);
    CHECK(g.flips(BitField::exponent) == 1);
    CHECK(g.flips(BitField::mantissa) == 1);
    CHECK(g.text(r.family).rfind("gemm_f64:bits=s+e0+m0:", 0) == 0);
  }
  {  // gemm_i8: an int32 word
    std::vector<float> actual = expected;
    flip(actual, 3, 1u << 7);
    TestResult r;
    r.family = "gemm_i8";
    analyse_tile(p, {}, 0, 0, actual.data(), 0, 0, ws, expected, r);
    REQUIRE(r.signatures.size() == 1);
    const Signature& g = r.signatures[0].signature;
    CHECK(g.format() == WordFormat::int32);
    CHECK(g.text(r.family) ==
          "gemm_i8:bits=b7:dir=" + std::string(g.rises_total() ? "0to1" : "1to0") + ":diff=2^7:cluster=single");
  }
}

// The host emulation of mma.sync: the fragment maps cover each matrix exactly once, the decoders give the
// formats' known values, random exact-integer products match a plain triple loop bit for bit, and one
// case per shape worked out by hand from the PTX ISA's tables puts a single product in the lane and
// register the tables say (so an error shared by the maps and the packing in the test cannot hide).
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "tests/unit/catch.h"
#include "src/backends/emu/mma.h"

using namespace sdc::emu;

namespace {

constexpr MmaType kTypes[] = {MmaType::bf16, MmaType::f16, MmaType::tf32, MmaType::e4m3};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Encoding by inverting the decoder over every code (tf32: the f32 bits), for exactly representable
// values only.
uint32_t encode(MmaType t, float v) {
  if (t == MmaType::tf32) return bits_of(v);
  static std::map<std::pair<int, uint32_t>, uint32_t> table;
  if (table.empty())
    for (MmaType u : {MmaType::bf16, MmaType::f16, MmaType::e4m3})
      for (uint32_t code = 0; code < (u == MmaType::e4m3 ? 256u : 65536u); ++code) {
        const float f = mma_decode(u, code);
        if (f == f) table.emplace(std::make_pair(static_cast<int>(u), bits_of(f)), code);  // -0 kept apart
      }
  const auto it = table.find({static_cast<int>(t), bits_of(v)});
  REQUIRE(it != table.end());
  return it->second;
}

// Writes element i of a fragment (the inverse of mma_element_bits).
void put(MmaType t, uint32_t* regs, int i, uint32_t code) {
  const int per_word = mma_elements_per_word(t), width = 32 / per_word, shift = (i % per_word) * width;
  const uint32_t mask = width == 32 ? 0xffffffffu : ((1u << width) - 1) << shift;
  regs[i / per_word] = (regs[i / per_word] & ~mask) | ((code << shift) & mask);
}

// Small integers times powers of two: every partial sum of a 16 x K x 8 product (K <= 32) stays a
// multiple of 2^-6 below 2^18, exact in fp32 in any order, and every value is exact in e4m3.
float small_value(std::mt19937& rng, int max_int, int max_exp) {
  const int m = static_cast<int>(rng() % (2 * max_int + 1)) - max_int;
  const int e = static_cast<int>(rng() % (2 * max_exp + 1)) - max_exp;
  return std::ldexp(static_cast<float>(m), e);
}

}  // namespace

TEST_CASE("mma fragment maps cover A, B and C exactly once", "[emu][mma]") {
  for (MmaType t : kTypes) {
    const int k_dim = mma_k(t);
    std::vector<int> a(16 * k_dim), b(k_dim * 8), c(16 * 8);
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < mma_a_elements(t); ++i) {
        const RowCol rc = mma_a_element(t, l, i);
        REQUIRE((rc.row >= 0 && rc.row < 16 && rc.col >= 0 && rc.col < k_dim));
        ++a[rc.row * k_dim + rc.col];
      }
      for (int i = 0; i < mma_b_elements(t); ++i) {
        const RowCol rc = mma_b_element(t, l, i);
        REQUIRE((rc.row >= 0 && rc.row < k_dim && rc.col >= 0 && rc.col < 8));
        ++b[rc.row * 8 + rc.col];
      }
      for (int i = 0; i < 4; ++i) {
        const RowCol rc = mma_c_element(l, i);
        REQUIRE((rc.row >= 0 && rc.row < 16 && rc.col >= 0 && rc.col < 8));
        ++c[rc.row * 8 + rc.col];
      }
    }
    CHECK(mma_a_elements(t) * 32 == 16 * k_dim);
    CHECK(mma_b_elements(t) * 32 == k_dim * 8);
    for (int n : a) CHECK(n == 1);
    for (int n : b) CHECK(n == 1);
    for (int n : c) CHECK(n == 1);
  }
}

TEST_CASE("mma element decoders give the formats' known values", "[emu][mma]") {
  CHECK(decode_bf16(0x3f80) == 1.0f);
  CHECK(decode_bf16(0xc040) == -3.0f);
  CHECK(decode_bf16(0x0001) == std::ldexp(1.0f, -133));
  CHECK(std::isinf(decode_bf16(0x7f80)));
  CHECK(std::isnan(decode_bf16(0x7fc0)));
  CHECK(decode_f16(0x3c00) == 1.0f);
  CHECK(decode_f16(0xc000) == -2.0f);
  CHECK(decode_f16(0x7bff) == 65504.0f);
  CHECK(decode_f16(0x0001) == std::ldexp(1.0f, -24));
  CHECK(decode_f16(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(decode_f16(0x0400) == std::ldexp(1.0f, -14));
  CHECK(bits_of(decode_f16(0x8000)) == 0x80000000u);
  CHECK(decode_f16(0x7c00) == INFINITY);
  CHECK(decode_f16(0xfc00) == -INFINITY);
  CHECK(std::isnan(decode_f16(0x7e00)));
  CHECK(decode_e4m3(0x38) == 1.0f);
  CHECK(decode_e4m3(0x7e) == 448.0f);
  CHECK(decode_e4m3(0xfe) == -448.0f);
  CHECK(decode_e4m3(0x78) == 256.0f);  // exponent field 15 is finite: no infinities
  CHECK(decode_e4m3(0x08) == std::ldexp(1.0f, -6));
  CHECK(decode_e4m3(0x01) == std::ldexp(1.0f, -9));
  CHECK(decode_e4m3(0x07) == std::ldexp(7.0f, -9));
  CHECK(bits_of(decode_e4m3(0x80)) == 0x80000000u);
  CHECK(std::isnan(decode_e4m3(0x7f)));
  CHECK(std::isnan(decode_e4m3(0xff)));
  CHECK(decode_tf32(0x3f800000u) == 1.0f);
  CHECK(decode_tf32(0x3f801fffu) == 1.0f);  // the low 13 bits are ignored
  CHECK(decode_tf32(0xbf800001u) == -1.0f);
  CHECK(decode_tf32(0x3f802000u) == 1.0f + std::ldexp(1.0f, -10));
  CHECK(decode_tf32(0x00002000u) == std::ldexp(1.0f, -136));
}

TEST_CASE("mma_sync matches a triple loop on exact-integer inputs", "[emu][mma]") {
  std::mt19937 rng(12345);
  for (MmaType t : kTypes)
    for (int trial = 0; trial < 20; ++trial) {
      const int k_dim = mma_k(t);
      std::vector<float> am(16 * k_dim), bm(k_dim * 8), cm(16 * 8);
      for (float& v : am) v = small_value(rng, 8, 3);
      for (float& v : bm) v = small_value(rng, 8, 3);
      for (float& v : cm) v = small_value(rng, 64, 6);
      uint32_t a[32][4] = {}, b[32][2] = {};
      float c[32][4], d[32][4];
      for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < mma_a_elements(t); ++i) {
          const RowCol rc = mma_a_element(t, l, i);
          put(t, a[l], i, encode(t, am[rc.row * k_dim + rc.col]));
        }
        for (int i = 0; i < mma_b_elements(t); ++i) {
          const RowCol rc = mma_b_element(t, l, i);
          put(t, b[l], i, encode(t, bm[rc.row * 8 + rc.col]));
        }
        for (int i = 0; i < 4; ++i) {
          const RowCol rc = mma_c_element(l, i);
          c[l][i] = cm[rc.row * 8 + rc.col];
        }
      }
      mma_sync(t, a, b, c, d);
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          const RowCol rc = mma_c_element(l, i);
          float ref = cm[rc.row * 8 + rc.col];
          for (int k = 0; k < k_dim; ++k) ref += am[rc.row * k_dim + k] * bm[k * 8 + rc.col];
          REQUIRE(bits_of(d[l][i]) == bits_of(ref));
        }
      mma_sync(t, a, b, c, c);  // in place: d aliases c
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) REQUIRE(bits_of(c[l][i]) == bits_of(d[l][i]));
    }
}

namespace {

// One product A(row, k) * B(k, col) plus C(row, col) = 0.5 with everything else zero; the lanes,
// registers and bit positions are worked out by hand from the ISA's tables (see each case). Checks
// that D holds the value only at (d_lane, d_reg).
void check_single_product(MmaType t, int a_lane, int a_reg, uint32_t a_word, int b_lane, int b_reg, uint32_t b_word,
                          int d_lane, int d_reg, float expected) {
  uint32_t a[32][4] = {}, b[32][2] = {};
  float c[32][4] = {}, d[32][4];
  a[a_lane][a_reg] = a_word;
  b[b_lane][b_reg] = b_word;
  c[d_lane][d_reg] = 0.5f;
  mma_sync(t, a, b, c, d);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      INFO("lane " << l << " register " << i);
      CHECK(d[l][i] == ((l == d_lane && i == d_reg) ? expected + 0.5f : 0.0f));
    }
}

}  // namespace

TEST_CASE("mma_sync puts a single product where the ISA tables say", "[emu][mma]") {
  SECTION("m16n8k16 bf16") {
    // A(9, 10): row 9 = g + 8 so g = 1 and i in {2, 3, 6, 7}; col 10 >= 8 so i >= 4 and 2t + (i & 1)
    // = 2: t = 1, i = 6. Lane 4g + t = 5, a6 = register 3, low half. 2.0 is 0x4000.
    // B(10, 3): row 10 = 2t + (i & 1) + 8 so i >= 2, t = 1, i = 2; col 3 = g. Lane 13, b2 = register
    // 1, low half. 3.0 is 0x4040.
    // D(9, 3): row g + 8 so g = 1, i in {2, 3}; col 3 = 2t + (i & 1): t = 1, i = 3. Lane 5, d3.
    check_single_product(MmaType::bf16, 5, 3, 0x4000u, 13, 1, 0x4040u, 5, 3, 6.0f);
    // A(1, 9): row 1 = g so i in {0, 1, 4, 5}; col 9 >= 8 so i >= 4, 2t + (i & 1) = 1: t = 0, i = 5.
    // Lane 4, a5 = register 2 (not 1: rows g, cols + 8), high half.
    // B(9, 3): row 9 >= 8 so i >= 2, 2t + (i & 1) = 1: t = 0, i = 3; col 3 = g. Lane 12, b3 =
    // register 1, high half.
    // D(1, 3): g = 1, i < 2; col 3 = 2t + (i & 1): t = 1, i = 1. Lane 5, d1.
    check_single_product(MmaType::bf16, 4, 2, 0x4000u << 16, 12, 1, 0x4040u << 16, 5, 1, 6.0f);
  }
  SECTION("m16n8k16 f16") {
    // A(2, 7): row 2 = g so i in {0, 1, 4, 5}; col 7 < 8 so i < 4, 2t + (i & 1) = 7: t = 3, i = 1.
    // Lane 11, a1 = register 0, high half. 2.0 is 0x4000.
    // B(7, 6): row 7 < 8 so i < 2, t = 3, i = 1; col 6 = g. Lane 27, b1 = register 0, high half.
    // 3.0 is 0x4200.
    // D(2, 6): g = 2, i < 2; col 6 = 2t + (i & 1): t = 3, i = 0. Lane 11, d0.
    check_single_product(MmaType::f16, 11, 0, 0x40000000u, 27, 0, 0x42000000u, 11, 0, 6.0f);
    // A(10, 3): row 10 = g + 8 so g = 2 and i in {2, 3, 6, 7}; col 3 < 8 so i < 4, 2t + (i & 1) = 3:
    // t = 1, i = 3. Lane 9, a3 = register 1 (rows g + 8, cols < 8), high half.
    // B(3, 0): row 3 < 8 so i < 2, t = 1, i = 1; col 0 = g. Lane 1, b1 = register 0, high half.
    // D(10, 0): g = 2, i >= 2; col 0 = 2t + (i & 1): t = 0, i = 2. Lane 8, d2.
    check_single_product(MmaType::f16, 9, 1, 0x40000000u, 1, 0, 0x42000000u, 8, 2, 6.0f);
  }
  SECTION("m16n8k8 tf32") {
    // A(12, 5): row 12 = g + 8 so g = 4 and i in {1, 3}; col 5 = t + 4 so t = 1 and i in {2, 3}:
    // i = 3. Lane 17, a3 = register 3. 2.0 with junk in the ignored low 13 bits.
    // B(5, 7): row 5 = t + 4 so t = 1, b1; col 7 = g. Lane 29, register 1. 3.0.
    // D(12, 7): g = 4, i in {2, 3}; col 7 = 2t + (i & 1): t = 3, i = 3. Lane 19, d3.
    check_single_product(MmaType::tf32, 17, 3, 0x40001234u, 29, 1, 0x40400000u, 19, 3, 6.0f);
    // A(4, 6): row 4 = g so g = 4 and i in {0, 2}; col 6 = t + 4 so t = 2 and i in {2, 3}: i = 2.
    // Lane 18, a2 = register 2 (row g, col t + 4: a1 is the one with row g + 8).
    // B(6, 7): row 6 = t + 4 so t = 2, b1; col 7 = g. Lane 30, register 1.
    // D(4, 7): g = 4, i < 2; col 7 = 2t + (i & 1): t = 3, i = 1. Lane 19, d1.
    check_single_product(MmaType::tf32, 18, 2, 0x40000000u, 30, 1, 0x40400000u, 19, 1, 6.0f);
  }
  SECTION("m16n8k32 e4m3") {
    // A(3, 22): row 3 = g so i in {0..3, 8..11}; col 22 >= 16 so i >= 8, 4t + (i & 3) = 6: t = 1,
    // i = 10. Lane 13, a10 = register 2 (a8..a11), byte 2. 2.0 is 0x40.
    // B(22, 5): row 22 >= 16 so i >= 4, 4t + (i & 3) = 6: t = 1, i = 6; col 5 = g. Lane 21, b6 =
    // register 1 (b4..b7), byte 2. 3.0 is 0x44.
    // D(3, 5): g = 3, i < 2; col 5 = 2t + (i & 1): t = 2, i = 1. Lane 14, d1.
    check_single_product(MmaType::e4m3, 13, 2, 0x40u << 16, 21, 1, 0x44u << 16, 14, 1, 6.0f);
  }
}

// mma.sync m8n8k4 f64: one fma chain per output in increasing k, from C (the order an H100 was measured to use).
// The products 1, 2^-53, 2^-53, 2^-53 from C = 0: the chain rounds 1 + 2^-53 back to 1 (a tie, to even) three
// times and gives 1; one rounding of the exact sum (1 + 3 2^-53, a tie rounded to 1 + 2^-51), or the reverse
// order (the three 2^-53 first: 3 2^-53, then the same tie) do not give 1. Then
// random operands against the chain written out from the fragment layout.
TEST_CASE("mma_sync_f64 is an fma chain in increasing k, in the ISA's fragment layout", "[emu][mma]") {
  const auto lane_of_a = [](int row, int k) { return 4 * row + k; };  // A (g, t): lane 4g + t
  const auto lane_of_b = [](int k, int col) { return 4 * col + k; };  // B (t, g): lane 4g + t
  double a[32], b[32], c[32][2], d[32][2];
  for (int l = 0; l < 32; ++l) a[l] = b[l] = c[l][0] = c[l][1] = 0.0;
  const double tiny = std::ldexp(1.0, -53);
  const double prods[4] = {1.0, tiny, tiny, tiny};
  for (int k = 0; k < 4; ++k) {  // row 3 of A times column 5 of B: D(3, 5) is lane 4*3 + 5/2's d[1]
    a[lane_of_a(3, k)] = prods[k];
    b[lane_of_b(k, 5)] = 1.0;
  }
  mma_sync_f64(a, b, c, d);
  CHECK(d[4 * 3 + 2][1] == 1.0);
  CHECK(1.0 + 3 * tiny == 1.0 + std::ldexp(1.0, -51));  // what the exact sum, rounded once, would be
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 2; ++i)
      if (!(l == 4 * 3 + 2 && i == 1)) CHECK(d[l][i] == 0.0);

  std::mt19937_64 rng(20261126);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int rep = 0; rep < 50; ++rep) {
    double A[8][4], B[4][8], C[8][8];
    for (auto& r : A)
      for (double& x : r) x = std::ldexp(u(rng), static_cast<int>(rng() % 41) - 20);
    for (auto& r : B)
      for (double& x : r) x = std::ldexp(u(rng), static_cast<int>(rng() % 41) - 20);
    for (auto& r : C)
      for (double& x : r) x = u(rng);
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      a[l] = A[g][t];
      b[l] = B[t][g];
      c[l][0] = C[g][2 * t];
      c[l][1] = C[g][2 * t + 1];
    }
    mma_sync_f64(a, b, c, c);  // d aliases c
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 2; ++i) {
        const int row = l / 4, col = 2 * (l % 4) + i;
        double want = C[row][col];
        for (int k = 0; k < 4; ++k) want = std::fma(A[row][k], B[k][col], want);
        INFO("lane " << l << " element " << i);
        CHECK(std::memcmp(&c[l][i], &want, sizeof want) == 0);
      }
  }
}

// mma.sync m16n8k8 and m16n8k16 f64 (sm_90): the fragment layouts of CUTLASS's SM90_16x8x8 and SM90_16x8x16
// F64F64F64F64_TN traits (A: (g + 8 (i % 2), t + 4 (i / 2)), B: (t + 4 i, g), C: (g + 8 (i / 2), 2 t + i % 2)) and the
// same chain as m8n8k4 over k: equal bits to k / 4 m8n8k4 steps on the two 8-row halves, and to the chain written
// out from the layout.
TEST_CASE("mma_sync_f64_m16n8 is the m8n8k4 chain over 8 or 16 k in its own fragment layout", "[emu][mma]") {
  std::mt19937_64 rng(20261127);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const int kk : {8, 16})
    for (int rep = 0; rep < 50; ++rep) {
      double A[16][16], B[16][8], C[16][8];
      for (auto& r : A)
        for (double& x : r) x = std::ldexp(u(rng), static_cast<int>(rng() % 81) - 40);
      for (auto& r : B)
        for (double& x : r) x = std::ldexp(u(rng), static_cast<int>(rng() % 81) - 40);
      for (auto& r : C)
        for (double& x : r) x = std::ldexp(u(rng), static_cast<int>(rng() % 81) - 40);
      double a[32][8], b[32][4], d[32][4];
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < kk / 2; ++i) a[l][i] = A[g + 8 * (i % 2)][t + 4 * (i / 2)];
        for (int i = 0; i < kk / 4; ++i) b[l][i] = B[t + 4 * i][g];
        for (int i = 0; i < 4; ++i) d[l][i] = C[g + 8 * (i / 2)][2 * t + i % 2];
      }
      mma_sync_f64_m16n8(kk, a, b, d, d);  // d aliases c
      // The same product as m8n8k4 steps: rows 0..7 and 8..15, k 0..3, 4..7, ...
      double half[2][32][2];
      for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 2; ++i) half[h][l][i] = C[8 * h + l / 4][2 * (l % 4) + i];
        for (int k0 = 0; k0 < kk; k0 += 4) {
          double a4[32], b4[32];
          for (int l = 0; l < 32; ++l) a4[l] = A[8 * h + l / 4][k0 + l % 4], b4[l] = B[k0 + l % 4][l / 4];
          mma_sync_f64(a4, b4, half[h], half[h]);
        }
      }
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          const int row = l / 4 + 8 * (i / 2), col = 2 * (l % 4) + i % 2;
          double want = C[row][col];
          for (int k = 0; k < kk; ++k) want = std::fma(A[row][k], B[k][col], want);
          INFO("k " << kk << " lane " << l << " element " << i);
          CHECK(std::memcmp(&d[l][i], &want, sizeof want) == 0);
          CHECK(std::memcmp(&d[l][i], &half[i / 2][l][i % 2], sizeof want) == 0);
        }
    }
}

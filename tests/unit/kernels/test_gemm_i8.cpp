// gemm_i8: sums known independently of the family's code (hand-computed dots, a plain int64 loop that unpacks
// the words here, the special pattern's edge rows at the largest K), the shape rules, and the emulated int8
// mma.sync against a plain product (a wrong packing, sign extension or fragment map fails these).
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm_i8/gemm_i8.h"
#include "src/backends/emu/mma.h"
#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"

using namespace sdc;

namespace {

Case i8_case(Distribution d, int64_t m, int64_t n, int64_t k, int64_t engine = 0, uint64_t seed = 5) {
  Case c;
  c.id = "gemm_i8.unit_test";
  c.family = "gemm_i8";
  c.mode = Mode::exact_integer;
  c.distribution = d;
  c.data_seed = seed;
  c.shape.dims = {{"m", m}, {"n", n}, {"k", k}, {"engine", engine}};
  c.iterations["boot"] = 1;
  return c;
}

uint32_t word(const std::vector<float>& t, size_t i) {
  uint32_t u;
  std::memcpy(&u, &t[i], sizeof u);
  return u;
}

void set_word(std::vector<float>& t, size_t i, uint32_t u) { std::memcpy(&t[i], &u, sizeof u); }

// The test's own reading of the storage (gemm_i8.h): byte b of a word, two's complement.
int64_t s8(uint32_t w, int b) {
  const int64_t v = (w >> (8 * b)) & 0xFF;
  return v >= 128 ? v - 256 : v;
}

int32_t out_int(const std::vector<float>& tile, size_t i) { return static_cast<int32_t>(word(tile, i)); }

// Tile `tile` computed by the fast path and the specification; both must agree, the fast path's is returned.
std::vector<float> tile_both_ways(const test::CaseInputs& k, uint64_t tile) {
  std::vector<float> fast(k.p->tile_elements()), spec(k.p->tile_elements());
  Workspace ws;
  k.p->compute_tile(k.ptrs.data(), tile, fast.data(), ws);
  k.p->compute_tile_scalar(k.ptrs.data(), tile, spec.data());
  REQUIRE(std::memcmp(fast.data(), spec.data(), fast.size() * sizeof(float)) == 0);
  return fast;
}

}  // namespace

TEST_CASE("gemm_i8: hand-computed dots (-128 squared, mixed signs, one nonzero k)", "[gemm_i8]") {
  test::CaseInputs k = test::prepare_inputs(i8_case(Distribution::uniform, 64, 64, 4));
  // K = 4: (-128, -128, -128, -128) . (-128, -128, -128, -128) = 4 * 16384 = 65536 everywhere.
  for (auto& t : k.in)
    for (size_t i = 0; i < t.size(); ++i) set_word(t, i, 0x80808080u);
  std::vector<float> c = tile_both_ways(k, 0);
  for (size_t i = 0; i < c.size(); ++i) REQUIRE(out_int(c, i) == 65536);
  // Row 0 of A = (1, -1, 127, -128) (bytes 0x01, 0xFF, 0x7F, 0x80, lowest k in the low byte); column 0 of B
  // = (2, 3, -1, 1): 2 - 3 - 127 - 128 = -256. Column 1 of B = (0, 0, 0, -128): -128 * -128 = 16384.
  set_word(k.in[0], 0, 0x807FFF01u);
  set_word(k.in[1], 0, 0x01FF0302u);
  set_word(k.in[1], 1, 0x80000000u);
  c = tile_both_ways(k, 0);
  CHECK(out_int(c, 0) == -256);
  CHECK(out_int(c, 1) == 16384);
  CHECK(out_int(c, 64) == -128 * (2 + 3 - 1 + 1));  // row 1 (all -128), column 0
}

TEST_CASE("gemm_i8: every tile equals a plain int64 loop over the unpacked words", "[gemm_i8]") {
  for (Distribution d :
       {Distribution::uniform, Distribution::heavy_tail, Distribution::special, Distribution::mantissa_walk}) {
    const int64_t M = 128, N = 128, K = 516;  // K not a multiple of the fast path's k block
    test::CaseInputs k = test::prepare_inputs(i8_case(d, M, N, K, 1, 11));
    for (uint64_t t = 0; t < k.p->tile_count(); ++t) {
      const std::vector<float> c = tile_both_ways(k, t);
      const int64_t r0 = static_cast<int64_t>(t / 2) * 64, c0 = static_cast<int64_t>(t % 2) * 64;
      for (int r = 0; r < 64; r += 7)
        for (int col = 0; col < 64; col += 5) {
          int64_t want = 0;
          for (int64_t kk = 0; kk < K; ++kk)
            want += s8(word(k.in[0], static_cast<size_t>((r0 + r) * (K / 4) + kk / 4)), static_cast<int>(kk % 4)) *
                    s8(word(k.in[1], static_cast<size_t>((kk / 4) * N + c0 + col)), static_cast<int>(kk % 4));
          INFO("distribution " << static_cast<int>(d) << " C[" << r0 + r << "][" << c0 + col << "]");
          REQUIRE(out_int(c, static_cast<size_t>(r * 64 + col)) == want);
        }
    }
  }
}

TEST_CASE("gemm_i8: the inputs hold the promised values", "[gemm_i8]") {
  // uniform reaches -128 and 127; special has its edge rows and columns and 0, -1, 1 among the others.
  test::CaseInputs u = test::prepare_inputs(i8_case(Distribution::uniform, 64, 64, 1024));
  bool lo = false, hi = false;
  for (size_t i = 0; i < u.in[0].size(); ++i)
    for (int b = 0; b < 4; ++b) lo |= s8(word(u.in[0], i), b) == -128, hi |= s8(word(u.in[0], i), b) == 127;
  CHECK((lo && hi));
  test::CaseInputs s = test::prepare_inputs(i8_case(Distribution::special, 64, 64, 64));
  CHECK(word(s.in[0], 0) == 0x80808080u);       // A row 0
  CHECK(word(s.in[0], 16) == 0x7F7F7F7Fu);      // A row 1 (K / 4 = 16 words a row)
  CHECK(word(s.in[1], 64 + 8) == 0x80808080u);  // B column 8
  CHECK(word(s.in[1], 64 + 9) == 0x7F7F7F7Fu);  // B column 9
  bool seen[256] = {};
  for (size_t i = 2 * 16; i < s.in[0].size(); ++i)
    if ((i / 16) % 8 > 1)
      for (int b = 0; b < 4; ++b) seen[(word(s.in[0], i) >> (8 * b)) & 0xFF] = true;
  CHECK((seen[0x00] && seen[0x01] && seen[0xFF] && seen[0x80] && seen[0x7F]));
}

TEST_CASE("gemm_i8: the special pattern reaches the int32 edge at the largest K", "[gemm_i8]") {
  constexpr int64_t K = gemm_i8::MAX_K;
  test::CaseInputs k = test::prepare_inputs(i8_case(Distribution::special, 64, 64, K));
  std::vector<float> c(k.p->tile_elements());
  Workspace ws;
  k.p->compute_tile(k.ptrs.data(), 0, c.data(), ws);
  CHECK(out_int(c, 0) == 2147418112);           // 2^14 K = 2^31 - 2^16
  CHECK(out_int(c, 1) == -16256 * K);           // -128 * 127 K
  CHECK(out_int(c, 64) == -16256 * K);          // row 1 (127) x column 0 (-128)
  CHECK(out_int(c, 65) == 16129 * K);           // 127 * 127 K
  CHECK(out_int(c, 8 * 64 + 8) == 2147418112);  // every 8th row and column
}

TEST_CASE("gemm_i8: shapes outside the rules are refused", "[gemm_i8]") {
  const Family* f = find_family("gemm_i8");
  REQUIRE(f != nullptr);
  CHECK(f->validate(i8_case(Distribution::uniform, 64, 64, 131068)).empty());
  CHECK(!f->validate(i8_case(Distribution::uniform, 64, 64, 131072)).empty());  // 2^14 2^17 = 2^31: overflow
  CHECK(!f->validate(i8_case(Distribution::uniform, 64, 64, 6)).empty());       // not a multiple of 4
  CHECK(!f->validate(i8_case(Distribution::uniform, 96, 64, 8)).empty());       // M not a multiple of 64
  CHECK(!f->validate(i8_case(Distribution::uniform, 64, 64, 8, 2)).empty());    // no engine 2
  CHECK(f->int32_outputs);
}

TEST_CASE("gemm_i8: dot4 is dp4a's arithmetic", "[gemm_i8]") {
  CHECK(gemm_i8::dot4(0x80808080u, 0x80808080u, 0) == 65536);
  CHECK(gemm_i8::dot4(0x807FFF01u, 0x01FF0302u, 10) == 10 - 256);
  std::mt19937 rng(3);
  for (int n = 0; n < 1000; ++n) {
    const uint32_t a = rng(), b = rng();
    const int32_t c = static_cast<int32_t>(rng() % 2000001) - 1000000;
    int64_t want = c;
    for (int i = 0; i < 4; ++i) want += s8(a, i) * s8(b, i);
    REQUIRE(gemm_i8::dot4(a, b, c) == want);
  }
}

TEST_CASE("emulated mma.sync m16n8k32 s8: a plain product of the ISA's fragments", "[gemm_i8][emu][mma]") {
  // A 16 x 32 and B 32 x 8 int8, C 16 x 8 int32; lane l (g = l / 4, t = l % 4) packs A row g and g + 8,
  // columns 4t..4t+3 and 4t+16..4t+19, and B rows 4t.. and 4t+16.., column g, written out here from the ISA's
  // table rather than from mma_a_element.
  std::mt19937 rng(9);
  int64_t A[16][32], B[32][8], C[16][8];
  for (auto& r : A)
    for (int64_t& v : r) v = static_cast<int64_t>(rng() % 256) - 128;
  for (auto& r : B)
    for (int64_t& v : r) v = static_cast<int64_t>(rng() % 256) - 128;
  for (auto& r : C)
    for (int64_t& v : r) v = static_cast<int64_t>(rng() % 2000001) - 1000000;
  A[0][0] = B[0][0] = -128;
  uint32_t a[32][4], b[32][2];
  int32_t c[32][4], d[32][4];
  const auto pack = [](const int64_t* v, int stride) {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w |= (static_cast<uint32_t>(v[i * stride]) & 0xFFu) << (8 * i);
    return w;
  };
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    a[l][0] = pack(&A[g][4 * t], 1);
    a[l][1] = pack(&A[g + 8][4 * t], 1);
    a[l][2] = pack(&A[g][4 * t + 16], 1);
    a[l][3] = pack(&A[g + 8][4 * t + 16], 1);
    b[l][0] = pack(&B[4 * t][g], 8);
    b[l][1] = pack(&B[4 * t + 16][g], 8);
    for (int i = 0; i < 4; ++i) c[l][i] = static_cast<int32_t>(C[g + 8 * (i / 2)][2 * t + i % 2]);
  }
  emu::mma_sync_s8(a, b, c, d);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const int row = l / 4 + 8 * (i / 2), col = 2 * (l % 4) + i % 2;
      int64_t want = C[row][col];
      for (int kk = 0; kk < 32; ++kk) want += A[row][kk] * B[kk][col];
      REQUIRE(d[l][i] == want);
    }
}

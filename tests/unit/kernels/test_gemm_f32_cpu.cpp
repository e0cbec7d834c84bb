// Bit-exactness tests for the CPU fp32 GEMM tile kernel: every fast path this CPU supports must
// reproduce the scalar specification (fused fma chain from +0.0f, ascending k) bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/catch.h"  // Catch2 v2 or v3 (tests/unit/catch.h)
#include "kernels/gemm_f32/gemm_f32_cpu.h"

namespace {

namespace g = sdc::gemm_f32;

const char* const kIsas[] = {"avx512f", "avx2+fma", "generic"};

struct Problem {
  int64_t M, N, K;
  std::vector<float> A, B;
};

using Filler = std::function<float(std::mt19937&, bool is_a, int64_t row, int64_t col)>;

Problem make_problem(int64_t M, int64_t N, int64_t K, uint32_t seed, const Filler& fill) {
  Problem p{M, N, K, std::vector<float>(static_cast<size_t>(M * K)), std::vector<float>(static_cast<size_t>(K * N))};
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) p.A[static_cast<size_t>(i * K + k)] = fill(rng, true, i, k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) p.B[static_cast<size_t>(k * N + j)] = fill(rng, false, k, j);
  return p;
}

float uniform(std::mt19937& rng, float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

std::string describe_first_mismatch(const std::vector<float>& got, const std::vector<float>& want, int64_t nt) {
  for (size_t e = 0; e < got.size(); ++e) {
    uint32_t a, b;
    std::memcpy(&a, &got[e], 4);
    std::memcpy(&b, &want[e], 4);
    if (a != b)
      return "first mismatch at (" + std::to_string(static_cast<int64_t>(e) / nt) + "," +
             std::to_string(static_cast<int64_t>(e) % nt) + "): got " + std::to_string(got[e]) + " want " +
             std::to_string(want[e]);
  }
  return "no mismatch";
}

// Runs every supported fast path on the tile and compares it with the specification bit for bit.
// Returns the reference so callers can check that the input really exercised what they meant to.
std::vector<float> check_tile(const Problem& p, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                              std::vector<float>& scratch) {
  std::vector<float> want(static_cast<size_t>(mt * nt));
  g::tile_scalar(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, want.data());
  for (const char* isa : kIsas) {
    std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, got.data(), scratch)) continue;
    INFO("isa " << isa << " M=" << p.M << " N=" << p.N << " K=" << p.K << " tile (" << i0 << "," << j0 << ") " << mt
                << "x" << nt << ": " << describe_first_mismatch(got, want, nt));
    CHECK(same_bits(got, want));
  }
  std::vector<float> dflt(want.size());
  g::tile_fast(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, dflt.data(), scratch);
  CHECK(same_bits(dflt, want));
  return want;
}

// Whole matrix, tile by tile (edge tiles included), plus one tile at an odd interior offset.
std::vector<float> check_all_tiles(const Problem& p, int64_t tm, int64_t tn, std::vector<float>& scratch) {
  std::vector<float> all;
  for (int64_t i0 = 0; i0 < p.M; i0 += tm)
    for (int64_t j0 = 0; j0 < p.N; j0 += tn) {
      const auto t = check_tile(p, i0, j0, std::min(tm, p.M - i0), std::min(tn, p.N - j0), scratch);
      all.insert(all.end(), t.begin(), t.end());
    }
  if (p.M > 2 && p.N > 2) check_tile(p, 1, 2, p.M - 2, p.N - 2, scratch);
  return all;
}

const Filler kOrdinary = [](std::mt19937& rng, bool, int64_t, int64_t) { return uniform(rng, -1.0f, 1.0f); };

}  // namespace

TEST_CASE("gemm_f32: fast path ISA is reported and unknown ISAs are refused", "[gemm_f32]") {
  const std::string isa = g::fast_path_isa();
  CHECK((isa == "avx512f" || isa == "avx2+fma" || isa == "generic"));
  std::vector<float> a(1, 1.0f), b(1, 1.0f), out(1, 5.0f), scratch;
  CHECK_FALSE(g::tile_fast_with("sse9", a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 5.0f);
  CHECK(g::tile_fast_with("generic", a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 1.0f);
  out[0] = 5.0f;
  CHECK(g::tile_fast_with(isa.c_str(), a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 1.0f);
}

TEST_CASE("gemm_f32: random values, every tile shape from 1 to 65 with K 1, 17, 300", "[gemm_f32]") {
  std::vector<float> scratch;  // shared across shapes on purpose: reuse must not leak state
  const int64_t sizes[] = {1, 3, 17, 63, 64, 65};
  uint32_t seed = 1;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{300}}) {
        const Problem p = make_problem(m, n, k, seed++, kOrdinary);
        check_tile(p, 0, 0, m, n, scratch);
      }
}

TEST_CASE("gemm_f32: long K crossing several K blocks, interior and edge tiles", "[gemm_f32]") {
  std::vector<float> scratch;
  for (int64_t k : {127, 128, 129, 256, 257, 1000, 2051}) {
    const Problem p = make_problem(130, 150, k, static_cast<uint32_t>(k), kOrdinary);
    check_all_tiles(p, 64, 64, scratch);
  }
  const Problem big = make_problem(64, 96, 8192, 99, kOrdinary);
  check_tile(big, 0, 32, 64, 64, scratch);
}

TEST_CASE("gemm_f32: odd tile sizes (300, 65, 1) with non-power-of-two leading dimensions", "[gemm_f32]") {
  std::vector<float> scratch;
  const Problem p = make_problem(301, 303, 129, 7, kOrdinary);
  check_tile(p, 0, 0, 300, 300, scratch);
  check_tile(p, 1, 3, 300, 300, scratch);
  check_all_tiles(p, 65, 17, scratch);
  check_all_tiles(p, 1, 303, scratch);
  check_all_tiles(p, 301, 1, scratch);
}

TEST_CASE("gemm_f32: subnormal inputs and subnormal results are kept", "[gemm_f32]") {
  std::vector<float> scratch;
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float min_normal = std::numeric_limits<float>::min();
  // A mixes subnormals with small normals, B is O(1): products and partial sums land in the subnormal
  // range, so a path that flushed to zero (FTZ/DAZ) would differ.
  const Filler fill = [&](std::mt19937& rng, bool is_a, int64_t, int64_t) {
    if (!is_a) return uniform(rng, -2.0f, 2.0f);
    switch (rng() % 4) {
      case 0: return tiny * static_cast<float>(rng() % 1000);
      case 1: return -tiny * static_cast<float>(rng() % 1000);
      case 2: return uniform(rng, -1.0f, 1.0f) * min_normal;
      default: return uniform(rng, -4.0f, 4.0f) * min_normal;
    }
  };
  const Problem p = make_problem(70, 80, 301, 11, fill);
  const auto ref = check_all_tiles(p, 64, 64, scratch);
  int64_t subnormal_outputs = 0;
  for (float x : ref) subnormal_outputs += std::fpclassify(x) == FP_SUBNORMAL;
  CHECK(subnormal_outputs > 100);

  // Products of two small normals that only exist as subnormals.
  const Filler products = [&](std::mt19937& rng, bool, int64_t, int64_t) { return uniform(rng, -1.0f, 1.0f) * 1e-20f; };
  const Problem q = make_problem(65, 67, 64, 12, products);
  const auto ref2 = check_all_tiles(q, 64, 64, scratch);
  subnormal_outputs = 0;
  for (float x : ref2) subnormal_outputs += std::fpclassify(x) == FP_SUBNORMAL;
  CHECK(subnormal_outputs > 100);
}

TEST_CASE("gemm_f32: overflow to +/-inf without NaN", "[gemm_f32]") {
  std::vector<float> scratch;
  // All products in one output share the sign of the A row (B is positive), so chains may overflow to
  // +inf or -inf but never meet inf - inf. Every third A row stays small, so its outputs stay finite.
  const Filler fill = [](std::mt19937& rng, bool is_a, int64_t row, int64_t) {
    const int max_exp = is_a && row % 3 == 2 ? 2 : 80;
    const float mag = std::ldexp(uniform(rng, 1.0f, 2.0f), static_cast<int>(rng() % max_exp));  // < 2^81
    return is_a && row % 3 == 1 ? -mag : mag;
  };
  const Problem p = make_problem(67, 66, 200, 21, fill);
  const auto ref = check_all_tiles(p, 64, 64, scratch);
  int64_t pos_inf = 0, neg_inf = 0, finite = 0, nan = 0;
  for (float x : ref) {
    if (std::isnan(x))
      ++nan;
    else if (std::isinf(x))
      (x > 0 ? pos_inf : neg_inf)++;
    else
      ++finite;
  }
  CHECK(nan == 0);
  CHECK(pos_inf > 0);
  CHECK(neg_inf > 0);
  CHECK(finite > 0);
}

TEST_CASE("gemm_f32: signed zeros", "[gemm_f32]") {
  std::vector<float> scratch;
  // The chain starts from +0.0f: fma(-0, x, +0) = +0, so an all-(-0) product chain yields +0, whereas
  // a kernel starting from A*B would return -0.
  const Filler zeros = [](std::mt19937& rng, bool is_a, int64_t, int64_t) {
    return is_a ? -0.0f : uniform(rng, 0.5f, 1.0f);
  };
  const Problem p = make_problem(65, 65, 33, 31, zeros);
  const auto ref = check_all_tiles(p, 64, 64, scratch);
  for (float x : ref) REQUIRE((x == 0.0f && !std::signbit(x)));

  // Zeros of both signs mixed with ordinary values, including rows that cancel exactly to zero.
  const Filler mixed = [](std::mt19937& rng, bool, int64_t, int64_t) {
    switch (rng() % 4) {
      case 0: return -0.0f;
      case 1: return 0.0f;
      default: return static_cast<float>(static_cast<int>(rng() % 5) - 2);
    }
  };
  const Problem q = make_problem(70, 70, 47, 32, mixed);
  const auto ref2 = check_all_tiles(q, 64, 64, scratch);
  int64_t zeros_out = 0;
  for (float x : ref2) zeros_out += x == 0.0f;
  CHECK(zeros_out > 0);
}

TEST_CASE("gemm_f32: the comparison can tell fused, unfused and split-K chains apart", "[gemm_f32]") {
  std::vector<float> scratch;
  // Fused vs unfused: a*b = 1 + 2^-11 + 2^-24 exactly; rounded alone it ties to 1 + 2^-11.
  const float a = 1.0f + std::ldexp(1.0f, -12);
  const float c = -(1.0f + std::ldexp(1.0f, -11));
  {
    Problem p{1, 1, 2, {1.0f, a}, {c, a}};
    std::vector<float> out(1);
    for (const char* isa : kIsas) {
      if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), 2, 1, 0, 0, 1, 1, out.data(), scratch)) continue;
      INFO("isa " << isa);
      CHECK(out[0] == std::ldexp(1.0f, -24));
    }
    volatile float prod = a * a;  // separately rounded product
    const float unfused = prod + c;
    CHECK(unfused == 0.0f);
    CHECK(unfused != out[0]);
  }
  // Split-K: 1, +1e8, -1e8 as a chain loses the 1 (1e8 + 1 rounds to 1e8) and ends at 0; summing two
  // partial chains split at k = 256 (a plausible K block) gives 1. Columns 1.. are ordinary noise.
  {
    const int64_t K = 600, N = 40;
    Problem p = make_problem(3, N, K, 41, kOrdinary);
    for (int64_t k = 0; k < K; ++k) {
      p.A[static_cast<size_t>(k)] = 1.0f;
      p.B[static_cast<size_t>(k * N)] = 0.0f;
    }
    p.B[0] = 1.0f;
    p.B[static_cast<size_t>(300 * N)] = 1e8f;
    p.B[static_cast<size_t>(301 * N)] = -1e8f;
    const auto ref = check_tile(p, 0, 0, 3, N, scratch);
    CHECK(ref[0] == 0.0f);
    float part1 = 0.0f, part2 = 0.0f;
    for (int64_t k = 0; k < 256; ++k)
      part1 = std::fma(p.A[static_cast<size_t>(k)], p.B[static_cast<size_t>(k * N)], part1);
    for (int64_t k = 256; k < K; ++k)
      part2 = std::fma(p.A[static_cast<size_t>(k)], p.B[static_cast<size_t>(k * N)], part2);
    CHECK(part1 + part2 == 1.0f);
    CHECK(part1 + part2 != ref[0]);
  }
}

TEST_CASE("gemm_f32: one flipped bit in A changes exactly the affected row", "[gemm_f32]") {
  std::vector<float> scratch;
  Problem p = make_problem(64, 64, 512, 51, kOrdinary);
  std::vector<float> before(64 * 64), after(64 * 64);
  for (const char* isa : kIsas) {
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, 0, 0, 64, 64, before.data(), scratch)) continue;
    INFO("isa " << isa);
    for (int bit : {10, 13, 22, 30}) {
      const int64_t row = 37, k = 301;
      float& x = p.A[static_cast<size_t>(row * p.K + k)];
      const float saved = x;
      uint32_t u;
      std::memcpy(&u, &x, 4);
      u ^= 1u << bit;
      std::memcpy(&x, &u, 4);
      REQUIRE(g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, 0, 0, 64, 64, after.data(), scratch));
      x = saved;
      INFO("bit " << bit);
      for (int64_t i = 0; i < 64; ++i) {
        const bool row_same = std::memcmp(&before[static_cast<size_t>(i * 64)], &after[static_cast<size_t>(i * 64)],
                                          64 * sizeof(float)) == 0;
        if (i == row)
          CHECK_FALSE(row_same);
        else
          CHECK(row_same);
      }
    }
  }
}

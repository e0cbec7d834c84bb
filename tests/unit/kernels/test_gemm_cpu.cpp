// Bit-exactness tests for the CPU GEMM tile kernel (kernels/gemm_cpu), in fp32 and fp64: every fast path this
// CPU supports must reproduce the scalar specification (fused fma chain from +0, ascending k) bit for bit.
// Each test runs for float and double; the values that depend on the format (the K block, the exponent
// range, the rounding boundaries) come from std::numeric_limits<T>.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/unit/catch.h"  // Catch2 v2 or v3 (tests/unit/catch.h)
#include "kernels/gemm_cpu/gemm_cpu.h"

namespace {

namespace g = sdc::gemm_cpu;

const char* const kIsas[] = {"avx512f", "avx2+fma", "generic"};

template <class T>
struct Problem {
  int64_t M, N, K;
  std::vector<T> A, B;
};

template <class T>
using Filler = std::function<T(std::mt19937&, bool is_a, int64_t row, int64_t col)>;

template <class T>
Problem<T> make_problem(int64_t M, int64_t N, int64_t K, uint32_t seed, const Filler<T>& fill) {
  Problem<T> p{M, N, K, std::vector<T>(static_cast<size_t>(M * K)), std::vector<T>(static_cast<size_t>(K * N))};
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) p.A[static_cast<size_t>(i * K + k)] = fill(rng, true, i, k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) p.B[static_cast<size_t>(k * N + j)] = fill(rng, false, k, j);
  return p;
}

template <class T>
T uniform(std::mt19937& rng, T lo, T hi) {
  return std::uniform_real_distribution<T>(lo, hi)(rng);
}

template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

template <class T>
std::string describe_first_mismatch(const std::vector<T>& got, const std::vector<T>& want, int64_t nt) {
  for (size_t e = 0; e < got.size(); ++e)
    if (std::memcmp(&got[e], &want[e], sizeof(T)) != 0)
      return "first mismatch at (" + std::to_string(static_cast<int64_t>(e) / nt) + "," +
             std::to_string(static_cast<int64_t>(e) % nt) + "): got " + std::to_string(got[e]) + " want " +
             std::to_string(want[e]);
  return "no mismatch";
}

// Runs every supported fast path on the tile and compares it with the specification bit for bit.
// Returns the reference so callers can check that the input really exercised what they meant to.
template <class T>
std::vector<T> check_tile(const Problem<T>& p, int64_t i0, int64_t j0, int64_t mt, int64_t nt, std::vector<T>& scratch) {
  std::vector<T> want(static_cast<size_t>(mt * nt));
  g::tile_scalar(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, want.data());
  for (const char* isa : kIsas) {
    std::vector<T> got(want.size(), std::numeric_limits<T>::quiet_NaN());
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, got.data(), scratch)) continue;
    INFO("isa " << isa << " M=" << p.M << " N=" << p.N << " K=" << p.K << " tile (" << i0 << "," << j0 << ") " << mt
                << "x" << nt << ": " << describe_first_mismatch(got, want, nt));
    CHECK(same_bits(got, want));
  }
  std::vector<T> dflt(want.size());
  g::tile_fast(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, dflt.data(), scratch);
  CHECK(same_bits(dflt, want));
  return want;
}

// Whole matrix, tile by tile (edge tiles included), plus one tile at an odd interior offset.
template <class T>
std::vector<T> check_all_tiles(const Problem<T>& p, int64_t tm, int64_t tn, std::vector<T>& scratch) {
  std::vector<T> all;
  for (int64_t i0 = 0; i0 < p.M; i0 += tm)
    for (int64_t j0 = 0; j0 < p.N; j0 += tn) {
      const auto t = check_tile(p, i0, j0, std::min(tm, p.M - i0), std::min(tn, p.N - j0), scratch);
      all.insert(all.end(), t.begin(), t.end());
    }
  if (p.M > 2 && p.N > 2) check_tile(p, 1, 2, p.M - 2, p.N - 2, scratch);
  return all;
}

template <class T>
const Filler<T> kOrdinary = [](std::mt19937& rng, bool, int64_t, int64_t) { return uniform<T>(rng, -1, 1); };

template <class T>
int64_t count_subnormal(const std::vector<T>& xs) {
  int64_t n = 0;
  for (T x : xs) n += std::fpclassify(x) == FP_SUBNORMAL;
  return n;
}

}  // namespace

TEMPLATE_TEST_CASE("gemm_cpu: fast path ISA is reported and unknown ISAs are refused", "[gemm_cpu]", float, double) {
  using T = TestType;
  const std::string isa = g::fast_path_isa();
  CHECK((isa == "avx512f" || isa == "avx2+fma" || isa == "generic"));
  std::vector<T> a(1, 1), b(1, 1), out(1, 5), scratch;
  CHECK_FALSE(g::tile_fast_with("sse9", a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 5);
  CHECK(g::tile_fast_with("generic", a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 1);
  out[0] = 5;
  CHECK(g::tile_fast_with(isa.c_str(), a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 1);
}

TEMPLATE_TEST_CASE("gemm_cpu: random values, every tile shape from 1 to 65 with K 1, 17, 300", "[gemm_cpu]", float,
                   double) {
  std::vector<TestType> scratch;  // shared across shapes on purpose: reuse must not leak state
  const int64_t sizes[] = {1, 3, 17, 63, 64, 65};
  uint32_t seed = 1;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{300}}) {
        const auto p = make_problem<TestType>(m, n, k, seed++, kOrdinary<TestType>);
        check_tile(p, 0, 0, m, n, scratch);
      }
}

TEMPLATE_TEST_CASE("gemm_cpu: long K crossing several K blocks, interior and edge tiles", "[gemm_cpu]", float,
                   double) {
  std::vector<TestType> scratch;
  const int64_t kc = 512 / sizeof(TestType);  // the kernel's K block: 128 fp32, 64 fp64 (gemm_cpu.cpp)
  for (int64_t k : {kc - 1, kc, kc + 1, 2 * kc, 2 * kc + 1, int64_t{1000}, int64_t{2051}}) {
    const auto p = make_problem<TestType>(130, 150, k, static_cast<uint32_t>(k), kOrdinary<TestType>);
    check_all_tiles(p, 64, 64, scratch);
  }
  const auto big = make_problem<TestType>(64, 96, 8192, 99, kOrdinary<TestType>);
  check_tile(big, 0, 32, 64, 64, scratch);
}

TEMPLATE_TEST_CASE("gemm_cpu: odd tile sizes (300, 65, 1) with non-power-of-two leading dimensions", "[gemm_cpu]",
                   float, double) {
  std::vector<TestType> scratch;
  const auto p = make_problem<TestType>(301, 303, 129, 7, kOrdinary<TestType>);
  check_tile(p, 0, 0, 300, 300, scratch);
  check_tile(p, 1, 3, 300, 300, scratch);
  check_all_tiles(p, 65, 17, scratch);
  check_all_tiles(p, 1, 303, scratch);
  check_all_tiles(p, 301, 1, scratch);
}

TEMPLATE_TEST_CASE("gemm_cpu: subnormal inputs and subnormal results are kept", "[gemm_cpu]", float, double) {
  using T = TestType;
  std::vector<T> scratch;
  const T tiny = std::numeric_limits<T>::denorm_min();
  const T min_normal = std::numeric_limits<T>::min();
  // A mixes subnormals with small normals, B is O(1): products and partial sums land in the subnormal
  // range, so a path that flushed to zero (FTZ/DAZ) would differ.
  const Filler<T> fill = [&](std::mt19937& rng, bool is_a, int64_t, int64_t) {
    if (!is_a) return uniform<T>(rng, -2, 2);
    switch (rng() % 4) {
      case 0: return tiny * static_cast<T>(rng() % 1000);
      case 1: return -tiny * static_cast<T>(rng() % 1000);
      case 2: return uniform<T>(rng, -1, 1) * min_normal;
      default: return uniform<T>(rng, -4, 4) * min_normal;
    }
  };
  CHECK(count_subnormal(check_all_tiles(make_problem<T>(70, 80, 301, 11, fill), 64, 64, scratch)) > 100);

  // Products of two small normals that only exist as subnormals (about 2^-64 each in fp32, 2^-512 in fp64).
  const T small = std::ldexp(T(1), std::numeric_limits<T>::min_exponent / 2 - 2);
  const Filler<T> products = [&](std::mt19937& rng, bool, int64_t, int64_t) { return uniform<T>(rng, -1, 1) * small; };
  CHECK(count_subnormal(check_all_tiles(make_problem<T>(65, 67, 64, 12, products), 64, 64, scratch)) > 100);
}

TEMPLATE_TEST_CASE("gemm_cpu: overflow to +/-inf without NaN", "[gemm_cpu]", float, double) {
  using T = TestType;
  std::vector<T> scratch;
  // All products in one output share the sign of the A row (B is positive), so chains may overflow to
  // +inf or -inf but never meet inf - inf. Every third A row stays small, so its outputs stay finite. The
  // factors reach 2^(5/8 of the exponent range): 2^81 in fp32, 2^641 in fp64, so products overflow.
  const Filler<T> fill = [](std::mt19937& rng, bool is_a, int64_t row, int64_t) {
    const int max_exp = is_a && row % 3 == 2 ? 2 : std::numeric_limits<T>::max_exponent * 5 / 8;
    const T mag = std::ldexp(uniform<T>(rng, 1, 2), static_cast<int>(rng() % max_exp));
    return is_a && row % 3 == 1 ? -mag : mag;
  };
  const auto ref = check_all_tiles(make_problem<T>(67, 66, 200, 21, fill), 64, 64, scratch);
  int64_t pos_inf = 0, neg_inf = 0, finite = 0, nan = 0;
  for (T x : ref) {
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

TEMPLATE_TEST_CASE("gemm_cpu: signed zeros", "[gemm_cpu]", float, double) {
  using T = TestType;
  std::vector<T> scratch;
  // The chain starts from +0: fma(-0, x, +0) = +0, so an all-(-0) product chain yields +0, whereas
  // a kernel starting from A*B would return -0.
  const Filler<T> zeros = [](std::mt19937& rng, bool is_a, int64_t, int64_t) {
    return is_a ? T(-0.0) : uniform<T>(rng, 0.5, 1);
  };
  for (T x : check_all_tiles(make_problem<T>(65, 65, 33, 31, zeros), 64, 64, scratch))
    REQUIRE((x == 0 && !std::signbit(x)));

  // Zeros of both signs mixed with ordinary values, including rows that cancel exactly to zero.
  const Filler<T> mixed = [](std::mt19937& rng, bool, int64_t, int64_t) {
    switch (rng() % 4) {
      case 0: return T(-0.0);
      case 1: return T(0.0);
      default: return static_cast<T>(static_cast<int>(rng() % 5) - 2);
    }
  };
  int64_t zeros_out = 0;
  for (T x : check_all_tiles(make_problem<T>(70, 70, 47, 32, mixed), 64, 64, scratch)) zeros_out += x == 0;
  CHECK(zeros_out > 0);
}

TEMPLATE_TEST_CASE("gemm_cpu: the comparison can tell fused, unfused and split-K chains apart", "[gemm_cpu]", float,
                   double) {
  using T = TestType;
  std::vector<T> scratch;
  // Fused vs unfused, with h = (digits + 1) / 2 (12 in fp32, 27 in fp64): a*a = 1 + 2^(1-h) + 2^-2h exactly;
  // rounded alone it drops the 2^-2h (a tie to even in fp32, below half an ulp in fp64).
  const int h = (std::numeric_limits<T>::digits + 1) / 2;
  const T a = 1 + std::ldexp(T(1), -h);
  const T c = -(1 + std::ldexp(T(1), 1 - h));
  {
    Problem<T> p{1, 1, 2, {1, a}, {c, a}};
    std::vector<T> out(1);
    int ran = 0;
    for (const char* isa : kIsas) {
      if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), 2, 1, 0, 0, 1, 1, out.data(), scratch)) continue;
      INFO("isa " << isa);
      CHECK(out[0] == std::ldexp(T(1), -2 * h));
      ++ran;
    }
    CHECK(ran >= 1);
    volatile T prod = a * a;  // separately rounded product
    const T unfused = prod + c;
    CHECK(unfused == 0);
    CHECK(unfused != out[0]);
  }
  // Split-K: 1, +big, -big as a chain loses the 1 (big + 1 rounds to big: big = 2^(digits+2), 2^26 in fp32)
  // and ends at 0; summing two partial chains split at k = 256 (a plausible K block) gives 1. Columns 1..
  // are ordinary noise.
  {
    const int64_t K = 600, N = 40;
    const T big = std::ldexp(T(1), std::numeric_limits<T>::digits + 2);
    auto p = make_problem<T>(3, N, K, 41, kOrdinary<T>);
    for (int64_t k = 0; k < K; ++k) {
      p.A[static_cast<size_t>(k)] = 1;
      p.B[static_cast<size_t>(k * N)] = 0;
    }
    p.B[0] = 1;
    p.B[static_cast<size_t>(300 * N)] = big;
    p.B[static_cast<size_t>(301 * N)] = -big;
    const auto ref = check_tile(p, 0, 0, 3, N, scratch);
    CHECK(ref[0] == 0);
    T part1 = 0, part2 = 0;
    for (int64_t k = 0; k < 256; ++k)
      part1 = std::fma(p.A[static_cast<size_t>(k)], p.B[static_cast<size_t>(k * N)], part1);
    for (int64_t k = 256; k < K; ++k)
      part2 = std::fma(p.A[static_cast<size_t>(k)], p.B[static_cast<size_t>(k * N)], part2);
    CHECK(part1 + part2 == 1);
    CHECK(part1 + part2 != ref[0]);
  }
}

TEMPLATE_TEST_CASE("gemm_cpu: one flipped bit in A changes exactly the affected row", "[gemm_cpu]", float, double) {
  using T = TestType;
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr int kWidth = 8 * sizeof(T);
  std::vector<T> scratch;
  auto p = make_problem<T>(64, 64, 512, 51, kOrdinary<T>);
  std::vector<T> before(64 * 64), after(64 * 64);
  for (const char* isa : kIsas) {
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, 0, 0, 64, 64, before.data(), scratch)) continue;
    INFO("isa " << isa);
    // Low fraction bits, the top fraction bit and the exponent's top bit (22 and 30 in fp32).
    for (int bit : {10, 13, std::numeric_limits<T>::digits - 2, kWidth - 2}) {
      const int64_t row = 37, k = 301;
      T& x = p.A[static_cast<size_t>(row * p.K + k)];
      const T saved = x;
      Bits u;
      std::memcpy(&u, &x, sizeof u);
      u ^= Bits{1} << bit;
      std::memcpy(&x, &u, sizeof u);
      REQUIRE(g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, 0, 0, 64, 64, after.data(), scratch));
      x = saved;
      INFO("bit " << bit);
      for (int64_t i = 0; i < 64; ++i) {
        const bool row_same = std::memcmp(&before[static_cast<size_t>(i * 64)], &after[static_cast<size_t>(i * 64)],
                                          64 * sizeof(T)) == 0;
        if (i == row)
          CHECK_FALSE(row_same);
        else
          CHECK(row_same);
      }
    }
  }
}

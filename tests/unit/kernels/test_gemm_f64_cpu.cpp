// Bit-exactness tests for the CPU fp64 GEMM tile kernel: every fast path this CPU supports must reproduce
// the scalar specification (fused fma chain from +0.0, ascending k) bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/catch.h"  // Catch2 v2 or v3 (tests/unit/catch.h)
#include "kernels/gemm_f64/gemm_f64_cpu.h"

namespace {

namespace g = sdc::gemm_f64;

const char* const kIsas[] = {"avx512f", "avx2+fma", "generic"};

struct Problem {
  int64_t M, N, K;
  std::vector<double> A, B;
};

using Filler = std::function<double(std::mt19937_64&, bool is_a, int64_t row, int64_t col)>;

Problem make_problem(int64_t M, int64_t N, int64_t K, uint32_t seed, const Filler& fill) {
  Problem p{M, N, K, std::vector<double>(static_cast<size_t>(M * K)), std::vector<double>(static_cast<size_t>(K * N))};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) p.A[static_cast<size_t>(i * K + k)] = fill(rng, true, i, k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) p.B[static_cast<size_t>(k * N + j)] = fill(rng, false, k, j);
  return p;
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

bool same_bits(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

// Runs every supported fast path on the tile and compares it with the specification bit for bit; returns
// the specification's tile.
std::vector<double> check_tile(const Problem& p, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                               std::vector<double>& scratch) {
  std::vector<double> want(static_cast<size_t>(mt * nt));
  g::tile_scalar(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, want.data());
  for (const char* isa : kIsas) {
    std::vector<double> got(want.size(), std::numeric_limits<double>::quiet_NaN());
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, got.data(), scratch)) continue;
    INFO("isa " << isa << " M=" << p.M << " N=" << p.N << " K=" << p.K << " tile (" << i0 << "," << j0 << ") " << mt
                << "x" << nt);
    CHECK(same_bits(got, want));
  }
  std::vector<double> dflt(want.size());
  g::tile_fast(p.A.data(), p.B.data(), p.K, p.N, i0, j0, mt, nt, dflt.data(), scratch);
  CHECK(same_bits(dflt, want));
  return want;
}

std::vector<double> check_all_tiles(const Problem& p, int64_t tm, int64_t tn, std::vector<double>& scratch) {
  std::vector<double> all;
  for (int64_t i0 = 0; i0 < p.M; i0 += tm)
    for (int64_t j0 = 0; j0 < p.N; j0 += tn) {
      const auto t = check_tile(p, i0, j0, std::min(tm, p.M - i0), std::min(tn, p.N - j0), scratch);
      all.insert(all.end(), t.begin(), t.end());
    }
  if (p.M > 2 && p.N > 2) check_tile(p, 1, 2, p.M - 2, p.N - 2, scratch);
  return all;
}

const Filler kOrdinary = [](std::mt19937_64& rng, bool, int64_t, int64_t) { return uniform(rng, -1.0, 1.0); };

}  // namespace

TEST_CASE("gemm_f64: fast path ISA is reported and unknown ISAs are refused", "[gemm_f64]") {
  const std::string isa = g::fast_path_isa();
  CHECK((isa == "avx512f" || isa == "avx2+fma" || isa == "generic"));
  std::vector<double> a(1, 1.0), b(1, 1.0), out(1, 5.0), scratch;
  CHECK_FALSE(g::tile_fast_with("sse9", a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 5.0);
  CHECK(g::tile_fast_with(isa.c_str(), a.data(), b.data(), 1, 1, 0, 0, 1, 1, out.data(), scratch));
  CHECK(out[0] == 1.0);
}

TEST_CASE("gemm_f64: random values, tile shapes from 1 to 65, K across the K blocks", "[gemm_f64]") {
  std::vector<double> scratch;  // shared across shapes on purpose: reuse must not leak state
  const int64_t sizes[] = {1, 7, 33, 64, 65};
  uint32_t seed = 1;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{130}}) {
        const Problem p = make_problem(m, n, k, seed++, kOrdinary);
        check_tile(p, 0, 0, m, n, scratch);
      }
  for (int64_t k : {63, 64, 65, 1000}) {
    const Problem p = make_problem(130, 100, k, static_cast<uint32_t>(k), kOrdinary);
    check_all_tiles(p, 64, 64, scratch);
  }
}

TEST_CASE("gemm_f64: subnormals kept, overflow to inf without NaN, signed zeros", "[gemm_f64]") {
  std::vector<double> scratch;
  const double min_normal = std::numeric_limits<double>::min();
  const Filler tiny = [&](std::mt19937_64& rng, bool is_a, int64_t, int64_t) {
    return is_a ? uniform(rng, -4.0, 4.0) * min_normal : uniform(rng, -2.0, 2.0);
  };
  int64_t subnormal = 0;
  for (double x : check_all_tiles(make_problem(70, 80, 201, 11, tiny), 64, 64, scratch))
    subnormal += std::fpclassify(x) == FP_SUBNORMAL;
  CHECK(subnormal > 100);

  // B positive, A's rows of one sign: chains overflow to +inf or -inf but never meet inf - inf.
  const Filler big = [](std::mt19937_64& rng, bool is_a, int64_t row, int64_t) {
    const int max_exp = is_a && row % 3 == 2 ? 2 : 600;
    const double mag = std::ldexp(uniform(rng, 1.0, 2.0), static_cast<int>(rng() % max_exp));
    return is_a && row % 3 == 1 ? -mag : mag;
  };
  int64_t pos_inf = 0, neg_inf = 0, nan = 0, finite = 0;
  for (double x : check_all_tiles(make_problem(67, 66, 100, 21, big), 64, 64, scratch)) {
    if (std::isnan(x))
      ++nan;
    else if (std::isinf(x))
      (x > 0 ? pos_inf : neg_inf)++;
    else
      ++finite;
  }
  CHECK(nan == 0);
  CHECK((pos_inf > 0 && neg_inf > 0 && finite > 0));

  // The chain starts from +0.0: an all-(-0) product chain yields +0, where a kernel starting from A*B
  // would return -0.
  const Filler zeros = [](std::mt19937_64& rng, bool is_a, int64_t, int64_t) {
    return is_a ? -0.0 : uniform(rng, 0.5, 1.0);
  };
  for (double x : check_all_tiles(make_problem(65, 65, 33, 31, zeros), 64, 64, scratch))
    REQUIRE((x == 0.0 && !std::signbit(x)));
}

TEST_CASE("gemm_f64: the comparison tells fused from unfused chains", "[gemm_f64]") {
  std::vector<double> scratch;
  // a*a = 1 + 2^-26 + 2^-54 exactly; rounded alone it ties to 1 + 2^-26, so only the fused chain keeps 2^-54.
  const double a = 1.0 + std::ldexp(1.0, -27);
  const double c = -(1.0 + std::ldexp(1.0, -26));
  Problem p{1, 1, 2, {1.0, a}, {c, a}};
  std::vector<double> out(1);
  int ran = 0;
  for (const char* isa : kIsas) {
    if (!g::tile_fast_with(isa, p.A.data(), p.B.data(), 2, 1, 0, 0, 1, 1, out.data(), scratch)) continue;
    INFO("isa " << isa);
    CHECK(out[0] == std::ldexp(1.0, -54));
    ++ran;
  }
  CHECK(ran >= 1);
  volatile double prod = a * a;  // separately rounded product
  CHECK(prod + c == 0.0);
}

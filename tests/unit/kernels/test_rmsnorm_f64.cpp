// rmsnorm_f64: the device's split of a row's sum of squares (spans, warps, row: rmsnorm_f64.h) is the
// specification's tree for every row length up to 3000 and the long ones up to the limit, on the family's
// own special inputs; the family's outputs agree with the formula evaluated in long double (an oracle
// independent of the tree and of the code under test), and its words are named as docs/families.md says.
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "kernels/rmsnorm_f64/rmsnorm_f64.h"
#include "src/core/family.h"
#include "src/spec/fpmath.h"

using namespace sdc;
using namespace sdc::rmsnorm_f64;

namespace {

// The squares of a row of n values of the special distribution (x's window): terms from subnormal to 2^1007,
// so the bits of a sum depend on the order of its additions.
std::vector<double> squares(uint32_t n, uint64_t seed) {
  const ExponentWindow w = input_window(0, Distribution::special);
  std::vector<double> q(n);
  for (uint32_t j = 0; j < n; ++j) {
    const double v = pattern_value_f64(Distribution::special, w, tensor_key(seed, 0), j);
    q[j] = v * v;
  }
  return q;
}

double tree(const double* v, uint32_t n) {
  return pairwise_sum<double>([v](uint32_t j) { return v[j]; }, n);
}

// rmsnorm_kernel's sum, its threads as loops: thread i's span sum, lane 0 of warp g's sum of spans
// 32 g .. 32 g + 31 (those present), the group's first thread's sum of the warp sums. warps_in_order: the last
// step as the tree (the kernel) or, to show the check can fail, as a left fold.
double device_sum(const std::vector<double>& q, bool warps_in_order = true) {
  const auto n = static_cast<uint32_t>(q.size());
  const uint32_t s = span(n), k = (n + s - 1) / s;
  std::vector<double> spans, warps;
  for (uint32_t i = 0; i < ROW_THREADS && i * s < n; ++i)
    spans.push_back(tree(q.data() + i * s, std::min(s, n - i * s)));
  REQUIRE(spans.size() == k);
  for (uint32_t g = 0; 32 * g < k; ++g) warps.push_back(tree(spans.data() + 32 * g, std::min(32u, k - 32 * g)));
  if (warps_in_order) return tree(warps.data(), static_cast<uint32_t>(warps.size()));
  double fold = warps[0];
  for (size_t g = 1; g < warps.size(); ++g) fold = fold + warps[g];
  return fold;
}

uint64_t bits(double v) { return double_bits(v); }

// A case of the family for these tests alone.
Case unit_case(Distribution d, uint64_t seed, int64_t rows, int64_t cols) {
  Case c;
  c.id = "rmsnorm_f64.unit_test";
  c.family = "rmsnorm_f64";
  c.distribution = d;
  c.data_seed = seed;
  c.shape.dims = {{"rows", rows}, {"cols", cols}};
  c.iterations["boot"] = 1;
  return c;
}

}  // namespace

TEST_CASE("the device's spans, warps and row sum are the specification's tree", "[rmsnorm_f64]") {
  std::vector<uint32_t> lengths;
  for (uint32_t n = 1; n <= 3000; ++n) lengths.push_back(n);
  for (uint32_t n : {4095u, 4096u, 4097u, 5120u, 8191u, 8192u, 8193u, 12345u, 16383u, 16384u}) lengths.push_back(n);
  int fold_differs = 0;
  for (uint32_t n : lengths) {
    INFO(n);
    REQUIRE(span(n) * ROW_THREADS >= n);
    REQUIRE((span(n) == 1 || span(n) / 2 * ROW_THREADS < n));  // the smallest such power of two
    const std::vector<double> q = squares(n, 40 + n);
    REQUIRE(bits(device_sum(q)) == bits(tree(q.data(), n)));
    fold_differs += bits(device_sum(q, false)) != bits(tree(q.data(), n));
  }
  CHECK(fold_differs > 0);  // the data tell trees apart: another order of the same additions shows
}

TEST_CASE("rmsnorm_f64 computes the RMS normalization: long double agrees to rounding", "[rmsnorm_f64]") {
  const Case c = unit_case(Distribution::uniform, 5, 8, 300);
  test::CaseInputs k = test::prepare_inputs(c);
  const uint32_t cols = 300;
  const auto value = [](const std::vector<float>& words, size_t j) {
    double v;
    std::memcpy(&v, words.data() + 2 * j, sizeof v);
    return v;
  };
  std::vector<float> out(k.p->tile_elements());
  Workspace ws;
  for (uint64_t t = 0; t < k.p->tile_count(); ++t) {
    k.p->compute_tile(k.ptrs.data(), t, out.data(), ws);
    for (uint32_t r = 0; r < TILE_ROWS; ++r) {
      const size_t row = t * TILE_ROWS + r;
      long double ss = 0;
      for (uint32_t j = 0; j < cols; ++j)
        ss += static_cast<long double>(value(k.in[0], row * cols + j)) * value(k.in[0], row * cols + j);
      const long double inv = 1.0L / std::sqrt(ss / cols + static_cast<long double>(EPS));
      for (uint32_t j = 0; j < cols; ++j) {
        const long double want = value(k.in[0], row * cols + j) * inv * value(k.in[1], j);
        const double got = value(out, r * cols + j);
        INFO("tile " << t << " row " << r << " col " << j);
        REQUIRE(std::fabs(static_cast<long double>(got) - want) <= std::fabs(want) * 0x1p-48L);
      }
    }
  }
  // Element names: word 2 (r cols + c) + h is half h of y[r][c].
  REQUIRE(k.p->element_name(2 * (1 * cols + 2) + 1) == "y[1][2].hi");
  REQUIRE(k.p->element_name(2 * (7 * cols + 299)) == "y[7][299].lo");
  uint64_t tile;
  uint32_t offset;
  k.p->locate(2 * (5 * cols + 7) + 1, tile, offset);
  REQUIRE((tile == 1 && offset == 2 * (1 * cols + 7) + 1));
}

TEST_CASE("rmsnorm_f64's special window keeps the longest row finite", "[rmsnorm_f64]") {
  const Case c = unit_case(Distribution::special, 9, 4, MAX_COLS);
  test::CaseInputs k = test::prepare_inputs(c);
  std::vector<float> out(k.p->tile_elements());
  Workspace ws;
  k.p->compute_tile(k.ptrs.data(), 0, out.data(), ws);
  for (size_t j = 0; j < out.size() / 2; ++j) {
    double v;
    std::memcpy(&v, out.data() + 2 * j, sizeof v);
    INFO(j);
    REQUIRE(std::isfinite(v));
  }
}

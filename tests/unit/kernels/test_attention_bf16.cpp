// The bf16 tensor-core attention families (kernels/attention_bf16_exactint, kernels/attention_bf16,
// kernels/attention_mma): the exactness bounds of the header on their worst cases; the golden against an
// independent int64 recomputation; that the softmax is not degenerate (P takes many grid values); the
// kernel's fragment maps run on the host with an emulated mma.sync, equal to the reference, and the
// emulation's detector firing on planted index faults; the recorded family's generator and geometry.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <vector>

#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "kernels/attention_bf16/attention_bf16.h"
#include "kernels/attention_bf16_exactint/attention_bf16_exactint.h"
#include "src/core/patterns.h"
#include "src/spec/digest.h"

using namespace sdc;
namespace ax = sdc::attention_bf16_exactint;
namespace am = sdc::attention_mma;

namespace {

Case make_case(const std::string& family, int64_t heads, int64_t seq, int64_t dim, bool causal,
               Distribution d = Distribution::uniform, uint64_t seed = 91) {
  Case c;
  c.id = family + ".unit_test";
  c.family = family;
  c.mode = family == "attention_bf16" ? Mode::recorded : Mode::exact_integer;
  c.distribution = d;
  c.data_seed = seed;
  c.shape.dims = {{"heads", heads}, {"seq", seq}, {"dim", dim}, {"causal", causal ? 1 : 0}};
  c.iterations["boot"] = 1;
  return c;
}

using test::CaseInputs;

ax::Pattern pattern_of(const Case& c) {
  return ax::make_pattern(c.shape.dims.at("seq"), c.shape.dims.at("dim"), c.data_seed,
                          c.distribution == Distribution::mantissa_walk);
}

bool same_bits(const float* x, const float* y, size_t n) { return std::memcmp(x, y, n * sizeof(float)) == 0; }

// x / 2^unit as an integer; `ok` turns false if it is not one (the element is not in the pattern's lattice).
int64_t units(float x, int unit, bool& ok) {
  const double s = std::ldexp(static_cast<double>(x), -unit);
  ok = ok && s == std::trunc(s) && std::fabs(s) < 0x1p31;
  return ok ? static_cast<int64_t>(s) : 0;
}

// rows x dim elements of a tensor from row r0 as integers in units of 2^unit.
std::vector<int64_t> unit_rows(const float* x, int64_t r0, int64_t rows, int64_t dim, int unit) {
  std::vector<int64_t> out(static_cast<size_t>(rows * dim));
  bool ok = true;
  for (int64_t e = 0; e < rows * dim; ++e) out[e] = units(x[r0 * dim + e], unit, ok);
  REQUIRE(ok);
  return out;
}

// The grid integer k = rne(p * 256), capped at 256, by the C library's rounding (not the shifter trick).
int64_t grid_integer(float p) {
  const double k = std::nearbyint(static_cast<double>(p) * 256.0);
  return k > 256.0 ? 256 : static_cast<int64_t>(k);
}

struct RowWeights {
  std::vector<int64_t> k;  // grid integers of the row's keys
  float l;
};

// One tile recomputed with int64 sums of the pattern's integers; the fp32 softmax is the specification's
// (fpmath.h) on the exact scores. Also returns the grid integers of every row.
std::vector<float> int64_tile(const Case& c, const CaseInputs& in, uint64_t tile,
                              std::vector<RowWeights>* rows = nullptr) {
  const ax::Pattern pat = pattern_of(c);
  const int64_t seq = pat.seq, dim = pat.dim, head = static_cast<int64_t>(tile) / (seq / 64);
  const int64_t i0 = static_cast<int64_t>(tile) % (seq / 64) * 64;
  const bool causal = c.shape.dims.at("causal") != 0;
  const int qu = ax::q_block_exp(pat, head) - 7, ku = ax::k_block_exp(pat, head), vu = ax::v_block_exp(pat, head);
  const int64_t keys = causal ? i0 + 64 : seq;
  REQUIRE(std::fegetround() == FE_TONEAREST);  // grid_integer's nearbyint rounds to nearest even
  const std::vector<int64_t> q = unit_rows(in.in[0].data() + head * seq * dim, i0, 64, dim, qu);
  const std::vector<int64_t> k = unit_rows(in.in[1].data() + head * seq * dim, 0, keys, dim, ku);
  const std::vector<int64_t> v = unit_rows(in.in[2].data() + head * seq * dim, 0, keys, dim, vu);
  std::vector<float> out(static_cast<size_t>(64 * dim));
  int64_t largest = 0;  // of every score and every P . V sum, in units: below 2^24 by (S) and (P)
  for (int64_t r = 0; r < 64; ++r) {
    const uint32_t n = static_cast<uint32_t>(causal ? i0 + r + 1 : seq);
    std::vector<float> s(n);
    for (uint32_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t d = 0; d < dim; ++d) sum += q[r * dim + d] * k[j * dim + d];
      largest = std::max<int64_t>(largest, std::llabs(sum));
      s[j] = static_cast<float>(std::ldexp(static_cast<double>(sum), -7 - pat.shift));  // (T): exact
    }
    const float m = fold_max([&](uint32_t j) { return s[j]; }, n);
    for (uint32_t j = 0; j < n; ++j) s[j] = sdc_expf(s[j] - m);
    RowWeights rw{std::vector<int64_t>(n), pairwise_sum([&](uint32_t j) { return s[j]; }, n)};
    for (uint32_t j = 0; j < n; ++j) rw.k[j] = grid_integer(s[j]);
    for (int64_t d = 0; d < dim; ++d) {
      int64_t sum = 0;
      for (uint32_t j = 0; j < n; ++j) sum += rw.k[j] * v[j * dim + d];
      largest = std::max<int64_t>(largest, std::llabs(sum));
      out[r * dim + d] = static_cast<float>(std::ldexp(static_cast<double>(sum), vu - 8)) / rw.l;  // w = k / 2^8
    }
    if (rows) rows->push_back(std::move(rw));
  }
  REQUIRE(largest < (int64_t{1} << 24));
  return out;
}

}  // namespace

TEST_CASE("attention_bf16_exactint: the exactness bounds hold on their worst cases", "[attention_bf16]") {
  // (S): dim * (2^8 - 1) * 2^Ds < 2^24 with the largest such Ds, for every dim the family admits; the
  // worst score (every product at its largest magnitude, all of one sign) summed in fp32 in two orders.
  for (int64_t dim = 16; dim <= 128; dim += 16) {
    INFO("dim " << dim);
    const int ds = exactint::exponent_budget(ax::FORMAT, dim);
    REQUIRE(dim * 255 * (int64_t{1} << ds) < (int64_t{1} << 24));
    REQUIRE(dim * 255 * (int64_t{1} << (ds + 1)) >= (int64_t{1} << 24));
    const ax::Pattern p = ax::make_pattern(64, dim, 1, false);
    REQUIRE((p.q_count - 1) + (p.k_count - 1) == ds);
    REQUIRE((p.shift >= 1 && p.shift <= 16));
    const float worst = static_cast<float>(255 << (p.q_count - 1)) * static_cast<float>(1 << (p.k_count - 1));
    float up = 0.0f, down = 0.0f;
    for (int64_t d = 0; d < dim; ++d) {
      up += worst;
      down = worst + down;
      REQUIRE(static_cast<double>(up) == static_cast<double>(worst) * static_cast<double>(d + 1));
    }
    REQUIRE(up == down);
    // (T): the scaled worst score is exact and normal.
    const float scaled = up * pow2f(-7 - p.shift);
    REQUIRE(static_cast<double>(scaled) == std::ldexp(static_cast<double>(up), -7 - p.shift));
  }
  // (P): seq * 2^(8 + Dv) < 2^24, the largest such Dv; the worst row (every weight 1, every V at its
  // largest magnitude) summed in fp32 stays exact.
  for (int64_t seq = 64; seq <= 8192; seq += 64) {
    const int dv = ax::v_budget(seq);
    REQUIRE(dv >= 0);
    REQUIRE(seq * (int64_t{256} << dv) < (int64_t{1} << 24));
    REQUIRE(seq * (int64_t{256} << (dv + 1)) >= (int64_t{1} << 24));
    const float worst = 256.0f * static_cast<float>(1 << dv);
    float acc = 0.0f;
    for (int64_t j = 0; j < seq; ++j) acc += worst;
    REQUIRE(static_cast<double>(acc) == static_cast<double>(worst) * static_cast<double>(seq));
  }
  REQUIRE(ax::v_budget(8192) == 2);
  REQUIRE(ax::v_budget(65536) == -1);
  // The grid: every weight is k / 256 with 0 <= k <= 256 and a bf16; ties round to even.
  for (float p : {0.0f, 1.0f / 512, 3.0f / 512, 0.5f, 0.999f, 1.0f, 1.0000001f, 2.0f}) {
    const float w = am::grid_weight(p);
    REQUIRE((w >= 0.0f && w <= 1.0f));
    REQUIRE(am::bf16_value(am::bf16_bits(w)) == w);
    REQUIRE(w * 256.0f == std::trunc(w * 256.0f));
  }
  REQUIRE(am::grid_weight(1.0f / 512) == 0.0f);
  REQUIRE(am::grid_weight(3.0f / 512) == 2.0f / 256);
  REQUIRE(std::isnan(am::grid_weight(NAN)));
}

TEST_CASE("attention_bf16_exactint: inputs are normal bf16 in the pattern's lattice and windows", "[attention_bf16]") {
  for (const Case& c : {make_case("attention_bf16_exactint", 3, 128, 128, false),
                        make_case("attention_bf16_exactint", 2, 256, 16, true, Distribution::mantissa_walk)}) {
    const CaseInputs in = test::prepare_inputs(c);
    const ax::Pattern pat = pattern_of(c);
    std::set<int> exps[3];
    std::set<uint32_t> fracs;
    for (uint32_t t = 0; t < 3; ++t)
      for (uint64_t e = 0; e < in.in[t].size(); ++e) {
        const uint16_t b = ax::element_bits(pat, t, e);
        const int field = (b >> 7) & 0xff;
        REQUIRE((field != 0 && field != 0xff));
        REQUIRE(am::bf16_value(b) == in.in[t][e]);
        const int64_t head = static_cast<int64_t>(e) / (pat.seq * pat.dim);
        const float x = in.in[t][e];
        exps[t].insert(std::ilogb(x));
        if (t == 0) {
          bool ok = true;
          const int64_t a = std::llabs(units(x, ax::q_block_exp(pat, head) - 7, ok));
          REQUIRE((ok && a <= (int64_t{255} << (pat.q_count - 1))));
          fracs.insert(b & 0x7fu);
          REQUIRE((std::ilogb(x) >= ax::FORMAT.a_exp_min && std::ilogb(x) <= ax::FORMAT.a_exp_max));
        } else {
          const int base = t == 1 ? ax::k_block_exp(pat, head) : ax::v_block_exp(pat, head);
          const int count = t == 1 ? pat.k_count : pat.v_count;
          REQUIRE(std::fabs(x) == std::ldexp(1.0f, std::ilogb(x)));  // a power of two
          REQUIRE((std::ilogb(x) >= base && std::ilogb(x) < base + count));
        }
      }
    if (c.distribution == Distribution::mantissa_walk) {  // each fraction bit set alone and cleared alone
      REQUIRE(fracs.size() == 14);
      for (uint32_t b = 0; b < 7; ++b) REQUIRE((fracs.count(1u << b) == 1 && fracs.count(0x7fu ^ (1u << b)) == 1));
    } else {
      REQUIRE(fracs.size() == 128);  // every 7-bit fraction of Q occurs
    }
    REQUIRE(exps[0].size() >= static_cast<size_t>(pat.q_count));
    REQUIRE(exps[2].size() >= static_cast<size_t>(pat.v_count));
  }
}

TEST_CASE("attention_bf16_exactint: the reference equals an independent int64 recomputation", "[attention_bf16]") {
  for (const Case& c : {make_case("attention_bf16_exactint", 2, 192, 48, true),
                        make_case("attention_bf16_exactint", 1, 128, 128, false, Distribution::mantissa_walk),
                        make_case("attention_bf16_exactint", 1, 256, 16, false)}) {
    INFO(c.shape.dims.at("seq") << " x " << c.shape.dims.at("dim") << " causal " << c.shape.dims.at("causal"));
    const CaseInputs in = test::prepare_inputs(c);
    test::for_each_tile_both_ways(in, [&](uint64_t t, const auto& fast, const auto& spec) {
      const std::vector<float> exact = int64_tile(c, in, t);
      REQUIRE(same_bits(fast.data(), spec.data(), fast.size()));
      REQUIRE(same_bits(fast.data(), exact.data(), fast.size()));
    });
  }
}

TEST_CASE("attention_bf16_exactint: battery goldens equal the int64 recomputation of sample tiles",
          "[attention_bf16]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  size_t cases = 0;
  for (const Case& c : ps.battery.cases) {
    if (c.family != "attention_bf16_exactint") continue;
    INFO(c.id);
    ++cases;
    const CaseInputs in = test::prepare_inputs(c);
    const uint64_t n = in.p->tile_count();
    for (uint64_t t : {uint64_t{0}, n / 2 + 1, n - 1}) {
      const std::vector<float> exact = int64_tile(c, in, t);
      REQUIRE(tile_digest(t, exact.data(), in.p->tile_elements()) == ps.golden.at(c.id).tile_digests.at(t));
    }
  }
  REQUIRE(cases >= 2);
}

TEST_CASE("attention_bf16_exactint: the softmax is not degenerate: P takes many grid values", "[attention_bf16]") {
  // On every battery case and on the shapes' extremes: in sample tiles, rows with at least 8 keys have
  // several non-zero weights besides the maximum's 1, and the tile uses a wide range of the grid.
  std::vector<Case> cases = {make_case("attention_bf16_exactint", 1, 128, 16, false),
                             make_case("attention_bf16_exactint", 1, 256, 128, true, Distribution::mantissa_walk)};
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  for (const Case& c : ps.battery.cases)
    if (c.family == "attention_bf16_exactint") cases.push_back(c);
  for (const Case& c : cases) {
    INFO(c.id << " " << c.shape.dims.at("seq") << " x " << c.shape.dims.at("dim"));
    const CaseInputs in = test::prepare_inputs(c);
    for (uint64_t t : {uint64_t{0}, in.p->tile_count() - 1}) {
      std::vector<RowWeights> rows;
      (void)int64_tile(c, in, t, &rows);
      std::set<int64_t> grid_values;
      size_t keys = 0, fractional = 0;
      for (const RowWeights& rw : rows) {
        size_t row_fractional = 0;
        for (int64_t k : rw.k) {
          grid_values.insert(k);
          row_fractional += k > 0 && k < 256;
        }
        keys += rw.k.size();
        fractional += row_fractional;
        if (rw.k.size() >= 8) REQUIRE(row_fractional >= 2);
      }
      INFO("tile " << t << ": " << grid_values.size() << " grid values, " << fractional << " of " << keys
                   << " weights strictly between 0 and 1");
      REQUIRE(grid_values.size() >= 128);  // half of the grid's 257 values (battery: 186 to 241)
      REQUIRE(fractional * 2 >= keys);     // half of the weights are neither 0 nor 1 (battery: over 80%)
    }
  }
}

// The recorded tensor-core GEMMs on the CPU (no GPU needed): their inputs (kernels/recorded_gemm/recorded_gemm.h)
// are normal, finite, full-significand bf16/fp16 values inside each distribution's window, the largest sums stay
// finite and the smallest products normal in fp32, and shapes outside the kernels' limits are refused. (The
// cuBLASLt families on the same inputs are compared with their mma.sync twins in test_cublaslt.cpp.)
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/gemm_case.h"
#include "kernels/recorded_gemm/recorded_gemm.h"
#include "src/core/family.h"

using namespace sdc;

namespace {

// An independent decoding of a normal 16-bit float: (1 + frac / 2^f) * 2^exp.
double decode(const recorded_gemm::Encoding& e, uint16_t bits, int& exp) {
  const int exp_bits = 15 - e.frac_bits;
  const int field = (bits >> e.frac_bits) & ((1 << exp_bits) - 1);
  exp = field - e.bias;
  const double frac = static_cast<double>(bits & ((1u << e.frac_bits) - 1)) / static_cast<double>(1u << e.frac_bits);
  const double mag = std::ldexp(1.0 + frac, exp);
  return (bits >> 15) ? -mag : mag;
}

struct Enc {
  const char* name;
  recorded_gemm::Encoding e;
};
const Enc ENCODINGS[] = {{"bf16", recorded_gemm::BF16}, {"fp16", recorded_gemm::F16}};

}  // namespace

TEST_CASE("recorded_gemm: inputs are normal, full-significand, inside the window, both signs", "[recorded_gemm]") {
  for (const Enc& en : ENCODINGS)
    for (const bool heavy : {false, true}) {
      INFO(en.name << (heavy ? " heavy_tail" : " uniform"));
      const recorded_gemm::Pattern p = recorded_gemm::make_pattern(en.e, 99, heavy);
      const int lo = heavy ? en.e.heavy_lo : -2, hi = heavy ? en.e.heavy_hi : 1;
      const int field_max = (1 << (15 - en.e.frac_bits)) - 1;
      for (uint32_t tensor = 0; tensor < 2; ++tensor) {
        uint32_t frac_or = 0, frac_and = ~0u;
        std::set<int> exps;
        int signs[2] = {0, 0};
        for (uint64_t i = 0; i < 65536; ++i) {
          const uint16_t bits = recorded_gemm::element_bits(p, tensor, i * 7919);
          const int field = (bits >> en.e.frac_bits) & field_max;
          REQUIRE(field != 0);          // no zero, no subnormal
          REQUIRE(field != field_max);  // no infinity, no NaN
          int exp = 0;
          const double v = decode(en.e, bits, exp);
          REQUIRE(exp >= lo);
          REQUIRE(exp <= hi);
          REQUIRE(static_cast<double>(recorded_gemm::element_value(p, bits)) == v);  // the fp32 value is exact
          const uint32_t frac = bits & ((1u << en.e.frac_bits) - 1);
          frac_or |= frac;
          frac_and &= frac;
          exps.insert(exp);
          ++signs[bits >> 15];
        }
        CHECK(frac_or == (1u << en.e.frac_bits) - 1);         // every fraction bit is set somewhere...
        CHECK(frac_and == 0);                                 // ...and clear somewhere
        CHECK(static_cast<int>(exps.size()) == hi - lo + 1);  // every exponent of the window occurs
        CHECK(signs[0] > 30000);
        CHECK(signs[1] > 30000);
      }
      // a and b are different data, and another seed gives other data
      const recorded_gemm::Pattern q = recorded_gemm::make_pattern(en.e, 100, heavy);
      int same_ab = 0, same_seed = 0;
      for (uint64_t i = 0; i < 4096; ++i) {
        same_ab += recorded_gemm::element_bits(p, 0, i) == recorded_gemm::element_bits(p, 1, i);
        same_seed += recorded_gemm::element_bits(p, 0, i) == recorded_gemm::element_bits(q, 0, i);
      }
      CHECK(same_ab < 64);
      CHECK(same_seed < 64);
    }
}

TEST_CASE("recorded_gemm: the largest sum stays finite and the smallest product normal in fp32", "[recorded_gemm]") {
  // The worst case over every admitted shape: K = MAX_K products of the largest magnitudes (just below
  // 2^(hi+1) each), all of one sign; the smallest product is 2^lo * 2^lo.
  for (const Enc& en : ENCODINGS) {
    INFO(en.name);
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, -en.e.frac_bits), en.e.heavy_hi);
    const double worst_sum = static_cast<double>(recorded_gemm::MAX_K) * largest * largest;
    CHECK(worst_sum < static_cast<double>(FLT_MAX));
    CHECK(worst_sum < std::ldexp(1.0, 79));  // the header's figure: below 2^78 at K = 2^16
    const double smallest = std::ldexp(1.0, 2 * en.e.heavy_lo);
    CHECK(smallest >= static_cast<double>(FLT_MIN));
    // the windows are the encoding's normal range: one step past either end is not
    CHECK(en.e.heavy_lo + en.e.bias >= 1);
    CHECK(en.e.heavy_hi + en.e.bias <= (1 << (15 - en.e.frac_bits)) - 2);
  }
}

TEST_CASE("recorded_gemm: shapes outside the kernels' limits are refused with the reason", "[recorded_gemm]") {
  const Family* f = find_family("gemm_bf16");
  REQUIRE(f != nullptr);
  auto rec_case = [](int64_t m, int64_t n, int64_t k, Distribution d = Distribution::uniform) {
    return test::gemm_case("gemm_bf16", Mode::recorded, m, n, k, d);
  };
  CHECK(f->validate(rec_case(64, 128, 32)).empty());
  CHECK(f->validate(rec_case(8192, 8192, 32768)).empty());  // 2^28 elements per input: the limit
  CHECK_FALSE(f->validate(rec_case(100, 64, 64)).empty());
  CHECK_FALSE(f->validate(rec_case(64, 64, 48)).empty());
  CHECK_FALSE(f->validate(rec_case(64, 64, recorded_gemm::MAX_K + recorded_gemm::K_STEP)).empty());
  CHECK(f->validate(rec_case(8192, 64, 65536)).find("2^28") != std::string::npos);
  CHECK(f->validate(rec_case(64, 64, 64, Distribution::mantissa_walk)).find("uniform and heavy_tail") !=
        std::string::npos);
}

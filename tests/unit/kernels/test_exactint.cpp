// The exact-integer GEMM families (kernels/gemm_*_exactint): the exactness bound on its worst case for
// every K, recomputed here from the dtypes' own numbers; the CPU reference against a long double sum;
// the narrow encodings the device generates against the floats the host generates; and that the pattern
// exercises what it claims (every significand bit, several exponents, magnitudes changing across tiles).
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/exactint/exactint_ref.h"
#include "kernels/exactint/formats.h"
#include "src/core/family.h"
#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "tests/unit/gemm_case.h"

using namespace sdc;

namespace {

// What this test knows about each dtype, independently of the kernels' headers: significand width, the
// accumulator bound, the narrow type's normal exponents and largest finite value, and a decoder.
struct DType {
  const char* family;
  int p;
  int bound;
  int emin, emax;
  double max_finite;
  float (*decode)(uint32_t bits);  // throws nothing; REQUIREs the encoding is a normal number
  uint32_t (*bits)(const exactint::Pattern&, uint32_t tensor, uint64_t index);
  exactint::Format format;
};

float decode_bf16(uint32_t b) {
  REQUIRE(b <= 0xffffu);
  const uint32_t e = (b >> 7) & 0xffu;
  REQUIRE((e != 0 && e != 0xff));
  return bits_float(b << 16);
}
float decode_f16(uint32_t b) {
  REQUIRE(b <= 0xffffu);
  const int e = static_cast<int>((b >> 10) & 31u);
  REQUIRE((e != 0 && e != 31));
  const double v = std::ldexp(1024.0 + (b & 1023u), e - 15 - 10);
  return static_cast<float>((b >> 15) ? -v : v);
}
float decode_tf32(uint32_t b) {
  REQUIRE((b & 0x1fffu) == 0u);  // tf32: the low 13 fraction bits are zero
  const uint32_t e = (b >> 23) & 0xffu;
  REQUIRE((e != 0 && e != 0xff));
  return bits_float(b);
}
float decode_e4m3(uint32_t b) {
  REQUIRE(b <= 0xffu);
  const int e = static_cast<int>((b >> 3) & 15u);
  REQUIRE(e != 0);
  REQUIRE((b & 0x7fu) != 0x7fu);  // S.1111.111 is NaN
  const double v = std::ldexp(8.0 + (b & 7u), e - 7 - 3);
  return static_cast<float>((b >> 7) ? -v : v);
}

// The bits the kernels' encoding of format F gives an element.
template <class F>
uint32_t bits_of(const exactint::Pattern& p, uint32_t t, uint64_t i) {
  return static_cast<uint32_t>(exactint::element_bits<F>(p, t, i));
}

const std::vector<DType>& dtypes() {
  static const std::vector<DType> all = {
      {"gemm_bf16_exactint", 8, 24, -126, 127, std::ldexp(255.0, 120), decode_bf16, bits_of<exactint::formats::bf16>,
       exactint::formats::bf16::FORMAT},
      {"gemm_f16_exactint", 11, 24, -14, 15, 65504.0, decode_f16, bits_of<exactint::formats::f16>,
       exactint::formats::f16::FORMAT},
      {"gemm_tf32_exactint", 11, 24, -126, 127, std::ldexp(2047.0, 117), decode_tf32, bits_of<exactint::formats::tf32>,
       exactint::formats::tf32::FORMAT},
      {"gemm_fp8_exactint", 4, 13, -6, 8, 448.0, decode_e4m3, bits_of<exactint::formats::fp8>,
       exactint::formats::fp8::FORMAT},
  };
  return all;
}

Case make_case(const std::string& family, int64_t m, int64_t n, int64_t k, Distribution d = Distribution::uniform,
               uint64_t seed = 77) {
  return test::gemm_case(family, Mode::exact_integer, m, n, k, d, seed);
}

using Inputs = test::CaseInputs;

// A GEMM case's operands: in[0] is A, in[1] is B.
Inputs generate(const Case& c) {
  Inputs in = test::prepare_inputs(c);
  REQUIRE(in.in.size() == 2);
  return in;
}

// C[i][j] of one tile summed in long double in k order: exact for these inputs (64-bit significand).
std::vector<float> long_double_tile(const Inputs& in, int64_t n, int64_t k, uint64_t tile) {
  const int64_t r0 = static_cast<int64_t>(tile) / (n / 64) * 64, c0 = static_cast<int64_t>(tile) % (n / 64) * 64;
  std::vector<float> out(64 * 64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      long double s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s += static_cast<long double>(in.in[0][(r0 + r) * k + kk]) *
             static_cast<long double>(in.in[1][(c0 + c) * k + kk]);
      out[r * 64 + c] = static_cast<float>(s);
    }
  return out;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

int exponent_of(float x) { return std::ilogb(x); }

}  // namespace

TEST_CASE("exactint: the worst-case sum of |products| is below 2^bound for every admitted K", "[exactint]") {
  for (const DType& d : dtypes()) {
    INFO(d.family);
    const Family* f = find_family(d.family);
    REQUIRE(f != nullptr);
    REQUIRE(f->modes == std::vector<Mode>{Mode::exact_integer});
    int64_t largest = 0;
    for (int64_t k = 32; k <= 70000; k += 32) {
      INFO("k = " << k);
      const Case c = make_case(d.family, 64, 64, k);
      const std::string err = f->validate(c);
      // Independently: D = 0 must fit, K * (2^p - 1) < 2^bound.
      const bool fits = static_cast<__int128>(k) * ((1 << d.p) - 1) < (static_cast<__int128>(1) << d.bound);
      REQUIRE(err.empty() == fits);
      if (!fits) {
        REQUIRE(err.find("no room") != std::string::npos);
        REQUIRE(err.find('\n') == std::string::npos);
        continue;
      }
      largest = k;
      const exactint::Pattern pt = exactint::case_pattern(d.format, c);
      REQUIRE(pt.a_count >= 1);
      REQUIRE(pt.b_count >= 1);
      // The worst case: every product at the largest significand and both largest exponents, all of one
      // sign, in units of the tile's smallest lsb 2^u.
      const __int128 worst_product = static_cast<__int128>((1 << d.p) - 1) << ((pt.a_count - 1) + (pt.b_count - 1));
      const __int128 worst_sum = worst_product * k;
      REQUIRE(worst_sum < (static_cast<__int128>(1) << d.bound));
      // And the spans are as wide as the bound allows: one more exponent on either side breaks it.
      REQUIRE(worst_sum * 2 >= (static_cast<__int128>(1) << d.bound));
      // Every tile's scales keep inputs normal in the narrow type, sums normal and finite in fp32.
      const exactint::Format& fm = pt.f;
      REQUIRE(fm.a_exp_min >= d.emin);
      REQUIRE(std::ldexp((1 << d.p) - 1.0, fm.a_exp_max - (d.p - 1)) <= d.max_finite);
      REQUIRE(fm.b_exp_min >= d.emin);
      REQUIRE(fm.b_exp_max <= d.emax);
      REQUIRE(std::ldexp(1.0, fm.b_exp_max) <= d.max_finite);
      const int u_min = fm.a_exp_min - (d.p - 1) + fm.b_exp_min;
      const int u_max = (fm.a_exp_max - (pt.a_count - 1)) - (d.p - 1) + (fm.b_exp_max - (pt.b_count - 1));
      REQUIRE(u_min >= -126);
      REQUIRE(u_max + d.bound <= 128);
      REQUIRE(fm.a_exp_max - fm.a_exp_min >= pt.a_count - 1);
      REQUIRE(fm.b_exp_max - fm.b_exp_min >= pt.b_count - 1);
    }
    REQUIRE(largest >= 512);  // fp8's 13 bits allow 544; the others far more
    // A shape that is not a multiple of the step or is not exact-integer data is refused too.
    REQUIRE(!f->validate(make_case(d.family, 64, 64, 48)).empty());
    REQUIRE(!f->validate(make_case(d.family, 100, 64, 64)).empty());
    REQUIRE(!f->validate(make_case(d.family, 64, 64, 64, Distribution::special)).empty());
    REQUIRE(f->validate(make_case(d.family, 64, 64, 64, Distribution::mantissa_walk)).empty());
  }
  REQUIRE(exactint::formats::bf16::MAX_K == 65792);
  REQUIRE(exactint::formats::f16::MAX_K == 8192);
  REQUIRE(exactint::formats::tf32::MAX_K == 8192);
  REQUIRE(exactint::formats::fp8::MAX_K == 544);
}

TEST_CASE("exactint: the actual data of every tile stays within the bound", "[exactint]") {
  for (const DType& d : dtypes()) {
    for (int64_t k : {int64_t{32}, int64_t{160}, int64_t{544}}) {
      INFO(d.family << " k = " << k);
      const Case c = make_case(d.family, 192, 128, k);
      const Inputs in = generate(c);
      const exactint::Pattern pt = exactint::case_pattern(d.format, c);
      for (uint64_t t = 0; t < in.p->tile_count(); ++t) {
        const int64_t rb = static_cast<int64_t>(t) / 2, cb = static_cast<int64_t>(t) % 2;
        const int u = exactint::tile_unit(pt, rb, cb);
        long double worst = 0;   // the largest sum of |products| of any output of the tile, in units 2^u
        int64_t fractional = 0;  // products that are not a whole number of the tile's lsb
        for (int r = 0; r < 64; ++r)
          for (int col = 0; col < 64; ++col) {
            long double s = 0;
            for (int64_t kk = 0; kk < k; ++kk) {
              const long double prod = std::fabs(static_cast<long double>(in.in[0][(rb * 64 + r) * k + kk]) *
                                                 in.in[1][(cb * 64 + col) * k + kk]);
              const long double units = std::ldexp(prod, -u);
              fractional += units != std::trunc(units);
              s += units;
            }
            worst = std::max(worst, s);
          }
        REQUIRE(fractional == 0);
        REQUIRE(worst < std::ldexp(1.0L, d.bound));
      }
    }
  }
}

TEST_CASE("exactint: the reference equals a long double recomputation, fast path equals specification", "[exactint]") {
  for (const DType& d : dtypes()) {
    const int64_t kmax = d.p == 4 ? 544 : d.p == 8 ? 65792 : 8192;
    struct Shape {
      int64_t m, n, k;
      Distribution dist;
    };
    for (const Shape& s : {Shape{192, 128, 32, Distribution::uniform}, Shape{64, 192, 480, Distribution::mantissa_walk},
                           Shape{128, 64, 256, Distribution::uniform}, Shape{64, 64, kmax, Distribution::uniform}}) {
      INFO(d.family << " " << s.m << "x" << s.n << "x" << s.k);
      if (s.k > kmax) continue;
      const Inputs in = generate(make_case(d.family, s.m, s.n, s.k, s.dist));
      test::for_each_tile_both_ways(in, [&](uint64_t t, const auto& fast, const auto& spec) {
        REQUIRE(same_bits(fast, spec));
        REQUIRE(same_bits(fast, long_double_tile(in, s.n, s.k, t)));
        for (float v : fast) REQUIRE((v == 0.0f || std::fabs(v) >= std::ldexp(1.0f, -126)));
      });
    }
  }
}

TEST_CASE("exactint: the narrow encodings decode to the floats the host generates", "[exactint]") {
  for (const DType& d : dtypes()) {
    for (Distribution dist : {Distribution::uniform, Distribution::mantissa_walk}) {
      INFO(d.family);
      const Case c = make_case(d.family, 256, 192, 96, dist, 1234);
      const Inputs in = generate(c);
      const exactint::Pattern pt = exactint::case_pattern(d.format, c);
      for (uint32_t t = 0; t < 2; ++t) {
        const std::vector<float>& host = in.in[t];
        for (uint64_t i = 0; i < host.size(); ++i) {
          const float dev = d.decode(d.bits(pt, t, i));
          if (float_bits(dev) != float_bits(host[i])) FAIL("tensor " << t << " element " << i);
        }
      }
    }
  }
  // Pinned: a change of the pattern invalidates every golden, and the device must reproduce these.
  const auto pin = [](const DType& d, uint32_t t, uint64_t i) {
    return d.bits(exactint::case_pattern(d.format, make_case(d.family, 64, 64, 64, Distribution::uniform, 5)), t, i);
  };
  REQUIRE(pin(dtypes()[0], 0, 100) == 0xae48u);       // bf16 -1.5625 * 2^-35 (A: 8 significand bits)
  REQUIRE(pin(dtypes()[1], 1, 100) == 0x8800u);       // fp16 -2^-13 (B: a power of two)
  REQUIRE(pin(dtypes()[2], 0, 4000) == 0xbb542000u);  // tf32: the low 13 bits zero
  REQUIRE(pin(dtypes()[3], 1, 4000) == 0xd8u);        // e4m3 -2^4
}

TEST_CASE("exactint: every significand bit of A is set and cleared, several exponents appear", "[exactint]") {
  for (const DType& d : dtypes()) {
    for (Distribution dist : {Distribution::uniform, Distribution::mantissa_walk}) {
      INFO(d.family << " " << static_cast<int>(dist));
      const Case c = make_case(d.family, 256, 256, 64, dist, 99);
      const exactint::Pattern pt = exactint::case_pattern(d.format, c);
      const uint32_t frac_mask = (1u << (d.p - 1)) - 1;
      uint32_t seen_set = 0, seen_clear = 0;
      std::set<int> a_exp, b_exp, a_tile0_exp, b_tile0_exp;
      for (uint64_t i = 0; i < 256 * 64; ++i) {
        const exactint::Element a = exactint::a_element(pt, i), b = exactint::b_element(pt, i);
        REQUIRE((a.frac & ~frac_mask) == 0u);
        seen_set |= a.frac;
        seen_clear |= ~a.frac & frac_mask;
        a_exp.insert(a.exp);
        b_exp.insert(b.exp);
        if (i < 64 * 64) a_tile0_exp.insert(a.exp), b_tile0_exp.insert(b.exp);
        REQUIRE(b.frac == 0u);
      }
      REQUIRE(seen_set == frac_mask);
      REQUIRE(seen_clear == frac_mask);
      // Within one block every exponent the budget allows appears; over four blocks, more.
      REQUIRE(static_cast<int>(a_tile0_exp.size()) == pt.a_count);
      REQUIRE(static_cast<int>(b_tile0_exp.size()) == pt.b_count);
      REQUIRE(a_exp.size() >= 3);
      REQUIRE(b_exp.size() >= 3);
    }
  }
}

TEST_CASE("exactint: magnitudes differ across tiles", "[exactint]") {
  for (const DType& d : dtypes()) {
    INFO(d.family);
    const Case c = make_case(d.family, 256, 256, 128);
    const Inputs in = generate(c);
    std::set<int> top_exponents;  // exponent of each tile's largest |C|
    std::vector<float> out(4096);
    Workspace ws;
    for (uint64_t t = 0; t < in.p->tile_count(); ++t) {
      in.p->compute_tile(in.ptrs.data(), t, out.data(), ws);
      float top = 0;
      for (float v : out) top = std::max(top, std::fabs(v));
      top_exponents.insert(exponent_of(top));
    }
    REQUIRE(top_exponents.size() >= 6);  // 16 tiles; the fp8 windows are the narrowest (14 exponents)
  }
}

TEST_CASE("exactint: a corrupted input changes the output, and both paths agree on it", "[exactint]") {
  for (const DType& d : dtypes()) {
    INFO(d.family);
    Inputs in = generate(make_case(d.family, 128, 128, 96));
    std::vector<float> before(4096), fast(4096), spec(4096);
    Workspace ws;
    const uint64_t tile = 3;  // row block 1, column block 1
    in.p->compute_tile(in.ptrs.data(), tile, before.data(), ws);
    const size_t a_el = (64 + 5) * 96 + 17, b_el = (64 + 9) * 96 + 40;
    for (auto [v, el] : {std::pair{&in.in[0], a_el}, std::pair{&in.in[1], b_el}})
      for (uint32_t mask : {0x80000000u, 0x40000000u, 0xc0000000u, 0x00000001u, 0x7fc00000u}) {
        INFO("mask " << mask);
        const float orig = (*v)[el];
        (*v)[el] = bits_float(float_bits(orig) ^ mask);
        in.p->compute_tile(in.ptrs.data(), tile, fast.data(), ws);
        in.p->compute_tile_scalar(in.ptrs.data(), tile, spec.data());
        REQUIRE(same_bits(fast, spec));
        // Sign and exponent flips always show (every product is nonzero); a flip of fraction bit 0, below
        // every narrow type's lsb, may be absorbed by the fp32 rounding of the double rule.
        if (mask != 1u) REQUIRE(!same_bits(before, fast));
        (*v)[el] = orig;
      }
    in.p->compute_tile(in.ptrs.data(), tile, fast.data(), ws);
    REQUIRE(same_bits(before, fast));
  }
}

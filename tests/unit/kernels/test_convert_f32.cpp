// convert_f32's conversion rules: known encodings (IEEE 754 and the fp8 formats' tables, written out here by
// hand), the three implementations (the CPU fast path's bit code, the CPU specification's nearest-value
// search, the emulated device's instructions) agreeing over the sweep and a sample of all fp32 words, every
// encoding widened alike, and the sweep reaching every case it promises.
#include <cmath>
#include <cstring>
#include <set>

#include "kernels/convert_f32/convert_f32.h"
#include "src/backends/emu/convert.h"
#include "tests/unit/catch.h"

using namespace sdc;
using namespace sdc::convert_f32;

namespace {

Narrow format(int k) {
  switch (k) {
    case BF16: return fmt_bf16();
    case F16: return fmt_f16();
    case E4M3: return fmt_e4m3();
    default: return fmt_e5m2();
  }
}

// The emulated instructions, one value at a time (the fp8 pairs: the value in the lower byte, 0 in the upper).
uint32_t narrow_emu(int k, float x) {
  switch (k) {
    case BF16: return emu::cvt_rn_bf16_f32(x);
    case F16: return emu::cvt_rn_f16_f32(x);
    case E4M3: return emu::cvt_rn_satfinite_e4m3x2_f32(0.0f, x) & 0xFFu;
    default: return emu::cvt_rn_satfinite_e5m2x2_f32(0.0f, x) & 0xFFu;
  }
}
uint32_t widen_emu(int k, uint32_t b) {
  switch (k) {
    case BF16: return b << 16;
    case F16: return float_bits(emu::cvt_f32_f16(static_cast<uint16_t>(b)));
    case E4M3: return float_bits(emu::cvt_f32_f16(static_cast<uint16_t>(emu::cvt_rn_f16x2_e4m3x2(b) & 0xFFFFu)));
    default: return float_bits(emu::cvt_f32_f16(static_cast<uint16_t>(emu::cvt_rn_f16x2_e5m2x2(b) & 0xFFFFu)));
  }
}

// x (fp32 bits) to format k by all three; each must give `want`.
void check_narrow(uint32_t x, int k, uint32_t want) {
  INFO("x 0x" << std::hex << x << " format " << std::dec << k << " want 0x" << std::hex << want);
  CHECK(narrow_bits(format(k), x) == want);
  CHECK(narrow_reference(k, bits_float(x)) == want);
  CHECK(narrow_emu(k, bits_float(x)) == want);
}
// x to all four formats.
void check_all(uint32_t x, uint32_t bf16, uint32_t f16, uint32_t e4m3, uint32_t e5m2) {
  check_narrow(x, BF16, bf16);
  check_narrow(x, F16, f16);
  check_narrow(x, E4M3, e4m3);
  check_narrow(x, E5M2, e5m2);
}

uint32_t bits_of(float x) { return float_bits(x); }

}  // namespace

TEST_CASE("convert_f32: known encodings of every target, in every rounding case", "[convert_f32]") {
  //                         bf16     fp16     e4m3  e5m2
  check_all(bits_of(1.0f), 0x3F80, 0x3C00, 0x38, 0x3C);
  check_all(bits_of(-2.0f), 0xC000, 0xC000, 0xC0, 0xC0);
  check_all(0x00000000u, 0x0000, 0x0000, 0x00, 0x00);
  check_all(0x80000000u, 0x8000, 0x8000, 0x80, 0x80);  // a zero keeps its sign
  check_all(0x7F800000u, 0x7F80, 0x7C00, 0x7E, 0x7B);  // inf: inf, inf, satfinite to the largest
  check_all(0xFF800000u, 0xFF80, 0xFC00, 0xFE, 0xFB);
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0x7FA5A5A5u})
    check_all(nan, 0x7FFF, 0x7FFF, 0x7F, 0x7F);  // canonical NaNs, payload and sign dropped
  check_all(bits_of(1e6f), 0x4974, 0x7C00, 0x7E, 0x7B);

  // bf16: ties to even both ways, tie +- 1, overflow at the tie past the largest, fp32 subnormals.
  check_narrow(0x3F808000u, BF16, 0x3F80);  // 1 + 2^-8: tie, 0x3F80 is even
  check_narrow(0x3F818000u, BF16, 0x3F82);  // 1 + 3 2^-8: tie, up to even 0x3F82
  check_narrow(0x3F808001u, BF16, 0x3F81);
  check_narrow(0x3F807FFFu, BF16, 0x3F80);
  check_narrow(0x3FFF8000u, BF16, 0x4000);  // round up into the next binade
  check_narrow(0x7F7F7FFFu, BF16, 0x7F7F);  // below the overflow tie: the largest finite
  check_narrow(0x7F7F8000u, BF16, 0x7F80);  // the tie between 0x7F7F (odd) and 2^128: infinity
  check_narrow(0x00008000u, BF16, 0x0000);  // subnormal tie to even zero
  check_narrow(0x00018000u, BF16, 0x0002);
  check_narrow(0x00008001u, BF16, 0x0001);
  check_narrow(0x007FFFFFu, BF16, 0x0080);  // the largest fp32 subnormal rounds up to bf16's smallest normal

  // fp16: ties, overflow at 65520, subnormals and their ties, the carry into the smallest normal.
  check_narrow(0x3F801000u, F16, 0x3C00);  // 1 + 2^-11: tie to even
  check_narrow(0x3F803000u, F16, 0x3C02);  // 1 + 3 2^-11: tie, up
  check_narrow(0x3F801001u, F16, 0x3C01);
  check_narrow(bits_of(65504.0f), F16, 0x7BFF);
  check_narrow(0x477FEFFFu, F16, 0x7BFF);  // just below 65520
  check_narrow(bits_of(65520.0f), F16, 0x7C00);
  check_narrow(bits_of(-65520.0f), F16, 0xFC00);
  check_narrow(0x33800000u, F16, 0x0001);  // 2^-24, the smallest subnormal
  check_narrow(0x33000000u, F16, 0x0000);  // 2^-25: tie to even zero
  check_narrow(0xB3000000u, F16, 0x8000);  // -2^-25: negative zero
  check_narrow(0x33000001u, F16, 0x0001);
  check_narrow(0x33C00000u, F16, 0x0002);  // 3 2^-25: tie between 1 and 2
  check_narrow(0x387FE000u, F16, 0x0400);  // 2^-14 - 2^-25: tie between 0x3FF and the smallest normal 0x400
  check_narrow(0x38800000u, F16, 0x0400);

  // e4m3: satfinite at 448, ties, subnormals (smallest 2^-9).
  check_narrow(bits_of(448.0f), E4M3, 0x7E);
  check_narrow(bits_of(464.0f), E4M3, 0x7E);  // the tie past the largest: 0x7E is even
  check_narrow(bits_of(480.0f), E4M3, 0x7E);
  check_narrow(bits_of(-1e6f), E4M3, 0xFE);
  check_narrow(bits_of(240.0f), E4M3, 0x77);
  check_narrow(bits_of(256.0f), E4M3, 0x78);
  check_narrow(bits_of(1.0625f), E4M3, 0x38);  // tie between 1 and 1.125: to even
  check_narrow(bits_of(1.1875f), E4M3, 0x3A);  // tie between 1.125 and 1.25: up to even
  check_narrow(0x3B000000u, E4M3, 0x01);       // 2^-9
  check_narrow(0x3A800000u, E4M3, 0x00);       // 2^-10: tie to zero
  check_narrow(0x3A800001u, E4M3, 0x01);
  check_narrow(0x3C800000u, E4M3, 0x08);  // 2^-6, the smallest normal
  check_narrow(0x3C700000u, E4M3, 0x08);  // 2^-6 - 2^-10: tie between 0x07 and 0x08

  // e5m2: satfinite at 57344, ties, subnormals (smallest 2^-16).
  check_narrow(bits_of(57344.0f), E5M2, 0x7B);
  check_narrow(bits_of(61440.0f), E5M2, 0x7B);
  check_narrow(bits_of(1.125f), E5M2, 0x3C);  // tie between 1 and 1.25: to even
  check_narrow(bits_of(1.375f), E5M2, 0x3E);  // tie between 1.25 and 1.5: up to even
  check_narrow(0x37800000u, E5M2, 0x01);      // 2^-16
  check_narrow(0x37000000u, E5M2, 0x00);      // 2^-17: tie to zero
  check_narrow(0x37000001u, E5M2, 0x01);
  check_narrow(bits_of(-0.75f), E5M2, 0xBA);
}

TEST_CASE("convert_f32: widening, known values and every encoding by all three", "[convert_f32]") {
  const struct {
    int k;
    uint32_t b, want;
  } known[] = {
      {F16, 0x3C00, 0x3F800000}, {F16, 0x0001, 0x33800000},  {F16, 0x7C00, 0x7F800000},  {F16, 0xFC00, 0xFF800000},
      {F16, 0x7FFF, 0x7FFFFFFF}, {F16, 0x8000, 0x80000000},  {E4M3, 0x7E, 0x43E00000},   {E4M3, 0x01, 0x3B000000},
      {E4M3, 0x7F, 0x7FFFFFFF},  {E4M3, 0xFF, 0x7FFFFFFF},   {E4M3, 0x80, 0x80000000},   {E4M3, 0x38, 0x3F800000},
      {E5M2, 0x7C, 0x7F800000},  {E5M2, 0x7B, 0x47600000},   {E5M2, 0x7F, 0x7FFFFFFF},   {E5M2, 0x01, 0x37800000},
      {E5M2, 0xFC, 0xFF800000},  {BF16, 0x7FFF, 0x7FFF0000}, {BF16, 0x3F80, 0x3F800000}, {BF16, 0x0001, 0x00010000},
  };
  for (const auto& c : known) {
    INFO("format " << c.k << " encoding 0x" << std::hex << c.b);
    CHECK(widen_bits(format(c.k), c.b) == c.want);
    CHECK(widen_reference(c.k, c.b) == c.want);
    CHECK(widen_emu(c.k, c.b) == c.want);
  }
  for (int k = 0; k < 4; ++k) {
    const Narrow f = format(k);
    const uint32_t count = 2 * f.sign_bit();
    for (uint32_t b = 0; b < count; ++b) {
      const uint32_t w = widen_bits(f, b);
      const uint32_t canonical = narrow_bits(f, w);  // what the encoding's value converts back to
      const bool nan = (w & 0x7FFFFFFFu) > 0x7F800000u;
      // NaNs widen alike only from the canonical NaN, which is the only NaN a conversion gives.
      if (nan && b != f.nan) continue;
      INFO("format " << k << " encoding 0x" << std::hex << b);
      REQUIRE(widen_reference(k, b) == w);
      REQUIRE(widen_emu(k, b) == w);
      if (nan) continue;
      // A value converts back to its own encoding, but satfinite's infinity (e5m2) to the largest.
      if (!(f.satfinite && (w & 0x7FFFFFFFu) == 0x7F800000u)) REQUIRE(canonical == b);
    }
  }
}

TEST_CASE("convert_f32: the three implementations agree on the sweep and on a sample of all fp32 words",
          "[convert_f32]") {
  const uint64_t key = tensor_key(20261126, 0);
  auto agree = [](uint32_t x) {
    for (int k = 0; k < 4; ++k) {
      const uint32_t fast = narrow_bits(format(k), x);
      INFO("x 0x" << std::hex << x << " format " << std::dec << k);
      REQUIRE(narrow_reference(k, bits_float(x)) == fast);
      REQUIRE(narrow_emu(k, bits_float(x)) == fast);
    }
  };
  for (uint64_t i = 0; i < (1u << 17); ++i) agree(sweep_bits(key, i));
  for (uint64_t u = 0; u < (1ull << 32); u += 40503) agree(static_cast<uint32_t>(u));  // a prime stride
}

TEST_CASE("convert_f32: the sweep reaches every case it promises", "[convert_f32]") {
  const uint64_t key = tensor_key(1234, 0);
  const uint64_t n = 65536;  // the boot case's size
  std::set<uint32_t> exponents, nans;
  int ties_down[4] = {}, ties_up[4] = {}, overflow[4] = {}, subnormal[4] = {}, to_zero[4] = {}, carry[4] = {};
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t x = sweep_bits(key, i);
    exponents.insert(x >> 23);  // sign and exponent field
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) nans.insert(x);
    const float v = bits_float(x);
    if (!std::isfinite(v)) continue;
    for (int k = 0; k < 4; ++k) {
      const Narrow f = format(k);
      const uint32_t r = narrow_bits(f, x), mag = r & (f.sign_bit() - 1u);
      const uint32_t ef = mag >> f.man_bits;
      if ((f.satfinite && mag == f.max_finite() && std::fabs(v) > bits_float(widen_bits(f, mag))) ||
          (!f.satfinite && mag == f.inf()))
        ++overflow[k];
      if (ef == 0 && mag != 0) ++subnormal[k];
      if (mag == 0 && v != 0) ++to_zero[k];
      // A tie: v exactly halfway between the neighbouring values around it.
      const double a = std::fabs(static_cast<double>(v)), got = bits_float(widen_bits(f, mag));
      if (mag == 0 || mag >= f.max_finite()) continue;
      const double lo = bits_float(widen_bits(f, mag - 1)), hi = bits_float(widen_bits(f, mag + 1));
      if (a - lo == got - a && a < got) ++ties_up[k];
      if (hi - a == a - got && a > got) ++ties_down[k];
      if ((mag & ((1u << f.man_bits) - 1u)) == 0 && a < got && ef > 1) ++carry[k];  // rounded up into a binade
    }
  }
  CHECK(exponents.size() == 512);  // every exponent field with both signs
  CHECK(nans.size() >= 16);
  for (int k = 0; k < 4; ++k) {
    INFO("format " << k);
    CHECK(ties_down[k] >= 8);
    CHECK(ties_up[k] >= 8);
    CHECK(overflow[k] >= 8);
    CHECK(subnormal[k] >= 8);
    CHECK(to_zero[k] >= 8);
    CHECK(carry[k] >= 8);
  }
}

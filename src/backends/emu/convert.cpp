// The emulated conversion instructions (convert.h).
#include "src/backends/emu/convert.h"

#include <cmath>
#include <cstring>

namespace sdc::emu {
namespace {

// A binary format of 1 sign bit, `exp` exponent bits and `man` fraction bits. fn: e4m3's kind (no infinity,
// only S.1111.111 is a NaN, so its largest exponent field holds finite values up to 1.110b 2^8).
struct Format {
  int exp, man;
  bool fn;
  bool satfinite;
  uint32_t nan;
  int bias() const { return (1 << (exp - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  int emax() const { return fn ? (1 << exp) - 1 - bias() : (1 << exp) - 2 - bias(); }
  double largest() const {  // fn: the top significand 1.11...10b; else 1.11...1b
    const double frac = fn ? (std::ldexp(1.0, man) - 2) : (std::ldexp(1.0, man) - 1);
    return std::ldexp(1.0 + frac / std::ldexp(1.0, man), emax());
  }
  uint32_t largest_bits() const {
    return fn ? ((1u << (exp + man)) - 2u) : (((1u << exp) - 2u) << man) | ((1u << man) - 1u);
  }
  uint32_t inf_bits() const { return ((1u << exp) - 1u) << man; }
};

constexpr Format BF16{8, 7, false, false, 0x7FFFu};
constexpr Format F16{5, 10, false, false, 0x7FFFu};
constexpr Format E4M3{4, 3, true, true, 0x7Fu};
constexpr Format E5M2{5, 2, false, true, 0x7Fu};

uint32_t encode(const Format& f, float x) {
  if (std::isnan(x)) return f.nan;
  const uint32_t sign = std::signbit(x) ? 1u << (f.exp + f.man) : 0u;
  const uint32_t over = sign | (f.satfinite ? f.largest_bits() : f.inf_bits());
  if (std::isinf(x)) return over;
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);  // a = m 2^e2, m in [0.5, 1): its exponent is e2 - 1
  int e = e2 - 1 < f.emin() ? f.emin() : e2 - 1;
  double q = std::nearbyint(std::ldexp(a, f.man - e));  // a in units of the destination's ulp at e
  if (q == 0) return sign;
  if (q >= std::ldexp(1.0, f.man + 1)) {  // rounded up into the next binade
    q /= 2;
    ++e;
  }
  if (std::ldexp(q, e - f.man) > f.largest()) return over;
  if (q < std::ldexp(1.0, f.man)) return sign | static_cast<uint32_t>(q);  // subnormal (e = emin)
  const uint32_t field = static_cast<uint32_t>(e + f.bias());
  return sign | (field << f.man) | (static_cast<uint32_t>(q) - (1u << f.man));
}

// fp8 encoding b (of f, e4m3 or e5m2) to fp16 bits: exact (fp16 holds every fp8 value).
uint16_t fp8_to_f16(const Format& f, uint32_t b) {
  const bool negative = (b & 0x80u) != 0;
  const uint32_t field = (b >> f.man) & ((1u << f.exp) - 1u), frac = b & ((1u << f.man) - 1u);
  const bool nan = f.fn ? (b & 0x7Fu) == 0x7Fu : (field == (1u << f.exp) - 1u && frac != 0);
  if (nan) return 0x7FFFu;
  if (!f.fn && field == (1u << f.exp) - 1u) return negative ? 0xFC00u : 0x7C00u;
  const double sig = field == 0 ? frac : frac + std::ldexp(1.0, f.man);
  const double v = std::ldexp(sig, (field == 0 ? 1 : static_cast<int>(field)) - f.bias() - f.man);
  return static_cast<uint16_t>(encode(F16, static_cast<float>(negative ? -v : v)));
}

}  // namespace

uint16_t cvt_rn_bf16_f32(float x) { return static_cast<uint16_t>(encode(BF16, x)); }
uint16_t cvt_rn_f16_f32(float x) { return static_cast<uint16_t>(encode(F16, x)); }

float cvt_f32_f16(uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const uint32_t field = (h >> 10) & 0x1Fu, frac = h & 0x3FFu;
  if (field == 0x1Fu) {
    if (frac != 0) {
      const uint32_t u = 0x7FFFFFFFu;
      float r;
      std::memcpy(&r, &u, sizeof r);
      return r;
    }
    return negative ? -INFINITY : INFINITY;
  }
  const double sig = field == 0 ? frac : frac + 1024.0;
  const double v = std::ldexp(sig, (field == 0 ? 1 : static_cast<int>(field)) - 15 - 10);
  return static_cast<float>(negative ? -v : v);
}

uint16_t cvt_rn_satfinite_e4m3x2_f32(float a, float b) {
  return static_cast<uint16_t>((encode(E4M3, a) << 8) | encode(E4M3, b));
}
uint16_t cvt_rn_satfinite_e5m2x2_f32(float a, float b) {
  return static_cast<uint16_t>((encode(E5M2, a) << 8) | encode(E5M2, b));
}
uint32_t cvt_rn_f16x2_e4m3x2(uint16_t a) {
  return (static_cast<uint32_t>(fp8_to_f16(E4M3, a >> 8u)) << 16) | fp8_to_f16(E4M3, a & 0xFFu);
}
uint32_t cvt_rn_f16x2_e5m2x2(uint16_t a) {
  return (static_cast<uint32_t>(fp8_to_f16(E5M2, a >> 8u)) << 16) | fp8_to_f16(E5M2, a & 0xFFu);
}

}  // namespace sdc::emu

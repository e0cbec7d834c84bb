// convert_f32: fp32 to bf16, fp16, fp8 e4m3 and fp8 e5m2, and each result back to fp32, exact mode.
//
// Input: x, n fp32 values (tensor 0). Output: 8 words per input element, element i's at words 8 i .. 8 i + 7:
//   word 0  bf16 encoding of x[i]    (low 16 bits; the high 16 are zero)     y[i].bf16
//   word 1  fp16 encoding of x[i]    (low 16 bits)                           y[i].f16
//   word 2  e4m3 encoding of x[i]    (low 8 bits; the high 24 are zero)      y[i].e4m3
//   word 3  e5m2 encoding of x[i]    (low 8 bits)                            y[i].e5m2
//   words 4..7  the fp32 bits of words 0..3 widened back to fp32             y[i].bf16_f32 ... y[i].e5m2_f32
// Output tiles: TILE = 512 consecutive elements (TILE_WORDS = 4096 words); logical output word e is word e % 8
// of element e / 8, in tile e / 4096.
//
// The rules (IEEE 754 roundTiesToEven, and the PTX ISA's cvt for the narrow types):
//   * a finite x rounds to the nearest value of the target format; a tie (x exactly halfway between two
//     neighbours) goes to the one whose encoding is even (last significand bit 0). Targets have gradual
//     underflow: x below the smallest normal rounds to a subnormal or to a zero of x's sign, by the same
//     rule (a tie at half the smallest subnormal rounds to zero). fp32 subnormal inputs are exact inputs
//     (no flush to zero), and bf16 keeps fp32's subnormals;
//   * bf16 and fp16 (`cvt.rn.bf16.f32`, `cvt.rn.f16.f32`: no saturation): a finite x whose rounding, with the
//     exponent unbounded, reaches 2^(emax + 1) becomes infinity of x's sign (fp16: |x| >= 65520; bf16: |x| >=
//     2^127 (2 - 2^-8)); an infinity stays an infinity;
//   * e4m3 and e5m2 (`cvt.rn.satfinite.{e4m3,e5m2}x2.f32`): .satfinite: a finite x that rounds beyond the
//     largest finite value, and an infinity, become the largest finite value of x's sign (e4m3 +-448,
//     0x7E / 0xFE; e5m2 +-57344, 0x7B / 0xFB). e4m3 has no infinity (S.1111.111 is its NaN), e5m2 has
//     IEEE's specials;
//   * a NaN input (any payload, either sign) converts to the target's canonical NaN, positive, payload
//     dropped: bf16 0x7FFF, fp16 0x7FFF, e4m3 0x7F, e5m2 0x7F;
//   * widening back is exact: bf16 is the top half of an fp32, so its widening is its bits shifted left by 16
//     (the canonical NaN widens to 0x7FFF0000); fp16, e4m3 and e5m2 widen to their value (`cvt.f32.f16`, and
//     for fp8 `cvt.rn.f16x2.{e4m3,e5m2}x2` then `cvt.f32.f16`), a NaN to fp32's canonical NaN 0x7FFFFFFF.
// The NaN encodings are those of the CUDA headers' host implementations of the same conversions
// (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h), which are written to match the instructions. Outputs hold NaNs by
// design: their bits are defined here (Family::defined_nans).
//
// Inputs: `special` is the sweep below (sweep_bits), every other distribution the shared generator over the
// whole fp32 exponent range (pattern_value, window -149..127).
#pragma once

#include "src/spec/generator.h"

namespace sdc::convert_f32 {

constexpr int TILE = 512;  // elements per tile (one device block, a thread per element)
constexpr int WORDS = 8;   // output words per element
constexpr uint32_t TILE_WORDS = TILE * WORDS;
constexpr int64_t MAX_N = int64_t{1} << 24;

enum Word : int { BF16, F16, E4M3, E5M2, BF16_F32, F16_F32, E4M3_F32, E5M2_F32 };

// A narrow binary format: 1 sign bit, exp_bits, man_bits. ieee: the largest exponent field holds infinity
// and the NaNs (bf16, fp16, e5m2); otherwise (e4m3) only S.1...1 is a NaN and there is no infinity.
struct Narrow {
  int exp_bits, man_bits, bias;
  bool ieee;
  bool satfinite;  // overflow and infinity give the largest finite value (PTX .satfinite)
  uint32_t nan;    // the canonical NaN every NaN input gives
  SDC_HD int emin() const { return 1 - bias; }
  SDC_HD uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  SDC_HD uint32_t inf() const { return ((1u << exp_bits) - 1) << man_bits; }  // ieee formats only
  SDC_HD uint32_t max_finite() const { return ieee ? inf() - 1 : inf() + (1u << man_bits) - 2; }
};

// The four targets (functions, not constants: device code reads no host object).
SDC_HD constexpr Narrow fmt_bf16() { return {8, 7, 127, true, false, 0x7FFFu}; }
SDC_HD constexpr Narrow fmt_f16() { return {5, 10, 15, true, false, 0x7FFFu}; }
SDC_HD constexpr Narrow fmt_e4m3() { return {4, 3, 7, false, true, 0x7Fu}; }
SDC_HD constexpr Narrow fmt_e5m2() { return {5, 2, 15, true, true, 0x7Fu}; }
constexpr uint32_t F32_CANONICAL_NAN = 0x7FFFFFFFu;

// fp32 bits u to f's encoding, by integer arithmetic on the significand: the value is sig 2^e2 with sig an
// integer below 2^24; its target ulp is 2^q_exp (q_exp = max(exponent, emin) - man_bits, so the target's
// subnormals share emin's ulp); q = sig / 2^(q_exp - e2) rounded to nearest even; the encoding is then
// (q_exp + man_bits - emin) 2^man_bits + q, which also holds when q carries into the next binade or a
// subnormal into the smallest normal. Used by the CPU fast path and by the device where it lacks the
// instruction (fp8 before compute capability 8.9).
SDC_HD uint32_t narrow_bits(Narrow f, uint32_t u) {
  const uint32_t sign = (u >> 31) ? f.sign_bit() : 0u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return f.nan;
  if (a == 0x7F800000u) return sign | (f.satfinite ? f.max_finite() : f.inf());
  const int E = static_cast<int>(a >> 23);
  const uint32_t sig = E == 0 ? (a & 0x7FFFFFu) : ((a & 0x7FFFFFu) | 0x800000u);
  const int e2 = E == 0 ? -149 : E - 150;
  const int e_unb = E == 0 ? -127 : E - 127;  // an fp32 subnormal lies below every target's emin
  const int q_exp = (e_unb > f.emin() ? e_unb : f.emin()) - f.man_bits;
  const int shift = q_exp - e2;  // >= 13: every target is narrower than fp32
  uint32_t q = 0;
  if (shift <= 25) {
    q = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  if (q == 0) return sign;
  const uint32_t enc = (static_cast<uint32_t>(q_exp + f.man_bits - f.emin()) << f.man_bits) + q;
  if (enc > f.max_finite()) return sign | (f.satfinite ? f.max_finite() : f.inf());
  return sign | enc;
}

// f's encoding b widened to fp32 bits, by moving the fields: the exponent rebiased, a subnormal normalized.
// bf16 is its bits shifted left by 16.
SDC_HD uint32_t widen_bits(Narrow f, uint32_t b) {
  if (f.exp_bits == 8) return b << 16;
  const uint32_t sign = (b & f.sign_bit()) ? 0x80000000u : 0u;
  const uint32_t ef = (b >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  uint32_t m = b & ((1u << f.man_bits) - 1u);
  const uint32_t mag = b & (f.sign_bit() - 1u);
  if (f.ieee ? ef == (1u << f.exp_bits) - 1u : mag == f.inf() + (1u << f.man_bits) - 1u) {
    if (!f.ieee || m != 0) return F32_CANONICAL_NAN;
    return sign | 0x7F800000u;
  }
  if (ef == 0 && m == 0) return sign;
  int e = static_cast<int>(ef) - f.bias;  // unbiased exponent of a normal
  if (ef == 0) {                          // subnormal: m 2^(emin - man_bits); normalize
    e = f.emin();
    while (!(m >> f.man_bits)) {
      m <<= 1;
      --e;
    }
    m &= (1u << f.man_bits) - 1u;
  }
  return sign | (static_cast<uint32_t>(e + 127) << 23) | (m << (23 - f.man_bits));
}

// ---- the input sweep (distribution `special`) ---------------------------------------------------------------
//
// Element i is of kind i % 8, its other bits from h = element_hash(key, i), so every tile holds every kind:
//   0..3  a rounding boundary of target bf16, fp16, e4m3, e5m2 (boundary_bits);
//   4     fp32 exponent field (i / 8) % 256 with a random significand and sign: every exponent, fp32
//         subnormals and zero (field 0), infinity and NaNs of random payloads (field 255);
//   5     special_bits((i / 8) % SPECIAL_COUNT), its sign flipped by a hash bit;
//   6     32 random bits (any value, NaNs included);
//   7     an exponent in [-28, 17] (the fp16 and fp8 ranges and a little beyond) and a random significand.
//
// boundary_bits for target f: an exponent e drawn from [emin - man_bits - 3, emax + 2] (into the target's
// subnormals, to zero, through the normal binades, to overflow), the top kept significand bits random, all ones
// (a round-up carries into the next binade, or at the top binade overflows) or all ones but the last, and the
// d dropped bits (the ones the rounding removes at that exponent) one of: exactly half (a tie, to even: kept
// bits even or odd decide), half - 1, half + 1, zero, all ones, random. bf16's dropped bits are always an fp32
// word's low 16 (its exponent range is fp32's), so its exponent field is drawn from 0..254.
SDC_HD uint32_t dropped_bits(uint32_t mode, uint32_t d, uint32_t rnd) {
  const uint32_t mask = d >= 32 ? 0xFFFFFFFFu : (1u << d) - 1u, half = 1u << (d - 1);
  switch (mode % 6u) {
    case 0: return half;
    case 1: return half - 1u;
    case 2: return half + 1u;
    case 3: return 0u;
    case 4: return mask;
    default: return rnd & mask;
  }
}

SDC_HD uint32_t kept_bits(uint32_t mode, uint32_t width, uint32_t rnd) {
  const uint32_t all = (1u << width) - 1u;
  switch (mode % 4u) {
    case 0: return all;
    case 1: return all - 1u;
    default: return rnd & all;
  }
}

SDC_HD uint32_t boundary_bits(Narrow f, uint64_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 1u) << 31;
  const uint32_t rnd = static_cast<uint32_t>(h >> 32);
  const uint32_t dmode = static_cast<uint32_t>((h >> 1) % 6u), kmode = static_cast<uint32_t>((h >> 4) % 4u);
  if (f.exp_bits == 8) {  // bf16: the exponent field 0..254, the kept 7 significand bits, the dropped low 16
    const uint32_t E = static_cast<uint32_t>((h >> 8) % 255u);
    return sign | (E << 23) | (kept_bits(kmode, 7, rnd >> 16) << 16) | dropped_bits(dmode, 16, rnd);
  }
  const int emax = static_cast<int>(f.max_finite() >> f.man_bits) - f.bias;
  const int lo = f.emin() - f.man_bits - 3, hi = emax + 2;
  const int e = lo + static_cast<int>((h >> 8) % static_cast<uint64_t>(hi - lo + 1));
  // Dropped significand bits at exponent e (the implicit bit counts as significand bit 23).
  const int below = e < f.emin() ? f.emin() - e : 0;
  const uint32_t d = static_cast<uint32_t>(23 - f.man_bits + below);
  uint32_t sig;  // the 24-bit significand, implicit bit included
  if (d <= 23) {
    sig = 0x800000u | (kept_bits(kmode, 23 - d, rnd >> 8) << d) | dropped_bits(dmode, d, rnd);
  } else {  // nothing kept, the implicit bit is the top dropped bit (d = 24: a tie when the rest is zero)
    const uint32_t rest[4] = {0u, 1u, 0x7FFFFFu, rnd & 0x7FFFFFu};
    sig = 0x800000u | rest[dmode % 4u];
  }
  return sign | (static_cast<uint32_t>(e + 127) << 23) | (sig & 0x7FFFFFu);
}

// Values every run sweeps (kind 5): zeros, infinities, NaNs (quiet and signalling, several payloads), fp32's
// extremes, 1, and each target's largest finite value, its overflow ties and its smallest subnormal's halves.
constexpr uint32_t SPECIAL_COUNT = 35;
SDC_HD uint32_t special_bits(uint32_t k) {
  const uint32_t table[SPECIAL_COUNT] = {
      0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA5A5A5u, 0x7FE00001u,
      0xFFC00000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x3F800000u, 0x49742400u,  // 1e6
      0x7F7F7FFFu, 0x7F7F8000u,  // bf16: below and at its overflow tie (-> largest finite, -> inf)
      0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x33800000u, 0x33000000u, 0x33000001u,  // fp16: 65504, 65520, 2^-25
      0x43E00000u, 0x43E80000u, 0x43E80001u, 0x43F00000u, 0x3B000000u, 0x3A800000u, 0x3A800001u,  // e4m3: 448, 464
      0x47600000u, 0x47700000u, 0x47700001u, 0x37800000u, 0x37000000u, 0x37000001u,  // e5m2: 57344, 61440, 2^-17
  };
  return table[k % SPECIAL_COUNT];
}

SDC_HD uint32_t sweep_bits(uint64_t key, uint64_t i) {
  const uint64_t h = element_hash(key, i);
  const uint32_t sign = static_cast<uint32_t>(h & 1u) << 31;
  const uint32_t r = static_cast<uint32_t>(h >> 32);
  switch (i % 8u) {
    case 0: return boundary_bits(fmt_bf16(), h);
    case 1: return boundary_bits(fmt_f16(), h);
    case 2: return boundary_bits(fmt_e4m3(), h);
    case 3: return boundary_bits(fmt_e5m2(), h);
    case 4: return sign | (static_cast<uint32_t>((i / 8u) % 256u) << 23) | (r & 0x7FFFFFu);
    case 5: return sign ^ special_bits(static_cast<uint32_t>(i / 8u));
    case 6: return r;
    default: {
      const int e = -28 + static_cast<int>((h >> 8) % 46u);
      return sign | (static_cast<uint32_t>(e + 127) << 23) | (r & 0x7FFFFFu);
    }
  }
}

// Input element i of a case (tensor key `key`), as fp32 bits.
SDC_HD uint32_t input_bits(Distribution d, uint64_t key, uint64_t i) {
  if (d == Distribution::special) return sweep_bits(key, i);
  return float_bits(pattern_value(d, ExponentWindow{-149, 127}, key, i));
}

// The CPU specification's conversions (convert_f32_ref.cpp), for tests: format BF16, F16, E4M3 or E5M2; x to
// its encoding, an encoding to fp32 bits.
uint32_t narrow_reference(int format, float x);
uint32_t widen_reference(int format, uint32_t b);

}  // namespace sdc::convert_f32

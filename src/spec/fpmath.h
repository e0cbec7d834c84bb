// The project's own transcendental functions and the fixed reduction trees shared by host and device.
// Built only from IEEE add, mul, fma, division and exact power-of-two scaling through bits, so every
// correct CPU and GPU returns the same bits (libm and CUDA's expf/logf differ in the last place).
#pragma once

#include <cmath>

#include "src/spec/hd.h"

namespace sdc {

// e^x with about 1 ulp of error. Range reduction x = k ln2 + r (Cody-Waite, ln2 split so k*ln2_hi is
// exact for |k| <= 2^9), a degree-7 polynomial for e^r on |r| <= ln2/2 (Cephes coefficients), then
// 2^k applied in two exact halves so that subnormal results round once.
SDC_HD float sdc_expf(float x) {
  // Written with selects instead of early returns so that loops over it vectorize; the core runs on a
  // clamped copy and the special cases are chosen afterwards (NaN fails both comparisons).
  const float xc = x > -104.0f ? (x < 88.8f ? x : 88.8f) : -104.0f;
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, to nearest even
  const float kf = fmaf(xc, 1.44269502162933349609375f, shifter) - shifter;
  float r = fmaf(kf, -0.693145751953125f, xc);
  r = fmaf(kf, -1.428606765330187045e-06f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  const float y = fmaf(p, r * r, r) + 1.0f;
  const int k = static_cast<int>(kf);  // in [-150, 128]
  const int k1 = k / 2;
  float e = (y * pow2f(k1)) * pow2f(k - k1);
  e = x > 88.72283172607421875f ? INFINITY : e;  // the largest x whose e^x rounds to a finite float
  return x > -104.0f ? e : (x != x ? x : 0.0f);  // -inf and below: e^x < 2^-150 rounds to +0
}

// Natural logarithm for x > 0 (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), a polynomial in
// f = m - 1, and e ln2 added in two parts. Zero gives -inf, negative or NaN gives NaN, +inf gives +inf.
SDC_HD float sdc_logf(float x) {
  if (x != x || x < 0.0f) return NAN;
  if (x == 0.0f) return -INFINITY;
  if (x == INFINITY) return x;
  int e = 0;
  if (x < 1.17549435e-38f) {  // subnormal: scale into the normal range exactly
    x = x * pow2f(25);
    e = -25;
  }
  const uint32_t u = float_bits(x);
  e += static_cast<int>((u >> 23) & 0xffu) - 126;
  float m = bits_float((u & 0x007fffffu) | 0x3f000000u);  // in [0.5, 1)
  if (m < 0.707106781186547524f) {
    e -= 1;
    m = m + m;
  }
  const float f = m - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = fmaf(p, f, -1.1514610310e-1f);
  p = fmaf(p, f, 1.1676998740e-1f);
  p = fmaf(p, f, -1.2420140846e-1f);
  p = fmaf(p, f, 1.4249322787e-1f);
  p = fmaf(p, f, -1.6668057665e-1f);
  p = fmaf(p, f, 2.0000714765e-1f);
  p = fmaf(p, f, -2.4999993993e-1f);
  p = fmaf(p, f, 3.3333331174e-1f);
  const float ef = static_cast<float>(e);
  float y = (p * f) * z;
  y = fmaf(ef, -2.12194440e-4f, y);
  y = fmaf(z, -0.5f, y);
  return fmaf(ef, 0.693359375f, f + y);
}

// ---- The elementwise functions of elementwise_f32 (kernels/elementwise_f32) ------------------------------------
// Same rules as above: the order of every operation is the specification (fmaf where written, nothing fused
// otherwise), special cases by comparisons on the argument. A NaN argument gives a NaN whose bits these
// functions do not fix (the family stores every NaN as the canonical 0x7FFFFFFF). The error bounds are the
// largest found against long double (x87) references over every fp32 exponent and the branch points
// (tests/unit/kernels/test_elementwise_f32.cpp asserts them).

// tanh (Cephes tanhf): |x| < 2^-12: x (x^3/3 is below half an ulp); |x| < 0.625: x + x z P(z), z = x^2, a
// degree-4 minimax P (Cephes); |x| < 9: 1 - 2 / (e^{2|x|} + 1) with sdc_expf, the sign of x; beyond: +-1
// (1 - tanh 9 < 2^-25). Error: 1.22 ulps (measured).
SDC_HD float sdc_tanhf(float x) {
  const float a = bits_float(float_bits(x) & 0x7FFFFFFFu);
  if (a < 2.44140625e-4f) return x;  // 2^-12; also +-0 and the subnormals
  if (a < 0.625f) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = fmaf(p, z, 2.06390887954e-2f);
    p = fmaf(p, z, -5.37397155531e-2f);
    p = fmaf(p, z, 1.33314422036e-1f);
    p = fmaf(p, z, -3.33332819422e-1f);
    return fmaf(p * z, x, x);
  }
  float t = 1.0f;
  if (a < 9.0f) t = 1.0f - 2.0f / (sdc_expf(a + a) + 1.0f);
  if (x != x) return x;
  return x < 0.0f ? -t : t;
}

// x sigma(s) = x / (1 + e^-s) for the activations below; s < -17 (e^s < 2^-24, where 1 + e^s rounds to 1): x e^s
// instead, so that x e^s still has its digits where e^-s overflows. -inf times a vanishing sigma is -0.
SDC_HD float sdc_times_sigmoid(float x, float s) {
  if (x == -INFINITY) return -0.0f;
  return s < -17.0f ? x * sdc_expf(s) : x / (1.0f + sdc_expf(-s));
}

// SiLU (swish): x / (1 + e^-x), as sdc_times_sigmoid(x, x). Error: 2.26 ulps for x >= -87 (measured); below,
// where e^x is subnormal, |x| <= 104 times e^x's rounding (half a subnormal ulp): 53 ulps of the tiny result.
SDC_HD float sdc_siluf(float x) { return sdc_times_sigmoid(x, x); }

// GELU, tanh form: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated by the identity
// 0.5 (1 + tanh u) = 1 / (1 + e^{-2u}) as sdc_times_sigmoid(x, 2u) with 2u = (2 sqrt(2/pi)) fmaf(0.044715 x^2, x,
// x) (x^2 = x x; the constants rounded to fp32). Error: 11.7 ulps for x >= -3 (measured). Below, the result
// decays like e^{2u} and the fp32 rounding of 2u (relative 2^-24 per operation) is multiplied by |2u|: 170
// ulps (measured), on results below 2^-9 |x| (2u < -6).
SDC_HD float sdc_geluf(float x) {
  const float x2 = x * x;
  const float s = 1.59576912160573071f * fmaf(0.044715f * x2, x, x);
  return sdc_times_sigmoid(x, s);
}

// 1 / sqrt(x): the IEEE square root, then the IEEE division, each correctly rounded (the device by
// __fsqrt_rn and __fdiv_rn, so no approximation can stand in). +0 gives +inf, -0 -inf, +inf +0, x < 0 NaN.
// Error: 1.48 ulps (two roundings; measured).
SDC_HD float sdc_rsqrtf(float x) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(1.0f, __fsqrt_rn(x));
#else
  return 1.0f / sqrtf(x);
#endif
}

// sin and cos (Cephes sinf/cosf polynomials on [-pi/4, pi/4]) after a Cody-Waite reduction by pi/2, the one
// train_step_f32's rotary embedding uses: x = k pi/2 + r with k = round(x 2/pi) to nearest even (the 1.5 2^23
// shifter added by fmaf to x times float(2/pi)) and pi/2 split in three floats, P1 = float(pi/2), P2 =
// float(pi/2 - P1), P3 = float(pi/2 - P1 - P2): r1 = fmaf(-k, P1, x) is exact (x - k P1 is a multiple of 2^-23
// below 1 in magnitude when |x| >= 1, and k = 0 when |x| < pi/4), then r = fmaf(-k, P3, fmaf(-k, P2, r1)); the
// quadrant k mod 4 picks +-sin r or +-cos r. The valid range is |x| <= 8192: there |r| <= pi/4 + 2^-10 (x 2/pi
// can round across a half) and the error is at most 9.1e-8 absolute, 1.52 ulps where the result is at least
// 2^-10 (measured; near a zero of the function the reduction's absolute error dominates). Beyond it a result
// is still defined, deterministically but without accuracy: p = x float(2/pi) (a product), k = p rounded to an
// integer (the shifter for |p| < 2^22, the last significand bit cleared for |p| in [2^22, 2^23), p itself
// beyond), the quadrant k mod 4 (0 for |k| >= 2^30, a multiple of 4 there), the same three fmaf, r (finite)
// clamped to [-0.80078125, 0.80078125] (a no-op within the range). Infinity and NaN give NaN; sin(x) = x for
// |x| < 2^-12, which keeps -0 (the polynomial returns x there too, but +0 for -0).
struct SdcQuadrant {
  float r;
  int q;  // k mod 4, in 0..3
};
SDC_HD SdcQuadrant sdc_reduce_pio2(float x) {
  const float shifter = 12582912.0f;  // 1.5 * 2^23
  float kf;
  if (bits_float(float_bits(x) & 0x7FFFFFFFu) <= 8192.0f) {
    kf = fmaf(x, 0x1.45f306p-1f, shifter) - shifter;
  } else {
    const float p = x * 0x1.45f306p-1f;
    const float ap = bits_float(float_bits(p) & 0x7FFFFFFFu);
    kf = p;
    if (ap < 4194304.0f) {
      kf = (p + shifter) - shifter;
    } else if (ap < 8388608.0f) {
      kf = bits_float(float_bits(p) & ~1u);  // toward zero: p has one fraction bit here
    }
  }
  const int q = bits_float(float_bits(kf) & 0x7FFFFFFFu) < 1073741824.0f ? static_cast<int>(kf) & 3 : 0;
  float r = fmaf(-kf, 0x1.921fb6p+0f, x);
  r = fmaf(-kf, -0x1.777a5cp-25f, r);
  r = fmaf(-kf, -0x1.ee59dap-50f, r);
  r = r > 0.80078125f ? 0.80078125f : r;
  r = r < -0.80078125f ? -0.80078125f : r;
  return {r, q};
}

SDC_HD float sdc_sin_poly(float r) {
  const float z = r * r;
  float p = fmaf(-1.9515295891e-4f, z, 8.3321608736e-3f);
  p = fmaf(p, z, -1.6666654611e-1f);
  return fmaf(p * z, r, r);
}

SDC_HD float sdc_cos_poly(float r) {
  const float z = r * r;
  float p = fmaf(2.443315711809948e-5f, z, -1.388731625493765e-3f);
  p = fmaf(p, z, 4.166664568298827e-2f);
  return fmaf(p, z * z, fmaf(-0.5f, z, 1.0f));
}

SDC_HD float sdc_sinf(float x) {
  if (x != x || x == INFINITY || x == -INFINITY) return bits_float(0x7FFFFFFFu);
  if (bits_float(float_bits(x) & 0x7FFFFFFFu) < 2.44140625e-4f) return x;
  const SdcQuadrant t = sdc_reduce_pio2(x);
  const float v = (t.q & 1) ? sdc_cos_poly(t.r) : sdc_sin_poly(t.r);
  return (t.q & 2) ? -v : v;
}

SDC_HD float sdc_cosf(float x) {
  if (x != x || x == INFINITY || x == -INFINITY) return bits_float(0x7FFFFFFFu);
  const SdcQuadrant t = sdc_reduce_pio2(x);
  const float v = (t.q & 1) ? sdc_sin_poly(t.r) : sdc_cos_poly(t.r);
  return ((t.q + 1) & 2) ? -v : v;
}

// The fixed pairwise tree of every reduction: sum(x[0..n)) = sum(x[0..h)) + sum(x[h..n)) with h the
// largest power of two below n; sum of one element is the element, of none is +0. Written with an
// explicit stack so the device can use it too. The tree is a property of n alone. T is the arithmetic's
// format: float, or double for the fp64 families (pairwise_sum<double>(get, n)).
template <typename T = float, typename Get>
SDC_HD T pairwise_sum(Get get, uint32_t n) {
  if (n == 0) return T(0);
  // Aligned power-of-two blocks, left to right: a block is merged with its left neighbour as soon as
  // both have the same size (as a binary counter carries). What remains are blocks of strictly
  // decreasing size, which the recursion adds right to left.
  T block_sum[33];
  uint32_t block_size[33];
  int top = 0;
  for (uint32_t i = 0; i < n; ++i) {
    T s = get(i);
    uint32_t size = 1;
    while (top > 0 && block_size[top - 1] == size) {
      s = block_sum[top - 1] + s;
      size *= 2;
      --top;
    }
    block_sum[top] = s;
    block_size[top] = size;
    ++top;
  }
  T s = block_sum[top - 1];
  for (int b = top - 2; b >= 0; --b) s = block_sum[b] + s;
  return s;
}

// max over x[0..n) as the left fold m = x[i] > m ? x[i] : m from m = x[0] (fixes the sign of a zero max).
template <typename Get>
SDC_HD float fold_max(Get get, uint32_t n) {
  float m = get(0);
  for (uint32_t i = 1; i < n; ++i) {
    const float v = get(i);
    m = v > m ? v : m;
  }
  return m;
}

}  // namespace sdc

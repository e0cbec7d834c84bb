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

#include "src/spec/lanes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/spec/clones.h"
#include "src/spec/fpmath.h"

#define SDC_CLONES SDC_TARGET_CLONES("avx512f", "fma", "default")

namespace sdc::lanes {

SDC_CLONES void exp_shifted(const float* x, float m, float* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = sdc_expf(x[j] - m);
}

SDC_CLONES static void pair_level(float* s, uint32_t half) {
  // s[i] = s[2i] + s[2i+1]: in place is safe because i <= 2i.
  for (uint32_t i = 0; i < half; ++i) s[i] = s[2 * i] + s[2 * i + 1];
}

SDC_CLONES static void pair_level(double* s, uint32_t half) {
  for (uint32_t i = 0; i < half; ++i) s[i] = s[2 * i] + s[2 * i + 1];
}

// The tree on s[0..n), n >= 1, in place.
template <typename T>
static T pairwise_levels(T* s, uint32_t n) {
  // Decompose n into aligned power-of-two blocks in decreasing size (the binary digits of n), reduce
  // each block level by level, then add the block sums right to left: the tree of fpmath.h.
  T block[33];
  int blocks = 0;
  uint32_t start = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t size = 1u << bit;
    if (!(n & size)) continue;
    T* b = s + start;
    for (uint32_t len = size; len > 1; len /= 2) pair_level(b, len / 2);
    block[blocks++] = b[0];
    start += size;
  }
  T sum = block[blocks - 1];
  for (int i = blocks - 2; i >= 0; --i) sum = block[i] + sum;
  return sum;
}

float pairwise_sum(const float* x, uint32_t n, std::vector<float>& scratch) {
  if (n == 0) return 0.0f;
  if (scratch.size() < n) scratch.resize(n);
  std::copy(x, x + n, scratch.data());
  return pairwise_levels(scratch.data(), n);
}

double pairwise_sum(const double* x, uint32_t n, std::vector<double>& scratch) {
  if (n == 0) return 0.0;
  if (scratch.size() < n) scratch.resize(n);
  // x may be a buffer of 32-bit words holding doubles (src/spec/f64.h): copied as bytes.
  std::memcpy(scratch.data(), x, n * sizeof(double));
  return pairwise_levels(scratch.data(), n);
}

SDC_CLONES void square(const float* x, float* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = x[j] * x[j];
}

SDC_CLONES void square(const double* x, double* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = x[j] * x[j];
}

SDC_CLONES void scale_mul(const float* x, float s, const float* w, float* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = (x[j] * s) * w[j];
}

SDC_CLONES void scale_mul(const double* x, double s, const double* w, double* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = (x[j] * s) * w[j];
}

SDC_CLONES void divide(const float* x, float d, float* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = x[j] / d;
}

SDC_CLONES void scale(const float* x, float s, float* y, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) y[j] = x[j] * s;
}

SDC_CLONES void fma_accumulate(float* acc, float p, const float* v, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) acc[j] = std::fma(p, v[j], acc[j]);
}

float fold_max(const float* x, uint32_t n) {
  return sdc::fold_max([x](uint32_t i) { return x[i]; }, n);
}

}  // namespace sdc::lanes

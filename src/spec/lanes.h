// Vectorized building blocks of the CPU fast paths. Each lane computes an independent output with exactly
// the operations of the scalar specification (fpmath.h), so the fast and scalar paths agree bit for bit.
// Compiled in several instruction-set clones and dispatched at run time: the binary runs on any x86-64.
#pragma once

#include <cstdint>
#include <vector>

namespace sdc::lanes {

// y[j] = sdc_expf(x[j] - m)
void exp_shifted(const float* x, float m, float* y, uint32_t n);
// The pairwise tree of fpmath.h, level by level on a copy (scratch is resized as needed).
float pairwise_sum(const float* x, uint32_t n, std::vector<float>& scratch);
double pairwise_sum(const double* x, uint32_t n, std::vector<double>& scratch);
// y[j] = x[j] * x[j]
void square(const float* x, float* y, uint32_t n);
void square(const double* x, double* y, uint32_t n);
// y[j] = (x[j] * s) * w[j]
void scale_mul(const float* x, float s, const float* w, float* y, uint32_t n);
void scale_mul(const double* x, double s, const double* w, double* y, uint32_t n);
// y[j] = x[j] / d
void divide(const float* x, float d, float* y, uint32_t n);
// y[j] = x[j] * s
void scale(const float* x, float s, float* y, uint32_t n);
// acc[j] = fma(p, v[j], acc[j]): one step of n independent fma chains
void fma_accumulate(float* acc, float p, const float* v, uint32_t n);
// max as the left fold of fpmath.h
float fold_max(const float* x, uint32_t n);

}  // namespace sdc::lanes

// gemm_f16_exactint: C = A * B^T on fp16 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major fp16 (K-contiguous); C is fp32 M x N in 64 x 64 tiles. The
// pattern and the general argument are in kernels/exactint/exactint.h; this header fixes the numbers.
//
// fp16: p = 11 significand bits, 5 exponent bits (normal exponents -14..15, largest finite 65504).
// Accumulator bound W = 24 (fp32 accumulators; H100's fp16 path keeps about 25 bits).
// Windows: A's leading-bit exponents in [-14, 15], B's exponents in [-14, 15]: fp16's whole normal range
// (no subnormal input: some hardware paths flush them).
//  * inputs are normal fp16: the largest A is (2 - 2^-10) * 2^15 = 65504, fp16's largest finite value;
//  * smallest tile unit u = -14 - 10 - 14 = -38 >= -126;
//  * largest tile unit u = 15 - 10 + 15 = 20: every partial sum is below 2^(24 + 20) = 2^44 <= 2^128;
//  * budget: K * (2^11 - 1) * 2^D < 2^24 = 16777216. K <= 8196 admits D = 0; K is a multiple of 32, so
//    MAX_K = 8192 (8192 * 2047 = 16769024 < 16777216). K = 1024: 2096128 * 2^3 = 16769024, D = 3 (3
//    exponents of A, 2 of B per tile). K = 32: 65504 * 2^8 = 16769024, D = 8 (5 and 5), inside the
//    windows (width 29).
#pragma once

#include "../exactint/exactint.h"

namespace sdc::gemm_f16_exactint {

// fp16 bits: sign, 5-bit exponent biased by 15, 10 fraction bits.
using F16 = exactint::FormatTraits<uint16_t, exactint::Narrow::f16, exactint::Format{11, 24, -14, 15, -14, 15}, 8192,
                                   15, 10, "gemm_f16_exactint", "fp16">;

}  // namespace sdc::gemm_f16_exactint

// gemm_tf32_exactint: C = A * B^T on tf32 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major fp32 words holding tf32 values (the low 13 fraction bits zero,
// so no conversion rounds); C is fp32 M x N in 64 x 64 tiles. The pattern and the general argument are
// in kernels/exactint/exactint.h; this header fixes the numbers.
//
// tf32: p = 11 significand bits, fp32's 8 exponent bits. Accumulator bound W = 24 (fp32 accumulators).
// Windows: A's leading-bit exponents in [-56, 56], B's exponents in [-56, 48].
//  * inputs are normal: A below (2 - 2^-10) * 2^56 < 2^57, B within 2^-56..2^48, inside 2^-126..2^127;
//  * smallest tile unit u = -56 - 10 - 56 = -122 >= -126;
//  * largest tile unit u = 56 - 10 + 48 = 94: every partial sum is below 2^(24 + 94) = 2^118 <= 2^128;
//  * budget: K * (2^11 - 1) * 2^D < 2^24 = 16777216. K <= 8196 admits D = 0; K is a multiple of 32, so
//    MAX_K = 8192 (8192 * 2047 = 16769024 < 16777216). K = 1024: D = 3; K = 32: D = 8 (5 exponents of
//    A, 5 of B per tile), inside the windows (widths 112 and 104).
#pragma once

#include "../exactint/exactint.h"

namespace sdc::gemm_tf32_exactint {

// fp32 bits of a tf32 value: sign, 8-bit exponent biased by 127, 10 fraction bits, 13 zero bits.
using Tf32 = exactint::FormatTraits<uint32_t, exactint::Narrow::tf32, exactint::Format{11, 24, -56, 56, -56, 48}, 8192,
                                    127, 23, "gemm_tf32_exactint", "tf32">;

}  // namespace sdc::gemm_tf32_exactint

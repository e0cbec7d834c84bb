// gemm_bf16_exactint: C = A * B^T on bf16 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major bf16 (K-contiguous); C is fp32 M x N in 64 x 64 tiles. The
// pattern and the general argument are in kernels/exactint/exactint.h; this header fixes the numbers.
//
// bf16: p = 8 significand bits, 8 exponent bits (normal exponents -126..127). Accumulator bound W = 24
// (fp32 accumulators; H100 keeps about 25 bits when it aligns the products of one step).
// Windows: A's leading-bit exponents in [-56, 56], B's exponents in [-56, 48].
//  * inputs are normal bf16: the largest A is (2 - 2^-7) * 2^56 < 2^57, the smallest 2^-56; B within
//    2^-56..2^48; all inside 2^-126..2^127;
//  * smallest tile unit u = -56 - 7 - 56 = -119 >= -126;
//  * largest tile unit u = 56 - 7 + 48 = 97 (spans only lower it), so every partial sum is below
//    2^(24 + 97) = 2^121 <= 2^128;
//  * budget: K * (2^8 - 1) * 2^D < 2^24 = 16777216. K <= 65793 admits D = 0; K is a multiple of 32, so
//    MAX_K = 65792 (65792 * 255 = 16776960 < 16777216). K = 1024: 261120 * 2^6 = 16711680 < 2^24 and
//    2^7 would be 33423360, so D = 6 (4 exponents of A, 4 of B per tile). K = 32: 8160 * 2^11 = 16711680,
//    D = 11 (7 and 6 exponents), inside both windows (widths 112 and 104).
#pragma once

#include "../exactint/exactint.h"

namespace sdc::gemm_bf16_exactint {

// bf16 bits: sign, 8-bit exponent biased by 127, the top 7 fraction bits.
using Bf16 = exactint::FormatTraits<uint16_t, exactint::Narrow::bf16, exactint::Format{8, 24, -56, 56, -56, 48}, 65792,
                                    127, 7, "gemm_bf16_exactint", "bf16">;

}  // namespace sdc::gemm_bf16_exactint

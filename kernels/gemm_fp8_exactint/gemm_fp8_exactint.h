// gemm_fp8_exactint: C = A * B^T on fp8 (e4m3) tensor cores with fp32 output, exact-integer mode.
// A is M x K, B is N x K, both row-major e4m3 bytes (K-contiguous: the layout fp8 tensor cores and
// cuBLASLt require); C is fp32 M x N in 64 x 64 tiles. The pattern and the general argument are in
// kernels/exactint/exactint.h; this header fixes the numbers.
//
// e4m3: p = 4 significand bits, 4 exponent bits biased by 7 (normal exponents -6..8; S.1111.111 is NaN,
// so the largest finite value is 1.75 * 2^8 = 448). Accumulator bound W = 13: H100's fp8 path keeps
// about 13 bits when it aligns the products of one step, far fewer than fp32's 24.
// Windows: A's leading-bit exponents in [-6, 7], B's exponents in [-6, 8].
//  * inputs are normal e4m3: A's largest is (2 - 2^-3) * 2^7 = 240 (exponent 8 would let a full
//    significand hit the NaN encoding); B's largest is 2^8 = 256 <= 448; the smallest are 2^-6;
//  * smallest tile unit u = -6 - 3 - 6 = -15 >= -126;
//  * largest tile unit u = 7 - 3 + 8 = 12: every partial sum is below 2^(13 + 12) = 2^25 <= 2^128;
//  * budget: K * (2^4 - 1) * 2^D < 2^13 = 8192. K <= 546 admits D = 0; K is a multiple of 32, so
//    MAX_K = 544 (544 * 15 = 8160 < 8192). K = 128: 1920 * 2^2 = 7680 < 8192 and 2^3 would be 15360, so
//    D = 2 (2 exponents of A, 2 of B per tile). K = 32: 480 * 2^4 = 7680, D = 4 (3 and 3), inside the
//    windows (widths 13 and 14).
#pragma once

#include "../exactint/exactint.h"

namespace sdc::gemm_fp8_exactint {

// e4m3 bits: sign, 4-bit exponent biased by 7, 3 fraction bits.
using E4m3 = exactint::FormatTraits<uint8_t, exactint::Narrow::e4m3, exactint::Format{4, 13, -6, 7, -6, 8}, 544,
                                    7, 3, "gemm_fp8_exactint", "fp8 e4m3">;

}  // namespace sdc::gemm_fp8_exactint

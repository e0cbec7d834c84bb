// The number formats of the tensor-core exact-integer GEMMs, one line each: the format's traits type
// (exactint.h: FormatTraits), which the CPU reference, the registration of the mma.sync family
// gemm_<f>_exactint and of its cuBLASLt twin gemm_<f>_exactint_cublaslt, and both device engines
// (exactint_device.cuh) read. The pattern and the general argument (*) are in exactint.h; this file fixes the
// numbers and proves what the argument leaves to each format.
//
// gemm_<f>_exactint: C = A * B^T on the format's tensor cores with fp32 accumulation and output,
// exact-integer mode. A is M x K, B is N x K, both row-major in the narrow format (K-contiguous: the layout fp8
// tensor cores and cuBLASLt require; tf32 values travel as fp32 words whose low 13 fraction bits are zero, so
// no conversion rounds); C is fp32 M x N in 64 x 64 tiles.
//
// The numbers (p: significand bits with the leading one; W: accumulator bound; windows: the leading-bit
// exponents of A and the exponents of B over all tiles; u: a tile's unit, a_exp - (p - 1) + b_exp; D: the
// exponent budget, the largest with K * (2^p - 1) * 2^D < 2^W):
//   format    p   W   A window   B window   smallest u  largest u   MAX_K  D at K = 1024  D at K = 32
//   bf16      8  24  [-56, 56]  [-56, 48]      -119        97       65792        6            11
//   fp16     11  24  [-14, 15]  [-14, 15]       -38        20        8192        3             8
//   tf32     11  24  [-56, 56]  [-56, 48]      -122        94        8192        3             8
//   e4m3      4  13  [-6, 7]    [-6, 8]         -15        12         544   2 (at K = 128)     4
// What each row must satisfy, and why it does:
//  * every input is a normal number of its format. bf16 and tf32 have fp32's exponents (-126..127): A below
//    (2 - 2^-7) * 2^56 < 2^57 (tf32: (2 - 2^-10) * 2^56), B within 2^-56..2^48. fp16 (-14..15, largest finite
//    65504): the windows are its whole normal range, A's largest is (2 - 2^-10) * 2^15 = 65504; no subnormal
//    input, as some hardware paths flush them. e4m3 (-6..8; S.1111.111 is NaN, so the largest finite value is
//    1.75 * 2^8 = 448): A's window stops at 7, since exponent 8 with a full significand would hit the NaN
//    encoding (A's largest is 1.875 * 2^7 = 240), B's largest is 2^8 = 256;
//  * u >= -126 (the smallest nonzero partial sum is a normal fp32 even where subnormals flush) and
//    W + u <= 128 (no partial sum reaches fp32's overflow threshold): the u columns;
//  * W: fp32 accumulators hold 24 bits, and H100 keeps about 25 when it aligns the products of one step of
//    bf16 or fp16; its fp8 path keeps about 13, far fewer than fp32's 24;
//  * MAX_K, the largest multiple of 32 with D = 0: bf16 65792 * 255 = 16776960 < 2^24; fp16 and tf32
//    8192 * 2047 = 16769024 < 2^24; e4m3 544 * 15 = 8160 < 2^13. The D columns are examples: each window is
//    wide enough for the largest D (at K = 32), which A and B share as exactint.h's make_pattern splits it.
// The compiler checks the table: MAX_K and the budgets below, the u bounds and the windows' widths in
// windows_ok (the registration asserts it).
#pragma once

#include "kernels/exactint/exactint.h"

// The formats by the names the family table's SDC_GEMM_EXACTINT lines give them (kernels/families.def). The
// arguments: storage, narrow type, exponent bias, the bit where the exponent field ends, p, W, A's window,
// B's window.
namespace sdc::exactint::formats {

using bf16 = FormatTraits<uint16_t, Narrow::bf16, 127, 7, 8, 24, -56, 56, -56, 48>;    // 1-8-7
using f16 = FormatTraits<uint16_t, Narrow::f16, 15, 10, 11, 24, -14, 15, -14, 15>;     // 1-5-10
using tf32 = FormatTraits<uint32_t, Narrow::tf32, 127, 23, 11, 24, -56, 56, -56, 48>;  // fp32 bits: 1-8-10, 13 zeros
using fp8 = FormatTraits<uint8_t, Narrow::e4m3, 7, 3, 4, 13, -6, 7, -6, 8>;            // 1-4-3

static_assert(bf16::MAX_K == 65792 && exponent_budget(bf16::FORMAT, 1024) == 6 &&
              exponent_budget(bf16::FORMAT, 32) == 11);
static_assert(f16::MAX_K == 8192 && exponent_budget(f16::FORMAT, 1024) == 3 && exponent_budget(f16::FORMAT, 32) == 8);
static_assert(tf32::MAX_K == 8192 && exponent_budget(tf32::FORMAT, 1024) == 3 &&
              exponent_budget(tf32::FORMAT, 32) == 8);
static_assert(fp8::MAX_K == 544 && exponent_budget(fp8::FORMAT, 128) == 2 && exponent_budget(fp8::FORMAT, 32) == 4);

}  // namespace sdc::exactint::formats

// The number formats of the tensor-core exact-integer GEMMs, one table: for each format its proof and its
// one traits type (exactint.h: FormatTraits), which the CPU reference, the registration of the mma.sync
// family gemm_<f>_exactint and of its cuBLASLt twin gemm_<f>_exactint_cublaslt, and both device engines
// (exactint_device.cuh) read. The pattern and the general argument are in exactint.h; each entry below
// fixes the numbers.
#pragma once

#include "kernels/exactint/exactint.h"

// gemm_bf16_exactint: C = A * B^T on bf16 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major bf16 (K-contiguous); C is fp32 M x N in 64 x 64 tiles.
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

namespace sdc::gemm_bf16_exactint {

// bf16 bits: sign, 8-bit exponent biased by 127, the top 7 fraction bits.
struct Bf16 : exactint::FormatTraits<uint16_t, exactint::Narrow::bf16, 65792, 127, 7> {
  static constexpr exactint::Format FORMAT{8, 24, -56, 56, -56, 48};
  static constexpr const char *ID = "gemm_bf16_exactint", *NAME = "bf16";
};

}  // namespace sdc::gemm_bf16_exactint

// gemm_f16_exactint: C = A * B^T on fp16 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major fp16 (K-contiguous); C is fp32 M x N in 64 x 64 tiles.
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

namespace sdc::gemm_f16_exactint {

// fp16 bits: sign, 5-bit exponent biased by 15, 10 fraction bits.
struct F16 : exactint::FormatTraits<uint16_t, exactint::Narrow::f16, 8192, 15, 10> {
  static constexpr exactint::Format FORMAT{11, 24, -14, 15, -14, 15};
  static constexpr const char *ID = "gemm_f16_exactint", *NAME = "fp16";
};

}  // namespace sdc::gemm_f16_exactint

// gemm_tf32_exactint: C = A * B^T on tf32 tensor cores with fp32 accumulation, exact-integer mode.
// A is M x K, B is N x K, both row-major fp32 words holding tf32 values (the low 13 fraction bits zero,
// so no conversion rounds); C is fp32 M x N in 64 x 64 tiles.
//
// tf32: p = 11 significand bits, fp32's 8 exponent bits. Accumulator bound W = 24 (fp32 accumulators).
// Windows: A's leading-bit exponents in [-56, 56], B's exponents in [-56, 48].
//  * inputs are normal: A below (2 - 2^-10) * 2^56 < 2^57, B within 2^-56..2^48, inside 2^-126..2^127;
//  * smallest tile unit u = -56 - 10 - 56 = -122 >= -126;
//  * largest tile unit u = 56 - 10 + 48 = 94: every partial sum is below 2^(24 + 94) = 2^118 <= 2^128;
//  * budget: K * (2^11 - 1) * 2^D < 2^24 = 16777216. K <= 8196 admits D = 0; K is a multiple of 32, so
//    MAX_K = 8192 (8192 * 2047 = 16769024 < 16777216). K = 1024: D = 3; K = 32: D = 8 (5 exponents of
//    A, 5 of B per tile), inside the windows (widths 112 and 104).

namespace sdc::gemm_tf32_exactint {

// fp32 bits of a tf32 value: sign, 8-bit exponent biased by 127, 10 fraction bits, 13 zero bits.
struct Tf32 : exactint::FormatTraits<uint32_t, exactint::Narrow::tf32, 8192, 127, 23> {
  static constexpr exactint::Format FORMAT{11, 24, -56, 56, -56, 48};
  static constexpr const char *ID = "gemm_tf32_exactint", *NAME = "tf32";
};

}  // namespace sdc::gemm_tf32_exactint

// gemm_fp8_exactint: C = A * B^T on fp8 (e4m3) tensor cores with fp32 output, exact-integer mode.
// A is M x K, B is N x K, both row-major e4m3 bytes (K-contiguous: the layout fp8 tensor cores and
// cuBLASLt require); C is fp32 M x N in 64 x 64 tiles.
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

namespace sdc::gemm_fp8_exactint {

// e4m3 bits: sign, 4-bit exponent biased by 7, 3 fraction bits.
struct E4m3 : exactint::FormatTraits<uint8_t, exactint::Narrow::e4m3, 544, 7, 3> {
  static constexpr exactint::Format FORMAT{4, 13, -6, 7, -6, 8};
  static constexpr const char *ID = "gemm_fp8_exactint", *NAME = "fp8 e4m3";
};

}  // namespace sdc::gemm_fp8_exactint

// The formats by the names the family table's SDC_GEMM_EXACTINT lines give them (kernels/families.def).
namespace sdc::exactint::formats {
using bf16 = gemm_bf16_exactint::Bf16;
using f16 = gemm_f16_exactint::F16;
using tf32 = gemm_tf32_exactint::Tf32;
using fp8 = gemm_fp8_exactint::E4m3;
}  // namespace sdc::exactint::formats

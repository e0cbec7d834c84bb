// gemm_i8: C = A * B with int8 inputs and int32 outputs, exact on CPUs, CUDA cores (dp4a) and tensor cores
// (mma.sync m16n8k32 .s8.s8.s32): integer arithmetic has no rounding, so every engine gives the same bits as the
// CPU golden whatever its order of summation.
//
// Shapes: A is M x K, B is K x N, C is M x N; M and N multiples of 64 (up to 16384), K a multiple of 4 in
// [4, MAX_K] (the validation refuses any other shape: a bad-pattern error at load).
//
// Storage (the screen's tensors are 32-bit words): 4 int8 values per word, packed along k, the lower k in the
// lower byte (two's complement), which is what dp4a and the mma fragments take:
//   a: M x K/4 words, row-major: word i (K/4) + q holds A[i][4q + b] in bits 8b .. 8b + 7 (b = 0..3);
//   b: K/4 x N words, row-major: word q N + j holds B[4q + b][j] in bits 8b .. 8b + 7.
// Output: one word per element, the int32 two's-complement bits of C[i][j] (the reports read them as signed
// integers: Family::int32_outputs). Tiles are the GEMMs' 64 x 64 blocks of C (src/core/gemm_tiles.h),
// C[i][j] at offset (i % 64) 64 + j % 64.
//
// Exactness bound: |A[i][k] B[k][j]| <= 128 * 128 = 2^14, so every partial sum of C[i][j], in any order, is at
// most K 2^14 in magnitude. With K <= MAX_K = 131068 (the largest multiple of 4 below 2^17) that is at most
// 2^31 - 2^16 < 2^31 - 1: every partial sum is an int32, no engine wraps, and the sum is the exact integer
// (the smallest, -128 * 127 K, is above -2^31 as well). K = 2^17 would allow 2^31, one past INT32_MAX.
//
// Engines (shape key `engine`, same inputs and goldens for both): 0 = dp4a (__dp4a: 4 products and an int32
// add per instruction on the CUDA cores), 1 = mma (mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 on the tensor
// cores, sm_80 on). The CPU computes the same C for either. Fragment layout relied on (PTX ISA, "Matrix
// Fragments for mma.m16n8k32", the .s8 rows shared with .e4m3; g = lane >> 2, t = lane % 4): A a0..a15 in 4
// registers, 4 per register low byte first, row g for a0..a3 and a8..a11 and g + 8 otherwise, column
// 4t + (i & 3), + 16 for i >= 8; B b0..b7 in 2 registers, row 4t + (i & 3), + 16 for i >= 4, column g; C and D
// c0..c3 (.s32), row g for c0, c1 and g + 8 for c2, c3, column 2t + (i & 1). So with this storage every A and
// B register is one stored word: A (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) and B (t, g), (t + 4, g) in
// words of the 16 x 8 and 8 x 8 word blocks of a 32-k step.
//
// Inputs (input_word), per word from the shared generator's hash (src/spec/generator.h):
//   uniform        4 random bytes: every int8 value, -128 .. 127, equally likely;
//   heavy_tail     small values in [-8, 7], 1 byte in 16 an edge value (-128 or 127);
//   special        value classes per byte (-128, 127, 0, -1, 1 and random), and whole edge rows and columns:
//                  A's rows i % 8 == 0 all -128 and i % 8 == 1 all 127, B's columns j % 8 == 0 all -128 and
//                  j % 8 == 1 all 127, so C[8u][8v] = 2^14 K (at K = MAX_K, 2^31 - 2^16: the int32 edge),
//                  C[8u + 1][8v] = -16256 K and C[8u + 1][8v + 1] = 16129 K;
//   mantissa_walk  a walking one and a walking zero through the 8 bits of the bytes in turn (element e = 4 w + b
//                  of the tensor: bit e % 8, a one in even runs of 8, a zero among ones in odd runs), so every
//                  bit of every multiplier input, the sign bit included, is set and cleared.
#pragma once

#include "src/spec/generator.h"

namespace sdc::gemm_i8 {

constexpr int TILE = 64;
constexpr int64_t MAX_K = 131068;
constexpr int64_t MAX_MN = 16384;
static_assert(MAX_K % 4 == 0 && MAX_K * 16384 <= 2147483647LL && (MAX_K + 4) * 16384 > 2147483647LL,
              "MAX_K is the largest multiple of 4 whose sums of int8 products stay int32");
enum Engine : int { DP4A = 0, MMA = 1 };

// The int8 in byte b of word w, sign-extended.
SDC_HD int32_t byte_of(uint32_t w, int b) {
  return static_cast<int32_t>(static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * b))));
}

// The dot product of the 4 int8 pairs of two words plus c: what __dp4a computes (its specification).
SDC_HD int32_t dot4(uint32_t a, uint32_t b, int32_t c) {
  return c + byte_of(a, 0) * byte_of(b, 0) + byte_of(a, 1) * byte_of(b, 1) + byte_of(a, 2) * byte_of(b, 2) +
         byte_of(a, 3) * byte_of(b, 3);
}

// special's byte from a class (3 bits) and a random byte.
SDC_HD uint32_t special_byte(uint32_t cls, uint32_t r) {
  switch (cls) {
    case 0: return 0x80u;  // -128
    case 1: return 0x7Fu;  // 127
    case 2: return 0x00u;
    case 3: return 0xFFu;  // -1
    case 4: return 0x01u;
    default: return r & 0xFFu;
  }
}

// Word `w` of input tensor `tensor` (0: a, 1: b) of a case whose packed k length is kq = K / 4 and whose B has
// n columns; key = tensor_key(seed, tensor).
SDC_HD uint32_t input_word(Distribution d, uint32_t tensor, uint64_t key, uint64_t w, uint64_t kq, uint64_t n) {
  const uint64_t h = element_hash(key, w);
  const uint32_t hi = static_cast<uint32_t>(h >> 32);
  switch (d) {
    case Distribution::uniform: return hi;
    case Distribution::heavy_tail: {
      uint32_t out = 0;
      for (int b = 0; b < 4; ++b) {
        const uint32_t r = (hi >> (8 * b)) & 0xFFu;
        const bool edge = ((h >> (4 * b)) & 15u) == 0;
        const uint32_t v = edge ? ((r & 1u) ? 0x7Fu : 0x80u) : ((r & 15u) - 8u) & 0xFFu;
        out |= v << (8 * b);
      }
      return out;
    }
    case Distribution::special: {
      const uint64_t line = tensor == 0 ? w / kq : w % n;  // A's row, B's column
      if (line % 8 == 0) return 0x80808080u;
      if (line % 8 == 1) return 0x7F7F7F7Fu;
      uint32_t out = 0;
      for (int b = 0; b < 4; ++b)
        out |= special_byte(static_cast<uint32_t>((h >> (3 * b)) & 7u), hi >> (8 * b)) << (8 * b);
      return out;
    }
    case Distribution::mantissa_walk: {
      uint32_t out = 0;
      for (int b = 0; b < 4; ++b) {
        const uint64_t e = 4 * w + static_cast<uint64_t>(b);
        const uint32_t one = 1u << (e % 8);
        out |= (((e / 8) % 2 == 0) ? one : (0xFFu ^ one)) << (8 * b);
      }
      return out;
    }
  }
  return 0;
}

}  // namespace sdc::gemm_i8

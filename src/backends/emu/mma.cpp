// The fragment maps below transcribe the PTX ISA's tables case by case (comments quote the rows), so a
// reader can check each one against the ISA without decoding a shared formula.
#include "src/backends/emu/mma.h"

#include <cmath>
#include <cstring>

namespace sdc::emu {

namespace {

float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

int element_width(MmaType t) { return 32 / mma_elements_per_word(t); }

}  // namespace

int mma_k(MmaType t) {
  switch (t) {
    case MmaType::bf16: return 16;
    case MmaType::f16: return 16;
    case MmaType::tf32: return 8;
    case MmaType::e4m3: return 32;
  }
  return 0;
}

int mma_elements_per_word(MmaType t) {
  switch (t) {
    case MmaType::bf16: return 2;
    case MmaType::f16: return 2;
    case MmaType::tf32: return 1;
    case MmaType::e4m3: return 4;
  }
  return 0;
}

RowCol mma_a_element(MmaType t, int lane, int i) {
  const int g = lane >> 2, tig = lane % 4;
  switch (t) {
    case MmaType::bf16:
    case MmaType::f16:
      // m16n8k16 .f16/.bf16, A (a0..a7, two per register):
      //   row = g for 0 <= i < 2 || 4 <= i < 6, g + 8 otherwise
      //   col = 2t + (i & 1) for i < 4, 2t + (i & 1) + 8 for i >= 4
      return {((i < 2) || (i >= 4 && i < 6)) ? g : g + 8, tig * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
    case MmaType::tf32:
      // m16n8k8 .tf32, A (a0..a3, one per register):
      //   row = g for a0 and a2, g + 8 for a1 and a3
      //   col = t for a0 and a1, t + 4 for a2 and a3
      return {(i == 0 || i == 2) ? g : g + 8, (i < 2) ? tig : tig + 4};
    case MmaType::e4m3:
      // m16n8k32 .e4m3, A (a0..a15, four per register):
      //   row = g for 0 <= i < 4 || 8 <= i < 12, g + 8 otherwise
      //   col = 4t + (i & 3) for i < 8, 4t + (i & 3) + 16 for i >= 8
      return {((i < 4) || (i >= 8 && i < 12)) ? g : g + 8, tig * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
  }
  return {-1, -1};
}

RowCol mma_b_element(MmaType t, int lane, int i) {
  const int g = lane >> 2, tig = lane % 4;
  switch (t) {
    case MmaType::bf16:
    case MmaType::f16:
      // m16n8k16 .f16/.bf16, B (b0..b3): row = 2t + (i & 1) for i < 2, 2t + (i & 1) + 8 for i >= 2;
      // col = g
      return {tig * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
    case MmaType::tf32:
      // m16n8k8 .tf32, B (b0, b1): row = t for b0, t + 4 for b1; col = g
      return {i == 0 ? tig : tig + 4, g};
    case MmaType::e4m3:
      // m16n8k32 .e4m3, B (b0..b7): row = 4t + (i & 3) for i < 4, 4t + (i & 3) + 16 for i >= 4;
      // col = g
      return {tig * 4 + (i & 3) + (i >= 4 ? 16 : 0), g};
  }
  return {-1, -1};
}

RowCol mma_c_element(int lane, int i) {
  // All three shapes, f32 accumulators (c0..c3): row = g for i < 2, g + 8 for i >= 2;
  // col = 2t + (i & 1)
  const int g = lane >> 2, tig = lane % 4;
  return {i < 2 ? g : g + 8, tig * 2 + (i & 1)};
}

uint32_t mma_element_bits(MmaType t, const uint32_t* regs, int i) {
  const int per_word = mma_elements_per_word(t), width = element_width(t);
  const uint32_t word = regs[i / per_word];
  if (width == 32) return word;
  return (word >> ((i % per_word) * width)) & ((1u << width) - 1);
}

float decode_bf16(uint16_t bits) { return f32_from_bits(static_cast<uint32_t>(bits) << 16); }

float decode_f16(uint16_t bits) {
  const float sign = (bits & 0x8000) ? -1.0f : 1.0f;
  const int exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
  if (exp == 0x1f) return man ? std::nanf("") : sign * INFINITY;
  // Subnormals are man * 2^-24 and normals (1024 + man) * 2^(exp - 25): both exact in float.
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), -24);
  return sign * std::ldexp(static_cast<float>(1024 + man), exp - 25);
}

float decode_tf32(uint32_t bits) { return f32_from_bits(bits & 0xffffe000u); }

float decode_e4m3(uint8_t bits) {
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  const int exp = (bits >> 3) & 0xf, man = bits & 0x7;
  if (exp == 0xf && man == 0x7) return std::nanf("");
  // Subnormals are man * 2^-9 and normals (8 + man) * 2^(exp - 10); exp 15 is an ordinary exponent.
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), -9);
  return sign * std::ldexp(static_cast<float>(8 + man), exp - 10);
}

float mma_decode(MmaType t, uint32_t bits) {
  switch (t) {
    case MmaType::bf16: return decode_bf16(static_cast<uint16_t>(bits));
    case MmaType::f16: return decode_f16(static_cast<uint16_t>(bits));
    case MmaType::tf32: return decode_tf32(bits);
    case MmaType::e4m3: return decode_e4m3(static_cast<uint8_t>(bits));
  }
  return NAN;
}

void mma_sync(MmaType t, const uint32_t (*a)[4], const uint32_t (*b)[2], const float (*c)[4], float (*d)[4]) {
  constexpr int kLanes = 32, kM = 16, kN = 8, kMaxK = 32;
  const int k_dim = mma_k(t);
  // Gather the logical matrices from every lane's fragment first, so that d may alias c.
  double am[kM][kMaxK], bm[kMaxK][kN], cm[kM][kN];
  for (int l = 0; l < kLanes; ++l) {
    for (int i = 0; i < mma_a_elements(t); ++i) {
      const RowCol rc = mma_a_element(t, l, i);
      am[rc.row][rc.col] = mma_decode(t, mma_element_bits(t, a[l], i));
    }
    for (int i = 0; i < mma_b_elements(t); ++i) {
      const RowCol rc = mma_b_element(t, l, i);
      bm[rc.row][rc.col] = mma_decode(t, mma_element_bits(t, b[l], i));
    }
    for (int i = 0; i < 4; ++i) {
      const RowCol rc = mma_c_element(l, i);
      cm[rc.row][rc.col] = c[l][i];
    }
  }
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < 4; ++i) {
      const RowCol rc = mma_c_element(l, i);
      double sum = cm[rc.row][rc.col];
      for (int k = 0; k < k_dim; ++k) sum += am[rc.row][k] * bm[k][rc.col];
      d[l][i] = static_cast<float>(sum);
    }
}

void mma_sync_f64(const double* a, const double* b, const double (*c)[2], double (*d)[2]) {
  double out[32][2];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l % 4;
    for (int i = 0; i < 2; ++i) {
      const int col = 2 * t + i;
      double acc = c[l][i];
      // A[g][k] is lane 4g + k's a, B[k][col] lane 4 col + k's b.
      for (int k = 0; k < 4; ++k) acc = std::fma(a[4 * g + k], b[4 * col + k], acc);
      out[l][i] = acc;
    }
  }
  for (int l = 0; l < 32; ++l) d[l][0] = out[l][0], d[l][1] = out[l][1];
}

void mma_sync_f64_m16n8(int k, const double (*a)[8], const double (*b)[4], const double (*c)[4], double (*d)[4]) {
  double am[16][16], bm[16][8], out[32][4];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l % 4;
    for (int i = 0; i < k / 2; ++i) am[g + 8 * (i % 2)][t + 4 * (i / 2)] = a[l][i];
    for (int i = 0; i < k / 4; ++i) bm[t + 4 * i][g] = b[l][i];
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
      double acc = c[l][i];
      for (int q = 0; q < k; ++q) acc = std::fma(am[row][q], bm[q][col], acc);
      out[l][i] = acc;
    }
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) d[l][i] = out[l][i];
}

void mma_sync_s8(const uint32_t (*a)[4], const uint32_t (*b)[2], const int32_t (*c)[4], int32_t (*d)[4]) {
  constexpr int kM = 16, kN = 8, kK = 32;
  // m16n8k32 .s8: A a0..a15 and B b0..b7 at the rows and columns of the .e4m3 table (the ISA gives one table,
  // "MMA .m16n8k32 fragment layout for matrix A with .u8 / .s8 / .e4m3 / .e5m2 ... type", and likewise for B);
  // an element's bits are a two's-complement int8.
  int64_t am[kM][kK], bm[kK][kN], cm[kM][kN];
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 16; ++i) {
      const RowCol rc = mma_a_element(MmaType::e4m3, l, i);
      am[rc.row][rc.col] = static_cast<int8_t>(mma_element_bits(MmaType::e4m3, a[l], i));
    }
    for (int i = 0; i < 8; ++i) {
      const RowCol rc = mma_b_element(MmaType::e4m3, l, i);
      bm[rc.row][rc.col] = static_cast<int8_t>(mma_element_bits(MmaType::e4m3, b[l], i));
    }
    for (int i = 0; i < 4; ++i) {
      const RowCol rc = mma_c_element(l, i);
      cm[rc.row][rc.col] = c[l][i];
    }
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const RowCol rc = mma_c_element(l, i);
      int64_t sum = cm[rc.row][rc.col];
      for (int k = 0; k < kK; ++k) sum += am[rc.row][k] * bm[k][rc.col];
      d[l][i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
    }
}

}  // namespace sdc::emu

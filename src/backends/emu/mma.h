// Host emulation of one warp's tensor-core instruction
//   mma.sync.aligned.<shape>.row.col.f32.<t>.<t>.f32  d, a, b, c;
// for the shapes the project uses: m16n8k16 (.bf16, .f16), m16n8k8 (.tf32) and m16n8k32 (.e4m3).
// The emulated device gathers every lane's registers and calls mma_sync once for the warp.
//
// Written from the PTX ISA's element-level fragment tables ("Matrix Fragments for mma.m16n8k16 with
// floating point type", "... for mma.m16n8k8" (.tf32), "... for mma.m16n8k32" (.e4m3)), not from the
// project's kernels, so that the kernels can be checked against it. With groupID g = lane >> 2 and
// threadID_in_group t = lane % 4, element i of a lane's fragment sits at the (row, col) of its matrix
// that mma_a_element, mma_b_element and mma_c_element return; elements are numbered low to high across
// the registers (a0 in the low bits of the first register), as the tables' "Elements (low to high)"
// column says.
//
// Arithmetic: every D element is C plus the sum over k of A*B, each product exact in double (the
// operands have at most 11 significant bits and products stay far inside double's exponent range),
// added in k order in double starting from C, and the double rounded once to float (nearest even).
// What that promises:
//  - When every partial sum is exactly representable in fp32 whatever the order of addition (all
//    values are integer multiples of one power of two 2^e, |C| + sum |A*B| < 2^(24+e), and no input,
//    product or partial sum is subnormal in its format), the result is the exact sum. The ISA promises
//    products "with specified precision" and accumulation "with at least single precision", so any
//    conforming GPU returns the same bits. The project's exact-integer families are built to be this
//    case.
//  - Otherwise the result is the emulator's own rounding. The ISA leaves accumulation order, rounding
//    and subnormal handling unspecified, so no hardware promises these bits, and the emulator is not
//    even the correctly rounded sum (a partial sum in double may round before the final rounding).
//  - NaN and infinity propagate as IEEE arithmetic in double does (inf - inf is NaN); a NaN's payload
//    and sign, and the sign of a zero result, are not promised to match any GPU.
#pragma once

#include <cstdint>

namespace sdc::emu {

enum class MmaType { bf16, f16, tf32, e4m3 };

// The shape's K: 16 for .bf16 and .f16, 8 for .tf32, 32 for .e4m3 (M = 16 and N = 8 for all).
int mma_k(MmaType t);
// Elements packed in one 32-bit register of A or B: 2, 2, 1, 4.
int mma_elements_per_word(MmaType t);
// Elements in a lane's A fragment (4 registers) and B fragment (2 registers).
inline int mma_a_elements(MmaType t) { return 4 * mma_elements_per_word(t); }
inline int mma_b_elements(MmaType t) { return 2 * mma_elements_per_word(t); }

struct RowCol {
  int row;
  int col;
};

// Element i of lane's A fragment: (row, k) of the 16 x K matrix A.
RowCol mma_a_element(MmaType t, int lane, int i);
// Element i of lane's B fragment: (k, col) of the K x 8 matrix B.
RowCol mma_b_element(MmaType t, int lane, int i);
// Element i (0..3) of lane's f32 C or D fragment: (row, col) of the 16 x 8 matrix; the same for all
// three shapes.
RowCol mma_c_element(int lane, int i);

// The bits of element i of a fragment: register i / per_word, bit field (i % per_word) * width.
uint32_t mma_element_bits(MmaType t, const uint32_t* regs, int i);

// bf16: the high half of an f32 (exact, subnormals included).
float decode_bf16(uint16_t bits);
// IEEE binary16, subnormals exact, infinities and NaN kept.
float decode_f16(uint16_t bits);
// .tf32 in a .b32 register. The ISA says only that tf32 has f32's range, at least 10 bits of precision
// and an implementation-defined layout; it does not say the low 13 bits are ignored. Operands produced
// from f32 values with 10-bit mantissas (low 13 bits zero) mean the same on any GPU, and those are the
// ones the project feeds. The emulator reads the word as an f32 with the low 13 bits cleared (sign,
// exponent, 10 mantissa bits): other bits in the low 13 are ignored here, and a GPU that keeps more
// precision may differ on such operands. A NaN whose payload lies only in those bits decodes as an
// infinity.
float decode_tf32(uint32_t bits);
// e4m3: the ISA gives 4 exponent and 3 mantissa bits, no infinity, NaN only 0x7f and 0xff. The bias
// of 7 and the subnormals (exponent field 0: m * 2^-9) are not in that text; they follow the OCP
// 8-bit E4M3 format (largest finite value S.1111.110 = 448).
float decode_e4m3(uint8_t bits);
// The decoder of type t applied to one element's bits.
float mma_decode(MmaType t, uint32_t bits);

// One warp's mma.sync.aligned.<shape>.row.col.f32.<t>.<t>.f32. a[l][0..3], b[l][0..1] and c[l][0..3]
// are lane l's registers (32-bit words packing 2 bf16/f16, 1 tf32 or 4 e4m3 elements, the lower
// element in the lower bits); d[l][0..3] receives lane l's result. d may alias c.
void mma_sync(MmaType t, const uint32_t (*a)[4], const uint32_t (*b)[2], const float (*c)[4], float (*d)[4]);

// One warp's mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 (the fp64 tensor cores): lane l holds a[l], element
// (g, t) of the 8 x 4 matrix A, b[l], element (t, g) of the 4 x 8 matrix B, and c[l][0..1], elements (g, 2t) and
// (g, 2t + 1) of the 8 x 8 matrix C (g = l >> 2, t = l % 4: the PTX ISA's "Matrix Fragments for mma.m8n8k4 with
// .f64 floating point type"); d[l] receives D's elements at the positions of c[l]. d may alias c.
// Arithmetic: each D element is one fused multiply-add chain in increasing k from C, rounded to nearest even at
// every step: fma(a3, b3, fma(a2, b2, fma(a1, b1, fma(a0, b0, c)))). The ISA says IEEE binary64 arithmetic but
// not the order; this is the order an H100 was measured to use, bit for bit on 524,288 random outputs
// (docs/gpu-validation/2026-11-26-h100-dmma-order.md).
void mma_sync_f64(const double* a, const double* b, const double (*c)[2], double (*d)[2]);

// One warp's mma.sync.aligned.m16n8k{8,16}.row.col.f64.f64.f64.f64 (sm_90 and later; k = 8 or 16): lane l holds
// a[l][0..k/2-1], elements (g + 8 (i % 2), t + 4 (i / 2)) of the 16 x k matrix A, b[l][0..k/4-1], elements
// (t + 4 i, g) of the k x 8 matrix B, and c[l][0..3], elements (g + 8 (i / 2), 2 t + i % 2) of the 16 x 8 matrix C
// (g = l >> 2, t = l % 4: the PTX ISA's fragments for .f64, as CUTLASS's SM90_16x8x8 and SM90_16x8x16 F64 traits
// give them); d[l] receives D's elements at the positions of c[l]. d may alias c. Arithmetic: modelled as
// mma_sync_f64's, one fma chain per output in increasing k from C: the same bits as k / 4 m8n8k4 steps. No GPU
// has confirmed that order for these shapes yet (bench_gpu compares their kernels' bits with the m8n8k4
// kernel's), and no family's result depends on it: gemm_f64 runs the m8n8k4 form.
void mma_sync_f64_m16n8(int k, const double (*a)[8], const double (*b)[4], const double (*c)[4], double (*d)[4]);

// One warp's mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (int8 tensor cores): a[l][0..3] and b[l][0..1]
// pack 4 int8 elements per register, lower element in the lower byte, at the positions of the PTX ISA's
// "Matrix Fragments for mma.m16n8k32" table for .s8 (the same rows as .e4m3: mma_a_element and mma_b_element
// of MmaType::e4m3); c[l][0..3] and d[l][0..3] are the .s32 accumulators at mma_c_element's positions. d may
// alias c. Arithmetic: each D element is C plus the 32 products, summed exactly in 64 bits and stored as its
// low 32 bits. Within int32 (every partial sum an int32, as gemm_i8's bound keeps them) that is the exact sum
// any order of accumulation gives; beyond it the ISA's wrap-around is not modelled and no GPU is promised.
void mma_sync_s8(const uint32_t (*a)[4], const uint32_t (*b)[2], const int32_t (*c)[4], int32_t (*d)[4]);

}  // namespace sdc::emu

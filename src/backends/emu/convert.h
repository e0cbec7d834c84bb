// Host emulation of the conversion instructions the kernels use, written from the PTX ISA's cvt and the CUDA
// headers' host fallbacks (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h), not from the project's kernels, so that
// those can be checked against it:
//   cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32 (and their one-value forms)   round to nearest even, overflow to inf
//   cvt.rn.satfinite.{e4m3,e5m2}x2.f32  d, a, b   a's result in d's upper byte, b's in the lower; round to
//                                                 nearest even, out-of-range values and infinities to the
//                                                 largest finite value of their sign
//   cvt.rn.f16x2.{e4m3,e5m2}x2  d, a              a's upper byte to d's upper half, the lower to the lower
//   cvt.f32.f16                                   exact
// NaN inputs give the canonical NaN of the destination (bf16 and fp16 0x7FFF, fp8 0x7F, fp32 0x7FFFFFFF).
// Arithmetic: the value scaled by a power of two so that the destination's last significand bit is the
// units digit, rounded by nearbyint (ties to even in the default rounding mode), scaled back.
#pragma once

#include <cstdint>

namespace sdc::emu {

uint16_t cvt_rn_bf16_f32(float x);
uint16_t cvt_rn_f16_f32(float x);
float cvt_f32_f16(uint16_t h);
uint16_t cvt_rn_satfinite_e4m3x2_f32(float a, float b);
uint16_t cvt_rn_satfinite_e5m2x2_f32(float a, float b);
uint32_t cvt_rn_f16x2_e4m3x2(uint16_t a);
uint32_t cvt_rn_f16x2_e5m2x2(uint16_t a);

}  // namespace sdc::emu

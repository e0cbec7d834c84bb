// sfu_f32: the GPU's special function unit (SFU, the MUFU instructions), recorded mode.
//
// The SFU's approximations are the hardware's own: PTX specifies their maximum error, not their bits, and the
// bits differ between GPU generations. Within one architecture they are deterministic (a fixed table and
// interpolation), so a case is judged by a golden recorded on known-good GPUs of that architecture (`record`,
// `consensus`: docs/recordings.md), or, without a recording, by consensus of repeats and of the node's GPUs.
// There is no CPU reference: the CPU backend skips the family as not applicable, `golden` leaves it out.
//
// Input: x, n fp32 values (tensor 0), elementwise_f32's inputs (the same sweep of every exponent, both signs,
// the branch and reduction points: elementwise_f32.h). Output: 8 words per input element, element i's at
// words 8 i .. 8 i + 7, the fp32 bits of one instruction each, never flushing subnormals (no .ftz):
//   word 0  ex2.approx.f32    y[i].ex2         word 4  sqrt.approx.f32   y[i].sqrt
//   word 1  lg2.approx.f32    y[i].lg2         word 5  sin.approx.f32    y[i].sin
//   word 2  rcp.approx.f32    y[i].rcp         word 6  cos.approx.f32    y[i].cos
//   word 3  rsqrt.approx.f32  y[i].rsqrt       word 7  tanh.approx.f32   y[i].tanh   (sm_75 on)
// Every NaN result is stored as 0x7FFFFFFF (elementwise_f32's canonical NaN), as the other elementwise family
// does. Output tiles: TILE = 512 consecutive elements (4096 words), as elementwise_f32's.
//
// On the emulated device each instruction is modelled by the host's C library (exp2f, log2f, 1 / x, 1 / sqrtf,
// sqrtf, sinf, cosf, tanhf, each rounded to fp32): not the hardware's bits, so an emulated device's results are
// judged by consensus among emulated devices only, never against a GPU's recording (cuda_compare.cpp).
#pragma once

#include "kernels/elementwise_f32/elementwise_f32.h"

namespace sdc::sfu_f32 {

using elementwise_f32::input_bits;
using elementwise_f32::stored;
using elementwise_f32::TILE;
using elementwise_f32::TILE_WORDS;
using elementwise_f32::WORDS;
constexpr int64_t MAX_N = elementwise_f32::MAX_N;

enum Word : int { EX2, LG2, RCP, RSQRT, SQRT, SIN, COS, TANH };
constexpr const char* WORD_NAMES[WORDS] = {"ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos", "tanh"};

}  // namespace sdc::sfu_f32

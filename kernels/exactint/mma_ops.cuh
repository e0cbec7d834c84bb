// The tensor-core instructions the project's GEMM kernels use: D = A * B + D with f32 accumulators on one
// warp's fragments (register layout in exactint_mma.cuh). Shared by the exact-integer and recorded families.
#pragma once

#include <cstdint>

namespace sdc::exactint {

#if defined(SDC_EMU)
// The emulated device: one warp-wide mma.sync emulated from the PTX ISA's fragment layouts
// (src/backends/emu/mma.h), every lane passing its own registers.
#define SDC_MMA_SYNC(SHAPE, TYPE, d, a, b) ::sdc::emu::mma(::sdc::emu::mma_type(TYPE), d, a, b)
#else

// D = A * B + D by one mma.sync of shape SHAPE ("m16n8k16") on inputs of TYPE ("bf16"); the fragment
// registers are the same for every shape used here: A 4, B 2, C/D 4 floats.
#define SDC_MMA_SYNC(SHAPE, TYPE, d, a, b)                              \
  asm("mma.sync.aligned." SHAPE ".row.col.f32." TYPE "." TYPE           \
      ".f32 "                                                           \
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                  \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#endif

// m16n8k16: a 16 x 16 bf16 A fragment and a 16 x 8 bf16 B fragment
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  SDC_MMA_SYNC("m16n8k16", "bf16", d, a, b);
}

// m16n8k16: a 16 x 16 fp16 A fragment and a 16 x 8 fp16 B fragment
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  SDC_MMA_SYNC("m16n8k16", "f16", d, a, b);
}

// m16n8k8: a 16 x 8 tf32 A fragment and an 8 x 8 tf32 B fragment (the inputs are tf32 already: no conversion)
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  SDC_MMA_SYNC("m16n8k8", "tf32", d, a, b);
}

// m16n8k32: a 16 x 32 e4m3 A fragment and a 32 x 8 e4m3 B fragment; the instruction exists from sm_89 on
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890) || defined(SDC_EMU)
  SDC_MMA_SYNC("m16n8k32", "e4m3", d, a, b);
#else
  // Never reached: MmaDevice refuses a device or a binary without the instruction (exactint_mma.cuh).
  // Trap rather than return a made-up result that would read as a miscompare.
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

#undef SDC_MMA_SYNC

}  // namespace sdc::exactint

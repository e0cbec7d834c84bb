// convert_f32 on CUDA: the hardware's conversion instructions, bit-identical to the specification
// (convert_f32.h). One block of 256 threads per tile of 512 elements, so the block's SM computed the whole
// tile; thread t converts elements 2t and 2t + 1 of the tile as a pair, as the paired instructions take them:
//   bf16  __floats2bfloat162_rn (cvt.rn.bf16x2.f32)             widened by a 16-bit shift
//   fp16  __floats2half2_rn (cvt.rn.f16x2.f32)                  widened by __half2float (cvt.f32.f16)
//   fp8   cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (inline PTX)      widened by cvt.rn.f16x2.{e4m3,e5m2}x2, then
//                                                               cvt.f32.f16
// The fp8 instructions exist from compute capability 8.9 on, and only in code compiled for such a target. A
// GPU whose code lacks them (sm_80) converts fp8 with the specification's integer code (narrow_bits,
// widen_bits), and the engine says so: its bf16 and fp16 conversions are still the hardware's.
#include <memory>
#include <string>

#if !defined(SDC_EMU)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "kernels/convert_f32/convert_f32.h"
#include "src/backends/cuda/element_words_device.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::convert_f32::SDC_TARGET {
namespace {

constexpr unsigned THREADS = TILE / 2;

#if defined(SDC_EMU) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890)
#define SDC_CONVERT_FP8_HW 1
#endif

// The fp8 pairs by the instructions: hi's result in the upper byte (half), lo's in the lower, as the PTX ISA
// packs them. Only called where SDC_CONVERT_FP8_HW is set.
__device__ __forceinline__ uint32_t e4m3x2(float hi, float lo) {
#if defined(SDC_EMU)
  return ::sdc::emu::cvt_rn_satfinite_e4m3x2_f32(hi, lo);
#elif defined(SDC_CONVERT_FP8_HW)
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return (narrow_bits(fmt_e4m3(), __float_as_uint(hi)) << 8) | narrow_bits(fmt_e4m3(), __float_as_uint(lo));
#endif
}
__device__ __forceinline__ uint32_t e5m2x2(float hi, float lo) {
#if defined(SDC_EMU)
  return ::sdc::emu::cvt_rn_satfinite_e5m2x2_f32(hi, lo);
#elif defined(SDC_CONVERT_FP8_HW)
  unsigned short r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return (narrow_bits(fmt_e5m2(), __float_as_uint(hi)) << 8) | narrow_bits(fmt_e5m2(), __float_as_uint(lo));
#endif
}
// fp8 pair p to an fp16 pair (upper byte to upper half).
__device__ __forceinline__ uint32_t f16x2_of_e4m3x2(uint32_t p) {
#if defined(SDC_EMU)
  return ::sdc::emu::cvt_rn_f16x2_e4m3x2(static_cast<uint16_t>(p));
#elif defined(SDC_CONVERT_FP8_HW)
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(static_cast<unsigned short>(p)));
  return r;
#else
  return p;  // never reached: the software path widens fp8 directly
#endif
}
__device__ __forceinline__ uint32_t f16x2_of_e5m2x2(uint32_t p) {
#if defined(SDC_EMU)
  return ::sdc::emu::cvt_rn_f16x2_e5m2x2(static_cast<uint16_t>(p));
#elif defined(SDC_CONVERT_FP8_HW)
  uint32_t r;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(r) : "h"(static_cast<unsigned short>(p)));
  return r;
#else
  return p;  // never reached: the software path widens fp8 directly
#endif
}

__device__ __forceinline__ uint32_t f32_of_f16(uint32_t h) {
  return __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(h))));
}

// fp8_hw: the code has the fp8 instructions (false only in code for a target before 8.9, where they are not
// compiled in either way).
__global__ void __launch_bounds__(THREADS) convert_kernel(const float* x, float* out, uint32_t* tile_sm, bool fp8_hw) {
  const uint64_t tile = blockIdx.x;
  const uint64_t i = tile * TILE + 2u * threadIdx.x;  // elements i (lo) and i + 1 (hi)
  const float2 v = reinterpret_cast<const float2*>(x)[i / 2];
  uint32_t w[2][WORDS];
  const __nv_bfloat162 b = __floats2bfloat162_rn(v.x, v.y);
  w[0][BF16] = __bfloat16_as_ushort(b.x);
  w[1][BF16] = __bfloat16_as_ushort(b.y);
  const __half2 h = __floats2half2_rn(v.x, v.y);
  w[0][F16] = __half_as_ushort(h.x);
  w[1][F16] = __half_as_ushort(h.y);
  if (fp8_hw) {
    const uint32_t e4 = e4m3x2(v.y, v.x), e5 = e5m2x2(v.y, v.x);
    const uint32_t h4 = f16x2_of_e4m3x2(e4), h5 = f16x2_of_e5m2x2(e5);
    for (int k = 0; k < 2; ++k) {
      w[k][E4M3] = (e4 >> (8 * k)) & 0xFFu;
      w[k][E5M2] = (e5 >> (8 * k)) & 0xFFu;
      w[k][E4M3_F32] = f32_of_f16((h4 >> (16 * k)) & 0xFFFFu);
      w[k][E5M2_F32] = f32_of_f16((h5 >> (16 * k)) & 0xFFFFu);
    }
  } else {
    const uint32_t u[2] = {__float_as_uint(v.x), __float_as_uint(v.y)};
    for (int k = 0; k < 2; ++k) {
      w[k][E4M3] = narrow_bits(fmt_e4m3(), u[k]);
      w[k][E5M2] = narrow_bits(fmt_e5m2(), u[k]);
      w[k][E4M3_F32] = widen_bits(fmt_e4m3(), w[k][E4M3]);
      w[k][E5M2_F32] = widen_bits(fmt_e5m2(), w[k][E5M2]);
    }
  }
  for (int k = 0; k < 2; ++k) {
    w[k][BF16_F32] = w[k][BF16] << 16;
    w[k][F16_F32] = f32_of_f16(w[k][F16]);
  }
  // 64 bytes per pair: four aligned 16-byte stores. Thread t stores the tile's words 16 t .. 16 t + 15 (elements 2t
  // and 2t + 1, WORDS each: ConvertDevice::thread_of).
  uint4* o = reinterpret_cast<uint4*>(out + i * WORDS);
  o[0] = make_uint4(w[0][0], w[0][1], w[0][2], w[0][3]);
  o[1] = make_uint4(w[0][4], w[0][5], w[0][6], w[0][7]);
  o[2] = make_uint4(w[1][0], w[1][1], w[1][2], w[1][3]);
  o[3] = make_uint4(w[1][4], w[1][5], w[1][6], w[1][7]);
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

struct Input {
  static constexpr const char* GENERATE = "convert_f32 generate_kernel";
  SDC_HD static uint32_t bits(Distribution d, uint64_t key, uint64_t i) { return input_bits(d, key, i); }
};

class ConvertDevice final : public cuda::SDC_TARGET::ElementWordsDevice<Input> {
 public:
  ConvertDevice(const Case& c, bool fp8_hw) : ElementWordsDevice(c), fp8_hw_(fp8_hw) {}

  // convert_kernel's store: the tile's element e (words WORDS e ..) is thread e / 2's.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    return thread_at(offset / WORDS / 2, warp, lane);
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            fp8_hw_ ? "cvt.rn.bf16x2.f32, cvt.rn.f16x2.f32, cvt.rn.satfinite.e4m3x2/e5m2x2.f32; back by a shift, "
                      "cvt.f32.f16, cvt.rn.f16x2.e4m3x2/e5m2x2"
                    : "cvt.rn.bf16x2.f32, cvt.rn.f16x2.f32; back by a shift, cvt.f32.f16; fp8 in integer code "
                      "(no fp8 cvt before sm_89)"};
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("convert_f32 convert_kernel", convert_kernel, static_cast<unsigned>(n_ / TILE), THREADS, s,
                 static_cast<const float*>(in[0]), out, tile_sm, fp8_hw_);
  }

 private:
  bool fp8_hw_;
};

}  // namespace

// Whether the code this GPU runs has the fp8 instructions: compiled for 8.9 or later (the emulated device's
// "binary" is its compute capability).
std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  cudaFuncAttributes attr{};
  SDC_CUDA_CHECK(cudaFuncGetAttributes(&attr, convert_kernel));
  return std::make_unique<ConvertDevice>(c, attr.binaryVersion >= 89);
}

}  // namespace sdc::convert_f32::SDC_TARGET

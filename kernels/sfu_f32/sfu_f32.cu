// sfu_f32 on CUDA: one MUFU instruction per output word (sfu_f32.h), by inline PTX so that the compiler can
// neither substitute an IEEE routine nor add a flush to zero. A grid-stride loop over tiles, as elementwise_f32's:
// as many blocks as fill the GPU at full occupancy, each block a whole tile at a time (so the tile's SM is the
// block's); 256 threads, thread t computing elements t and t + 256 of the tile, 8 words each.
#include <memory>
#include <string>

#if defined(SDC_EMU)
#include <cmath>
#endif

#include "kernels/sfu_f32/sfu_f32.h"
#include "src/backends/cuda/element_words_device.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::sfu_f32::SDC_TARGET {
namespace {

constexpr unsigned THREADS = 256;

#if defined(SDC_EMU)
// The emulated device's model of each instruction: the host's C library, rounded to fp32 (sfu_f32.h says why
// that is enough: emulated results are judged by consensus among emulated devices).
#define SDC_SFU(name, ptx, model) \
  inline float name(float x) { return model; }
#else
#define SDC_SFU(name, ptx, model)                    \
  __device__ __forceinline__ float name(float x) {   \
    float y;                                         \
    asm volatile(ptx " %0, %1;" : "=f"(y) : "f"(x)); \
    return y;                                        \
  }
#endif
SDC_SFU(sfu_ex2, "ex2.approx.f32", std::exp2(x))
SDC_SFU(sfu_lg2, "lg2.approx.f32", std::log2(x))
SDC_SFU(sfu_rcp, "rcp.approx.f32", 1.0f / x)
SDC_SFU(sfu_rsqrt, "rsqrt.approx.f32", 1.0f / std::sqrt(x))
SDC_SFU(sfu_sqrt, "sqrt.approx.f32", std::sqrt(x))
SDC_SFU(sfu_sin, "sin.approx.f32", std::sin(x))
SDC_SFU(sfu_cos, "cos.approx.f32", std::cos(x))
SDC_SFU(sfu_tanh, "tanh.approx.f32", std::tanh(x))
#undef SDC_SFU

__global__ void __launch_bounds__(THREADS) sfu_kernel(const float* x, float* out, uint32_t* tile_sm, uint64_t tiles) {
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    for (unsigned k = 0; k < TILE / THREADS; ++k) {
      const uint64_t i = tile * TILE + k * THREADS + threadIdx.x;
      const float v = x[i];
      uint4* o = reinterpret_cast<uint4*>(out + i * WORDS);  // 32 bytes per element: two aligned stores
      o[0] = make_uint4(stored(sfu_ex2(v)), stored(sfu_lg2(v)), stored(sfu_rcp(v)), stored(sfu_rsqrt(v)));
      o[1] = make_uint4(stored(sfu_sqrt(v)), stored(sfu_sin(v)), stored(sfu_cos(v)), stored(sfu_tanh(v)));
    }
    if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
  }
}

struct Input {
  static constexpr const char* GENERATE = "sfu_f32 generate_kernel";
  SDC_HD static uint32_t bits(Distribution d, uint64_t key, uint64_t i) { return input_bits(d, key, i); }
};

class SfuDevice final : public cuda::SDC_TARGET::ElementWordsDevice<Input> {
 public:
  explicit SfuDevice(const Case& c)
      : ElementWordsDevice(c), grid_(cuda::SDC_TARGET::resident_grid(sfu_kernel, THREADS, n_ / TILE)) {}

  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            "SFU (MUFU) ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh .approx.f32 without ftz, one per word"};
  }
  // The kernel's stores (above): element e of a tile is thread e % 256's, its 8 words at offsets 8 e .. 8 e + 7.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    return thread_at(offset / WORDS % THREADS, warp, lane);
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("sfu_f32 sfu_kernel", sfu_kernel, grid_, THREADS, s, static_cast<const float*>(in[0]), out, tile_sm,
                 n_ / TILE);
  }

 private:
  unsigned grid_;  // cuda::resident_grid: full occupancy, at most one block per tile
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<SfuDevice>(c); }

}  // namespace sdc::sfu_f32::SDC_TARGET

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
#include "src/backends/cuda/device_util.cuh"
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

__global__ void generate_kernel(float* dst, uint64_t n, Distribution d, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    reinterpret_cast<uint32_t*>(dst)[i] = input_bits(d, key, i);
}

class SfuDevice final : public cuda::DeviceProblem {
 public:
  SfuDevice(const Case& c, unsigned grid)
      : n_(static_cast<uint64_t>(dim(c, "n"))), dist_(c.distribution), seed_(c.data_seed), grid_(grid) {}

  uint64_t input_bytes(size_t) const override { return n_ * sizeof(float); }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            "SFU (MUFU) ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh .approx.f32 without ftz, one per word"};
  }
  // The kernel's stores (above): element e of a tile is thread e % 256's, its 8 words at offsets 8 e .. 8 e + 7.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const unsigned t = (offset / WORDS) % THREADS;
    warp = static_cast<int>(t / 32);
    lane = static_cast<int>(t % 32);
    return true;
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    cuda::launch("sfu_f32 generate_kernel", generate_kernel, cuda::grid_for(n_, 256), 256, s, static_cast<float*>(dst),
                 n_, dist_, tensor_key(seed_, static_cast<uint32_t>(tensor)));
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("sfu_f32 sfu_kernel", sfu_kernel, grid_, THREADS, s, static_cast<const float*>(in[0]), out, tile_sm,
                 n_ / TILE);
  }

 private:
  uint64_t n_;
  Distribution dist_;
  uint64_t seed_;
  unsigned grid_;
};

}  // namespace

// The grid: the blocks the GPU holds at once (the occupancy calculator's blocks per SM times the SMs), or one
// per tile where there are fewer tiles.
std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  int device = 0, sms = 0, per_sm = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&device));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SDC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sfu_kernel, THREADS, 0));
  const uint64_t tiles = static_cast<uint64_t>(dim(c, "n")) / TILE;
  uint64_t grid = static_cast<uint64_t>(sms > 0 ? sms : 1) * static_cast<uint64_t>(per_sm > 0 ? per_sm : 1);
  if (grid > tiles) grid = tiles;
  return std::make_unique<SfuDevice>(c, static_cast<unsigned>(grid));
}

}  // namespace sdc::sfu_f32::SDC_TARGET

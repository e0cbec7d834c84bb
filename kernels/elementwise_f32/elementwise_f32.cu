// elementwise_f32 on CUDA: fpmath.h's functions, bit-identical to the specification (elementwise_f32.h). The
// square root and the division of sdc_rsqrtf are __fsqrt_rn and __fdiv_rn, and the build keeps every other
// operation as written (no contraction, IEEE division, no flush to zero), so no fast approximation stands in.
// A grid-stride loop over tiles: as many blocks as fill the GPU at full occupancy (resident blocks per SM
// times SMs, at most one per tile), each block a whole tile at a time, so the tile's SM is the block's;
// 256 threads, thread t computing elements t and t + 256 of the tile (coalesced loads, 8 words each).
#include <memory>
#include <string>

#include "kernels/elementwise_f32/elementwise_f32.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::elementwise_f32::SDC_TARGET {
namespace {

constexpr unsigned THREADS = 256;

__global__ void __launch_bounds__(THREADS)
    elementwise_kernel(const float* x, float* out, uint32_t* tile_sm, uint64_t tiles) {
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    for (unsigned k = 0; k < TILE / THREADS; ++k) {
      const uint64_t i = tile * TILE + k * THREADS + threadIdx.x;
      uint32_t w[WORDS];
      outputs(x[i], w);
      // 32 bytes per element: two aligned stores. Whichever block takes the tile, thread t stores the words of its
      // elements t and t + 256 (ElementwiseDevice::thread_of).
      uint4* o = reinterpret_cast<uint4*>(out + i * WORDS);
      o[0] = make_uint4(w[0], w[1], w[2], w[3]);
      o[1] = make_uint4(w[4], w[5], w[6], w[7]);
    }
    if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
  }
}

__global__ void generate_kernel(float* dst, uint64_t n, Distribution d, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    reinterpret_cast<uint32_t*>(dst)[i] = input_bits(d, key, i);
}

class ElementwiseDevice final : public cuda::DeviceProblem {
 public:
  ElementwiseDevice(const Case& c, unsigned grid)
      : n_(static_cast<uint64_t>(dim(c, "n"))), dist_(c.distribution), seed_(c.data_seed), grid_(grid) {}

  uint64_t input_bytes(size_t) const override { return n_ * sizeof(float); }
  // elementwise_kernel's store: the tile's element e (words WORDS e ..) is thread e % THREADS's.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const uint32_t t = offset / WORDS % THREADS;
    warp = static_cast<int>(t / 32);
    lane = static_cast<int>(t % 32);
    return true;
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            "fpmath.h's exp, log, tanh, GELU, SiLU, sin, cos in fma/add/mul/div; rsqrt by "
            "__fsqrt_rn and __fdiv_rn"};
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    cuda::launch("elementwise_f32 generate_kernel", generate_kernel, cuda::grid_for(n_, 256), 256, s,
                 static_cast<float*>(dst), n_, dist_, tensor_key(seed_, static_cast<uint32_t>(tensor)));
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("elementwise_f32 elementwise_kernel", elementwise_kernel, grid_, THREADS, s,
                 static_cast<const float*>(in[0]), out, tile_sm, n_ / TILE);
  }

 private:
  uint64_t n_;
  Distribution dist_;
  uint64_t seed_;
  unsigned grid_;
};

}  // namespace

// The grid: the blocks the GPU holds at once (the occupancy calculator's blocks per SM times the SMs), or
// one per tile where there are fewer tiles.
std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {
  int device = 0, sms = 0, per_sm = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&device));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SDC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, elementwise_kernel, THREADS, 0));
  const uint64_t tiles = static_cast<uint64_t>(dim(c, "n")) / TILE;
  uint64_t grid = static_cast<uint64_t>(sms > 0 ? sms : 1) * static_cast<uint64_t>(per_sm > 0 ? per_sm : 1);
  if (grid > tiles) grid = tiles;
  return std::make_unique<ElementwiseDevice>(c, static_cast<unsigned>(grid));
}

}  // namespace sdc::elementwise_f32::SDC_TARGET

// elementwise_f32 on CUDA: fpmath.h's functions, bit-identical to the specification (elementwise_f32.h). The
// square root and the division of sdc_rsqrtf are __fsqrt_rn and __fdiv_rn, and the build keeps every other
// operation as written (no contraction, IEEE division, no flush to zero), so no fast approximation stands in.
// A grid-stride loop over tiles: as many blocks as fill the GPU at full occupancy (resident blocks per SM
// times SMs, at most one per tile), each block a whole tile at a time, so the tile's SM is the block's;
// 256 threads, thread t computing elements t and t + 256 of the tile (coalesced loads, 8 words each).
#include <memory>
#include <string>

#include "kernels/elementwise_f32/elementwise_f32.h"
#include "src/backends/cuda/element_words_device.cuh"
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

struct Input {
  static constexpr const char* GENERATE = "elementwise_f32 generate_kernel";
  SDC_HD static uint32_t bits(Distribution d, uint64_t key, uint64_t i) { return input_bits(d, key, i); }
};

class ElementwiseDevice final : public cuda::SDC_TARGET::ElementWordsDevice<Input> {
 public:
  explicit ElementwiseDevice(const Case& c)
      : ElementWordsDevice(c), grid_(cuda::SDC_TARGET::resident_grid(elementwise_kernel, THREADS, n_ / TILE)) {}

  // elementwise_kernel's store: the tile's element e (words WORDS e ..) is thread e % THREADS's.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    return thread_at(offset / WORDS % THREADS, warp, lane);
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            "fpmath.h's exp, log, tanh, GELU, SiLU, sin, cos in fma/add/mul/div; rsqrt by "
            "__fsqrt_rn and __fdiv_rn"};
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("elementwise_f32 elementwise_kernel", elementwise_kernel, grid_, THREADS, s,
                 static_cast<const float*>(in[0]), out, tile_sm, n_ / TILE);
  }

 private:
  unsigned grid_;  // cuda::resident_grid: full occupancy, at most one block per tile
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<ElementwiseDevice>(c); }

}  // namespace sdc::elementwise_f32::SDC_TARGET

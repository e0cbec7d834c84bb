// The device side that the families with one fp32 input x[n] and WORDS output words per element share
// (convert_f32, elementwise_f32, sfu_f32; their CPU side is src/core/element_words.h): the input generated on the
// device from the family's specification, the warp and lane of a kernel's documented store, and the grid of a
// grid-stride loop over tiles at full occupancy. Included by .cu files only (device_util.cuh).
#pragma once

#include <cstdint>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::cuda::SDC_TARGET {

// Input element i's bits: Input::bits(d, key, i), the family's generator (its specification header), the same
// function Problem::generate_input calls on the host.
template <class Input>
__global__ void generate_words_kernel(float* dst, uint64_t n, Distribution d, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    reinterpret_cast<uint32_t*>(dst)[i] = Input::bits(d, key, i);
}

// A DeviceProblem of such a family: the input's size and generation (Input::GENERATE names the kernel in an
// error). The family adds its kernel (compute, engine) and its store's map (thread_of, by thread_at).
template <class Input>
class ElementWordsDevice : public DeviceProblem {
 public:
  explicit ElementWordsDevice(const Case& c)
      : n_(static_cast<uint64_t>(dim(c, "n"))), dist_(c.distribution), seed_(c.data_seed) {}

  uint64_t input_bytes(size_t) const override { return n_ * sizeof(float); }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    launch(Input::GENERATE, generate_words_kernel<Input>, grid_for(n_, 256), 256, s, static_cast<float*>(dst), n_,
           dist_, tensor_key(seed_, static_cast<uint32_t>(tensor)));
  }

 protected:
  // Thread t of a block as warp and lane.
  static bool thread_at(uint32_t t, int& warp, int& lane) {
    warp = static_cast<int>(t / 32);
    lane = static_cast<int>(t % 32);
    return true;
  }

  uint64_t n_;
  Distribution dist_;
  uint64_t seed_;
};

// The blocks of `threads` threads that the GPU holds at once running `kernel` (the occupancy calculator's blocks per
// SM times the SMs), or one per tile where there are fewer tiles: a grid-stride loop over tiles at full occupancy.
template <class Kernel>
unsigned resident_grid(Kernel kernel, unsigned threads, uint64_t tiles) {
  const int sms = sm_count();
  int per_sm = 0;
  SDC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(threads), 0));
  uint64_t grid = static_cast<uint64_t>(sms > 0 ? sms : 1) * static_cast<uint64_t>(per_sm > 0 ? per_sm : 1);
  if (grid > tiles) grid = tiles;
  return static_cast<unsigned>(grid);
}

}  // namespace sdc::cuda::SDC_TARGET

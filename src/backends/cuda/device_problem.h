// The device side of a prepared case. A family's .cu file implements it beside the CPU reference; the
// CUDA runner owns buffers, streams, digests, comparison, injection and the watchdog, so a family owns
// only its input generation and its kernels. Plain C++ (no device code): the runner includes it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sdc::cuda {

class DeviceProblem {
 public:
  virtual ~DeviceProblem() = default;
  // Bytes of input tensor `tensor` on the device (Problem::inputs() order; fp32 tensors: 4 per element).
  virtual uint64_t input_bytes(size_t tensor) const = 0;
  // Why a GPU of this compute capability cannot run the case at all (it lacks the instructions, e.g.
  // fp8 tensor cores before 8.9), or "" when it can. Such a test is skipped as not applicable: that is
  // not a failure to run, so it does not make the run inconclusive.
  virtual std::string unsupported(int /*cc_major*/, int /*cc_minor*/) const { return ""; }
  // Scratch memory the compute pass needs beyond inputs and output (0: none).
  virtual uint64_t scratch_bytes() const { return 0; }
  // Generates input tensor `tensor` on the device: the same bits as Problem::generate_input on the host.
  virtual void generate(size_t tensor, void* dst, cudaStream_t stream) const = 0;
  // Enqueues the computation of every tile. out holds tile t's Problem::tile_elements() elements at
  // out + t * tile_elements, in the CPU path's offsets; tile_sm[t] receives the %smid of the SM that
  // computed tile t. Checks every launch (SDC_CUDA_CHECK_LAUNCH); does not synchronize.
  virtual void compute(const void* const* in, float* out, uint32_t* tile_sm, void* scratch,
                       cudaStream_t stream) const = 0;
};

// A fault applied by the digest pass (kernel parameter; mask 0 means none and costs one compare per
// tile): element `offset` of tile `tile`, or of every tile that SM `sm` computed, has `mask` xor-ed
// into its bits before it is digested, and the flipped value is stored back (so the report's actual
// value shows it).
struct DeviceFault {
  uint32_t mask = 0;
  uint32_t offset = 0;
  uint64_t tile = ~0ull;
  int32_t sm = -1;
};

}  // namespace sdc::cuda

// The device side of a case computed by cuBLASLt: C (M x N fp32) = A (M x K) * B (N x K)^T through an
// LtGemm plan (cublaslt.h) with its pinned algorithm. Input generation is the family's (a callable), so
// that any family whose inputs fit the plan's dtype can use it. Plain C++: the GPU executor and the tests
// include it.
//
// What differs from a family's own kernel:
//  * output layout: cuBLASLt writes a plain row-major matrix (rows N apart), so output_layout() is the
//    matrix layout of 64 x 64 tiles and the GPU executor's digest pass and tile copy read the tiles there;
//  * no SM ids: a library kernel cannot say which SM computed a tile (records_sm() is false);
//  * the engine: the loaded library's version and the pinned algorithm's description, so that a changed
//    choice (another GPU, another library) can never be mistaken for the same algorithm.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/backends/cuda/cublaslt.h"
#include "src/backends/cuda/device_problem.h"

namespace sdc::cuda {

class LtGemmDevice final : public DeviceProblem {
 public:
  // Enqueues the generation of input tensor `tensor` (0: A, 1: B, in the dtype's encoding) on the stream.
  using Generate = std::function<void(size_t tensor, void* dst, cudaStream_t s)>;
  // The workspace offered to cuBLASLt (split-K partial sums, counters): enough for every algorithm the
  // heuristic ranks first on current GPUs, small beside the inputs of a large case.
  static constexpr uint64_t WORKSPACE_BYTES = uint64_t{32} << 20;

  // Runs on the GPU's host thread after cudaSetDevice (prepare_cuda): the handle is tied to the current
  // device and the heuristic answers for it, and engine() must name the pinned algorithm before anything
  // runs, so the plan is made here rather than on the first compute(). A GPU that cannot run the dtype
  // gets no plan (unsupported() says why; compute() throws it). Throws LtError when the library cannot
  // be loaded or offers no algorithm.
  LtGemmDevice(LtDtype dtype, int64_t m, int64_t n, int64_t k, Generate generate);

  uint64_t input_bytes(size_t tensor) const override;
  std::string unsupported(int cc_major, int cc_minor) const override {
    return lt_unsupported(dtype_, cc_major, cc_minor);
  }
  OutputLayout output_layout() const override;
  bool records_sm() const override { return false; }
  std::string why_no_thread_map() const override {
    return "cuBLASLt's kernels do not document which thread stores what";
  }
  Engine engine() const override;
  uint64_t scratch_bytes() const override { return WORKSPACE_BYTES; }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override { generate_(tensor, dst, s); }
  // tile_sm is left as the GPU executor poisoned it. Throws LtError when cublasLtMatmul fails.
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void* scratch, cudaStream_t s) const override;

  // The plan (every algorithm the heuristic offers, for the GPU tests and the benchmark); null when this
  // GPU cannot run the dtype.
  const LtGemm* plan() const { return plan_.get(); }

 private:
  LtDtype dtype_;
  int64_t m_, n_, k_;
  Generate generate_;
  std::string refusal_;
  std::unique_ptr<LtGemm> plan_;
};

}  // namespace sdc::cuda

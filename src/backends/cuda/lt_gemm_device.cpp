// A case computed by cuBLASLt (lt_gemm_device.h).
#include "src/backends/cuda/lt_gemm_device.h"

#include <stdexcept>
#include <utility>

#include "src/backends/cuda/cuda_check.h"

namespace sdc::cuda {

LtGemmDevice::LtGemmDevice(LtDtype dtype, int64_t m, int64_t n, int64_t k, Generate generate)
    : dtype_(dtype), m_(m), n_(n), k_(k), generate_(std::move(generate)) {
  int dev = 0, major = 0, minor = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&dev));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  refusal_ = lt_unsupported(dtype, major, minor);
  // Not applicable comes first: such a GPU needs no library, and asking the heuristic would only fail.
  if (refusal_.empty()) plan_ = std::make_unique<LtGemm>(system_cublaslt(), dtype, m, n, k, WORKSPACE_BYTES);
}

uint64_t LtGemmDevice::input_bytes(size_t tensor) const {
  return static_cast<uint64_t>((tensor == 0 ? m_ : n_) * k_) * lt_element_bytes(dtype_);
}

OutputLayout LtGemmDevice::output_layout() const {
  OutputLayout l;
  l.tiles_per_row = static_cast<uint64_t>(n_ / 64);
  l.tile_rows = 64;
  l.tile_cols = 64;
  l.ld = static_cast<uint64_t>(n_);
  return l;
}

Engine LtGemmDevice::engine() const {
  if (!plan_) return {"cublasLt", "none: " + refusal_};
  return {plan_->library().version_text(), plan_->pinned().description};
}

void LtGemmDevice::compute(const void* const* in, float* out, uint32_t*, void* scratch, cudaStream_t s) const {
  if (!plan_) throw std::runtime_error(refusal_);
  // cuBLASLt carries its own CUDA runtime: its launch is checked by its status (LtGemm::run throws),
  // not by this runtime's cudaGetLastError; an asynchronous fault shows at the GPU executor's next wait. A failed
  // call that took the context with it is the GPU's failure, not only this test's error.
  try {
    plan_->run(in[0], in[1], out, scratch, s);
  } catch (const LtError& e) {
    check_library_failure(e.what(), cudaStreamQuery(s));
    throw;
  }
}

}  // namespace sdc::cuda

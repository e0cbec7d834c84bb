// One error-check idiom for every CUDA runtime call and after every kernel launch: the failed
// expression as written, the error's name and message, and the source file and line. A failure throws
// CudaError, which the runner turns into an `error` result for that device's test; other devices go on.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace sdc::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, cudaError_t code) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }
  bool out_of_memory() const { return code_ == cudaErrorMemoryAllocation; }
  // Errors after which the device's context is unusable (a kernel fault, a lost device): nothing more
  // can run on that device in this process.
  bool sticky() const;

 private:
  cudaError_t code_;
};

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line);

inline void check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, expr, file, line);
}

// "src/backends/cuda/x.cu" from whatever absolute path the compiler saw: reports name no build machine.
const char* source_name(const char* file);

}  // namespace sdc::cuda

#define SDC_CUDA_CHECK(expr) ::sdc::cuda::check((expr), #expr, __FILE__, __LINE__)
// After every launch: a bad configuration shows here, an asynchronous fault at the next synchronization.
#define SDC_CUDA_CHECK_LAUNCH(kernel) ::sdc::cuda::check(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

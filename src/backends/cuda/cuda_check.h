// One error-check idiom for every CUDA runtime call and after every kernel launch, in device-side code
// (the CUDA runtime's, or the emulated device's calls of the same names): the failed expression as
// written, the error's name and message, and the source file and line. A failure throws CudaError
// (device_error.h), which the GPU executor turns into an `error` result for that device's test; other devices
// go on.
#pragma once

#include "src/backends/cuda/cuda_target.h"
#include "src/backends/cuda/device_error.h"

namespace sdc::cuda {

// Errors after which the device's context is unusable (a kernel fault, a lost device, an error the
// driver contained to this context): nothing more can run on that device in this process.
inline CudaError::Kind error_kind(cudaError_t e) {
  switch (e) {
    case cudaErrorMemoryAllocation: return CudaError::Kind::out_of_memory;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
    case cudaErrorContained:
    case cudaErrorLaunchTimeout: return CudaError::Kind::context_lost;
    default: return CudaError::Kind::other;
  }
}

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  throw CudaError(std::string(expr) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " +
                      source_name(file) + ":" + std::to_string(line),
                  error_kind(e));
}

inline void check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, expr, file, line);
}

// A vendor library's call on the device (cuBLASLt) failed with `what`. The library's status does not say
// whether the context went with it; the stream's state does: a lost context (a sticky error) is the device's
// failure as any kernel fault is, so this throws CudaError context_lost (the GPU executor then ends that GPU's run,
// a crash); otherwise it returns and the caller rethrows the library's error, one test's `error`.
inline void check_library_failure(const std::string& what, cudaError_t stream_state) {
  if (stream_state == cudaSuccess || stream_state == cudaErrorNotReady) return;
  if (error_kind(stream_state) != CudaError::Kind::context_lost) return;
  throw CudaError(what + "; the stream then reports " + cudaGetErrorName(stream_state) + " (" +
                      cudaGetErrorString(stream_state) + ")",
                  CudaError::Kind::context_lost);
}

}  // namespace sdc::cuda

#define SDC_CUDA_CHECK(expr) ::sdc::cuda::check((expr), #expr, __FILE__, __LINE__)
// After every launch: a bad configuration shows here, an asynchronous fault at the next synchronization.
#define SDC_CUDA_CHECK_LAUNCH(kernel) ::sdc::cuda::check(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

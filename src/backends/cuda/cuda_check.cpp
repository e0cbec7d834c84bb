#include "cuda_check.h"

#include <fmt/format.h>

#include <cstring>

namespace sdc::cuda {

bool CudaError::sticky() const {
  switch (code_) {
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
    case cudaErrorLaunchTimeout: return true;
    default: return false;
  }
}

const char* source_name(const char* file) {
  for (const char* root : {"/src/", "/kernels/", "/bench/", "/tests/"}) {
    const char* p = std::strstr(file, root);
    if (p) return p + 1;
  }
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  throw CudaError(
      fmt::format("{}: {} ({}) at {}:{}", expr, cudaGetErrorName(e), cudaGetErrorString(e), source_name(file), line),
      e);
}

}  // namespace sdc::cuda

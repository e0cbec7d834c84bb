// The CUDA runtime calls of device-side code (cuda_emu.h), on the calling thread's current emulated device.
#include <cstddef>

#include "src/backends/emu/emu_device_impl.h"

namespace {

using sdc::cuda::CudaError;
using sdc::emu::detail::t_current;
using sdc::emu::detail::t_last;

cudaError_t to_emu_error(CudaError::Kind k) {
  return k == CudaError::Kind::out_of_memory  ? cudaErrorMemoryAllocation
         : k == CudaError::Kind::context_lost ? cudaErrorLaunchFailure
                                              : cudaErrorInvalidValue;
}

}  // namespace

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaError (emulated)";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "no current emulated device";
    case cudaErrorLaunchFailure: return "the emulated device's context is lost";
    default: return "emulated device error";
  }
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaGetDevice(int* device) {
  if (!t_current) return cudaErrorInvalidDevice;
  *device = t_current->info.index;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, sdc_emu_cudaDeviceAttr attr, int device) {
  const sdc::emu::detail::Device* d = sdc::emu::detail::device(device);
  if (!d) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = d->spec.sms; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = d->spec.cc_major; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = d->spec.cc_minor; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(sdc::emu::max_dynamic_shared(d->spec.cc_major, d->spec.cc_minor));
      return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}
cudaError_t sdc_emu_func_attributes(cudaFuncAttributes* attr) {
  if (!t_current) return cudaErrorInvalidDevice;
  attr->binaryVersion = attr->ptxVersion = t_current->spec.cc_major * 10 + t_current->spec.cc_minor;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (!t_current) return cudaErrorInvalidDevice;
  try {
    *p = t_current->alloc(bytes);
    return cudaSuccess;
  } catch (const sdc::cuda::CudaError& e) {
    return to_emu_error(e.kind());
  }
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!t_current) return cudaErrorInvalidDevice;
  *total_bytes = t_current->spec.memory_bytes;
  *free_bytes = t_current->spec.memory_bytes - t_current->used();
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (!t_current) return cudaErrorInvalidDevice;
  t_current->free(p);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (!t_current) return cudaErrorInvalidDevice;
  *s = reinterpret_cast<cudaStream_t>(t_current->create_stream());
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  auto* st = sdc::emu::detail::stream_of(s);
  st->dev.destroy_stream(st);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  auto* st = sdc::emu::detail::stream_of(s);
  st->drain();
  return st->dev.lost() ? cudaErrorLaunchFailure : cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  auto* st = sdc::emu::detail::stream_of(s);
  if (st->dev.lost()) return cudaErrorLaunchFailure;
  return st->idle() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, sdc_emu_cudaMemcpyKind, cudaStream_t s) {
  auto* st = sdc::emu::detail::stream_of(s);
  return st->dev.copy_async(*st, dst, src, bytes) ? cudaSuccess : cudaErrorLaunchFailure;
}

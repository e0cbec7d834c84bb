// RAII for the CUDA resources the runner holds: device buffers, a stream, an event. Each can be
// leaked on purpose (release()) when a kernel that may still be running uses it: the watchdog ended
// the wait, and freeing memory under a running kernel is worse than keeping it until the process ends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda_check.h"

namespace sdc::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes) SDC_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void release() { p_ = nullptr; }

 private:
  void* p_ = nullptr;
};

class Stream {
 public:
  Stream() { SDC_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }
  void release() { s_ = nullptr; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDisableTiming) { SDC_CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }
  void release() { e_ = nullptr; }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace sdc::cuda

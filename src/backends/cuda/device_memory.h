// RAII for the device resources the GPU executor holds: device buffers, pinned host buffers, a stream, an event,
// each on its DeviceRuntime. Each can be leaked on purpose (release()) when a kernel that may still be
// running uses it: the watchdog ended the wait, and freeing memory under a running kernel is worse than
// keeping it until the process ends.
#pragma once

#include <cstddef>
#include <utility>

#include "src/backends/cuda/device_runtime.h"

namespace sdc::cuda {

template <bool HOST>
class Buffer {
 public:
  Buffer() = default;
  Buffer(DeviceRuntime& rt, size_t bytes) : rt_(&rt) {
    if (bytes) p_ = HOST ? rt.alloc_host(bytes) : rt.alloc(bytes);
  }
  Buffer(Buffer&& o) noexcept : rt_(o.rt_), p_(std::exchange(o.p_, nullptr)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(rt_, o.rt_);
    std::swap(p_, o.p_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (!p_) return;
    if (HOST)
      rt_->free_host(p_);
    else
      rt_->free(p_);
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void release() { p_ = nullptr; }

 private:
  DeviceRuntime* rt_ = nullptr;
  void* p_ = nullptr;
};
using DeviceBuffer = Buffer<false>;
using PinnedBuffer = Buffer<true>;

// A handle of rt made by CREATE and destroyed by DESTROY: a stream, an event.
template <typename H, H (DeviceRuntime::*CREATE)(), void (DeviceRuntime::*DESTROY)(H) noexcept>
class RuntimeHandle {
 public:
  explicit RuntimeHandle(DeviceRuntime& rt) : rt_(rt), h_((rt.*CREATE)()) {}
  RuntimeHandle(const RuntimeHandle&) = delete;
  RuntimeHandle& operator=(const RuntimeHandle&) = delete;
  ~RuntimeHandle() {
    if (h_) (rt_.*DESTROY)(h_);
  }
  H get() const { return h_; }
  void release() { h_ = nullptr; }

 private:
  DeviceRuntime& rt_;
  H h_;
};
using Stream = RuntimeHandle<cudaStream_t, &DeviceRuntime::create_stream, &DeviceRuntime::destroy_stream>;
using Event = RuntimeHandle<cudaEvent_t, &DeviceRuntime::create_event, &DeviceRuntime::destroy_event>;

}  // namespace sdc::cuda

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

class Stream {
 public:
  explicit Stream(DeviceRuntime& rt) : rt_(rt), s_(rt.create_stream()) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_) rt_.destroy_stream(s_);
  }
  cudaStream_t get() const { return s_; }
  void release() { s_ = nullptr; }

 private:
  DeviceRuntime& rt_;
  cudaStream_t s_;
};

class Event {
 public:
  explicit Event(DeviceRuntime& rt) : rt_(rt), e_(rt.create_event()) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e_) rt_.destroy_event(e_);
  }
  cudaEvent_t get() const { return e_; }
  void release() { e_ = nullptr; }

 private:
  DeviceRuntime& rt_;
  cudaEvent_t e_;
};

}  // namespace sdc::cuda

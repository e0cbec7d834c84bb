// The emulated device's internals, shared by its parts: the device itself and its DeviceRuntime
// (emu_device.cpp), kernel launches and the calls kernel code makes (emu_launch.cpp), and the CUDA runtime
// calls of device-side code (emu_cuda_api.cpp). Only those include it; the interface is emu_device.h.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <pthread.h>
#include <time.h>

#include "src/backends/cuda/device_runtime.h"
#define SDC_EMU 1
#include "src/backends/emu/cuda_emu.h"

namespace sdc::emu::detail {

using cuda::CudaError;
class Device;

// A stream: a host thread that runs its queue in order.
class Stream {
 public:
  explicit Stream(Device& d) : dev(d), worker_([this] { loop(); }) {}
  // Ends the thread once the queue is done; true when it did. A stream whose work has not ended (a kernel
  // the watchdog gave up on) keeps its thread and its memory until the process ends.
  bool close() {
    {
      std::lock_guard<std::mutex> l(m_);
      quit_ = true;
    }
    cv_.notify_all();
    if (!idle()) {
      worker_.detach();
      return false;
    }
    worker_.join();
    return true;
  }
  uint64_t enqueue(std::function<void()> op) {
    std::lock_guard<std::mutex> l(m_);
    q_.push_back(std::move(op));
    cv_.notify_all();
    return ++enqueued_;
  }
  bool reached(uint64_t seq) {
    std::lock_guard<std::mutex> l(m_);
    return completed_ >= seq;
  }
  void wait(uint64_t seq) {
    std::unique_lock<std::mutex> l(m_);
    done_cv_.wait(l, [&] { return completed_ >= seq; });
  }
  void drain() {
    uint64_t seq;
    {
      std::lock_guard<std::mutex> l(m_);
      seq = enqueued_;
    }
    wait(seq);
  }
  bool idle() {
    std::lock_guard<std::mutex> l(m_);
    return completed_ == enqueued_;
  }
  // The CPU time this stream's thread has used.
  double cpu_seconds() {
    clockid_t id;
    timespec t{};
    if (pthread_getcpuclockid(worker_.native_handle(), &id) != 0 || clock_gettime(id, &t) != 0) return -1;
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  Device& dev;
  bool sampling = false;  // host side: a launch enqueued now is a family's compute kernel

 private:
  void loop() {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return quit_ || !q_.empty(); });
        if (q_.empty()) return;
        op = std::move(q_.front());
        q_.pop_front();
      }
      op();
      {
        std::lock_guard<std::mutex> l(m_);
        ++completed_;
      }
      done_cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> q_;
  uint64_t enqueued_ = 0, completed_ = 0;
  bool quit_ = false;
  std::thread worker_;
};

struct Event {
  Stream* stream = nullptr;
  uint64_t seq = 0;
};

class Device {
 public:
  Device(const Spec& s, int ordinal) : spec(s) {
    info.index = ordinal;
    info.name = fmt::format("sdcscreen emulated GPU (sm_{}{}, {} SMs)", s.cc_major, s.cc_minor, s.sms);
    info.uuid = fmt::format("EMU-{:08x}-0000-0000-0000-{:012x}", ordinal, ordinal);
    info.pci_bus_id = fmt::format("emulated:{}", ordinal);
    info.cc_major = s.cc_major;
    info.cc_minor = s.cc_minor;
    info.sm_count = s.sms;
    info.memory_bytes = s.memory_bytes;
    info.driver = "emulated";
    info.driver_cuda = "emulated";
    info.runtime = "emulated";
    info.ecc = "off";
    info.emulated = true;
  }
  Spec spec;
  DeviceInfo info;

  // ---- memory ----
  void* alloc(uint64_t bytes) {
    const uint64_t size = (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256;
    std::lock_guard<std::mutex> l(m_);
    if (used_ + size > spec.memory_bytes)
      throw CudaError(fmt::format("cudaMalloc of {} bytes: cudaErrorMemoryAllocation (out of memory) on emulated "
                                  "device {} ({} of {} bytes in use)",
                                  bytes, info.index, used_, spec.memory_bytes),
                      CudaError::Kind::out_of_memory);
    void* p = std::aligned_alloc(256, size);
    if (!p) throw CudaError("host memory for the emulated device ran out", CudaError::Kind::out_of_memory);
    used_ += size;
    allocs_[reinterpret_cast<uintptr_t>(p)] = size;
    return p;
  }
  void free(void* p) noexcept {
    wait_idle();  // as cudaFree, which synchronizes the device
    std::lock_guard<std::mutex> l(m_);
    const auto it = allocs_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocs_.end()) return;
    used_ -= it->second;
    allocs_.erase(it);
    std::free(p);
  }
  void* alloc_host(uint64_t bytes) {
    void* p = std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) throw CudaError("host memory ran out", CudaError::Kind::out_of_memory);
    std::lock_guard<std::mutex> l(m_);
    pinned_.insert(p);
    return p;
  }
  void free_host(void* p) noexcept {
    wait_idle();  // as cudaFreeHost
    std::lock_guard<std::mutex> l(m_);
    if (pinned_.erase(p)) std::free(p);
  }
  uint64_t used() {
    std::lock_guard<std::mutex> l(m_);
    return used_;
  }
  // Host memory that is neither device memory nor pinned: a copy to it is synchronous, as CUDA's.
  bool pageable(const void* p) {
    std::lock_guard<std::mutex> l(m_);
    const auto u = reinterpret_cast<uintptr_t>(p);
    auto it = allocs_.upper_bound(u);
    if (it != allocs_.begin() && u < std::prev(it)->first + std::prev(it)->second) return false;
    return pinned_.count(const_cast<void*>(p)) == 0;
  }
  // Enqueues a copy on s; to pageable memory it returns only when the copy is done, as CUDA's. Returns false
  // when the context is lost (nothing enqueued).
  bool copy_async(Stream& s, void* dst, const void* src, uint64_t bytes);

  // ---- streams ----
  Stream* create_stream() {
    auto* s = new Stream(*this);
    std::lock_guard<std::mutex> l(streams_m_);
    streams_.insert(s);
    return s;
  }
  // As cudaStreamDestroy, it returns at once; a stream whose work has not ended stays one of the device's
  // (wait_idle waits for it).
  void destroy_stream(Stream* s) {
    std::lock_guard<std::mutex> l(streams_m_);
    if (!s->close()) return;
    streams_.erase(s);
    delete s;
  }
  // Returns when every stream of the device has done what was enqueued on it, as cudaFree, cudaFreeHost and the
  // CUDA runtime's teardown do on a GPU: never, while a kernel that never ends runs on it.
  void wait_idle() noexcept {
    std::lock_guard<std::mutex> l(streams_m_);  // not m_: a stream's kernel may need it (lose)
    for (Stream* s : streams_) s->drain();
  }

  // ---- the sticky error ----
  void lose(const std::string& what) {
    std::lock_guard<std::mutex> l(m_);
    if (!lost_.empty()) return;
    lost_ = what;
    lost_flag_ = true;
  }
  bool lost() const { return lost_flag_; }
  void check_lost() {
    if (!lost_flag_) return;
    std::lock_guard<std::mutex> l(m_);
    throw CudaError(lost_, CudaError::Kind::context_lost);
  }
  uint64_t next_launch() { return ++launches_; }

 private:
  std::mutex m_;
  std::map<uintptr_t, uint64_t> allocs_;
  std::set<void*> pinned_;
  uint64_t used_ = 0;
  std::mutex streams_m_;
  std::set<Stream*> streams_;
  std::string lost_;
  std::atomic<bool> lost_flag_{false};
  std::atomic<uint64_t> launches_{0};
};

// The emulated device of that ordinal; null when there is none.
Device* device(int ordinal);

inline Stream* stream_of(cudaStream_t s) { return reinterpret_cast<Stream*>(s); }

extern __thread Device* t_current;   // the host thread's current device (make_current)
extern __thread cudaError_t t_last;  // the host thread's last launch error

}  // namespace sdc::emu::detail

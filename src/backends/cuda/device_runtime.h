// The seam between the GPU executor and a device: the one small interface through which the GPU executor
// allocates, copies, launches a family's kernels and its own passes, records and polls events, and learns
// what the device is. Two implementations: the CUDA runtime (cuda_runtime.cpp, a CUDA build only) and the
// emulated device (src/backends/emu/emu_device.cpp, every build), which runs the same kernel sources on the
// CPU. Plain C++: the GPU executor is compiled once, without any CUDA header, and drives either.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/device_info.h"
#include "src/core/family.h"
#include "src/backends/cuda/device_error.h"
#include "src/backends/cuda/device_problem.h"

namespace sdc::cuda {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual const DeviceInfo& info() const = 0;
  // Makes this device the calling host thread's current one (cudaSetDevice): a family's code, which asks
  // the runtime for "the current device", and every call below go to it.
  virtual void make_current() = 0;
  // The family's device side for case c on this device (its prepare_cuda, or its emulated twin), or null
  // with `why` set when this device cannot run the family at all (skipped, not a failure).
  virtual std::unique_ptr<DeviceProblem> prepare(const Family& f, const Case& c, std::string& why) = 0;

  // Device memory; alloc throws CudaError (out_of_memory when it ran out).
  virtual void* alloc(uint64_t bytes) = 0;
  virtual void free(void* p) noexcept = 0;
  // Pinned host memory that device work can write and read while it runs (mapped): what an asynchronous
  // copy to the host needs, for a copy to pageable memory waits for the copy (and so for the kernel before
  // it), which would keep the watchdog from ever firing.
  virtual void* alloc_host(uint64_t bytes) = 0;
  virtual void free_host(void* p) noexcept = 0;
  virtual void mem_info(uint64_t& free_bytes, uint64_t& total_bytes) = 0;

  virtual cudaStream_t create_stream() = 0;
  virtual void destroy_stream(cudaStream_t s) noexcept = 0;
  virtual cudaEvent_t create_event() = 0;
  virtual void destroy_event(cudaEvent_t e) noexcept = 0;
  virtual void record(cudaEvent_t e, cudaStream_t s) = 0;
  // True once the work before the event's record is done; false while it runs. Throws CudaError when it
  // failed (a kernel fault).
  virtual bool done(cudaEvent_t e) = 0;

  virtual void memset_async(void* p, int value, uint64_t bytes, cudaStream_t s) = 0;
  // Any direction (the runtime knows the pointers); to pageable host memory it returns only when the copy is
  // done, as CUDA's does.
  virtual void copy_async(void* dst, const void* src, uint64_t bytes, cudaStream_t s) = 0;
  // Synchronous, on stream s: device to host or device to device, after the work enqueued on s before it, and
  // done when it returns. Never on the legacy default stream, which does not wait for the GPU executor's streams
  // (they are non-blocking): a copy of a buffer is ordered on the stream its kernels ran on.
  virtual void copy(void* dst, const void* src, uint64_t bytes, cudaStream_t s) = 0;
  virtual void copy_2d(void* dst, uint64_t dst_pitch, const void* src, uint64_t src_pitch, uint64_t width_bytes,
                       uint64_t rows, cudaStream_t s) = 0;

  // The GPU executor's own passes (device_passes.h), compiled for this device's target.
  virtual void digest_tiles(float* out, const OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,
                            const uint32_t* tile_sm, DeviceFault fault, uint64_t* digests, cudaStream_t s) = 0;
  virtual void input_fault(void* tensor, uint64_t first, WordFault fault, void* saved, bool restore,
                           cudaStream_t s) = 0;
  virtual int sm_id_limit() = 0;
  virtual void launch_hang(const volatile int* release, cudaStream_t s) = 0;

  // Around a family's compute(): a device that computes only a sample of the compute kernels' blocks (the
  // emulated device, for speed) says so; the tiles those blocks did not compute keep their poisoned SM
  // id, and the GPU executor checks only the tiles that were computed. A GPU computes every block.
  virtual void compute_begin(cudaStream_t) {}
  virtual void compute_end(cudaStream_t) {}
  virtual bool samples_blocks() const { return false; }
  // How many times slower than the watchdog's reference GPU (1 TFLOP/s) this device may be: the emulated
  // device computes on the CPU, and its deadlines stretch by this factor (deadline_after).
  virtual double slowness() const { return 1.0; }
  // The host CPU seconds stream s has used so far, where the device is emulated on the host (the
  // throughput probe then times it by that, as it times a CPU, not by wall time that other processes
  // share); negative on a GPU, which the probe times by wall time.
  virtual double stream_cpu_seconds(cudaStream_t) { return -1; }
  // A note for a test's report that says what ran on this device in a way a GPU would not, or "".
  virtual std::string test_note(const Family&, Mode) const { return ""; }
};

// The runtime of a GPU that choose_gpus selected (DeviceInfo::runtime says which kind): the CUDA device of
// that ordinal, or an emulated device. Throws CudaError when it cannot be reached.
std::unique_ptr<DeviceRuntime> open_runtime(const DeviceInfo& gpu);
// The two kinds (cuda_runtime.cpp, or cuda_stub.cpp in a build without CUDA; src/backends/emu/emu_device.cpp).
std::unique_ptr<DeviceRuntime> open_cuda_runtime(const DeviceInfo& gpu);
std::unique_ptr<DeviceRuntime> open_emulated_runtime(const DeviceInfo& gpu);
// The CUDA runtime of the calling thread's current GPU, opened on first use and kept (the GPU tests and the
// benchmark, which drive one GPU through the GPU executor's seam).
DeviceRuntime& current_cuda_runtime();

}  // namespace sdc::cuda

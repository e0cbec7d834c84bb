// The CUDA runtime behind the device seam (device_runtime.h): a GPU of this process, by its ordinal. Every
// call is the CUDA runtime's, checked (cuda_check.h); the passes and the families' kernels are the ones
// nvcc compiled (the `gpu` target).
#include <cuda_runtime_api.h>

#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_runtime.h"

namespace sdc::cuda {
namespace {

class CudaRuntime final : public DeviceRuntime {
 public:
  explicit CudaRuntime(const DeviceInfo& info) : info_(info) {}
  const DeviceInfo& info() const override { return info_; }
  void make_current() override { SDC_CUDA_CHECK(cudaSetDevice(info_.index)); }
  std::unique_ptr<DeviceProblem> prepare(const Family& f, const Case& c, std::string& why) override {
    if (f.prepare_cuda) return f.prepare_cuda(c);
    why = std::string("family ") + f.id + " has no CUDA kernel";
    return nullptr;
  }

  void* alloc(uint64_t bytes) override {
    void* p = nullptr;
    SDC_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void free(void* p) noexcept override { cudaFree(p); }
  void* alloc_host(uint64_t bytes) override {
    void* p = nullptr;
    SDC_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped));
    return p;
  }
  void free_host(void* p) noexcept override { cudaFreeHost(p); }
  void mem_info(uint64_t& free_bytes, uint64_t& total_bytes) override {
    size_t f = 0, t = 0;
    SDC_CUDA_CHECK(cudaMemGetInfo(&f, &t));
    free_bytes = f;
    total_bytes = t;
  }

  cudaStream_t create_stream() override {
    cudaStream_t s = nullptr;
    SDC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void destroy_stream(cudaStream_t s) noexcept override { cudaStreamDestroy(s); }
  cudaEvent_t create_event() override {
    cudaEvent_t e = nullptr;
    SDC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(cudaEvent_t e) noexcept override { cudaEventDestroy(e); }
  void record(cudaEvent_t e, cudaStream_t s) override { SDC_CUDA_CHECK(cudaEventRecord(e, s)); }
  bool done(cudaEvent_t ev) override {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) SDC_CUDA_CHECK(e);
    return false;
  }

  void memset_async(void* p, int value, uint64_t bytes, cudaStream_t s) override {
    SDC_CUDA_CHECK(cudaMemsetAsync(p, value, bytes, s));
  }
  void copy_async(void* dst, const void* src, uint64_t bytes, cudaStream_t s) override {
    SDC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  }
  // cudaMemcpy would go to the legacy default stream, which the GPU executor's non-blocking streams do not wait for.
  void copy(void* dst, const void* src, uint64_t bytes, cudaStream_t s) override {
    SDC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    SDC_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void copy_2d(void* dst, uint64_t dst_pitch, const void* src, uint64_t src_pitch, uint64_t width_bytes,
               uint64_t rows, cudaStream_t s) override {
    SDC_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width_bytes, rows, cudaMemcpyDefault, s));
    SDC_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void digest_tiles(float* out, const OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,
                    const uint32_t* tile_sm, DeviceFault fault, uint64_t* digests, cudaStream_t s) override {
    gpu::digest_tiles(out, layout, tiles, tile_elements, tile_sm, fault, digests, s);
  }
  void input_fault(void* tensor, uint64_t first, WordFault fault, void* saved, bool restore,
                   cudaStream_t s) override {
    gpu::input_fault(tensor, first, fault, saved, restore, s);
  }
  int sm_id_limit() override { return gpu::sm_id_limit(); }
  void launch_hang(const volatile int* release, cudaStream_t s) override { gpu::launch_hang(release, s); }

 private:
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<DeviceRuntime> open_cuda_runtime(const DeviceInfo& gpu) { return std::make_unique<CudaRuntime>(gpu); }

DeviceRuntime& current_cuda_runtime() {
  static const std::unique_ptr<DeviceRuntime> rt = [] {
    DeviceInfo info;
    SDC_CUDA_CHECK(cudaGetDevice(&info.index));
    return open_cuda_runtime(info);
  }();
  return *rt;
}

}  // namespace sdc::cuda

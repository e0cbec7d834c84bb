// What the GPU benchmark's sections share (bench_gpu.cpp, bench_lt.cpp, bench_dmma.cpp): timing by CUDA events, medians,
// and one case prepared on the device the way the GPU executor prepares it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_problem.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/core/family.h"

namespace sdc::bench {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using cuda::DeviceBuffer;
constexpr int kWarmup = 2;

// The current GPU through the GPU executor's device seam (its buffers and streams).
inline cuda::DeviceRuntime& gpu() { return cuda::current_cuda_runtime(); }

// A CUDA event with timing enabled (the GPU executor's events have it disabled).
class TimingEvent {
 public:
  TimingEvent() { SDC_CUDA_CHECK(cudaEventCreate(&e_)); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  ~TimingEvent() { cudaEventDestroy(e_); }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// A pair of timing events around work enqueued on one stream.
struct Events {
  TimingEvent a, b;
  float ms() const {
    SDC_CUDA_CHECK(cudaEventSynchronize(b.get()));
    float t = 0;
    SDC_CUDA_CHECK(cudaEventElapsedTime(&t, a.get(), b.get()));
    return t;
  }
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.empty() ? 0.0 : v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Median milliseconds of `reps` runs of f after kWarmup untimed ones, by CUDA events on stream s.
template <class F>
double time_ms(cudaStream_t s, int reps, F&& f) {
  Events ev;
  for (int r = 0; r < kWarmup; ++r) f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    SDC_CUDA_CHECK(cudaEventRecord(ev.a.get(), s));
    f();
    SDC_CUDA_CHECK(cudaEventRecord(ev.b.get(), s));
    t.push_back(ev.ms());
  }
  return median(t);
}

// One case prepared on the device: its inputs generated there, output, SM map and digest buffers. The
// digest pass reads the output in the layout the family writes (a cuBLASLt family: a row-major matrix).
struct DeviceCase {
  std::unique_ptr<Problem> p;
  std::unique_ptr<cuda::DeviceProblem> d;
  std::vector<DeviceBuffer> in;
  std::vector<const void*> ptrs;
  DeviceBuffer out, tile_sm, scratch, digests;
  uint64_t tiles = 0;
  uint32_t te = 0;

  DeviceCase(const Family& f, const Case& c, cudaStream_t s) : p(f.prepare(c)), d(f.prepare_cuda(c)) {
    tiles = p->tile_count();
    te = p->tile_elements();
    if (p->replay()) {  // the training-step replay is measured against the host's reference, as the GPU executor gives
      p->replay()->compute_reference(nullptr);  // it (before scratch_bytes: the reference sizes the scratch)
      d->use_reference(*p);
    }
    for (size_t t = 0; t < p->inputs().size(); ++t) {
      in.emplace_back(gpu(), d->input_bytes(t));
      d->generate(t, in.back().get(), s);
      ptrs.push_back(in.back().get());
    }
    out = DeviceBuffer(gpu(), tiles * te * sizeof(float));
    tile_sm = DeviceBuffer(gpu(), tiles * sizeof(uint32_t));
    scratch = DeviceBuffer(gpu(), d->scratch_bytes());
    digests = DeviceBuffer(gpu(), tiles * sizeof(uint64_t));
  }
  void compute(cudaStream_t s) { d->compute(ptrs.data(), out.as<float>(), tile_sm.as<uint32_t>(), scratch.get(), s); }
  void digest(cudaStream_t s) {
    cuda::gpu::digest_tiles(out.as<float>(), d->output_layout(), tiles, te, tile_sm.as<uint32_t>(), cuda::DeviceFault{},
                            digests.as<uint64_t>(), s);
  }
  std::vector<uint64_t> host_digests(cudaStream_t s) {
    std::vector<uint64_t> h(tiles);
    SDC_CUDA_CHECK(cudaMemcpyAsync(h.data(), digests.get(), tiles * sizeof(uint64_t), cudaMemcpyDeviceToHost, s));
    SDC_CUDA_CHECK(cudaStreamSynchronize(s));
    return h;
  }
  double flops() const { return p->tile_flops() * static_cast<double>(tiles); }
};

// cuBLASLt against the verified stress and the project's own mma.sync kernel, exact-integer bf16 and
// fp16 at large shapes (bench_lt.cpp). Appends its rows to `rows`; false when a device result disagreed;
// sets `failed` when a dtype could not be measured (CUDA error, cuBLASLt absent or without an algorithm).
bool bench_cublaslt(int reps, cudaStream_t s, Json& rows, bool& failed);

// gemm_f64's kernel in each form (bench_dmma.cpp: kernels/gemm_f64/gemm_f64_device.h's kForms) on dc, a gemm_f64
// case prepared from c: per form its time against cuBLAS DGEMM's blas_ms and how many of its values differ from the
// family's result. One row per form, "skipped" where the device lacks the instruction, "error" where a CUDA error
// that left the context usable stopped it (one that lost the context is thrown).
Json bench_dmma_forms(DeviceCase& dc, const Case& c, int reps, double blas_ms, cudaStream_t s);
// The forms on the sm_90 instructions (128 x 128 blocks) on a battery case's inputs: per form how many tiles differ
// from the golden digests `want` (dc.out holds the family's result again afterwards); "skipped" or "error" as
// above.
Json sm90_golden(DeviceCase& dc, const Case& c, const std::vector<uint64_t>& want, cudaStream_t s);

}  // namespace sdc::bench

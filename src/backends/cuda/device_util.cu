// The generic device passes: input generation from the shared generator, per-tile digests with the
// injection hook, input bit flips, and the hang drill.
#include "src/spec/digest.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/watchdog.h"

namespace sdc::cuda::SDC_TARGET {
namespace {

__global__ void generate_kernel(float* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = pattern_value(d, w, key, i);
}

__global__ void generate_f64_kernel(double* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = pattern_value_f64(d, w, key, i);
}

constexpr unsigned DIGEST_THREADS = 256;

// One block per tile (grid-stride over tiles); each thread sums the terms of a strided subset of the
// tile's elements (offsets threadIdx.x, + DIGEST_THREADS, ...), then the block adds the 256 partial sums
// (mod 2^64: any order gives the same sum). The digest is integer-bound (two 64-bit multiplies an element),
// so no element pays for a division: each thread's (row, column) inside the tile advances by a fixed step
// with one carry. A contiguous tile is one row of `te`.
__global__ void __launch_bounds__(DIGEST_THREADS)
    digest_kernel(float* out, OutputLayout layout, uint64_t tiles, uint32_t te, const uint32_t* tile_sm, DeviceFault f,
                  uint64_t* digests) {
  __shared__ uint64_t warp_sum[DIGEST_THREADS / 32];
  const uint32_t cols = layout.matrix() ? layout.tile_cols : (te ? te : 1);
  const uint64_t ld = layout.matrix() ? layout.ld : cols;
  const uint32_t step_rows = DIGEST_THREADS / cols, step_cols = DIGEST_THREADS % cols;
  const uint32_t row0 = threadIdx.x / cols, col0 = threadIdx.x % cols;
  for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const uint64_t key = digest_key(t);
    const bool hit = f.word.mask != 0 && (t == f.tile || (f.sm >= 0 && tile_sm[t] == static_cast<uint32_t>(f.sm)));
    float* const tile = out + layout.index(t, 0, te);
    uint32_t r = row0, c = col0;
    uint64_t sum = 0;
    for (uint32_t i = threadIdx.x; i < te; i += DIGEST_THREADS) {
      float& e = tile[r * ld + c];
      uint32_t bits = float_bits(e);
      if (hit && f.word.hits(i, f.offset)) {
        bits = f.word.apply(bits);
        e = bits_float(bits);
      }
      sum += digest_term(key, i, bits);
      r += step_rows;
      c += step_cols;
      if (c >= cols) {
        c -= cols;
        ++r;
      }
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t total = 0;
      for (unsigned w = 0; w < DIGEST_THREADS / 32; ++w) total += warp_sum[w];
      digests[t] = total;
    }
    __syncthreads();
  }
}

// One thread: the fault's words of the tensor from `first` take it, their values saved first; or (restore)
// get their saved values back.
__global__ void input_fault_kernel(uint32_t* p, uint64_t first, WordFault f, uint32_t* saved, bool restore) {
  for (uint32_t k = 0; k < f.count; ++k) {
    uint32_t& w = p[first + static_cast<uint64_t>(k) * f.stride];
    if (restore) {
      w = saved[k];
    } else {
      saved[k] = w;
      w = f.apply(w);
    }
  }
}

__global__ void nsmid_kernel(int* out) {
#if defined(SDC_EMU)
  const uint32_t r = ::sdc::emu::here().nsmid;
#else
  uint32_t r;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(r));
#endif
  *out = static_cast<int>(r);
}

__global__ void hang_kernel(const volatile int* release) {
  while (*release == 0) __nanosleep(1000000);
}

}  // namespace

void generate_pattern(float* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s) {
  launch("generate_kernel", generate_kernel, grid_for(n, 256), 256, s, dst, n, d, w, key);
}

void generate_pattern_f64(void* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s) {
  launch("generate_f64_kernel", generate_f64_kernel, grid_for(n, 256), 256, s, static_cast<double*>(dst), n, d, w,
         key);
}

void digest_tiles(float* out, const OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,
                  const uint32_t* tile_sm, DeviceFault fault, uint64_t* digests, cudaStream_t s) {
  const unsigned grid = static_cast<unsigned>(tiles < 65536 ? tiles : 65536);
  launch("digest_kernel", digest_kernel, grid, DIGEST_THREADS, s, out, layout, tiles, tile_elements, tile_sm, fault,
         digests);
}

void input_fault(void* tensor, uint64_t first, WordFault fault, void* saved, bool restore, cudaStream_t s) {
  launch("input_fault_kernel", input_fault_kernel, 1, 1, s, static_cast<uint32_t*>(tensor), first, fault,
         static_cast<uint32_t*>(saved), restore);
}

int sm_id_limit() {
  int* d = nullptr;
  SDC_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  cudaStream_t s = nullptr;
  SDC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  try {
    launch("nsmid_kernel", nsmid_kernel, 1, 1, s, d);
  } catch (...) {
    cudaStreamDestroy(s);
    cudaFree(d);
    throw;
  }
  // The GPU's first kernel of the run, under a watchdog of its own: a synchronize or a copy to pageable
  // memory would wait for ever if it never ends. Then its stream and memory stay (it may still run) and the
  // error says so (hung: the screen ends the process without freeing anything of the device).
  cudaError_t state = cudaSuccess;
  const bool ended = poll_until(
      [&] {
        state = cudaStreamQuery(s);
        return state != cudaErrorNotReady;
      },
      Clock::now() + std::chrono::seconds(10));
  if (!ended)
    throw CudaError("watchdog: the SM-id query kernel (the GPU's first kernel of the run) did not finish in 10 s",
                    CudaError::Kind::hung);
  int n = 0;
  const cudaError_t copy = state == cudaSuccess ? cudaMemcpyAsync(&n, d, sizeof n, cudaMemcpyDeviceToHost, s) : state;
  const cudaError_t sync = copy == cudaSuccess ? cudaStreamSynchronize(s) : copy;
  cudaStreamDestroy(s);
  cudaFree(d);
  SDC_CUDA_CHECK(sync);
  return n;
}

void launch_hang(const volatile int* release, cudaStream_t s) { launch("hang_kernel", hang_kernel, 1, 1, s, release); }

}  // namespace sdc::cuda::SDC_TARGET

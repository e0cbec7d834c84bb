// Device helpers every family's kernels share, and the launch of a kernel. Included by .cu files only,
// which are compiled for the GPU by nvcc and for the emulated device as C++ (cuda_target.h).
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_problem.h"
#include "src/spec/f64.h"
#include "src/spec/generator.h"

namespace sdc::cuda {

// The SM this thread runs on (PTX %smid): recorded per tile, so a miscompare names its SM.
__device__ __forceinline__ uint32_t sm_id() {
#if defined(SDC_EMU)
  return ::sdc::emu::here().sm;
#else
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
#endif
}

// Blocks for a grid-stride loop over n items: enough to fill any current GPU, never more than needed.
inline unsigned grid_for(uint64_t n, unsigned block) {
  const uint64_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

namespace SDC_TARGET {
// Enqueues `kernel` on stream s as a 1-D grid of `grid` blocks of `block` threads, each with smem_bytes of dynamic
// shared memory (dynamic_shared below), and checks the launch (a bad configuration shows here, an asynchronous
// fault at the next synchronization). `what` names the kernel in an error. The one place a kernel is launched:
// the triple-chevron syntax for the GPU, the emulated device's queue for the emulation (the arguments are copied,
// as the GPU copies them). Above the 48 KiB of dynamic shared memory every GPU grants by default, the kernel is
// first allowed that much (cudaFuncAttributeMaxDynamicSharedMemorySize); on the emulated device more than its
// compute capability grants (emu::max_dynamic_shared) is the launch's error.
template <class... P, class... A>
void launch_shared(const char* what, void (*kernel)(P...), unsigned grid, unsigned block, size_t smem_bytes,
                   cudaStream_t s, A&&... args) {
#if defined(SDC_EMU)
  ::sdc::emu::launch(
      what, grid, block, s,
      [kernel, params = std::tuple<P...>(std::forward<A>(args)...)]() { std::apply(kernel, params); }, smem_bytes);
#else
  if (smem_bytes > 48 * 1024)
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)), what,
          __FILE__, __LINE__);
  // clang-format splits the closing chevrons in a .cuh file
  // clang-format off
  kernel<<<grid, block, smem_bytes, s>>>(std::forward<A>(args)...);
  // clang-format on
#endif
  check(cudaGetLastError(), what, __FILE__, __LINE__);
}

// The current device's SM count (cudaDevAttrMultiProcessorCount). An error is thrown as SDC_CUDA_CHECK throws.
inline int sm_count() {
  int device = 0, sms = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&device));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// The most dynamic shared memory the current device grants a block whose kernel asks for it, in bytes
// (cudaDevAttrMaxSharedMemoryPerBlockOptin; launch_shared asks above 48 KiB).
inline size_t max_dynamic_shared() {
  int device = 0, bytes = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&device));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return static_cast<size_t>(bytes);
}

// launch_shared without dynamic shared memory.
template <class... P, class... A>
void launch(const char* what, void (*kernel)(P...), unsigned grid, unsigned block, cudaStream_t s, A&&... args) {
  launch_shared(what, kernel, grid, block, 0, s, std::forward<A>(args)...);
}

// The block's dynamic shared memory (the smem_bytes of launch_shared) as T*, 16-byte aligned.
template <class T>
__device__ __forceinline__ T* dynamic_shared() {
#if defined(SDC_EMU)
  return reinterpret_cast<T*>(::sdc::emu::dynamic_shared());
#else
  extern __shared__ __align__(16) unsigned char sdc_dynamic_shared[];
  return reinterpret_cast<T*>(sdc_dynamic_shared);
#endif
}

// cp.async (sm_80; PTX ISA "cp.async"): copies BYTES (8 or 16) from global memory at src to shared memory at dst
// without passing through registers, the first src_bytes of them read from src and the rest zero-filled (src_bytes
// 0: nothing is read, src must still be a valid address). Both addresses aligned to BYTES. The copy is complete, for
// this thread, at the cp_async_wait that completes its group (cp_async_commit), and visible to the block's other
// threads after a barrier that follows that wait. BYTES 16 bypasses L1 (.cg), 8 may allocate in it (.ca; .cg takes
// 16 only).
//
// On the emulated device the copy reads global memory at the issue, one plain read of the whole source where it is
// whole (the request the sector counter of the race-checking build counts, bankcheck.h), and lands at the wait, the
// latest the hardware may. The race checker (racecheck.h)
// sees a store by this thread at the issue (the old bytes written back) and the real one at the wait, and in between
// reports any access to those bytes, by any thread (the issuer too) and any second copy to them; after the wait,
// another thread's access without a barrier is a race as any store's. A misaligned address or src_bytes beyond
// BYTES is a __trap, as is a thread that returns with copies not waited for (block.h).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes) {
  static_assert(BYTES == 8 || BYTES == 16, "cp.async copies of 8 or 16 bytes");
#if defined(SDC_EMU)
  if (reinterpret_cast<uintptr_t>(dst) % BYTES != 0 || reinterpret_cast<uintptr_t>(src) % BYTES != 0)
    ::sdc::emu::trap("cp.async with an address not aligned to its size");
  if (src_bytes < 0 || src_bytes > BYTES) ::sdc::emu::trap("cp.async reading more bytes than it copies");
  volatile uint64_t* d = static_cast<uint64_t*>(dst);
  for (int i = 0; i < BYTES / 8; ++i) d[i] = d[i];  // the race checker's store at the issue
  if (::sdc::emu::async_copy_hook) ::sdc::emu::async_copy_hook(dst, BYTES, true);
  ::sdc::emu::ThreadContext& t = ::sdc::emu::here();
  ::sdc::emu::AsyncCopy& c = t.async.emplace_back();
  c = {static_cast<unsigned char*>(dst),
       static_cast<unsigned>(BYTES),
       static_cast<unsigned>(src_bytes),
       t.async_groups,
       {}};
  if (src_bytes == BYTES) {
    using Whole = std::conditional_t<BYTES == 16, uint4, uint2>;
    *reinterpret_cast<Whole*>(c.data) = *static_cast<const Whole*>(src);
  } else {  // a partial copy: the bytes it reads (the kernels' zero fill reads none)
    const volatile unsigned char* s = static_cast<const unsigned char*>(src);
    for (int b = 0; b < src_bytes; ++b) c.data[b] = s[b];
  }
#else
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(s), "l"(src), "r"(src_bytes) : "memory");
#endif
}

// cp.async.commit_group: the thread's copies issued since the last commit become one group.
__device__ __forceinline__ void cp_async_commit() {
#if defined(SDC_EMU)
  ++::sdc::emu::here().async_groups;
#else
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// cp.async.wait_group N: waits until at most the N groups this thread committed last are still in flight (copies
// not yet committed are not waited for).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(SDC_EMU)
  ::sdc::emu::ThreadContext& t = ::sdc::emu::here();
  const auto lands = [&](const ::sdc::emu::AsyncCopy& c) { return c.group + N < t.async_groups; };
  // The race checker's marks first, for every copy landing now: two of them to the same bytes (reported at the
  // second's issue) do not report each other's stores as well.
  if (::sdc::emu::async_copy_hook)
    for (const ::sdc::emu::AsyncCopy& c : t.async)
      if (lands(c)) ::sdc::emu::async_copy_hook(c.dst, c.bytes, false);
  size_t kept = 0;
  for (size_t i = 0; i < t.async.size(); ++i) {
    const ::sdc::emu::AsyncCopy c = t.async[i];
    if (!lands(c)) {  // among the last N groups, or not committed
      t.async[kept++] = c;
      continue;
    }
    // Volatile: the bank counter of the race-checking build (bankcheck.h) counts the copy's store at its issue.
    volatile unsigned char* d = c.dst;
    for (unsigned b = 0; b < c.bytes; ++b) d[b] = b < c.src_bytes ? c.data[b] : 0;
  }
  t.async.resize(kept);
#else
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}
}  // namespace SDC_TARGET
// In the target's namespace (cuda_target.h): kernels of the same signature launched by both targets would
// otherwise instantiate one `launch` twice under one name, and the linker would keep one target's for both.
using SDC_TARGET::cp_async;
using SDC_TARGET::cp_async_commit;
using SDC_TARGET::cp_async_wait;
using SDC_TARGET::dynamic_shared;
using SDC_TARGET::launch;
using SDC_TARGET::launch_shared;
using SDC_TARGET::max_dynamic_shared;
using SDC_TARGET::sm_count;

namespace SDC_TARGET {
// dst[i] = pattern_value(d, w, key, i) for i < n: the host generator's bits, on the device.
void generate_pattern(float* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s);
// The fp64 tensor of n elements (2 n words, src/spec/f64.h): dst[i] = pattern_value_f64(d, w, key, i).
void generate_pattern_f64(void* dst, uint64_t n, Distribution d, ExponentWindow w, uint64_t key, cudaStream_t s);
}  // namespace SDC_TARGET

}  // namespace sdc::cuda

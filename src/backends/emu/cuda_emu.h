// The emulation header: what a CUDA source needs from nvcc and the CUDA runtime, for the host, so that the
// project's kernel sources compile unchanged as C++ for the emulated device (-DSDC_EMU; included through
// src/backends/cuda/cuda_target.h). Built-ins (threadIdx, blockIdx, ...) read the running fiber's context;
// barriers, shuffles and votes are the block runner's (block.h); mma.sync is emulated from the PTX ISA's
// fragment layouts (mma.h), the narrow types' conversions from its cvt (convert.h); the runtime calls a kernel file
// makes (the current device, its attributes, a launch's error, the few memory calls of the generic passes) go to the
// calling thread's current emulated device (emu_device.h). `__shared__` storage is per OS thread (static thread_local):
// a block's threads all run on one OS thread, and one block at a time runs there.
//
// Keeps the determinism contract: compiled with the host's flags (no contraction, IEEE division and square
// root); fmaf and fma are the C library's correctly rounded fused multiply-adds.
#pragma once

#if !defined(SDC_EMU)
#error "cuda_emu.h is the emulated device's: compile with -DSDC_EMU"
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "src/backends/emu/block.h"
#include "src/backends/emu/convert.h"
#include "src/backends/emu/emu_device.h"
#include "src/backends/emu/mma.h"

// ---- keywords ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))

// ---- types ----
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
struct __attribute__((aligned(8))) int2 {
  int x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// ---- built-in variables: the running thread's ----
#define threadIdx (::sdc::emu::here().thread_idx)
#define blockIdx (::sdc::emu::here().block_idx)
#define blockDim (::sdc::emu::here().block_dim)
#define gridDim (::sdc::emu::here().grid_dim)
#define warpSize 32

// ---- synchronization, warp collectives ----
inline void __syncthreads() { ::sdc::emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::sdc::emu::syncwarp(mask); }
inline unsigned __activemask() { return ::sdc::emu::activemask(); }
inline unsigned __ballot_sync(unsigned mask, int pred) { return ::sdc::emu::ballot(mask, pred != 0); }
inline int __any_sync(unsigned mask, int pred) { return (::sdc::emu::ballot(mask, pred != 0) & mask) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  return (::sdc::emu::ballot(mask, pred != 0) & mask) == (mask & ::sdc::emu::activemask());
}

namespace sdc::emu::detail {
template <class T>
T shfl(unsigned mask, T v, int lane_or_delta, int width, Shfl mode) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 32- or 64-bit values");
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u = ::sdc::emu::shfl(mask, u, lane_or_delta, width, mode);
    std::memcpy(&v, &u, 4);
  } else {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u = ::sdc::emu::shfl64(mask, u, lane_or_delta, width, mode);
    std::memcpy(&v, &u, 8);
  }
  return v;
}
}  // namespace sdc::emu::detail

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::sdc::emu::detail::shfl(mask, v, src, width, ::sdc::emu::Shfl::idx);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::sdc::emu::detail::shfl(mask, v, static_cast<int>(delta), width, ::sdc::emu::Shfl::up);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::sdc::emu::detail::shfl(mask, v, static_cast<int>(delta), width, ::sdc::emu::Shfl::down);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::sdc::emu::detail::shfl(mask, v, lane_mask, width, ::sdc::emu::Shfl::bfly);
}

// ---- other intrinsics ----
inline void __nanosleep(unsigned ns) { ::sdc::emu::nanosleep(ns); }
[[noreturn]] inline void __trap() { ::sdc::emu::trap("__trap()"); }
inline unsigned __float_as_uint(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
using std::fma;
using std::fmaf;
// dp4a.s32.s32 (PTX ISA "dp4a"): c plus the four products of the sign-extended bytes of a and b, byte i with
// byte i; the sum wraps as 32-bit integer arithmetic does (computed in 64 bits, low 32 bits kept).
inline int __dp4a(int a, int b, int c) {
  int64_t s = c;
  for (int i = 0; i < 4; ++i)
    s += static_cast<int64_t>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  return static_cast<int>(static_cast<uint32_t>(static_cast<uint64_t>(s)));
}

// ---- the narrow types' conversions the kernels use (cuda_bf16.h, cuda_fp16.h), on the emulated instructions
// (convert.h); a value holds its encoding, as the CUDA types' raw forms do ----
struct __nv_bfloat16 {
  unsigned short x;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
struct __half {
  unsigned short x;
};
struct __half2 {
  __half x, y;
};
inline __nv_bfloat16 __float2bfloat16_rn(float a) { return {::sdc::emu::cvt_rn_bf16_f32(a)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline __half __float2half_rn(float a) { return {::sdc::emu::cvt_rn_f16_f32(a)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half_rn(a), __float2half_rn(b)}; }
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline __half __ushort_as_half(unsigned short u) { return {u}; }
inline float __half2float(__half h) { return ::sdc::emu::cvt_f32_f16(h.x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
template <class T>
T atomicAdd(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
// The old value; the minimum stays (an unsigned compare, as CUDA's atomicMin of unsigned types).
template <class T>
T atomicMin(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <class T>
T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}

// ---- the runtime calls device-side code makes, on the calling thread's current emulated device ----
enum sdc_emu_cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchTimeout = 702,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
  cudaErrorAssert = 710,
  cudaErrorECCUncorrectable = 214,
  cudaErrorDevicesUnavailable = 46,
  cudaErrorContained = 907,
};
typedef sdc_emu_cudaError cudaError_t;
enum sdc_emu_cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum sdc_emu_cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDefault = 4 };
constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaFuncAttributes {
  int binaryVersion = 0;
  int ptxVersion = 0;
};

const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceGetAttribute(int* value, sdc_emu_cudaDeviceAttr attr, int device);
// The emulated device runs any kernel: its "binary" is the current device's compute capability.
cudaError_t sdc_emu_func_attributes(cudaFuncAttributes* attr);
template <class F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F) {
  return sdc_emu_func_attributes(attr);
}
// Blocks of `block` threads an SM holds at once: an emulated SM holds 2048 threads (registers and shared memory
// are not modelled).
template <class F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F, int block, size_t) {
  if (block <= 0 || block > 1024) return cudaErrorInvalidValue;
  *blocks = 2048 / block;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
// The current device's free and total memory (its Spec's size less what is allocated).
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, sdc_emu_cudaMemcpyKind, cudaStream_t s);

// Marks functions that are compiled for the host and, under nvcc, for the device too. Every piece of
// arithmetic that host and device must agree on bit for bit is written once, in headers, with SDC_HD.
#pragma once

#if defined(__CUDACC__)
#define SDC_HD __host__ __device__ __forceinline__
#else
#define SDC_HD inline
#endif

#include <cstdint>
#include <cstring>

namespace sdc {

SDC_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

SDC_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// 2^e as a float for e in [-126, 127] (normal range): built from bits, so exact everywhere.
SDC_HD float pow2f(int e) { return bits_float(static_cast<uint32_t>(e + 127) << 23); }

}  // namespace sdc

// Marks functions that are compiled for the host and, under nvcc, for the device too. Every piece of
// arithmetic that host and device must agree on bit for bit is written once, in headers, with SDC_HD.
#pragma once

#if defined(__CUDACC__)
#define SDC_HD __host__ __device__ __forceinline__
#else
#define SDC_HD inline
#endif

#include <cstdint>

namespace sdc {

// A value's bits as another type of the same size (std::bit_cast, in host and device code alike; nvcc
// compiles it to the register move that __float_as_uint and its kin give).
template <class To, class From>
SDC_HD To bit_cast_hd(From x) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast_hd: the two types differ in size");
  return __builtin_bit_cast(To, x);
}

SDC_HD uint32_t float_bits(float x) { return bit_cast_hd<uint32_t>(x); }
SDC_HD float bits_float(uint32_t u) { return bit_cast_hd<float>(u); }

// 2^e as a float for e in [-126, 127] (normal range): built from bits, so exact everywhere.
SDC_HD float pow2f(int e) { return bits_float(static_cast<uint32_t>(e + 127) << 23); }

}  // namespace sdc

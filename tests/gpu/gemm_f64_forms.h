// gemm_f64's kernel in every form (kernels/gemm_f64/gemm_f64_device.h, kForms) at ragged shapes against the
// specification's chain, computed on the host with std::fma: shared by the emulated device's test
// (tests/unit/backends/test_gemm_f64_dmma.cpp, which also checks every block for races) and gpu_tests on a real GPU
// (tests/gpu/test_gpu.cpp, which compute-sanitizer also runs in first light's step 6).
//
// The shapes have M or N not a multiple of the 128-row block, K not a multiple of a slab or of 4, K = 1, odd K,
// operands 8 bytes off 16-byte alignment (the cp.async forms' 8-byte copies), and K long enough for every ring of
// slabs to wrap. The operands span 2^-60 to 2^60 with
// random signs and some signed zeros, so a wrong fragment element, edge mask, stride, ring buffer or chain order
// changes bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm_f64/gemm_f64.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"

namespace sdc::gemm_f64_forms {

struct Dims {
  int64_t m, n, k;
  int64_t a_shift, b_shift;  // A (B) starts this many doubles into its buffer (1: not 16-byte aligned)
};

// The last six have more slabs than any form's ring has buffers (K up to 129: 8 slabs of 16, 16 of 8), so every ring
// wraps and refills buffers, through 16-byte copies (A: K even and aligned; B: aligned) and 8-byte ones, each of A
// and B on its own.
inline constexpr Dims kShapes[] = {{64, 192, 13, 0, 0},   {192, 128, 8, 0, 0},  {128, 64, 1, 0, 0},
                                   {64, 64, 30, 0, 0},    {128, 192, 37, 0, 0}, {192, 64, 18, 1, 1},
                                   {128, 128, 100, 0, 0}, {64, 192, 77, 0, 0},  {192, 128, 129, 1, 1},
                                   {128, 64, 64, 0, 1},   {64, 128, 98, 1, 0},  {128, 128, 96, 0, 0}};

inline std::vector<double> operand(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.0);
  std::vector<double> v(n);
  for (double& x : v) {
    const uint64_t r = rng();
    x = r % 29 == 0 ? (r & 64 ? -0.0 : 0.0)
                    : std::ldexp(r & 1 ? -u(rng) : u(rng), static_cast<int>(r >> 40) % 121 - 60);
  }
  return v;
}

// C = A B by the specification's chain (from +0, k increasing, every step an fma), in the output's tile layout.
inline std::vector<double> chain(const std::vector<double>& a, const std::vector<double>& b, const Dims& d) {
  using gemm_f64::TILE;
  std::vector<double> c(static_cast<size_t>(d.m * d.n));
  const int64_t tiles_n = d.n / TILE;
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      double acc = 0.0;
      for (int64_t q = 0; q < d.k; ++q) acc = std::fma(a[i * d.k + q], b[q * d.n + j], acc);
      c[static_cast<size_t>(((i / TILE) * tiles_n + j / TILE) * TILE * TILE + (i % TILE) * TILE + j % TILE)] = acc;
    }
  return c;
}

// For every shape of kShapes and every form: launch(form, a, b, out, tile_sm, m, n, k, stream), which returns false
// where the device cannot run the form (launch_gemm of the target's namespace), then
// check(shape, form, ran, values differing from the chain, values). rt: the device, made current.
template <class Form, size_t N, class Launch, class Check>
void check_forms(cuda::DeviceRuntime& rt, const Form (&forms)[N], Launch&& launch, Check&& check) {
  std::mt19937_64 rng(20261127);
  cuda::Stream s(rt);
  for (const Dims& d : kShapes) {
    const std::vector<double> a = operand(static_cast<size_t>(d.m * d.k), rng),
                              b = operand(static_cast<size_t>(d.k * d.n), rng);
    const std::vector<double> want = chain(a, b, d);
    const auto sa = static_cast<size_t>(d.a_shift), sb = static_cast<size_t>(d.b_shift);
    cuda::DeviceBuffer da(rt, (a.size() + sa) * 8), db(rt, (b.size() + sb) * 8), dout(rt, want.size() * 8),
        dsm(rt, want.size() / (gemm_f64::TILE * gemm_f64::TILE) * 4);
    rt.copy(da.as<double>() + sa, a.data(), a.size() * 8, s.get());
    rt.copy(db.as<double>() + sb, b.data(), b.size() * 8, s.get());
    for (const Form& form : forms) {
      std::vector<double> got(want.size(), 1.5);
      rt.copy(dout.get(), got.data(), got.size() * 8, s.get());
      const bool ran = launch(form, da.as<const double>() + sa, db.as<const double>() + sb, dout.as<float>(),
                              dsm.as<uint32_t>(), d.m, d.n, d.k, s.get());
      uint64_t differ = 0;
      if (ran) {
        rt.copy(got.data(), dout.get(), got.size() * 8, s.get());
        for (size_t e = 0; e < want.size(); ++e) differ += std::memcmp(&got[e], &want[e], 8) != 0;
      }
      check(d, form, ran, differ, static_cast<uint64_t>(want.size()));
    }
  }
}

}  // namespace sdc::gemm_f64_forms
